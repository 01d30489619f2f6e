"""Agent handles: what ``delegate``/``tool`` return inside generated code (ADR 0010).

A handle supports dynamic calls, setters, memory reads and ``remember`` on the agent behind it,
and nothing else: its only state is an underscore slot holding plain closures, so no attribute
chain leads to the agent's provider, client, options or API key. A dynamic call of a name the
Agent reserves (``propose``, ``role_profile``, ``self_model``, ...) is refused by the agent it
reaches (``reserved_agent_method``, ADR 0083), in process and from a worker alike.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from recurgent.outcome import Outcome

__all__ = ["AgentHandle", "HandleOps", "HandleWriter"]


@dataclass(frozen=True, slots=True)
class HandleOps:
    """The operations a handle may perform on its agent, as closures supplied by the host."""

    role: str
    call: Callable[[str, tuple[Any, ...], dict[str, Any]], Outcome]
    set: Callable[[str, Any], None]
    read: Callable[[str], tuple[bool, Any]]
    remember: Callable[[Mapping[str, Any]], None]
    agent: Callable[[], object]


class AgentHandle:
    """An opaque reference to an agent, usable from generated code."""

    __slots__ = ("_handle_ops",)
    __recurgent_agent__ = True
    _handle_ops: HandleOps

    def __init__(self, ops: HandleOps) -> None:
        if not isinstance(ops, HandleOps):
            raise TypeError("agent handles are made by delegate() and tool()")
        object.__setattr__(self, "_handle_ops", ops)

    def __setattr__(self, name: str, value: Any) -> None:
        raise AttributeError("agent handles are written through attribute assignment in code")

    def __repr__(self) -> str:
        return f"<agent {self._handle_ops.role!r}>"


class HandleWriter:
    """What ``_write_(handle)`` returns: ``handle.x = v`` becomes a setter on the agent."""

    __slots__ = ("_writer_set",)
    _writer_set: Callable[[str, Any], None]

    def __init__(self, set_value: Callable[[str, Any], None]) -> None:
        object.__setattr__(self, "_writer_set", set_value)

    def __setattr__(self, name: str, value: Any) -> None:
        self._writer_set(name, value)

    def __setitem__(self, key: Any, value: Any) -> None:
        raise TypeError("agent handles do not support item assignment; use handle.name = value")

    def __delattr__(self, name: str) -> None:
        raise AttributeError("agent memory cannot be deleted through a handle")
