"""Hard limits of one attempt: the deadline and its watchdog, the memory and output caps (ADR 0012).

The deadline is cooperative. Compiled code calls ``_next_(_ticker_, False) or _tick_()`` at the
head of every loop body, every function body, every ``except`` handler and every comprehension
step. ``_ticker_`` is a C-level ``itertools.repeat`` iterator, so a tick costs one C call; only
when it runs dry does ``_tick_`` read the clock. Once the attempt is stopped the ticker stays
empty and every later tick raises again, so ``except BaseException: pass`` cannot swallow the
stop.

A batch of cheap ticks alone is not enough: code that runs a thousand fast iterations and then
slow ones (each a long C call) would go a thousand slow iterations between clock reads. One
long-lived watchdog thread per process (:data:`WATCHDOG`) therefore empties the ticker of every
running attempt every few milliseconds so the next tick reads the clock, and it sleeps while no
attempt runs (ADR 0030). Every clock read also reads the process's resident memory (a
:class:`MemoryMeter`), so a loop that keeps growing memory stops once the process has grown by
more than the cap.

Library code never ticks. Once an attempt measured by the real clock is past its deadline (or
its memory cap), the watchdog therefore also stops the attempt's thread itself: it delivers the
stop as an asynchronous exception into whatever Python frame runs, and again every period while
the thread is inside the attempt (ADR 0089, :mod:`recurgent._async_stop`).
"""

from __future__ import annotations

import contextvars
import itertools
import math
import os
import threading
import time
from collections.abc import Callable, Iterator, MutableMapping
from dataclasses import dataclass
from typing import Any, Protocol

from recurgent._async_stop import Interrupter
from recurgent._forksafe import fork_safe_condition, fork_safe_lock

__all__ = [
    "WATCHDOG",
    "AttemptStopped",
    "Clock",
    "DeadlineExceeded",
    "MemoryLimitExceeded",
    "MemoryMeter",
    "OutputCollector",
    "SandboxLimits",
    "SizeLimitExceeded",
    "Ticker",
    "TickingIterator",
    "Watchdog",
    "Watched",
    "attempt_deadline",
    "enclosing_limits",
    "enclosing_memory",
    "enclosing_remaining",
    "monotonic_clock",
]

Clock = Callable[[], float]


class _RealClock:
    # Held as a class attribute, not a module attribute: freezegun rewrites module attributes
    # that point at time.monotonic, and a frozen clock would let runaway code run forever.
    read: Clock = time.monotonic


def monotonic_clock() -> float:
    """The real monotonic clock, immune to freezegun."""
    return _RealClock.read()


# The remaining time of the attempt whose code is running in this context, if any. Work done on
# that code's behalf outside the ticks (a child agent's call, a regex match, an HTTP read) is
# bounded by it, so no forwarded operation outlives the attempt that asked for it.
_ENCLOSING: contextvars.ContextVar[Callable[[], float] | None] = contextvars.ContextVar(
    "recurgent_enclosing_deadline", default=None
)


#: The memory budget of the innermost running attempt: its meter's baseline (resident bytes)
#: and its cap. An attempt started inside it (a delegated child's, in the enclosing attempt's
#: host section) measures from the lower baseline with the smaller cap, so nesting attempts
#: never multiplies the cap (ADR 0141), as the enclosing deadline bounds a child's time.
MemoryBudget = Callable[[], "tuple[int, int] | None"]
_ENCLOSING_MEMORY: contextvars.ContextVar[MemoryBudget | None] = contextvars.ContextVar(
    "recurgent_enclosing_memory", default=None
)


def enclosing_memory() -> tuple[int, int] | None:
    """The innermost running attempt's memory budget (baseline, cap), or ``None`` (ADR 0141)."""
    budget = _ENCLOSING_MEMORY.get()
    return None if budget is None else budget()


def enclosing_limits() -> tuple[Callable[[], float], MemoryBudget | None] | None:
    """What :class:`attempt_deadline` set in this context (the innermost running attempt's
    remaining time and memory budget, as callables), or ``None`` outside any attempt: for work
    handed to another thread on that attempt's behalf (a map's batches)."""
    remaining = _ENCLOSING.get()
    return None if remaining is None else (remaining, _ENCLOSING_MEMORY.get())


