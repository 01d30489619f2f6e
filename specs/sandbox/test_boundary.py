"""The boundary rebuilds what leaves an attempt (issue 9, R5 and R6): views, subclasses, late code."""

from __future__ import annotations

import collections
import io
import random
import time
import xml.etree.ElementTree as ElementTree
from typing import Any

from recurgent import Agent
from recurgent._sandbox import rebuild
from recurgent.errors import NonSerializableResultError
from recurgent.outcome import Outcome
from recurgent.testing import ScriptedProvider

from .support import Host, error_of, execute, value_of

LOOPING_STR = (
    "class S(str):\n"
    "    def __eq__(self, other):\n"
    "        while True:\n"
    "            pass\n"
    "    def __hash__(self):\n"
    "        while True:\n"
    "            pass\n"
    "    def __repr__(self):\n"
    "        while True:\n"
    "            pass\n"
    "    def __str__(self):\n"
    "        while True:\n"
    "            pass\n"
)

# A __repr__ that runs a functools.partial over a catastrophically backtracking match: C code
# with no tick inside, so only the regex's own limit (if any) or never calling it ends it.
REGEX_REPR = (
    "import functools\n"
    "import re\n"
    "SLOW = functools.partial(re.compile('(a+)+$').match, 'a' * 40 + '!')\n"
    "class K:\n"
    "    def __repr__(self):\n"
    "        return str(SLOW())\n"
    "    def __str__(self):\n"
    "        return str(SLOW())\n"
)


class TestViewsAreConvertedOrRefused:
    """R5: dict views never cross the boundary as views."""

    def test_values_view_holding_a_function_is_refused(self) -> None:
        """``return {1: f}.values()`` fails typed and the function never reaches the host."""
        result = execute("def f():\n    return 1\nresult = {1: f}.values()")

        assert (result.error and result.error.error_type, result.value) == (
            "non_serializable_result",
            None,
        )
        assert "the result[0] holds a function" in str(result.error)

    def test_items_view_holding_a_generator_is_refused_in_memory(self) -> None:
        """``context['v'] = {1: g()}.items()`` fails typed and memory stays empty."""
        host = Host()

        kind, message = error_of(
            "def g():\n    yield 1\ncontext['v'] = {1: g()}.items()", host=host
        )

        assert (kind, "context['v'][0][1] holds an iterator" in message, host.memory) == (
            "non_serializable_result",
            True,
            {},
        )

    def test_plain_views_become_lists(self) -> None:
        """Views of plain data come back as lists (items as tuples)."""
        value = value_of("d = {'a': 1, 'b': 2}\nresult = [d.keys(), d.values(), d.items()]")

        assert value == [["a", "b"], [1, 2], [("a", 1), ("b", 2)]]


class TestSubclassesAreReduced:
    """Subclasses of plain types defined by generated code come back as their base type."""

    def test_str_subclass_with_looping_methods_becomes_a_str(self) -> None:
        """A returned str subclass (looping __eq__/__hash__/__repr__) is a real str."""
        value = value_of(LOOPING_STR + "result = {'k': S('text'), 'l': [S('x')]}")

        assert (value, type(value["k"]), type(value["l"][0])) == (
            {"k": "text", "l": ["x"]},
            str,
            str,
        )

    def test_container_subclasses_are_read_through_the_base_class(self) -> None:
        """dict/list/tuple subclasses with hostile overrides give their real contents."""
        value = value_of(
            "class D(dict):\n"
            "    def items(self):\n"
            "        return [('evil', 1)]\n"
            "class L(list):\n"
            "    def __iter__(self):\n"
            "        return iter(['evil'])\n"
            "class T(tuple):\n"
            "    def __len__(self):\n"
            "        return 99\n"
            "result = [D(a=1), L([1, 2]), T((3,))]"
        )

        assert (value, [type(v) for v in value]) == ([{"a": 1}, [1, 2], (3,)], [dict, list, tuple])

    def test_outcome_is_rebuilt(self) -> None:
        """An Outcome's fields are rebuilt: a str subclass error_message becomes a str."""
        value = value_of(
            "class S(str):\n"
            "    def upper(self):\n"
            "        return 'evil'\n"
            "result = Outcome.error(error_type='x', error_message=S('bad'))"
        )

        assert (type(value), value.error_message, type(value.error_message)) == (
            Outcome,
            "bad",
            str,
        )

    def test_rebuild_refuses_an_object_without_calling_it(self) -> None:
        """Host-side rebuild names the offending path and never asks the object anything."""

        class Opaque:
            def __repr__(self) -> str:
                raise AssertionError("repr must not be called")

        try:
            rebuild({"a": [Opaque()]}, "the result")
        except NonSerializableResultError as error:
            message = error.message
        assert message.startswith("the result['a'][0] holds an object of type Opaque;")


