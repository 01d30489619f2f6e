"""Where a value sits in what a walker copies, written out as text only when an error names it.

A walker that built its path as text for every element copied the whole prefix each time: a
dict key of a million characters over a list of 400 000 made 400 GB of copies after the
deadline (10 s, red team R14). A :class:`Where` is one step on its parent; ``str()`` of it writes
the path out, with each key's text bounded.
"""

from __future__ import annotations

from typing import Any

from recurgent._repr import safe_repr

__all__ = ["Location", "Where", "where_in_memory"]

# The characters of one dict key a path shows at most.
_KEY_CHARS = 200


class Where:
    """One step below ``parent``: an index (``[3]``), a suffix (``" key"``, ``".value"``) or a
    1-tuple holding a dict key (``['name']``, bounded)."""

    __slots__ = ("_parent", "_step")

    def __init__(self, parent: Location, step: int | str | tuple[Any]) -> None:
        self._parent = parent
        self._step = step

    def __str__(self) -> str:
        steps: list[int | str | tuple[Any]] = []
        node: Location = self
        while isinstance(node, Where):
            steps.append(node._step)
            node = node._parent
        parts = [node]
        for step in reversed(steps):
            if isinstance(step, str):
                parts.append(step)
            elif isinstance(step, int):
                parts.append(f"[{step}]")
            else:
                parts.append(f"[{safe_repr(step[0], (), limit=_KEY_CHARS)}]")
        return "".join(parts)

    __repr__ = __str__


#: A path as text, or as steps written out on demand.
Location = str | Where


def where_in_memory(steps: tuple[Any, ...]) -> Where | str:
    """``context[k1][k2]...`` for a memory path of keys and indexes, written out on demand."""
    node: Location = "context"
    for step in steps:
        node = Where(node, (step,))
    return node
