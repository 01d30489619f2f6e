"""An attempt's memory writes as data: per-container patches and the top-level sets and deletes.

:class:`Writes` is what :meth:`Journal.prepare <recurgent._journal.Journal.prepare>` returns and
the lifecycle commits with :meth:`Writes.apply`, in place and under the agent's memory lock.
Every value a patch carries has been rebuilt by the boundary already (plain data, or an object
memory held before the attempt); applying runs no generated code and keeps the identity of
every container and host object it writes into. :meth:`Writes.as_plain` and
:func:`apply_plain` carry the writes of plain memory over a worker's pipe.
"""

from __future__ import annotations

import array
import collections
import random
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, cast

from recurgent._where import Location

__all__ = ["MISSING", "Patch", "Path", "Rebuild", "Writes", "apply_plain"]

MISSING: Any = object()

#: Where a container was first reached, from the memory root (keys, indexes, attribute names).
Path = tuple[Any, ...]


class Rebuild(Protocol):
    """The boundary's rebuild: a plain host value made from ``value`` (see ``_sandbox._boundary``).

    ``resolve`` maps an object the attempt got from memory to what memory holds for it (the
    original of a copy, or the object itself when memory already held it), and returns ``None``
    for an object the attempt made, which the boundary then rebuilds. ``depth``: how deep in
    memory ``value`` sits (an item of a container patched in place is as deep as the
    container's path is long), so the nesting cap counts from memory's top (red team R25).
    ``heights``: the levels below memory's own values measured so far in this commit, by id,
    shared by all its rebuilds so a memory value placed in many items is walked once (ADR 0156).
    """

    def __call__(
        self,
        value: Any,
        where: Location,
        *,
        resolve: Callable[[Any], Any | None],
        depth: int = 0,
        heights: dict[int, int] | None = None,
    ) -> Any: ...  # pragma: no cover - a protocol


@dataclass(frozen=True, slots=True)
class Patch:
    """In-place changes to one container (or other host object) memory already held.

    Attributes:
        target: The original object (host side).
        path: Where the attempt first reached it, from the memory root (keys and indexes).
        kind: ``dict`` (``set``/``delete`` of keys), ``extend`` (items appended to a list or
            deque), ``replace`` (new whole contents of a list, deque, bytearray or array),
            ``set`` (``add``/``discard`` of members), ``state`` (a ``random.Random``'s state,
            or a ``StringIO``/``BytesIO``'s ``__getstate__``; ``None``: close it), ``element``
            (an XML element's changed parts) or ``attrs`` (attributes of a wrapper such as
            ``UserDict``: ``set`` rebinds, ``delete`` removes).
        set: dict: key -> new value; attrs: name -> new value.
        delete: dict: keys removed; set: members removed; attrs: names removed.
        items: extend/replace: the items; set: members added; dict: an OrderedDict's keys in
            their new order (empty when the order is only what set/delete leave).
        state: state/element: what to restore (element: part -> value, ``MISSING`` unchanged).
    """

    target: Any
    path: Path
    kind: Literal["dict", "extend", "replace", "set", "state", "element", "attrs"]
    set: dict[Any, Any] = field(default_factory=dict)
    delete: list[Any] = field(default_factory=list)
    items: list[Any] = field(default_factory=list)
    state: Any = None

    def apply(self) -> None:
        """Write the change into the target, keeping its identity."""
        target = self.target
        if self.kind == "dict":
            for key in self.delete:
                target.pop(key, None)
            target.update(self.set)
            for key in self.items:  # an OrderedDict the attempt reordered: its final order
                if key in target:
                    target.move_to_end(key)
        elif self.kind == "extend":
            target.extend(self.items)
        elif self.kind == "replace":
            if isinstance(target, collections.deque):
                target.clear()
                target.extend(self.items)
            elif isinstance(target, array.array):
                target[:] = array.array(target.typecode, self.items)
            else:
                target[:] = self.items
        elif self.kind == "set":
            target.difference_update(self.delete)
            target.update(self.items)
        elif self.kind == "state":
            _restore_state(target, self.state)
        elif self.kind == "element":
            _restore_element(target, self.state)
        else:
            for name in self.delete:
                delattr(target, name)
            for name, value in self.set.items():
                setattr(target, name, value)

    def as_plain(self) -> dict[str, Any]:
        """This patch as plain data, addressed by path instead of by object.

        Raises:
            TypeError: a patch of a host object (``state``, ``element``, ``attrs``); those
                arise only in the host process, as a worker's memory is plain data.
        """
        if self.kind in ("state", "element", "attrs"):
            raise TypeError(f"a {self.kind!r} patch of a host object cannot cross a pipe")
        return {
            "path": list(self.path),
            "kind": self.kind,
            "set": [[key, value] for key, value in self.set.items()],
            "delete": list(self.delete),
            "items": list(self.items),
        }


def _restore_state(target: Any, state: Any) -> None:
    if isinstance(target, random.Random):
        target.setstate(state)
    elif target.closed:
        return  # the host closed it meanwhile: its later write wins
    elif state is None:
        target.close()
    else:
        target.__setstate__(state)


