"""Red team R3: attacks on the boundary changes of ADRs 0068, 0069 and 0072 (ADR 0075).

Every payload is the generated program of an attacker, run through the sandbox helpers of
``specs/sandbox/support.py`` or the public path (an ``Agent`` with a scripted provider). Each
class names its finding (H1 to H10), the payload, what used to happen and what holds now. H6
and H10, left open here, were closed by ADR 0092 and are regression specs like the others.
"""

from __future__ import annotations

import collections
import gc
import random
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from recurgent import Agent
from recurgent._sandbox import SandboxLimits
from recurgent.testing import ScriptedProvider, read_log
from specs.sandbox.support import FakeClock, Host, execute, leaking


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
        source = leaking("K('late')", f"K = {read}()\nK('during')\nraise ValueError('fail')")

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
        source = leaking("f('late')", f"f = {read}()\nf('during')\nraise ValueError('fail')")

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
        code = leaking("K('late')", "K = context['factory']()\nK('during')\nraise ValueError")
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
        source = leaking(
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


_DRAWS = [
    "random.sample(x, len(x))",
    "random.Random(1).sample(x, len(x))",
    "random.Random.sample(random.Random(1), x, len(x))",
    "context['rng'].sample(x, len(x))",
    "random.sample(x, len(x), counts=[1] * len(x))",
    "random.choices(x, k=len(x))",
    "random.choices(x, cum_weights=list(range(1, len(x) + 1)), k=len(x))",
    "context['rng'].choices(x, k=len(x))",
    "random.Random.choices(random.Random(1), x, k=len(x))",
]


class TestSampleAndChoicesAreInterruptible:
    """Finding H3 (fixed): ``random.sample`` and ``random.choices`` of millions of items ran
    seconds past the deadline (a sample of 3 million, 4 s past 0.5 s; with ``counts``, 20 s).

    Payload: ``x = [0] * 3_000_000; random.sample(x, len(x))`` (or ``choices(x, k=len(x))``,
    on the module, a generator of the program's or memory's). Both are loops in the
    ``random`` module's Python code, which never tick (G5 fixed only ``shuffle``); their ``k``
    cap (10 million) bounds the items, not the time. The policy now runs them on a stand-in
    generator that makes the same draws and ticks every 4,096 (``_sandbox/_draws.py``,
    ADR 0075).
    """

    @pytest.mark.parametrize("draw", _DRAWS)
    def test_a_huge_draw_stops_at_the_deadline(self, draw: str) -> None:
        """The attempt ends as ``timeout``; memory's generator keeps its state."""
        rng = random.Random(7)
        state = rng.getstate()
        host = Host(memory={"rng": rng})

        result = execute(
            f"import random\nx = [0] * 3_000_000\n{draw}\nresult = 1",
            host=host,
            limits=SandboxLimits(timeout_seconds=0.25),
        )

        assert result.error is not None and result.error.error_type == "timeout"
        assert rng.getstate() == state

    def test_the_draws_are_randoms_own(self) -> None:
        """Seeded the same, each checked draw gives ``random.Random``'s result."""
        reference = random.Random(3)
        expected = [
            reference.sample(range(100), 5),
            reference.sample("abcdef", 3, counts=[1, 2, 3, 1, 1, 1]),
            reference.sample(list(range(50)), 40),
            reference.choices("abc", k=4),
            reference.choices("abc", [1, 2, 3], k=4),
            reference.choices("abc", cum_weights=[1, 2, 3], k=4),
        ]
        source = (
            "import random\n"
            "random.seed(3)\n"
            "result = [random.sample(range(100), 5),\n"
            "          random.sample('abcdef', 3, counts=[1, 2, 3, 1, 1, 1]),\n"
            "          random.sample(list(range(50)), 40),\n"
            "          random.choices('abc', k=4),\n"
            "          random.choices('abc', [1, 2, 3], k=4),\n"
            "          random.choices('abc', cum_weights=[1, 2, 3], k=4)]"
        )

        result = execute(source)

        assert (result.error, result.value) == (None, expected)

    def test_memorys_generator_commits_the_advanced_state(self) -> None:
        """After the attempt, memory's generator is where ``Random.sample`` leaves one."""
        rng, expected = random.Random(3), random.Random(3)
        drawn = expected.sample(range(1000), 300)
        host = Host(memory={"rng": rng})

        result = execute("result = context['rng'].sample(range(1000), 300)", host=host)

        assert (result.error, result.value) == (None, drawn) and host.memory["rng"] is rng
        assert rng.getstate() == expected.getstate()

    def test_the_item_caps_and_the_errors_are_unchanged(self) -> None:
        """``k`` past the item cap and a set population fail as before."""
        cap = execute("import random\nrandom.sample([1], 2 * 10**7, counts=[2 * 10**7])")
        bad = execute("import random\nrandom.sample({1, 2}, 1)")

        assert cap.error is not None and "sample() would create 20000000 items" in str(cap.error)
        assert bad.error is not None and "Population must be a sequence" in str(bad.error)


class TestTheTickCannotBeReplaced:
    """Finding H4 (fixed): ``random.shuffle(x, tick=int)`` ran past the deadline.

    Payload: ``x = list(range(3_000_000)); random.shuffle(x, tick=int)``. The module's
    ``shuffle`` row was ``functools.partial(checked_shuffle, rng, tick=tick)``: a keyword a
    partial holds is replaced by the caller's, so any builtin that returns (``int``, ``print``)
    took the place of the deadline's tick: 5 s past a 0.5 s deadline. The rows are now
    closures with the tick closed over (``_draws.ticking_draws``), which take no ``tick``.
    """

    @pytest.mark.parametrize(
        "call",
        [
            "random.shuffle(x, tick=int)",
            "random.sample(x, 3, tick=int)",
            "random.choices(x, tick=int)",
        ],
    )
    def test_a_tick_argument_is_refused(self, call: str) -> None:
        """The call raises ``TypeError`` naming the unexpected ``tick`` argument."""
        result = execute(f"import random\nx = list(range(10))\n{call}")

        assert result.error is not None and result.error.error_type == "execution"
        assert "unexpected keyword argument 'tick'" in str(result.error)


class _Opened:
    """A host class whose instances the user opened to generated code (``_sandbox_public_``)."""

    _sandbox_public_ = frozenset({"text", "make", "save", "helper", "nested"})
    made: list[str] = []

    def __init__(self, text: str) -> None:
        _Opened.made.append(text)
        self.text = text

    @classmethod
    def make(cls, text: str) -> _Opened:
        return cls(text)

    @staticmethod
    def helper(text: str) -> None:
        _Opened.made.append(f"helper {text}")

    def save(self, text: str) -> None:
        _Opened.made.append(f"save {text}")

    nested = _Made


class TestAnOpenedInstancesHostCode:
    """Finding H5 (fixed): the public methods of an instance of an opened host class reached
    the program raw.

    Payload: ``x = context['cls']('a')`` (a guarded ``HostClass`` of a class with
    ``_sandbox_public_``), ``m = x.save`` (or ``x.make``, a classmethod; ``x.helper``, a
    staticmethod; ``x.nested``, a class attribute), a leaked generator whose cleanup calls
    ``m('late')``, then ``raise ValueError``. ADR 0068 guarded the class and ``type(x)``, but
    ``_guards._instance_attribute`` handed out what the instance's attribute held as it was:
    the next garbage collection ran host code (constructed the class through ``make``) after
    the attempt. Host code read from an opened host instance is now guarded by the running
    attempt (``_types.guarded_host_code``), withheld when none runs.
    """

    @pytest.mark.parametrize("name", ["save", "make", "helper"])
    def test_a_leaked_generator_cannot_call_a_method_later(self, name: str) -> None:
        """After ``gc.collect()`` only the constructions and calls of the attempt happened."""
        _Opened.made.clear()
        source = leaking(
            "m('late')", f"m = context['cls']('a').{name}\nm('during')\nraise ValueError"
        )

        result = execute(source, host=Host(memory={"cls": _Opened}))
        gc.collect()

        assert result.error is not None and result.error.error_type == "execution"
        during = {"save": "save during", "make": "during", "helper": "helper during"}[name]
        assert _Opened.made == ["a", during]

    def test_a_nested_class_cannot_be_constructed_later(self) -> None:
        """A class held as a class attribute is guarded like a class in memory."""
        _Made.made.clear()
        source = leaking("K('late')", "K = context['cls']('a').nested\nK('b')\nraise ValueError")

        result = execute(source, host=Host(memory={"cls": _Opened}))
        gc.collect()

        assert result.error is not None and result.error.error_type == "execution"
        assert _Made.made == ["b"]

    def test_the_instance_stays_usable(self) -> None:
        """Its data reads as it is; its methods run during the attempt and read as guarded."""
        _Opened.made.clear()
        source = (
            "x = context['cls']('a')\n"
            "x.save('now')\n"
            "y = x.make('b')\n"
            "result = [x.text, y.text, repr(x.save)]"
        )

        result = execute(source, host=Host(memory={"cls": _Opened}))

        assert (result.error, result.value) == (
            None,
            ["a", "b", f"<host function {_Opened.save.__qualname__}>"],
        )
        assert _Opened.made == ["a", "save now", "b"]


class TestHostCodeNestedInAHostCallsResult:
    """Finding H6 (fixed, ADR 0092): host code *inside a container* a host function returns,
    or an opened instance's attribute holds, reached the program raw.

    Payload: memory holds ``get = lambda: {'on': notify}``; ``m = context['get']()['on']``
    (or ``context['cls']().handlers['on']``), a leaked generator whose cleanup calls
    ``m('late')``, then ``raise ValueError``: the next garbage collection called ``notify``
    after the attempt. A container holding host code is now handed out as a copy with that
    code guarded (``_journal/_shared.guarded_within``); a container holding none is still the
    host's own object, so writes to it reach the host as before (ADR 0057).
    """

    @pytest.mark.parametrize(
        "read",
        [
            "context['get']()['on']",
            "context['getl']()[0]",
            "context['getn']()['deep'][1][0]",
            "context['cls']().handlers['on']",
            "context['cls'].table['on']",
        ],
    )
    def test_a_leaked_generator_cannot_call_a_nested_function_later(self, read: str) -> None:
        """After ``gc.collect()`` the nested function ran once, during the attempt."""
        calls, notify = _recorder()

        class Holder:
            _sandbox_public_ = frozenset({"handlers", "table"})
            table = {"on": notify}

            def __init__(self) -> None:
                self.handlers = {"on": notify}

        host = Host(
            memory={
                "get": lambda: {"on": notify},
                "getl": lambda: [notify],
                "getn": lambda: {"deep": (1, [notify])},
                "cls": Holder,
            }
        )
        source = leaking("m('late')", f"m = {read}\nm('during')\nraise ValueError")

        result = execute(source, host=host)
        gc.collect()

        assert result.error is not None and result.error.error_type == "execution"
        assert calls == ["during"]

    def test_a_returned_container_without_host_code_is_the_hosts_own(self) -> None:
        """A plain list a host function returns is still its object: appends reach it."""
        rows: list[int] = [1]
        host = Host(memory={"rows": lambda: rows})

        result = execute("r = context['rows']()\nr.append(2)\nresult = len(r)", host=host)

        assert (result.error, result.value, rows) == (None, 2, [1, 2])


_PROBE = (
    "import urllib.request\n"
    "try:\n"
    "    urllib.request.urlopen('http://127.0.0.1:9/' + str(args[0]), timeout=2)\n"
    "except Exception as error:\n"
    "    return Outcome.error(error_type='unreachable', error_message=str(error))\n"
    "return 'reached'"
)


class TestAPreparedProgramKeepsEachAgentsPolicy:
    """Held (regression pin): ADR 0072 keeps a stored program prepared once per cached record
    and shares it process-wide; the policy is not part of what is prepared.

    Payload: two live agents of one role over one store, one allowed ``127.0.0.1``, one
    ``network="deny"``, alternately reusing the program the first stored. Each run is refused
    or let through by the agent running it, in both orders, with no provider request.
    """

    def test_alternating_agents_each_get_their_own_network_policy(
        self, tmp_path: Path, log_path: Path
    ) -> None:
        """allow, deny, allow: only the deny agent's run says network access is disabled."""
        root = tmp_path / "store"
        writer = ScriptedProvider({"probe": _PROBE})
        reader = ScriptedProvider({"probe": _PROBE})
        allowed = Agent(
            "prober", provider=writer, log=False, toolstore_root=root, network=["127.0.0.1"]
        )
        denied = Agent("prober", provider=reader, log=log_path, toolstore_root=root, network="deny")

        first = allowed.probe(1)
        second = denied.probe(2)
        third = allowed.probe(3)

        assert (writer.calls, reader.calls) == (1, 0)
        assert read_log(log_path)[-1]["program_source"] == "persisted"
        disabled = [
            "network access is disabled" in str(o.error_message) for o in (first, second, third)
        ]
        assert [o.error_type for o in (first, second, third)] == ["unreachable"] * 3
        assert disabled == [False, True, False]


class TestHostCodeInAHostExceptionsArgs:
    """Finding H7 (fixed): host code in the ``args`` of an exception a host function raises
    reached the program raw.

    Payload: memory holds ``boom``, a host function that raises ``ValueError(notify)``;
    ``try: context['boom']() except ValueError as e: m = e.args[0]``, a leaked generator whose
    cleanup calls ``m('late')``, then ``raise ValueError``: the next garbage collection called
    ``notify`` after the attempt. A guarded call's exception propagates as the host raised
    it, and the policy handed out ``BaseException.args`` as they were. The policy now reads
    ``args`` as a new tuple with host code guarded by the running attempt (the program's own
    functions stay as they are), without changing the host's exception, which the host may
    raise again.
    """

    def test_a_leaked_generator_cannot_call_a_function_from_the_args_later(self) -> None:
        """After ``gc.collect()`` the function from the exception's args never ran."""
        calls, notify = _recorder()

        def boom() -> None:
            raise ValueError(notify)

        source = leaking(
            "m('late')",
            "try:\n    context['boom']()\nexcept ValueError as e:\n    m = e.args[0]\nraise ValueError",
        )

        result = execute(source, host=Host(memory={"boom": boom}))
        gc.collect()

        assert result.error is not None and result.error.error_type == "execution"
        assert calls == []

    def test_the_programs_own_args_and_the_host_exception_are_unchanged(self) -> None:
        """A function the program raised with comes back as itself; the host's exception
        keeps the raw function in its args."""
        _calls, notify = _recorder()
        error = ValueError(notify)

        def boom() -> None:
            raise error

        source = (
            "def f():\n"
            "    return 1\n"
            "try:\n"
            "    raise KeyError(f, 'k')\n"
            "except KeyError as e:\n"
            "    mine = e.args[0] is f and e.args[1] == 'k'\n"
            "try:\n"
            "    context['boom']()\n"
            "except ValueError as e:\n"
            "    theirs = repr(e.args[0])\n"
            "result = [mine, theirs]"
        )

        result = execute(source, host=Host(memory={"boom": boom}))

        assert (result.error, result.value) == (
            None,
            [True, f"<host function {notify.__qualname__}>"],
        )
        assert error.args == (notify,)


class TestReadingAHugeMemoryValue:
    """Finding H8 (half fixed): reading a huge value from memory copied it in code that never
    ticked.

    Payload: a program of an earlier call stored ten million items in memory (within the
    caps); a later program reads it: ``x = context['big']`` (or another agent's,
    ``delegate('c').big``), then ``result = 1``. The journal copies the value on first read
    (``_core._copy``, one Python step per item; ``_boundary.inbound`` for another agent's), and
    neither consulted the deadline: 10 million ints took 7 s past a 0.25 s deadline, 2 million
    one-item lists 20 s, and a straight-line program then *succeeded*, as nothing ticks after
    the copy. The fake clock here advances on every deadline check, so a copy that ticks ends
    as ``timeout``. ``inbound`` now ticks every 4,096 values (another agent's memory, fixed).
    The journal's copy of the attempt's own memory still does not (open): the fix is for
    ``ExecutionSandbox`` to hand its ticker's ``tick`` to the ``Journal``
    (``_sandbox/__init__.py``, outside this red team's files) and for ``_core._copy`` to call
    it every 4,096 items. Closed by the lead the same day: the journal checks the deadline every
    4,096 items it copies, in every container kind.
    """

    @staticmethod
    def _read(read: str) -> Any:
        host = Host(memory={"big": list(range(200_000)), "small": [1, 2]})
        host.child("c").memory.update(big=list(range(200_000)), small=[1, 2])
        return execute(
            f"x = {read}\nresult = 1",
            host=host,
            limits=SandboxLimits(timeout_seconds=1.0),
            clock=FakeClock(step=0.05),
        )

    def test_another_agents_huge_value_stops_at_the_deadline(self) -> None:
        """``delegate('c').big`` ends as ``timeout``."""
        result = self._read("delegate('c').big")

        assert result.error is not None and result.error.error_type == "timeout"

    @pytest.mark.parametrize("read", ["context['small']", "delegate('c').small"])
    def test_a_small_read_is_unaffected(self, read: str) -> None:
        """A small value reads in the same clock without a deadline check failing."""
        result = self._read(read)

        assert (result.error, result.value) == (None, 1)

    @pytest.mark.parametrize(
        "big",
        [
            {i: i for i in range(200_000)},
            [[i] for i in range(100_000)],
            tuple([i] for i in range(100_000)),
            {(i,) for i in range(100_000)},
        ],
        ids=["dict", "list of lists", "tuple of lists", "set of tuples"],
    )
    def test_every_container_kind_checks_the_deadline(self, big: Any) -> None:
        """A huge dict, list of lists, tuple or set in memory ends as ``timeout`` too."""
        result = execute(
            "x = context['big']\nresult = 1",
            host=Host(memory={"big": big}),
            limits=SandboxLimits(timeout_seconds=1.0),
            clock=FakeClock(step=0.05),
        )

        assert result.error is not None and result.error.error_type == "timeout"

    def test_a_caught_stop_mid_copy_commits_nothing(self) -> None:
        """The program catches the stop raised inside the copy and writes to the half-made
        copy: the attempt still ends as ``timeout`` and the host's list is untouched."""
        big = list(range(200_000))
        host = Host(memory={"big": big})
        code = (
            "try:\n    x = context['big']\nexcept BaseException:\n    pass\n"
            "context['big'].append('planted')\nresult = len(context['big'])"
        )

        result = execute(
            code, host=host, limits=SandboxLimits(timeout_seconds=1.0), clock=FakeClock(step=0.05)
        )

        assert result.error is not None and result.error.error_type == "timeout"
        assert (len(big), big[-1], host.memory["big"] is big) == (200_000, 199_999, True)

    def test_memorys_huge_value_stops_at_the_deadline(self) -> None:
        """``context['big']`` ends as ``timeout``."""
        result = self._read("context['big']")

        assert result.error is not None and result.error.error_type == "timeout"


class TestTextOfASharedStructure:
    """Finding H10 (fixed, ADR 0092): ``str``/``repr``/f-strings/``format``/``%s``/``print``
    of a structure that shares one container many times built text of any size in one C call.

    Payload: ``str([[0] * 10**4] * 400)``: 4 * 10**6 items counted by every cap, since the row
    is one list held 400 times, but 12 million characters of text, past the 10-million item cap
    (``json.dumps`` of the same value is refused, F6; ``str.format`` refused it after building
    it). One more level (``[[[0] * 1000] * 1000] * 1000``) is three gigabytes from one
    uninterruptible call, which the memory limit checks only at the next tick. Before these
    conversions of a container the sandbox now estimates its text with a walk memoized by
    ``id`` (``_sandbox/_text_size.py``) and refuses past the item cap.
    """

    @pytest.mark.parametrize(
        "convert",
        [
            "str(x)",
            "repr(x)",
            "f'{x}'",
            "'%s' % (x,)",
            "format(x)",
            "print(x) or ''",
            "'{}'.format(x)",
            "ascii(x)",
            "f'{x!r:>3}'",
        ],
    )
    def test_the_text_is_refused_past_the_item_cap(self, convert: str) -> None:
        """The conversion fails as ``resource_limit`` before building the text."""
        result = execute(f"x = [[0] * 10**4] * 400\nresult = len({convert})")

        assert result.error is not None and result.error.error_type == "resource_limit"

    @pytest.mark.parametrize(
        "source",
        [
            # A counter read later, by a lambda, after the name changed.
            "fs = []\nfor i in range(1):\n    fs.append(lambda: str(i))\ni = X\nresult = fs[0]()",
            # A counter rebound through nonlocal by a call in the loop.
            "def run():\n    def swap():\n        nonlocal i\n        i = X\n"
            "    for i in range(1):\n        swap()\n        return str(i)\nresult = run()",
            # A counter rebound in the loop, or range itself rebound.
            "for i in range(1):\n    i = X\n    result = f'{i}'",
            "range = lambda n: [X]\nfor i in range(1):\n    result = str(i)",
        ],
    )
    def test_a_range_counter_is_trusted_only_where_it_is_one(self, source: str) -> None:
        """``str(i)`` of a ``range()`` loop's counter skips the estimate, but only where ``i``
        cannot be anything else."""
        result = execute("X = [[0] * 10**4] * 400\n" + source)

        assert result.error is not None and result.error.error_type == "resource_limit"

    def test_one_level_more_is_refused_at_once(self) -> None:
        """Three levels of sharing (10**9 zeros of text) are refused without building any."""
        started = time.monotonic()
        result = execute("x = [[[0] * 1000] * 1000] * 1000\nresult = len(str(x))")

        assert result.error is not None and result.error.error_type == "resource_limit"
        assert time.monotonic() - started < 5.0

    @pytest.mark.parametrize(
        ("convert", "expected"),
        [
            ("str(x)", "[[0, 0], [0, 0]]"),
            ("repr(x)", "[[0, 0], [0, 0]]"),
            ("f'{x}'", "[[0, 0], [0, 0]]"),
            ("'%s' % (x,)", "[[0, 0], [0, 0]]"),
            ("str(list(range(3)))", "[0, 1, 2]"),
        ],
    )
    def test_small_shared_structures_convert_as_before(self, convert: str, expected: str) -> None:
        """Below the cap nothing changes."""
        assert execute(f"x = [[0] * 2] * 2\nresult = {convert}").value == expected


class TestUserStringMeetsTheTextCaps:
    """Finding H9 (fixed): ``collections.UserString``'s text methods built strings of any size.

    Payload: ``collections.UserString('ab').center(10**9)`` (or ``ljust``, ``zfill``,
    ``expandtabs``, ``replace``, ``translate``, ``join``, ``format``, ``format_map``, ``%``,
    and ``template % u`` through ``UserString.__rmod__``). The policy checks these methods on
    a ``str``, but a UserString is no ``str``: its methods call the str's own on its ``data``,
    past every check, and a gigabyte came back in 0.4 s (``10**10`` would exhaust the host).
    They are now served as str's checked methods over ``data``, results wrapped as
    UserString's are, and ``%`` checks a UserString template or argument like a str.
    """

    @pytest.mark.parametrize(
        ("call", "message"),
        [
            ("u.center(10**9)", "str.center would create 1000000000 items"),
            ("u.ljust(10**9)", "str.ljust would create 1000000000 items"),
            ("collections.UserString.zfill(u, 10**9)", "str.zfill would create 1000000000"),
            ("t.expandtabs(10**6)", "str.expandtabs would create 1000000000 items"),
            ("a.replace('a', 'a' * 10**6)", "str.replace would create 1000000000 items"),
            ("a.translate({97: 'b' * 10**6})", "str.translate would create 1000000000 items"),
            ("u.join(['x' * 10**6] * 1000)", "str.join would create 1000001998 items"),
            ("w.format(1)", "format width 1000000000 exceeds the sandbox limit"),
            ("m.format_map({'x': 1})", "format width 1000000000 exceeds the sandbox limit"),
            ("p % 1", "format width 1000000000 exceeds the sandbox limit"),
            ("X() % u", "format width 1000000000 exceeds the sandbox limit"),
            ("'%s%s' % (big, big)", "%-formatting would create 12000004 items"),
        ],
    )
    def test_a_huge_result_is_refused_before_it_is_built(self, call: str, message: str) -> None:
        """The call fails as ``resource_limit`` naming the cap."""
        source = (
            "import collections\n"
            "U = collections.UserString\n"
            "u, a, t = U('ab'), U('a' * 1000), U('\\t' * 1000)\n"
            "w, m = U('{0:>1000000000}'), U('{x:>1000000000}')\n"
            "p, big = U('%1000000000d'), U('a' * 6_000_000)\n"
            "class X:\n"
            "    def __str__(self):\n"
            "        return '%1000000000s'\n"
            f"v = {call}\n"
            "result = len(v)"
        )

        result = execute(source)

        assert result.error is not None and result.error.error_type == "resource_limit"
        assert message in str(result.error)

    def test_small_results_equal_userstrings_own(self) -> None:
        """Within the caps each method returns what ``UserString``'s does, of the same type."""
        u = collections.UserString("ab")
        expected = [
            repr(u.center(6, "*")),
            repr(u.zfill(4)),
            repr(u.replace(collections.UserString("b"), collections.UserString("c"))),
            u.join(["1", "2"]),
            collections.UserString("{0}-{x}").format(1, x=2),
            repr(collections.UserString("a\tb").expandtabs(4)),
            repr(collections.UserString("%d-%s") % (1, "q")),
            repr(collections.UserString.ljust(u, 4)),
        ]
        source = (
            "import collections\n"
            "U = collections.UserString\n"
            "u = U('ab')\n"
            "result = [repr(u.center(6, '*')), repr(u.zfill(4)),\n"
            "          repr(u.replace(U('b'), U('c'))), u.join(['1', '2']),\n"
            "          U('{0}-{x}').format(1, x=2), repr(U('a\\tb').expandtabs(4)),\n"
            "          repr(U('%d-%s') % (1, 'q')), repr(U.ljust(u, 4))]"
        )

        result = execute(source)

        assert (result.error, result.value) == (None, expected)
