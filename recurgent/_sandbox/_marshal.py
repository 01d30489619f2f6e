"""Marshalling across the sandbox boundary: what may leave an attempt, and copies coming in.

Values leaving an attempt (its result, ``remember()`` entries, arguments of forwarded calls,
memory at the end) must be plain data: a function, class, generator, handle or object the code
defined would carry one attempt's namespace into later calls or into the host. Values coming in
from other agents (handle reads, delegated outcomes) are copied, so generated code cannot
mutate another agent's memory in place (ADR 0010).
"""

from __future__ import annotations

import collections
import types
from collections.abc import Callable, Iterator, Mapping
from typing import Any

from recurgent._sandbox._guards import SealedType, is_sandbox_made
from recurgent._sandbox._handles import AgentHandle, HandleOps
from recurgent._sandbox._modules import ModuleFacade
from recurgent.outcome import Outcome

__all__ = ["find_unplain", "inbound", "preexisting_unplain"]

_MAX_DEPTH = 64
_SCALARS = (str, int, float, bool, bytes, type(None))
_CONTAINERS = (list, tuple, set, frozenset, collections.deque)


def _unplain_reason(value: Any) -> str | None:
    if isinstance(value, AgentHandle):
        return "an agent handle"
    if isinstance(value, ModuleFacade):
        return "a module"
    if isinstance(value, type | SealedType):
        return f"the class {value.__name__}"
    if isinstance(value, Iterator | types.GeneratorType):
        return "an iterator"
    if is_sandbox_made(value):
        return "a function" if callable(value) else f"an instance of {type(value).__name__}"
    if callable(value):
        return "a function"
    if isinstance(value, collections.defaultdict) and is_sandbox_made(value.default_factory):
        return "a defaultdict whose default factory is a function"
    return None


def _children(item: Any, where: str) -> Iterator[tuple[Any, str]]:
    if isinstance(item, Mapping):
        for key, child in item.items():
            yield key, f"{where} key {key!r}"
            yield child, f"{where}[{key!r}]"
    elif isinstance(item, _CONTAINERS):
        for index, child in enumerate(item):
            yield child, f"{where}[{index}]"
    elif isinstance(item, Outcome):
        yield item.value, f"{where}.value"
        yield item.metadata, f"{where}.metadata"


def find_unplain(value: Any, path: str, *, exempt: frozenset[int] = frozenset()) -> str | None:
    """Describe the first function, class, handle or iterator inside ``value``, or ``None``.

    Mapping keys, Outcome values and metadata are searched too. ``exempt`` holds ids of
    objects that were already there before the attempt (a host value the user stored is not
    the attempt's doing).
    """
    seen: set[int] = set()

    def walk(item: Any, where: str, depth: int) -> str | None:
        if type(item) in _SCALARS or id(item) in exempt or id(item) in seen:
            return None
        if depth > _MAX_DEPTH:
            return f"{where} is nested more than {_MAX_DEPTH} levels deep"
        reason = _unplain_reason(item)
        if reason is not None:
            return f"{where} holds {reason}"
        seen.add(id(item))
        for child, child_where in _children(item, where):
            found = walk(child, child_where, depth + 1)
            if found:
                return found
        return None

    return walk(value, path, 0)


def preexisting_unplain(value: Any) -> dict[int, object]:
    """Functions, classes and the like the host had stored before an attempt ran, by id.

    The caller keeps the mapping alive for the attempt, so no id is reused meanwhile.
    """
    found: dict[int, object] = {}
    seen: set[int] = set()

    def walk(item: Any, depth: int) -> None:
        if type(item) in _SCALARS or id(item) in seen:
            return
        seen.add(id(item))
        if depth >= _MAX_DEPTH or _unplain_reason(item) is not None:
            found[id(item)] = item
            return
        for child, _ in _children(item, ""):
            walk(child, depth + 1)

    walk(value, 0)
    return found


def inbound(value: Any, handle_for: Callable[[object], HandleOps | None], depth: int = 0) -> Any:
    """A value from another agent, as generated code receives it.

    Agents become handles; dicts, lists, sets and tuples are copied (so writes stay in the
    attempt); an Outcome is copied with its value and metadata marshalled the same way.
    """
    if type(value) in _SCALARS or depth > _MAX_DEPTH:
        return value
    ops = handle_for(value)
    if ops is not None:
        return AgentHandle(ops)
    if isinstance(value, Outcome):
        return value.model_copy(
            update={
                "value": inbound(value.value, handle_for, depth + 1),
                "metadata": inbound(value.metadata, handle_for, depth + 1),
            }
        )
    if type(value) is dict:
        return {key: inbound(child, handle_for, depth + 1) for key, child in value.items()}
    if type(value) in (list, tuple, set, frozenset):
        return type(value)(inbound(child, handle_for, depth + 1) for child in value)
    return value