def _restore_element(target: Any, parts: dict[str, Any]) -> None:
    for name in ("tag", "text", "tail"):
        if parts[name] is not MISSING:
            setattr(target, name, parts[name])
    if parts["attrib"] is not MISSING:
        attributes = target.attrib  # the host may hold this dict: refilled, not replaced
        attributes.clear()
        attributes.update(parts["attrib"])
    if parts["children"] is not MISSING:
        target[:] = parts["children"]


@dataclass(frozen=True, slots=True)
class Writes:
    """Everything one attempt changed in memory, ready to commit.

    Attributes:
        set: Top-level keys written, with their rebuilt values.
        delete: Top-level keys removed.
        patches: In-place changes to containers memory already held.
    """

    set: dict[str, Any] = field(default_factory=dict)
    delete: list[str] = field(default_factory=list)
    patches: list[Patch] = field(default_factory=list)
    after: list[Callable[[], None]] = field(default_factory=list)

    @property
    def empty(self) -> bool:
        """True when the attempt changed nothing and left nothing to run at commit."""
        return not (self.set or self.delete or self.patches or self.after)

    def touched_keys(self) -> list[Any] | None:
        """The top-level keys this commit changes, or None when a patch's root is unknown."""
        keys: list[Any] = [*self.set, *self.delete]
        for patch in self.patches:
            if not patch.path:
                return None
            keys.append(patch.path[0])
        return keys

    def apply(self, memory: dict[str, Any]) -> None:
        """Commit: write everything into ``memory`` and the containers it holds, in place,
        then run the attempt's :func:`~recurgent._journal.after_commit` actions in order.

        The caller holds the agent's memory lock; cost is proportional to the writes.
        """
        for patch in self.patches:
            patch.apply()
        for key in self.delete:
            memory.pop(key, None)
        memory.update(self.set)
        for action in self.after:
            action()

    def as_plain(self) -> dict[str, Any]:
        """The writes as plain data (for a worker process to send back over a pipe)."""
        return {
            "set": dict(self.set),
            "delete": list(self.delete),
            "patches": [patch.as_plain() for patch in self.patches],
        }


def apply_plain(memory: dict[str, Any], plain: Mapping[str, Any]) -> None:
    """Commit writes received as plain data (:meth:`Writes.as_plain`), e.g. from a worker.

    The writes come from another process and are treated as an attacker's (red-team F13):
    each patch is addressed by its path from the memory root, through dicts (scalar keys) and
    lists or tuples (indexes in range) only, and must end on an exact ``dict`` (``dict``
    patch) or ``list`` (``extend``/``replace``); any other patch (a container the host replaced
    or removed meanwhile, whose later write wins, or a path into another kind of object) is
    skipped. Every patch is checked before anything is written, so a malformed one cannot
    leave memory half-written. The caller holds the agent's memory lock.

    Raises:
        ValueError: ``plain`` is not shaped like :meth:`Writes.as_plain` (nothing written).
    """
    try:
        patches = [_plain_patch(memory, entry) for entry in plain.get("patches", ())]
        delete = list(plain.get("delete", ()))
        update = dict(plain.get("set", {}))
    except (TypeError, ValueError, KeyError, AttributeError) as problem:
        raise ValueError(f"plain writes are malformed: {problem}") from None
    for patch in patches:
        if patch is not None:
            patch.apply()
    for key in delete:
        memory.pop(key, None)
    memory.update(update)


# The containers a plain patch may change, by kind; and the keys it may use (hashing one of
# these runs no code of whoever sent the patch).
_PLAIN_TARGETS: dict[str, type] = {"dict": dict, "extend": list, "replace": list}
_PLAIN_KEYS = frozenset({str, int, float, bool, type(None)})


def _plain_patch(memory: dict[str, Any], entry: Mapping[str, Any]) -> Patch | None:
    """The patch ``entry`` describes on memory's own container, or ``None`` if it does not fit."""
    kind, path = entry["kind"], entry["path"]
    wanted = _PLAIN_TARGETS.get(kind) if type(kind) is str else None
    if wanted is None or type(path) not in (list, tuple) or not path:
        return None
    pairs = [(key, value) for key, value in entry["set"]]
    delete = list(entry["delete"])
    items = list(entry["items"])
    if not all(type(key) in _PLAIN_KEYS for key, _ in pairs) or not all(
        type(key) in _PLAIN_KEYS for key in delete
    ):
        return None
    node: Any = memory
    for step in path:
        keyed = type(node) is dict and type(step) in _PLAIN_KEYS and step in node
        indexed = type(node) in (list, tuple) and type(step) is int and 0 <= step < len(node)
        if not (keyed or indexed):
            return None
        node = node[step]
    if type(node) is not wanted:
        return None
    return Patch(
        node,
        tuple(path),
        cast(Literal["dict", "extend", "replace"], kind),
        set=dict(pairs),
        delete=delete,
        items=items,
    )
