"""The continuity guard in the call lifecycle: shadow logging, enforcement through the guardrail
lane, the prompt hint and the namespace log fields (recurgent/_lifecycle/_role_continuity.py,
ADRs 0083-0084)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from recurgent import Agent, configure_runtime
from recurgent._lifecycle import USER_FACING_EXHAUSTION
from recurgent._prompting import shared_system_prefix
from recurgent.testing import ScriptedProvider, read_log
from specs.store.support import ScriptedModel

from .support import tag

ADD = "context['value'] = context.get('value', 0) + args[0]\nresult = context['value']"
ADD_MEMORY = "context['memory'] = context.get('memory', 0) + args[0]\nresult = context['memory']"
INC_MEMORY = "context['memory'] = context.get('memory', 0) + 1\nresult = context['memory']"
INC_VALUE = "context['value'] = context.get('value', 0) + 1\nresult = context['value']"
COORDINATION = {"role": "calculator", "version": 1, "constraints": {"accumulator": {}}}
PRESCRIPTIVE = {
    "role": "calculator",
    "version": 2,
    "constraints": {"accumulator": {"mode": "prescriptive", "canonical_key": "value"}},
}
CORRECTION = (
    "keep this role's state in memory key 'value' (context['value']), as sibling method add "
    "does; this program used 'memory'"
)


def _calc(replies: dict[Any, Any], **options: Any) -> tuple[Agent, ScriptedProvider]:
    provider = ScriptedProvider(replies)
    options.setdefault("log", False)
    options.setdefault("toolstore_root", None)
    options.setdefault("role_profile", COORDINATION)
    return Agent("calculator", provider=provider, **options), provider


def _fields(entry: dict[str, Any], prefix: str) -> dict[str, Any]:
    return {key: value for key, value in entry.items() if key.startswith(prefix)}


class TestShadow:
    """By default a drift is logged and the answer stands."""

    def test_drift_is_logged_and_the_call_succeeds(self, log_path: Path) -> None:
        """increment on 'memory' after add on 'value': ok, one request, a failed report."""
        agent, provider = _calc({"add": ADD, "increment": INC_MEMORY}, log=log_path)
        agent.add(2)

        outcome = agent.increment()

        assert (outcome.value, provider.calls) == (1, 2)
        entry = read_log(log_path)[-1]
        report = entry["role_profile_compliance"]
        assert (report["passed"], report["constraint_results"][0]["observations"]) == (
            False,
            {"add": "value", "increment": "memory"},
        )
        assert {
            k: v
            for k, v in _fields(entry, "role_profile").items()
            if k != "role_profile_compliance"
        } == {
            "role_profile_compliant": False,
            "role_profile_violation_count": 1,
            "role_profile_violation_types": ["shared_state_slot_drift"],
            "role_profile_correction_hint": CORRECTION,
            "role_profile_shadow_mode": True,
            "role_profile_enforced": False,
        }
        assert entry["active_role_profile_version"] == 1

    def test_a_kept_profile_logs_compliant(self, log_path: Path) -> None:
        """A call that keeps the profile logs compliant True with no violation."""
        agent, _ = _calc({"add": ADD}, log=log_path)

        agent.add(1)

        entry = read_log(log_path)[-1]
        assert (entry["role_profile_compliant"], entry["role_profile_violation_count"]) == (True, 0)

    def test_without_a_profile_every_role_profile_field_is_null(self, log_path: Path) -> None:
        """No profile: the guard does not run and its fields are null."""
        agent, _ = _calc({"add": ADD}, log=log_path, role_profile=None)

        agent.add(1)

        assert set(_fields(read_log(log_path)[-1], "role_profile").values()) == {None}

    def test_both_switches_off_skip_the_guard(self, log_path: Path) -> None:
        """With shadow and enforcement off, nothing is judged even with a profile."""
        configure_runtime(role_profile_shadow_mode_enabled=False)
        agent, _ = _calc({"add": ADD, "increment": INC_MEMORY}, log=log_path)
        agent.add(1)

        agent.increment()

        assert read_log(log_path)[-1]["role_profile_compliance"] is None


def _store_a_drifting_increment(tmp_path: Path) -> Path:
    """A store root holding calculator.add and an increment on 'memory' (one real model's
    programs), with role-profile enforcement switched on from here."""
    root = tmp_path / "store"
    writer = Agent(
        "calculator",
        provider=ScriptedModel({"add": ADD, "increment": INC_MEMORY}),
        log=False,
        toolstore_root=root,
    )
    writer.add(1)
    writer.increment()
    configure_runtime(role_profile_enforcement_enabled=True)
    return root


class TestEnforcement:
    """With enforcement on, a drift is a guardrail failure retried with the correction."""

    def test_drift_is_retried_with_the_correction_and_rolled_back(self, log_path: Path) -> None:
        """The first program's write is dropped; the second, on 'value', answers."""
        configure_runtime(role_profile_enforcement_enabled=True)
        agent, provider = _calc({"add": ADD, "increment": [INC_MEMORY, INC_VALUE]}, log=log_path)
        agent.add(2)

        outcome = agent.increment()

        assert (outcome.status, outcome.value, provider.calls) == ("ok", 3, 3)
        assert "memory" not in agent.runtime_context
        retry = provider.requests[-1].user_prompt
        assert tag(retry, "violation_subtype") == "role_profile_continuity_violation"
        assert tag(retry, "required_correction") == CORRECTION
        entry = read_log(log_path)[-1]
        assert (entry["guardrail_recovery_attempts"], entry["role_profile_compliant"]) == (1, True)
        assert entry["attempt_failures"][0]["subtype"] == "role_profile_continuity_violation"

    def test_repeated_drift_exhausts_the_guardrail_lane(self) -> None:
        """Two drifting programs end in guardrail_retry_exhausted; memory is untouched."""
        configure_runtime(role_profile_enforcement_enabled=True)
        agent, provider = _calc({"add": ADD, "increment": [INC_MEMORY, INC_MEMORY]})
        agent.add(2)

        outcome = agent.increment()

        assert (outcome.error_type, provider.calls) == ("guardrail_retry_exhausted", 3)
        assert outcome.error_message is not None
        assert outcome.error_message.startswith(USER_FACING_EXHAUSTION)
        assert outcome.metadata["guardrail_subtype"] == "role_profile_continuity_violation"
        assert agent.runtime_context["value"] == 2
        assert "memory" not in agent.runtime_context

    def test_the_exhausted_message_names_the_violation_once(self) -> None:
        """The violation's message already starts with its subtype: the exhausted Outcome's
        last cause says ``role_profile_continuity_violation:`` once, then the reason and the
        correction."""
        configure_runtime(role_profile_enforcement_enabled=True)
        agent, _ = _calc({"add": ADD, "increment": [INC_MEMORY, INC_MEMORY]})
        agent.add(2)

        message = agent.increment().error_message

        assert message is not None
        assert message.count("role_profile_continuity_violation") == 1
        assert message == (
            f"{USER_FACING_EXHAUSTION} Last cause: role_profile_continuity_violation: state key "
            f"diverged across sibling methods: increment used 'memory'. correction: {CORRECTION}."
        )

    def test_the_originals_setter_scenario(self) -> None:
        """memory = 1 by setter, then add(2) on 'value' is refused and add on 'memory' gives 3."""
        configure_runtime(role_profile_enforcement_enabled=True)
        agent, provider = _calc({"add": [ADD, ADD_MEMORY]})
        agent.memory = 1

        outcome = agent.add(2)

        assert (outcome.value, provider.calls) == (3, 2)
        assert "value" not in agent.runtime_context

    def test_prescriptive_refuses_any_other_key(self) -> None:
        """A prescriptive profile refuses the first add on 'memory' and takes 'value'."""
        configure_runtime(role_profile_enforcement_enabled=True)
        agent, provider = _calc({"add": [ADD_MEMORY, ADD]}, role_profile=PRESCRIPTIVE)

        outcome = agent.add(4)

        assert (outcome.value, provider.calls) == (4, 2)
        assert tag(provider.requests[-1].user_prompt, "required_correction") == (
            "keep this role's state in memory key 'value' (context['value']), as role profile "
            "constraint 'accumulator' requires; this program used 'memory'"
        )

    def test_a_stored_program_that_drifts_is_repaired(self, tmp_path: Path) -> None:
        """A persisted increment on 'memory' fails the enforced profile and is repaired (the
        providers stand for one real model, ScriptedModel: a double reuses only its own script's
        programs, ADR 0077)."""
        root = _store_a_drifting_increment(tmp_path)
        provider = ScriptedModel({"increment": INC_VALUE})
        agent = Agent(
            "calculator",
            provider=provider,
            log=False,
            toolstore_root=root,
            role_profile=COORDINATION,
        )

        outcome = agent.increment()

        assert (outcome.value, provider.calls) == (1, 1)
        assert provider.requests[0].purpose == "repair"
        assert agent.runtime_context == {
            "value": 1,
            "conversation_history": agent.runtime_context["conversation_history"],
        }

    def test_a_stored_programs_drift_is_logged_with_its_subtype(
        self, tmp_path: Path, log_path: Path
    ) -> None:
        """The stored program's refusal and its failed repair are logged in attempt_failures
        with the subtype role_profile_continuity_violation, as a generated program's is (the
        subtype was null for the 'persisted' and 'repair' stages: audit of issue 20)."""
        root = _store_a_drifting_increment(tmp_path)
        agent = Agent(
            "calculator",
            provider=ScriptedModel({"increment": [INC_MEMORY, INC_VALUE]}),
            log=log_path,
            toolstore_root=root,
            role_profile=COORDINATION,
        )

        outcome = agent.increment()

        assert outcome.value == 1
        failures = read_log(log_path)[-1]["attempt_failures"]
        assert [(f["stage"], f["subtype"]) for f in failures] == [
            ("persisted", "role_profile_continuity_violation"),
            ("repair", "role_profile_continuity_violation"),
        ]


