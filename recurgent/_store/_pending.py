"""The process-wide table of counter changes not yet written, and when they are (ADR 0055).

Persisted runs that answered and tool uses wait here as deltas (:mod:`._batch`), one per file,
and are written merge-on-write under the file's lock: with the next write-through of the same
file (the store takes the file's delta into that write), when the oldest waiting change is
older than :data:`FLUSH_AFTER_SECONDS` (checked when a call adds to the table, and by a
background thread while changes wait, so a process that stopped calling still writes them, ADR
0166), on :func:`flush`, at interpreter exit, and when a ``multiprocessing`` child ends. A forked child
starts with an empty table, so a count is never written by both parent and child. A failed
deferred write never raises: the delta goes back into the table and the first failure per file
is warned about once.
"""

from __future__ import annotations

import atexit
import itertools
import os
import sys
import threading
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Generic, TypeVar

from recurgent._forksafe import fork_safe_lock
from recurgent._store._artifacts import parse_record
from recurgent._store._batch import RunsDelta, UsesDelta, apply_runs, apply_uses
from recurgent._store._files import Loaded, identity_of, update_json
from recurgent._store._ownership import refusal
from recurgent._store._registry import update_tools

__all__ = [
    "FLUSH_AFTER_SECONDS",
    "RUNS",
    "USES",
    "WRITER",
    "PendingTable",
    "flush",
    "flush_due",
    "write_runs",
    "write_uses",
]

#: The longest a waiting change stays unwritten while the process keeps making calls.
FLUSH_AFTER_SECONDS = 1.0

D = TypeVar("D", RunsDelta, dict[str, UsesDelta])
Clock = Callable[[], float]


@dataclass(slots=True)
class _Entry(Generic[D]):
    root: Path
    delta: D
    since: float


class PendingTable(Generic[D]):
    """Deltas waiting for one kind of file, keyed by the file's path.

    Args:
        write: Writes one delta into its file (merge-on-write, under the file's lock); it may
            raise ``OSError`` or ``ValueError``, and the delta then goes back into the table.
        merge: Combines a delta put back with one added since (older first).
        clock: Monotonic seconds (tests advance it).
        on_fold: Called after each change is added (the process's tables wake their writer
            thread with it).
    """

    def __init__(
        self,
        write: Callable[[Path, Path, D], None],
        merge: Callable[[D, D], D],
        *,
        clock: Clock = time.monotonic,
        on_fold: Callable[[], None] | None = None,
    ) -> None:
        self._write: Callable[[Path, Path, D], None] = write
        self._merge: Callable[[D, D], D] = merge
        self._clock = clock
        self._on_fold = on_fold
        self._entries: dict[Path, _Entry[D]] = {}
        self._lock = fork_safe_lock()  # unheld in a forked child (ADR 0139)
        self._warned: set[Path] = set()
        os.register_at_fork(after_in_child=self._forget_in_child)

    def _forget_in_child(self) -> None:
        # The parent writes its own changes; a child writing them too would count them twice.
        self._entries = {}

    def fold(
        self, path: Path, root: Path, start: Callable[[], D], change: Callable[[D], D]
    ) -> bool:
        """Add a change to the delta of ``path`` (``start`` makes a new one); True when some
        change in the table has waited long enough to be written now."""
        now = self._clock()
        with self._lock:
            entry = self._entries.get(path)
            if entry is None:
                entry = self._entries[path] = _Entry(root, start(), now)
            entry.delta = change(entry.delta)
            # Entries are added in time order and never move, so the first is the oldest.
            oldest = next(iter(self._entries.values())).since
        if self._on_fold is not None:
            self._on_fold()
        return now - oldest >= FLUSH_AFTER_SECONDS

    def oldest(self) -> float | None:
        """When the oldest waiting change was added (this table's clock), or ``None``."""
        with self._lock:
            for entry in self._entries.values():
                return entry.since
        return None

    def take(self, path: Path) -> D | None:
        """Remove and return the delta of ``path``, for a write that carries it."""
        with self._lock:
            entry = self._entries.pop(path, None)
        return None if entry is None else entry.delta

    def put_back(self, path: Path, root: Path, delta: D) -> None:
        """Return a delta whose write failed; changes added since come after it."""
        now = self._clock()
        with self._lock:
            entry = self._entries.get(path)
            if entry is None:
                self._entries[path] = _Entry(root, delta, now)
            else:
                entry.delta = self._merge(delta, entry.delta)

    def pending(self) -> list[Path]:
        """The files with waiting changes (for tests and diagnostics)."""
        with self._lock:
            return list(self._entries)

    def flush(self, *, due_only: bool = False) -> int:
        """Write the waiting deltas (only those old enough with ``due_only``); returns how many
        were written. Never raises."""
        now = self._clock()
        with self._lock:
            chosen = [
                path
                for path, entry in self._entries.items()
                if not due_only or now - entry.since >= FLUSH_AFTER_SECONDS
            ]
            taken = [(path, self._entries.pop(path)) for path in chosen]
        written = 0
        for path, entry in taken:
            try:
                self._write(path, entry.root, entry.delta)
            except Exception as error:  # noqa: BLE001 - never breaks a call or the exit
                self.put_back(path, entry.root, entry.delta)
                self._warn_once(path, error)
            else:
                written += 1
        return written

    def _warn_once(self, path: Path, error: BaseException) -> None:
        with self._lock:
            if path in self._warned:
                return
            self._warned.add(path)
        try:
            warnings.warn(
                f"recurgent could not write usage counts to {path} "
                f"({type(error).__name__}: {error}); they are kept and retried "
                "(warned once per file)",
                RuntimeWarning,
                stacklevel=2,
            )
        except Exception:  # noqa: BLE001 - a host turning warnings into errors must not fail a call
            sys.stderr.write(f"[recurgent] usage counts for {path} not written: {error}\n")


