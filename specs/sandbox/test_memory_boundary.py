"""What may cross the boundary: plain data in memory and results; code objects and handles refused."""

from __future__ import annotations

import pytest

from recurgent import Agent
from recurgent.errors import NonSerializableResultError
from recurgent.testing import ScriptedProvider

from .support import Host, error_of, execute, value_of

UNPLAIN_VALUES = {
    "function": ("def f():\n    return 1\nvalue = f", "holds a function"),
    "lambda": ("value = lambda: 1", "holds a function"),
    "class": ("class K:\n    pass\nvalue = K", "holds the class K"),
    "generator": ("value = (n for n in range(3))", "holds an iterator"),
    "instance": ("class K:\n    pass\nvalue = K()", "holds an instance of K"),
    "handle": ("value = delegate('helper')", "holds an agent handle"),
    "module": ("import json\nvalue = json", "holds a module"),
    "builtin-type": ("value = int", "holds the class int"),
    "bound-method": ("value = [].append", "holds a function"),
    "lru-cache": ("import functools\nvalue = functools.lru_cache(lambda: 1)", "holds a function"),
}


class TestMemoryHoldsPlainData:
    """Storing code or handles in ``context`` is refused with ``non_serializable_result``."""

    @pytest.mark.parametrize(
        ("source", "reason"), UNPLAIN_VALUES.values(), ids=UNPLAIN_VALUES.keys()
    )
    def test_storing_unplain_value_is_refused(self, source: str, reason: str) -> None:
        """The attempt fails naming the key and what it holds."""
        kind, message = error_of(f"{source}\ncontext['stash'] = value")

        assert (kind, f"context['stash'] {reason}; memory may hold only plain data" in message) == (
            "non_serializable_result",
            True,
        )

    @pytest.mark.parametrize(
        ("source", "where"),
        [
            ("context['nested'] = {'a': [1, {'b': lambda: 1}]}", "context['nested']['a'][1]['b']"),
            ("context[len] = 1", "context key"),
            (
                "import collections\ncontext['q'] = collections.deque([lambda: 1])",
                "context['q'][0]",
            ),
            (
                "context['o'] = Outcome.error(error_type='x', metadata={'f': lambda: 1})",
                "context['o'].metadata['f']",
            ),
            (
                "import collections\ncontext['d'] = collections.defaultdict(lambda: [])",
                "context['d'] holds a defaultdict whose default factory is a function",
            ),
        ],
        ids=["nested", "dict-key", "deque", "outcome-metadata", "defaultdict-factory"],
    )
    def test_hidden_code_objects_are_found(self, source: str, where: str) -> None:
        """Functions inside containers, keys, Outcomes and default factories are found too."""
        kind, message = error_of(source)

        assert (kind, where in message) == ("non_serializable_result", True)

    def test_plain_data_is_fine(self) -> None:
        """Dicts, lists, tuples, sets, numbers, strings, None and Outcomes may be stored."""
        host = Host()

        value_of(
            "import collections\n"
            "context['data'] = {'n': 1, 'xs': [1.5, 'a', None, True], 't': (1, 2), 's': {3}}\n"
            "context['counts'] = collections.Counter('aab')\n"
            "context['tally'] = collections.defaultdict(int)\n"
            "context['last'] = Outcome.ok({'v': 1})",
            host=host,
        )

        assert (host.memory["data"], dict(host.memory["counts"]), host.memory["last"].value) == (
            {"n": 1, "xs": [1.5, "a", None, True], "t": (1, 2), "s": {3}},
            {"a": 2, "b": 1},
            {"v": 1},
        )

    def test_a_host_function_already_in_memory_is_not_blamed(self) -> None:
        """A function the user stored before the call does not fail the attempt."""

        def formatter(value: object) -> str:
            return f"<{value}>"

        host = Host(memory={"format": formatter})

        value = value_of("context['seen'] = 1\nresult = context['format'](5)", host=host)

        assert (value, host.memory) == ("<5>", {"format": formatter, "seen": 1})

    def test_remember_refuses_code(self) -> None:
        """``remember(f=lambda: 1)`` is refused before anything is written."""
        host = Host()

        kind, message = error_of("remember(ok=1, f=lambda: 1)", host=host)

        assert (kind, "remember()['f'] holds a function" in message, host.memory) == (
            "non_serializable_result",
            True,
            {},
        )

    def test_handle_setter_refuses_code(self) -> None:
        """``handle.x = lambda: 1`` is refused and the child's memory stays empty."""
        host = Host()

        kind, _ = error_of("delegate('helper').x = lambda: 1", host=host)

        assert (kind, host.children["helper"].memory) == ("non_serializable_result", {})

    def test_handle_call_arguments_refuse_code(self) -> None:
        """A function passed to a child's method is refused before the call."""
        host = Host()

        kind, _ = error_of("delegate('helper').run(lambda: 1)", host=host)

        assert (kind, host.children["helper"].calls) == ("non_serializable_result", [])


class TestResults:
    """What an attempt returns is marshalled for the host."""

    def test_returning_a_function_is_refused(self) -> None:
        """A function as the result is a NonSerializableResultError."""
        result = execute("def f():\n    return 1\nresult = f")

        assert (type(result.error), str(result.error)) == (
            NonSerializableResultError,
            "the result holds a function; only plain data (dicts, lists, strings, numbers, "
            "booleans, None, Outcomes) can leave the sandbox",
        )

    def test_returning_a_handle_gives_the_child_agent(self) -> None:
        """Through an Agent, a returned handle becomes the child Agent itself."""
        provider = ScriptedProvider({("boss", "hire"): "result = delegate('helper')"})
        boss = Agent("boss", provider=provider, log=False)

        outcome = boss.hire()

        assert (type(outcome.value).__name__, repr(outcome.value).startswith("<Agent(helper)")) == (
            "Agent",
            True,
        )

    def test_returning_handles_in_a_list_gives_agents(self) -> None:
        """Handles inside a returned list become agents as well."""
        host = Host()

        value = value_of("result = [delegate('a'), delegate('b')]", host=host)

        assert value == [host.children["a"], host.children["b"]]


class TestMemoryThroughAgent:
    """Through an Agent, a refused memory write is rolled back."""

    def test_function_in_context_fails_and_rolls_back(self) -> None:
        """Storing a function fails the call with ``non_serializable_result``; memory is unchanged."""
        bad = "context['helper'] = lambda: 1\ncontext['count'] = 1\nresult = 1"
        provider = ScriptedProvider({"stash": [bad, bad]})
        agent = Agent("tester", provider=provider, log=False)

        outcome = agent.stash()

        assert (
            outcome.error_type,
            "helper" in agent.runtime_context,
            "count" in agent.runtime_context,
        ) == ("non_serializable_result", False, False)
