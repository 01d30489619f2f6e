"""Red-team findings, the deadline: leaked generators and host work after or past it.

Each attack keeps code running once its attempt is over (a generator finalized later, a closing
generator swallowing the stop) or makes the host work far past the deadline in one call.
Themes and conventions: see ``test_red_team.py``.
"""

from __future__ import annotations

import gc
import sys

import pytest

from recurgent import Agent
from recurgent._sandbox import SandboxLimits
from recurgent.testing import ScriptedProvider
from specs.sandbox.support import Host, execute


class TestLeakedGeneratorsStayInTheirAttempt:
    """Finding 9 (fixed): a generator in a reference cycle is finalized by a later host garbage
    collection, after the attempt returned; its ``finally`` block still reached agents and memory.

    Payload: a generator whose ``finally`` calls ``h.late()`` / ``remember(...)``, kept in a
    cycle (``c = [x]; c.append(c)``) so it outlives the attempt. Loops stopped at their first
    tick, but forwarded calls never ticked.
    """

    @pytest.mark.parametrize(
        "late",
        ["h.late()", "remember(late=1)", "h.late = 1", "delegate('other')", "tool('c')"],
    )
    def test_forwarded_calls_after_the_attempt_are_refused(
        self, late: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """After ``gc.collect()`` the child saw no call, memory holds no write, and the late
        call's stop ended the generator quietly: nothing reached ``sys.unraisablehook``
        (ADR 0060; it used to report ``DeadlineExceeded`` there)."""
        host = Host()
        child = host.child("c")
        source = (
            "h = delegate('c')\n"
            "def g():\n"
            "    try:\n"
            "        yield 1\n"
            "    finally:\n"
            f"        {late}\n"
            "x = g()\n"
            "next(x)\n"
            "loop = [x]\n"
            "loop.append(loop)\n"
            "result = 1"
        )
        result = execute(source, host=host)
        delegations = list(host.delegations)

        unraisable: list[str] = []
        monkeypatch.setattr(sys, "unraisablehook", lambda u: unraisable.append(u.exc_type.__name__))
        gc.collect()
        monkeypatch.undo()

        assert result.error is None and result.value == 1
        assert unraisable == []
        assert (child.calls, child.memory, host.memory, host.delegations) == (
            [],
            {},
            {},
            delegations,
        )


# Attacks on the journal view that held: each mutates what it reached, then fails.


class TestHostWorkOutsideTheDeadline:
    """Findings 4-7 (open): single host calls that run far past the attempt's deadline.

    Not run (each takes tens of seconds or more); the payloads are recorded here so the fix can
    turn them into specs. Measured with ``timeout_seconds=2``.
    """

    def test_a_deliverable_pattern_cannot_backtrack_in_the_host(self) -> None:
        """F4: the program picks the child's schema, the child the value; jsonschema then runs in
        the host with no deadline. ``{'pattern': '^(a+)+$'}`` on 'a'*26+'b': 15 s;
        ``patternProperties`` ``'^(a|a)+$'`` on a 25-char key: 8 s; ``uniqueItems`` on 20000
        lists: 3 s (quadratic); 14 nested ``{'anyOf': [s, s]}`` (a shared DAG, 28 deep): 82 s."""
        provider = ScriptedProvider(
            {
                ("builder", "run"): "return delegate('child_tool', deliverable="
                "{'type': 'string', 'pattern': '^(a+)+$'}).work()",
                ("child_tool", "work"): "return 'a' * 40 + 'b'",
            }
        )
        outcome = Agent("builder", provider=provider, log=False).run()
        assert outcome.error_type == "contract_violation"
        assert "does not match '^(a+)+$'" in (outcome.error_message or "")

    def test_a_deliverable_pattern_that_still_backtracks_times_out(self) -> None:
        """F4: a pattern the regex engine does backtrack on stops after 0.5 s as a violation."""
        provider = ScriptedProvider(
            {
                ("builder", "run"): "return delegate('child_tool', deliverable="
                "{'type': 'string', 'pattern': '(a|aa)+$'}).work()",
                ("child_tool", "work"): "return 'a' * 60 + 'b'",
            }
        )
        outcome = Agent("builder", provider=provider, log=False).run()
        assert outcome.error_type == "contract_violation"
        assert "took longer than 0.5s" in (outcome.error_message or "")

    def test_a_deliverable_schema_that_explodes_is_refused(self) -> None:
        """F4: 12 nested ``anyOf: [s, s]`` (a shared DAG) is refused when the child is made.
        (Red team R12: 14 levels of ``{'type': 'string'}`` now hold more than 100 000 characters
        of options and are refused in the program first; 12 levels of ``{}`` stay under it.)"""
        provider = ScriptedProvider(
            {
                ("builder", "run"): "s = {}\n"
                "for _ in range(12):\n    s = {'anyOf': [s, s]}\n"
                "return delegate('child_tool', deliverable=s).work()",
                ("child_tool", "work"): "return 'x'",
            }
        )
        outcome = Agent("builder", provider=provider, log=False).run()
        assert outcome.error_type == "execution"
        assert "deliverable JSON Schema is refused: it has more than 5000 nodes" in (
            outcome.error_message or ""
        )
        assert [request.role for request in provider.requests] == ["builder", "builder"]

    def test_regex_backtracking_stops_at_the_deadline(self) -> None:
        """F5: ``re.match('(a+)+$', 'a'*40+'b')`` ran past 30 s; on the regex engine it ends."""
        result = execute("import re\nresult = bool(re.match('(a+)+$', 'a' * 40 + 'b'))")
        assert (result.error, result.value) == (None, False)

    def test_json_dumps_of_a_shared_row_is_capped(self) -> None:
        """F6: ``json.dumps([[0]*10**4]*10**4)``: each repetition is under the item cap, the
        output is 2e8 characters from one C call; ran past 30 s (300 MB) with a 2 s deadline."""
        result = execute("import json\nresult = len(json.dumps([[0] * 10**4] * 10**4))")
        assert result.error is not None and result.error.error_type == "resource_limit"

    def test_textwrap_of_a_huge_text_is_refused(self) -> None:
        """F7: ``textwrap.fill('a ' * 10**6, width=1)`` took 5-8 s; such a text is now refused."""
        result = execute("import textwrap\nresult = len(textwrap.fill('a ' * 10**6, width=1))")
        assert result.error is not None and result.error.error_type == "resource_limit"


class TestClosingGeneratorsCannotSwallowTheDeadline:
    """Finding 11 (fixed): a generator closing quietly (ADR 0060) swallowed ``DeadlineExceeded``.

    Payload: a generator whose ``finally`` loops forever, closed with ``x.close()``; the
    deadline raised inside the cleanup, the rewrite's ``except: if _closing_: return`` ended
    the generator quietly, ``close()`` returned, and the attempt succeeded after its deadline
    (``result = 'survived'``). Only ticking code raised again, so the program could finish,
    return and commit memory past the deadline.
    """

    def test_the_attempt_still_times_out(self) -> None:
        """The attempt ends as ``timeout``; memory keeps nothing it wrote."""
        host = Host(memory={"log": []})
        source = (
            "def g():\n"
            "    try:\n"
            "        yield 1\n"
            "    finally:\n"
            "        while True:\n"
            "            pass\n"
            "x = g()\n"
            "next(x)\n"
            "x.close()\n"
            "context['log'].append('after the deadline')\n"
            "result = 'survived'"
        )

        result = execute(source, host=host, limits=SandboxLimits(timeout_seconds=0.3))

        assert result.error is not None and result.error.error_type == "timeout"
        assert host.memory == {"log": []}

    def test_nested_closes_each_swallowing_once_still_time_out(self) -> None:
        """Fifty generators closing each other from their cleanups still end as ``timeout``."""
        source = (
            "def g(inner):\n"
            "    try:\n"
            "        yield 1\n"
            "    finally:\n"
            "        if inner is not None:\n"
            "            inner.close()\n"
            "        while True:\n"
            "            pass\n"
            "prev = None\n"
            "for i in range(50):\n"
            "    x = g(prev)\n"
            "    next(x)\n"
            "    prev = x\n"
            "prev.close()\n"
            "result = 'survived'"
        )

        result = execute(source, limits=SandboxLimits(timeout_seconds=0.3))

        assert result.error is not None and result.error.error_type == "timeout"

    def test_a_size_limit_in_a_cleanup_is_an_ordinary_exception(self) -> None:
        """A refused size is raised before the work, so a closing generator may end on it."""
        source = (
            "def g():\n"
            "    try:\n"
            "        yield 1\n"
            "    finally:\n"
            "        s = 'x' * 10**9\n"
            "x = g()\n"
            "next(x)\n"
            "x.close()\n"
            "result = 'closed'"
        )

        assert execute(source).value == "closed"


class TestModulesImportedAfterTheAttemptThatHeld:
    """Regression pin (ADR 0063): a module's per-attempt rows built lazily by an import in a
    leaked generator's late cleanup close over the ended attempt, so their loops stop."""

    def test_a_late_import_and_endless_loop_end_at_the_next_collection(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """``gc.collect()`` returns; the cleanup's ``itertools.count()`` loop raised the stop,
        which the generator swallowed quietly (nothing reached ``sys.unraisablehook``)."""
        source = (
            "def g():\n"
            "    try:\n"
            "        yield 1\n"
            "    finally:\n"
            "        import itertools, random\n"
            "        for i in itertools.count():\n"
            "            random.random()\n"
            "x = g()\n"
            "next(x)\n"
            "loop = [x]\n"
            "loop.append(loop)\n"
            "result = 1"
        )
        result = execute(source)

        unraisable: list[str] = []
        monkeypatch.setattr(sys, "unraisablehook", lambda u: unraisable.append(u.exc_type.__name__))
        gc.collect()
        monkeypatch.undo()

        assert (result.error, result.value, unraisable) == (None, 1, [])


class TestLeakedGeneratorsCallingHostFunctions:
    """Finding 12 (fixed): a leaked generator called a host function after its attempt failed.

    Payload: ``def g(): try: yield 1 finally: context['notify']('late')``, started, kept in a
    cycle, then ``raise ValueError()``. Memory rolled back, yet the next garbage collection
    ran the cleanup, which called the host function memory holds (shared as host code, ADR
    0057) outside any attempt and deadline. Finding 9 stopped forwarded calls and loops there,
    not calls of host functions. The journal now hands out a host function wrapped: called
    as it is during the attempt, it raises the attempt's stop afterwards (ADR 0065).
    """

    def test_a_host_function_keeps_working_and_its_place(self) -> None:
        """Called during the attempt it runs; stored under another key it is the function."""
        calls: list[int] = []

        def record(n: int) -> int:
            calls.append(n)
            return n * 2

        host = Host(memory={"record": record})

        result = execute(
            "f = context['record']\ncontext['again'] = f\nresult = [f(2), sorted([3, 1], key=f)]",
            host=host,
        )

        assert (result.error, result.value, calls) == (None, [4, [1, 3]], [2, 3, 1])
        assert host.memory["again"] is record and host.memory["record"] is record

    def test_the_host_function_is_not_called_after_the_attempt(self) -> None:
        """After ``gc.collect()`` the host function was called during the attempt only."""
        calls: list[str] = []

        def notify(text: str) -> None:
            calls.append(text)

        host = Host(memory={"notify": notify})
        source = (
            "def g():\n"
            "    try:\n"
            "        yield 1\n"
            "    finally:\n"
            "        context['notify']('late')\n"
            "x = g()\n"
            "next(x)\n"
            "loop = [x]\n"
            "loop.append(loop)\n"
            "context['notify']('during')\n"
            "raise ValueError('fail the attempt')"
        )

        result = execute(source, host=host)
        gc.collect()

        assert result.error is not None and result.error.error_type == "execution"
        assert calls == ["during"]
