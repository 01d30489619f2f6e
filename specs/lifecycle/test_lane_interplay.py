"""Lanes together: alternation, independent counters, the provider-call bound, inherited budgets."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from recurgent import Agent
from recurgent.testing import FunctionProvider, ScriptedProvider

from .support import ALWAYS_RETRIABLE, FIXED, last_entry, scripted, tag

VIOLATING = "context['g'] = 1\nh = delegate('helper')\nh.helper = lambda: 1"
RAISING = "context['e'] = 1\nitems = None\nitems.append(1)"


class TestTwoLanesInOneCall:
    """Different lanes can follow each other in one call; only the latest failure is fed back."""

    def test_guardrail_then_execution_then_success(self, log_path: Path) -> None:
        """Three provider calls; the log counts one guardrail recovery and one execution repair."""
        agent, provider = scripted([VIOLATING, RAISING, FIXED], log=log_path)

        outcome = agent.run()

        assert (outcome.value, provider.calls) == ("fixed", 3)
        entry = last_entry(log_path)
        assert (
            entry["attempt_id"],
            entry["guardrail_recovery_attempts"],
            entry["execution_repair_attempts"],
            entry["outcome_repair_attempts"],
            [f["stage"] for f in entry["attempt_failures"]],
            [f["attempt_id"] for f in entry["attempt_failures"]],
        ) == (3, 1, 1, 0, ["validation", "execution"], [1, 2])
        assert sorted(agent.runtime_context) == ["after", "conversation_history"]

    def test_only_the_latest_failure_is_fed_back(self) -> None:
        """The third prompt has the execution feedback and no guardrail feedback."""
        agent, provider = scripted([VIOLATING, RAISING, FIXED])

        agent.run()

        second, third = (r.user_prompt for r in provider.requests[1:])
        assert "<guardrail_feedback>" in second
        assert "<execution_failure_feedback>" not in second
        assert "<guardrail_feedback>" not in third
        assert tag(third, "attempt_number") == "3"

    def test_execution_then_outcome_then_success(self, log_path: Path) -> None:
        """An execution repair and an outcome repair in one call each count once."""
        agent, provider = scripted([RAISING, ALWAYS_RETRIABLE, FIXED], log=log_path)

        outcome = agent.run()

        entry = last_entry(log_path)
        assert (outcome.value, provider.calls) == ("fixed", 3)
        assert (
            entry["execution_repair_attempts"],
            entry["outcome_repair_attempts"],
            entry["failure_class"],
            [f["stage"] for f in entry["attempt_failures"]],
        ) == (1, 1, "intrinsic", ["execution", "outcome_policy"])

    def test_generation_failure_during_a_lane_retry_ends_the_call(self, log_path: Path) -> None:
        """A regeneration the provider cannot produce ends the call; the lane failure is logged."""
        agent, provider = scripted([VIOLATING, None, None], log=log_path)

        outcome = agent.run()

        entry = last_entry(log_path)
        assert (outcome.error_type, outcome.retriable, provider.calls) == ("invalid_code", True, 3)
        assert (
            [(f["stage"], f["retry_feedback_injected"]) for f in entry["attempt_failures"]],
            entry["generation_attempt"],
        ) == ([("validation", True), ("generation", True), ("generation", False)], 2)

    def test_attempt_failures_keep_only_the_last_eight(self, log_path: Path) -> None:
        """Eleven violations log the failures of attempts 4 to 11 only."""
        agent, provider = scripted(VIOLATING, log=log_path, guardrail_recovery_budget=10)

        agent.run()

        entry = last_entry(log_path)
        assert provider.calls == 11
        assert [f["attempt_id"] for f in entry["attempt_failures"]] == list(range(4, 12))


def _worst_case_provider(generation: int, guardrail: int, outcome: int) -> FunctionProvider:
    """Replies that spend every budget: each round fails generation first, then its lane."""
    rounds = [VIOLATING] * guardrail + [RAISING] + [ALWAYS_RETRIABLE] * (outcome + 1)
    replies: list[Any] = []
    for program in rounds:
        replies += [None] * (generation - 1) + [program]

    queue = iter(replies)
    return FunctionProvider(lambda request: next(queue, FIXED))


class TestProviderCallBound:
    """One call makes at most M * (1 + G + 1 + O) provider requests."""

    def test_defaults_allow_eight_provider_calls(self, log_path: Path) -> None:
        """With defaults the alternation that spends every budget makes exactly 8 calls."""
        provider = _worst_case_provider(2, 1, 1)
        agent = Agent("tester", provider=provider, log=log_path)

        outcome = agent.run()

        entry = last_entry(log_path)
        assert (provider.calls, outcome.error_type) == (8, "outcome_repair_retry_exhausted")
        assert (
            entry["attempt_id"],
            entry["generation_attempt"],
            entry["guardrail_recovery_attempts"],
            entry["execution_repair_attempts"],
            entry["outcome_repair_attempts"],
        ) == (4, 2, 1, 1, 1)

    @pytest.mark.parametrize(
        ("generation", "guardrail", "outcome"), [(1, 0, 0), (3, 2, 2), (2, 0, 3), (1, 4, 1)]
    )
    def test_bound_follows_the_documented_formula(
        self, generation: int, guardrail: int, outcome: int
    ) -> None:
        """The worst case equals M * (1 + G + 1 + O) for other budgets too."""
        provider = _worst_case_provider(generation, guardrail, outcome)
        agent = Agent(
            "tester",
            provider=provider,
            log=False,
            max_generation_attempts=generation,
            guardrail_recovery_budget=guardrail,
            fresh_outcome_repair_budget=outcome,
        )

        result = agent.run()

        assert result.error_type == "outcome_repair_retry_exhausted"
        assert provider.calls == generation * (1 + guardrail + 1 + outcome)

    def test_always_retriable_provider_stops_after_two_calls(self) -> None:
        """A provider that always returns a retriable intrinsic error is asked twice."""
        agent, provider = scripted(ALWAYS_RETRIABLE)

        agent.run()

        assert provider.calls == 2


class TestBudgetsInheritedByDelegates:
    """Delegates take the parent's budgets unless the delegate call overrides them."""

    CODE = (
        "a = delegate('guard_child').work()\n"
        "b = delegate('outcome_child').work()\n"
        "c = delegate('empty_child').work()\n"
        "return [a.error_type, b.error_type, c.error_type]"
    )

    def _provider(self) -> ScriptedProvider:
        return ScriptedProvider(
            {
                ("builder", "run"): self.CODE,
                ("guard_child", "work"): VIOLATING,
                ("outcome_child", "work"): ALWAYS_RETRIABLE,
                ("empty_child", "work"): None,
            }
        )

    def test_children_use_the_parent_budgets(self) -> None:
        """G=0, O=2 and M=3 of the parent bound each child's provider calls."""
        provider = self._provider()
        builder = Agent(
            "builder",
            provider=provider,
            log=False,
            guardrail_recovery_budget=0,
            fresh_outcome_repair_budget=2,
            max_generation_attempts=3,
        )

        outcome = builder.run()

        assert outcome.value == [
            "guardrail_retry_exhausted",
            "outcome_repair_retry_exhausted",
            "invalid_code",
        ]
        calls = [
            len(provider.requests_for("work", role=role))
            for role in ("guard_child", "outcome_child", "empty_child")
        ]
        assert calls == [1, 3, 3]

    def test_delegate_options_override_inherited_budgets(self) -> None:
        """Host delegate(..., guardrail_recovery_budget=2) gives that child three attempts.

        Only the host may raise a budget; generated code passing one is refused (ADR 0024).
        """
        provider = ScriptedProvider({("override_child", "work"): VIOLATING})
        builder = Agent("builder", provider=provider, log=False, guardrail_recovery_budget=0)

        outcome = builder.delegate("override_child", guardrail_recovery_budget=2).work()

        assert outcome.metadata["guardrail_recovery_attempts"] == 3
        assert len(provider.requests_for("work", role="override_child")) == 3