def write_runs(path: Path, root: Path, delta: RunsDelta) -> None:
    """Fold waiting persisted runs into the artifact at ``path``, under its lock.

    Runs of other programs that waited before ``delta`` (``delta.earlier``) are written first,
    each batch under its own rules; once written a batch leaves the chain, so a failure puts
    back only what is left. A loop, not recursion: a disk that stayed full while programs
    alternated can leave a long chain. Nothing is written when the artifact is gone
    (forgotten, pruned or quarantined since: the runs counted a program nobody keeps),
    damaged, of another runtime or another schema.
    """
    if identity_of(path) is None:
        # Not even a lock file is made: a store root deleted meanwhile stays deleted.
        return
    chain = delta.batches()
    for older, newer in itertools.pairwise(chain):
        _write_batch(path, root, older)
        newer.earlier = None
    _write_batch(path, root, chain[-1])


def _write_batch(path: Path, root: Path, batch: RunsDelta) -> None:
    def change(loaded: Loaded) -> dict[str, Any] | None:
        record = parse_record(loaded.data)
        if record is None or refusal(record, batch.latest, batch.digest) is not None:
            # Another process put another role's, the host's or a model's program there
            # since the runs: they never count for it (ADR 0131).
            return None
        return apply_runs(record, batch).to_json()

    update_json(path, change, root=root, durable=False)


def write_uses(path: Path, root: Path, deltas: dict[str, UsesDelta]) -> None:
    """Fold waiting tool uses into ``registry.json``; tools no longer registered are skipped."""
    if identity_of(path) is None:
        return  # no registry: no tool is registered, nothing to count

    def edit(tools: dict[str, Any]) -> bool:
        changed = False
        for name, delta in deltas.items():
            current = tools.get(name)
            if isinstance(current, dict):
                tools[name] = apply_uses(current, delta)
                changed = True
        return changed

    update_tools(root, edit)


def merge_uses(older: dict[str, UsesDelta], newer: dict[str, UsesDelta]) -> dict[str, UsesDelta]:
    """Per tool: the older delta followed by the newer one."""
    for name, delta in newer.items():
        older[name] = older[name].merge(delta) if name in older else delta
    return older


