"""`recurgent tools scorecards | decisions | set-lifecycle` on a real store (ADR 0081)."""

from __future__ import annotations

import getpass
import io
import json
from pathlib import Path
from typing import Any

import pytest

from recurgent import configure_runtime
from recurgent._store import Store, checksum
from recurgent._store._cli import main
from recurgent._store._paths import artifact_path
from specs.store.support import call

A, B = "return args[0]", "return args[0] + 1"
DA, DB = checksum(A), checksum(B)


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def _json(*argv: str) -> Any:
    code, out, err = _run(*argv, "--json")
    assert (code, err) == (0, "")
    return json.loads(out)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """calculator.add: version A durable (10 calls over 2 sessions), then version B generated
    and answered twice (probation)."""
    root = tmp_path / "store"
    store = Store(root)
    for index in range(10):
        source = "generated" if index == 0 else "persisted"
        store.record_call(
            call(A, method="add", source=source, trace_id=f"t{index % 2}", contract_passed=True)
        )
    store.record_call(call(B, method="add", trace_id="t2"))
    store.record_call(call(B, method="add", source="persisted", trace_id="t2"))
    store.flush()
    return root


def _artifact(root: Path) -> dict[str, Any]:
    return dict(json.loads(artifact_path(root, "calculator", "add").read_text("utf-8")))


class TestScorecards:
    """Each version with its state and counts."""

    def test_json_lists_every_version_with_its_lifecycle(self, root: Path) -> None:
        """--json: one row per version, newest first, with state, counts, contract rate and
        sessions; the incumbent and the current code are marked."""
        report = _json("scorecards", "calculator", "add", "--root", str(root))

        assert (report["role"], report["method"], report["current_checksum"]) == (
            "calculator",
            "add",
            DB,
        )
        assert report["incumbent_durable_checksum"] == DA
        assert report["policy_version"] == "solver_promotion_v1"
        rows = {row["checksum"]: row for row in report["versions"]}
        assert [row["checksum"] for row in report["versions"]] == [DB, DA]
        assert {
            k: rows[DA][k]
            for k in (
                "lifecycle_state",
                "calls",
                "successes",
                "failures",
                "contract_pass_rate",
                "sessions",
                "incumbent",
                "current",
            )
        } == {
            "lifecycle_state": "durable",
            "calls": 10,
            "successes": 10,
            "failures": 0,
            "contract_pass_rate": 1.0,
            "sessions": 2,
            "incumbent": True,
            "current": False,
        }
        assert (rows[DB]["lifecycle_state"], rows[DB]["calls"], rows[DB]["current"]) == (
            "probation",
            2,
            True,
        )
        assert report["lifecycle"]["shadow_ledger_summary"]["evaluations"] == 4
        assert set(report["scorecards"]) == {DA, DB}

    def test_text_is_a_table(self, root: Path) -> None:
        """The text view prints one line per version with its state and markers."""
        code, out, err = _run("scorecards", "calculator", "add", "--root", str(root))

        assert (code, err) == (0, "")
        lines = out.splitlines()
        assert lines[1].split() == [
            "CHECKSUM",
            "STATE",
            "CALLS",
            "OK",
            "FAILED",
            "CONTRACT",
            "SESSIONS",
        ]
        assert lines[2].split() == [DB, "probation", "2", "2", "0", "-", "1", "current"]
        assert lines[3].split() == [DA, "durable", "10", "10", "0", "1.00", "2", "incumbent"]

    def test_nothing_stored_is_exit_one(self, tmp_path: Path) -> None:
        """An unknown method: exit 1 and a message naming it."""
        code, out, err = _run("scorecards", "calculator", "nope", "--root", str(tmp_path))
        assert (code, out) == (1, "")
        assert "nothing stored for calculator.nope" in err

    def test_a_damaged_file_is_named_and_left_where_it_is(self, root: Path) -> None:
        """A record that does not validate is reported (exit 1) and not moved."""
        path = artifact_path(root, "calculator", "add")
        data = _artifact(root)
        data["lifecycle"]["incumbent_durable_checksum"] = "nope"
        path.write_text(json.dumps(data), "utf-8")

        code, _, err = _run("scorecards", "calculator", "add", "--root", str(root))

        assert code == 1 and "(invalid_record)" in err
        assert path.exists()


