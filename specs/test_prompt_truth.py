"""Prompt truth (issue 13): each rule the system prompt states holds when a program follows it."""

from __future__ import annotations

import datetime
import decimal
import fractions
import math
from pathlib import Path
from typing import Any

import pytest

from recurgent import Agent
from recurgent._prompting import shared_system_prefix
from recurgent.outcome import Outcome
from recurgent.testing import ScriptedProvider

RETRY = "result = 'retried'"
"""The second reply: when the call returns 'retried', the first program was refused."""


def _run(code: Any, *args: Any, method: str = "run", **options: Any) -> tuple[Outcome, Agent, int]:
    """Run one call whose first program is ``code``; returns the outcome, agent and request count."""
    provider = ScriptedProvider({("t", method): [code, RETRY], ("helper", "run"): "result = 1"})
    options.setdefault("toolstore_root", None)
    agent = Agent("t", provider=provider, log=False, **options)
    outcome = getattr(agent, method)(*args)
    return outcome, agent, provider.calls


def _states(*fragments: str) -> None:
    """Assert that the shared system prompt states each fragment."""
    prompt = shared_system_prefix()
    missing = [fragment for fragment in fragments if fragment not in prompt]
    assert missing == []


class TestNamesAndAttributes:
    """ADR 0044 as the prompt states it."""

    def test_single_underscore_names_on_own_objects_work(self) -> None:
        """self._items and a _helper function run at the first attempt."""
        _states("Single-underscore names work as usual", "`self._items = []`")
        code = (
            "class Bag:\n    def __init__(self):\n        self._items = []\n"
            "    def add(self, x):\n        self._items.append(x)\n        return len(self._items)\n"
            "def _helper(b):\n    return b.add(3)\nresult = _helper(Bag())"
        )
        assert _run(code)[0].value == 1

    def test_private_attribute_of_a_module_is_refused(self) -> None:
        """math._x is refused (the call is retried)."""
        _states("on modules, plain values, Outcomes and handles a `_name` attribute is refused")
        outcome, _, calls = _run("import math\nresult = math._x")
        assert (outcome.value, calls) == ("retried", 2)

    def test_readable_dunders_work(self) -> None:
        """__class__.__name__ of an exception and __dict__ of an own object are readable."""
        _states("`x.__class__` (same as `type(x)`), `__name__`", "`__dict__` of your own objects")
        code = (
            "class P:\n    def __init__(self):\n        self.x = 1\n"
            "try:\n    1 / 0\nexcept Exception as e:\n    name = e.__class__.__name__\n"
            "result = [name, P().__dict__]"
        )
        assert _run(code)[0].value == ["ZeroDivisionError", {"x": 1}]

    def test_calling_a_dunder_method_is_refused(self) -> None:
        """x.__len__() is refused at compile time, as the prompt says."""
        _states("never `x.__len__()`")
        outcome, _, calls = _run("result = [1, 2].__len__()")
        assert (outcome.value, calls) == ("retried", 2)


class TestClassesAndScripts:
    """ADRs 0104 and 0106 as the prompt states them."""

    @pytest.mark.parametrize(
        ("code", "expected"),
        [
            (
                "from typing import NamedTuple\nclass P(NamedTuple):\n    x: int\n    y: int = 2\n"
                "result = P(1)._asdict()",
                {"x": 1, "y": 2},
            ),
            (
                "from typing import TypedDict\nclass Row(TypedDict):\n    a: int\n"
                "result = Row(a=1)",
                {"a": 1},
            ),
            (
                "from typing import Generic, TypeVar\nT = TypeVar('T')\n"
                "class Box(Generic[T]):\n    def __init__(self, v):\n        self.v = v\n"
                "result = Box[int](3).v",
                3,
            ),
            (
                "from typing import Protocol\nclass Named(Protocol):\n    name: str\n"
                "class A:\n    name = 'a'\nresult = A().name",
                "a",
            ),
            (
                "from collections import Counter\nclass Tally(Counter):\n"
                "    def top(self):\n        return self.most_common(1)[0][0]\n"
                "result = Tally('abca').top()",
                "a",
            ),
            (
                "import datetime, json\nclass Enc(json.JSONEncoder):\n"
                "    def default(self, o):\n        return o.isoformat()\n"
                "result = json.dumps({'d': datetime.date(2026, 1, 2)}, cls=Enc)",
                '{"d": "2026-01-02"}',
            ),
        ],
        ids=["NamedTuple", "TypedDict", "Generic", "Protocol", "Counter", "JSONEncoder"],
    )
    def test_the_bases_the_prompt_names_work(self, code: str, expected: Any) -> None:
        """Each base the prompt lists is accepted at the first attempt."""
        _states(
            "`typing.NamedTuple`, `TypedDict`, `Generic[T]`, `Protocol`, `collections.Counter`",
            "`json.JSONEncoder` and `json.JSONDecoder`",
        )
        outcome, _, calls = _run(code)
        assert (outcome.value, calls) == (expected, 1)

    def test_another_library_base_is_refused(self) -> None:
        """A library class the prompt does not list is refused as a base (the call is retried)."""
        _states("other library classes are refused as bases")
        outcome, _, calls = _run("import csv\nclass R(csv.DictReader):\n    pass\nresult = 1")
        assert (outcome.value, calls) == ("retried", 2)

    def test_the_main_guard_runs(self) -> None:
        """A program under ``if __name__ == "__main__":`` runs as a script would."""
        _states('`__name__` is `"__main__"`')
        code = (
            'def main():\n    return args[0] * 2\nif __name__ == "__main__":\n    result = main()'
        )
        assert _run(code, 21)[0].value == 42


