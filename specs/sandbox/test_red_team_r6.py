"""Red team R6: the four boundaries changed on 2026-12-03 (ADRs 0123 to 0126) attacked as an
attacker would (the generated program is the attacker).

- **L1 (fixed)**: a map whose first call ends with a program the sandbox policy refuses
  (``sorted.__defaults__``) raised ``InvalidCodeError`` out of ``Agent.map`` (the map re-prepared
  that program to share it); a single call answers the same program with an ``invalid_code``
  Outcome. The map now shares no program then and answers every item.

Payloads that held (pinned below where cheap):

- ADR 0123: the real ``int`` or its unchecked constructor is not reachable: ``__mro__``,
  ``__bases__``, ``__base__``, ``__subclasses__``, ``__new__``, ``__rpow__``, ``__get__``,
  ``__reduce_ex__`` are refused at compile time, ``getattr(int, '__mro__')`` and ``vars(int)``
  at run time; ``type(len(..))``, ``type(math.floor(..))``, ``(5).__class__``,
  ``type(next(itertools.count()))``, a ``Counter`` value, ``json.loads('5')``, ``copy.copy(int)``,
  ``copy.deepcopy(int)``, ``int.mro()[0]`` and ``bool.mro()[1]`` are all the checked stand-in
  (``'f' * 300000`` in base 16 and ``from_bytes`` of 200 000 bytes refused through each);
  ``type.mro``, ``typing.get_type_hints``, ``functools.singledispatch``, ``enum.IntFlag``, the
  functional Enum API, ``struct``, ``ipaddress``, ``inspect`` are not served. Past the bit cap in
  one C call: ``Fraction`` ``*``/``**``/``+``/``sum``, ``math.lcm``, ``operator.mul``,
  ``functools.reduce``, ``itertools.accumulate``, ``statistics.mean``, ``Decimal`` arithmetic,
  ``round(n, -3_000_000)`` (int, Fraction, Decimal), ``random.getrandbits``,
  ``secrets.randbits``, ``int.to_bytes`` lengths, a ``str`` subclass's digits: all refused.
  The host gets real ``int`` for a stand-in int, a program ``int`` subclass (value, key, from
  ``from_bytes``), ``IntEnum`` members, and ``defaultdict(int)``/``defaultdict(type(1))``
  factories nested anywhere, in process and on a worker, as the answer and in memory.
- ADR 0124: a mapped item cannot reach state another item sees: module, host-class and
  host-function attributes cannot be set; every way to get a memory value (``[]``, ``get``,
  ``values``, ``items``, ``dict(...)``, ``copy``, ``pop``, ``setdefault``, ``popitem``, ``|``,
  ``dict.get(context, ..)``) hands the item a copy, and changing it is a refused write; a hung
  item times out alone and its stop does not reach the next item; a generator leaked in a cycle
  keeps its item's globals (no release) and stops at its first tick when finalized.
- ADR 0125: a secret the program stores mid-call (``context['api_key']``) is masked on the same
  call's line in the answer, nested containers, dict keys and printed output; a string logged in
  the clear before it became a secret is masked once it is one. Lines compared with main before
  ADR 0125 (``ea2b45c``) for a secret set by an earlier call, nested containers, dict keys, a
  ``str`` subclass, a 100 000-character answer, an environment secret, a raised message, a
  301-character memory secret: the same strings masked (an upper-cased secret is in the clear in
  both: redaction is an exact match).
- ADR 0126: ids are the OS's CSPRNG output (no state a program can read or predict from its own
  ids); a forked child drops its inherited block.
"""

from __future__ import annotations

import gc
import json
from pathlib import Path

import pytest

from specs.map.support import counting_agent, values
from specs.sandbox.support import error_of

_REFUSED_PROGRAM = "x = sorted.__defaults__\nresult = 1"


class TestAMapOfARefusedProgram:
    """L1 (fixed): the policy's refusal is each item's Outcome, as in a single call."""

    def test_map_answers_each_item_with_invalid_code(self, tmp_path: Path) -> None:
        """Before the fix ``Agent.map`` raised ``InvalidCodeError`` to the host."""
        agent, _ = counting_agent(tmp_path, _REFUSED_PROGRAM)

        outcomes = agent.map("probe", [1, 2, 3], batch_size=3)

        assert values(outcomes) == [("invalid_code",), ("invalid_code",), ("invalid_code",)]
        assert agent.probe(4).error_type == "invalid_code"


class TestTheRealIntIsNotReached:
    """Held: every way to a type of an int gives the checked stand-in."""

    @pytest.mark.parametrize(
        "expression",
        [
            "type(len('ab'))",
            "(5).__class__",
            "int.mro()[0]",
            "bool.mro()[1]",
            "copy.copy(int)",
            "copy.deepcopy(int)",
            "type(next(itertools.count()))",
            "type(collections.Counter('a')['a'])",
            "type(json.loads('5'))",
            "type(math.floor(2.5))",
        ],
    )
    def test_text_and_bytes_past_the_cap_are_refused(self, expression: str) -> None:
        """``'f' * 300000`` in base 16 is 1 199 997 bits; 200 000 bytes are 1 600 000."""
        prelude = f"import copy, itertools, collections, json, math\nR = {expression}\n"

        text_error = error_of(prelude + "x = R('f' * 300000, 16)\nresult = 1")
        bytes_error = error_of(prelude + "x = R.from_bytes(b'\\xff' * 200000, 'big')\nresult = 1")

        assert text_error == (
            "resource_limit",
            "Resource limit in tester.run: int() of text would create a number of about "
            "1199997 bits; the sandbox limit is 1000000 bits",
        )
        assert bytes_error == (
            "resource_limit",
            "Resource limit in tester.run: int.from_bytes() would create a number of about "
            "1600000 bits; the sandbox limit is 1000000 bits",
        )


