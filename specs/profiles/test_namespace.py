"""State-key telemetry and namespace pressure (recurgent/_profiles/_namespace.py, ADR 0084)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from recurgent._profiles import (
    COUNTED_FIGURES,
    _namespace,
    forget_namespace,
    load_namespace,
    namespace_path,
    observe_program,
    pressure,
    pressure_counts,
    record_namespace,
    seen_values,
)
from recurgent._profiles._namespace import METHODS_KEPT
from recurgent._store import checksum

ADD = "context['value'] = context.get('value', 0) + args[0]\nresult = context['value']"
INCREMENT = "context['memory'] = context.get('memory', 0) + 1\nresult = context['memory']"
RECORD = "context['value'].append(args[0])\nresult = len(context['value'])"


def _record(root: Path, method: str, code: str, **extra: Any) -> dict[str, Any] | None:
    options: dict[str, Any] = {"return_shape": "numeric", "violations": []}
    options.update(extra)
    return record_namespace(
        root, "calculator", method, shape=observe_program(code), checksum=checksum(code), **options
    )


class TestPressure:
    """The original's namespace scenario: add and record on 'value', increment on 'memory'."""

    def test_collisions_lifetimes_and_drift(self, tmp_path: Path) -> None:
        """Two pairs collide, 'value' has two lifetimes, increment's version drifted once."""
        root = tmp_path / "store"
        for method, code in (("add", ADD), ("increment", INCREMENT), ("record", RECORD)):
            _record(root, method, code)

        figures = pressure(load_namespace(root, "calculator"), "calculator")

        assert {k: v for k, v in figures.items() if k != "continuity_violations"} == {
            "role": "calculator",
            "namespace_key_collision_count": 2,
            "namespace_multi_lifetime_key_count": 1,
            "namespace_continuity_violation_count": 1,
            "state_key_consistency_ratio": 0.6667,
            "dominant_key": "value",
            "method_state_keys": {"add": ["value"], "increment": ["memory"], "record": ["value"]},
            "method_primary_keys": {"add": "value", "increment": "memory", "record": "value"},
            "method_signatures": {
                "add": "args:0|kwargs:none",
                "increment": "args:none|kwargs:none",
                "record": "args:0|kwargs:none",
            },
            "method_return_shapes": {"add": "numeric", "increment": "numeric", "record": "numeric"},
            "state_key_lifetimes": {"value": ["role", "session"], "memory": ["role"]},
        }
        assert [
            (e["method"], e["kind"], e["detail"]) for e in figures["continuity_violations"]
        ] == [("increment", "divergent_key", "increment uses 'memory'; most use 'value'")]

    def test_an_empty_record_has_no_pressure(self) -> None:
        """No methods: zero counts and a ratio of 1.0."""
        figures = pressure({}, "calculator")

        assert (
            figures["namespace_key_collision_count"],
            figures["namespace_continuity_violation_count"],
            figures["state_key_consistency_ratio"],
            figures["dominant_key"],
        ) == (0, 0, 1.0, None)


