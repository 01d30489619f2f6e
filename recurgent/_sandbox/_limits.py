"""Hard limits of one attempt: the deadline tick, size caps and the forwarded-call budget (ADR 0012).

The deadline is cooperative. Compiled code calls ``next(_ticker_, False) or _tick_()`` at the
head of every loop body, every function body and every ``except`` handler. ``_ticker_`` is a
C-level ``itertools.repeat`` iterator, so a tick costs one C call; only when it runs dry does
``_tick_`` read the clock. Once the deadline has passed the ticker stays empty and every later
tick raises again, so ``except BaseException: pass`` cannot swallow the stop.
"""

from __future__ import annotations

import itertools
import time
from collections.abc import Callable, Iterator, MutableMapping
from dataclasses import dataclass
from typing import Any

__all__ = [
    "Clock",
    "DeadlineExceeded",
    "SandboxLimits",
    "SizeLimitExceeded",
    "Ticker",
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


class DeadlineExceeded(BaseException):
    """Raised inside generated code when the attempt's deadline has passed.

    It derives from ``BaseException`` so that ``except Exception`` in generated code cannot
    catch it.
    """


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
    """

    timeout_seconds: float = 30.0
    max_sequence_items: int = 10_000_000
    max_int_bits: int = 1_000_000
    max_output_bytes: int = 64 * 1024
    max_forwarded_calls: int = 200
    max_response_bytes: int = 5 * 1024 * 1024
    default_http_timeout: float = 10.0


class Ticker:
    """The deadline of one attempt, shared by every tick site of its compiled code."""

    _INITIAL_BATCH = 1024
    _CHECK_INTERVAL = 0.005  # aim to read the clock about every 5 ms

    def __init__(
        self, namespace: MutableMapping[str, Any], *, timeout_seconds: float, clock: Clock
    ) -> None:
        self._namespace = namespace
        self._clock = clock
        self._started = clock()
        self._deadline = self._started + timeout_seconds
        self._timeout = timeout_seconds
        self._batch = self._INITIAL_BATCH
        self._last_check = self._started
        self.expired = False
        namespace["_ticker_"] = itertools.repeat(True, self._batch)

    def remaining(self) -> float:
        """Seconds left before the deadline (never negative)."""
        return max(0.0, self._deadline - self._clock())

    def tick(self) -> bool:
        """Check the clock; raise :class:`DeadlineExceeded` once the deadline has passed."""
        if self.expired:
            raise DeadlineExceeded(self._message())
        now = self._clock()
        if now >= self._deadline:
            self.expire()
            raise DeadlineExceeded(self._message())
        elapsed = now - self._last_check
        if elapsed > 0:
            scaled = int(self._batch * self._CHECK_INTERVAL / elapsed)
            self._batch = min(100_000, max(16, scaled))
        self._last_check = now
        self._namespace["_ticker_"] = itertools.repeat(True, self._batch)
        return True

    def expire(self) -> None:
        """Make every later tick raise, as if the deadline had passed."""
        self.expired = True
        self._namespace["_ticker_"] = iter(())

    def _message(self) -> str:
        return f"generated code exceeded execution_timeout_seconds={self._timeout:g}"


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