class TestPrompt:
    """The active profile reaches the system prompt after the shared prefix."""

    def test_prescriptive_key_is_named(self) -> None:
        """The system prompt names the canonical key, after the cacheable prefix."""
        agent, provider = _calc({"add": ADD}, role_profile=PRESCRIPTIVE)

        agent.add(1)

        system = provider.requests[0].system_prompt
        assert system.startswith(shared_system_prefix())
        assert system.endswith(
            "Role Profile (version 2): this role's methods share these agreements. Follow them so "
            "every method of the role reads and writes the same memory keys, takes its arguments "
            "the same way and answers in the same shape:\n"
            "- accumulator: keep the role's state in memory key 'value'\n"
        )

    def test_coordination_names_the_siblings_key_once_known(self) -> None:
        """Once add used 'value', increment's prompt says to use it."""
        agent, provider = _calc({"add": ADD, "increment": INC_VALUE})
        agent.add(1)

        agent.increment()

        assert provider.requests[0].system_prompt.endswith(
            "- accumulator: use the memory key the sibling methods use\n"
        )
        assert provider.requests[1].system_prompt.endswith(
            "- accumulator: use the memory key the sibling methods use ('value')\n"
        )

    def test_no_profile_no_block(self) -> None:
        """Without a profile the system prompt has no role-profile block."""
        agent, provider = _calc({"add": ADD}, role_profile=None)

        agent.add(1)

        assert "Role Profile" not in provider.requests[0].system_prompt

    def test_profile_text_is_inert(self) -> None:
        """A canonical key with tag characters cannot open a prompt tag."""
        profile = {
            "role": "calculator",
            "version": 1,
            "constraints": {"<x>": {"mode": "prescriptive", "canonical_key": "</memory><y>"}},
        }
        agent, provider = _calc({"add": ADD}, role_profile=profile)

        agent.add(1)

        block = provider.requests[0].system_prompt.split("Role Profile", 1)[1]
        assert "<" not in block and ">" not in block
        assert "\\u003c/memory\\u003e\\u003cy\\u003e" in block


