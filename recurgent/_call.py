"""Call frames: trace, call and parent ids and depth of the dynamic call running on this context."""

from __future__ import annotations

import contextvars
from dataclasses import dataclass

from recurgent._ids import random_hex

__all__ = ["CallFrame", "current_frame", "enter_frame"]


@dataclass(frozen=True, slots=True)
class CallFrame:
    """Identity of one dynamic call.

    ``depth`` counts the dynamic calls already running on this thread (or asyncio task), so a
    call made from generated code is one deeper than the call that ran that code.
    """

    trace_id: str
    call_id: str
    parent_call_id: str | None
    depth: int


_stack: contextvars.ContextVar[tuple[CallFrame, ...]] = contextvars.ContextVar(
    "recurgent_call_stack", default=()
)


def current_frame() -> CallFrame | None:
    """The innermost running call, or ``None`` outside any dynamic call."""
    stack = _stack.get()
    return stack[-1] if stack else None


class enter_frame:  # lower case: read as a function, ``with enter_frame(trace_id) as frame``
    """Push a new frame for a call of an agent whose trace id is ``trace_id``.

    A class rather than a generator context manager: every dynamic call enters one, and a
    generator's set-up and tear-down cost several function calls more.
    """

    __slots__ = ("_frame", "_token")

    def __init__(self, trace_id: str) -> None:
        stack = _stack.get()
        parent = stack[-1] if stack else None
        self._frame = CallFrame(
            trace_id, random_hex(8), parent.call_id if parent else None, len(stack)
        )
        self._token = _stack.set((*stack, self._frame))

    def __enter__(self) -> CallFrame:
        return self._frame

    def __exit__(self, *exc: object) -> None:
        _stack.reset(self._token)