class TestHostNeverRunsProgramCode:
    """R6: no program method runs in host code after the attempt; the host stays responsive."""

    def _agent(self, code: str) -> Agent:
        return Agent(
            "leaky",
            provider=ScriptedProvider({"run": code}),
            log=False,
            execution_timeout_seconds=100,
        )

    def test_looping_repr_in_an_exception_message(self) -> None:
        """``raise ValueError(K())`` with a looping __repr__ is an execution error, promptly."""
        agent = self._agent(
            "class K:\n"
            "    def __repr__(self):\n"
            "        while True:\n"
            "            pass\n"
            "raise ValueError(K())"
        )
        started = time.monotonic()

        outcome = agent.run()

        assert (outcome.error_type, time.monotonic() - started < 30) == ("execution", True)
        assert "ValueError" in (outcome.error_message or "")

    def test_regex_repr_in_an_exception_message(self) -> None:
        """A __repr__ that is a partial over a backtracking regex never runs in the host."""
        agent = self._agent(REGEX_REPR + "raise ValueError(K())")
        started = time.monotonic()

        outcome = agent.run()

        assert (outcome.error_type, time.monotonic() - started < 30) == ("execution", True)

    def test_returned_str_subclass_is_safe_for_history_and_logs(self, tmp_path: Any) -> None:
        """A returned looping str subclass is logged and recorded as a plain str."""
        agent = Agent(
            "leaky",
            provider=ScriptedProvider({"run": LOOPING_STR + "result = S('done')"}),
            log=tmp_path / "calls.jsonl",
            debug=True,
        )

        outcome = agent.run()

        summary = agent.runtime_context["conversation_history"][-1]["outcome_summary"]
        assert (outcome.value, type(outcome.value), summary["value_preview"]) == (
            "done",
            str,
            '"done"',
        )

    def test_regex_repr_object_returned_is_refused(self) -> None:
        """Returning such an object is refused without describing it."""
        agent = self._agent(REGEX_REPR + "result = [K()]")
        started = time.monotonic()

        outcome = agent.run()

        assert (outcome.error_type, time.monotonic() - started < 30) == (
            "non_serializable_result",
            True,
        )


class _HostThing:
    """A host object of a class the journal neither copies nor shares."""

    def __init__(self) -> None:
        self.count = 0


class TestAnotherAgentsHostObjects:
    """Host objects read from another agent follow the journal's rules (ADR 0057)."""

    def test_a_childs_stream_is_read_as_a_copy(self) -> None:
        """Writing to a child's StringIO read through a handle leaves the child's untouched."""
        host = Host()
        buffer = io.StringIO("c")
        host.child("notes").memory["buf"] = buffer

        value = value_of(
            "buf = delegate('notes').buf\nbuf.seek(0, 2)\nbuf.write('ZZ')\nresult = buf.getvalue()",
            host=host,
        )

        assert (value, host.children["notes"].memory["buf"] is buffer) == ("cZZ", True)
        assert (buffer.getvalue(), buffer.tell()) == ("c", 0)

    def test_a_childs_stream_is_untouched_by_a_failed_attempt(self) -> None:
        """A failing attempt that wrote to a child's StringIO leaves it as it was."""
        host = Host()
        host.child("notes").memory["buf"] = io.StringIO("c")

        result = execute("delegate('notes').buf.write('ZZ')\nraise ValueError('boom')", host=host)

        assert result.error is not None
        assert host.children["notes"].memory["buf"].getvalue() == "c"

    def test_an_object_the_journal_cannot_copy_is_withheld(self) -> None:
        """A child's object of an unknown class reaches the program as an inert stand-in."""
        host = Host()
        thing = _HostThing()
        host.child("notes").memory["thing"] = thing

        value = value_of("result = str(delegate('notes').thing)", host=host)

        assert value == (
            "<withheld _HostThing object: the runtime cannot undo changes to it, "
            "so generated code cannot use it>"
        )
        assert thing.count == 0

    def test_copies_of_a_childs_objects_keep_the_size_caps(self) -> None:
        """A copied child Random and StringIO still refuse huge randbytes and seek."""
        host = Host()
        host.child("notes").memory.update(rng=random.Random(1), buf=io.StringIO("a"))

        random_error = error_of(
            "result = len(delegate('notes').rng.randbytes(200_000_000))", host=host
        )
        seek_error = error_of("b = delegate('notes').buf\nb.seek(10**9)\nresult = 1", host=host)

        assert (random_error[0], seek_error[0]) == ("resource_limit", "resource_limit")
        assert host.children["notes"].memory["buf"].tell() == 0

    def test_a_cycle_the_host_made_in_a_childs_tree_is_copied_once(self) -> None:
        """An element the host appended to itself is read as one copy, not endlessly."""
        host = Host()
        element = ElementTree.Element("x")
        element.append(element)
        host.child("notes").memory["e"] = element

        assert value_of("e = delegate('notes').e\nresult = [e.tag, e[0] is e]", host=host) == [
            "x",
            True,
        ]


class TestOrderedDicts:
    """OrderedDicts crossing the boundary keep their order links."""

    def test_an_ordered_dict_written_to_memory_still_reorders(self) -> None:
        """An OrderedDict the program builds reaches memory whole: move_to_end works on it."""
        host = Host()

        execute(
            "import collections\n"
            "od = collections.OrderedDict()\n"
            "od['b'] = 1\n"
            "od['a'] = 2\n"
            "context['od'] = od\n"
            "result = 1",
            host=host,
        )
        result = execute("result = 1", host=host)  # a second attempt on the same memory
        stored = host.memory["od"]
        stored.move_to_end("b")

        assert result.error is None
        assert (type(stored), list(stored)) == (collections.OrderedDict, ["a", "b"])

    def test_a_childs_ordered_dict_is_read_as_a_working_copy(self) -> None:
        """A child's OrderedDict read through a handle can be reordered by the program."""
        host = Host()
        host.child("notes").memory["od"] = collections.OrderedDict([("b", 1), ("a", 2)])

        value = value_of(
            "od = delegate('notes').od\nod.move_to_end('b')\nresult = list(od)", host=host
        )

        assert value == ["a", "b"]
        assert list(host.children["notes"].memory["od"]) == ["b", "a"]
