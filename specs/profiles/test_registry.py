"""role_profiles.json: versions, activation, rollback, history (recurgent/_profiles/_registry.py,
ADR 0083)."""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from recurgent._profiles import RoleProfileRegistry, changes, role_profiles_path
from recurgent._profiles._registry import HISTORY_KEPT, VERSIONS_KEPT, current_actor
from recurgent.errors import UsageError

MOMENT = datetime.datetime(2026, 12, 2, 10, 0, 0, tzinfo=datetime.UTC)


def _profile(version: int, mode: str = "coordination", role: str = "calculator") -> dict[str, Any]:
    constraint: dict[str, Any] = {"kind": "shared_state_slot", "mode": mode}
    if mode == "prescriptive":
        constraint["canonical_key"] = "value"
    return {"role": role, "version": version, "constraints": {"accumulator": constraint}}


def _registry(tmp_path: Path) -> RoleProfileRegistry:
    return RoleProfileRegistry(tmp_path / "store", clock=lambda: MOMENT)


def _file(tmp_path: Path) -> dict[str, Any]:
    data = json.loads(role_profiles_path(tmp_path / "store").read_text("utf-8"))
    assert isinstance(data, dict)
    return data


class TestPublish:
    """Publishing stores a version and activates it unless asked not to."""

    def test_first_publish_is_active_and_recorded(self, tmp_path: Path) -> None:
        """The file holds the version, the active version and one publish event."""
        registry = _registry(tmp_path)

        stored = registry.publish(_profile(1), actor="ana", proposal_id="prop-1", note="first")

        assert stored["version"] == 1
        assert registry.active("calculator") == stored
        assert _file(tmp_path) == {
            "schema_version": 1,
            "roles": {
                "calculator": {
                    "role": "calculator",
                    "active_version": 1,
                    "versions": {"1": stored},
                    "history": [
                        {
                            "event": "publish",
                            "version": 1,
                            "active_version": 1,
                            "source": "runtime",
                            "actor": "ana",
                            "at": "2026-12-02T10:00:00.000Z",
                            "proposal_id": "prop-1",
                            "note": "first",
                        }
                    ],
                    "updated_at": "2026-12-02T10:00:00.000Z",
                }
            },
        }

    def test_publish_without_activate_keeps_the_active_version(self, tmp_path: Path) -> None:
        """activate=False stores a second version; version 1 stays active."""
        registry = _registry(tmp_path)
        registry.publish(_profile(1))

        registry.publish(_profile(2, "prescriptive"), activate=False)

        assert registry.active_version("calculator") == 1
        assert sorted(registry.versions("calculator")) == [1, 2]

    def test_publish_makes_it_active_by_default(self, tmp_path: Path) -> None:
        """Publishing moves the active version to the published one."""
        registry = _registry(tmp_path)
        registry.publish(_profile(1))

        registry.publish(_profile(2, "prescriptive"))

        assert registry.active_version("calculator") == 2

    def test_the_same_publish_again_writes_nothing(self, tmp_path: Path) -> None:
        """An unchanged, already active version is not written again (no history flood)."""
        registry = _registry(tmp_path)
        registry.publish(_profile(1))
        before = role_profiles_path(tmp_path / "store").stat().st_mtime_ns
        generation = changes()

        registry.publish(_profile(1))

        assert role_profiles_path(tmp_path / "store").stat().st_mtime_ns == before
        assert len(registry.history("calculator")) == 1
        assert changes() == generation

    def test_a_write_changes_the_generation(self, tmp_path: Path) -> None:
        """Every write this process makes moves changes() on."""
        generation = changes()

        _registry(tmp_path).publish(_profile(1))

        assert changes() > generation

    def test_malformed_profile_is_refused_and_nothing_written(self, tmp_path: Path) -> None:
        """A bad profile raises UsageError before the file is touched."""
        with pytest.raises(UsageError, match="prescriptive mode needs canonical_key"):
            _registry(tmp_path).publish(
                {"role": "calculator", "version": 1, "constraints": {"a": {"mode": "prescriptive"}}}
            )

        assert not role_profiles_path(tmp_path / "store").exists()

    def test_actor_defaults_to_the_os_user(self, tmp_path: Path) -> None:
        """Without an actor the event names the OS user."""
        registry = _registry(tmp_path)
        registry.publish(_profile(1))

        assert registry.history("calculator")[-1]["actor"] == current_actor()

    def test_roles_are_kept_apart(self, tmp_path: Path) -> None:
        """Two roles' profiles live side by side."""
        registry = _registry(tmp_path)
        registry.publish(_profile(1))
        registry.publish(_profile(3, role="parser"))

        assert registry.roles() == ["calculator", "parser"]
        assert registry.active_version("parser") == 3


