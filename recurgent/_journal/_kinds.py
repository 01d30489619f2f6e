"""The host objects other than containers that the journal copies, and how each commits.

Containers (dicts, lists, sets, ...) are copied by :mod:`recurgent._journal._core`. This module
holds the rules for the other objects a host may put in memory (ADR 0057), decided by exact type;
what is shared or withheld instead is decided in :mod:`recurgent._journal._shared`:

* **copied on touch** and committed in place: ``random.Random`` (its state), ``io.StringIO`` and
  ``io.BytesIO`` (value, position, newline mode), ``array.array``, ``ElementTree.Element`` (tag,
  text, tail, attributes, children; one copy per element), and the wrappers ``UserDict``,
  ``UserList``, ``UserString``, ``ChainMap`` and ``ElementTree.ElementTree`` (a shell whose
  attributes are copied like any value, so their containers are journaled);
* **shared** (values nobody can change, and host code, guarded) or **withheld** (an inert
  stand-in) otherwise: see :mod:`recurgent._journal._shared`.
"""

from __future__ import annotations

import array
import collections
import io
import random
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

from recurgent._journal._writes import MISSING, Patch, Path
from recurgent._where import Location, Where, where_in_memory
from recurgent.errors import NonSerializableResultError

__all__ = ["HOST_KINDS", "Fresh", "HostKind"]

#: How the journal copies one value found inside a host object: ``child(value, step)``.
Child = Callable[[Any, Any], Any]

# The deepest element tree an attempt may build and commit (the boundary's value depth).
_MAX_ELEMENT_DEPTH = 64


def _type_name(value: Any) -> str:
    # str.__str__: a class the program made cannot make its name run code in the host.
    return str.__str__(type(value).__name__)


class Fresh:
    """How a patch turns what the attempt left in a copy into values the host may hold.

    Args:
        rebuild: The boundary's rebuild of one value (plain data only).
        resolve: Maps a copy (or an object memory held) to memory's object; ``None`` if new.
    """

    __slots__ = ("_rebuild", "resolve")

    def __init__(
        self, rebuild: Callable[[Any, Location], Any], resolve: Callable[[Any], Any]
    ) -> None:
        self._rebuild = rebuild
        self.resolve = resolve

    def value(self, value: Any, where: Location) -> Any:
        """``value`` as memory may hold it (rebuilt unless memory already holds it)."""
        return self._rebuild(value, where)

    def text(self, value: Any, where: Location, *, optional: bool) -> Any:
        """A string (or ``None`` when ``optional``) for an element's tag, text or tail."""
        built = self._rebuild(value, where)
        if type(built) is str or (built is None and optional):
            return built
        raise NonSerializableResultError(
            f"{where} is {_type_name(value)}; an XML element holds only strings there"
        )

    def tag(self, value: Any, where: Location) -> Any:
        """An element's tag: a string, or the comment and processing-instruction markers."""
        if value is ElementTree.Comment or value is ElementTree.ProcessingInstruction:
            return value
        return self.text(value, Where(where, ".tag"), optional=False)

    def attributes(self, value: Any, where: Location) -> dict[str, str]:
        """An element's attributes: a dict of strings."""
        if not isinstance(value, dict):
            raise NonSerializableResultError(f"{where}.attrib is {_type_name(value)}, not dict")
        built: dict[str, str] = {}
        for key, item in list(dict.items(value)):
            # The key is rebuilt first: its repr in a message is then a plain string's.
            plain = self.text(key, Where(where, ".attrib key"), optional=False)
            built[plain] = self.text(item, Where(Where(where, ".attrib"), (plain,)), optional=False)
        return built

    def element(self, value: Any, where: Location, depth: int = 0) -> Any:
        """An element the host may hold: memory's own, or a fresh copy of one the attempt made."""
        known = self.resolve(value)
        if known is not None:
            return known
        if type(value) is not ElementTree.Element:
            raise NonSerializableResultError(
                f"{where} is {_type_name(value)}; an XML element's children are elements"
            )
        if depth > _MAX_ELEMENT_DEPTH:
            raise NonSerializableResultError(
                f"{where} is nested more than {_MAX_ELEMENT_DEPTH} elements deep"
            )
        built = ElementTree.Element(
            self.tag(value.tag, where), self.attributes(value.attrib, where)
        )
        built.text = self.text(value.text, Where(where, ".text"), optional=True)
        built.tail = self.text(value.tail, Where(where, ".tail"), optional=True)
        built.extend(
            self.element(child, Where(where, i), depth + 1) for i, child in enumerate(list(value))
        )
        return built