class TestResult:
    """ADR 0043 as the prompt states it."""

    def test_global_in_a_helper_works(self) -> None:
        """A helper rebinding a top-level counter with `global` works as in a module."""
        _states("`global` and `nonlocal` in helper functions work as in a module.")
        code = (
            "count = 0\ndef inc():\n    global count\n    count += 1\ninc()\ninc()\nresult = count"
        )
        assert _run(code)[0].value == 2

    def test_last_expression_is_the_result(self) -> None:
        """`main()` as the last statement gives its value."""
        _states("its last statement is an expression (`main()`), that expression's value")
        assert _run("def main():\n    return 42\nmain()")[0].value == 42

    def test_definitions_only_are_refused(self) -> None:
        """A program that defines main and never calls it is retried."""
        _states("A program made only of definitions that never calls them is refused")
        outcome, _, calls = _run("def main():\n    return 42\n")
        assert (outcome.value, calls) == ("retried", 2)


class TestPlainData:
    """One rule for results and memory, as the prompt states it."""

    @pytest.mark.parametrize(
        ("code", "expected"),
        [
            ("result = {1, 2}", {1, 2}),
            ("result = (1, 'a')", (1, "a")),
            ("import datetime\nresult = datetime.date(2024, 1, 2)", datetime.date(2024, 1, 2)),
            ("from decimal import Decimal\nresult = Decimal('1.5')", decimal.Decimal("1.5")),
            ("from fractions import Fraction\nresult = Fraction(1, 3)", fractions.Fraction(1, 3)),
            ("result = b'x'", b"x"),
            ("result = {'a': 1, 'b': 2}.keys()", ["a", "b"]),
        ],
        ids=["set", "tuple", "date", "decimal", "fraction", "bytes", "dict-view"],
    )
    def test_kept_and_converted_values(self, code: str, expected: Any) -> None:
        """Each listed type comes back as it is; a dict view becomes a list."""
        _states(
            "tuples, sets, str, bytes, int, float (NaN and infinity included)",
            "`Decimal`, `Fraction`, `range` and `datetime` dates",
            "dict views (`d.keys()`, `d.items()`) become lists",
        )
        outcome = _run(code)[0]
        assert (outcome.value, type(outcome.value)) == (expected, type(expected))

    def test_nan_passes(self) -> None:
        """float('nan') is a result, not a refusal."""
        assert math.isnan(_run("result = float('nan')")[0].value)

    def test_memory_follows_the_same_rule(self) -> None:
        """A set and a date written to context are kept as they are."""
        _states("for the result, `context`, `remember()` and arguments to tools alike")
        code = "import datetime\ncontext['s'] = {1}\ncontext['d'] = datetime.date(2024, 1, 2)\n1"
        _, agent, _ = _run(code)
        memory = agent.runtime_context
        assert (memory["s"], memory["d"]) == ({1}, datetime.date(2024, 1, 2))

    @pytest.mark.parametrize(
        "code",
        [
            "class A:\n    pass\nresult = A()",
            "def f():\n    return 1\ncontext['f'] = f\nresult = 1",
            "result = (i for i in range(3))",
        ],
        ids=["own-instance", "function-in-memory", "generator"],
    )
    def test_refused_values(self, code: str) -> None:
        """An own instance, a function in memory and a generator are refused (retried)."""
        _states("Functions, classes, modules, iterators and generators, and instances of classes")
        outcome, agent, calls = _run(code)
        assert (outcome.value, calls, "f" in agent.runtime_context) == ("retried", 2, False)


class TestErrorsAndOptions:
    """Open error types and delegate options as the prompt states them."""

    def test_domain_error_is_an_answer(self) -> None:
        """A snake_case domain error is returned at once, with no retry."""
        _states("Domain errors are open: any snake_case type", "`division_by_zero`")
        code = (
            "result = Outcome.error(error_type='division_by_zero', error_message='b is 0', "
            "retriable=False)"
        )
        outcome, _, calls = _run(code)
        assert (outcome.error_type, outcome.error_message, calls) == (
            "division_by_zero",
            "b is 0",
            1,
        )

    def test_host_only_delegate_option_is_refused(self) -> None:
        """delegate(..., model=...) from code is refused and retried."""
        _states("a host-only option (log, provider, model,")
        outcome, _, calls = _run("h = delegate('helper', model='x')\nresult = h.run().value")
        assert (outcome.value, calls) == ("retried", 2)

    def test_unknown_delegate_option_is_ignored(self) -> None:
        """delegate(..., colour=...) works: unknown options are ignored."""
        _states("options the runtime does not know are ignored")
        outcome, _, calls = _run("h = delegate('helper', colour='blue')\nresult = h.run().value")
        assert (outcome.value, calls) == (1, 2)


