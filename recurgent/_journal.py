"""Journaled memory: one attempt's private view of an agent's memory, committed in place or dropped.

An attempt never writes an agent's memory directly (ADR 0027). It works on a :class:`MemoryView`,
a ``dict`` subclass whose storage starts as a shallow copy of memory's top level (cost: the
number of keys, never the size of the values). The first time generated code reaches a value
through the view, a mutable value (dict, list, set, deque, bytearray, or a tuple or Outcome
holding one) is deep-copied into the view; the journal keeps each copy's original and a shallow
record of the copy's contents at copy time.

* **discard** (rollback) drops the view: nothing the attempt did ever reached memory, so a write
  made meanwhile by the host, another thread or another agent always survives. Cost: O(1).
* **prepare** turns what the attempt changed into :class:`Writes`: top-level keys set or deleted,
  and a :class:`Patch` for each copied container whose contents changed. New values are rebuilt
  by the boundary (plain data only); copies map back to their originals, so commit keeps the
  identity of every container a caller holds. Cost: O(what was touched).
* **commit** applies the writes in place, under the agent's memory lock.

Usage::

    journal = Journal(memory)          # begin
    view = journal.view                # hand to generated code
    writes = journal.prepare(rebuild)  # raises NonSerializableResultError for code objects
    writes.apply(memory)               # commit (or journal.discard(): rollback)

``Writes.as_plain()`` renders the writes as plain data (top-level sets and deletes, and container
patches addressed by their path from the memory root), for a worker that ships them over a pipe;
:func:`apply_plain` commits such plain writes on the host side.
"""

from __future__ import annotations

import collections
import contextvars
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from recurgent.outcome import Outcome

__all__ = [
    "REDIRECTED_DICT_METHODS",
    "Journal",
    "MemoryView",
    "Patch",
    "Rebuild",
    "Writes",
    "after_commit",
    "apply_plain",
    "redirect_unbound",
    "writable",
]

_ATOMS = frozenset({str, int, float, bool, bytes, type(None), complex, frozenset, range})
_DICTS = frozenset({dict, collections.OrderedDict, collections.Counter, collections.defaultdict})
_SEQUENCES = frozenset({list, collections.deque})
_MISSING: Any = object()

Path = tuple[Any, ...]


class Rebuild(Protocol):
    """The boundary's rebuild: a plain host value made from ``value`` (see ``_sandbox._boundary``).

    ``resolve`` maps an object the attempt got from memory to what memory holds for it (the
    original of a copy, or the object itself when memory already held it), and returns ``None``
    for an object the attempt made, which the boundary then rebuilds.
    """

    def __call__(
        self, value: Any, where: str, *, resolve: Callable[[Any], Any | None]
    ) -> Any: ...  # pragma: no cover - a protocol


@dataclass(slots=True)
class _Copied:
    """A container copied into the view: the copy, its original and the copy's first contents."""

    copy: Any
    original: Any
    contents: Any
    path: Path