class TestDecisions:
    """The ledger with its rationale."""

    def test_json_is_the_ledger_oldest_first(self, root: Path) -> None:
        """Every evaluation with its decision and rationale: A bootstrapped, then promoted by the
        batch of its nine persisted runs; B bootstrapped, then held on probation."""
        report = _json("decisions", "calculator", "add", "--root", str(root))

        assert report["decision_count"] == 4
        summary = [
            (d["candidate_artifact_id"], d["decision"], d["calls_covered"])
            for d in report["decisions"]
        ]
        assert summary == [
            (DA, "continue_probation", 1),
            (DA, "promote", 9),
            (DB, "continue_probation", 1),
            (DB, "continue_probation", 1),
        ]
        promote = report["decisions"][1]["rationale"]
        assert (promote["calls"], promote["session_count"], promote["gate_pass"]) == (10, 2, True)
        held = report["decisions"][3]
        assert held["rationale"]["failed_checks"] == ["min_calls", "min_sessions"]
        assert held["incumbent_artifact_id"] == DA

    def test_limit_keeps_the_most_recent(self, root: Path) -> None:
        """--limit 1: only the newest decision."""
        report = _json("decisions", "calculator", "add", "--limit", "1", "--root", str(root))
        assert (report["decision_count"], report["decisions"][0]["candidate_artifact_id"]) == (
            1,
            DB,
        )

    def test_text_shows_the_rationale(self, root: Path) -> None:
        """One line per decision: the move, the numbers and what holds the version back."""
        code, out, _ = _run("decisions", "calculator", "add", "--root", str(root))
        lines = out.splitlines()
        assert code == 0 and len(lines) == 4
        assert (
            "promote" in lines[1] and "probation -> durable" in lines[1] and "batch=9" in lines[1]
        )
        assert lines[3].endswith("gate: min_calls, min_sessions")

    def test_a_bad_limit_is_a_usage_error(self, root: Path) -> None:
        """--limit 0 is refused by the parser (exit 2)."""
        assert _run("decisions", "calculator", "add", "--limit", "0", "--root", str(root))[0] == 2


