"""Red team R2: the sandbox and journal notes red team R1 left open (ADRs 0068, 0069).

Every payload is the generated program of an attacker, run through the public path (an
``Agent`` with a scripted provider) or the sandbox helpers of ``specs/sandbox/support.py``.
Each class names its finding (G1 to G5), the payload, what used to happen and what holds now.
"""

from __future__ import annotations

import gc
from collections.abc import Callable

import pytest

from recurgent import Agent
from recurgent.testing import ScriptedProvider
from specs.sandbox.support import Host, execute

# A generator whose cleanup runs ``{late}``, started and kept alive in a reference cycle, so a
# later garbage collection finalizes it after the attempt ended (the shape of findings 9, F12).
_LEAK = (
    "def g():\n"
    "    try:\n"
    "        yield 1\n"
    "    finally:\n"
    "        {late}\n"
    "x = g()\n"
    "next(x)\n"
    "loop = [x]\n"
    "loop.append(loop)\n"
)


def _leaking(late: str, rest: str) -> str:
    return _LEAK.format(late=late) + rest


def _recorder() -> tuple[list[str], Callable[[str], None]]:
    calls: list[str] = []

    def notify(text: str) -> None:
        calls.append(text)

    return calls, notify


class TestAnotherAgentsHostFunctions:
    """Finding G1 (fixed): a host function in *another* agent's memory, read through a handle,
    reached the program unwrapped, so a leaked generator called it after the attempt ended.

    Payload: ``f = delegate('c').notify`` (or ``tool('c').notify``, or a function inside a
    child's container), a leaked generator whose cleanup calls ``f('late')``, then
    ``raise ValueError``. F12 guarded host functions of the attempt's own memory only; values
    read through a handle come from ``_boundary.inbound``, which handed the function out as it
    was, so the next garbage collection ran it outside any attempt. ``inbound`` now guards host
    code with the running attempt's guard (ADR 0068).
    """

    @pytest.mark.parametrize(
        "read",
        ["delegate('c').notify", "tool('c').notify", "delegate('c').hooks['on']"],
    )
    def test_a_leaked_generator_cannot_call_it_after_a_failed_attempt(self, read: str) -> None:
        """After ``gc.collect()`` the function ran once, during the attempt."""
        calls, notify = _recorder()
        host = Host()
        host.child("c").memory.update(notify=notify, hooks={"on": notify})
        source = _leaking(
            "f('late')", f"f = {read}\nf('during')\nraise ValueError('fail the attempt')"
        )

        result = execute(source, host=host)
        gc.collect()

        assert result.error is not None and result.error.error_type == "execution"
        assert calls == ["during"]

    def test_reading_it_in_the_late_cleanup_does_not_call_it_either(self) -> None:
        """A cleanup that reads the function through a handle it kept calls nothing."""
        calls, notify = _recorder()
        host = Host()
        host.child("c").memory["notify"] = notify
        source = _leaking("h.notify('late')", "h = delegate('c')\nresult = 1")

        result = execute(source, host=host)
        gc.collect()

        assert (result.error, result.value, calls) == (None, 1, [])

    def test_it_works_during_the_attempt_and_stays_in_the_childs_memory(self) -> None:
        """Called and used as a sort key it runs; the child still holds the function."""
        calls: list[int] = []

        def double(n: int) -> int:
            calls.append(n)
            return n * 2

        host = Host()
        host.child("c").memory["double"] = double
        source = "f = delegate('c').double\nresult = [f(2), sorted([3, 1], key=f), repr(f)]"

        result = execute(source, host=host)

        assert (result.error, result.value) == (
            None,
            [4, [1, 3], f"<host function {double.__qualname__}>"],
        )
        assert calls == [2, 3, 1] and host.children["c"].memory["double"] is double

    def test_through_agents_the_late_call_is_refused(self) -> None:
        """A parent agent's program reads a child agent's host function: once the attempt
        failed, the collected cleanup calls nothing."""
        calls, notify = _recorder()
        child = Agent("child", provider=ScriptedProvider({}), log=False)
        child.remember(notify=notify)
        code = _leaking(
            "f('late')",
            "f = context['child'].notify\nf('during')\nraise ValueError('fail the attempt')",
        )
        provider = ScriptedProvider({"run": code})
        parent = Agent("parent", provider=provider, log=False)
        parent.remember(child=child)

        outcome = parent.run()
        gc.collect()

        assert (outcome.status, outcome.error_type) == ("error", "execution")
        assert calls == ["during"] * provider.calls and provider.calls >= 1