class TestNamespaceFields:
    """namespace_*_count log fields come from the role's telemetry."""

    def test_counts_follow_the_store(self, tmp_path: Path, log_path: Path) -> None:
        """add on 'value' then increment on 'memory': one collision, one drift."""
        agent, _ = _calc(
            {"add": ADD, "increment": INC_MEMORY},
            log=log_path,
            role_profile=None,
            toolstore_root=tmp_path / "store",
        )
        agent.add(1)

        agent.increment()

        assert _fields(read_log(log_path)[-1], "namespace") == {
            "namespace_key_collision_count": 1,
            "namespace_multi_lifetime_key_count": 0,
            "namespace_continuity_violation_count": 1,
        }

    def test_without_a_store_they_are_null(self, log_path: Path) -> None:
        """Persistence off: no telemetry, null counts."""
        agent, _ = _calc({"add": ADD}, log=log_path, role_profile=None)

        agent.add(1)

        assert set(_fields(read_log(log_path)[-1], "namespace").values()) == {None}

    def test_a_stored_program_answering_again_writes_no_telemetry(self, tmp_path: Path) -> None:
        """The telemetry file is written for the new version only, not for each reuse."""
        root = tmp_path / "store"
        agent, provider = _calc({"add": ADD}, role_profile=None, toolstore_root=root)
        agent.add(1)
        path = next((root / "namespaces").glob("*.json"))
        before = path.stat().st_mtime_ns

        agent.add(2)
        agent.add(3)

        assert (provider.calls, path.stat().st_mtime_ns) == (1, before)


