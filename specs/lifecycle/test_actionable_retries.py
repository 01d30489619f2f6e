"""Actionable retries (issue 13): feedback quotes the offending line and names a concrete fix."""

from __future__ import annotations

from pathlib import Path

import pytest

from recurgent._lifecycle._lanes import last_cause, offending_line
from specs.lifecycle.support import FIXED, last_entry, scripted, tag

RETRY_TAIL = (
    "Retry 2/2. Return a valid structured program with a non-empty `code` string (and optional "
    "`dependencies` list)."
)


def _retry_block(prompt: str) -> str:
    """The generation-retry block appended to a prompt."""
    return prompt[prompt.index("IMPORTANT: Previous generation failed") :]


class TestGenerationFeedback:
    """A refused reply is retried with its line quoted and a correction for its construct."""

    def test_dunder_call_refused_at_compile_time(self) -> None:
        """x.__len__() is quoted with the builtin-function fix."""
        agent, provider = scripted(["items = [1, 2]\nresult = items.__len__()", FIXED])

        outcome = agent.run()

        block = _retry_block(provider.requests[1].user_prompt)
        assert outcome.value == "fixed"
        assert block.startswith(
            "IMPORTANT: Previous generation failed: Generated code breaks the sandbox policy: "
            'Line 2: "__len__" is an invalid attribute name because it starts with "_".\n'
            "Offending line: line 2: result = items.__len__()\n"
            "Required correction: do not use dunder names: call len(x), str(x), iter(x) instead "
            "of x.__len__() and the like; only x.__class__, __name__, __doc__ and __dict__ may be "
            "read, and your own classes may define __init__, __repr__ and similar methods in the "
            "class body\n" + RETRY_TAIL
        )

    def test_syntax_error_quotes_the_line(self) -> None:
        """An unclosed bracket is quoted with the complete-code fix."""
        agent, provider = scripted(["total = 1\nresult = (total,\n", FIXED])

        agent.run()

        block = _retry_block(provider.requests[1].user_prompt)
        assert block.startswith(
            "IMPORTANT: Previous generation failed: Generated code has invalid Python syntax in "
            "run: line 2: '(' was never closed\n"
            "Offending line: line 2: result = (total,\n"
            "Required correction: return complete, valid Python: close every bracket and string, "
            "indent each block consistently, and send code only (no prose outside comments)\n"
        )

    def test_forgotten_result_names_the_fix(self) -> None:
        """A program of definitions only is told to end with result = main(...)."""
        agent, provider = scripted(["def main():\n    return 42\n", FIXED])

        agent.run()

        block = _retry_block(provider.requests[1].user_prompt)
        assert block.startswith(
            "IMPORTANT: Previous generation failed: Generated code produces no result: the program "
            "defines main but never calls it and never sets result (it ends at line 2); end with "
            "`result = main(...)`\nOffending line: line 2: return 42\n"
            "Required correction: end the program with `result = main(...)` (or assign `result` "
            "directly) so the call returns a value\n"
        )

    @pytest.mark.parametrize(
        ("code", "line", "correction"),
        [
            (
                "x = 1\nexec('x = 2')\nresult = x",
                "line 2: exec('x = 2')",
                "do not call exec(), eval() or compile(): write the logic as ordinary code in the "
                "program; to read a value from text use json.loads(), int() or float()",
            ),
            (
                "x = 1\nasync def f():\n    return 1\nresult = x",
                "line 2: async def f():",
                "write synchronous code: no async def, await, async for or async with; handle "
                "calls and urllib.request.urlopen block until they are done",
            ),
            (
                "from math import *\nresult = pi",
                "line 1: from math import *",
                "import the module (import math) or name what you use (from math import sqrt, "
                "pi) instead of `from module import *`",
            ),
        ],
    )
    def test_policy_refusals_name_the_line_and_a_specific_fix(
        self, code: str, line: str, correction: str
    ) -> None:
        """exec, async def and a star import are each quoted with a fix of their own (ADR 0100)."""
        agent, provider = scripted([code, FIXED])

        agent.run()

        block = _retry_block(provider.requests[1].user_prompt)
        assert block.split("\n")[1:3] == [
            f"Offending line: {line}",
            f"Required correction: {correction}",
        ]

    def test_refusal_is_recorded_with_feedback_injected(self, log_path: Path) -> None:
        """The refused reply is an attempt failure of stage generation, fed back to the retry."""
        agent, _ = scripted(["result = [].__len__()", FIXED], log=log_path)

        agent.run()

        entry = last_entry(log_path)
        assert [
            (f["stage"], f["error_class"], f["retry_feedback_injected"])
            for f in entry["attempt_failures"]
        ] == [("generation", "InvalidCodeError", True)]
        assert (entry["retry_feedback_injected"], entry["generation_attempt"]) == (True, 2)

    def test_last_refusal_is_recorded_without_feedback(self, log_path: Path) -> None:
        """When the round is spent, the last refusal is recorded as not fed back."""
        agent, _ = scripted(["result = [].__len__()"] * 2, log=log_path)

        outcome = agent.run()

        entry = last_entry(log_path)
        assert outcome.error_type == "invalid_code"
        assert [(f["stage"], f["retry_feedback_injected"]) for f in entry["attempt_failures"]] == [
            ("generation", True),
            ("generation", False),
        ]