class TestActivateAndRollback:
    """Activation picks a stored version; rollback goes back to the one active before."""

    def test_activate_a_stored_version(self, tmp_path: Path) -> None:
        """activate returns the now active profile and records the event."""
        registry = _registry(tmp_path)
        registry.publish(_profile(1))
        registry.publish(_profile(2, "prescriptive"), activate=False)

        active = registry.activate("calculator", 2, actor="ana", proposal_id="prop-9")

        assert active["constraints"]["accumulator"]["mode"] == "prescriptive"
        event = registry.history("calculator")[-1]
        assert (
            event["event"],
            event["version"],
            event["active_version"],
            event["proposal_id"],
        ) == (
            "activate",
            2,
            2,
            "prop-9",
        )

    def test_activating_an_unknown_version_is_refused(self, tmp_path: Path) -> None:
        """An unknown version is a UsageError naming the stored ones; nothing is written."""
        registry = _registry(tmp_path)
        registry.publish(_profile(1))

        with pytest.raises(
            UsageError, match="version 5 not found for role 'calculator'; stored versions: 1"
        ):
            registry.activate("calculator", 5)

        assert len(registry.history("calculator")) == 1

    def test_rollback_goes_to_the_previous_active_version(self, tmp_path: Path) -> None:
        """After 1 -> 2, rollback() makes 1 active again, recorded as a rollback."""
        registry = _registry(tmp_path)
        registry.publish(_profile(1))
        registry.publish(_profile(2, "prescriptive"))

        active = registry.rollback("calculator", actor="ana")

        assert active["version"] == 1
        assert registry.history("calculator")[-1]["event"] == "rollback"

    def test_rollback_to_a_named_version(self, tmp_path: Path) -> None:
        """rollback(role, version) activates that version."""
        registry = _registry(tmp_path)
        for version in (1, 2, 3):
            registry.publish(_profile(version))

        assert registry.rollback("calculator", 1)["version"] == 1

    def test_rollback_without_an_earlier_version_is_refused(self, tmp_path: Path) -> None:
        """A role with one active version has nothing to roll back to."""
        registry = _registry(tmp_path)
        registry.publish(_profile(1))

        with pytest.raises(UsageError, match="no earlier active role_profile version"):
            registry.rollback("calculator")


class TestBounds:
    """History and versions are bounded."""

    def test_history_keeps_the_newest_200_events(self, tmp_path: Path) -> None:
        """After 205 events the history holds the last 200."""
        registry = _registry(tmp_path)
        registry.publish(_profile(1))
        registry.publish(_profile(2), activate=False)
        for index in range(203):
            registry.activate("calculator", 1 + index % 2, note=str(index))

        history = registry.history("calculator")
        assert len(history) == HISTORY_KEPT == 200
        assert (history[0]["note"], history[-1]["note"]) == ("3", "202")

    def test_versions_past_the_limit_drop_the_oldest_inactive(self, tmp_path: Path) -> None:
        """Publishing 66 versions keeps 64: the active version 1 and the newest 63."""
        registry = _registry(tmp_path)
        registry.publish(_profile(1))
        for version in range(2, 67):
            registry.publish(_profile(version), activate=False)

        versions = sorted(registry.versions("calculator"))
        assert len(versions) == VERSIONS_KEPT == 64
        assert versions[:2] == [1, 4]
        assert registry.active_version("calculator") == 1