def enclosing_remaining() -> float | None:
    """Seconds left to the innermost running attempt's deadline, or ``None`` outside any attempt."""
    remaining = _ENCLOSING.get()
    return None if remaining is None else remaining()


class attempt_deadline:
    """Make ``remaining`` the enclosing deadline for the code run inside the ``with`` block, and
    ``memory`` (when given) the enclosing memory budget."""

    __slots__ = ("_memory", "_memory_token", "_remaining", "_token")

    def __init__(self, remaining: Callable[[], float], memory: MemoryBudget | None = None) -> None:
        self._remaining = remaining
        self._memory = memory
        self._token: contextvars.Token[Callable[[], float] | None] | None = None
        self._memory_token: contextvars.Token[MemoryBudget | None] | None = None

    def __enter__(self) -> None:
        self._token = _ENCLOSING.set(self._remaining)
        if self._memory is not None:
            self._memory_token = _ENCLOSING_MEMORY.set(self._memory)

    def __exit__(self, *exc: object) -> None:
        assert self._token is not None
        if self._memory_token is not None:
            _ENCLOSING_MEMORY.reset(self._memory_token)
        _ENCLOSING.reset(self._token)


class AttemptStopped(BaseException):
    """Raised inside generated code when the host stops the attempt.

    It derives from ``BaseException`` so that ``except Exception`` in generated code cannot
    catch it, and every later tick raises it again.
    """


class DeadlineExceeded(AttemptStopped):
    """The attempt's deadline has passed."""


class MemoryLimitExceeded(AttemptStopped):
    """The process grew by more than ``max_memory_bytes`` while the attempt ran."""


class SizeLimitExceeded(Exception):
    """Raised inside generated code when an operation would build an oversized value."""


@dataclass(frozen=True, slots=True)
class SandboxLimits:
    """Caps applied to one attempt.

    Attributes:
        timeout_seconds: Wall-clock budget of the attempt.
        max_sequence_items: Largest str/bytes/list/tuple/range an operation may create.
        max_int_bits: Largest integer an operation may create.
        max_output_bytes: Captured ``print`` output kept per attempt.
        max_forwarded_calls: ``tool``/``delegate``/``remember``, handle and network calls.
        max_response_bytes: Largest HTTP response body the network facade reads.
        default_http_timeout: Timeout of an HTTP request that names none.
        max_memory_bytes: Growth of the process's resident memory at which the attempt is
            stopped (checked by the watchdog where the platform reports it; ``None`` turns the
            check off). An attempt started inside another is also held to the enclosing one's
            budget, counted from the enclosing attempt's start (ADR 0141).
    """

    timeout_seconds: float = 30.0
    max_sequence_items: int = 10_000_000
    max_int_bits: int = 1_000_000
    max_output_bytes: int = 64 * 1024
    max_forwarded_calls: int = 200
    max_response_bytes: int = 5 * 1024 * 1024
    default_http_timeout: float = 10.0
    max_memory_bytes: int | None = 1024 * 1024 * 1024


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


