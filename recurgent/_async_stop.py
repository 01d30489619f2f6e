"""The attempt's stop delivered to its thread, and the host sections shielded from it (ADR 0089).

Generated code checks its deadline at its ticks; the library code it calls (pure-Python standard
library functions, whose loops never tick) does not. So the watchdog also *delivers* an attempt's
stop to the attempt's thread as an asynchronous exception (``PyThreadState_SetAsyncExc``): it is
raised at the thread's next bytecode boundary, in whatever Python frame runs, library or not, and
delivered again every watchdog period while the thread is still inside the attempt, so code that
catches it (``except BaseException`` in a library loop) meets it again. One C call still runs to
its end: those are bounded by the size caps (ADR 0022, 0092).

An :class:`Interrupter` is the target of one attempt: armed by :meth:`Interrupter.run` around the
program's main function, on the thread that runs it (the caller's, an executor's, a nested
attempt's for a delegated call: each thread keeps its own innermost attempt). Delivery and
disarming are serialized by the interrupter's lock, and disarming consumes a stop that was
delivered but not yet raised, so once :meth:`Interrupter.run` returns no stop is pending.

Host code the attempt's thread runs on the attempt's behalf (forwarded calls, host functions
memory holds, imports, HTTP requests) runs in a :func:`host_section`: the watchdog does not
deliver while one is open, and delivers once it closes. Nor while the thread runs the import
machinery, ``threading`` or ``logging``: an exception between two of their bytecodes could
leave a lock held. Locks in this module are only ever taken with ``with`` (whose C-level
``__enter__`` is followed by no check for pending exceptions), never by ``acquire()``.

This module depends on the standard library only: the journal (host functions in memory) and
the sandbox both use it.
"""

from __future__ import annotations

import _weakrefset
import importlib
import logging
import queue
import sys
import threading
import weakref
from collections.abc import Callable
from typing import Any

__all__ = ["Interrupter", "host_section", "innermost"]


class _Local(threading.local):
    # A class default, so reading it is an attribute load (no call, hence no point at which a
    # pending stop could be raised) even on a thread that never ran an attempt.
    current: Interrupter | None = None


_local = _Local()


class _Flush(BaseException):
    """Replaces a pending stop on the thread that consumes it (never leaves this module)."""


_Setter = Callable[[int, Any], int]
_setter: _Setter | bool | None = None


def _async_setter() -> _Setter | None:
    """``PyThreadState_SetAsyncExc`` through a private ctypes prototype (``None`` if absent)."""
    global _setter  # one prototype per process, made on first delivery
    if _setter is None:
        try:
            import ctypes

            prototype = ctypes.PYFUNCTYPE(ctypes.c_int, ctypes.c_ulong, ctypes.py_object)
            _setter = prototype(("PyThreadState_SetAsyncExc", ctypes.pythonapi))
        except (ImportError, AttributeError, OSError, ValueError):
            _setter = False
    return _setter or None  # type: ignore[return-value]


def _consume_pending() -> None:
    """Replace any stop pending for this thread with a flush, and raise and catch it here."""
    setter = _async_setter()
    if setter is None:
        return
    try:
        setter(threading.get_ident(), _Flush)
        for _ in (0, 1):  # a backward jump: the flush is raised here at the latest
            pass
    except _Flush:
        pass


def _unsafe_files() -> frozenset[str]:
    files = {"<frozen importlib._bootstrap>", "<frozen importlib._bootstrap_external>"}
    # _weakrefset: a WeakSet's removal callback runs wherever the collector frees its member,
    # on the attempt's thread too; a stop raised in a callback is "ignored" onto the host's
    # unraisable hook (and can leave the set's pending removals half done).
    for module in (threading, logging, queue, weakref, _weakrefset, importlib):
        path = getattr(module, "__file__", None)
        if isinstance(path, str):
            files.add(path)
    return frozenset(files)


