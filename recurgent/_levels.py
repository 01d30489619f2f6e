"""The levels of plain data: the nesting cap, what it counts, and where a patch lands (ADR 0161).

A value is refused when a non-scalar in it sits more than :data:`MAX_DEPTH` levels below the
top (the boundary's rebuild, ADRs 0152 and 0156). :func:`parts` says what counts as one level
below a value; the boundary measures memory's own values with it, and :func:`deep_patch` with
it finds an in-place patch whose new items would sit past the cap at the deepest place memory
holds the patched container (a container memory holds at two places is patched through
whichever one the program reached: counted only there, twenty rounds stored 1 321 levels, red
team R30). The journal's commit and a worker's parent use :func:`deep_patch` alike.
"""

from __future__ import annotations

import collections
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from recurgent._where import where_in_memory
from recurgent.outcome import Outcome

if TYPE_CHECKING:
    from recurgent._journal._writes import Patch

__all__ = [
    "MAX_DEPTH",
    "PLACED_AGAIN",
    "SCALAR_TYPES",
    "MemoryShape",
    "deep_patch",
    "deep_place",
    "parts",
    "shares_a_part",
]

MAX_DEPTH = 64
SCALAR_TYPES = frozenset({str, int, float, bool, bytes, type(None)})
#: The key a rebuild sets in its commit's heights table (keyed by ids, which are never
#: negative) when it places a part a second time: memory's own container at a new place, or a
#: part the written value reaches twice. Memory may then hold a container at two places.
PLACED_AGAIN = -1


class MemoryShape:
    """Whether an agent's memory may hold one container at two places (ADR 0161).

    A memory that never did is a tree as far as a program could make it: the path a program
    reached a container by is then its only place, and a patch counted along it needs no walk
    of memory. The first commit that places a part again (:data:`PLACED_AGAIN`) sets
    ``shared`` for good; every later commit that patches a container walks memory. Sharing
    the host's own code builds into memory is not seen (the host is trusted).
    """

    __slots__ = ("shared",)

    def __init__(self) -> None:
        self.shared = False


def parts(node: Any) -> Any:
    """The parts of plain data ``node`` the nesting cap counts below it, or ``None`` for a leaf
    (the rebuild's containers: dicts' keys and values, sequences, sets, an Outcome's value and
    metadata, an exception's arguments)."""
    kind = type(node)
    if isinstance(node, dict):
        return [*dict.keys(node), *dict.values(node)]
    if isinstance(node, list | tuple | set | frozenset | collections.deque):
        return node
    if kind is Outcome:
        return (node.value, node.metadata)
    if isinstance(node, BaseException):
        return BaseException.__dict__["args"].__get__(node, kind)
    return None


def shares_a_part(value: Any) -> bool:
    """Whether plain data ``value`` reaches one of its containers twice (a part at two places,
    or a cycle): written into memory past the journal (a program's ``handle.x = v`` or
    ``handle.remember(x=v)`` on another agent, which the host applies as a setter), it makes
    that memory hold a container at two places (red team R31). Iterative, each part once."""
    seen: set[int] = set()
    stack = [value]
    while stack:
        node = stack.pop()
        if type(node) in SCALAR_TYPES:
            continue
        below = parts(node)
        if below is None:
            continue  # a leaf: no level below it to grow
        if id(node) in seen:
            return True
        seen.add(id(node))
        stack.extend(below)
    return False


def _added(patch: Patch) -> list[Any]:
    """The values a container patch writes into its container (a dict's keys and values)."""
    if patch.kind == "dict":
        return [*patch.set, *patch.set.values()]
    if patch.kind in ("extend", "replace", "set"):
        return patch.items
    return []  # a host object's state or attributes: not a level parts() counts


def _applied(contents: Any, patch: Patch) -> Any:
    """A shallow copy of ``contents`` (the container, or an earlier copy) with ``patch``
    applied, as ``Patch.apply`` would leave it."""
    if patch.kind == "dict":
        after = dict(dict.items(contents))
        for key in patch.delete:
            after.pop(key, None)
        after.update(patch.set)
        return after
    if patch.kind == "extend":
        return [*contents, *patch.items]
    if patch.kind == "replace":
        return list(patch.items)
    after_set = set(contents)
    after_set.difference_update(patch.delete)
    after_set.update(patch.items)
    return after_set


# What the walk keeps of a part, by id: its height, the deepest level a patch's new item
# reaches below it (-1: none), that patch, and how far below the part its container sits.
_Walked = tuple[int, int, Any, int]
_LEAF: _Walked = (0, -1, None, 0)
_OPEN: _Walked = (0, -1, None, -1)  # being walked: reaching it again closes a cycle