@dataclass(frozen=True, slots=True)
class Patch:
    """In-place changes to one container memory already held.

    Attributes:
        target: The original container (host side).
        path: Where the attempt first reached it, from the memory root (keys and indexes).
        kind: ``dict`` (``set``/``delete`` of keys), ``extend`` (items appended to a list or
            deque), ``replace`` (new whole contents of a list, deque or bytearray) or ``set``
            (``add``/``discard`` of members).
        set: dict: key -> new value.
        delete: dict: keys removed; set: members removed.
        items: extend/replace: the items; set: members added.
    """

    target: Any
    path: Path
    kind: Literal["dict", "extend", "replace", "set"]
    set: dict[Any, Any] = field(default_factory=dict)
    delete: list[Any] = field(default_factory=list)
    items: list[Any] = field(default_factory=list)

    def apply(self) -> None:
        """Write the change into the target container."""
        target = self.target
        if self.kind == "dict":
            for key in self.delete:
                target.pop(key, None)
            target.update(self.set)
        elif self.kind == "extend":
            target.extend(self.items)
        elif self.kind == "replace":
            if isinstance(target, collections.deque):
                target.clear()
                target.extend(self.items)
            else:
                target[:] = self.items
        else:
            target.difference_update(self.delete)
            target.update(self.items)

    def as_plain(self) -> dict[str, Any]:
        """This patch as plain data, addressed by path instead of by object."""
        return {
            "path": list(self.path),
            "kind": self.kind,
            "set": [[key, value] for key, value in self.set.items()],
            "delete": list(self.delete),
            "items": list(self.items),
        }


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

    def apply(self, memory: dict[str, Any]) -> None:
        """Commit: write everything into ``memory`` and the containers it holds, in place,
        then run the attempt's :func:`after_commit` actions in order.

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

    Each patch is addressed by its path from the memory root; a patch whose container is no
    longer there (the host replaced or removed it meanwhile) is skipped, as the host's later
    write wins. The caller holds the agent's memory lock.
    """
    for entry in plain.get("patches", ()):
        target = _follow(memory, entry["path"])
        if target is _MISSING:
            continue
        Patch(
            target,
            tuple(entry["path"]),
            entry["kind"],
            set=dict(entry["set"]),
            delete=list(entry["delete"]),
            items=list(entry["items"]),
        ).apply()
    for key in plain.get("delete", ()):
        memory.pop(key, None)
    memory.update(plain.get("set", {}))


def _follow(memory: dict[str, Any], path: Sequence[Any]) -> Any:
    node: Any = memory
    for step in path:
        try:
            if isinstance(node, Outcome):
                node = getattr(node, step) if step in ("value", "metadata") else _MISSING
            elif isinstance(node, collections.deque):
                node = list(node)[step]
            else:
                node = node[step]
        except (KeyError, IndexError, TypeError):
            return _MISSING
        if node is _MISSING:
            return _MISSING
    return node


def _is_namedtuple(kind: type) -> bool:
    """A class ``collections.namedtuple`` made (or a host subclass of one)."""
    return issubclass(kind, tuple) and isinstance(getattr(kind, "_fields", None), tuple)


class MemoryView(dict):  # type: ignore[type-arg]
    """``context``/``memory`` as generated code sees it: a dict, private to one attempt.

    Every way of reading a value (``[]``, ``get``, ``setdefault``, ``pop``, ``items``,
    ``values``, ``copy``, ``|``, ``==``, ``dict(view)``, ``{**view}``) goes through
    :meth:`__getitem__`, which copies a mutable value on first touch. ``__iter__`` is overridden
    so CPython's dict fast paths (which read the storage directly) fall back to these methods.
    """

    __slots__ = ("_journal",)
    _journal: Journal

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("memory views are made by the runtime; build a plain dict instead")

    # -- reads: every value a read returns is the attempt's own copy

    def __getitem__(self, key: Any) -> Any:
        return self._journal._touch(key, dict.__getitem__(self, key))

    def get(self, key: Any, default: Any = None) -> Any:
        if dict.__contains__(self, key):
            return self[key]
        return default

    def setdefault(self, key: Any, default: Any = None) -> Any:
        if dict.__contains__(self, key):
            return self[key]
        dict.__setitem__(self, key, default)
        return default

    def pop(self, key: Any, *default: Any) -> Any:
        if dict.__contains__(self, key):
            value = self[key]
            dict.__delitem__(self, key)
            return value
        if default:
            return default[0]
        raise KeyError(key)

    def popitem(self) -> tuple[Any, Any]:
        if not dict.__len__(self):
            raise KeyError("popitem(): dictionary is empty")
        key = next(dict.__reversed__(self))
        return key, self.pop(key)

    def __iter__(self) -> Iterator[Any]:
        return dict.__iter__(self)

    def items(self) -> Any:
        self._journal._touch_all()
        return dict.items(self)

    def values(self) -> Any:
        self._journal._touch_all()
        return dict.values(self)

    def copy(self) -> dict[Any, Any]:
        self._journal._touch_all()
        return dict(dict.items(self))

    def __or__(self, other: Any) -> Any:
        if not isinstance(other, dict):
            return NotImplemented
        merged = self.copy()
        merged.update(other)
        return merged

    def __ror__(self, other: Any) -> Any:
        if not isinstance(other, dict):
            return NotImplemented
        merged = dict(other)
        merged.update(self.copy())
        return merged

    def __ior__(self, other: Any) -> MemoryView:
        self.update(other)
        return self

    def __eq__(self, other: object) -> bool:
        # Comparing values could hand an original to a generated __eq__: compare copies.
        self._journal._touch_all()
        return dict.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        self._journal._touch_all()
        return dict.__ne__(self, other)

    __hash__ = None

    # -- copying and pickling give a plain dict of the attempt's copies, never the journal

    def __copy__(self) -> dict[Any, Any]:
        return self.copy()

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[Any, Any]:
        import copy

        return copy.deepcopy(self.copy(), memo)

    def __reduce_ex__(self, protocol: Any) -> Any:
        return (dict, (self.copy(),))


