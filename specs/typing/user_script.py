"""A user's script, checked by ``mypy --strict`` in ``specs/typing/test_typing.py`` (ADR 0099).

It is never run: it pins the public API's types as a user's type checker sees them.
"""

from __future__ import annotations

import asyncio
from typing import Any, assert_type

from recurgent import Agent, Outcome, RecurgentError
from recurgent.testing import ScriptedProvider


def calculator() -> Agent:
    provider = ScriptedProvider({"add": "result = args[0] + 1"})
    calc = Agent.for_(
        "calculator",
        provider=provider,
        log=False,
        execution_timeout_seconds=10,
        provider_timeout_seconds=None,
        network=["api.example.com"],
        isolation="in_process",
        deliverable={"type": "number"},
    )
    assert_type(calc, Agent)
    return calc


def use(calc: Agent) -> int:
    out = calc.add(5)
    assert_type(out, Outcome)
    assert_type(out.ok, bool)
    assert_type(out.error, bool)
    assert_type(out.unwrap(), Any)
    assert_type(out.value, Any)
    assert_type(out.code, str | None)
    assert_type(out.call_id, str | None)
    assert_type(out.to_dict(), dict[str, Any])
    assert_type(Outcome.ok(5), Outcome)
    assert_type(Outcome.error("division_by_zero", "b is 0"), Outcome)
    child = calc.delegate("adder", purpose="add numbers", execution_timeout_seconds=5)
    assert_type(child, Agent)
    assert_type(calc.remember(total=3), Agent)
    total: int = calc.total  # a memory read is whatever the program stored
    try:
        return int(out.unwrap()) + total
    except RecurgentError as error:
        assert_type(error.error_type, str)
        return 0


async def concurrently(calc: Agent) -> list[Outcome]:
    first = calc.aio.add(1)
    assert_type(await first, Outcome)
    return list(await asyncio.gather(calc.aio.add(2), calc.aio.add(3)))


def mapped(calc: Agent, rows: list[dict[str, str]]) -> list[Outcome]:
    outcomes = calc.map(
        "classify", rows, executor="ray", batch_size=500, progress=True, timeout_seconds=2.0
    )
    assert_type(outcomes, list[Outcome])
    assert_type(calc.starmap("add", [(1, 2), (3, 4)], executor="process"), list[Outcome])
    return outcomes


async def mapped_concurrently(calc: Agent) -> list[Outcome]:
    return await calc.aio.map("double", range(3), concurrency=2)