class TestPersistence:
    """What the prompt says about reuse, checked against the store."""

    def test_own_knowledge_quoting_its_input_is_not_reused(self, tmp_path: Path) -> None:
        """A translation quoting its input is generated again for another input."""
        _states("quote that input in the code and do not read `args`/`kwargs`")
        provider = ScriptedProvider(
            {("t", "translate"): ["source = 'hello'\nresult = 'hola'", "result = 'adios'"]}
        )
        agent = Agent("t", provider=provider, log=False, toolstore_root=tmp_path)
        values = [agent.translate("hello").value, agent.translate("bye").value]
        assert (values, provider.calls) == (["hola", "adios"], 2)

    def test_program_reading_args_is_reused(self, tmp_path: Path) -> None:
        """A program reading args runs again for other arguments without a new request."""
        _states("runs again, without being rewritten, for later calls of this method")
        provider = ScriptedProvider({("t", "double"): "result = args[0] * 2"})
        agent = Agent("t", provider=provider, log=False, toolstore_root=tmp_path)
        values = [agent.double(2).value, agent.double(5).value]
        assert (values, provider.calls) == ([4, 10], 1)


class TestEnvironment:
    """Imports and memory lifetime as the prompt states them."""

    def test_import_outside_the_list_is_refused(self) -> None:
        """import os is refused (the call is retried)."""
        _states("Nothing else (no os, sys, subprocess, socket, pathlib, open()).")
        outcome, _, calls = _run("import os\nresult = os.getcwd()")
        assert (outcome.value, calls) == ("retried", 2)

    def test_listed_import_works(self) -> None:
        """A module from the allowed list imports and works."""
        _states("Allowed imports: ", "heapq")
        assert _run("import heapq\nresult = heapq.nsmallest(2, [5, 1, 3])")[0].value == [1, 3]

    def test_context_lives_with_the_agent_object_only(self, tmp_path: Path) -> None:
        """A new agent of the same role starts with empty working memory."""
        _states("`context` lives as long as this agent object, in this process only")
        provider = ScriptedProvider({("t", "note"): "context['seen'] = True\nresult = 1"})
        first = Agent("t", provider=provider, log=False, toolstore_root=tmp_path)
        first.note()
        second = Agent("t", provider=provider, log=False, toolstore_root=tmp_path)
        assert ("seen" in first.runtime_context, "seen" in second.runtime_context) == (True, False)


class TestOutcomeRules:
    """The request guide's rules for a returned Outcome, as the runtime applies them."""

    def _guide(self) -> str:
        provider = ScriptedProvider({("t", "run"): "result = 1"})
        Agent("t", provider=provider, log=False, toolstore_root=None).run()
        request = provider.requests[0]
        return request.system_prompt + request.user_prompt

    def test_the_guide_states_the_limits_the_runtime_applies(self) -> None:
        """The numbers the prompt gives are MAX_ERROR_TYPE_CHARS and MAX_ERROR_MESSAGE_CHARS."""
        from recurgent.outcome import MAX_ERROR_MESSAGE_CHARS, MAX_ERROR_TYPE_CHARS

        guide = self._guide()

        assert (MAX_ERROR_TYPE_CHARS, MAX_ERROR_MESSAGE_CHARS) == (64, 10_000)
        assert "short snake_case identifier (at most 64 characters)" in guide
        assert "error_message plain text (at most 10,000 characters)" in guide

    @pytest.mark.parametrize(("length", "kept"), [(64, True), (65, False)])
    def test_an_error_type_at_the_limit_is_kept(self, length: int, kept: bool) -> None:
        """A 64-character identifier is the answer's type; 65 characters is refused."""
        error_type = "e" * length
        code = f"return Outcome.error(error_type={error_type!r}, error_message='no')"

        outcome, _, _ = _run(code)

        assert (outcome.error_type == error_type) is kept

    def test_own_outcome_names_the_call_and_a_tools_keeps_the_tools(self) -> None:
        """One the program builds is this call's; a tool's answer passed on stays the tool's."""
        own, _, _ = _run("return Outcome.ok(5)")
        passed, _, _ = _run("return delegate('helper').run()")

        assert (own.value, own.tool_role, own.method_name) == (5, "t", "run")
        assert (passed.value, passed.tool_role, passed.method_name) == (1, "helper", "run")
