"""The attempt's contract with the host: what the host lends it and what it hands back.

:class:`HostBridge` goes in (memory, arguments and the forwarded operations as host closures);
:class:`ExecutionResult` comes out (the marshalled value or the typed failure, output, counts and
the attempt's memory writes). Both are plain records: the sandbox fills and reads them.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from recurgent._journal import MemoryView, Writes
from recurgent._levels import MemoryShape
from recurgent._sandbox._handles import HandleOps
from recurgent.errors import GuardrailViolationError, RecurgentError

__all__ = ["ExecutionResult", "HostBridge"]


@dataclass(frozen=True, slots=True)
class HostBridge:
    """What the host lends one attempt: its memory, arguments and forwarded operations.

    Every callable here is a host-side closure; the sandbox never hands one to generated code
    directly, it wraps each call with budget, marshalling and error redaction.

    Attributes:
        role: Role of the agent whose code runs.
        method_name: Method being executed.
        memory: The agent's live memory dict. Generated code sees it through the attempt's
            journal view (``context`` and ``memory`` in code), never directly.
        args: Positional arguments of the call.
        kwargs: Keyword arguments of the call.
        delegate: ``delegate(role, **options)`` returning the child's operations.
        tool: ``tool(name, **options)`` returning the tool's operations.
        remember: Vets ``remember()`` entries (raising to refuse them); the sandbox then writes
            them into the attempt's view, so they commit or roll back with the attempt.
        handle_for_agent: Operations for an agent object met in memory or arguments, or
            ``None`` when the object is not an agent.
        content: ``content(ref)``: a fresh copy of the agent's kept answer named by ``ref``, or
            ``None``; the host records the read (ADR 0102). ``None``: every ref misses.
        memory_shape: Whether the agent's memory may hold a container at two places, kept
            by the agent across attempts (ADR 0161); ``None``: not known, as if it might (a
            patch's commit then walks memory).
    """

    role: str
    method_name: str
    memory: dict[str, Any]
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any]
    delegate: Callable[..., HandleOps]
    tool: Callable[..., HandleOps]
    remember: Callable[[Mapping[str, Any]], None]
    handle_for_agent: Callable[[object], HandleOps | None]
    content: Callable[[Any], Any] | None = None
    memory_shape: MemoryShape | None = None


@dataclass(slots=True)
class ExecutionResult:
    """What one attempt produced.

    Attributes:
        value: The program's value (``return`` or ``result``), marshalled for the host.
        error: The typed failure, or ``None``.
        stdout: Captured ``print`` output (capped).
        violations: Guardrail violations raised during the attempt, even if the code caught them.
        forwarded_calls: Forwarded calls made.
        writes: The attempt's memory writes, rebuilt as plain data (``None`` when it failed
            before they could be prepared). Committed already when the sandbox was built with
            ``commit_memory=True``.
        memory: The attempt's view of memory, as the code left it.
    """

    value: Any = None
    error: RecurgentError | None = None
    stdout: str = ""
    violations: list[GuardrailViolationError] = field(default_factory=list)
    forwarded_calls: int = 0
    writes: Writes | None = None
    memory: MemoryView | None = None
