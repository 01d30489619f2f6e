"""The sandbox boundary: values leaving an attempt are rebuilt from plain types, never inspected.

Everything that leaves an attempt (its result, what it writes to memory, ``remember()`` entries,
arguments of forwarded calls, values set on handles) is rebuilt by the runtime (ADR 0029; issue 9,
R5 and R6):

* exact scalars (``str``, ``int``, ``float``, ``bool``, ``bytes``, ``None``) pass as they are;
* containers (dicts, lists, tuples, sets, deques, Counters, ...) are rebuilt item by item;
* a subclass of a plain type defined by generated code (a ``str`` subclass with a looping
  ``__eq__``, a namedtuple) is reduced to its base type, read through the base class
  (``str.__str__(x)``, ``dict.items(x)``), so none of its methods runs;
* dict views become lists; Outcomes are rebuilt field by field; agent handles become agents
  where the caller allows it;
* functions, classes, modules, iterators, handles elsewhere, and objects generated code made are
  refused with :class:`~recurgent.errors.NonSerializableResultError`;
* a value nested more than :data:`MAX_DEPTH` levels is refused, counted along its longest path:
  each part is copied once, keeps its height, and counts it again wherever it is reached deeper
  (a part memory holds is measured the same way); a cycle adds no level (ADR 0156). What counts
  as a level is :func:`recurgent._levels.parts`; an in-place patch's items are counted again
  at the deepest place memory holds their container by the journal (ADR 0161).

Nothing here calls a method defined by generated code (no ``repr``, ``==``, ``hash``, ``len``,
``iter``, ``bool``), so host code that reads a rebuilt value later (history, logs, contract
checks) never runs program code outside the attempt's deadline. Values coming *in* from other
agents are copied by :func:`recurgent._sandbox._inbound.inbound`, so generated code cannot mutate
another agent's memory.
"""

from __future__ import annotations

import collections
import datetime
import decimal
import fractions
import re
import types
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from recurgent._journal import MemoryView
from recurgent._journal._shared import (
    HostClass,
    is_plain_factory,
    plain_factory,
)
from recurgent._levels import MAX_DEPTH, PLACED_AGAIN, SCALAR_TYPES, parts as _parts
from recurgent._sandbox._decimal_operands import SandboxDecimal
from recurgent._sandbox._guards import SealedType, is_sandbox_made
from recurgent._sandbox._handles import AgentHandle, HandleOps
from recurgent._sandbox._modules import ModuleFacade
from recurgent._values import KEPT_ATOM_KINDS, json_safe, outgrows
from recurgent._where import Location, Where
from recurgent.errors import NonSerializableResultError
from recurgent.outcome import Outcome

__all__ = [
    "KEPT_TYPES",
    "MAX_DEPTH",
    "PLAIN_SUFFIX",
    "SCALAR_TYPES",
    "Attribution",
    "dict_setter",
    "exception_text",
    "find_unplain",
    "rebuild",
]

#: How a refusal of a value leaving the sandbox ends (``rebuild``'s default suffix).
PLAIN_SUFFIX = (
    "only plain data (dicts, lists, strings, numbers, booleans, None, Outcomes) can leave the "
    "sandbox"
)
KEPT_TYPES = KEPT_ATOM_KINDS | {decimal.Decimal, fractions.Fraction}
# Host subclasses of these (the sandbox's checked numbers) run no generated code either.
_KEPT_BASES = (
    decimal.Decimal,
    fractions.Fraction,
    datetime.date,
    datetime.time,
    re.Pattern,
    re.Match,
)
_DICTS = frozenset({dict, collections.OrderedDict, collections.Counter, MemoryView})
_VIEWS = frozenset({type({}.keys()), type({}.values()), type({}.items())})


class _Refused(Exception):
    """Internal: the path and reason of the first value that cannot leave."""


