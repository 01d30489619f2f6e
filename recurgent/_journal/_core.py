"""One attempt's journal over an agent's memory: copy on first touch, then prepare the writes.

See the package docstring for the model (ADR 0027). A :class:`Journal` owns its
:class:`~recurgent._journal._view.MemoryView`; reads through the view copy a mutable value the
first time it is reached and remember copy -> original; :meth:`Journal.prepare` compares each
copy with what it held when copied (:mod:`recurgent._journal._diff`) and returns
:class:`~recurgent._journal._writes.Writes`.
Host objects other than containers follow the rules of :mod:`recurgent._journal._kinds`
(copied) and :mod:`recurgent._journal._shared` (shared, guarded, or withheld; ADRs 0057,
0068).
"""

from __future__ import annotations

import collections
import contextvars
import functools
import operator
import types
from collections.abc import Callable, Iterable, Mapping
from itertools import compress
from typing import Any

from recurgent._journal._diff import Copied, container_patch, factory_patch, ordered_items
from recurgent._journal._kinds import HOST_KINDS, Fresh, HostKind
from recurgent._journal._shared import (
    Withheld,
    guarded,
    needs_guard,
    shareable,
)
from recurgent._journal._view import ACTIVE, MemoryView
from recurgent._journal._writes import MISSING, Path, Rebuild, Writes
from recurgent._levels import MAX_DEPTH, PLACED_AGAIN, MemoryShape, deep_patch, deep_place
from recurgent._where import where_in_memory
from recurgent.errors import NonSerializableResultError
from recurgent.outcome import Outcome

__all__ = ["Journal"]

_ATOMS = frozenset({str, int, float, bool, bytes, type(None), complex, range})
#: Items copied between two checks of the attempt's deadline.
_TICK_EVERY = 4096
_DICTS = frozenset({dict, collections.OrderedDict, collections.Counter, collections.defaultdict})
_SEQUENCES = frozenset({list, collections.deque})
_ORDERED = collections.OrderedDict


def _is_namedtuple(kind: type) -> bool:
    """A class ``collections.namedtuple`` made (or a host subclass of one)."""
    return issubclass(kind, tuple) and isinstance(getattr(kind, "_fields", None), tuple)