class _Writer:
    """The process's background writer of due changes (ADR 0166): one daemon thread, started
    when a change is added and none runs, waiting until the oldest change is due, writing what
    is due, and ending once nothing waits. Without it a process that stopped calling kept its
    last counts until it exited (a notebook beside ``recurgent tools scorecards``)."""

    def __init__(self) -> None:
        #: Off in this package's own test suite (its root ``conftest``), whose specs look at
        #: what waits; a spec of the writer turns it on.
        self.enabled = True
        #: Read without the lock on every fold: set before the thread starts, cleared by the
        #: thread before its last look at the tables (so a change added meanwhile is seen).
        self.running = False
        self._lock = fork_safe_lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def wake(self) -> None:
        if self.running or not self.enabled:
            return
        with self._lock:
            if self.running or self._stop.is_set():
                return
            self.running = True
            thread = threading.Thread(target=self._run, name="recurgent-store-writer", daemon=True)
            self._thread = thread
        thread.start()

    def _run(self) -> None:
        while True:
            wait = _seconds_until_due()
            if wait is None:
                with self._lock:
                    self.running = False
                if _seconds_until_due() is None:
                    return
                with self._lock:
                    if self.running or self._stop.is_set():
                        return  # another writer started meanwhile, or the process is exiting
                    self.running = True
                continue
            if self._stop.wait(wait):
                return
            try:
                flush_due()
            except Exception:  # noqa: BLE001 - flush never raises; the writer must not die
                pass

    def stop(self, timeout: float = 5.0) -> None:
        """End the thread (at exit: the last flush is the exit's own)."""
        self._stop.set()
        thread = self._thread
        if thread is not None and thread.is_alive() and thread is not threading.current_thread():
            thread.join(timeout)

    def forget(self) -> None:
        # A forked child has no thread of the parent's, and writes none of its changes.
        self.running = False
        self._stop = threading.Event()
        self._thread = None


WRITER = _Writer()


def _seconds_until_due() -> float | None:
    """How long until the oldest waiting change in either table is due, or ``None``."""
    waiting = [since for since in (RUNS.oldest(), USES.oldest()) if since is not None]
    if not waiting:
        return None
    # A hundredth of a second late: the change is surely due when the writer looks.
    return max(0.0, min(waiting) + FLUSH_AFTER_SECONDS - time.monotonic()) + 0.01


#: Persisted runs per artifact path, and tool uses per registry path (per tool name).
RUNS: PendingTable[RunsDelta] = PendingTable(write_runs, RunsDelta.merge, on_fold=WRITER.wake)
USES: PendingTable[dict[str, UsesDelta]] = PendingTable(write_uses, merge_uses, on_fold=WRITER.wake)


def flush_due() -> None:
    """Write every delta that has waited long enough (both tables)."""
    RUNS.flush(due_only=True)
    USES.flush(due_only=True)


def flush() -> int:
    """Write every waiting delta of this process; how many files were written."""
    return RUNS.flush() + USES.flush()


def _flush_at_exit() -> None:
    try:
        WRITER.stop()
        flush()
    except BaseException:  # noqa: BLE001 - nothing may fail the interpreter's exit
        pass


def _in_forked_child() -> None:
    WRITER.forget()
    # A child forked by multiprocessing ends with os._exit (no atexit) after running
    # multiprocessing's finalizers. Its bootstrap clears the parent's finalizers, then runs its
    # after-fork hooks: the one added here registers a finalizer that writes the child's counts.
    # Only a process that forks through multiprocessing has imported it; recurgent never does.
    util = sys.modules.get("multiprocessing.util")
    if util is not None:
        util.register_after_fork(RUNS, _flush_at_child_exit)


def _flush_at_child_exit(_table: object) -> None:
    util = sys.modules["multiprocessing.util"]
    util.Finalize(None, _flush_at_exit, exitpriority=0)


atexit.register(_flush_at_exit)
os.register_at_fork(after_in_child=_in_forked_child)
