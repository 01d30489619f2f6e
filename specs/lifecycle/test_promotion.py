"""The promotion lifecycle through real agents: evaluation, log fields, enforcement, rollback,
shadow mode off and legacy records (ADRs 0080, 0081)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from recurgent import Agent, configure_runtime
from recurgent._store import Store, checksum
from recurgent._store._cli import main as tools
from recurgent._store._paths import artifact_path
from recurgent.testing import ScriptedProvider, read_log
from specs.store.support import ScriptedModel

#: Doubles its input; raises for a negative one (an intrinsic failure, repaired).
DOUBLE = "if args[0] < 0:\n    raise ValueError('negative')\nreturn args[0] * 2"
#: What the repair writes: triples, never raises.
TRIPLE = "return args[0] * 3"


def _agent(
    root: Path, replies: Any = DOUBLE, *, trace: str | None = None, log: Path | None = None
) -> tuple[Agent, ScriptedProvider]:
    """An agent standing for a real model (``ScriptedModel``): sessions with different scripts
    share the stored versions, as agents of one real model do (ADR 0077)."""
    options: dict[str, Any] = {"toolstore_root": root, "log": log or False}
    if trace is not None:
        options["trace_id"] = trace
    provider = ScriptedModel({("calculator", "run"): replies})
    return Agent("calculator", provider=provider, **options), provider


def _artifact(root: Path) -> dict[str, Any]:
    Store(root).flush()
    return dict(json.loads(artifact_path(root, "calculator", "run").read_text("utf-8")))


def _state(root: Path, code: str) -> str:
    return str(_artifact(root)["lifecycle"]["versions"][checksum(code)]["lifecycle_state"])


def _durable_double(root: Path) -> None:
    """DOUBLE generated and answered 10 times over two sessions: durable."""
    for trace in ("session-a", "session-b"):
        agent, _ = _agent(root, trace=trace)
        for number in range(5):
            assert agent.run(number).value == number * 2
    assert _state(root, DOUBLE) == "durable"


def _tools(*argv: str) -> tuple[int, str]:
    out = io.StringIO()
    code = tools(list(argv), out=out, err=io.StringIO())
    return code, out.getvalue()


class TestEvaluationAndLog:
    """Each call's write is evaluated and logged."""

    def test_first_answer_is_probation_in_the_file_and_the_log(
        self, tmp_path: Path, log_path: Path
    ) -> None:
        """A fresh program's first answer: probation, continue_probation, in the artifact and in
        the log line with the policy and the switches."""
        agent, _ = _agent(tmp_path / "store", log=log_path)

        agent.run(1)

        [entry] = read_log(log_path)
        assert {
            key: entry[key]
            for key in (
                "lifecycle_state",
                "lifecycle_decision",
                "promotion_policy_version",
                "promotion_shadow_mode",
                "promotion_enforced",
                "artifact_selected_checksum",
            )
        } == {
            "lifecycle_state": "probation",
            "lifecycle_decision": "continue_probation",
            "promotion_policy_version": "solver_promotion_v1",
            "promotion_shadow_mode": True,
            "promotion_enforced": False,
            "artifact_selected_checksum": None,
        }
        assert entry["promotion_decision_rationale"]["candidate_bootstrap"] is True
        ledger = _artifact(tmp_path / "store")["lifecycle"]["shadow_ledger"]["evaluations"]
        assert [(e["decision_type"], e["decision"]) for e in ledger] == [
            ("promotion_evaluation", "continue_probation")
        ]

    def test_a_persisted_run_logs_the_version_selected(
        self, tmp_path: Path, log_path: Path
    ) -> None:
        """The second call names the stored version it ran and its state; its own evaluation
        waits with its counts in the batch (no decision yet, artifact_write deferred), and its
        lifecycle_state is the state it ran in."""
        agent, _ = _agent(tmp_path / "store", log=log_path)

        agent.run(1)
        agent.run(2)

        second = read_log(log_path)[1]
        assert (
            second["artifact_selected_checksum"],
            second["artifact_selected_lifecycle_state"],
            second["artifact_write"],
            second["lifecycle_decision"],
            second["lifecycle_state"],
        ) == (checksum(DOUBLE), "probation", "deferred", None, "probation")

    def test_ten_calls_in_one_session_stay_on_probation(self, tmp_path: Path) -> None:
        """The session gate: one agent (one trace id) never promotes its own program."""
        agent, _ = _agent(tmp_path / "store")
        for number in range(12):
            agent.run(number)
        assert _state(tmp_path / "store", DOUBLE) == "probation"

    def test_two_sessions_promote_to_durable(self, tmp_path: Path) -> None:
        """Ten answers over two trace ids make the program durable and the incumbent."""
        root = tmp_path / "store"
        _durable_double(root)
        lifecycle = _artifact(root)["lifecycle"]
        assert lifecycle["incumbent_durable_checksum"] == checksum(DOUBLE)
        assert lifecycle["shadow_ledger"]["evaluations"][-1]["decision"] == "promote"

    def test_a_provenance_violation_counts_against_the_version(self, tmp_path: Path) -> None:
        """A program that fetches and never says where from exhausts the guardrail budget; its
        version's scorecard counts the exhaustion and the provenance violation, which keep it
        from the gate."""
        fetch = "delegate('web_fetcher', purpose='fetch pages')\nresult = {'items': [1]}"
        agent, _ = _agent(tmp_path / "store", [fetch, fetch])

        assert agent.run(1).error_type == "guardrail_retry_exhausted"

        card = _artifact(tmp_path / "store")["scorecards"][checksum(fetch)]
        assert (card["guardrail_retry_exhausted_count"], card["provenance_violation_count"]) == (
            1,
            1,
        )


