"""Options generated code passes to delegate()/tool(): contract fields and narrowing only (ADR 0024)."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest

from recurgent import Agent, Outcome
from recurgent.testing import ScriptedProvider


def _run(program: str, **options: Any) -> tuple[Agent, Outcome, ScriptedProvider]:
    """Run ``planner.make`` once with ``program``; no guardrail retry."""
    provider = ScriptedProvider(
        {("planner", "make"): program, ("helper", "work"): "result = 'done'"}
    )
    options.setdefault("log", False)
    planner = Agent("planner", provider=provider, guardrail_recovery_budget=0, **options)
    return planner, planner.make(), provider


def _refusal(outcome: Outcome) -> tuple[str | None, str | None, str | None]:
    """Error type, violation subtype and violation message of a refused attempt."""
    return (
        outcome.error_type,
        outcome.metadata.get("guardrail_subtype"),
        outcome.metadata.get("last_violation_message"),
    )


def _options(agent: Agent) -> Any:
    """The validated options of an agent (white-box: they are not public)."""
    return agent._agent.options


_PREFIX = "planner.delegate('helper') from generated code refused: "


class TestRoleProfileOptions:
    """A role profile is its role's: the host may give a child one, code never (ADR 0083)."""

    def test_host_delegate_gives_the_child_its_profile(self) -> None:
        """delegate('helper', role_profile=...) from host code binds the child's profile."""
        parent = Agent("planner", provider=ScriptedProvider(), log=False, toolstore_root=None)
        profile = {"role": "helper", "version": 2, "constraints": {}}

        child = parent.delegate("helper", purpose="help", role_profile=profile)

        assert (child.role_profile or {}).get("version") == 2
        assert parent.role_profile is None

    def test_a_parents_profile_is_not_inherited(self) -> None:
        """A child of a profiled parent has no profile of its own."""
        profile = {"role": "planner", "version": 1, "constraints": {}}
        parent = Agent(
            "planner",
            provider=ScriptedProvider(),
            log=False,
            toolstore_root=None,
            role_profile=profile,
        )

        assert parent.delegate("helper", purpose="help").role_profile is None


