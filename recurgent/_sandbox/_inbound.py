"""Values coming in from another agent, as generated code receives them: copied, never shared.

Split from :mod:`recurgent._sandbox._boundary` (values leaving an attempt). A program reading
another agent's memory through a handle gets copies of every mutable container, handles for
agents, the journal's treatment of host objects (ADR 0057) and guarded host code (ADR 0068);
the copy checks the attempt's deadline as it goes (red-team R3, H8).
"""

from __future__ import annotations

import collections
import copy
import decimal
from collections.abc import Callable
from typing import Any

from recurgent._journal._kinds import HOST_KINDS
from recurgent._journal._running import guard_by_running_attempt
from recurgent._journal._shared import Withheld, needs_guard, shareable
from recurgent._sandbox._boundary import KEPT_TYPES, MAX_DEPTH, SCALAR_TYPES, dict_setter
from recurgent._sandbox._decimal_operands import sandbox_decimal
from recurgent._sandbox._handles import AgentHandle, HandleOps
from recurgent.outcome import Outcome

__all__ = ["inbound"]


def inbound(
    value: Any,
    handle_for: Callable[[object], HandleOps | None],
    tick: Callable[[], object] | None = None,
) -> Any:
    """A value from another agent, as generated code receives it.

    Agents become handles; every mutable container the program could change in place (dicts
    and their collections subclasses, lists, deques, sets, bytearrays, and the tuples,
    namedtuples and Outcomes holding them) is copied, so writes stay in the attempt and never
    reach the other agent's memory. Shared and cyclic containers stay shared and cyclic. Host
    code the other agent holds is guarded by the running attempt, as the attempt's own memory's
    is (red-team F12, ADR 0068): called after that attempt ended, it raises the attempt's stop.
    ``tick`` (the attempt's deadline check) is called every 4,096 values copied: a read of ten
    million items ran seconds past the deadline (red-team R3, H8).
    """
    return _Inbound(handle_for, tick).value(value, 0)


# Values copied between two deadline checks of an inbound copy.
_TICK_EVERY = 4096
# A tuple of at most this many scalars is not memoized (as in the boundary's rebuild).
_SMALL = 8


class _Inbound:
    __slots__ = ("_copied", "_handle_for", "_memo", "_tick")

    def __init__(
        self,
        handle_for: Callable[[object], HandleOps | None],
        tick: Callable[[], object] | None = None,
    ) -> None:
        self._handle_for = handle_for
        self._memo: dict[int, Any] = {}
        self._tick = tick
        self._copied = 0

    def value(self, value: Any, depth: int) -> Any:
        if self._tick is not None:
            self._copied += 1
            if not self._copied % _TICK_EVERY:
                self._tick()
        kind = type(value)
        if kind is decimal.Decimal:
            return sandbox_decimal(value)  # int operands checked (ADR 0129)
        if kind in SCALAR_TYPES or kind in KEPT_TYPES:
            return value
        done = self._memo.get(id(value))
        if done is not None:
            return done
        if depth > MAX_DEPTH:
            # Deeper than any value an attempt can write: copied whole rather than handed out.
            return copy.deepcopy(value)
        ops = self._handle_for(value)
        if ops is not None:
            return AgentHandle(ops)
        depth += 1
        if isinstance(value, Outcome):
            copied = value.model_copy(
                update={
                    "value": self.value(value.value, depth),
                    "metadata": self.value(value.metadata, depth),
                }
            )
            # Memoized once built, as tuples are below (the boundary keeps both shared now).
            self._memo[id(value)] = copied
            return copied
        if kind in _INBOUND_DICTS:
            if kind is collections.defaultdict:
                # The factory is host code the program calls on a missing key: guarded.
                factory = self.value(value.default_factory, depth)
                built: Any = collections.defaultdict(factory if callable(factory) else None)
            else:
                built = kind()
            self._memo[id(value)] = built
            store = dict_setter(kind)
            for key, item in list(dict.items(value)):
                # A key may be host code too (a handler table keyed by function): guarded
                # like a value, or the program gets the raw function (red-team R3, H2).
                store(built, self.value(key, depth), self.value(item, depth))
            return built
        if kind is list or kind is collections.deque:
            built = [] if kind is list else collections.deque(maxlen=value.maxlen)
            self._memo[id(value)] = built
            built.extend([self.value(item, depth) for item in list(value)])
            return built
        if kind is set or kind is frozenset:
            # Members are hashable (nothing mutable inside), but an agent may be one. Memoized
            # once built, as tuples are: the boundary keeps a DAG of frozensets shared (ADR
            # 0156), and 18 levels of ``f = frozenset([f, frozenset([f, k])])`` took 1.3 s
            # here, twice that a level more (red team R30).
            members = kind(self.value(item, depth) for item in value)
            if len(members) > _SMALL or any(type(item) not in SCALAR_TYPES for item in members):
                self._memo[id(value)] = members
            return members
        if kind is bytearray:
            return bytearray(value)
        if kind is tuple or (issubclass(kind, tuple) and hasattr(kind, "_fields")):
            items = tuple(self.value(item, depth) for item in tuple.__iter__(value))
            made_tuple = items if kind is tuple else tuple.__new__(kind, items)
            # Memoized once built: the boundary keeps a DAG of tuples shared (ADR 0156), and
            # copied once a path, sixty levels of ``t = (t, t)`` would never end. A cycle
            # through a tuple runs through a list or dict, memoized before its items. A few
            # scalars are copied again where they recur, cheaper than a memo entry.
            if len(items) > _SMALL or any(type(item) not in SCALAR_TYPES for item in items):
                self._memo[id(value)] = made_tuple
            return made_tuple
        # Another agent's host objects get the journal's rules (ADR 0057): a copy the program
        # may change, the object itself when nothing can change it, else a withheld stand-in.
        host = HOST_KINDS.get(kind)
        if host is not None:
            made = host.make(value)
            if made is None or made is value:
                return value if made is value else Withheld(value)
            self._memo[id(value)] = made
            host.fill(value, made, lambda item, _step: self.value(item, depth))
            return made
        if not shareable(value):
            return Withheld(value)
        if needs_guard(value):
            return self._guarded(value)
        return value

    def _guarded(self, value: Any) -> Any:
        # Read while no attempt runs here (a leaked generator's late cleanup): nothing may
        # call it, so it is handed out inert.
        made = guard_by_running_attempt(value, Withheld)
        self._memo[id(value)] = made
        return made


_INBOUND_DICTS = frozenset(
    {dict, collections.OrderedDict, collections.Counter, collections.defaultdict}
)
