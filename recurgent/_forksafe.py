"""Locks a forked child can take: each is made unheld again in the child (ADR 0139).

A fork copies a lock as it is. When another thread of the parent held it at that moment (the
provider pool's worker finishing a job, the watchdog visiting, a thread of the user's keeping an
answer), the child has no copy of that thread and the lock stays held for ever: the child's first
call that needs it blocks. Every lock that lives longer than one call comes from here; one
at-fork hook re-makes all of them unheld in the child, as CPython does for its own locks
(``threading``, ``logging``). A lock that lives for one call only needs none of this.
"""

from __future__ import annotations

import os
import threading
import weakref
from typing import Any

__all__ = ["fork_safe_condition", "fork_safe_lock", "fork_safe_rlock"]

# Weak: a lock goes when its owner does; the set never keeps an agent's lock alive.
_LOCKS: weakref.WeakSet[Any] = weakref.WeakSet()


def fork_safe_lock() -> threading.Lock:
    """A ``threading.Lock`` that a forked child finds unheld."""
    lock = threading.Lock()
    _LOCKS.add(lock)
    return lock


def fork_safe_rlock() -> threading.RLock:
    """A ``threading.RLock`` that a forked child finds unheld and unowned."""
    lock = threading.RLock()
    _LOCKS.add(lock)
    return lock


def fork_safe_condition(lock: threading.Lock | None = None) -> threading.Condition:
    """A ``threading.Condition`` (over ``lock``, else its own RLock) that a forked child finds
    unheld and with no waiters: they were threads of the parent."""
    condition = threading.Condition(lock)
    _LOCKS.add(condition)
    return condition


def _reinit_in_child() -> None:
    # The child has one thread, this one: nothing else can hold or wait on these locks now.
    for lock in list(_LOCKS):
        # CPython's own hook for this (3.9+), used by threading and logging after a fork.
        reinit = getattr(lock, "_at_fork_reinit", None)
        if reinit is not None:
            reinit()


os.register_at_fork(after_in_child=_reinit_in_child)