def _unplain_reason(value: Any) -> str:
    if isinstance(value, AgentHandle):
        return "an agent handle"
    if isinstance(value, ModuleFacade):
        return "a module"
    if isinstance(value, type | SealedType | HostClass):
        return f"the class {str.__str__(value.__name__)}"
    if isinstance(value, Iterator | types.GeneratorType) or type(value) in _VIEWS:
        return "an iterator"
    if is_sandbox_made(value):
        if callable(value):
            return "a function"
        return f"an instance of {str.__str__(type(value).__name__)}"
    if callable(value):
        return "a function"
    if isinstance(value, BaseException):
        return f"an exception ({str.__str__(type(value).__name__)})"
    return f"an object of type {str.__str__(type(value).__name__)}"


@dataclass(frozen=True, slots=True)
class Attribution:
    """Who an Outcome leaving an attempt names (ADR 0059).

    Attributes:
        tool_role: The role of the call that ran.
        method_name: Its method.
        forwarded: The Outcomes the attempt received from forwarded calls (a child's answer),
            by the id of the copy generated code got, each with the Outcome the child answered
            (as the host holds it). Such a copy keeps the child's role and method while its
            value and metadata are still what the child answered; every other Outcome, and one
            whose contents the program changed in place, names the call (red-team F10).
    """

    tool_role: str
    method_name: str
    forwarded: Mapping[int, tuple[Outcome, Outcome]] = field(default_factory=dict)


_OPEN = -1  # a part whose height is still being measured: reaching it again closes a cycle
# A tuple or set of at most this many scalars is not memoized (see _Rebuilder._members).
_SMALL = 8


def _height(root: Any, heights: dict[int, int]) -> int:
    """How many levels of containers plain data ``root`` (a value memory holds) has below it:
    its longest path, each shared part measured once and kept in ``heights`` by id.

    A part reached again while it is still being measured closes a cycle and adds nothing, as
    in the rebuild: memory's cyclic values keep their place (red team R26). Iterative, so a
    deep value the user put in memory cannot exhaust the stack here.
    """
    known = heights.get(id(root))
    if known is not None:
        return max(known, 0)
    parts = _parts(root)
    if parts is None:
        heights[id(root)] = 0
        return 0
    heights[id(root)] = _OPEN
    # Frames of [node, its parts still to see, the height found so far].
    stack: list[list[Any]] = [[root, iter(parts), 0]]
    while stack:
        frame = stack[-1]
        for part in frame[1]:
            if type(part) in SCALAR_TYPES:
                continue
            height = heights.get(id(part))
            if height is None:
                below = _parts(part)
                if below is not None:
                    heights[id(part)] = _OPEN
                    stack.append([part, iter(below), 0])
                    break
                heights[id(part)] = height = 0
            if height > _OPEN and height >= frame[2]:
                frame[2] = height + 1
        else:
            stack.pop()
            heights[id(frame[0])] = frame[2]
            if stack and frame[2] >= stack[-1][2]:
                stack[-1][2] = frame[2] + 1
    return int(heights[id(root)])


