"""MemorySnapshot: transactional rollback of an agent's memory, restored in place (ADR 0008).

A snapshot records the shallow contents of every mutable container reachable from memory
(dicts, lists, sets, deques, bytearrays, including those inside tuples and Outcomes). Restoring
writes those contents back into the *same* container objects, so the memory dict and every
nested list or dict a caller holds a reference to stay valid and end up exactly as they were.
"""

from __future__ import annotations

import collections
from dataclasses import dataclass
from typing import Any

from recurgent.outcome import Outcome

__all__ = ["MemorySnapshot"]


@dataclass(frozen=True, slots=True)
class _Saved:
    container: Any
    contents: Any


class MemorySnapshot:
    """The state of an agent's memory at one moment."""

    __slots__ = ("_saved",)

    def __init__(self, saved: list[_Saved]) -> None:
        self._saved = saved

    @classmethod
    def take(cls, memory: dict[str, Any]) -> MemorySnapshot:
        """Record ``memory`` and everything mutable inside it."""
        saved: list[_Saved] = []
        seen: set[int] = set()
        # Iterative, so any nesting depth is recorded; ``seen`` handles cycles and shared
        # containers (each is recorded once and restored once).
        stack: list[Any] = [memory]
        while stack:
            item = stack.pop()
            if id(item) in seen:
                continue
            seen.add(id(item))
            children: Any = ()
            if isinstance(item, dict):
                saved.append(_Saved(item, list(item.items())))
                children = list(item.values())
            elif isinstance(item, list | collections.deque):
                saved.append(_Saved(item, list(item)))
                children = list(item)
            elif isinstance(item, set):
                saved.append(_Saved(item, set(item)))
                children = list(item)
            elif isinstance(item, bytearray):
                saved.append(_Saved(item, bytes(item)))
            elif isinstance(item, tuple | frozenset):
                children = list(item)
            elif isinstance(item, Outcome):
                children = [item.value, item.metadata]
            stack.extend(children)
        return cls(saved)

    def restore(self) -> None:
        """Put every recorded container back to its recorded contents, in place."""
        for entry in self._saved:
            container, contents = entry.container, entry.contents
            if isinstance(container, dict):
                container.clear()
                container.update(contents)
            elif isinstance(container, collections.deque):
                container.clear()
                container.extend(contents)
            elif isinstance(container, list | bytearray):
                container[:] = contents
            elif isinstance(container, set):
                container.clear()
                container.update(contents)
