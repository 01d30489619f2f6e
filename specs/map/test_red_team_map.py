"""Red team R5 against ``Agent.map`` and its ``BatchSandbox`` (ADRs 0104, 0090, 0110, 0111).

A mapped program runs in a batch sandbox whose namespace is built once and reused per item.
The batch built two parts of that namespace on its own, and both drifted from a single
attempt's (``_sandbox/_namespace.py``):

- **K1 (fixed)**: the batch's fast path read a standard-engine pattern's attributes natively,
  so a compiled pattern the host stored in memory matched on the standard ``re`` engine, which
  no deadline stops (ADR 0090 serves it on the sandbox's ``regex`` engine in a single attempt).
- **K2 (fixed)**: the batch's ``class`` statement used the bare metaclass, not
  ``make_program_class`` (ADR 0104): a mapped program's ``NamedTuple``, ``Generic``,
  ``Protocol``, ``TypedDict`` and ``UserDict`` classes failed, where the same program passes
  a single call.

The attacks that held are pinned too: ``remember()`` in a mapped item is a refused write.
"""

from __future__ import annotations

import re
from pathlib import Path

from specs.map.support import counting_agent, values


class TestStandardPatternInMemory:
    def test_a_host_pattern_matches_on_the_sandbox_engine_in_a_map(self, tmp_path: Path) -> None:
        """K1: ``(a+)+$`` against 26 ``a`` and a ``!`` backtracks for about a second on the
        standard engine, in C, past a 0.3 s deadline (the loop after it then ends the item as a
        timeout); on the sandbox's engine each item answers False at once, as a single call
        does."""
        program = (
            "pattern = context['pattern']\n"
            "matched = bool(pattern.match('a' * 26 + '!'))\n"
            "n = 0\n"
            "while n < 10000:\n"  # ticks: a match that ran past the deadline ends here
            "    n += 1\n"
            "result = [matched, args[0]]"
        )
        agent, _ = counting_agent(tmp_path, program)
        agent.pattern = re.compile(r"(a+)+$")

        outcomes = agent.map("probe", [1, 2, 3], batch_size=3, timeout_seconds=0.3)

        assert values(outcomes) == [[False, 1], [False, 2], [False, 3]]
        assert agent.probe(4).value == [False, 4]


class TestClassBasesInAMap:
    def test_typing_and_collections_bases_work_in_a_mapped_program(self, tmp_path: Path) -> None:
        """K2: the same classes as in a single call; ``Box[S('x')]`` is ``Box`` (erased), so no
        program object enters typing's process-wide cache."""
        program = (
            "import typing, collections\n"
            "T = typing.TypeVar('T')\n"
            "class Box(typing.Generic[T]):\n"
            "    pass\n"
            "class S(str):\n"
            "    pass\n"
            "class Point(typing.NamedTuple):\n"
            "    x: int\n"
            "    y: int = 0\n"
            "class Movie(typing.TypedDict):\n"
            "    title: str\n"
            "class Bag(collections.UserDict):\n"
            "    pass\n"
            "class Named(typing.Protocol):\n"
            "    name: str\n"
            "result = [repr(Point(args[0])), Movie(title='t'), dict(Bag(a=args[0])),\n"
            "          Box[S('x')] is Box]"
        )
        agent, _ = counting_agent(tmp_path, program)

        outcomes = agent.map("shapes", [1, 2], batch_size=2)

        expected = [
            ["Point(x=1, y=0)", {"title": "t"}, {"a": 1}, True],
            ["Point(x=2, y=0)", {"title": "t"}, {"a": 2}, True],
        ]
        assert values(outcomes) == expected
        assert agent.shapes(1).value == expected[0]


class TestHeld:
    def test_remember_in_a_mapped_item_is_a_refused_write(self, tmp_path: Path) -> None:
        """``remember()`` from an item is a write like any other: that item's guardrail error
        (``map_memory_write``), and memory keeps its value."""
        program = "if args[0] == 2:\n    remember(seen=args[0])\nresult = args[0]"
        agent, _ = counting_agent(tmp_path, program)
        agent.seen = 0

        outcomes = agent.map("note", [1, 2, 3], batch_size=3)

        assert values(outcomes) == [1, ("tool_registry_violation",), 3]
        assert "mapper.note wrote 'seen' while mapped" in str(outcomes[1].error_message)
        assert agent.runtime_context["seen"] == 0