class TestLaneFeedback:
    """Execution and guardrail feedback quote the line the sandbox reports."""

    def test_zero_division_suggests_a_domain_error(self) -> None:
        """A ZeroDivisionError is quoted and answered with an open domain error type."""
        agent, provider = scripted(["a = args[0]\nresult = a / args[1]", FIXED])

        agent.run(1, 0)

        prompt = provider.requests[1].user_prompt
        assert (tag(prompt, "failure_location"), tag(prompt, "required_correction")) == (
            "line 2: result = a / args[1]",
            "check the divisor before dividing; when the caller asked to divide by zero, return "
            'Outcome.error(error_type="division_by_zero", error_message=..., retriable=False)',
        )

    def test_name_error_mentions_global(self) -> None:
        """A NameError gets the define-before-use fix, naming `global` for helpers."""
        agent, provider = scripted(["result = undefined_total + 1", FIXED])

        agent.run()

        prompt = provider.requests[1].user_prompt
        assert (tag(prompt, "failure_location"), tag(prompt, "required_correction")) == (
            "line 1: result = undefined_total + 1",
            "define every name before reading it: assign variables first and import the modules "
            "you use; a helper that rebinds a top-level name declares it `global`",
        )

    def test_lane_failure_records_feedback_injected(self, log_path: Path) -> None:
        """An execution failure that is repaired is logged as fed back."""
        agent, _ = scripted(["result = [1][3]", FIXED], log=log_path)

        agent.run()

        [failure] = last_entry(log_path)["attempt_failures"]
        assert (failure["stage"], failure["retry_feedback_injected"]) == ("execution", True)


class TestHelpers:
    """The quoting helpers bound what they quote."""

    def test_offending_line_cases(self) -> None:
        """Unknown, out-of-range, normal and over-long lines are rendered as pinned."""
        long_line = "x = '" + "a" * 300 + "'"
        assert [
            offending_line(None, 1),
            offending_line("a = 1", None),
            offending_line("a = 1", 4),
            offending_line("a = 1\n    b  =  2", 2),
            offending_line(long_line, 1),
        ] == ["unknown", "unknown", "line 4", "line 2: b = 2", "line 1: " + long_line[:197] + "..."]

    def test_last_cause_is_one_bounded_sentence(self) -> None:
        """Whitespace is collapsed, a trailing period is not doubled, the text is capped."""
        assert last_cause("boom:\n  it broke.") == "Last cause: boom: it broke."
        assert last_cause("x" * 400) == "Last cause: " + "x" * 297 + "..."


class TestOutcomeFeedback:
    """A retriable error the program returned is answered with the domain-error choice."""

    def test_retriable_domain_error_feedback(self) -> None:
        """With no Python error behind it, the correction offers retriable=False or a fix."""
        agent, provider = scripted(
            [
                "result = Outcome.error(error_type='fetch_failed', error_message='try again', "
                "retriable=True)",
                FIXED,
            ]
        )

        agent.run()

        prompt = provider.requests[1].user_prompt
        assert (tag(prompt, "root_error_class"), tag(prompt, "required_correction")) == (
            "OutcomeError",
            "if this error is the right answer for these inputs, return it with retriable=False "
            "(a domain error such as invalid_input is an answer); otherwise fix the code path "
            "that produced it so the call succeeds",
        )


class TestGuardrailFeedback:
    """A dunder walk is answered with a reading fix, not the attach-functions one."""

    def test_dunder_walk_gets_the_reading_correction(self) -> None:
        """x.__class__.__bases__ is quoted and told which dunders may be read."""
        agent, provider = scripted(["kind = ().__class__.__bases__\nresult = 1", FIXED])

        outcome = agent.run()

        prompt = provider.requests[1].user_prompt
        assert outcome.value == "fixed"
        assert (
            tag(prompt, "violation_location"),
            tag(prompt, "required_correction"),
        ) == (
            "line 1: kind = ().__class__.__bases__",
            "read only x.__class__, __name__, __qualname__, __doc__ and __dict__ of your own "
            "objects; walking further (__bases__, __subclasses__, __globals__, __mro__) is "
            "refused: use type(x), isinstance(x, T) and the allowed modules instead",
        )
