"""Random draws generated code makes over many items: checked, and ticking so the deadline
stops them (``shuffle``, ADR 0069; ``sample`` and ``choices``, ADR 0075).

``random.Random``'s ``shuffle``, ``sample`` and ``choices`` are loops in the ``random``
module's Python code, which never tick. The versions here make the same draws of the same
generator in the same order (a generator in the same state gives the same result) and tick
every 4,096 draws; :func:`ticking_draws` hands them out with the tick closed over.
"""

from __future__ import annotations

import collections.abc
import random
from collections.abc import Callable
from typing import Any, cast

from recurgent._sandbox._measure import check_items

__all__ = ["checked_choices", "checked_sample", "checked_shuffle", "ticking_draws"]

# Swaps between two ticks of a shuffle: a tick costs about as much as a few hundred swaps.
_SHUFFLE_TICK_EVERY = 4096


def checked_shuffle(rng: Any, items: Any, tick: Callable[[], bool]) -> None:
    """``Random.shuffle`` that ticks, so the deadline stops a huge one (red-team R2, G5).

    ``random.Random.shuffle`` is a loop in the ``random`` module's Python code, which never
    ticks: ten million items ran about 27 s past a 1 s deadline. This is the same
    Fisher-Yates walk over the generator's own ``_randbelow``, so a generator in the same state
    gives the same order.
    """
    randbelow = rng._randbelow
    for i in reversed(range(1, len(items))):
        j = randbelow(i + 1)
        items[i], items[j] = items[j], items[i]
        if not i % _SHUFFLE_TICK_EVERY:
            tick()


class _TickingDraws:
    """A generator as ``Random.sample`` and ``Random.choices`` read it, ticking every 4,096
    draws (red-team R3, H3).

    Both are loops in the ``random`` module's Python code, which never tick: a sample of ten
    million items ran about 15 s past the deadline. They read nothing of their receiver but
    ``_randbelow``, ``random`` and ``sample`` (a sample with ``counts`` samples a ``range``), so
    running them on this stand-in makes the same draws of the same generator, in the same
    order: a generator in the same state gives the same result.
    """

    __slots__ = ("_draws", "_rng", "_tick")

    def __init__(self, rng: random.Random, tick: Callable[[], bool]) -> None:
        self._rng = rng
        self._tick = tick
        self._draws = 0

    def _counted(self) -> None:
        self._draws += 1
        if not self._draws % _SHUFFLE_TICK_EVERY:
            self._tick()

    def _randbelow(self, n: int) -> int:
        self._counted()
        below: int = self._rng._randbelow(n)  # type: ignore[attr-defined]  # Random's own helper
        return below

    def random(self) -> float:
        self._counted()
        return self._rng.random()

    def sample(self, population: Any, k: int, *, counts: Any = None) -> list[Any]:
        return random.Random.sample(_as_random(self), population, k, counts=counts)


class _TickingSequence(collections.abc.Sequence[Any]):
    """A population whose item reads tick: ``sample`` with ``counts`` ends with one bisect and
    one read per chosen item, after its last draw."""

    __slots__ = ("_items", "_reads", "_tick")

    def __init__(self, items: Any, tick: Callable[[], bool]) -> None:
        self._items = items
        self._tick = tick
        self._reads = 0

    def __len__(self) -> int:
        return len(self._items)

    def __getitem__(self, index: Any) -> Any:
        self._reads += 1
        if not self._reads % _SHUFFLE_TICK_EVERY:
            self._tick()
        return self._items[index]


def _as_random(draws: _TickingDraws) -> random.Random:
    # Random.sample and Random.choices are plain functions that read only what _TickingDraws
    # has; the cast tells mypy so.
    return cast(random.Random, draws)


def checked_sample(
    rng: random.Random, population: Any, k: int, *, counts: Any = None, tick: Callable[[], bool]
) -> list[Any]:
    """``Random.sample`` with ``k`` capped (``counts`` can make a population of any size) that
    ticks, so the deadline stops a huge one (red-team R3, H3)."""
    check_items(k, "sample()")
    if counts is not None and isinstance(population, collections.abc.Sequence):
        population = _TickingSequence(population, tick)
    draws = _as_random(_TickingDraws(rng, tick))
    return random.Random.sample(draws, population, k, counts=counts)


def checked_choices(
    rng: random.Random,
    population: Any,
    weights: Any = None,
    *,
    cum_weights: Any = None,
    k: int = 1,
    tick: Callable[[], bool],
) -> list[Any]:
    """``Random.choices`` with ``k`` capped that ticks (red-team R3, H3)."""
    check_items(k, "choices()")
    draws = _as_random(_TickingDraws(rng, tick))
    return random.Random.choices(draws, population, weights, cum_weights=cum_weights, k=k)


def ticking_draws(rng: random.Random, tick: Callable[[], bool]) -> dict[str, Callable[..., Any]]:
    """``shuffle``, ``sample`` and ``choices`` of ``rng`` as generated code calls them: checked
    and ticking, with ``tick`` closed over. A ``partial`` holding ``tick=`` let a caller
    replace it (``random.shuffle(x, tick=int)`` ran past the deadline, red-team R3, H4)."""

    def shuffle(items: Any, /) -> None:
        checked_shuffle(rng, items, tick)

    def sample(population: Any, k: int, *, counts: Any = None) -> list[Any]:
        return checked_sample(rng, population, k, counts=counts, tick=tick)

    def choices(
        population: Any, weights: Any = None, *, cum_weights: Any = None, k: int = 1
    ) -> list[Any]:
        return checked_choices(rng, population, weights, cum_weights=cum_weights, k=k, tick=tick)

    return {"shuffle": shuffle, "sample": sample, "choices": choices}