class Ticker:
    """The deadline (and memory cap) of one attempt, shared by every tick site of its code.

    Args:
        namespace: The attempt's globals, where ``_ticker_`` lives.
        timeout_seconds: The attempt's wall-clock budget.
        clock: Monotonic clock the deadline is measured with.
        max_memory_bytes: Resident-memory growth at which the attempt stops (``None``: no cap).
    """

    _INITIAL_BATCH = 1024
    _CHECK_INTERVAL = 0.005  # aim to read the clock about every 5 ms

    def __init__(
        self,
        namespace: MutableMapping[str, Any],
        *,
        timeout_seconds: float,
        clock: Clock,
        max_memory_bytes: int | None = None,
        memory_baseline: MemoryMeter | None = None,
    ) -> None:
        self._namespace = namespace
        self._clock = clock
        self._started = clock()
        self._deadline = self._started + timeout_seconds
        self._timeout = timeout_seconds
        self._batch = self._INITIAL_BATCH
        self._last_check = self._started
        # An AttemptStopped, or the CallCancelled of a cancelled awaited call (ADR 0096).
        self._stop: BaseException | None = None
        self._max_memory = max_memory_bytes
        self._meter: MemoryMeter | None = None
        self._memory_baseline = memory_baseline
        # The deadline on the real clock, which the watchdog reads to stop library code that
        # never ticks (None under an injected clock: then only ticks read the time).
        self._real_deadline: float | None = None
        #: The target of the asynchronous stop while the attempt's program runs (ADR 0089).
        self.interrupter = Interrupter()
        namespace["_ticker_"] = itertools.repeat(True, self._batch)

    def start(self) -> None:
        """Take the memory baseline; call right before the attempt's code runs.

        Inside another attempt (a delegated child's, ADR 0141) the growth counts from the lower
        of the two baselines and stops at the smaller cap: a chain of nested attempts grows the
        process by one cap, not by one per level."""
        outer = enclosing_memory()
        if (self._max_memory is not None or outer is not None) and self._stop is None:
            baseline = self._memory_baseline
            meter = MemoryMeter() if baseline is None else baseline.sharing_baseline()
            if outer is not None:
                outer_baseline, outer_limit = outer
                meter.measure_from(outer_baseline)
                limit = self._max_memory
                self._max_memory = outer_limit if limit is None else min(limit, outer_limit)
            self._meter = meter
        if self._clock is monotonic_clock:
            self._real_deadline = self._deadline

    def memory_budget(self) -> tuple[int, int] | None:
        """The baseline and cap an attempt started inside this one measures against (ADR 0141),
        or ``None`` when this one has no memory cap."""
        meter = self._meter
        limit = self._max_memory
        return None if meter is None or limit is None else (meter.baseline, limit)

    def run(self, main: Callable[[], Any]) -> Any:
        """``main()``, stoppable at the deadline in any Python frame, library code's too."""
        return self.interrupter.run(main)

    @property
    def stop(self) -> BaseException | None:
        """What stopped the attempt (deadline, memory, or the cancellation of an awaited call),
        once it is stopped."""
        return self._stop

    def watch(self) -> None:
        """The watchdog's visit: make the next tick read the clock, and once the attempt is
        past its deadline or memory cap, stop its thread wherever it runs (ADR 0089)."""
        self._namespace["_ticker_"] = iter(())
        stop = self._stop
        if stop is None:
            if self.interrupter.shielded:
                # Host code runs for the program (a child's call bounded by this deadline):
                # the program's next tick, or a later visit, stops the attempt.
                return
            real = self._real_deadline
            if real is not None and monotonic_clock() >= real:
                self.expire()
            else:
                meter = self._meter
                limit = self._max_memory
                if meter is None or limit is None or meter.growth() <= limit:
                    return
                self.expire(MemoryLimitExceeded(self._memory_message()))
            stop = self._stop
        if stop is not None and self._real_deadline is not None:
            self.interrupter.deliver(type(stop))

    @property
    def expired(self) -> bool:
        """True once the attempt has been stopped (deadline, memory, or the end of the run)."""
        return self._stop is not None

    def remaining(self) -> float:
        """Seconds left before the deadline (never negative)."""
        return max(0.0, self._deadline - self._clock())

    def tick(self) -> bool:
        """Check clock and memory; raise once the attempt has been stopped."""
        stop = self._stop
        if stop is not None:
            raise type(stop)(*stop.args)
        now = self._clock()
        if now >= self._deadline:
            self.expire()
            raise DeadlineExceeded(self._message())
        meter = self._meter
        if meter is not None and meter.growth() > self._max_memory:  # type: ignore[operator]
            self.expire(MemoryLimitExceeded(self._memory_message()))
            self.tick()
        elapsed = now - self._last_check
        if elapsed > 0:
            scaled = int(self._batch * self._CHECK_INTERVAL / elapsed)
            self._batch = min(100_000, max(16, scaled))
        self._last_check = now
        self._namespace["_ticker_"] = itertools.repeat(True, self._batch)
        return True

    def force_check(self) -> None:
        """Make the next tick read the clock (called by the watchdog)."""
        self._namespace["_ticker_"] = iter(())

    def expire(self, stop: BaseException | None = None) -> None:
        """Make every later tick raise ``stop`` (by default: the deadline has passed)."""
        if self._stop is None:
            self._stop = stop or DeadlineExceeded(self._message())
        self._namespace["_ticker_"] = iter(())
        if self._meter is not None:
            self._meter.close()

    def forget_globals(self) -> None:
        """Once expired, let go of the attempt's globals (ADR 0124).

        Their ``_ticker_`` is spent for good (no tick refills a stopped ticker), so nothing
        needs writing there again; a tick of code the attempt leaked still raises the stop.
        The globals hold this ticker (their ``_tick_``): without this link back, they and all
        they hold are freed as soon as nothing else holds them, not left to the collector.
        """
        if self._stop is not None:
            self._namespace = {}

    def _message(self) -> str:
        return f"generated code exceeded execution_timeout_seconds={self._timeout:g}"

    def _memory_message(self) -> str:
        limit = self._max_memory or 0
        return f"generated code grew the process by more than {limit // (1024 * 1024)} MiB"


