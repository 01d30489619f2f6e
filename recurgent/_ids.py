"""Random ids for calls and kept answers, drawn from the OS in blocks (ADR 0126).

Every dynamic call draws a call id and, for an ok top-level answer, a content ref: two
``getrandom`` system calls per call when each id reads ``os.urandom`` itself. Reading 4 KiB at a
time and cutting ids from it gives the same bytes the OS would have given one by one (the same
source, never reused), for one system call every few hundred ids.

Thread-safe. A forked child drops the block it inherited, so parent and child never hand out
the same id.
"""

from __future__ import annotations

import os

from recurgent._forksafe import fork_safe_lock

__all__ = ["random_hex"]

_BLOCK_BYTES = 4096


class _Pool:
    __slots__ = ("_block", "_lock", "_used")

    def __init__(self) -> None:
        self._lock = fork_safe_lock()  # unheld in a forked child (ADR 0139)
        self._block = b""
        self._used = 0

    def take(self, count: int) -> bytes:
        with self._lock:
            start = self._used
            if start + count > len(self._block):
                self._block = os.urandom(max(_BLOCK_BYTES, count))
                start = 0
            self._used = start + count
            return self._block[start : start + count]

    def forget(self) -> None:
        # The child must not hand out the ids left in the parent's block.
        self._block = b""
        self._used = 0


_POOL = _Pool()
os.register_at_fork(after_in_child=_POOL.forget)


def random_hex(count: int) -> str:
    """``count`` random bytes from the OS as hex, like ``secrets.token_hex(count)``."""
    return _POOL.take(count).hex()