# Attempts running in this context, as (memory id, view) pairs: host operations made on an
# attempt's behalf (delegate() registering a tool) write into that attempt's view.
_ACTIVE: contextvars.ContextVar[tuple[tuple[int, MemoryView], ...]] = contextvars.ContextVar(
    "recurgent_active_views", default=()
)


def writable(memory: dict[str, Any]) -> dict[str, Any]:
    """Where a host operation run for generated code should write ``memory``.

    Inside an attempt of the agent that owns ``memory`` this is the attempt's view, so the
    write commits or rolls back with the attempt; anywhere else it is ``memory`` itself.
    """
    for owner, view in reversed(_ACTIVE.get()):
        if owner == id(memory):
            return view
    return memory


def after_commit(memory: dict[str, Any], action: Callable[[], None]) -> bool:
    """Run ``action`` when the attempt now writing ``memory`` commits, never if it is rolled
    back; False when no attempt of that memory is active here (the caller acts at once).

    For effects outside memory that must follow the attempt (a tool registered on disk).
    ``action`` runs under the agent's memory lock and must not raise.
    """
    for owner, view in reversed(_ACTIVE.get()):
        if owner == id(memory):
            view._journal._after.append(action)
            return True
    return False


def redirect_unbound(name: str, method: Any) -> Any:
    """``dict.<name>`` as generated code gets it: on a view, the view's own method runs.

    ``dict.get(view, key)`` would otherwise read the view's storage directly and hand out an
    original container.
    """

    def unbound(obj: Any, *args: Any, **kwargs: Any) -> Any:
        if type(obj) is MemoryView:
            return getattr(obj, name)(*args, **kwargs)
        return method(obj, *args, **kwargs)

    unbound.__name__ = name
    unbound.__qualname__ = f"dict.{name}"
    return unbound


#: ``dict`` methods that read values: the attribute policy redirects their unbound forms.
REDIRECTED_DICT_METHODS = frozenset(
    {"get", "setdefault", "pop", "popitem", "items", "values", "copy"}
)