class Watched(Protocol):
    """What the watchdog visits: a :class:`Ticker`, or a batch's current item (ADR 0124)."""

    def watch(self) -> None: ...  # pragma: no cover - a protocol


class _WatchdogService:
    """One long-lived daemon thread that nudges every running attempt's ticker.

    Attempts register while they run. With none registered for a second the thread sleeps on a
    condition, so an idle process pays nothing; a forked child, whose copy has no thread, starts
    its own. An attempt that ends after the thread's sleep has ended waits for its visit, which
    hands it the interpreter lock at once (ADR 0140).
    """

    def __init__(self, period: float, linger_polls: int = 50) -> None:
        self._period = period
        self._linger_polls = linger_polls
        # Unheld and with no waiters in a forked child (ADR 0139).
        self._condition = fork_safe_condition()
        self._tickers: dict[int, Watched] = {}
        self._thread: threading.Thread | None = None
        # True while the thread sleeps on the condition: only then does a new attempt wake it.
        self._waiting = False
        # When the thread's sleep between two visits ends (monotonic seconds; infinity while it
        # sleeps on the condition or does not run): an attempt ending later hands it its turn.
        # Written and compared on the real clock, never one freezegun replaces: a frozen clock
        # on one thread and a real one on the other made every period's end wait 5 ms (R18).
        self._due = math.inf
        # Set by an attempt that handed the thread its turn: the process is busy, though the
        # thread then finds no attempt registered (the ending one left first).
        self._handed_off = False

    def forget_after_fork(self) -> None:
        """In a forked child: nothing watched and no thread (the parent's does not exist here);
        the condition is made unheld by the fork-safe locks' hook (ADR 0139)."""
        self._tickers = {}
        self._thread = None
        self._waiting = False
        self._due = math.inf
        self._handed_off = False

    def register(self, ticker: Watched) -> bool:
        """Watch ``ticker``; False when no thread can be started (the attempt runs unwatched)."""
        with self._condition:
            self._tickers[id(ticker)] = ticker
            # A forked child's copy of the thread is not alive there (threading marks it
            # stopped after fork): the child starts its own, with no pid read per attempt.
            if self._thread is None or not self._thread.is_alive():
                thread = threading.Thread(
                    target=self._watch, name="recurgent-watchdog", daemon=True
                )
                try:
                    thread.start()
                except RuntimeError:
                    del self._tickers[id(ticker)]
                    return False
                self._thread = thread
                self._waiting = False
            elif self._waiting:
                self._condition.notify_all()
        return True

    def unregister(self, ticker: Watched) -> None:
        """Stop watching ``ticker``; first let the thread visit when its sleep has ended."""
        condition = self._condition
        with condition:
            self._tickers.pop(id(ticker), None)
            due = self._due
            if monotonic_clock() < due:
                return
            thread = self._thread
            if thread is None or not thread.is_alive():
                return
            # The thread is awake and waits for the interpreter lock, which this thread holds.
            # Each time this thread releases it (a system call: the memory reading, a log
            # line), the thread is woken and mostly loses the race to take it, so it waits on
            # through many calls, each then paying for its wake (ADR 0140). Waiting here hands
            # it the lock at once; it visits, sets its next due time and notifies.
            self._handed_off = True
            if not condition.wait_for(lambda: self._due != due, _HANDOFF_SECONDS):
                # No visit came (a thread held up elsewhere): the next attempts do not wait
                # for it again before one more period has passed, and those already waiting
                # for the same visit stop now, not each at the end of its own wait (R18).
                self._due = monotonic_clock() + self._period
                condition.notify_all()

    @property
    def watching(self) -> int:
        """How many attempts are registered."""
        with self._condition:
            return len(self._tickers)

    def _watch(self) -> None:
        idle = 0
        while True:
            idle = self._round(idle)
            time.sleep(self._period)

    def _round(self, idle: int) -> int:
        """One round of the thread: visit every running attempt and set the next due time;
        return how many rounds in a row found the process idle.

        After the last attempt the thread keeps polling for linger_polls rounds (one second)
        before it sleeps on the condition: back-to-back calls then never pay for waking it (a
        futex wake and a context switch per call), and an idle process still sleeps. A round
        an ending attempt handed over is not idle, though that attempt has left (ADR 0140).
        """
        condition = self._condition
        with condition:
            if self._tickers or self._handed_off:
                idle = 0
                self._handed_off = False
            elif idle < self._linger_polls:
                idle += 1
            else:
                self._waiting = True
                self._due = math.inf
                condition.notify_all()  # an attempt waiting for a visit waits no longer
                while not self._tickers:
                    condition.wait()
                self._waiting = False
                idle = 0
            tickers = list(self._tickers.values())
        for ticker in tickers:
            try:
                ticker.watch()
            except Exception:  # noqa: BLE001 - one attempt's failure must not end the watch
                continue
        with condition:
            self._due = monotonic_clock() + self._period
            condition.notify_all()  # the attempts that handed this thread its turn
        return idle