class _Rebuilder:
    """One rebuild: a DFS that copies each part once (``_memo``, by id) and keeps, for every
    container it copied, its height: how many levels of non-scalar parts lie below it.

    The nesting cap (``MAX_DEPTH``) is on the longest path from the top, not on where a part is
    first reached: a part reached again at depth ``d`` fits only if ``d`` plus its height does
    (red team R26: thirty rounds of ``x = [x, <33 levels ending in x>]`` stored a 1 020-level
    path when a shared part counted where it was first reached). The height is kept, not
    walked again, so a value sharing parts (a DAG) costs one visit a part. ``_reach`` is the
    deepest level a non-scalar reached in the container being copied; each container starts
    it at its own depth and reads its height from it when its parts are done.
    """

    __slots__ = (
        "_attribution",
        "_handles",
        "_keep",
        "_known",
        "_memo",
        "_reach",
        "_resolve",
    )

    def __init__(
        self,
        resolve: Callable[[Any], Any | None] | None,
        handles: Callable[[HandleOps], Any] | None,
        keep: Callable[[Any], bool] | None = None,
        attribution: Attribution | None = None,
        heights: dict[int, int] | None = None,
    ) -> None:
        self._resolve = resolve
        self._handles = handles
        self._keep = keep
        self._attribution = attribution
        # By id: [original, built, height], the height _OPEN while the part's own parts are
        # being copied (reaching it then closes a cycle); (original, built, height) for a part
        # memoized once built. The original is kept so its id is not reused while we rebuild.
        self._memo: dict[int, Sequence[Any]] = {}
        # Heights of memory's own values, by id (_height): one table for a whole commit when
        # the journal passes it, so a value placed in many patched items is walked once.
        self._known: dict[int, int] = {} if heights is None else heights
        self._reach = 0

    def key(self, key: Any, where: Location, depth: int) -> Any:
        # Rebuilt before it is hashed into the new dict: hashing a plain key runs no program code.
        return self.value(key, Where(where, " key"), depth)

    def value(self, value: Any, where: Location, depth: int) -> Any:
        kind = type(value)
        if kind in SCALAR_TYPES:
            return value
        if self._resolve is not None:
            known = self._resolve(value)
            if known is not None:
                if type(known) not in SCALAR_TYPES:
                    # Memory's own container at a new place: memory may now hold it twice.
                    self._known[PLACED_AGAIN] = 1
                if depth > 0:
                    # Memory's own value placed below the top keeps its own levels: counted,
                    # or each call could wrap it in 60 more (red team R26).
                    self._reached(depth + _height(known, self._known), where)
                return known
        done = self._memo.get(id(value))
        if done is not None:
            self._known[PLACED_AGAIN] = 1  # one part at two places of the value
            if done[2] != _OPEN:
                # Copied already: its levels count again from here (red team R26). One still
                # being copied is a cycle back to it, which adds no level.
                self._reached(depth + done[2], where)
            return done[1]
        if depth > MAX_DEPTH:
            raise _Refused(f"{where} is nested more than {MAX_DEPTH} levels deep")
        if depth > self._reach:
            self._reach = depth
        if kind in KEPT_TYPES:
            return value
        if kind is SandboxDecimal:
            # The sandbox's checked Decimal leaves as the plain one (an exact copy, ADR 0129).
            return decimal.Decimal(value)
        if issubclass(kind, fractions.Fraction) and not is_sandbox_made(value):
            # The sandbox's checked Fraction leaves as the plain one (same value and hash).
            return fractions.Fraction(value.numerator, value.denominator)
        if issubclass(kind, _KEPT_BASES) and not is_sandbox_made(value):
            return value
        if kind is AgentHandle and self._handles is not None:
            return self._handles(value._handle_ops)
        if kind is Outcome:
            return self._outcome(value, where, depth)
        if kind in _DICTS or (kind is collections.defaultdict):
            return self._dict(value, kind, where, depth)
        if kind is list or kind is collections.deque:
            return self._sequence(value, kind, where, depth)
        if kind is tuple:
            # _members, inlined for the most common immutable container.
            outer, self._reach = self._reach, depth
            built = tuple(
                self.value(item, Where(where, i), depth + 1)
                for i, item in enumerate(tuple.__iter__(value))
            )
            reach = self._reach
            if reach != depth or len(built) > _SMALL:
                self._memo[id(value)] = (value, built, reach - depth)
            if outer > reach:
                self._reach = outer
            return built
        if kind is set or kind is frozenset:
            return self._members(value, kind, iter(value), where, depth)
        if kind in _VIEWS:
            # A view (or its items) would keep the whole dict, and anything in it, alive.
            # Memoized once built, like a tuple: a 100 000-key view placed 300 times was copied
            # 300 times, 8.6 s past a one-second deadline (red team R30).
            outer, self._reach = self._reach, depth
            items = list(kind.__iter__(value))  # type: ignore[attr-defined]
            listed = [self.value(item, Where(where, i), depth + 1) for i, item in enumerate(items)]
            self._built(value, listed, depth, outer)
            return listed
        if issubclass(kind, BaseException) and kind.__module__ == "builtins":
            return self._exception(value, kind, where, depth)
        reduced = self._reduce(value, kind, where, depth)
        if reduced is not _NOT_REDUCED:
            return reduced
        if self._keep is not None and self._keep(value):
            return value
        raise _Refused(f"{where} holds {_unplain_reason(value)}")

    def _reached(self, level: int, where: Location) -> None:
        """A part whose deepest level below it is ``level`` sits here."""
        if level > MAX_DEPTH:
            raise _Refused(f"{where} is nested more than {MAX_DEPTH} levels deep")
        if level > self._reach:
            self._reach = level

    def _built(self, original: Any, built: Any, depth: int, outer: int) -> None:
        """Memoize what has no cycle back to itself, once its parts are copied. A tuple (or an
        Outcome, an exception) reached again while its parts are copied, through a list in it,
        is copied again there, as before: the list, memoized at once, ends the cycle. The entry
        is a tuple, smaller than a list: a value of many tuples has many of them."""
        reach = self._reach
        self._memo[id(original)] = (original, built, reach - depth)
        if outer > reach:
            self._reach = outer

    def _members(self, value: Any, kind: type, items: Any, where: Location, depth: int) -> Any:
        """A tuple, set or frozenset, memoized too: a DAG of tuples sharing both halves was
        rebuilt once a path, 2**24 copies for 24 levels (and 2**64 at the cap), and a big one
        placed a million times was copied a million times. A few scalars (nothing reached
        below it) are copied again where they recur, as before: cheaper than a memo entry."""
        outer, self._reach = self._reach, depth
        if kind is tuple:
            built: Any = tuple(
                self.value(item, Where(where, i), depth + 1) for i, item in enumerate(items)
            )
        else:
            members = (self.value(item, Where(where, " member"), depth + 1) for item in items)
            built = set(members) if kind is set else frozenset(members)
        if self._reach != depth or len(built) > _SMALL:
            self._built(value, built, depth, outer)
        elif outer > depth:
            self._reach = outer
        return built

    def _outcome(self, value: Outcome, where: Location, depth: int) -> Outcome:
        def text(field: Any, name: str) -> Any:
            return None if field is None else self.value(field, Where(where, "." + name), depth + 1)

        outer, self._reach = self._reach, depth
        status = text(value.status, "status")
        inner = self.value(value.value, Where(where, ".value"), depth + 1)
        metadata = self._dict(value.metadata, dict, Where(where, ".metadata"), depth + 1)
        tool_role, method_name = value.tool_role, value.method_name
        called = self._attribution
        if called is not None:
            received = called.forwarded.get(id(value))
            if received is None or not self._as_answered(inner, metadata, received[1]):
                # Made by the program, or a child's answer it changed in place: whatever role
                # it names, it answers for the call that ran.
                tool_role, method_name = called.tool_role, called.method_name
        built = Outcome.model_construct(
            status="ok" if status == "ok" else "error",
            value=inner,
            error_type=text(value.error_type, "error_type"),
            error_message=text(value.error_message, "error_message"),
            retriable=value.retriable is True,
            tool_role=text(tool_role, "tool_role"),
            method_name=text(method_name, "method_name"),
            metadata=metadata,
        )
        self._built(value, built, depth, outer)
        return built

    def _as_answered(self, inner: Any, metadata: Any, answered: Outcome) -> bool:
        """Whether a rebuilt value and metadata are exactly what the child answered."""
        fresh = _Rebuilder(None, self._handles, self._keep)
        try:
            return _same(
                (inner, metadata),
                (
                    fresh.value(answered.value, "answer", 0),
                    fresh._dict(answered.metadata, dict, "answer.metadata", 0),
                ),
                set(),
            )
        except Exception:  # noqa: BLE001 - any doubt (a refused value, a signalling NaN): changed
            return False

    def _exception(self, value: BaseException, kind: type, where: Location, depth: int) -> Any:
        # A fresh exception of the same builtin class, from plain arguments: no traceback,
        # cause or context comes along, and no argument can run code when it is printed.
        raw_args = BaseException.__dict__["args"].__get__(value, kind)
        outer, self._reach = self._reach, depth
        args = self.value(raw_args, Where(where, ".args"), depth + 1)
        try:
            built = kind(*args)
        except Exception:  # noqa: BLE001 - a builtin that wants other arguments
            built = kind()
        self._built(value, built, depth, outer)
        return built

    def _dict(self, value: Any, kind: type, where: Location, depth: int) -> Any:
        if kind is collections.defaultdict:
            factory = value.default_factory
            if not is_plain_factory(factory):
                raise _Refused(f"{where} holds a defaultdict whose default factory is a function")
            built: Any = collections.defaultdict(plain_factory(factory))
        elif kind is MemoryView or kind is dict:
            built = {}
        else:
            built = kind()
        # Memoized before its parts, so a cycle back to it ends there (inlined: every dict).
        entry = [value, built, _OPEN]
        self._memo[id(value)] = entry
        outer, self._reach = self._reach, depth
        store = dict_setter(type(built))
        for key, item in list(dict.items(value)):
            plain_key = self.key(key, where, depth + 1)
            store(built, plain_key, self.value(item, Where(where, (plain_key,)), depth + 1))
        # Its height is the deepest level its parts reached; the enclosing container's reach
        # is at least as deep.
        reach = self._reach
        entry[2] = reach - depth
        if outer > reach:
            self._reach = outer
        return built

    def _sequence(self, value: Any, kind: type, where: Location, depth: int) -> Any:
        built: Any = [] if kind is list else collections.deque(maxlen=value.maxlen)
        entry = [value, built, _OPEN]
        self._memo[id(value)] = entry
        outer, self._reach = self._reach, depth
        items = list(list.__iter__(value)) if kind is list else list(value)
        built.extend(self.value(item, Where(where, i), depth + 1) for i, item in enumerate(items))
        # Its height is the deepest level its parts reached; the enclosing container's reach
        # is at least as deep.
        reach = self._reach
        entry[2] = reach - depth
        if outer > reach:
            self._reach = outer
        return built

    def _reduce(self, value: Any, kind: type, where: Location, depth: int) -> Any:
        """A subclass of a plain type, read through its base class."""
        if issubclass(kind, bool):
            return bool.__bool__(value)  # pragma: no cover - bool cannot be subclassed
        if issubclass(kind, str):
            return str.__str__(value)
        if issubclass(kind, int):
            return int.__int__(value)
        if issubclass(kind, float):
            return float.__float__(value)
        if issubclass(kind, bytes):
            return bytes.__bytes__(value)
        if issubclass(kind, tuple):
            return self._members(value, tuple, list(tuple.__iter__(value)), where, depth)
        if issubclass(kind, list):
            return self._sequence(value, list, where, depth)
        if issubclass(kind, dict) and kind is not collections.defaultdict:
            return self._dict(value, dict, where, depth)
        if issubclass(kind, set):
            return self._members(value, set, list(set.__iter__(value)), where, depth)
        return _NOT_REDUCED


