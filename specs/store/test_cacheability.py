"""Which generated programs may be reused (persistence.md 2.2, adapted to Python)."""

from __future__ import annotations

from typing import Any

import pytest

from recurgent import Outcome
from recurgent._store._cacheability import (
    Cacheability,
    classify,
    input_literals,
    legacy_cacheable,
)

STABLE = Cacheability(True, "stable_method_default", False)


@pytest.mark.parametrize("method", ["ask", "Ask", "chat", "discuss", "host", "HOST"])
def test_dynamic_dispatch_methods_are_never_reused(method: str) -> None:
    """ask/chat/discuss/host in any case are not cacheable, even with generic code."""
    assert classify(method, "return args[0]", ("Google",), {}, contracted=True) == Cacheability(
        False, "dynamic_dispatch_method", True
    )


@pytest.mark.parametrize("method", ["asked", "answer", "chat_log"])
def test_names_that_only_contain_a_dispatch_name_are_ordinary(method: str) -> None:
    """Only the exact names (case-insensitive) are dynamic dispatch methods."""
    assert classify(method, "return 1", (), {}, contracted=False) == STABLE


class TestInputBaked:
    """An input written into the code makes the program answer only that input."""

    def test_a_number_baked_into_code(self) -> None:
        """sqrt(32) answered by 'math.sqrt(32)' is not reusable."""
        assert classify("sqrt", "return math.sqrt(32)", (32,), {}, contracted=False) == (
            Cacheability(False, "input_baked_code", True)
        )

    def test_an_outcome_argument_is_unwrapped(self) -> None:
        """An Outcome wrapping 32 bakes like the bare 32."""
        code = "return math.sqrt(32)"
        result = classify("sqrt", code, (Outcome.ok(32),), {}, contracted=False)
        assert result.reason == "input_baked_code"

    def test_a_keyword_value_and_nested_values(self) -> None:
        """Keyword values, list items and mapping values all count; keyword names do not."""
        code = "return 'Paris weather'"
        result = classify("weather", code, (), {"city": ["x", {"k": "Paris"}]}, contracted=False)
        assert result.reason == "input_baked_code"
        assert classify("f", "return 'city'", (), {"city": 1}, contracted=False).reason == (
            "arg_ignored_code"
        )

    def test_code_that_names_args_is_reusable_even_with_the_literal(self) -> None:
        """Reading args[0] makes the program general, even if 32 also appears."""
        code = "return math.sqrt(args[0]) if args[0] != 32 else 32 ** 0.5"
        assert classify("sqrt", code, (32,), {}, contracted=False) == STABLE

    def test_python_bool_text_is_used(self) -> None:
        """A True argument bakes as 'True' (Python's str), not Ruby's 'true'."""
        assert classify("f", "return 'True'", (True,), {}, contracted=False).reason == (
            "input_baked_code"
        )
        assert classify("f", "return 'true'", (True,), {}, contracted=False).reason == (
            "arg_ignored_code"
        )

    def test_no_inputs_means_nothing_can_be_baked(self) -> None:
        """Without arguments, literal code is a stable program."""
        assert classify("answer", "return 42", (), {}, contracted=False) == STABLE


class TestArgumentsIgnored:
    """Inputs given but the code never reads them."""

    def test_a_constant_answer_is_not_reused(self) -> None:
        """``translate('hello')`` answered by ``result = 'hola'`` would answer every later call."""
        assert classify("translate", "result = 'hola'", ("hello",), {}, contracted=False) == (
            Cacheability(False, "arg_ignored_code", True)
        )

    @pytest.mark.parametrize(
        "code",
        [
            "context['memory'] = context.get('memory', 0) + 1\nreturn context['memory']",
            "return context.get('value')",
            "context.setdefault('n', 0)\nreturn 1",
            "return memory['value']",
            "return memory.get('value')",
        ],
    )
    def test_memory_only_code_with_inputs(self, code: str) -> None:
        """Each way of touching memory without args/kwargs is arg_ignored_code."""
        assert classify("sqrt", code, (9,), {}, contracted=False) == Cacheability(
            False, "arg_ignored_code", True
        )

    def test_memory_code_that_reads_kwargs_is_reusable(self) -> None:
        """Naming kwargs makes the program use its inputs."""
        code = "context['v'] = kwargs['n']\nreturn context['v']"
        assert classify("setv", code, (), {"n": 9}, contracted=False) == STABLE

    def test_memory_code_without_inputs_is_reusable(self) -> None:
        """A memory-only program called without inputs is stable."""
        assert classify("total", "return context.get('value')", (), {}, contracted=False) == STABLE


def test_contracted_agents_are_delegated_contract_tools() -> None:
    """With a contract and generic code the reason is delegated_contract_tool."""
    assert classify("fetch", "return args[0]", ("u",), {}, contracted=True) == Cacheability(
        True, "delegated_contract_tool", False
    )


def test_input_literals_walks_and_deduplicates() -> None:
    """Strings are stripped, numbers stringified, None and blanks skipped, repeats dropped."""
    args: tuple[Any, ...] = (" a ", 2, 2.5, None, "", ["a", (3,)], {"k": False})
    assert input_literals(args, {"x": {"y": "z"}}) == ["a", "2", "2.5", "3", "False", "z"]


@pytest.mark.parametrize(("method", "expected"), [("add", True), ("ask", False), ("Chat", False)])
def test_legacy_records_follow_the_dispatch_rule(method: str, expected: bool) -> None:
    """A record without a boolean cacheable is reusable unless it is a dispatch method."""
    assert legacy_cacheable(method) is expected