class Journal:
    """One attempt's journal over ``memory`` (begin: build it; rollback: drop it).

    Args:
        memory: The agent's live memory dict.
    """

    __slots__ = ("_after", "_base", "_copied", "_copies", "_keep", "_memory", "_originals", "view")

    def __init__(self, memory: dict[str, Any]) -> None:
        self._memory = memory
        # dict(memory) is one C call, so it is atomic against writes from other threads.
        self._base: dict[str, Any] = dict(memory)
        view = dict.__new__(MemoryView)
        dict.update(view, self._base)
        view._journal = self
        self.view: MemoryView = view
        self._copies: dict[int, Any] = {}  # id(original) -> copy (the copy memo)
        self._originals: dict[int, Any] = {}  # id(copy) -> original
        self._copied: list[_Copied] = []
        self._keep: list[Any] = []  # originals of immutable copies, so their ids stay unique
        self._after: list[Callable[[], None]] = []  # after_commit actions

    def discard(self) -> None:
        """Rollback: forget everything the attempt did (memory was never written)."""
        dict.clear(self.view)
        self._copies.clear()
        self._originals.clear()
        self._copied.clear()
        self._keep.clear()
        self._after.clear()

    def activate(self) -> contextvars.Token[tuple[tuple[int, MemoryView], ...]]:
        """Route host writes to this agent's memory, made in this context, into the view."""
        return _ACTIVE.set((*_ACTIVE.get(), (id(self._memory), self.view)))

    @staticmethod
    def deactivate(token: contextvars.Token[tuple[tuple[int, MemoryView], ...]]) -> None:
        """Undo :meth:`activate`."""
        _ACTIVE.reset(token)

    # ----------------------------------------------------------------- copy on first touch

    def _touch(self, key: Any, value: Any) -> Any:
        kind = type(value)
        if kind in _ATOMS or self._base.get(key, _MISSING) is not value:
            return value  # immutable, or already the attempt's own object
        copy = self._copy(value, (key,))
        if copy is not value:
            dict.__setitem__(self.view, key, copy)
        return copy

    def _touch_all(self) -> None:
        view = self.view
        for key in list(dict.keys(view)):
            self._touch(key, dict.__getitem__(view, key))

    def _copy(self, value: Any, path: Path) -> Any:
        kind = type(value)
        if kind in _ATOMS:
            return value
        done = self._copies.get(id(value))
        if done is not None:
            return done
        if kind in _DICTS:
            return self._copy_dict(value, path)
        if kind in _SEQUENCES:
            copy_seq: Any = [] if kind is list else collections.deque(maxlen=value.maxlen)
            self._copies[id(value)] = copy_seq
            copy_seq.extend([self._copy(item, (*path, i)) for i, item in enumerate(list(value))])
            return self._record(copy_seq, value, list(copy_seq), path)
        if kind is set:
            # Members are hashable, so they hold nothing mutable: a shallow copy is deep.
            return self._record(set(value), value, set(value), path)
        if kind is bytearray:
            return self._record(bytearray(value), value, bytes(value), path)
        if kind is tuple or _is_namedtuple(kind):
            items = tuple(self._copy(item, (*path, i)) for i, item in enumerate(value))
            # A namedtuple the host stored may hold a list generated code can append to: its
            # items are copied like a tuple's, and the copy keeps the class (without calling
            # the class, so a custom __new__ never runs).
            built = items if kind is tuple else tuple.__new__(kind, items)
            return self._immutable(value, built, path)
        if kind is Outcome:
            inner = self._copy(value.value, (*path, "value"))
            metadata = self._copy(value.metadata, (*path, "metadata"))
            if inner is value.value and metadata is value.metadata:
                return value
            copy_outcome = value.model_copy(update={"value": inner, "metadata": metadata})
            return self._immutable(value, copy_outcome, path)
        return value  # host objects generated code cannot change in place

    def _copy_dict(self, value: Any, path: Path) -> Any:
        kind = type(value)
        copy: Any = (
            collections.defaultdict(value.default_factory)
            if kind is collections.defaultdict
            else kind()
        )
        self._copies[id(value)] = copy
        for key, item in list(dict.items(value)):
            dict.__setitem__(copy, key, self._copy(item, (*path, key)))
        return self._record(copy, value, list(dict.items(copy)), path)

    def _record(self, copy: Any, original: Any, contents: Any, path: Path) -> Any:
        self._copies[id(original)] = copy
        self._originals[id(copy)] = original
        self._copied.append(_Copied(copy, original, contents, path))
        return copy

    def _immutable(self, original: Any, built: Any, path: Path) -> Any:
        if isinstance(built, tuple) and all(a is b for a, b in zip(built, original, strict=True)):
            return original
        # A tuple holding itself through a list was copied while copying its items.
        done = self._copies.get(id(original))
        if done is not None:
            return done
        self._copies[id(original)] = built
        self._originals[id(built)] = original
        self._keep.append(original)
        return built

    # ----------------------------------------------------------------- prepare (commit, part 1)

    def original_of(self, value: Any) -> Any | None:
        """What memory holds for ``value``: the original of a copy, memory for the view."""
        if value is self.view:
            return self._memory
        original = self._originals.get(id(value))
        if original is not None and self._copies.get(id(original)) is value:
            return original
        return None

    def _resolver(self) -> Callable[[Any], Any | None]:
        # Objects memory held before the attempt (top-level values, and the items of every
        # container copied) are not the attempt's doing: a host function the user stored
        # may stay where it is. They are kept alive by the journal, so their ids are stable.
        known: dict[int, Any] = {id(value): value for value in self._base.values()}
        for entry in self._copied:
            contents = entry.contents
            if isinstance(entry.copy, dict):
                for pair in contents:
                    known.update({id(part): part for part in pair})
            elif isinstance(contents, list | set):
                known.update({id(item): item for item in contents})

        def resolve(value: Any) -> Any | None:
            original = self.original_of(value)
            if original is not None:
                return original
            return value if known.get(id(value), _MISSING) is value else None

        return resolve

    def prepare(self, rebuild: Rebuild) -> Writes:
        """The attempt's writes, every new value rebuilt as plain data.

        Raises:
            NonSerializableResultError: (from ``rebuild``) a written value is not plain data.
        """
        view, base = self.view, self._base
        resolve = self._resolver()
        writes = Writes()
        for key, value in list(dict.items(view)):
            before = base.get(key, _MISSING)
            if value is before or (
                before is not _MISSING and self._copies.get(id(before)) is value
            ):
                continue  # unchanged at the top level; changes inside come as patches
            plain_key = rebuild(key, "context key", resolve=resolve)
            writes.set[plain_key] = rebuild(value, f"context[{plain_key!r}]", resolve=resolve)
        writes.delete.extend(key for key in base if not dict.__contains__(view, key))
        for entry in self._copied:
            patch = self._patch(entry, rebuild, resolve)
            if patch is not None:
                writes.patches.append(patch)
        writes.after.extend(self._after)
        return writes

    def _patch(
        self, entry: _Copied, rebuild: Rebuild, resolve: Callable[[Any], Any | None]
    ) -> Patch | None:
        copy, before = entry.copy, entry.contents
        where = "context" + "".join(f"[{step!r}]" for step in entry.path)
        if isinstance(copy, dict):
            now = list(dict.items(copy))
            if len(now) == len(before) and all(
                a is c and b is d for (a, b), (c, d) in zip(now, before, strict=True)
            ):
                return None
            old = dict(before)
            changed: dict[Any, Any] = {}
            for key, value in now:
                if old.get(key, _MISSING) is not value:
                    plain_key = rebuild(key, f"{where} key", resolve=resolve)
                    changed[plain_key] = rebuild(value, f"{where}[{plain_key!r}]", resolve=resolve)
            kept = {id(key) for key, _ in now}
            removed = [key for key, _ in before if id(key) not in kept]
            return Patch(entry.original, entry.path, "dict", set=changed, delete=removed)
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
                rebuild(item, f"{where} member", resolve=resolve)
                for key, item in now_ids.items()
                if key not in before_ids
            ]
            gone = [item for key, item in before_ids.items() if key not in now_ids]
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
                rebuild(item, f"{where}[{prefix + i}]", resolve=resolve)
                for i, item in enumerate(items[prefix:])
            ]
            return Patch(entry.original, entry.path, "extend", items=tail)
        rebuilt = [rebuild(item, f"{where}[{i}]", resolve=resolve) for i, item in enumerate(items)]
        return Patch(entry.original, entry.path, "replace", items=rebuilt)