_NOT_REDUCED: Any = object()


def _same(a: Any, b: Any, seen: set[tuple[int, int]]) -> bool:
    """Strict equality of two rebuilt values: same types all the way down (``1`` is not
    ``True``), same order; both are plain, so comparing runs no program code."""
    if a is b:
        return True
    kind = type(a)
    if kind is not type(b):
        return False
    pair = (id(a), id(b))
    if pair in seen:
        return True  # a cycle: the rest of it is compared where it started
    if kind is Outcome:
        seen.add(pair)
        fields = ("status", "error_type", "error_message", "retriable", "tool_role", "method_name")
        return all(getattr(a, name) == getattr(b, name) for name in fields) and _same(
            (a.value, a.metadata), (b.value, b.metadata), seen
        )
    if isinstance(a, dict):
        seen.add(pair)
        return len(a) == len(b) and all(
            _same(key_a, key_b, seen) and _same(item_a, item_b, seen)
            for (key_a, item_a), (key_b, item_b) in zip(a.items(), b.items(), strict=True)
        )
    if kind in (list, tuple, collections.deque):
        seen.add(pair)
        return len(a) == len(b) and all(
            _same(item_a, item_b, seen) for item_a, item_b in zip(a, b, strict=True)
        )
    if kind in (set, frozenset):
        return {(type(item), item) for item in a} == {(type(item), item) for item in b}
    return bool(a == b)


