"""Red team R3: attacks on the boundary changes of ADRs 0068, 0069 and 0072 (ADR 0075).

Every payload is the generated program of an attacker, run through the sandbox helpers of
``specs/sandbox/support.py`` or the public path (an ``Agent`` with a scripted provider). Each
class names its finding (H1 to H4), the payload, what used to happen and what holds now; an
open finding is a strict ``xfail`` stating the fix.
"""

from __future__ import annotations

import gc
from collections.abc import Callable

import pytest

from recurgent import Agent
from recurgent.testing import ScriptedProvider
from specs.sandbox.support import Host, execute

# A generator whose cleanup runs ``{late}``, started and kept alive in a reference cycle, so a
# later garbage collection finalizes it after the attempt ended (the shape of F12, G1, G2).
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


class _Made:
    """A host class whose constructions the specs count."""

    made: list[str] = []

    def __init__(self, text: str) -> None:
        _Made.made.append(text)


def _recorder() -> tuple[list[str], Callable[[str], None]]:
    calls: list[str] = []

    def notify(text: str) -> None:
        calls.append(text)

    return calls, notify


class TestHostCodeAHostFunctionReturns:
    """Finding H1 (fixed): host code a guarded host function *returns* reached the program raw.

    Payload: memory holds ``factory`` (a host function returning a host class or function);
    ``K = context['factory']()`` (or ``delegate('c').factory()``), a leaked generator whose
    cleanup calls ``K('late')``, then ``raise ValueError``. ``HostCall.__call__`` returned the
    function's result as it was, so the next garbage collection constructed the class (or
    called the function) outside any attempt, the G1/G2 hole one call away. A guarded call
    now guards the host code it returns with its own attempt's guard (ADR 0075).
    """

    @pytest.mark.parametrize("read", ["context['factory']", "delegate('c').factory"])
    def test_a_returned_class_cannot_be_constructed_later(self, read: str) -> None:
        """After ``gc.collect()`` the returned class was constructed once, during the attempt."""
        _Made.made.clear()
        host = Host(memory={"factory": lambda: _Made})
        host.child("c").memory["factory"] = lambda: _Made
        source = _leaking("K('late')", f"K = {read}()\nK('during')\nraise ValueError('fail')")

        result = execute(source, host=host)
        gc.collect()

        assert result.error is not None and result.error.error_type == "execution"
        assert _Made.made == ["during"]

    @pytest.mark.parametrize("read", ["context['lookup']", "delegate('c').lookup"])
    def test_a_returned_function_cannot_be_called_later(self, read: str) -> None:
        """A host function a registry lookup returns runs during the attempt only."""
        calls, notify = _recorder()
        host = Host(memory={"lookup": lambda: notify})
        host.child("c").memory["lookup"] = lambda: notify
        source = _leaking("f('late')", f"f = {read}()\nf('during')\nraise ValueError('fail')")

        result = execute(source, host=host)
        gc.collect()

        assert result.error is not None and result.error.error_type == "execution"
        assert calls == ["during"]

    def test_plain_results_are_unchanged(self) -> None:
        """A host function's data result comes back as it was; host code reads as guarded."""
        calls, notify = _recorder()
        host = Host(memory={"data": lambda: [1, {"a": 2}], "lookup": lambda: notify})
        source = "f = context['lookup']()\nf('now')\nresult = [context['data'](), repr(f)]"

        result = execute(source, host=host)

        assert (result.error, result.value) == (
            None,
            [[1, {"a": 2}], f"<host function {notify.__qualname__}>"],
        )
        assert calls == ["now"]

    def test_through_agents_the_late_construction_is_refused(self) -> None:
        """Through ``Agent``: a factory in memory hands a class out; once the attempt failed,
        the collected cleanup constructs nothing."""
        _Made.made.clear()
        code = _leaking("K('late')", "K = context['factory']()\nK('during')\nraise ValueError")
        provider = ScriptedProvider({"run": code})
        agent = Agent("parent", provider=provider, log=False)
        agent.remember(factory=lambda: _Made)

        outcome = agent.run()
        gc.collect()

        assert (outcome.status, outcome.error_type) == ("error", "execution")
        assert _Made.made == ["during"] * provider.calls and provider.calls >= 1


class TestHostCodeAsAnotherAgentsDictKey:
    """Finding H2 (fixed): a host function used as a *key* of a dict in another agent's memory
    reached the program raw.

    Payload: a child's memory holds ``handlers = {notify: 'on'}``;
    ``f = list(delegate('c').handlers)[0]``, a leaked generator whose cleanup calls
    ``f('late')``, then ``raise ValueError``. ``_boundary.inbound`` rebuilt the dict's values
    but stored its keys as they were (the journal copies its own memory's keys like values, so
    only another agent's dict was open). Keys now go through the same rules as values, and a
    ``HostCall`` is equal to and hashed as the function it stands for, so lookups still work.
    """

    def test_a_leaked_generator_cannot_call_a_key_later(self) -> None:
        """After ``gc.collect()`` the key function ran once, during the attempt."""
        calls, notify = _recorder()
        host = Host()
        host.child("c").memory["handlers"] = {notify: "on"}
        source = _leaking(
            "f('late')", "f = list(delegate('c').handlers)[0]\nf('during')\nraise ValueError"
        )

        result = execute(source, host=host)
        gc.collect()

        assert result.error is not None and result.error.error_type == "execution"
        assert calls == ["during"]

    def test_the_key_reads_as_guarded_and_lookups_still_work(self) -> None:
        """The key is a guarded host function; the same function read through another path
        finds its entry, and the child's dict keeps the function itself."""
        _calls, notify = _recorder()
        host = Host()
        child = host.child("c")
        child.memory.update(handlers={notify: "on", "k": 1}, notify=notify)
        source = (
            "h = delegate('c').handlers\n"
            "result = [repr(list(h)[0]), h[delegate('c').notify], h['k'], list(h)[0] == "
            "delegate('c').notify]"
        )

        result = execute(source, host=host)

        assert (result.error, result.value) == (
            None,
            [f"<host function {notify.__qualname__}>", "on", 1, True],
        )
        assert list(child.memory["handlers"]) == [notify, "k"]