class TestSetLifecycle:
    """A maintainer's override: applied under the lock, recorded twice."""

    def test_override_by_prefix_is_applied_and_recorded(self, root: Path) -> None:
        """B (named by 12 hex digits) set durable: the entry, the incumbent, a manual_overrides
        record and a ledger entry with the actor and reason."""
        report = _json(
            "set-lifecycle",
            "calculator",
            "add",
            DB[7:19],
            "durable",
            "--reason",
            "reviewed",
            "--root",
            str(root),
        )

        assert (report["checksum"], report["previous_state"], report["state"]) == (
            DB,
            "probation",
            "durable",
        )
        assert (report["dry_run"], report["incumbent_durable_checksum"]) == (False, DB)
        lifecycle = _artifact(root)["lifecycle"]
        assert lifecycle["versions"][DB]["lifecycle_state"] == "durable"
        assert lifecycle["versions"][DB]["last_decision"] == "manual_override"
        assert lifecycle["incumbent_durable_checksum"] == DB
        [override] = lifecycle["manual_overrides"]
        assert (
            override["actor"],
            override["reason"],
            override["state"],
            override["previous_state"],
        ) == (
            getpass.getuser(),
            "reviewed",
            "durable",
            "probation",
        )
        last = lifecycle["shadow_ledger"]["evaluations"][-1]
        assert (last["decision"], last["rationale"]["reason"]) == ("manual_override", "reviewed")

    def test_a_role_named_with_a_lone_surrogate_finds_its_record(self, tmp_path: Path) -> None:
        """A role name that is not valid UTF-8 on the command line (``sys.argv`` carries the
        byte as a lone surrogate) names the record its agents wrote: the file stores U+FFFD in
        its place, and the override is applied to it, as every other store command matches
        it (``same_key``, red team R10), instead of a ``key_mismatch`` refusal."""
        root = tmp_path / "store"
        role = "calc\udcff"
        store = Store(root)
        store.record_call(call(A, role=role, method="add"))
        store.flush()

        report = _json("set-lifecycle", role, "add", DA[7:19], "degraded", "--root", str(root))

        stored = json.loads(artifact_path(root, role, "add").read_text("utf-8"))
        assert (report["role"], report["previous_state"], report["state"]) == (
            "calc\ufffd",
            "probation",
            "degraded",
        )
        assert stored["lifecycle"]["versions"][DA]["lifecycle_state"] == "degraded"

    def test_dry_run_writes_nothing(self, root: Path) -> None:
        """--dry-run prints the change and leaves the file as it was."""
        before = artifact_path(root, "calculator", "add").read_bytes()
        code, out, _ = _run(
            "set-lifecycle", "calculator", "add", DA, "degraded", "--dry-run", "--root", str(root)
        )
        assert code == 0 and out.startswith(
            "Would set calculator.add " + DA + ": durable -> degraded"
        )
        assert artifact_path(root, "calculator", "add").read_bytes() == before

    @pytest.mark.parametrize(
        ("checksum_text", "message"),
        [
            ("sha256:" + "f" * 64, "no version sha256:" + "f" * 64),
            ("abc", "is not a checksum"),
            ("zzzzzzzz", "is not a checksum"),
        ],
    )
    def test_unknown_or_malformed_checksums_are_refused(
        self, root: Path, checksum_text: str, message: str
    ) -> None:
        """A checksum the artifact never saw, or text that is not one: exit 1, nothing written."""
        before = artifact_path(root, "calculator", "add").read_bytes()
        code, _, err = _run(
            "set-lifecycle", "calculator", "add", checksum_text, "durable", "--root", str(root)
        )
        assert code == 1 and message in err
        assert artifact_path(root, "calculator", "add").read_bytes() == before

    def test_an_ambiguous_prefix_is_refused(self, tmp_path: Path) -> None:
        """Two versions whose checksums share the 8 digits given: exit 1 naming both."""
        seen: dict[str, str] = {}
        for number in range(1_000_000):  # a shared 8-digit prefix turns up after ~80k
            code = f"return {number}"
            prefix = checksum(code)[7:15]
            if prefix in seen:
                pair = (seen[prefix], code)
                break
            seen[prefix] = code
        root = tmp_path / "store"
        store = Store(root)
        for code in pair:
            store.record_call(call(code, method="add"))

        status, _, err = _run(
            "set-lifecycle", "calculator", "add", prefix, "durable", "--root", str(root)
        )

        assert status == 1 and "is ambiguous" in err
        assert checksum(pair[0]) in err and checksum(pair[1]) in err

    def test_nothing_stored_makes_no_directory(self, tmp_path: Path) -> None:
        """An override for a method with no artifact: exit 1, and the store is left as it was
        (no role directory or lock file made)."""
        root = tmp_path / "store"
        Store(root).record_call(call(A, method="add"))
        before = sorted(p.name for p in root.rglob("*"))

        code, _, err = _run("set-lifecycle", "other", "add", DA, "durable", "--root", str(root))

        assert code == 1 and "nothing stored for other.add" in err
        assert sorted(p.name for p in root.rglob("*")) == before

    def test_the_originals_apply_flag_is_accepted(self, root: Path) -> None:
        """--apply (the original's spelling of "write it") writes, as the default does; with
        --dry-run it is a usage error."""
        report = _json(
            "set-lifecycle", "calculator", "add", DA, "probation", "--apply", "--root", str(root)
        )
        assert (
            report["dry_run"],
            _artifact(root)["lifecycle"]["versions"][DA]["lifecycle_state"],
        ) == (
            False,
            "probation",
        )
        both = ("set-lifecycle", "calculator", "add", DA, "probation", "--apply", "--dry-run")
        assert _run(*both, "--root", str(root))[0] == 2

    def test_a_state_outside_the_four_is_a_usage_error(self, root: Path) -> None:
        """Only candidate, probation, durable and degraded are accepted (exit 2)."""
        assert (
            _run("set-lifecycle", "calculator", "add", DA, "trusted", "--root", str(root))[0] == 2
        )

    def test_a_non_maintainer_is_refused(self, root: Path) -> None:
        """--actor someone not among the maintainers: authority_denied, exit 1, file unchanged;
        the same actor listed as a maintainer is recorded as the actor."""
        before = artifact_path(root, "calculator", "add").read_bytes()
        code, _, err = _run(
            "set-lifecycle",
            "calculator",
            "add",
            DA,
            "degraded",
            "--actor",
            "mallory",
            "--root",
            str(root),
        )
        assert code == 1 and "authority_denied: mallory is not a maintainer" in err
        assert artifact_path(root, "calculator", "add").read_bytes() == before

        configure_runtime(authority_maintainers=["Mallory", getpass.getuser()])
        report = _json(
            "set-lifecycle",
            "calculator",
            "add",
            DA,
            "degraded",
            "--actor",
            "mallory",
            "--root",
            str(root),
        )
        assert report["actor"] == "mallory"
        assert _artifact(root)["lifecycle"]["manual_overrides"][-1]["actor"] == "mallory"

    def test_authority_off_lets_anyone_override(self, root: Path) -> None:
        """With authority_enforcement_enabled off, any actor may override."""
        configure_runtime(authority_enforcement_enabled=False)
        assert (
            _json(
                "set-lifecycle",
                "calculator",
                "add",
                DA,
                "candidate",
                "--actor",
                "anyone",
                "--root",
                str(root),
            )["state"]
            == "candidate"
        )

    def test_escapes_control_characters_in_the_reason(self, root: Path) -> None:
        """A reason with an escape sequence is stored as given and printed escaped."""
        _json(
            "set-lifecycle",
            "calculator",
            "add",
            DA,
            "durable",
            "--reason",
            "ok\x1b]0;pwned\x07",
            "--root",
            str(root),
        )
        code, out, _ = _run("decisions", "calculator", "add", "--limit", "1", "--root", str(root))
        assert code == 0 and "\x1b" not in out and "\\x1b]0;pwned\\x07" in out


