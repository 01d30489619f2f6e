"""The bounds of an Outcome's error fields (ADR 0059).

An ``error_type`` is a short identifier (``division_by_zero``); an ``error_message`` built by
``Outcome.error(...)`` or an error mapping is refused past the cap, and one the runtime writes
(any exception's text) is cut to it with a marker. Nothing a program puts in either field can
break a log line or flood the next prompt. :mod:`recurgent.outcome` re-exports the caps.
"""

from __future__ import annotations

import re

from recurgent.errors import InvalidOutcomeError

__all__ = [
    "ERROR_TYPE_RULE",
    "MAX_ERROR_MESSAGE_CHARS",
    "MAX_ERROR_TYPE_CHARS",
    "checked_error_message",
    "checked_error_type",
    "cut_error_message",
]

#: Longest ``error_type``: a short identifier such as ``division_by_zero`` (ADR 0059).
MAX_ERROR_TYPE_CHARS = 64
#: Longest ``error_message`` that ``Outcome.error(...)`` and error mappings accept (ADR 0059).
MAX_ERROR_MESSAGE_CHARS = 10_000
# ASCII letters, digits and underscores, with '.' and '-' inside: the runtime's own types and
# the taxonomy's domain types are snake_case; nothing here can break a log line or a prompt.
_ERROR_TYPE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.\-]*\Z")
ERROR_TYPE_RULE = (
    "error_type must be a short identifier such as 'division_by_zero' (ASCII letters, digits, "
    f"'_', '.' or '-'; at most {MAX_ERROR_TYPE_CHARS} characters)"
)


def _preview(text: str) -> str:
    """The head of a possibly huge string, for an error message."""
    if len(text) <= 40:
        return repr(text)
    return f"{text[:40]!r}... ({len(text)} characters)"


def checked_error_type(error_type: str) -> str:
    """``error_type`` itself when it is a short identifier; raise :class:`InvalidOutcomeError`."""
    if len(error_type) > MAX_ERROR_TYPE_CHARS or not _ERROR_TYPE.match(error_type):
        raise InvalidOutcomeError(f"{ERROR_TYPE_RULE}; got {_preview(error_type)}")
    return error_type


def checked_error_message(error_message: str) -> str:
    """``error_message`` itself when within the cap; raise :class:`InvalidOutcomeError`."""
    if len(error_message) > MAX_ERROR_MESSAGE_CHARS:
        raise InvalidOutcomeError(
            f"error_message has {len(error_message)} characters; an Outcome carries at most "
            f"{MAX_ERROR_MESSAGE_CHARS}: shorten it"
        )
    return error_message


def cut_error_message(error_message: str) -> str:
    """A message past the cap, cut to it with a marker (runtime errors carry any exception text)."""
    if len(error_message) <= MAX_ERROR_MESSAGE_CHARS:
        return error_message
    marker = f" [cut from {len(error_message)} characters]"
    return error_message[: MAX_ERROR_MESSAGE_CHARS - len(marker)] + marker