def deep_patch(
    memory: Mapping[Any, Any],
    written: Mapping[Any, Any],
    deleted: Iterable[Any],
    patches: Sequence[Patch],
    *,
    most: int = MAX_DEPTH,
) -> tuple[Patch, int] | None:
    """The first patch whose new items would put a non-scalar more than ``most`` levels below
    the top of ``memory`` once the commit is applied (``written`` set, ``deleted`` removed,
    every patch applied), with the deepest level its container sits at there; ``None`` when
    all fit. ``most``: the rebuild's cap, or one less for a worker's encoder (ADR 0152).

    Each patched container is counted at the deepest place any of memory's top-level values
    holds it after the commit (a value written in the same commit may place it deeper, and so
    may another patch's items). Only a patch that writes a non-scalar can add a level: without
    one nothing is walked. Otherwise one walk of memory, iterative, each part once (memoized by
    id), a part reached again while it is walked closing a cycle that adds no level (as the
    boundary's heights count, ADR 0156).
    """
    fresh: dict[int, set[int]] = {}
    blamed: dict[int, Patch] = {}
    for patch in patches:
        added = _added(patch)
        if added and not set(map(type, added)) <= SCALAR_TYPES:
            items = fresh.setdefault(id(patch.target), set())
            items.update(id(item) for item in added if type(item) not in SCALAR_TYPES)
            blamed.setdefault(id(patch.target), patch)
    if not fresh:
        return None
    # The contents each patched container holds once the commit is applied.
    after: dict[int, Any] = {}
    for patch in patches:
        if patch.kind in ("dict", "extend", "replace", "set"):
            key = id(patch.target)
            after[key] = _applied(after.get(key, patch.target), patch)
    memo: dict[int, _Walked] = {}
    for top in _tops(memory, written, deleted):
        if type(top) in SCALAR_TYPES:
            continue
        _, deepest, patch, level = _walk(top, memo, after, fresh, blamed)
        if deepest > most:
            return patch, level
    return None


def deep_place(patch: Patch, level: int) -> str:
    """How a refusal names the patch :func:`deep_patch` found, its container ``level`` deep."""
    return (
        f"{where_in_memory(tuple(patch.path))} with its new items, held {level} levels below "
        "memory's top,"
    )


def _tops(
    memory: Mapping[Any, Any], written: Mapping[Any, Any], deleted: Iterable[Any]
) -> Iterator[Any]:
    """Memory's top-level keys and values once the commit is applied."""
    gone = set(deleted)
    for key, value in list(memory.items()):
        if key not in written and key not in gone:
            yield key
            yield value
    for key, value in written.items():
        yield key
        yield value


def _walk(
    root: Any,
    memo: dict[int, _Walked],
    after: dict[int, Any],
    fresh: dict[int, set[int]],
    blamed: dict[int, Patch],
) -> _Walked:
    """What the walk keeps of ``root`` (``_Walked``): every part once, kept in ``memo`` by id,
    iteratively (memory may be deeper than the stack). A container of scalars only is a leaf,
    told at C speed (most of memory's lists and records end in one)."""
    known = memo.get(id(root))
    if known is not None:
        return known
    memo[id(root)] = _OPEN
    stack: list[list[Any]] = [_frame(root, after, fresh)]
    while stack:
        frame = stack[-1]
        for part in frame[1]:
            if type(part) in SCALAR_TYPES:
                continue
            key = id(part)
            entry = memo.get(key)
            if entry is None:
                patched = after.get(key)
                below = parts(part if patched is None else patched)
                if below is not None and not set(map(type, below)) <= SCALAR_TYPES:
                    memo[key] = _OPEN
                    stack.append([part, iter(below), 0, -1, None, 0, fresh.get(key)])
                    break
                memo[key] = entry = _LEAF
            elif entry is _OPEN:
                continue  # a cycle back to a part being walked: no level
            if entry is _LEAF and frame[6] is None:
                if frame[2] == 0:
                    frame[2] = 1  # _absorb, inlined for the most common part
            else:
                _absorb(frame, key, entry, blamed)
        else:
            stack.pop()
            done: _Walked = (frame[2], frame[3], frame[4], frame[5])
            memo[id(frame[0])] = done
            if stack:
                _absorb(stack[-1], id(frame[0]), done, blamed)
    return memo[id(root)]


def _frame(node: Any, after: dict[int, Any], fresh: dict[int, set[int]]) -> list[Any]:
    """[node, its parts still to see, height, deepest, its patch, level, its new items]."""
    patched = after.get(id(node))
    below = parts(node if patched is None else patched)
    return [node, iter(() if below is None else below), 0, -1, None, 0, fresh.get(id(node))]


def _absorb(frame: list[Any], key: int, entry: _Walked, blamed: dict[int, Patch]) -> None:
    """Count a walked part (``key``, its id) one level below ``frame``'s node."""
    height, deepest, patch, level = entry
    if height >= frame[2]:
        frame[2] = height + 1
    if deepest >= 0 and deepest >= frame[3]:
        frame[3], frame[4], frame[5] = deepest + 1, patch, level + 1
    new = frame[6]
    if new is not None and key in new and height >= frame[3]:
        # A new item of this node's patch: its levels count from the node.
        frame[3], frame[4], frame[5] = height + 1, blamed[id(frame[0])], 0