def rebuild(
    value: Any,
    where: Location,
    *,
    resolve: Callable[[Any], Any | None] | None = None,
    handles: Callable[[HandleOps], Any] | None = None,
    keep: Callable[[Any], bool] | None = None,
    attribution: Attribution | None = None,
    suffix: str = PLAIN_SUFFIX,
    depth: int = 0,
    heights: dict[int, int] | None = None,
) -> Any:
    """``value`` rebuilt from plain types for the host.

    Args:
        value: What generated code hands over.
        where: How the value is named in an error (``"the result"``, ``"context['x']"``), or a
            :class:`Where` that writes it out only then.
        resolve: Maps an object memory already holds (or its attempt copy) to what memory
            holds, or returns ``None`` for a new object (the memory journal's resolver).
        handles: Turns an agent handle into the host object to hand over; ``None`` refuses
            handles.
        keep: True for a host object that may pass unchanged (an agent the user stored).
        attribution: For the attempt's result: the call every Outcome the program made names;
            ``None`` keeps every Outcome's role and method.
        suffix: Appended to the refusal message.
        depth: How deep ``value`` already sits (an item written into a container of memory):
            the nesting cap counts from there, along the longest path (a part reached again
            deeper counts its levels again from there; a cycle adds none).
        heights: The levels below memory's own values measured so far, by id, shared by the
            rebuilds of one commit (valid while memory does not change); ``None``: this call's.

    Raises:
        NonSerializableResultError: ``value`` holds something that is not plain data.
    """
    try:
        return _Rebuilder(resolve, handles, keep, attribution, heights).value(value, where, depth)
    except _Refused as refused:
        raise NonSerializableResultError(f"{refused.args[0]}; {suffix}") from None
    except RecursionError:
        raise NonSerializableResultError(f"{where} is nested too deeply; {suffix}") from None


