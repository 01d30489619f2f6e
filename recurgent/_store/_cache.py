"""Parsed store files kept per process, valid while the file on disk is the same file (ADR 0054).

A persisted call used to read, parse and validate its artifact on every call. The cache keeps
what was parsed with the :data:`~recurgent._store._files.Identity` of the file it came from;
a lookup whose ``stat`` still matches reuses it. Store writes always rename a new file into
place, so any write (this process's, another process's, a quarantine, a deletion) changes the
identity and the next lookup reads the file again. Thread-safe; a forked child starts empty.
"""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Generic, TypeVar

from recurgent._store._files import Identity, identity_of

__all__ = ["IdentityCache"]

T = TypeVar("T")


class IdentityCache(Generic[T]):
    """Values parsed from files, each valid while its file keeps the identity it was read with.

    Args:
        limit: Entries kept; past it the oldest entry is dropped (a process touching thousands
            of artifacts pays a read for the old ones, never unbounded memory).
    """

    def __init__(self, limit: int = 512) -> None:
        self._limit = limit
        # Each entry keeps its path's text too: the check of every get stats it without the
        # two Python-level calls that turn a Path into text.
        self._entries: dict[Path, tuple[Identity, T, str]] = {}
        self._lock = threading.Lock()
        os.register_at_fork(after_in_child=self._forget_in_child)

    def _forget_in_child(self) -> None:
        # Another thread may have held the lock at fork time: the child gets a fresh one.
        self._lock = threading.Lock()
        self._entries = {}

    def get(self, path: Path) -> T | None:
        """The value cached for ``path`` when the file there is still the one it came from."""
        # One dict read is atomic: the lock guards only the changes below and in put/drop.
        entry = self._entries.get(path)
        if entry is None:
            return None
        if identity_of(entry[2]) != entry[0]:
            with self._lock:
                if self._entries.get(path) is entry:
                    del self._entries[path]
            return None
        return entry[1]

    def put(self, path: Path, identity: Identity | None, value: T) -> None:
        """Remember ``value`` as parsed from the file version ``identity`` (``None``: forget)."""
        with self._lock:
            self._entries.pop(path, None)
            if identity is None:
                return
            self._entries[path] = (identity, value, os.fspath(path))
            while len(self._entries) > self._limit:
                del self._entries[next(iter(self._entries))]

    def drop(self, path: Path) -> None:
        """Forget ``path`` (its file was just changed or moved by this process)."""
        with self._lock:
            self._entries.pop(path, None)
