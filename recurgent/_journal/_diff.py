"""What changed in one copied container since the journal copied it (ADR 0027).

The journal keeps a :class:`Copied` record of each container it copies: the copy, its original,
a shallow record of the copy's first contents and its path from the memory root. At prepare,
:func:`container_patch` compares the copy with that record and yields the :class:`Patch` that
commits the difference in place (a dict's keys set and deleted and its order, a list's appends
or its new items, a set's members, a bytearray's bytes); :func:`factory_patch` commits a
defaultdict's new default factory, or refuses one the attempt made (ADR 0069). Host objects
other than containers diff themselves (:mod:`recurgent._journal._kinds`).
"""

from __future__ import annotations

import collections
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from recurgent._journal._kinds import HostKind
from recurgent._journal._shared import is_plain_factory, plain_factory
from recurgent._journal._writes import MISSING, Patch, Path, Rebuild
from recurgent._where import Location, Where, where_in_memory
from recurgent.errors import NonSerializableResultError

__all__ = ["Copied", "container_patch", "factory_patch", "ordered_items"]

_ORDERED = collections.OrderedDict


@dataclass(slots=True)
class Copied:
    """An object copied into the view: the copy, its original and the copy's first contents.

    ``kind`` is the host rule that copied it (``None`` for a builtin container); ``factory``
    the default factory a defaultdict's copy started with.
    """

    copy: Any
    original: Any
    contents: Any
    path: Path
    kind: HostKind | None = None
    factory: Any = MISSING  # a defaultdict copy's default factory when copied


def ordered_items(mapping: Any) -> list[tuple[Any, Any]]:
    """A dict's items in its order (an OrderedDict's own order, which ``move_to_end`` changes)."""
    if type(mapping) is _ORDERED:
        return list(mapping.items())
    return list(dict.items(mapping))


def _where(path: Path) -> Location:
    return where_in_memory(path)


def container_patch(
    entry: Copied,
    rebuild: Rebuild,
    resolve: Callable[[Any], Any | None],
    back: Callable[[Any], Any],
) -> Patch | None:
    """What changed in one copied container since it was copied, as a :class:`Patch` (``None``:
    nothing). ``back`` maps a key or member the attempt got from memory to memory's own."""
    copy, before = entry.copy, entry.contents
    where = _where(entry.path)
    # The container sits len(path) - 1 levels below memory's top: its items one more.
    depth = len(entry.path)
    if isinstance(copy, dict):
        now = ordered_items(copy)
        if len(now) == len(before) and all(
            a is c and b is d for (a, b), (c, d) in zip(now, before, strict=True)
        ):
            return None
        old = dict(before)
        changed: dict[Any, Any] = {}
        host_keys: list[Any] = []
        for key, value in now:
            if old.get(key, MISSING) is not value:
                plain_key = rebuild(key, Where(where, " key"), resolve=resolve, depth=depth)
                changed[plain_key] = rebuild(
                    value, Where(where, (plain_key,)), resolve=resolve, depth=depth
                )
                host_keys.append(plain_key)
            else:
                host_keys.append(back(key))
        kept = {id(key) for key, _ in now}
        removed = [back(key) for key, _ in before if id(key) not in kept]
        order: list[Any] = []
        if type(copy) is _ORDERED:
            # The order a set/delete patch would leave: kept keys as they were, new at the end.
            known = {id(key) for key, _ in before}
            unmoved = [k for k, _ in before if id(k) in kept] + [
                k for k, _ in now if id(k) not in known
            ]
            if [id(k) for k in unmoved] != [id(k) for k, _ in now]:
                order = host_keys
        return Patch(entry.original, entry.path, "dict", set=changed, delete=removed, items=order)
    if isinstance(copy, bytearray):
        if bytes(copy) == before:
            return None
        return Patch(entry.original, entry.path, "replace", items=list(bytes(copy)))
    if isinstance(copy, set):
        now_ids = {id(item): item for item in copy}
        before_ids = {id(item): item for item in before}
        if now_ids.keys() == before_ids.keys():
            return None
        added = [
            rebuild(item, Where(where, " member"), resolve=resolve, depth=depth)
            for key, item in now_ids.items()
            if key not in before_ids
        ]
        gone = [back(item) for key, item in before_ids.items() if key not in now_ids]
        return Patch(entry.original, entry.path, "set", delete=gone, items=added)
    items = list(copy)
    prefix = len(before)
    unchanged_prefix = len(items) >= prefix and all(
        a is b for a, b in zip(items, before, strict=False)
    )
    if unchanged_prefix and len(items) == prefix:
        return None
    if unchanged_prefix:
        # Appends only: commit them with extend, so appends made meanwhile by others stay.
        tail = [
            rebuild(item, Where(where, prefix + i), resolve=resolve, depth=depth)
            for i, item in enumerate(items[prefix:])
        ]
        return Patch(entry.original, entry.path, "extend", items=tail)
    # An item the container held when copied, kept once, stays where memory held it (same
    # container, same depth): memory's own object, not placed again, so neither rebuilt nor
    # marking memory's shape. A pop, sort, insert or removal of records marked an honest
    # memory shared for good, and every later patch walked it (red team R31, ADR 0161).
    held = {id(item): item for item in before}
    rebuilt = [
        back(item)
        if held.pop(id(item), MISSING) is item
        else rebuild(item, Where(where, i), resolve=resolve, depth=depth)
        for i, item in enumerate(items)
    ]
    return Patch(entry.original, entry.path, "replace", items=rebuilt)


def factory_patch(entry: Copied, resolve: Callable[[Any], Any | None]) -> Patch:
    """The default factory a program set on memory's defaultdict, for commit (ADR 0069).

    A plain factory (``list``, ``int``, ``None``...) or host code memory held (resolved to the
    host's own) commits; anything the attempt made would run program code in the host on
    every missing key after the attempt, and is refused as its result would be.
    """
    factory = entry.copy.default_factory
    held = resolve(factory)
    if held is None:
        if not is_plain_factory(factory):
            raise NonSerializableResultError(
                f"{_where(entry.path)}.default_factory is not a plain factory (list, dict, set, "
                "int, float, str, tuple, bool, bytes or None); a defaultdict in memory may not "
                "hold a function or class defined in an attempt"
            )
        held = plain_factory(factory)
    return Patch(entry.original, entry.path, "attrs", set={"default_factory": held})