@dataclass(frozen=True, slots=True)
class HostKind:
    """The journal's rule for one host type.

    Attributes:
        make: An empty copy, memoized before it is filled (so cycles and sharing hold); it
            returns the original itself for an object that is shared as it is (a closed
            ``StringIO``), or ``None`` for one that must be withheld.
        fill: Copies the original's contents into the copy (``child`` copies a value found
            inside) and returns the record a patch compares against.
        diff: The patch that writes the copy's changes into the original, or ``None``.
    """

    make: Callable[[Any], Any]
    fill: Callable[[Any, Any, Child], Any]
    diff: Callable[[Any, Any, Any, Path, Fresh], Patch | None]


def _where(path: Path) -> Location:
    return where_in_memory(path)


# ----------------------------------------------------------------------------- random.Random


def _random_make(original: Any) -> Any:
    return random.Random.__new__(random.Random)


def _random_fill(original: Any, copy: Any, child: Child) -> Any:
    state = original.getstate()
    copy.setstate(state)
    return state


def _random_diff(copy: Any, original: Any, start: Any, path: Path, fresh: Fresh) -> Patch | None:
    state = copy.getstate()
    return None if state == start else Patch(original, path, "state", state=state)


# ----------------------------------------------------------------------------- StringIO, BytesIO


def _stream_make(original: Any) -> Any:
    if original.closed:
        return original  # every operation on it fails: nothing to change
    return type(original)()


def _stream_fill(original: Any, copy: Any, child: Child) -> Any:
    # __getstate__/__setstate__ carry the buffer untranslated, with the newline mode and the
    # position, so the copy (and later the original) is restored exactly.
    state = original.__getstate__()
    copy.__setstate__(state)
    return state


def _stream_diff(copy: Any, original: Any, start: Any, path: Path, fresh: Fresh) -> Patch | None:
    if copy.closed:
        return Patch(original, path, "state", state=None)
    state = copy.__getstate__()
    return None if state == start else Patch(original, path, "state", state=state)


# ----------------------------------------------------------------------------- array.array


def _array_make(original: Any) -> Any:
    return array.array(original.typecode)


def _array_fill(original: Any, copy: Any, child: Child) -> Any:
    data = original.tobytes()
    copy.frombytes(data)
    return data


def _array_diff(copy: Any, original: Any, start: Any, path: Path, fresh: Fresh) -> Patch | None:
    if copy.tobytes() == start:
        return None
    return Patch(original, path, "replace", items=copy.tolist())


# ----------------------------------------------------------------------------- ElementTree.Element


@dataclass(frozen=True, slots=True)
class _ElementStart:
    tag: Any
    text: Any
    tail: Any
    attrib: Any
    children: list[Any]


def _element_make(original: Any) -> Any:
    if any(type(child) is not ElementTree.Element for child in original):
        return None  # a host subclass as a child: its own state is out of the journal's reach
    return ElementTree.Element("")


def _element_fill(original: Any, copy: Any, child: Child) -> Any:
    copy.tag = child(original.tag, "tag")
    copy.attrib = child(original.attrib, "attrib")
    copy.text = child(original.text, "text")
    copy.tail = child(original.tail, "tail")
    copy.extend([child(item, i) for i, item in enumerate(list(original))])
    return _ElementStart(copy.tag, copy.text, copy.tail, copy.attrib, list(copy))


