"""Parsed store files kept per process, valid while the file on disk is the same file (ADR 0054).

A persisted call used to read, parse and validate its artifact on every call. The cache keeps
what was parsed with the :data:`~recurgent._store._files.Identity` of the file it came from;
a lookup whose ``stat`` still matches reuses it. Store writes always rename a new file into
place, so any write (this process's, another process's, a quarantine, a deletion) changes the
identity and the next lookup reads the file again. Thread-safe; a forked child starts empty.

A cache may take that ``stat`` at most once per ``recheck_seconds`` for a path (ADR 0138): a
change this process makes to any store file (:data:`~recurgent._store._files.CHANGES`) is seen
at once, a change made elsewhere within that window.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Generic, TypeVar

from recurgent._forksafe import fork_safe_lock
from recurgent._store._files import CHANGES, Identity, identity_of

__all__ = ["IdentityCache"]

T = TypeVar("T")


class _Entry(Generic[T]):
    """One cached value, the file identity it came from, and when that identity was last seen."""

    __slots__ = ("changes", "checked", "identity", "path_text", "value")

    def __init__(self, identity: Identity, value: T, path_text: str) -> None:
        self.identity = identity
        self.value = value
        # The path's text: the check of every get stats it without the two Python-level calls
        # that turn a Path into text.
        self.path_text = path_text
        # When a stat last found the file unchanged, and this process's change count then
        # (-1: never checked since it was read, so the first get stats).
        self.checked = 0.0
        self.changes = -1


class IdentityCache(Generic[T]):
    """Values parsed from files, each valid while its file keeps the identity it was read with.

    Args:
        limit: Entries kept; past it the oldest entry is dropped (a process touching thousands
            of artifacts pays a read for the old ones, never unbounded memory).
        recheck_seconds: How long a ``stat`` that found the file unchanged vouches for it
            (``0``: every get stats the file).
        clock: Monotonic seconds for that window (``time.monotonic`` when omitted).
    """

    def __init__(
        self,
        limit: int = 512,
        *,
        recheck_seconds: float = 0.0,
        clock: Callable[[], float] | None = None,
    ) -> None:
        self._limit = limit
        self._recheck = recheck_seconds
        self._clock = clock if clock is not None else time.monotonic
        self._entries: dict[Path, _Entry[T]] = {}
        self._lock = fork_safe_lock()  # unheld in a forked child (ADR 0139)
        os.register_at_fork(after_in_child=self._forget_in_child)

    def _forget_in_child(self) -> None:
        self._entries = {}

    def get(self, path: Path) -> T | None:
        """The value cached for ``path`` when the file there is still the one it came from."""
        # One dict read is atomic: the lock guards only the changes below and in put/drop.
        entry = self._entries.get(path)
        if entry is None:
            return None
        recheck = self._recheck
        if recheck:
            # Read before the stat: a change this process makes during it moves the count on.
            changes = CHANGES.value
            now = self._clock()
            if changes == entry.changes and now - entry.checked < recheck:
                return entry.value
        if identity_of(entry.path_text) != entry.identity:
            with self._lock:
                if self._entries.get(path) is entry:
                    del self._entries[path]
            return None
        if recheck:
            # Only this entry's own fields: a put or drop meanwhile replaced or removed the
            # entry, and these writes then touch nothing the cache still holds.
            entry.checked, entry.changes = now, changes
        return entry.value

    def put(self, path: Path, identity: Identity | None, value: T) -> None:
        """Remember ``value`` as parsed from the file version ``identity`` (``None``: forget)."""
        with self._lock:
            self._entries.pop(path, None)
            if identity is None:
                return
            # Another thread may have replaced the file between that read and now: the first
            # get stats it, and only a stat opens the window.
            self._entries[path] = _Entry(identity, value, os.fspath(path))
            while len(self._entries) > self._limit:
                del self._entries[next(iter(self._entries))]

    def drop(self, path: Path) -> None:
        """Forget ``path`` (its file was just changed or moved by this process)."""
        with self._lock:
            self._entries.pop(path, None)
