"""A handle (what delegate()/tool() return in generated code) never turns a name Agent reserves
into a dynamic method: the call is a guardrail violation with a correction, in process and in a
worker (recurgent/_sandbox/_handles.py; the gate is Agent._dispatch, ADR 0083)."""

from __future__ import annotations

from typing import Any

import pytest

from recurgent import Agent
from recurgent._agent import RESERVED_NAMES
from recurgent.testing import ScriptedProvider

#: Every reserved name a handle would dispatch (``remember`` is the handle's own operation).
DISPATCHED = sorted(RESERVED_NAMES - {"remember"})
MESSAGE = (
    "Generated code called helper.{name} through a handle; {name!r} is reserved by Agent and is "
    "never a dynamic method"
)
CORRECTION = (
    "do not call {name} on a tool()/delegate() handle: call its other methods, read its memory "
    "as handle.key and write it with handle.key = value or handle.remember(...); proposals, "
    "role_profile and self_model belong to the host program"
)


def _planner(code: Any, **options: Any) -> tuple[Agent, ScriptedProvider]:
    provider = ScriptedProvider({("planner", "make"): code, ("helper", "work"): "return 7"})
    options.setdefault("guardrail_recovery_budget", 0)
    agent = Agent("planner", provider=provider, log=False, toolstore_root=None, **options)
    return agent, provider


@pytest.mark.parametrize("name", DISPATCHED)
def test_a_reserved_name_is_refused_and_never_generated(name: str) -> None:
    """delegate('helper').<name>(): the guardrail lane ends the call (budget 0) with subtype
    reserved_agent_method; the helper is never asked to write <name>."""
    agent, provider = _planner(f"return delegate('helper').{name}()")

    outcome = agent.make()

    assert (outcome.status, outcome.error_type) == ("error", "guardrail_retry_exhausted")
    assert outcome.metadata["guardrail_subtype"] == "reserved_agent_method"
    assert [(r.role, r.method_name) for r in provider.requests] == [("planner", "make")]


def test_the_correction_reaches_the_next_attempt() -> None:
    """propose through a tool handle: the next attempt's prompt carries the message and the
    correction, and a program calling an ordinary method then answers."""
    refused = "delegate('helper')\nreturn tool('helper').propose('tool_patch')"
    agent, provider = _planner(
        [refused, "return tool('helper').work().value"], guardrail_recovery_budget=1
    )

    outcome = agent.make()

    assert (outcome.status, outcome.value) == ("ok", 7)
    retry = provider.requests_for("make", role="planner")[1].user_prompt
    assert (
        "<violation_subtype>reserved_agent_method</violation_subtype>\n"
        f"<violation_message>{MESSAGE.format(name='propose')}</violation_message>"
    ) in retry
    assert (
        f"<required_correction>{CORRECTION.format(name='propose')}</required_correction>" in retry
    )
    assert agent.proposals().value == []


def test_a_caught_violation_still_counts() -> None:
    """A program catching the error cannot hide it: the attempt is still refused."""
    code = "try:\n    delegate('helper').self_model()\nexcept Exception:\n    pass\nreturn 'hidden'"
    agent, _ = _planner(code)

    outcome = agent.make()

    assert (outcome.status, outcome.metadata["guardrail_subtype"]) == (
        "error",
        "reserved_agent_method",
    )


@pytest.mark.slow
def test_a_worker_is_refused_the_same_way() -> None:
    """isolation='process': the handle call crosses to the host and is refused with the same
    subtype; the helper is never asked."""
    agent, provider = _planner("return delegate('helper').role_profile()", isolation="process")
    try:
        outcome = agent.make()
    finally:
        agent._agent.workers.shutdown()  # type: ignore[union-attr]

    assert (outcome.status, outcome.error_type) == ("error", "guardrail_retry_exhausted")
    assert outcome.metadata["guardrail_subtype"] == "reserved_agent_method"
    assert [(r.role, r.method_name) for r in provider.requests] == [("planner", "make")]