class TestRefusalsWithJson:
    """With ``--json`` a refused command prints one JSON document too (ADR 0128): the shape of
    ``recurgent proposals``' errors, so a script reads ``error_type`` the same way."""

    def test_a_non_maintainer_gets_authority_denied_as_json(self, root: Path) -> None:
        """Exit 1, the stderr line as before, and ``authority_denied`` on stdout."""
        before = artifact_path(root, "calculator", "add").read_bytes()
        argv = ("set-lifecycle", "calculator", "add", DA, "degraded", "--actor", "mallory")
        code, out, err = _run(*argv, "--root", str(root), "--json")

        maintainers = getpass.getuser().lower()
        message = (
            f"mallory is not a maintainer (maintainers: {maintainers}; set "
            "RECURGENT_AUTHORITY_MAINTAINERS)"
        )
        assert (code, err) == (1, f"recurgent tools: authority_denied: {message}\n")
        assert json.loads(out) == {
            "command": "set-lifecycle",
            "status": "error",
            "error_type": "authority_denied",
            "error_message": message,
        }
        assert artifact_path(root, "calculator", "add").read_bytes() == before

    def test_nothing_stored_and_an_unknown_version_as_json(self, root: Path) -> None:
        """``not_found`` for scorecards/decisions of a method never stored; ``unknown_version``
        for a checksum the artifact does not know; without ``--json`` stdout stays empty."""
        for command in ("scorecards", "decisions"):
            code, out, _ = _run(command, "calculator", "sub", "--root", str(root), "--json")
            assert code == 1
            assert (json.loads(out)["command"], json.loads(out)["error_type"]) == (
                command,
                "not_found",
            )
        argv = ("set-lifecycle", "calculator", "add", "0123abcd", "durable", "--root", str(root))
        code, out, _ = _run(*argv, "--json")
        assert (code, json.loads(out)["error_type"]) == (1, "unknown_version")
        assert _run(*argv)[:2] == (1, "")