# Computed at import: the watchdog must not import anything while it holds an interrupter's
# lock (the attempt's thread may hold an import lock and wait for that one).
_UNSAFE_FILES = _unsafe_files()


def _in_unsafe_code(thread: int) -> bool:
    """Whether ``thread`` runs, inside its attempt, code an exception between two bytecodes
    could leave holding a lock. Frames below the attempt's own start are the host's: the
    walk stops there (every thread but the main one starts inside ``threading``)."""
    frame = sys._current_frames().get(thread)
    while frame is not None:
        code = frame.f_code
        if code is _RUN_CODE:
            return False
        if code.co_filename in _UNSAFE_FILES:
            return True
        frame = frame.f_back
    return False


class Interrupter:
    """The target of one attempt's asynchronous stop: its thread, while its program runs.

    Attributes are set under ``_lock`` by the attempt's thread (arming, shields) and read under
    it by the watchdog (:meth:`deliver`).
    """

    __slots__ = ("_armed", "_delivered", "_lock", "_outer", "_shield", "_thread")

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._thread = 0
        self._armed = False
        self._shield = 0
        self._delivered = False
        self._outer: Interrupter | None = None

    def run(self, main: Callable[[], Any]) -> Any:
        """``main()`` on this thread with the attempt's stop deliverable to it."""
        try:
            thread = threading.get_ident()
            with self._lock:
                self._thread = thread
                self._outer = _local.current
                _local.current = self
                self._armed = True
            return main()
        finally:
            # Disarmed here, not in a method: a stop still due could be raised on entering
            # a call, before the call disarmed anything (a finally block enters with no check).
            with self._lock:
                # No call in this body (see host_section): the state changes all or not at all.
                pending = self._delivered
                self._delivered = False
                if self._armed and _local.current is self:
                    _local.current = self._outer
                self._armed = False
            if pending:
                _consume_pending()

    def leave(self) -> None:
        """Disarm, if :meth:`run` could not: no stop is delivered from now on (idempotent)."""
        with self._lock:
            pending = self._delivered
            self._delivered = False
            if self._armed and _local.current is self:
                _local.current = self._outer
            self._armed = False
        if pending:
            _consume_pending()

    @property
    def shielded(self) -> bool:
        """Whether the attempt's thread runs a host section now (read without the lock)."""
        return self._shield > 0

    def deliver(self, stop: type[BaseException]) -> bool:
        """Raise ``stop`` in the attempt's thread, unless it left or runs shielded (watchdog)."""
        setter = _async_setter()
        if setter is None:
            return False
        with self._lock:
            if not self._armed or self._shield or _in_unsafe_code(self._thread):
                return False
            setter(self._thread, stop)
            self._delivered = True
            return True


def innermost() -> Interrupter | None:
    """The armed interrupter of the attempt innermost on this thread, if any."""
    return _local.current


class host_section:
    """``with host_section():`` host code the attempt's thread runs, shielded from its stop.

    A stop delivered just before the section opened, and not yet raised, is consumed on entry;
    the watchdog delivers it again once the section closes, if the attempt is still running.
    Outside any attempt (host code, another thread) it does nothing.
    """

    __slots__ = ("_target",)

    def __enter__(self) -> None:
        target = _local.current
        self._target = target
        if target is None:
            return
        opened = False
        try:
            with target._lock:
                # No call in this body: nothing can be raised between these statements.
                target._shield += 1
                opened = True
                pending = target._delivered
                target._delivered = False
            if pending:
                _consume_pending()
        except BaseException:
            # The stop was raised before the section opened: it is the attempt's to handle.
            if opened:
                with target._lock:
                    target._shield -= 1
            raise

    def __exit__(self, *exc: object) -> None:
        target = self._target
        if target is not None:
            with target._lock:
                target._shield -= 1


# Where an attempt starts on its thread: frames below it are the host's.
_RUN_CODE = Interrupter.run.__code__
