"""The checked arguments of one ``Agent.map``/``starmap`` call (ADR 0110).

Every developer's mistake in the arguments (a reserved or private method name, items that are
not an iterable, a bad batch size, concurrency, progress flag or timeout) is a ``UsageError``
raised here, before any item runs or any provider is asked.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from recurgent._execution import ItemCall
from recurgent.errors import UsageError

__all__ = ["MapRequest", "map_request"]


@dataclass(frozen=True, slots=True)
class MapRequest:
    """One ``map``/``starmap`` call, checked."""

    method: str
    calls: list[ItemCall]
    executor: object
    batch_size: int | None
    concurrency: int | None
    progress: bool
    timeout_seconds: float | None
    host_call: bool
    star: bool


def _positive_int(name: str, value: object) -> int | None:
    if value is None:
        return None
    if type(value) is not int or value < 1:
        raise UsageError(f"{name} must be a positive int or None, got {value!r}")
    return value


def map_request(
    method: object,
    items: Iterable[Any],
    *,
    star: bool,
    executor: object,
    batch_size: object,
    concurrency: object,
    progress: object,
    timeout_seconds: object,
    host_call: bool,
    reserved: frozenset[str],
) -> MapRequest:
    """Check the arguments of ``map``/``starmap`` (``UsageError`` for a developer's mistake)."""
    if not isinstance(method, str) or not method.isidentifier() or method.startswith("_"):
        raise UsageError(f"method must be the name of a public dynamic method, got {method!r}")
    if method in reserved:
        raise UsageError(f"{method!r} is one of the Agent's own names, not a dynamic method")
    if isinstance(items, str | bytes) or not isinstance(items, Iterable):
        raise UsageError(f"items must be an iterable of items (a list, a generator), got {items!r}")
    if type(progress) is not bool:
        raise UsageError(f"progress must be True or False, got {progress!r}")
    if timeout_seconds is not None and (
        type(timeout_seconds) not in (int, float)
        or not math.isfinite(timeout_seconds)  # type: ignore[arg-type]
        or timeout_seconds <= 0  # type: ignore[operator]
    ):
        raise UsageError(
            f"timeout_seconds must be a positive number or None, got {timeout_seconds!r}"
        )
    calls: list[ItemCall] = []
    for index, item in enumerate(items):
        if not star:
            calls.append(((item,), {}))
        elif isinstance(item, str | bytes) or not isinstance(item, Iterable):
            raise UsageError(f"starmap item {index} must be an iterable of arguments, got {item!r}")
        else:
            calls.append((tuple(item), {}))
    return MapRequest(
        method=method,
        calls=calls,
        executor=executor,
        batch_size=_positive_int("batch_size", batch_size),
        concurrency=_positive_int("concurrency", concurrency),
        progress=progress,
        timeout_seconds=None if timeout_seconds is None else float(timeout_seconds),  # type: ignore[arg-type]
        host_call=host_call,
        star=star,
    )