class TestHostOnlyOptionsAreRefused:
    """log, provider, model, debug, verbose, trace_id and every budget never come from code."""

    def test_log_path_is_refused_and_nothing_is_written(self, tmp_path: Path) -> None:
        """delegate('helper', log=PATH) ends the attempt; no file appears at PATH."""
        target = tmp_path / "stolen.jsonl"

        planner, outcome, _ = _run(f"return delegate('helper', log={str(target)!r}).work()")

        assert _refusal(outcome) == (
            "guardrail_retry_exhausted",
            "delegate_option_refused",
            _PREFIX + "log is set by the host, never by generated code",
        )
        assert (target.exists(), "tools" in planner.runtime_context) == (False, False)

    def test_log_fifo_is_refused_without_opening_it(self, tmp_path: Path) -> None:
        """log=FIFO is refused before anything opens it, so the call cannot hang."""
        fifo = tmp_path / "pipe"
        os.mkfifo(fifo)
        done = threading.Event()
        box: list[Outcome] = []

        def call() -> None:
            box.append(_run(f"return delegate('helper', log={str(fifo)!r})")[1])
            done.set()

        threading.Thread(target=call, daemon=True).start()

        assert done.wait(30) is True
        assert _refusal(box[0])[1:] == (
            "delegate_option_refused",
            _PREFIX + "log is set by the host, never by generated code",
        )

    @pytest.mark.parametrize(
        ("option", "value"),
        [
            ("debug", "True"),
            ("verbose", "True"),
            ("provider", "'openai'"),
            ("model", "'gpt-5-pro'"),
            ("trace_id", "'forged'"),
            ("delegation_budget", "None"),
            ("delegation_budget", "100"),
            ("max_generation_attempts", "50"),
            ("guardrail_recovery_budget", "9"),
            ("fresh_outcome_repair_budget", "9"),
            ("role_profile", "{'role': 'helper', 'version': 1, 'constraints': {}}"),
            ("role_profile_version", "1"),
        ],
    )
    def test_each_host_only_option_is_refused(self, option: str, value: str) -> None:
        """Each host-only option passed by code is a delegate_option_refused violation."""
        _, outcome, provider = _run(f"return delegate('helper', {option}={value}).work()")

        assert _refusal(outcome) == (
            "guardrail_retry_exhausted",
            "delegate_option_refused",
            _PREFIX + f"{option} is set by the host, never by generated code",
        )
        assert [r.method_name for r in provider.requests] == ["make"]

    @pytest.mark.parametrize("option", ["self", "name"])
    def test_an_option_named_like_a_parameter_is_an_option(self, option: str) -> None:
        """An option a program names ``self`` or ``name`` reaches the option checks like any
        other one and the child answers; it never collides with the host's own signature (a
        ``name`` option was a ``TypeError`` in the host before). ``tool`` alike with ``self``:
        the answer is the unknown tool's, as without the option (``name`` is the program's own
        ``tool(name, ...)`` parameter)."""
        _, outcome, provider = _run(f"return delegate('helper', {option}='x').work()")
        _, through_tool, _ = _run("return tool('helper', self='x').work()")

        assert (outcome.status, outcome.value) == ("ok", "done")
        assert [r.method_name for r in provider.requests] == ["make", "work"]
        assert (through_tool.error_message or "").endswith(
            "UsageError: Unknown tool 'helper' in planner.tool; known tools: none"
        )

    def test_tool_from_code_is_refused_the_same_way(self) -> None:
        """tool('helper', debug=True) from code is refused like delegate."""
        provider = ScriptedProvider({("planner", "make"): "return tool('helper', debug=True)"})
        planner = Agent("planner", provider=provider, log=False, guardrail_recovery_budget=0)
        planner.delegate("helper", purpose="help")

        outcome = planner.make()

        assert _refusal(outcome)[1:] == (
            "delegate_option_refused",
            "planner.tool('helper') from generated code refused: debug is set by the host, "
            "never by generated code",
        )

    def test_refusal_feedback_names_the_correction(self) -> None:
        """With a retry left, the next prompt carries the refusal and what to do instead."""
        provider = ScriptedProvider(
            {
                ("planner", "make"): [
                    "return delegate('helper', debug=True).work()",
                    "return delegate('helper').work()",
                ],
                ("helper", "work"): "result = 'done'",
            }
        )
        planner = Agent("planner", provider=provider, log=False)

        outcome = planner.make()

        retry_prompt = provider.requests[1].user_prompt
        assert (outcome.value, "<violation_subtype>delegate_option_refused" in retry_prompt) == (
            "done",
            True,
        )
        assert "call delegate() with contract fields only" in retry_prompt


class TestDelegationBudget:
    """A host delegation budget holds however the generated code delegates."""

    def test_budget_none_from_code_cannot_lift_a_host_budget_of_one(self) -> None:
        """Host budget 1: a chain of delegations stops at the second level."""
        provider = ScriptedProvider(
            {
                ("planner", "make"): "return delegate('level1', delegation_budget=None).go()",
                ("level1", "go"): "return delegate('level2', delegation_budget=None).go()",
            }
        )
        planner = Agent(
            "planner",
            provider=provider,
            log=False,
            delegation_budget=1,
            guardrail_recovery_budget=0,
        )

        outcome = planner.make()

        assert _refusal(outcome)[1:] == (
            "delegate_option_refused",
            "planner.delegate('level1') from generated code refused: delegation_budget is set "
            "by the host, never by generated code",
        )
        assert [r.role for r in provider.requests] == ["planner"]

    def test_inherited_budget_stops_the_chain(self) -> None:
        """Host budget 1: the child may not delegate again (budget 0), whatever code does."""
        provider = ScriptedProvider(
            {
                ("planner", "make"): "return delegate('level1').go()",
                ("level1", "go"): "return delegate('level2').go()",
                ("level2", "go"): "return 'too deep'",
            }
        )
        planner = Agent("planner", provider=provider, log=False, delegation_budget=1)

        outcome = planner.make()

        assert (outcome.error_type, [r.role for r in provider.requests]) == (
            "budget_exceeded",
            ["planner", "level1"],
        )


