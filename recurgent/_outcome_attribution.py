"""Which call an Outcome names: the one whose generated code is running (ADR 0059).

The sandbox enters :func:`outcome_context` around a program's run, so ``Outcome.ok(...)`` and
``Outcome.error(...)`` called from that code name the call that ran without the code naming
itself; outside any run they name an unknown tool and method. :mod:`recurgent.outcome`
re-exports :func:`outcome_context`.
"""

from __future__ import annotations

import contextlib
import contextvars
from collections.abc import Iterator

__all__ = ["UNKNOWN_METHOD", "UNKNOWN_ROLE", "attribution", "outcome_context"]

UNKNOWN_ROLE = "unknown_tool"
UNKNOWN_METHOD = "unknown_method"

# Role and method of the call whose generated code is running, so Outcome constructors called
# from that code are attributed without the code naming itself.
_current_call: contextvars.ContextVar[tuple[str, str] | None] = contextvars.ContextVar(
    "recurgent_outcome_context", default=None
)


@contextlib.contextmanager
def outcome_context(role: str, method_name: str) -> Iterator[None]:
    """Attribute Outcomes built inside the block to ``role.method_name``."""
    token = _current_call.set((role, method_name))
    try:
        yield
    finally:
        _current_call.reset(token)


def attribution(tool_role: str | None, method_name: str | None) -> tuple[str, str]:
    """The role and method given, else the running call's, else the unknown ones."""
    current = _current_call.get()
    role = tool_role or (current[0] if current else UNKNOWN_ROLE)
    method = method_name or (current[1] if current else UNKNOWN_METHOD)
    return role, method
