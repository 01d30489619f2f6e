"""Reading SDK replies safely: JSON objects out of text, token counts, secrets kept out of messages.

SDK reply models are built from whatever JSON a server sends (compatible servers omit or vary
fields), so everything here reads attributes defensively and returns plain data.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from recurgent.errors import InvalidCodeError
from recurgent.program import fenced_blocks, reply_from_text

__all__ = [
    "SNIPPET_CHARS",
    "Redactor",
    "json_object",
    "no_program",
    "served_model",
    "token_counts",
]

SNIPPET_CHARS = 200
_SECRET_PATTERNS = (
    re.compile(r"\bsk-[A-Za-z0-9_-]+"),
    re.compile(r"\bBearer\s+[^\s\"',;]+", re.IGNORECASE),
)


# A configured key shorter than this is not replaced verbatim: a placeholder such as "x" for a
# local server would otherwise mangle every word containing it. Real keys are far longer.
_MIN_SECRET_CHARS = 8


class Redactor:
    """Removes the configured key, ``sk-...`` keys and bearer tokens from text.

    Args:
        secret: The key the provider sends, if known.
    """

    def __init__(self, secret: str | None) -> None:
        self._secret = secret if secret and len(secret) >= _MIN_SECRET_CHARS else None

    def __call__(self, text: str) -> str:
        """``text`` with every secret replaced by ``[REDACTED]``."""
        if self._secret:
            text = text.replace(self._secret, "[REDACTED]")
        for pattern in _SECRET_PATTERNS:
            text = pattern.sub("[REDACTED]", text)
        return text


def json_object(text: object, source: str, *, service: str, redact: Redactor) -> dict[str, Any]:
    """Parse ``text`` as a JSON object, or raise the retriable "no program" error.

    Args:
        text: The reply text holding the program.
        source: What ``text`` is, for the message (``"tool call arguments"``).
        service: ``"OpenAI"`` or ``"Anthropic"``.
        redact: Applied to the message.

    Raises:
        InvalidCodeError: ``text`` is not a string holding a JSON object.
    """
    if not isinstance(text, str):
        raise no_program(service, f"no {source}", redact)
    try:
        parsed = json.loads(text)
    except (ValueError, RecursionError):
        parsed = None
    if isinstance(parsed, dict):
        return parsed
    # Local models on the OpenAI-compatible path answer in Markdown: the JSON object in a
    # fence (with prose around it), or the program itself in a fence. Both are the reply; the
    # runtime unwraps the code's fence when it validates the program (ADR 0100).
    found = reply_from_text(text)
    if isinstance(found, Mapping):
        return dict(found)
    if fenced_blocks(text):
        return {"code": text}
    raise no_program(service, f"no JSON object in {source}: {text[:SNIPPET_CHARS]!r}", redact)


def no_program(service: str, detail: str, redact: Redactor) -> InvalidCodeError:
    """The ``invalid_code`` error for a reply that holds no program; the lifecycle retries it."""
    return InvalidCodeError(redact(f"No program in {service} response: {detail}"))


def _count(value: object) -> int | None:
    return value if type(value) is int and value >= 0 else None


def token_counts(source: object, fields: Mapping[str, str]) -> dict[str, int]:
    """Read token counts from an SDK usage object into a plain dict.

    Args:
        source: The SDK's usage object (or ``None``).
        fields: Our key -> the attribute path on ``source``, dotted for nested objects
            (``"prompt_tokens_details.cached_tokens"``).

    Returns:
        The counts that are present and are non-negative ints.
    """
    counts: dict[str, int] = {}
    for key, path in fields.items():
        value: object = source
        for part in path.split("."):
            value = getattr(value, part, None)
        count = _count(value)
        if count is not None:
            counts[key] = count
    return counts


def served_model(reply: object, requested: str) -> str:
    """The model that wrote an SDK reply: the ``model`` the server names (OpenAI and Anthropic
    name the dated snapshot that served it), else the one the request named (ADR 0077)."""
    served = getattr(reply, "model", None)
    if isinstance(served, str) and served.strip():
        return served.strip()[:SNIPPET_CHARS]
    return requested