class TestUntrustedFile:
    """The file is untrusted input (ADR 0070)."""

    def test_corrupt_file_is_quarantined_and_read_as_empty(self, tmp_path: Path) -> None:
        """Invalid JSON is moved to .corrupt-<stamp>; publishing then starts a new file."""
        path = role_profiles_path(tmp_path / "store")
        path.parent.mkdir(mode=0o700)
        path.write_text("{not json", "utf-8")
        registry = _registry(tmp_path)

        assert registry.active("calculator") is None
        moved = list(path.parent.glob("role_profiles.json.corrupt-*"))
        assert [p.read_text("utf-8") for p in moved] == ["{not json"]

        registry.publish(_profile(1))
        assert registry.active_version("calculator") == 1

    def test_roles_that_are_not_an_object_are_quarantined(self, tmp_path: Path) -> None:
        """{"roles": [...]} is damage: set aside, read as no profiles."""
        path = role_profiles_path(tmp_path / "store")
        path.parent.mkdir(mode=0o700)
        path.write_text('{"schema_version": 1, "roles": []}', "utf-8")

        assert _registry(tmp_path).roles() == []
        assert len(list(path.parent.glob("role_profiles.json.corrupt-*"))) == 1

    def test_a_damaged_version_is_skipped(self, tmp_path: Path) -> None:
        """A stored version that fails the check is never used; the others are."""
        path = role_profiles_path(tmp_path / "store")
        path.parent.mkdir(mode=0o700)
        bad = {"role": "calculator", "version": 2, "constraints": {"a": {"kind": "colour"}}}
        path.write_text(
            json.dumps(
                {
                    "schema_version": 1,
                    "roles": {
                        "calculator": {
                            "active_version": 2,
                            "versions": {"1": _profile(1), "2": bad, "3": _profile(4)},
                        }
                    },
                }
            ),
            "utf-8",
        )
        registry = _registry(tmp_path)

        assert sorted(registry.versions("calculator")) == [1]
        assert registry.active_version("calculator") == 1

    def test_another_schema_version_is_neither_read_nor_overwritten(self, tmp_path: Path) -> None:
        """schema_version 2 reads as empty and publishing raises OSError, leaving it as is."""
        path = role_profiles_path(tmp_path / "store")
        path.parent.mkdir(mode=0o700)
        text = '{"schema_version": 2, "roles": {}}'
        path.write_text(text, "utf-8")
        registry = _registry(tmp_path)

        assert registry.active("calculator") is None
        with pytest.raises(OSError, match="was not written: unsupported"):
            registry.publish(_profile(1))
        assert path.read_text("utf-8") == text


_PUBLISH = """
import sys
from pathlib import Path
from recurgent._profiles import RoleProfileRegistry
version = int(sys.argv[2])
RoleProfileRegistry(Path(sys.argv[1])).publish(
    {"role": "calculator", "version": version, "constraints": {}}, actor=f"p{version}"
)
"""


class TestProcesses:
    """Processes publishing at once lose nothing (merge-on-write under the file's lock)."""

    def test_four_processes_publish_four_versions(self, tmp_path: Path) -> None:
        """Every version and every history event written by four processes is kept."""
        root = tmp_path / "store"
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
        runs = [
            subprocess.Popen([sys.executable, "-c", _PUBLISH, str(root), str(v)], env=env)
            for v in (1, 2, 3, 4)
        ]
        assert [run.wait(timeout=120) for run in runs] == [0, 0, 0, 0]

        registry = RoleProfileRegistry(root)
        assert sorted(registry.versions("calculator")) == [1, 2, 3, 4]
        assert sorted(e["actor"] for e in registry.history("calculator")) == [
            "p1",
            "p2",
            "p3",
            "p4",
        ]