def _element_diff(copy: Any, original: Any, start: Any, path: Path, fresh: Fresh) -> Patch | None:
    if copy.attrib is start.attrib:
        _changed_attributes_are_text(copy.attrib, original.attrib, _where(path), fresh)
    children = list(copy)
    same_children = len(children) == len(start.children) and all(
        a is b for a, b in zip(children, start.children, strict=True)
    )
    if (
        copy.tag is start.tag
        and copy.text is start.text
        and copy.tail is start.tail
        and copy.attrib is start.attrib
        and same_children
    ):
        return None  # changes inside the attributes come as the attribute dict's own patch
    where = _where(path)
    if not same_children and _contains_itself(copy):
        # ElementTree assumes a tree: iter(), tostring() and find() on a cycle never end, in
        # the host's code after commit (red-team F18).
        raise NonSerializableResultError(f"{where} is its own descendant; XML elements form a tree")
    unchanged: Any = MISSING
    state = {
        "tag": unchanged if copy.tag is start.tag else fresh.tag(copy.tag, where),
        "text": unchanged
        if copy.text is start.text
        else fresh.text(copy.text, Where(where, ".text"), optional=True),
        "tail": unchanged
        if copy.tail is start.tail
        else fresh.text(copy.tail, Where(where, ".tail"), optional=True),
        "attrib": unchanged
        if copy.attrib is start.attrib
        else fresh.attributes(copy.attrib, where),
        "children": unchanged
        if same_children
        else [fresh.element(item, Where(where, i)) for i, item in enumerate(children)],
    }
    return Patch(original, path, "element", state=state)


def _changed_attributes_are_text(now: Any, before: Any, where: Location, fresh: Fresh) -> None:
    """Refuse an attribute the attempt set in place to something other than a string (F20).

    The attribute dict is journaled as a dict, whose patch would take any plain value; an
    element the host serializes later must hold strings, as one the attempt makes does.
    """
    for key, value in list(dict.items(now)):
        held = dict.get(before, key, MISSING) if type(key) is str else MISSING
        if held is value or (held is not MISSING and fresh.resolve(value) is held):
            continue  # as memory holds it: the host's own choice
        fresh.text(key, Where(where, ".attrib key"), optional=False)
        fresh.text(value, Where(Where(where, ".attrib"), (key,)), optional=False)


def _contains_itself(root: Any) -> bool:
    """Whether a cycle is reachable from ``root`` through children (shared subtrees are fine)."""
    done: set[int] = set()
    open_: set[int] = {id(root)}
    stack: list[tuple[Any, Iterator[Any]]] = [(root, iter(list(root)))]
    while stack:
        element, children = stack[-1]
        child = next(children, None)
        if child is None:
            stack.pop()
            open_.discard(id(element))
            done.add(id(element))
        elif id(child) in open_:
            return True
        elif id(child) not in done and type(child) is ElementTree.Element:
            open_.add(id(child))
            stack.append((child, iter(list(child))))
    return False


# ----------------------------------------------------------------------------- wrappers (shells)


def _shell_make(original: Any) -> Any:
    return object.__new__(type(original))


def _shell_fill(original: Any, copy: Any, child: Child) -> Any:
    # The wrapper's state is its attributes (UserDict.data, ChainMap.maps, ...): each is
    # copied like any value, so a dict or list inside is journaled on its own.
    attributes = copy.__dict__
    for name, value in list(vars(original).items()):
        attributes[name] = child(value, name)
    return dict(attributes)


def _shell_diff(copy: Any, original: Any, start: Any, path: Path, fresh: Fresh) -> Patch | None:
    now = vars(copy)
    changed = {
        name: fresh.value(value, f"{_where(path)}.{name}")
        for name, value in now.items()
        if start.get(name, MISSING) is not value
    }
    removed = [name for name in start if name not in now]
    if not changed and not removed:
        return None
    return Patch(original, path, "attrs", set=changed, delete=removed)


_SHELL = HostKind(_shell_make, _shell_fill, _shell_diff)

#: The host types the journal copies on first touch (exact types; subclasses are withheld).
HOST_KINDS: dict[type, HostKind] = {
    random.Random: HostKind(_random_make, _random_fill, _random_diff),
    io.StringIO: HostKind(_stream_make, _stream_fill, _stream_diff),
    io.BytesIO: HostKind(_stream_make, _stream_fill, _stream_diff),
    array.array: HostKind(_array_make, _array_fill, _array_diff),
    ElementTree.Element: HostKind(_element_make, _element_fill, _element_diff),
    collections.UserDict: _SHELL,
    collections.UserList: _SHELL,
    collections.UserString: _SHELL,
    collections.ChainMap: _SHELL,
    ElementTree.ElementTree: _SHELL,
}