class TestPressureCounts:
    """The three figures every logged call carries, derived once per record (ADR 0125)."""

    def test_counts_are_the_pressure_figures_derived_once_per_record(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The counts of a record are pressure()'s three figures; asking again for the same
        record derives nothing; a recorded change is a new record with its own counts."""
        root = tmp_path / "store"
        _record(root, "add", ADD)
        derived: list[str] = []

        def counted(record: Any, role: str) -> dict[str, Any]:
            derived.append(role)
            return pressure(record, role)

        monkeypatch.setattr(_namespace, "pressure", counted)
        first = load_namespace(root, "calculator")

        assert [pressure_counts(first), pressure_counts(load_namespace(root, "calculator"))] == [
            (0, 0, 0),
            (0, 0, 0),
        ]
        assert len(derived) == 1

        _record(root, "increment", INCREMENT)
        changed = load_namespace(root, "calculator")

        assert changed is not first
        assert pressure_counts(changed) == tuple(
            pressure(changed, "calculator")[name] for name in COUNTED_FIGURES
        )
        assert (pressure_counts(changed), len(derived)) == ((1, 0, 1), 2)


class TestRecording:
    """A code version is recorded once; each problem is counted once per version."""

    def test_the_same_version_again_writes_nothing(self, tmp_path: Path) -> None:
        """Recording an unchanged version returns None and leaves the file as it was."""
        root = tmp_path / "store"
        _record(root, "add", ADD)
        before = namespace_path(root, "calculator").stat().st_mtime_ns

        assert _record(root, "add", ADD) is None
        assert namespace_path(root, "calculator").stat().st_mtime_ns == before

    def test_a_return_shape_is_added_to_a_version_that_had_none(self, tmp_path: Path) -> None:
        """A version first recorded by a failed call gets its shape from a later answer."""
        root = tmp_path / "store"
        _record(root, "add", ADD, return_shape=None)

        written = _record(root, "add", ADD, return_shape="numeric")

        assert written is not None
        assert written["methods"]["add"]["return_shape"] == "numeric"

    def test_a_guard_failure_counts_once_per_version(self, tmp_path: Path) -> None:
        """The same role-profile failure of the same version is counted once."""
        root = tmp_path / "store"
        digest = checksum(INCREMENT)
        problem = [("role_profile", "increment failed shared_state_slot_drift", digest)]
        _record(root, "increment", INCREMENT, violations=problem)
        _record(root, "increment", INCREMENT, violations=problem)

        record = load_namespace(root, "calculator")
        assert record["namespace_continuity_violation_count"] == 1
        assert record["methods"]["increment"]["counted_violations"] == [f"role_profile@{digest}"]

    def test_a_new_version_replaces_the_methods_entry(self, tmp_path: Path) -> None:
        """increment rewritten on 'value' is recorded with its new keys."""
        root = tmp_path / "store"
        _record(root, "add", ADD)
        _record(root, "increment", INCREMENT)
        fixed = "context['value'] = context.get('value', 0) + 1\nresult = context['value']"

        _record(root, "increment", fixed)

        assert seen_values(load_namespace(root, "calculator"))["shared_state_slot"] == {
            "add": "value",
            "increment": "value",
        }

    def test_methods_past_the_limit_drop_the_least_recently_updated(self, tmp_path: Path) -> None:
        """At most 256 methods are kept; the oldest goes first."""
        root = tmp_path / "store"
        for index in range(METHODS_KEPT + 1):
            _record(root, f"m{index}", f"context['k{index % 3}'] = {index}")

        methods = load_namespace(root, "calculator")["methods"]
        assert (len(methods), "m0" in methods, f"m{METHODS_KEPT}" in methods) == (256, False, True)


class TestUntrusted:
    """The record answers only its own role; damage is set aside."""

    def test_a_record_of_another_role_is_neither_read_nor_overwritten(self, tmp_path: Path) -> None:
        """A file at this role's path naming another role reads as empty and stays."""
        root = tmp_path / "store"
        path = namespace_path(root, "calculator")
        path.parent.mkdir(parents=True, mode=0o700)
        root.chmod(0o700)
        text = json.dumps(
            {"schema_version": 1, "runtime": "python", "role": "other", "methods": {}}
        )
        path.write_text(text, "utf-8")

        assert load_namespace(root, "calculator") == {}
        assert _record(root, "add", ADD) is None
        assert path.read_text("utf-8") == text

    def test_a_corrupt_record_is_quarantined(self, tmp_path: Path) -> None:
        """Invalid JSON is moved aside and recording starts a new file."""
        root = tmp_path / "store"
        path = namespace_path(root, "calculator")
        path.parent.mkdir(parents=True, mode=0o700)
        root.chmod(0o700)
        path.write_text("[", "utf-8")

        assert load_namespace(root, "calculator") == {}
        assert len(list(path.parent.glob("*.corrupt-*"))) == 1
        assert _record(root, "add", ADD) is not None


class TestForget:
    """Forgetting a role or a method drops its telemetry."""

    def test_forget_a_method_then_the_role(self, tmp_path: Path) -> None:
        """A method leaves the record; the role removes the file."""
        root = tmp_path / "store"
        _record(root, "add", ADD)
        _record(root, "record", RECORD)

        assert forget_namespace(root, "calculator", "add") is True
        assert list(load_namespace(root, "calculator")["methods"]) == ["record"]
        assert forget_namespace(root, "calculator") is True
        assert not namespace_path(root, "calculator").exists()
        assert forget_namespace(root, "calculator") is False

    def test_forgetting_what_was_never_recorded_makes_nothing(self, tmp_path: Path) -> None:
        """No telemetry: forget returns False and creates no directory or lock file."""
        root = tmp_path / "store"
        root.mkdir(mode=0o700)

        assert forget_namespace(root, "calculator", "add") is False
        assert list(root.iterdir()) == []
