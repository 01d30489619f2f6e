"""Random ids for calls and kept answers, drawn from the OS in blocks (ADR 0126).

Every dynamic call draws a call id and, for an ok top-level answer, a content ref: two
``getrandom`` system calls per call when each id reads ``os.urandom`` itself. Reading 4 KiB at a
time and cutting ids from it gives the same bytes the OS would have given one by one (the same
source, never reused), for one system call every few hundred ids. Ids of one length are cut
sixty-four at a time and handed out by ``list.pop`` (ADR 0144).

Thread-safe. A forked child drops the block and the ids it inherited, so parent and child never
hand out the same id.
"""

from __future__ import annotations

import os

from recurgent._forksafe import fork_safe_lock

__all__ = ["random_hex"]

_BLOCK_BYTES = 4096
# Ids of one length are cut this many at a time (fewer when they would not fit in a block) and
# handed out by a list's pop: one C call per id, with no lock to take (ADR 0144).
_IDS_PER_DRAW = 64


class _Pool:
    __slots__ = ("_block", "_lock", "_per_draw", "_used", "ready")

    def __init__(self, per_draw: int = _IDS_PER_DRAW) -> None:
        self._lock = fork_safe_lock()  # unheld in a forked child (ADR 0139)
        self._block = b""
        self._used = 0
        self._per_draw = per_draw
        # Ids cut and not yet handed out, per length in bytes, the next one last.
        self.ready: dict[int, list[str]] = {}

    def take(self, count: int) -> bytes:
        with self._lock:
            start = self._used
            if start + count > len(self._block):
                self._block = os.urandom(max(_BLOCK_BYTES, count))
                start = 0
            self._used = start + count
            return self._block[start : start + count]

    def refill(self, count: int) -> str:
        """Cut the next ids of ``count`` bytes from the block; return the first of them."""
        if count <= 0:
            return ""  # as secrets.token_hex(0)
        per_draw = max(1, min(self._per_draw, _BLOCK_BYTES // count))
        drawn = self.take(count * per_draw)
        ids = [drawn[start : start + count].hex() for start in range(0, len(drawn), count)]
        ids.reverse()  # pop() hands them out in the order they were cut
        first = ids.pop()
        # Two threads refilling at once each keep their own ids; one list is then dropped
        # unused, never handed out twice.
        self.ready[count] = ids
        return first

    def forget(self) -> None:
        # The child must not hand out the ids left in the parent's block, or cut from it.
        self._block = b""
        self._used = 0
        self.ready = {}


_POOL = _Pool()
os.register_at_fork(after_in_child=lambda: _POOL.forget())


def random_hex(count: int) -> str:
    """``count`` random bytes from the OS as hex, like ``secrets.token_hex(count)``."""
    ready = _POOL.ready.get(count)
    if ready:
        try:
            return ready.pop()
        except IndexError:  # another thread took the last one meanwhile
            pass
    return _POOL.refill(count)
