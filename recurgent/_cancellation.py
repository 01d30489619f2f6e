"""Cancelling a dynamic call from another thread: the scope an awaited call runs in (ADR 0096).

``await agent.aio.method(...)`` runs the call on a thread of its own, inside a
:class:`CancelScope` held by a context variable. When the awaiting task is cancelled, the event
loop's thread calls :meth:`CancelScope.cancel`; the call's thread then stops at its next
checkpoint with :class:`CallCancelled`:

* a running program stops at its next tick (the sandbox registers its ticker with the scope, so
  a cancelled attempt stops as a timed-out one does, however its loops are written);
* a wait for a provider's reply gives up at once (the request itself is abandoned, like one
  that timed out);
* the lifecycle checks before each attempt and right before it commits memory, so a cancelled
  call commits nothing.

``CallCancelled`` derives from ``BaseException``: generated code's ``except Exception`` cannot
catch it, and the lifecycle passes it through like ``KeyboardInterrupt`` (the call is logged
as interrupted, its writes never committed). Outside an awaited call there is no scope, and
every checkpoint is one context-variable read.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import itertools
import threading
from collections.abc import Callable, Iterator

__all__ = [
    "CallCancelled",
    "CancelScope",
    "Registration",
    "current_scope",
    "enter_scope",
    "on_cancel",
    "raise_if_cancelled",
]


class CallCancelled(BaseException):
    """The task awaiting this call was cancelled; the call stops and commits nothing."""


class CancelScope:
    """The cancellation state of one awaited call and of every call it makes.

    Args:
        loop: The event loop of the awaiting task; async providers run there natively.
    """

    def __init__(self, loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.loop = loop
        self._lock = threading.Lock()
        self._cancelled = False
        self._hooks: dict[int, Callable[[], None]] = {}
        self._ids = itertools.count()

    @property
    def cancelled(self) -> bool:
        """True once :meth:`cancel` was called."""
        return self._cancelled

    def cancel(self) -> None:
        """Stop the call: every registered hook runs once, and every later checkpoint raises."""
        with self._lock:
            if self._cancelled:
                return
            self._cancelled = True
            hooks = list(self._hooks.values())
            self._hooks.clear()
        for hook in hooks:
            hook()

    def error(self) -> CallCancelled:
        """The exception a checkpoint raises."""
        return CallCancelled("the task awaiting this call was cancelled")

    def hook(self, action: Callable[[], None]) -> Registration:
        """Run ``action`` if the scope is cancelled before the registration is closed (at once
        if it already is)."""
        with self._lock:
            cancelled = self._cancelled
            key = next(self._ids)
            if not cancelled:
                self._hooks[key] = action
        if cancelled:
            action()
        return Registration(self, key)

    def _forget(self, key: int) -> None:
        with self._lock:
            self._hooks.pop(key, None)


class Registration:
    """A cancel hook, until :meth:`close` (also a context manager that closes on exit)."""

    __slots__ = ("_key", "_scope")

    def __init__(self, scope: CancelScope | None, key: int = 0) -> None:
        self._scope = scope
        self._key = key

    def close(self) -> None:
        """Forget the hook: a later cancellation does not run it."""
        if self._scope is not None:
            self._scope._forget(self._key)
            self._scope = None

    def __enter__(self) -> Registration:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_SCOPE: contextvars.ContextVar[CancelScope | None] = contextvars.ContextVar(
    "recurgent_cancel_scope", default=None
)


def current_scope() -> CancelScope | None:
    """The scope of the awaited call running in this context, or ``None``."""
    return _SCOPE.get()


@contextlib.contextmanager
def enter_scope(scope: CancelScope) -> Iterator[None]:
    """Run the block (one awaited call) inside ``scope``."""
    token = _SCOPE.set(scope)
    try:
        yield
    finally:
        _SCOPE.reset(token)


def raise_if_cancelled() -> None:
    """A checkpoint: raise :class:`CallCancelled` when the running call's scope is cancelled."""
    scope = _SCOPE.get()
    if scope is not None and scope.cancelled:
        raise scope.error()


_NO_REGISTRATION = Registration(None)


def on_cancel(action: Callable[[], None]) -> Registration:
    """Run ``action`` if the running call is cancelled before the returned registration is
    closed; outside an awaited call nothing is registered."""
    scope = _SCOPE.get()
    return _NO_REGISTRATION if scope is None else scope.hook(action)
