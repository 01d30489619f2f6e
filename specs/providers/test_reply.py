"""Specs for reading SDK replies: redaction, JSON objects and token counts."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from recurgent.errors import InvalidCodeError
from recurgent.providers._reply import Redactor, json_object, token_counts


class TestRedactor:
    def test_the_configured_key_and_known_shapes_are_redacted(self) -> None:
        """The configured key, sk- keys and bearer tokens become [REDACTED]."""
        redact = Redactor("local-key-42")

        assert redact("local-key-42 sk-abc Bearer t0k3n ok") == (
            "[REDACTED] [REDACTED] [REDACTED] ok"
        )

    def test_a_very_short_key_is_not_replaced_verbatim(self) -> None:
        """A placeholder key like 'k' would mangle words; it is left alone."""
        assert Redactor("k")("no tool_use block") == "no tool_use block"


class TestJsonObject:
    @pytest.mark.parametrize(
        ("text", "message"),
        [
            (None, "No program in S response: no tool input"),
            ("[1]", "No program in S response: no JSON object in tool input: '[1]'"),
            (
                "[" * 100_000,
                "No program in S response: no JSON object in tool input: '" + "[" * 200 + "'",
            ),
        ],
        ids=["none", "array", "deeply-nested"],
    )
    def test_anything_but_an_object_is_invalid_code(self, text: object, message: str) -> None:
        """Non-strings, non-objects and pathological nesting are invalid_code, never a crash."""
        with pytest.raises(InvalidCodeError) as excinfo:
            json_object(text, "tool input", service="S", redact=Redactor(None))

        assert excinfo.value.message == message


class TestMarkdownContent:
    """Message content of local models: fenced JSON, or a fenced program (ADR 0100)."""

    def test_fenced_json_with_a_newline_after_the_fence(self) -> None:
        """``\u0060\u0060\u0060json {...} \u0060\u0060\u0060\\n`` is the object."""
        text = '```json\n{"code": "result = 1", "dependencies": null}\n```\n'

        assert json_object(text, "message content", service="S", redact=Redactor(None)) == {
            "code": "result = 1",
            "dependencies": None,
        }

    def test_a_fenced_program_is_the_code(self) -> None:
        """Prose and a python block become the reply's code, unwrapped when validated."""
        text = "Here is the code:\n```python\nresult = 1\n```\n"

        assert json_object(text, "message content", service="S", redact=Redactor(None)) == {
            "code": text
        }

    def test_plain_prose_stays_invalid(self) -> None:
        """Text with neither JSON nor a fence is still no program."""
        with pytest.raises(InvalidCodeError, match="no JSON object in message content"):
            json_object("I cannot help.", "message content", service="S", redact=Redactor(None))


class TestTokenCounts:
    def test_nested_counts_are_read_and_junk_is_dropped(self) -> None:
        """Dotted paths reach nested counts; missing, negative, bool and str values are dropped."""
        usage = SimpleNamespace(
            prompt_tokens=10,
            completion_tokens=-1,
            details=SimpleNamespace(cached_tokens=4),
            flag=True,
            text="7",
        )

        counts = token_counts(
            usage,
            {
                "input": "prompt_tokens",
                "output": "completion_tokens",
                "cached": "details.cached_tokens",
                "flag": "flag",
                "text": "text",
                "missing": "nothing.here",
            },
        )

        assert counts == {"input": 10, "cached": 4}
