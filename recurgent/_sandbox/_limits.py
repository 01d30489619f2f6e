"""Hard limits of one attempt: the deadline, the memory and output caps (ADR 0012).

The deadline is cooperative. Compiled code calls ``_next_(_ticker_, False) or _tick_()`` at the
head of every loop body, every function body, every ``except`` handler and every comprehension
step. ``_ticker_`` is a C-level ``itertools.repeat`` iterator, so a tick costs one C call; only
when it runs dry does ``_tick_`` read the clock. Once the attempt is stopped the ticker stays
empty and every later tick raises again, so ``except BaseException: pass`` cannot swallow the
stop.

The process's watchdog thread (:mod:`recurgent._sandbox._watchdog`) visits every running
attempt (:meth:`Ticker.watch`): the next tick then reads the clock, and an attempt on the real
clock that is past its deadline or memory cap is stopped in whatever Python frame runs, library
code's too (ADR 0089). Every clock read also reads the process's resident memory (a
:class:`~recurgent._sandbox._memory.MemoryMeter`), so a loop that keeps growing memory stops
once the process has grown by more than the cap.
"""

from __future__ import annotations

import contextvars
import itertools
import time
from collections.abc import Callable, Iterator, MutableMapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from recurgent._async_stop import Interrupter
from recurgent._sandbox._memory import MemoryMeter

if TYPE_CHECKING:
    from recurgent._sandbox._reflection import SealedCallable

__all__ = [
    "AttemptStopped",
    "Clock",
    "DeadlineExceeded",
    "MemoryLimitExceeded",
    "OutputCollector",
    "SandboxLimits",
    "SizeLimitExceeded",
    "Ticker",
    "TickingIterator",
    "attempt_deadline",
    "enclosing_limits",
    "enclosing_memory",
    "enclosing_remaining",
    "monotonic_clock",
    "truncation_marker",
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


def truncation_marker(limit_bytes: int) -> str:
    """The line that ends an attempt's printed output cut at ``limit_bytes``."""
    return f"\n[output truncated at {limit_bytes // 1024} KiB]\n"


class OutputCollector:
    """Captures ``print`` output of one attempt, capped with a truncation marker."""

    def __init__(self, limit_bytes: int) -> None:
        self._limit = limit_bytes
        self._parts: list[str] = []
        self._size = 0
        self.truncated = False
        self._sealed_print: SealedCallable | None = None

    @property
    def _call_print(self) -> SealedCallable:
        """What a program's ``print`` is (RestrictedPython compiles ``print`` and ``print(...)``
        to ``_print._call_print``): sealed, so a wrong call's message names ``print``, its repr
        is ``<function print>``, and no bound method hands out this collector (red team R23).
        """
        sealed = self._sealed_print
        if sealed is None:
            # Imported here: the reflection module's imports reach this one.
            from recurgent._sandbox._reflection import SealedCallable

            sealed = self._sealed_print = SealedCallable(self._print_line, "print")
        return sealed

    def _print_line(
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
        from recurgent._sandbox._measure import check_items
        from recurgent._sandbox._stepped_text import text_of

        # As Python's print: a separator or end that is not text is refused, not converted
        # (red team R24: `str(sep)` of a shared list built 300 MB before the line was counted).
        for option, given in (("sep", sep), ("end", end)):
            if given is not None and not isinstance(given, str):
                raise TypeError(f"{option} must be None or a string, not {type(given).__name__}")
        # A shared structure's text is checked first (H10), written in steps when the
        # program's code is in it (ADR 0162).
        texts = []
        built = 0
        for o in objects:
            if type(o) is str:
                texts.append(o)
                continue
            text = text_of(o, "str", "print()")
            # Each text fits, but all are held until the line is counted: the text built so
            # far is counted as it grows (red team R32: print(*[x] * 60), x a list of nine
            # shared million-character strings, built 540 million characters first).
            built += str.__len__(text)
            check_items(built, "print()")
            texts.append(text)
        separator = " " if sep is None else str(sep)
        terminator = "\n" if end is None else str(end)
        # Each text fits, but their join repeats the separator and may repeat one text: the
        # whole line is counted before one C call builds it (red team R23: `print(*[s] * 1000)`,
        # `print(*[''] * 10**6, sep=s)` built gigabytes for a 64 KiB output).
        length = str.__len__  # a str subclass's own __len__ could say 0
        size = sum(map(length, texts)) + length(separator) * max(0, len(texts) - 1)
        check_items(size + length(terminator), "print()")
        self.write(separator.join(texts) + terminator)

    def write(self, text: str) -> None:
        """Append text, truncating once the cap is reached."""
        if self.truncated:
            return
        encoded = text.encode("utf-8", "replace")
        if self._size + len(encoded) > self._limit:
            room = max(0, self._limit - self._size)
            self._parts.append(encoded[:room].decode("utf-8", "ignore"))
            self._parts.append(truncation_marker(self._limit))
            self.truncated = True
            return
        self._parts.append(text)
        self._size += len(encoded)

    def __call__(self) -> str:
        return "".join(self._parts)

    def text(self) -> str:
        """Everything printed so far."""
        return "".join(self._parts)
