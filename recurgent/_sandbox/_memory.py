"""The process's resident memory, read for an attempt's memory cap (ADRs 0012, 0063, 0136).

A :class:`MemoryMeter` measures how far the process's resident memory grew since it was made.
Every meter reads the one ``/proc/self/statm`` descriptor the process keeps open, opened on first
use; a forked child drops the descriptor it inherited (it still reads the parent) and opens its
own, so no pid is read per attempt. The cap, and the budget nested attempts share, are the
deadline's (:class:`~recurgent._sandbox._limits.Ticker`, ADR 0141).
"""

from __future__ import annotations

import os

from recurgent._forksafe import fork_safe_lock

__all__ = ["MemoryMeter"]

_STATM_PATH = "/proc/self/statm"
_statm_lock = fork_safe_lock()  # unheld in a forked child (ADR 0139)
_UNOPENED = -1
# One descriptor per process, opened on first use (None: the platform has no statm). A child
# made by fork() inherits the parent's descriptor, which still reads the parent: the at-fork
# hook below drops it, so the child opens its own. No pid is read per attempt (a getpid is a
# system call each time, and a meter is made for every attempt).
_statm: int | None = _UNOPENED


def _statm_descriptor() -> int | None:
    global _statm  # one process-wide descriptor, like the file it reads
    cached = _statm
    if cached != _UNOPENED:
        return cached
    with _statm_lock:
        if _statm == _UNOPENED:
            try:
                _statm = os.open(_STATM_PATH, os.O_RDONLY)
            except OSError:
                _statm = None
        return _statm


def _forget_statm_after_fork() -> None:
    global _statm  # the child opens its own descriptor (the lock: ADR 0139)
    inherited = _statm
    _statm = _UNOPENED
    if inherited is not None and inherited != _UNOPENED:
        try:
            os.close(inherited)
        except OSError:
            pass


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_forget_statm_after_fork)


class MemoryMeter:
    """Growth of this process's resident memory since the meter was made.

    Every meter reads the one ``/proc/self/statm`` descriptor the process keeps open, so a
    reading is one ``pread`` and making a meter (once per attempt) opens nothing. Where the
    platform has no such file the meter reports no growth.
    """

    def __init__(self) -> None:
        self._page = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096
        self._fd = _statm_descriptor()
        self._baseline = self._resident()

    def sharing_baseline(self) -> MemoryMeter:
        """A meter of its own (closing it closes only it) measuring from this one's baseline,
        made without a reading: a batch's items measure from the batch's start (ADR 0111)."""
        meter = MemoryMeter.__new__(MemoryMeter)
        meter._page, meter._fd, meter._baseline = self._page, self._fd, self._baseline
        return meter

    def _resident(self) -> int:
        if self._fd is None:
            return 0
        try:
            return int(os.pread(self._fd, 128, 0).split()[1]) * self._page
        except (OSError, ValueError, IndexError):
            return 0

    @property
    def baseline(self) -> int:
        """The resident bytes growth is measured from."""
        return self._baseline

    def measure_from(self, baseline: int) -> None:
        """Measure from ``baseline`` when it is lower than this meter's own (never looser)."""
        self._baseline = min(self._baseline, baseline)

    def growth(self) -> int:
        """Bytes of resident memory gained since the meter was made (0 when unknown)."""
        return self._resident() - self._baseline if self._fd is not None else 0

    def close(self) -> None:
        """Stop reading (the shared descriptor stays open for the next meter)."""
        self._fd = None