def test_scorecards_json_lists_the_overrides_as_the_artifact_holds_them(root: Path) -> None:
    """``lifecycle.manual_overrides`` in ``scorecards --json`` is the list of override records
    (who, when, what, why), the artifact's own field, not a count (ADR 0128)."""
    assert (
        _json("scorecards", "calculator", "add", "--root", str(root))["lifecycle"][
            "manual_overrides"
        ]
        == []
    )
    _json(
        "set-lifecycle", "calculator", "add", DB, "durable", "--reason", "ok", "--root", str(root)
    )

    shown = _json("scorecards", "calculator", "add", "--root", str(root))["lifecycle"]
    assert shown["manual_overrides"] == _artifact(root)["lifecycle"]["manual_overrides"]
    [override] = shown["manual_overrides"]
    assert (override["artifact_checksum"], override["state"], override["reason"]) == (
        DB,
        "durable",
        "ok",
    )


class TestUnreadableSettings:
    """A ``RECURGENT_*`` variable the commands reading the settings cannot read is a usage
    error (exit 2, as ``recurgent proposals`` exits), never a silent default."""

    MESSAGE = (
        "environment variable RECURGENT_{name}: {setting} must be True or False (or one of "
        "1/true/yes/on, 0/false/no/off), got 'maybe'"
    )

    def test_scorecards_refuse_instead_of_showing_enforcement_off(
        self, root: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A bad enforcement switch: exit 2, the reason on stderr and as JSON, no scorecard."""
        monkeypatch.setenv("RECURGENT_PROMOTION_ENFORCEMENT_ENABLED", "maybe")
        why = self.MESSAGE.format(
            name="PROMOTION_ENFORCEMENT_ENABLED", setting="promotion_enforcement_enabled"
        )

        code, out, err = _run("scorecards", "calculator", "add", "--json", "--root", str(root))

        assert (code, err) == (2, f"recurgent tools: {why}\n")
        assert json.loads(out) == {
            "command": "scorecards",
            "status": "error",
            "error_type": "usage_error",
            "error_message": why,
        }

    def test_an_override_is_refused_and_changes_nothing(
        self, root: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A bad authority switch: set-lifecycle exits 2 and the artifact is as it was."""
        monkeypatch.setenv("RECURGENT_AUTHORITY_ENFORCEMENT_ENABLED", "maybe")
        before = _artifact(root)

        code, out, err = _run(
            "set-lifecycle", "calculator", "add", DB, "durable", "--root", str(root)
        )

        assert (code, out) == (2, "")
        assert (
            err
            == "recurgent tools: "
            + self.MESSAGE.format(
                name="AUTHORITY_ENFORCEMENT_ENABLED", setting="authority_enforcement_enabled"
            )
            + "\n"
        )
        assert _artifact(root) == before

    def test_decisions_read_no_settings(self, root: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """The ledger does not depend on the switches: it is shown as usual."""
        monkeypatch.setenv("RECURGENT_PROMOTION_ENFORCEMENT_ENABLED", "maybe")

        assert _json("decisions", "calculator", "add", "--root", str(root))["decision_count"] == 4