class TestEnforcement:
    """promotion_enforcement_enabled: the lifecycle chooses which stored version runs."""

    def _repaired(self, root: Path) -> None:
        """DOUBLE durable, then a negative input repaired into TRIPLE (the newer code)."""
        _durable_double(root)
        agent, provider = _agent(root, [TRIPLE])
        assert (agent.run(-1).value, provider.calls) == (-3, 1)
        stored = _artifact(root)
        assert stored["code"] == TRIPLE
        assert _state(root, TRIPLE) == "probation"
        assert _state(root, DOUBLE) == "durable"  # one failure in 11 calls: not regressed
        assert stored["scorecards"][checksum(DOUBLE)]["failures"] == 1

    def test_off_runs_the_newest_code(self, tmp_path: Path) -> None:
        """Without enforcement the newest code (TRIPLE, on probation) answers."""
        root = tmp_path / "store"
        self._repaired(root)
        agent, provider = _agent(root, [])
        assert (agent.run(5).value, provider.calls) == (15, 0)

    def test_on_runs_the_incumbent_durable_version(self, tmp_path: Path, log_path: Path) -> None:
        """With enforcement on, the durable incumbent (DOUBLE) answers with no request over the
        newer probation code, and the log names it; its run counts for it; the current code
        stays TRIPLE."""
        root = tmp_path / "store"
        self._repaired(root)
        configure_runtime(promotion_enforcement_enabled=True)
        agent, provider = _agent(root, [], log=log_path)

        assert (agent.run(5).value, provider.calls) == (10, 0)

        entry = read_log(log_path)[-1]
        assert (
            entry["artifact_selected_checksum"],
            entry["artifact_selected_lifecycle_state"],
            entry["promotion_enforced"],
        ) == (checksum(DOUBLE), "durable", True)
        stored = _artifact(root)
        assert stored["code"] == TRIPLE
        assert stored["scorecards"][checksum(DOUBLE)]["calls"] == 12

    def test_a_maintainer_degrading_the_incumbent_rolls_forward_and_back(
        self, tmp_path: Path
    ) -> None:
        """Through the CLI: DOUBLE set degraded -> enforcement runs TRIPLE; TRIPLE degraded and
        DOUBLE durable again -> enforcement rolls back to DOUBLE."""
        root = tmp_path / "store"
        self._repaired(root)
        configure_runtime(promotion_enforcement_enabled=True)

        assert (
            _tools(
                "set-lifecycle",
                "calculator",
                "run",
                checksum(DOUBLE),
                "degraded",
                "--root",
                str(root),
            )[0]
            == 0
        )
        assert _agent(root, [])[0].run(5).value == 15

        assert (
            _tools(
                "set-lifecycle",
                "calculator",
                "run",
                checksum(TRIPLE),
                "degraded",
                "--root",
                str(root),
            )[0]
            == 0
        )
        assert (
            _tools(
                "set-lifecycle",
                "calculator",
                "run",
                checksum(DOUBLE)[7:20],
                "durable",
                "--root",
                str(root),
            )[0]
            == 0
        )
        agent, provider = _agent(root, [])
        assert (agent.run(5).value, provider.calls) == (10, 0)
        overrides = _artifact(root)["lifecycle"]["manual_overrides"]
        assert [(o["artifact_checksum"], o["state"]) for o in overrides] == [
            (checksum(DOUBLE), "degraded"),
            (checksum(TRIPLE), "degraded"),
            (checksum(DOUBLE), "durable"),
        ]

    def test_a_failure_on_probation_degrades_at_once(self, tmp_path: Path) -> None:
        """Under enforcement the stored probation program's first failure degrades it (it is
        repaired in the same call); without enforcement it stays on probation."""
        for enforced, expected in ((True, "degraded"), (False, "probation")):
            root = tmp_path / f"store-{enforced}"
            configure_runtime(promotion_enforcement_enabled=enforced)
            agent, provider = _agent(root, [DOUBLE, TRIPLE])
            assert agent.run(2).value == 4
            assert (agent.run(-2).value, provider.calls) == (-6, 2)
            assert (_state(root, DOUBLE), _state(root, TRIPLE)) == (expected, "probation")

    def test_a_failed_repair_request_still_counts_the_stored_failure(self, tmp_path: Path) -> None:
        """The stored program fails and the repair request finds the provider down: the call
        ends with the provider's error, and the stored run is recorded as its program (a
        failure on its version, degrading it at once under enforcement)."""
        root = tmp_path / "store"
        configure_runtime(promotion_enforcement_enabled=True)
        agent, _ = _agent(root, [DOUBLE])
        agent.run(1)

        outcome = agent.run(-1)

        assert outcome.error_type == "provider"
        stored = _artifact(root)
        assert (stored["failure_count"], stored["scorecards"][checksum(DOUBLE)]["failures"]) == (
            1,
            1,
        )
        assert _state(root, DOUBLE) == "degraded"

    def test_every_version_degraded_regenerates(self, tmp_path: Path) -> None:
        """Nothing left that may run: the call generates (lookup degraded), and the new code
        starts its own lifecycle."""
        root = tmp_path / "store"
        agent, _ = _agent(root)
        agent.run(1)
        configure_runtime(promotion_enforcement_enabled=True)
        assert (
            _tools(
                "set-lifecycle",
                "calculator",
                "run",
                checksum(DOUBLE),
                "degraded",
                "--root",
                str(root),
            )[0]
            == 0
        )
        log = tmp_path / "calls.jsonl"
        agent, provider = _agent(root, [TRIPLE], log=log)

        assert (agent.run(4).value, provider.calls) == (12, 1)
        assert read_log(log)[-1]["artifact_lookup"] == "degraded"
        assert _state(root, TRIPLE) == "probation"

    def test_the_repair_budget_still_regenerates(self, tmp_path: Path) -> None:
        """Under enforcement, a failing stored program with its repair budget spent is
        regenerated from scratch, as without enforcement."""
        root = tmp_path / "store"
        _agent(root)[0].run(1)
        path = artifact_path(root, "calculator", "run")
        data = _artifact(root)
        data["repair_count_since_regen"] = 3
        path.write_text(json.dumps(data), "utf-8")
        configure_runtime(promotion_enforcement_enabled=True)
        log = tmp_path / "calls.jsonl"
        agent, provider = _agent(root, [TRIPLE], log=log)

        assert (agent.run(-1).value, provider.calls) == (-3, 1)
        entry = read_log(log)[-1]
        assert (entry["program_source"], entry["repair_attempted"]) == ("generated", False)
        assert _artifact(root)["repair_count_since_regen"] == 0