class TestBookkeepingNeverBreaksACall:
    """The report describes the program that ran last; telemetry failures stay out of the call."""

    def test_a_refused_attempts_report_is_not_the_calls(self, log_path: Path) -> None:
        """Drift refused, then a static violation ends the call: no stale role-profile verdict."""
        configure_runtime(role_profile_enforcement_enabled=True)
        mutating = "h = delegate('helper')\nh.helper = lambda: 1\nresult = 1"
        agent, _ = _calc({"add": ADD, "increment": [INC_MEMORY, mutating]}, log=log_path)
        agent.add(1)

        outcome = agent.increment()

        entry = read_log(log_path)[-1]
        assert outcome.error_type == "guardrail_retry_exhausted"
        assert (entry["role_profile_compliant"], entry["role_profile_compliance"]) == (None, None)
        assert [f["subtype"] for f in entry["attempt_failures"]] == [
            "role_profile_continuity_violation",
            "singleton_method_mutation",
        ]

    def test_a_failing_telemetry_write_leaves_the_call_alone(
        self, tmp_path: Path, monkeypatch: Any
    ) -> None:
        """An error while recording telemetry does not change the call's outcome."""
        from recurgent._lifecycle import _role_continuity as _continuity

        def broken(*args: Any, **kwargs: Any) -> None:
            raise RuntimeError("disk on fire")

        monkeypatch.setattr(_continuity, "record_namespace", broken)
        agent, _ = _calc({"add": ADD}, toolstore_root=tmp_path / "store")

        assert agent.add(2).value == 2

    def test_failing_log_fields_are_written_null(
        self, tmp_path: Path, log_path: Path, monkeypatch: Any
    ) -> None:
        """An error while building these log fields writes the line with them null."""
        from recurgent._lifecycle import _role_continuity as _continuity

        def broken(*args: Any, **kwargs: Any) -> None:
            raise RuntimeError("bad record")

        monkeypatch.setattr(_continuity, "solver_shape_log_fields", broken)
        agent, _ = _calc({"add": ADD}, log=log_path)

        assert agent.add(2).value == 2
        entry = read_log(log_path)[-1]
        assert (
            entry["outcome_status"],
            entry["solver_shape"],
            entry["role_profile_compliant"],
        ) == (
            "ok",
            None,
            None,
        )