class TestNarrowing:
    """network and limits may be lowered by code, never raised."""

    def test_network_allow_under_deny_is_refused(self) -> None:
        """network='allow' from code under network='deny' is refused."""
        _, outcome, _ = _run("return delegate('helper', network='allow').work()", network="deny")

        assert _refusal(outcome)[2] == (
            _PREFIX + "network='allow' widens this agent's network='deny'; a child may only "
            "narrow it"
        )

    def test_network_host_outside_the_allow_list_is_refused(self) -> None:
        """A host the parent does not list is refused, even alongside listed ones."""
        _, outcome, _ = _run(
            "return delegate('helper', network=['example.com', 'evil.net']).work()",
            network=["example.com"],
        )

        assert _refusal(outcome)[2] == (
            _PREFIX + "network=['example.com', 'evil.net'] reaches evil.net outside this "
            "agent's allow-list ['example.com']; a child may only narrow it"
        )

    def test_network_list_under_deny_is_refused(self) -> None:
        """Any allow-list is wider than deny."""
        _, outcome, _ = _run("return delegate('helper', network=['a.test'])", network="deny")

        assert _refusal(outcome)[2] == (
            _PREFIX + "network=['a.test'] widens this agent's network='deny'; a child may only "
            "narrow it"
        )

    def test_invalid_network_value_is_refused(self) -> None:
        """A malformed network value from code is refused with the parse error."""
        _, outcome, _ = _run("return delegate('helper', network=['*.example.com'])")

        assert _refusal(outcome)[2] == (
            _PREFIX + "network=['*.example.com'] is invalid: network entry '*.example.com' is "
            "refused: the host is not a DNS name or IP address; use a host, host:port or "
            "http(s) URL, e.g. 'example.com', 'example.com:8443', 'https://example.com/v1'"
        )

    @pytest.mark.parametrize(
        ("parent", "child", "expected"),
        [
            ("allow", "'deny'", "deny"),
            ("allow", "['a.test']", ("a.test",)),
            (["a.test", "b.test"], "['b.test']", ("b.test",)),
            (["a.test"], "['a.test:8443']", ("a.test:8443",)),
            (["a.test"], "'deny'", "deny"),
        ],
    )
    def test_narrower_network_is_applied(self, parent: Any, child: str, expected: Any) -> None:
        """deny or a subset of the parent's hosts reaches the child, which the host gets back."""
        _, outcome, _ = _run(f"return delegate('helper', network={child})", network=parent)

        assert isinstance(outcome.value, Agent)
        assert _options(outcome.value).network == expected

    def test_host_port_entry_does_not_cover_the_bare_host(self) -> None:
        """A parent listing a.test:8443 cannot give a child every port of a.test."""
        _, outcome, _ = _run(
            "return delegate('helper', network=['a.test'])", network=["a.test:8443"]
        )

        assert _refusal(outcome)[1] == "delegate_option_refused"

    def test_longer_execution_timeout_is_refused(self) -> None:
        """The issue's example: execution_timeout_seconds=600 under a 1 s parent."""
        _, outcome, provider = _run(
            "return delegate('w', execution_timeout_seconds=600).work()",
            execution_timeout_seconds=1,
        )

        assert _refusal(outcome)[2] == (
            "planner.delegate('w') from generated code refused: execution_timeout_seconds=600 "
            "exceeds this agent's execution_timeout_seconds=1; a child may only lower it"
        )
        assert [r.role for r in provider.requests] == ["planner"]

    @pytest.mark.parametrize(
        ("option", "value", "limit"),
        [
            ("forwarded_call_budget", 500, 200),
            ("provider_timeout_seconds", 1000, 120),
            ("provider_timeout_seconds", None, 120),
        ],
    )
    def test_higher_limits_are_refused(self, option: str, value: Any, limit: int) -> None:
        """A limit above the parent's is refused and names the parent's value."""
        _, outcome, _ = _run(f"return delegate('helper', {option}={value!r})")

        assert _refusal(outcome)[2] == (
            _PREFIX + f"{option}={value!r} exceeds this agent's {option}={limit}; a child may "
            "only lower it"
        )

    def test_lower_limits_are_applied(self) -> None:
        """Lower limits from code reach the child."""
        _, outcome, _ = _run(
            "return delegate('helper', execution_timeout_seconds=2, forwarded_call_budget=3, "
            "provider_timeout_seconds=5)",
            execution_timeout_seconds=10,
        )

        child = _options(outcome.value)
        assert (
            child.execution_timeout_seconds,
            child.forwarded_call_budget,
            child.provider_timeout_seconds,
        ) == (2.0, 3, 5.0)

    def test_narrowed_child_still_ends_within_the_parent_deadline(self) -> None:
        """A child allowed its own full limit, called from a 1 s attempt, stops with the parent."""
        provider = ScriptedProvider(
            {
                ("planner", "make"): "return delegate('w', execution_timeout_seconds=1).spin()",
                ("w", "spin"): "while True:\n    pass",
            }
        )
        planner = Agent("planner", provider=provider, log=False, execution_timeout_seconds=1)

        outcome = planner.make()

        assert (outcome.error_type, [r.role for r in provider.requests]) == (
            "timeout",
            ["planner", "w"],
        )