def find_unplain(value: Any, path: Location) -> str | None:
    """Describe the first value inside ``value`` that cannot leave an attempt, or ``None``."""
    try:
        _Rebuilder(None, lambda ops: ops).value(value, path, 0)
    except _Refused as refused:
        return str(refused.args[0])
    return None


def dict_setter(kind: type) -> Callable[[Any, Any, Any], None]:
    """How to fill a fresh dict of ``kind``: an OrderedDict through its own ``__setitem__``,
    which keeps its order links (``dict.__setitem__`` skips them and ``move_to_end`` then
    fails); every other dict type directly."""
    if kind is collections.OrderedDict:
        return collections.OrderedDict.__setitem__
    return dict.__setitem__


# Arguments whose text surely outgrows this many characters are formatted from a bounded copy.
_MESSAGE_CAP = 1_000_000


def exception_text(error: BaseException) -> str:
    """The message of ``error``, computed without running any method generated code defined.

    The arguments are rebuilt as plain data and formatted by the nearest builtin exception
    class, so a looping ``__str__``/``__repr__`` (or one that is a ``functools.partial`` over a
    slow regex) on the exception or on an argument is never called.
    """
    kind = type(error)
    try:
        raw_args = BaseException.__dict__["args"].__get__(error, kind)
        args = rebuild(raw_args, "exception arguments")
    except NonSerializableResultError:
        return f"<{str.__str__(kind.__name__)} with arguments that are not plain data>"
    base = next(klass for klass in kind.__mro__ if klass.__module__ == "builtins")
    if outgrows(args, _MESSAGE_CAP):
        # Shared parts (``ValueError([[s] * 1000] * 1000)``) format to billions of characters
        # in one C call after the deadline: formatted from a bounded copy (red team R12).
        return str.__str__(_formatted(base, _bounded_copy(args)))
    try:
        text = _formatted(base, args)
    except ValueError:
        # An int too long for str() raised out of the call to the developer (red team R14):
        # the bounded copy writes it as its leading digits.
        text = _formatted(base, _bounded_copy(args))
    return str.__str__(text)


def _bounded_copy(args: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(json_safe(list(args), budget=_MESSAGE_CAP, secrets=()))


def _formatted(base: type, args: tuple[Any, ...]) -> str:
    try:
        return str(base(*args))
    except Exception:  # noqa: BLE001 - a builtin that wants other arguments
        return repr(args)