# The longest an ending attempt waits for the watchdog's visit it handed the turn to.
_HANDOFF_SECONDS = 0.001

WATCHDOG = _WatchdogService(period=0.02)
if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=WATCHDOG.forget_after_fork)


class Watchdog:
    """Makes one attempt's next tick read the clock every 20 ms, while it runs.

    It registers the ticker with the process's single watchdog thread (:data:`WATCHDOG`)
    between :meth:`start` and :meth:`stop`; no thread is started per attempt.
    """

    def __init__(self, ticker: Ticker) -> None:
        self._ticker = ticker

    def start(self) -> None:
        """Start watching (a process that cannot start threads runs on without a watchdog)."""
        WATCHDOG.register(self._ticker)

    def stop(self) -> None:
        """Stop watching."""
        WATCHDOG.unregister(self._ticker)


class TickingIterator:
    """Wraps a C-level iterator that may never end so consuming it still ticks."""

    __slots__ = ("_inner", "_tick")

    def __init__(self, inner: Iterator[Any], tick: Callable[[], bool]) -> None:
        self._inner = inner
        self._tick = tick

    def __iter__(self) -> TickingIterator:
        return self

    def __next__(self) -> Any:
        self._tick()
        return next(self._inner)


class OutputCollector:
    """Captures ``print`` output of one attempt, capped with a truncation marker."""

    def __init__(self, limit_bytes: int) -> None:
        self._limit = limit_bytes
        self._parts: list[str] = []
        self._size = 0
        self.truncated = False

    def _call_print(
        self,
        *objects: Any,
        sep: str | None = " ",
        end: str | None = "\n",
        file: Any = None,
        flush: bool = False,
    ) -> None:
        if file is not None:
            raise TypeError("print(file=...) is not available in the sandbox; print to stdout")
        # Imported here: the text estimate's module imports this one (through _measure).
        from recurgent._sandbox._text_size import check_texts

        check_texts(objects, "print()")  # a shared structure's text (H10)
        text = (" " if sep is None else str(sep)).join(str(o) for o in objects)
        self.write(text + ("\n" if end is None else str(end)))

    def write(self, text: str) -> None:
        """Append text, truncating once the cap is reached."""
        if self.truncated:
            return
        encoded = text.encode("utf-8", "replace")
        if self._size + len(encoded) > self._limit:
            room = max(0, self._limit - self._size)
            self._parts.append(encoded[:room].decode("utf-8", "ignore"))
            self._parts.append(f"\n[output truncated at {self._limit // 1024} KiB]\n")
            self.truncated = True
            return
        self._parts.append(text)
        self._size += len(encoded)

    def __call__(self) -> str:
        return "".join(self._parts)

    def text(self) -> str:
        """Everything printed so far."""
        return "".join(self._parts)