class TestReturnedHandle:
    """A handle returned to the host carries only narrowed options."""

    def test_returned_child_inherits_the_host_settings_unchanged(self, log_path: Path) -> None:
        """The Agent the host gets back logs where the host logs and keeps its budgets."""
        _, outcome, provider = _run(
            "return delegate('helper', purpose='help', network=['a.test'])",
            log=log_path,
            network=["a.test", "b.test"],
            delegation_budget=2,
        )

        child = _options(outcome.value)
        assert (
            child.log,
            child.debug,
            child.provider,
            child.network,
            child.delegation_budget,
            child.execution_timeout_seconds,
        ) == (log_path, False, provider, ("a.test",), 1, 30.0)

    def test_widening_handle_never_reaches_the_host(self) -> None:
        """A program returning a widened delegate handle gets a refusal, not an Agent."""
        _, outcome, _ = _run("return delegate('helper', network='allow')", network="deny")

        assert (outcome.is_ok, outcome.metadata.get("guardrail_subtype")) == (
            False,
            "delegate_option_refused",
        )

    def test_host_delegate_still_accepts_every_runtime_option(self, tmp_path: Path) -> None:
        """The host (not generated code) may still widen: it is trusted."""
        planner = Agent("planner", provider=ScriptedProvider(), log=False, network="deny")

        child = planner.delegate("helper", network="allow", debug=True, delegation_budget=None)

        assert (_options(child).network, _options(child).debug) == ("allow", True)
        assert _options(child).delegation_budget is None


class TestRefusalMessages:
    """Refusal messages stay short whatever the program passed."""

    def test_huge_value_is_cut_in_the_message(self) -> None:
        """A 1 MB network entry from code gives a refusal of at most 500 characters."""
        planner = Agent("planner", provider=ScriptedProvider(), log=False, network=["a.test"])

        refusals = planner._agent.options.narrowing_refusals({"network": ["b" * 1_000_000]})

        assert (len(refusals), len(refusals[0]), refusals[0][-3:]) == (1, 500, "...")