class TestSwitchesAndLegacy:
    """Shadow mode off, and artifacts written before lifecycles."""

    def test_shadow_mode_off_writes_no_lifecycle(self, tmp_path: Path, log_path: Path) -> None:
        """No lifecycle block and no decision; the policy and the switches are still logged."""
        configure_runtime(promotion_shadow_mode_enabled=False)
        agent, _ = _agent(tmp_path / "store", log=log_path)

        agent.run(1)

        assert "lifecycle" not in _artifact(tmp_path / "store")
        [entry] = read_log(log_path)
        assert (
            entry["lifecycle_state"],
            entry["promotion_policy_version"],
            entry["promotion_shadow_mode"],
        ) == (None, "solver_promotion_v1", False)

    def test_a_legacy_artifact_starts_in_probation(self, tmp_path: Path) -> None:
        """An artifact without lifecycle data (written before it existed) is evaluated from
        probation at its next run, in a ledger marked legacy."""
        root = tmp_path / "store"
        _agent(root)[0].run(1)
        path = artifact_path(root, "calculator", "run")
        data = _artifact(root)
        del data["lifecycle"]
        del data["versions"]
        path.write_text(json.dumps(data), "utf-8")

        agent, provider = _agent(root, [])
        assert (agent.run(2).value, provider.calls) == (4, 0)

        lifecycle = _artifact(root)["lifecycle"]
        assert lifecycle["legacy_compatibility_mode"] is True
        entry = lifecycle["versions"][checksum(DOUBLE)]
        assert (entry["lifecycle_state"], entry["compatibility_mode"]) == ("probation", True)
        assert [e["from_state"] for e in lifecycle["shadow_ledger"]["evaluations"]] == ["probation"]
