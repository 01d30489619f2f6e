"""Provider replies are bounded before any deadline: code length, syntax nodes, nesting (ADR 0025)."""

from __future__ import annotations

import ast

import pytest

from recurgent import Agent, InvalidCodeError
from recurgent._guardrails import static_violations
from recurgent._sandbox import compile_program
from recurgent.program import (
    MAX_CODE_CHARS,
    MAX_SYNTAX_DEPTH,
    MAX_SYNTAX_NODES,
    check_syntax_bounds,
    parse_code,
    parse_program,
)
from recurgent.testing import ScriptedProvider


def _list_of_nodes(total: int) -> str:
    """``x = [0, 0, ...]`` whose tree has exactly ``total`` nodes (6 fixed ones plus the zeros)."""
    return "x = [" + "0, " * (total - 6) + "]"


def _unary_depth(depth: int) -> str:
    """``x = --...-1`` whose tree is exactly ``depth`` levels deep (Module, Assign, then ops)."""
    return "x = " + "-" * (depth - 3) + "1"


class TestCaps:
    """The caps themselves, pinned at the cap and one past it."""

    def test_cap_values(self) -> None:
        """200,000 characters, 6,000 nodes, 100 levels."""
        assert (MAX_CODE_CHARS, MAX_SYNTAX_NODES, MAX_SYNTAX_DEPTH) == (200_000, 6_000, 100)

    def test_code_length_at_the_cap_is_accepted(self) -> None:
        """Exactly MAX_CODE_CHARS characters is a program."""
        code = "x = 1" + " " * (MAX_CODE_CHARS - 5)

        assert len(parse_program({"code": code}, method_name="run").code) == MAX_CODE_CHARS

    def test_code_length_one_past_the_cap_is_invalid_code(self) -> None:
        """One character more is a typed invalid_code naming the limit."""
        code = "x = 1" + " " * (MAX_CODE_CHARS - 4)

        with pytest.raises(InvalidCodeError) as raised:
            parse_program({"code": code}, method_name="run")

        assert str(raised.value) == (
            "Provider returned invalid code for run (code is 200,001 characters, over the limit "
            "of 200,000; write a shorter program that fetches or computes its data instead of "
            "embedding it)"
        )

    def test_node_count_at_the_cap_is_accepted(self) -> None:
        """A tree of exactly MAX_SYNTAX_NODES nodes passes."""
        tree = ast.parse(_list_of_nodes(MAX_SYNTAX_NODES))

        check_syntax_bounds(tree)  # raises past a cap
        assert sum(1 for _ in ast.walk(tree)) == 6000

    def test_node_count_one_past_the_cap_is_invalid_code(self) -> None:
        """One node more is refused with the limit in the message."""
        tree = ast.parse(_list_of_nodes(MAX_SYNTAX_NODES + 1))

        with pytest.raises(InvalidCodeError) as raised:
            check_syntax_bounds(tree)

        assert str(raised.value) == (
            "Generated code is too large: more than 6,000 syntax nodes; write a shorter program"
        )

    def test_depth_at_the_cap_is_accepted(self) -> None:
        """A tree exactly MAX_SYNTAX_DEPTH levels deep passes and compiles."""
        code = _unary_depth(MAX_SYNTAX_DEPTH)

        check_syntax_bounds(ast.parse(code))  # raises past a cap
        assert compile_program(code).source == code

    def test_depth_one_past_the_cap_is_invalid_code(self) -> None:
        """One level more is refused with the limit in the message."""
        with pytest.raises(InvalidCodeError) as raised:
            check_syntax_bounds(ast.parse(_unary_depth(MAX_SYNTAX_DEPTH + 1)))

        assert str(raised.value) == (
            "Generated code is nested too deeply: more than 100 levels; split long expressions "
            "into statements"
        )


class TestEveryStageChecks:
    """Parsing, static guardrails and compilation each refuse over-cap input before walking it."""

    def test_parser_overflow_is_invalid_code(self) -> None:
        """Nesting the CPython parser gives up on is a typed error, not a MemoryError."""
        with pytest.raises(InvalidCodeError) as raised:
            parse_code("x = " + "-" * 5000 + "1", where="calc.run")

        assert str(raised.value) == (
            "Generated code in calc.run is nested too deeply to parse; split long expressions "
            "into statements"
        )

    def test_parse_code_keeps_the_syntax_error_message(self) -> None:
        """A syntax error still names the line and the method."""
        with pytest.raises(InvalidCodeError) as raised:
            parse_code("x = (", where="run")

        assert str(raised.value).startswith(
            "Generated code has invalid Python syntax in run: line 1:"
        )

    def test_static_guardrails_refuse_a_huge_tree(self) -> None:
        """static_violations checks the caps before its walks."""
        with pytest.raises(InvalidCodeError, match="more than 6,000 syntax nodes"):
            static_violations(ast.parse(_list_of_nodes(MAX_SYNTAX_NODES + 1)))

    def test_compile_refuses_a_huge_tree(self) -> None:
        """compile_program checks the caps before the policy transformer runs."""
        with pytest.raises(InvalidCodeError, match="more than 6,000 syntax nodes"):
            compile_program(_list_of_nodes(MAX_SYNTAX_NODES + 1))

    def test_compile_refuses_a_long_operator_chain(self) -> None:
        """``x + x + ... + x`` 300 terms deep used to overflow the transformer's recursion."""
        with pytest.raises(InvalidCodeError, match="nested too deeply: more than 100 levels"):
            compile_program("x = 1\nresult = " + "+".join(["x"] * 300))


def _run(code: str) -> tuple[Agent, ScriptedProvider]:
    provider = ScriptedProvider({"run": code})
    return Agent("tester", provider=provider, log=False, max_generation_attempts=1), provider


class TestThroughTheLifecycle:
    """The issue's replies: 600 KB and 10 MB programs fail fast and typed; 150 KB still runs."""

    @pytest.mark.parametrize("size", [600_000, 10_000_000])
    def test_oversized_program_is_invalid_code(self, size: int) -> None:
        """The outcome is invalid_code and the message names the size and the limit."""
        agent, _ = _run(("x = 1\n" * (size // 6 + 1))[:size])

        outcome = agent.run()

        assert (outcome.error_type, outcome.error_message) == (
            "invalid_code",
            f"Provider returned invalid code for run (code is {size:,} characters, over the "
            "limit of 200,000; write a shorter program that fetches or computes its data "
            "instead of embedding it)",
        )

    def test_over_the_node_cap_is_invalid_code(self) -> None:
        """A short but node-dense reply is refused the same way."""
        agent, _ = _run(_list_of_nodes(MAX_SYNTAX_NODES + 1) + "\nresult = len(x)")

        outcome = agent.run()

        assert (outcome.error_type, outcome.error_message) == (
            "invalid_code",
            "Generated code is too large: more than 6,000 syntax nodes; write a shorter program",
        )

    def test_ordinary_150_kb_program_runs(self) -> None:
        """A program embedding a 150 KB table (about 3,000 nodes) runs as before."""
        table = {f"key{i}": f"value number {i} " * 5 for i in range(1500)}
        code = f"TABLE = {table!r}\nresult = [len(TABLE), TABLE['key7']]"
        agent, _ = _run(code)

        outcome = agent.run()

        assert len(code) > 150_000
        assert outcome.value == [1500, "value number 7 " * 5]