class TestTheHostGetsRealInts:
    """Held: what reaches the host is the builtin ``int``, never the stand-in or a subclass."""

    @pytest.mark.parametrize("isolation", ["in_process", "process"])
    def test_answer_and_memory_hold_builtin_ints(self, tmp_path: Path, isolation: str) -> None:
        """Stand-in ints, a program subclass's instances (as keys too), an IntEnum member and
        a nested ``defaultdict(type(1))``: exact types on both sides of the boundary."""
        program = (
            "import collections, enum\n"
            "class X(int):\n"
            "    pass\n"
            "class E(enum.IntEnum):\n"
            "    A = 1\n"
            "shape = [int('5'), X(6), X.from_bytes(b'\\x07', 'big'), {X(2): E.A},\n"
            "         {'d': collections.defaultdict(type(1))}]\n"
            "context['kept'] = shape\n"
            "result = shape"
        )
        agent, _ = counting_agent(tmp_path, program, isolation=isolation)

        outcome = agent.probe()
        kept = agent._agent.memory["kept"]

        for shape in (outcome.value, kept):
            assert shape == [5, 6, 7, {2: 1}, {"d": {}}]
            assert [type(n) for n in shape[:3]] == [int, int, int]
            [(key, member)] = shape[3].items()
            assert (type(key), type(member)) == (int, int)
            assert shape[4]["d"].default_factory is int


class TestMappedItemsShareNothing:
    """Held: an item changing a memory value it read is a refused write, whatever the way."""

    @pytest.mark.parametrize(
        "read",
        [
            "context['shared']",
            "list(context.values())[0]",
            "dict(context)['shared']",
            "context.copy()['shared']",
            "(context | {})['shared']",
            "dict.get(context, 'shared')",
        ],
    )
    def test_changing_a_read_value_is_refused(self, tmp_path: Path, read: str) -> None:
        """No item sees another's argument; memory keeps its value. The first item is an
        ordinary call (its retries exhausted), the second runs in the batch."""
        program = f"lst = {read}\nprev = list(lst)\nlst.append(args[0])\nresult = [args[0], prev]"
        agent, _ = counting_agent(tmp_path, program, role="mapper")
        agent.shared = []

        outcomes = agent.map("probe", [1, 2], batch_size=2)

        assert [o.error_type for o in outcomes] == [
            "guardrail_retry_exhausted",
            "tool_registry_violation",
        ]
        assert all("may not write it" in (o.error_message or "") for o in outcomes)
        assert agent.shared == []


class TestASecretStoredMidCall:
    """Held: the line of the call that stores a secret masks it everywhere on that line."""

    def test_stored_secret_is_masked_on_its_own_line(self, tmp_path: Path) -> None:
        secret = "Zq9-secret-value-77"
        program = (
            f"context['api_key'] = {secret!r}\n"
            f"print({secret!r})\n"
            f"result = [{secret!r}, {{{secret!r}: ({secret!r},)}}]"
        )
        agent, _ = counting_agent(tmp_path, program, role="logger")

        assert agent.probe().is_ok
        line = (tmp_path / "calls.jsonl").read_text().splitlines()[-1]

        assert secret not in line
        assert json.loads(line)["method"] == "probe"


class TestAHungItemInABatch:
    """Held: the batch arms once, yet each item has its own deadline and its own stop."""

    def test_hung_items_time_out_alone_and_the_next_item_is_not_stopped(
        self, tmp_path: Path
    ) -> None:
        """Even items loop forever; odd ones run a loop that swallows everything. A stop of a
        hung item that leaked into the next would end that loop as a timeout."""
        program = (
            "n = 0\n"
            "if args[0] % 2 == 0:\n"
            "    while True:\n"
            "        n += 1\n"
            "try:\n"
            "    m = 0\n"
            "    while m < 20000:\n"
            "        m += 1\n"
            "except BaseException:\n"
            "    pass\n"
            "result = args[0]"
        )
        agent, _ = counting_agent(tmp_path, program, role="hang")

        outcomes = agent.map("probe", [1, 2, 3, 4, 5, 7], batch_size=6, timeout_seconds=0.3)

        assert values(outcomes) == [1, ("timeout",), 3, ("timeout",), 5, 7]

    def test_a_leaked_generator_that_never_ends_does_not_reach_later_items(
        self, tmp_path: Path
    ) -> None:
        """Item 1 leaves a started generator in a reference cycle whose ``finally`` loops
        forever: its globals are held, so the item is not released, and when the collector
        finalizes it the loop stops at its first tick; every later item and call answers."""
        program = (
            "def g():\n"
            "    try:\n"
            "        yield 1\n"
            "    finally:\n"
            "        n = 0\n"
            "        while True:\n"
            "            n += 1\n"
            "if args[0] == 1:\n"
            "    x = g()\n"
            "    next(x)\n"
            "    box = [x]\n"
            "    box.append(box)\n"
            "result = args[0]"
        )
        agent, _ = counting_agent(tmp_path, program, role="leak")

        outcomes = agent.map("probe", [1, 2, 3], batch_size=3, timeout_seconds=0.3)
        gc.collect()

        assert values(outcomes) == [1, 2, 3]
        assert agent.probe(9).value == 9
