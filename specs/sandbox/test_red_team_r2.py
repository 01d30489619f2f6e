"""Red team R2: the sandbox and journal notes red team R1 left open (ADRs 0068, 0069).

Every payload is the generated program of an attacker, run through the public path (an
``Agent`` with a scripted provider) or the sandbox helpers of ``specs/sandbox/support.py``.
Each class names its finding (G1 to G5), the payload, what used to happen and what holds now.
"""

from __future__ import annotations

import collections
import datetime
import enum
import gc
import json
import math
import random
from collections.abc import Callable, Iterator
from typing import Any, ClassVar

import pytest

from recurgent import Agent
from recurgent._sandbox import SandboxLimits
from recurgent.testing import ScriptedProvider
from specs.sandbox.support import Host, execute, leaking


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
        source = leaking(
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
        source = leaking("h.notify('late')", "h = delegate('c')\nresult = 1")

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
        code = leaking(
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


class _Parser:
    """A host class a user stores for generated code to instantiate."""

    made: ClassVar[list[str]] = []

    def __init__(self, text: str) -> None:
        _Parser.made.append(text)
        self.text = text

    @classmethod
    def empty(cls) -> _Parser:
        return cls("")


class _OpenParser(_Parser):
    """A host class whose instances the user opened to generated code."""

    _sandbox_public_ = frozenset({"text"})


class _Color(enum.Enum):
    RED = 1
    BLUE = 2


@pytest.fixture
def parser_calls() -> Iterator[list[str]]:
    _Parser.made.clear()
    yield _Parser.made
    _Parser.made.clear()


class TestHostClassesInMemory:
    """Finding G2 (fixed): a host class in memory (own or another agent's) was shared as it
    was, so a leaked generator's late cleanup constructed it, running its ``__init__`` after
    the attempt failed.

    Payload: ``C = context['parser_cls']``, a leaked generator whose cleanup calls
    ``C('late')``, then ``raise ValueError``. The journal (and ``inbound``) now hand a host class
    out as a guarded ``HostClass``: it constructs during the attempt and raises the attempt's
    stop afterwards (ADR 0068).
    """

    @pytest.mark.parametrize("read", ["context['parser_cls']", "delegate('c').parser_cls"])
    def test_a_leaked_generator_cannot_construct_it_later(
        self, read: str, parser_calls: list[str]
    ) -> None:
        """After ``gc.collect()`` the class was constructed once, during the attempt."""
        host = Host(memory={"parser_cls": _Parser})
        host.child("c").memory["parser_cls"] = _Parser
        source = leaking("C('late')", f"C = {read}\nC('during')\nraise ValueError('fail')")

        result = execute(source, host=host)
        gc.collect()

        assert result.error is not None and result.error.error_type == "execution"
        assert parser_calls == ["during"]

    def test_legitimate_uses_keep_working(self, parser_calls: list[str]) -> None:
        """Constructing, isinstance, ==, the name, ``type()``, truth and storing it back all
        work; memory keeps the class itself."""
        host = Host(memory={"parser_cls": _Parser})
        source = (
            "C = context['parser_cls']\n"
            "p = C('a')\n"
            "context['again'] = C\n"
            "result = [isinstance(p, C), isinstance(1, C), C == C, C.__name__, repr(C), "
            "type(C) is type, bool(C), 'yes' if C else 'no']"
        )

        result = execute(source, host=host)

        assert (result.error, result.value) == (
            None,
            [True, False, True, "_Parser", "<host class _Parser>", True, True, "yes"],
        )
        assert host.memory == {"parser_cls": _Parser, "again": _Parser}
        assert parser_calls == ["a"]

    def test_a_stdlib_class_keeps_its_class_methods(self) -> None:
        """``context['date_cls'].fromisoformat`` is the class's own, and builds a date."""
        host = Host(memory={"date_cls": datetime.date})

        result = execute(
            "d = context['date_cls'].fromisoformat('2026-12-02')\n"
            "result = [d.year, isinstance(d, context['date_cls'])]",
            host=host,
        )

        assert (result.error, result.value) == (None, [2026, True])

    def test_an_enum_class_iterates_and_looks_up(self) -> None:
        """Members by name and by value, in order, counted and contained, as on the class."""
        host = Host(memory={"Color": _Color})

        result = execute(
            "C = context['Color']\n"
            "result = [C['BLUE'] == C(2), list(C) == [C(1), C(2)], len(C), C(1) in C]",
            host=host,
        )

        assert (result.error, result.value) == (None, [True, True, 2, True])

    def test_subclassing_it_is_refused_with_a_clear_error(self) -> None:
        """A subclass would construct the host class unguarded: ``TypeError`` naming the rule."""
        host = Host(memory={"parser_cls": _Parser})

        result = execute("class Mine(context['parser_cls']):\n    pass\nresult = 1", host=host)

        assert result.error is not None and result.error.error_type == "execution"
        assert (
            "TypeError: the host class _Parser from memory cannot be subclassed by generated "
            "code; call it, or define a class of your own"
        ) in str(result.error)

    def test_a_generic_alias_of_it_is_refused(self) -> None:
        """``C[int]`` would be an alias that constructs the class unguarded: a ``TypeError``."""
        host = Host(memory={"parser_cls": _Parser})

        result = execute("K = context['parser_cls'][int]\nresult = 1", host=host)

        assert result.error is not None and (
            "TypeError: the host class _Parser is neither iterable nor subscriptable"
        ) in str(result.error)

    def test_type_of_an_opened_instance_does_not_reach_the_class(
        self, parser_calls: list[str]
    ) -> None:
        """Payload: ``K = type(context['cls']('a'))`` kept by a leaked generator whose cleanup
        calls ``K('late')``. ``type()`` of an instance whose class the user opened with
        ``_sandbox_public_`` handed out the class itself; it is now guarded the same way."""
        host = Host(memory={"cls": _OpenParser})
        source = leaking(
            "K('late')", "K = type(context['cls']('a'))\nraise ValueError('fail the attempt')"
        )

        execute(source, host=host)
        gc.collect()

        assert parser_calls == ["a"]

    def test_type_of_an_opened_instance_works_during_the_attempt(
        self, parser_calls: list[str]
    ) -> None:
        """``type(p)`` constructs, compares equal to the class and checks instances."""
        host = Host(memory={"cls": _OpenParser})
        source = (
            "C = context['cls']\n"
            "p = C('a')\n"
            "K = type(p)\n"
            "q = K('b')\n"
            "result = [K == C, isinstance(q, C), q.text, repr(K)]"
        )

        result = execute(source, host=host)

        assert (result.error, result.value) == (
            None,
            [True, True, "b", "<host class _OpenParser>"],
        )
        assert parser_calls == ["a", "b"]


class TestHostModulesInMemory:
    """Finding G2 (decided): a module in memory was shared as it was. Generated code can read
    none of a raw module's attributes, so nothing legitimate used it; it is now withheld like
    any object the journal cannot copy, and stored back it is the module again (ADR 0068)."""

    @pytest.mark.parametrize("read", ["context['mod']", "delegate('c').mod"])
    def test_a_module_is_an_inert_stand_in(self, read: str) -> None:
        """Its repr says it is withheld; reading an attribute fails naming the stand-in."""
        host = Host(memory={"mod": json})
        host.child("c").memory["mod"] = json

        text = execute(f"result = repr({read})", host=host)
        used = execute(f"result = {read}.dumps([1])", host=host)

        assert (text.error, text.value) == (
            None,
            "<withheld module object: the runtime cannot undo changes to it, "
            "so generated code cannot use it>",
        )
        assert used.error is not None and "attribute 'dumps' of Withheld objects" in str(used.error)

    def test_moved_within_memory_it_stays_the_module(self) -> None:
        """``context['copy'] = context['mod']`` commits the module itself."""
        host = Host(memory={"mod": json})

        result = execute("context['copy'] = context['mod']\nresult = 1", host=host)

        assert result.error is None and host.memory == {"mod": json, "copy": json}

    def test_a_builtin_bound_to_a_module_is_still_callable(self) -> None:
        """``math.sqrt`` stored in memory is a guarded host function, not withheld."""
        host = Host(memory={"sqrt": math.sqrt})

        assert execute("result = context['sqrt'](16.0)", host=host).value == 4.0


def _make_entry() -> list[str]:
    return ["new"]


class TestDefaultdictFactories:
    """Finding G3 (fixed): a program that set ``default_factory`` on memory's defaultdict
    changed only the attempt's copy; the host kept its factory silently while the keys the new
    factory made committed.

    Payload: ``d = context['d']; d.default_factory = int; d['x']``. The journal compared a
    defaultdict's items only. It now records the factory a copy started with and commits a
    changed one into the host's defaultdict (a plain factory, or host code memory held);
    one the attempt made is refused and the attempt rolls back (ADR 0069). A host function
    as factory is guarded like any host function in memory (F12).
    """

    def test_a_new_plain_factory_commits_into_the_hosts_defaultdict(self) -> None:
        """The host's own defaultdict now makes ints; the key the attempt read holds 0."""
        groups: collections.defaultdict[str, Any] = collections.defaultdict(list)
        host = Host(memory={"d": groups})

        result = execute("d = context['d']\nd.default_factory = int\nresult = d['x']", host=host)

        assert (result.error, result.value) == (None, 0)
        assert host.memory["d"] is groups
        assert (groups.default_factory, dict(groups)) == (int, {"x": 0})

    def test_a_failed_attempt_leaves_the_factory(self) -> None:
        """Set, used, then the attempt fails: factory and items are what they were."""
        groups: collections.defaultdict[str, Any] = collections.defaultdict(list)
        host = Host(memory={"d": groups})

        result = execute(
            "d = context['d']\nd.default_factory = int\nd['x'] += 1\nraise ValueError('no')",
            host=host,
        )

        assert result.error is not None and result.error.error_type == "execution"
        assert (groups.default_factory, dict(groups)) == (list, {})

    @pytest.mark.parametrize("factory", ["lambda: 1", "Maker", "print"])
    def test_a_factory_the_attempt_made_is_refused(self, factory: str) -> None:
        """A function or class of the attempt would run program code in the host on every
        missing key: ``non_serializable_result``, nothing written."""
        groups: collections.defaultdict[str, Any] = collections.defaultdict(list)
        host = Host(memory={"d": groups})
        source = f"class Maker:\n    pass\ncontext['d'].default_factory = {factory}\nresult = 1"

        result = execute(source, host=host)

        assert result.error is not None and result.error.error_type == "non_serializable_result"
        assert str(result.error) == (
            "context['d'].default_factory is not a plain factory (list, dict, set, int, float, "
            "str, tuple, bool, bytes or None); a defaultdict in memory may not hold a function "
            "or class defined in an attempt"
        )
        assert (groups.default_factory, dict(groups)) == (list, {})

    def test_a_host_function_memory_holds_may_become_the_factory(self) -> None:
        """``context['d'].default_factory = context['make']`` commits the host function itself."""
        groups: collections.defaultdict[str, Any] = collections.defaultdict(list)
        host = Host(memory={"d": groups, "make": _make_entry})

        result = execute(
            "d = context['d']\nd.default_factory = context['make']\nresult = d['k']", host=host
        )

        assert (result.error, result.value) == (None, ["new"])
        assert groups.default_factory is _make_entry and dict(groups) == {"k": ["new"]}

    @pytest.mark.parametrize("read", ["context['d']", "delegate('c').d"])
    def test_a_host_function_factory_is_guarded(self, read: str) -> None:
        """A leaked generator's cleanup reading a missing key calls no host code after the
        attempt; during the attempt the factory runs."""
        calls: list[str] = []

        def make() -> list[str]:
            calls.append("made")
            return []

        host = Host(memory={"d": collections.defaultdict(make)})
        host.child("c").memory["d"] = collections.defaultdict(make)
        source = leaking("d['late']", f"d = {read}\nd['during']\nraise ValueError('fail')")

        result = execute(source, host=host)
        gc.collect()

        assert result.error is not None and result.error.error_type == "execution"
        assert calls == ["made"]


class TestChainMapWrites:
    """Finding G4 (fixed): ``c['k'] = v`` on a ``ChainMap`` was refused as a guardrail violation
    while ``c.update(k=v)`` on the same object worked (``UserDict``/``UserList`` the same).

    Payload: ``c = context['c']; c['b'] = 2`` and the program's own ``ChainMap``. The policy's
    write hook now hands out an item writer for these wrappers: items are written as
    ``update``/``append`` write them, and memory's copy commits or rolls back with the attempt;
    their attributes stay unwritable (ADR 0069).
    """

    @pytest.mark.parametrize(
        ("build", "writes", "expected"),
        [
            ("collections.ChainMap({}, {'z': 1})", "c['a'] = 1\nc['a'] += 1", {"a": 2, "z": 1}),
            ("collections.ChainMap({'a': 1})", "del c['a']\nc['b'] = 2", {"b": 2}),
            ("collections.UserDict()", "c['a'] = 1\nc['a'] += 1", {"a": 2}),
            ("collections.UserList([1, 2, 3])", "c[0] = 5\nc[1:] = [9]\ndel c[1]", [5]),
        ],
    )
    def test_item_writes_on_the_programs_own_wrapper_work(
        self, build: str, writes: str, expected: Any
    ) -> None:
        """Assignment, augmented assignment, slices and deletes as on a dict or list."""
        converter = "list" if "UserList" in build else "dict"
        source = f"import collections\nc = {build}\n{writes}\nresult = {converter}(c)"

        result = execute(source)

        assert (result.error, result.value) == (None, expected)

    @pytest.mark.parametrize("write", ["c['b'] = 2", "c.update(b=2)"])
    def test_memorys_chainmap_commits_item_writes_and_update_alike(self, write: str) -> None:
        """Both forms write memory's first mapping, in place."""
        first: dict[str, int] = {"a": 1}
        chain = collections.ChainMap(first, {"z": 0})
        host = Host(memory={"c": chain})

        result = execute(f"c = context['c']\n{write}\nresult = dict(c)", host=host)

        assert (result.error, result.value) == (None, {"z": 0, "a": 1, "b": 2})
        assert host.memory["c"] is chain and chain.maps[0] is first
        assert chain.maps == [{"a": 1, "b": 2}, {"z": 0}]

    @pytest.mark.parametrize("write", ["c['b'] = 2", "c.update(b=2)", "del c['a']"])
    def test_a_failed_attempt_rolls_both_back(self, write: str) -> None:
        """Written, then the attempt fails: memory's ChainMap is as it was."""
        chain = collections.ChainMap({"a": 1}, {"z": 0})
        host = Host(memory={"c": chain})

        result = execute(f"c = context['c']\n{write}\nraise ValueError('no')", host=host)

        assert result.error is not None and result.error.error_type == "execution"
        assert chain.maps == [{"a": 1}, {"z": 0}]

    @pytest.mark.parametrize("write", ["c.maps = 5", "setattr(c, 'maps', 5)", "del c.maps"])
    def test_its_attributes_stay_unwritable(self, write: str) -> None:
        """``c.maps = 5`` would break memory's ChainMap: an ``AttributeError`` naming the rule."""
        chain = collections.ChainMap({"a": 1})
        host = Host(memory={"c": chain})

        result = execute(f"c = context['c']\n{write}\nresult = 1", host=host)

        assert result.error is not None and (
            "AttributeError: cannot change ChainMap.maps: generated code writes a ChainMap's "
            "items (x[key] = value), not its attributes"
        ) in str(result.error)
        assert chain.maps == [{"a": 1}]


_SHUFFLES = [
    "import random\nrandom.shuffle(x)",
    "import random\nrandom.Random(1).shuffle(x)",
    "import random\nrandom.Random.shuffle(random.Random(1), x)",
    "context['rng'].shuffle(x)",
]


class TestShuffleIsInterruptible:
    """Finding G5 (fixed): ``random.shuffle`` of a 10-million-item list ran about 27 s past a
    1 s deadline (every path: the module function, a generator the program made, a subclass,
    memory's ``random.Random``).

    Payload: ``x = list(range(10**7)); random.shuffle(x)``. ``Random.shuffle`` is a loop in the
    ``random`` module's Python code, which never ticks. The policy now serves a checked
    ``shuffle`` that makes the same swaps and ticks every 4,096 of them (ADR 0069). Three
    million swaps take seconds in Python, far past the 0.25 s deadline used here.
    """

    @pytest.mark.parametrize("shuffle", _SHUFFLES)
    def test_a_huge_shuffle_stops_at_the_deadline(self, shuffle: str) -> None:
        """The attempt ends as ``timeout``; memory's generator keeps its state."""
        rng = random.Random(7)
        state = rng.getstate()
        host = Host(memory={"rng": rng})

        result = execute(
            f"x = [0] * 3_000_000\n{shuffle}\nresult = 1",
            host=host,
            limits=SandboxLimits(timeout_seconds=0.25),
        )

        assert result.error is not None and result.error.error_type == "timeout"
        assert rng.getstate() == state

    @pytest.mark.parametrize("shuffle", _SHUFFLES[1:])
    def test_the_order_is_random_shuffles_own(self, shuffle: str) -> None:
        """Seeded the same, the checked shuffle gives ``Random.shuffle``'s order."""
        expected = list(range(10_000))
        random.Random(1).shuffle(expected)
        host = Host(memory={"rng": random.Random(1)})

        result = execute(f"x = list(range(10_000))\n{shuffle}\nresult = x", host=host)

        assert (result.error, result.value) == (None, expected)

    def test_memorys_generator_commits_the_advanced_state(self) -> None:
        """After the attempt, memory's generator is where ``Random.shuffle`` leaves one."""
        rng, expected = random.Random(3), random.Random(3)
        expected.shuffle(list(range(100)))
        host = Host(memory={"rng": rng})

        result = execute("context['rng'].shuffle(list(range(100)))\nresult = 1", host=host)

        assert result.error is None and host.memory["rng"] is rng
        assert rng.getstate() == expected.getstate()


class TestThroughAnAgent:
    """The lifecycle commits what the sandbox prepared (G3, G4), and drops it on failure."""

    def test_an_accepted_call_commits_the_factory_and_the_chainmap_item(self) -> None:
        """Memory's defaultdict gets the new factory and memory's ChainMap the new item."""
        code = (
            "context['d'].default_factory = int\n"
            "context['d']['n'] += 1\n"
            "context['c']['k'] = 'v'\n"
            "result = 1"
        )
        agent = Agent("t", provider=ScriptedProvider({"run": code}), log=False)
        groups: collections.defaultdict[str, Any] = collections.defaultdict(list)
        chain = collections.ChainMap({}, {"z": 0})
        agent.remember(d=groups, c=chain)

        outcome = agent.run()

        assert (outcome.status, outcome.value) == ("ok", 1)
        assert (agent.d is groups, groups.default_factory, dict(groups)) == (True, int, {"n": 1})
        assert (agent.c is chain, chain.maps) == (True, [{"k": "v"}, {"z": 0}])

    def test_a_failed_call_leaves_both(self) -> None:
        """Every attempt writes and fails: factory, items and maps are what they were."""
        code = "context['d'].default_factory = int\ncontext['c']['k'] = 'v'\nraise ValueError('no')"
        agent = Agent("t", provider=ScriptedProvider({"run": code}), log=False)
        groups: collections.defaultdict[str, Any] = collections.defaultdict(list)
        chain = collections.ChainMap({}, {"z": 0})
        agent.remember(d=groups, c=chain)

        outcome = agent.run()

        assert outcome.status == "error"
        assert (groups.default_factory, dict(groups), chain.maps) == (list, {}, [{}, {"z": 0}])
