"""Call frames: trace, call and parent ids and depth of the dynamic call running on this context."""

from __future__ import annotations

import contextlib
import contextvars
import secrets
from collections.abc import Iterator
from dataclasses import dataclass

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


@contextlib.contextmanager
def enter_frame(trace_id: str) -> Iterator[CallFrame]:
    """Push a new frame for a call of an agent whose trace id is ``trace_id``."""
    stack = _stack.get()
    parent = stack[-1] if stack else None
    frame = CallFrame(
        trace_id=trace_id,
        call_id=secrets.token_hex(8),
        parent_call_id=parent.call_id if parent else None,
        depth=len(stack),
    )
    token = _stack.set((*stack, frame))
    try:
        yield frame
    finally:
        _stack.reset(token)