class Journal:
    """One attempt's journal over ``memory`` (begin: build it; rollback: drop it).

    Args:
        memory: The agent's live memory dict.
        is_agent: True for an agent object (or the worker's stand-in for one): shared, as
            generated code reaches agents only through handles (default: the agent class's
            ``__recurgent_agent__`` marker).
        guard: Called before each call of a host function memory holds; raises once the
            attempt ended (``None``: functions are handed out as they are).
    """

    __slots__ = (
        "_after",
        "_base",
        "_checked",
        "_copied",
        "_copies",
        "_guard",
        "_is_agent",
        "_keep",
        "_memory",
        "_originals",
        "_shape",
        "_tick",
        "_untick",
        "view",
    )

    def __init__(
        self,
        memory: dict[str, Any],
        *,
        is_agent: Callable[[Any], bool] | None = None,
        guard: Callable[[], None] | None = None,
        tick: Callable[[], object] | None = None,
        checked: Mapping[type, Callable[[Any], Any]] | None = None,
        shape: MemoryShape | None = None,
    ) -> None:
        self._memory = memory
        # Whether memory may hold a container at two places (ADR 0161); None: not known, as
        # if it might.
        self._shape = shape
        # Immutable values of these exact types are read as the sandbox's checked kind
        # (a plain Decimal as the Decimal whose int operands are checked, ADR 0129).
        self._checked = checked or {}
        self._is_agent = is_agent
        self._guard = guard
        self._tick = tick
        self._untick = _TICK_EVERY
        # dict(memory) is one C call, so it is atomic against writes from other threads.
        self._base: dict[str, Any] = dict(memory)
        view = dict.__new__(MemoryView)
        dict.update(view, self._base)
        view._journal = self
        self.view: MemoryView = view
        self._copies: dict[int, Any] = {}  # id(original) -> copy (the copy memo)
        self._originals: dict[int, Any] = {}  # id(copy) -> original
        self._copied: list[Copied] = []
        self._keep: list[Any] = []  # originals of immutable copies, so their ids stay unique
        self._after: list[Callable[[], None]] = []  # after_commit actions

    def _defer(self, action: Callable[[], None]) -> None:
        self._after.append(action)

    def discard(self) -> None:
        """Rollback: forget everything the attempt did (memory was never written)."""
        dict.clear(self.view)
        self._copies.clear()
        self._originals.clear()
        self._copied.clear()
        self._keep.clear()
        self._after.clear()

    def release(self) -> None:
        """The attempt is over and only this journal still holds its view: cut the view's link
        back, so both are freed by reference counting rather than left to the cycle collector
        (a batch's items, ADR 0124). The view is unusable from then on."""
        del self.view._journal

    def activate(self) -> contextvars.Token[tuple[tuple[int, MemoryView], ...]]:
        """Route host writes to this agent's memory, made in this context, into the view."""
        return ACTIVE.set((*ACTIVE.get(), (id(self._memory), self.view)))

    @staticmethod
    def deactivate(token: contextvars.Token[tuple[tuple[int, MemoryView], ...]]) -> None:
        """Undo :meth:`activate`."""
        ACTIVE.reset(token)

    # ----------------------------------------------------------------- copy on first touch

    def _touch(self, key: Any, value: Any) -> Any:
        kind = type(value)
        if kind in _ATOMS or self._base.get(key, MISSING) is not value:
            return value  # immutable, or already the attempt's own object
        copy = self._copy(value, (key,))
        if copy is not value:
            dict.__setitem__(self.view, key, copy)
        return copy

    def _touch_all(self) -> None:
        view = self.view
        for key in list(dict.keys(view)):
            self._touch(key, dict.__getitem__(view, key))

    def _spend(self, items: int) -> None:
        # A copy is a Python step per item that the program's code never sees: the attempt's
        # deadline is checked every _TICK_EVERY items copied, as its own loops are (H8).
        if self._tick is None:
            return
        self._untick -= items
        if self._untick <= 0:
            self._untick = _TICK_EVERY
            self._tick()

    def _copy_items(self, parts: list[Any], path: Path, *, indexed: bool = True) -> list[Any]:
        """Copies of ``parts`` (a container's items), the deadline checked as they are made."""
        if len(parts) <= _TICK_EVERY:
            self._spend(len(parts))
            if not indexed:
                return [self._copy(item, path) for item in parts]
            return [self._copy(item, (*path, i)) for i, item in enumerate(parts)]
        copies: list[Any] = []
        for start in range(0, len(parts), _TICK_EVERY):
            chunk = parts[start : start + _TICK_EVERY]
            self._spend(len(chunk))
            if indexed:
                copies.extend(self._copy(item, (*path, i)) for i, item in enumerate(chunk, start))
            else:
                copies.extend(self._copy(item, path) for item in chunk)
        return copies

    def _copy(self, value: Any, path: Path) -> Any:
        kind = type(value)
        if kind in _ATOMS:
            return value
        done = self._copies.get(id(value))
        if done is not None:
            return done
        checked = self._checked.get(kind)
        if checked is not None:
            return self._immutable(value, checked(value), path)
        if kind in _DICTS:
            return self._copy_dict(value, path)
        if kind in _SEQUENCES:
            copy_seq: Any = [] if kind is list else collections.deque(maxlen=value.maxlen)
            self._copies[id(value)] = copy_seq
            copy_seq.extend(self._copy_items(list(value), path))
            return self._record(copy_seq, value, list(copy_seq), path)
        if kind is set:
            # Members are hashable, yet one may be a host object hashed by identity (an
            # Element, a StringIO): members are copied like values.
            members = set(self._copy_items(list(value), path, indexed=False))
            return self._record(members, value, set(members), path)
        if kind is bytearray:
            return self._record(bytearray(value), value, bytes(value), path)
        if kind is tuple or _is_namedtuple(kind) or kind is frozenset:
            parts = list(value)
            items = self._copy_items(parts, path)
            if all(a is b for a, b in zip(items, parts, strict=True)):
                return value
            # A namedtuple the host stored may hold a list generated code can append to: its
            # items are copied like a tuple's, and the copy keeps the class (without calling
            # the class, so a custom __new__ never runs).
            if kind is tuple or kind is frozenset:
                built: Any = kind(items)
            else:
                built = tuple.__new__(kind, items)
            return self._immutable(value, built, path)
        if kind is Outcome:
            inner = self._copy(value.value, (*path, "value"))
            metadata = self._copy(value.metadata, (*path, "metadata"))
            if inner is value.value and metadata is value.metadata:
                return value
            copy_outcome = value.model_copy(update={"value": inner, "metadata": metadata})
            return self._immutable(value, copy_outcome, path)
        if kind is types.MappingProxyType:
            # Read-only itself, but the values it shows are memory's: a proxy over copies.
            pairs = list(value.items())
            copies = [(self._copy(k, path), self._copy(v, (*path, k))) for k, v in pairs]
            if all(a is c and b is d for (a, b), (c, d) in zip(pairs, copies, strict=True)):
                return value
            return self._immutable(value, types.MappingProxyType(dict(copies)), path)
        host = HOST_KINDS.get(kind)
        if host is not None:
            return self._copy_host(host, value, path)
        if shareable(value) or (self._is_agent is not None and self._is_agent(value)):
            if self._guard is not None and needs_guard(value):
                return self._wrap_call(value, self._guard)
            return value
        return self._withhold(value)

    def _copy_dict(self, value: Any, path: Path) -> Any:
        kind = type(value)
        factory: Any = MISSING
        if kind is collections.defaultdict:
            # Host code the program calls on a missing key: guarded like any (F12, ADR 0069);
            # a factory the journal withholds leaves the copy without one.
            factory = self._copy(value.default_factory, (*path, "default_factory"))
            if not callable(factory):
                factory = None
            copy: Any = collections.defaultdict(factory)
        else:
            copy = kind()
        # An OrderedDict keeps its order outside the dict storage: written through its own
        # __setitem__, or move_to_end on the copy would not find the key.
        store = collections.OrderedDict.__setitem__ if kind is _ORDERED else dict.__setitem__
        self._copies[id(value)] = copy
        pairs = ordered_items(value)
        self._spend(len(pairs) % _TICK_EVERY)
        for index, (key, item) in enumerate(pairs):
            if index % _TICK_EVERY == _TICK_EVERY - 1:
                self._spend(_TICK_EVERY)
            # A key hashed by identity may be a host object (an Element): copied like a value.
            copied_key = key if type(key) in _ATOMS else self._copy(key, path)
            store(copy, copied_key, self._copy(item, (*path, key)))
        self._record(copy, value, ordered_items(copy), path)
        self._copied[-1].factory = factory
        return copy

    def _copy_host(self, host: HostKind, value: Any, path: Path) -> Any:
        copy = host.make(value)
        if copy is value:
            return value
        if copy is None:
            return self._withhold(value)
        self._copies[id(value)] = copy
        start = host.fill(value, copy, lambda item, step: self._copy(item, (*path, step)))
        return self._record(copy, value, start, path, host)

    @property
    def guard(self) -> Callable[[], None] | None:
        """What a host function handed to this attempt calls first (``None``: no guard)."""
        return self._guard

    def _wrap_call(self, value: Any, guard: Callable[[], None]) -> Any:
        # Stored back into memory, the wrapper resolves to the function (original_of).
        wrapper = guarded(value, guard)
        self._copies[id(value)] = wrapper
        self._originals[id(wrapper)] = value
        self._keep.append(value)
        return wrapper

    def _withhold(self, value: Any) -> Any:
        stand_in = Withheld(value)
        self._copies[id(value)] = stand_in
        self._originals[id(stand_in)] = value
        self._keep.append(value)
        return stand_in

    def _record(
        self, copy: Any, original: Any, contents: Any, path: Path, host: HostKind | None = None
    ) -> Any:
        self._copies[id(original)] = copy
        self._originals[id(copy)] = original
        self._copied.append(Copied(copy, original, contents, path, host))
        return copy

    def _immutable(self, original: Any, built: Any, path: Path) -> Any:
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
        """What memory holds for ``value``: the original of a copy (``None`` for anything else).

        Not memory itself for the view: stored in memory, the view is rebuilt as a plain dict
        of memory's values. Memory holding itself sat below its own values, and a top-level
        write (counted from the top) then sat that much deeper: memory held 60 lists down in
        ``w`` and a 63-level ``b`` made a 123-level path (red team R31)."""
        original = self._originals.get(id(value))
        if original is not None and self._copies.get(id(original)) is value:
            return original
        return None

    def _back(self, value: Any) -> Any:
        """Memory's object for a key or member the attempt got from memory (else ``value``)."""
        original = self.original_of(value)
        return value if original is None else original

    def _resolver(self) -> Callable[[Any], Any | None]:
        # Objects memory held before the attempt (top-level values, and the items of every
        # container copied) are not the attempt's doing: a host function the user stored
        # may stay where it is. They are kept alive by the journal, so their ids are stable.
        # The table is built on the first lookup that needs it: most attempts write plain
        # values (or nothing), and building it walks every top-level value (issue 22).
        table: list[dict[int, Any]] = []

        def known() -> dict[int, Any]:
            if not table:
                ids: dict[int, Any] = {id(value): value for value in self._base.values()}
                for entry in self._copied:
                    contents = entry.contents
                    if entry.kind is not None:
                        continue  # a host object's parts are copies or atoms
                    if isinstance(entry.copy, dict):
                        for pair in contents:
                            ids.update({id(part): part for part in pair})
                    elif isinstance(contents, list | set):
                        ids.update({id(item): item for item in contents})
                table.append(ids)
            return table[0]

        def resolve(value: Any) -> Any | None:
            original = self.original_of(value)
            if original is not None:
                return original
            return value if known().get(id(value), MISSING) is value else None

        return resolve

    def _changed_keys(self) -> tuple[Iterable[Any], bool]:
        """Top-level keys that may have changed, and whether a key may have been deleted.

        When the view holds the same key objects in the same order as memory did, only the
        positions whose value is another object can differ: ``compress``/``map`` find them in
        C, so an attempt that wrote one key of 50,000 does not loop over the other 49,999 in
        Python. Otherwise every key is examined, as before.
        """
        view, base = self.view, self._base
        if dict.__len__(view) == len(base) and all(map(operator.is_, dict.keys(view), base.keys())):
            return compress(
                dict.keys(view), map(operator.is_not, dict.values(view), base.values())
            ), False
        return list(dict.keys(view)), True

    def untouched(self) -> bool:
        """True when :meth:`prepare` would find no writes, told without preparing them: no
        value was copied (so none changed in place), nothing waits for the commit, and the view
        holds memory's own keys and values in memory's order (a batch's items, ADR 0124)."""
        view, base = self.view, self._base
        return (
            not self._copied
            and not self._after
            and dict.__len__(view) == len(base)
            and all(map(operator.is_, dict.values(view), base.values()))
            and all(map(operator.is_, dict.keys(view), base.keys()))
        )

    def prepare(self, rebuild: Rebuild) -> Writes:
        """The attempt's writes, every new value rebuilt as plain data.

        Raises:
            NonSerializableResultError: (from ``rebuild``) a written value is not plain data,
                or a patch's new items would pass the nesting cap at the deepest place memory
                holds their container once the commit is applied (ADR 0161).
        """
        view, base = self.view, self._base
        resolve = self._resolver()
        # One table of memory's measured heights for the whole commit (ADR 0156).
        heights: dict[int, int] = {}
        writes = Writes()
        candidates, may_delete = self._changed_keys()
        for key in list(candidates):
            value = dict.__getitem__(view, key)
            before = base.get(key, MISSING)
            if value is before or (before is not MISSING and self._copies.get(id(before)) is value):
                continue  # unchanged at the top level; changes inside come as patches
            plain_key = rebuild(key, "context key", resolve=resolve, heights=heights)
            writes.set[plain_key] = rebuild(
                value, where_in_memory((plain_key,)), resolve=resolve, heights=heights
            )
        if may_delete:
            writes.delete.extend(key for key in base if not dict.__contains__(view, key))
        refuse = rebuild
        copied = self._copied
        if copied:
            # The patch makers call rebuild once a patched item: each call shares the commit's
            # one table of memory's heights, or a memory value placed in a thousand items was
            # walked a thousand times (6 s past a one-second deadline for a 100 000-item list).
            # Memory does not change before the writes are applied: a height measured holds.
            rebuild = functools.partial(rebuild, heights=heights)
        for entry in copied:
            if entry.kind is not None:
                patch = entry.kind.diff(
                    entry.copy,
                    entry.original,
                    entry.contents,
                    entry.path,
                    _fresh(rebuild, resolve, len(entry.path)),
                )
            else:
                patch = container_patch(entry, rebuild, resolve, self._back)
                if entry.factory is not MISSING and entry.copy.default_factory is not entry.factory:
                    writes.patches.append(factory_patch(entry, resolve))
            if patch is not None:
                writes.patches.append(patch)
        placed_again = heights.pop(PLACED_AGAIN, 0) == 1
        shape = self._shape
        if writes.patches and (shape is None or shape.shared or placed_again):
            # Only a commit that patches a memory that may hold a container twice walks it:
            # in a tree, the path a patch came by is its container's only place (ADR 0161).
            self._refuse_deep_patch(writes, refuse)
        if placed_again and shape is not None:
            shape.shared = True
        if self._after:
            writes.after.extend(self._after)
        return writes

    def _refuse_deep_patch(self, writes: Writes, rebuild: Rebuild) -> None:
        """Refuse the commit when a patch's new items would sit past the nesting cap at the
        deepest place memory holds the patched container once the commit is applied (a patch
        counted only from the place the program reached the container by grew another key
        holding it 63 levels a round, red team R30).

        Memory is walked as it is now, not as the attempt found it: a call the program made on
        its own agent meanwhile (a child handed its own handle) has committed already, and a
        key it placed the container under was missed (red team R31)."""
        found = deep_patch(self._memory, writes.set, writes.delete, writes.patches)
        if found is None:
            return
        where = deep_place(*found)
        # The caller's rebuild refuses it, with the message and suffix of its own cap.
        rebuild([], where, resolve=_new, depth=MAX_DEPTH + 1)
        raise NonSerializableResultError(f"{where} is nested more than {MAX_DEPTH} levels deep")


def _new(value: Any) -> None:
    """A resolver for which nothing is memory's."""
    return None


def _fresh(rebuild: Rebuild, resolve: Callable[[Any], Any | None], depth: int) -> Fresh:
    """The patch maker of a host-kind container whose items sit ``depth`` levels down."""
    return Fresh(lambda value, where: rebuild(value, where, resolve=resolve, depth=depth), resolve)
