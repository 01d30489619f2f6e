"""The worker protocol: JSON lines between the parent and a worker, one pydantic model per message.

Version 1 (ADR 0040). Parent and worker take turns on one pair of pipes: the parent sends a
:class:`RunRequest`; the worker answers with any number of :class:`ForwardRequest` (each
answered by one :class:`ForwardReply`) and finally one :class:`RunResult`. Values cross as JSON
plus two envelopes: an ``Outcome`` and an agent reference (a number the parent maps to the agent
it stands for, valid for one run). No pickle: nothing the worker writes can make the parent run
code.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from recurgent.errors import (
    BudgetExceededError,
    ExecutionError,
    ExecutionTimeoutError,
    GuardrailViolationError,
    InvalidCodeError,
    NonSerializableResultError,
    RecurgentError,
    ResourceLimitError,
    UsageError,
    WorkerCrashError,
)
from recurgent.outcome import Outcome

__all__ = [
    "IPC_VERSION",
    "ForwardOp",
    "ForwardReply",
    "ForwardRequest",
    "MemoryPatch",
    "Message",
    "RawExecRequest",
    "RunRequest",
    "RunResult",
    "Unencodable",
    "WireError",
    "WireLimits",
    "dump_line",
    "error_from_wire",
    "error_to_wire",
    "from_wire",
    "parse_line",
    "to_wire",
]

IPC_VERSION = 1
OUTCOME_KEY = "__recurgent_outcome__"
AGENT_KEY = "__recurgent_agent__"
_MAX_DEPTH = 64

ForwardOp = Literal[
    "delegate",
    "tool",
    "remember",
    "handle_call",
    "handle_set",
    "handle_read",
    "handle_remember",
    "content",
]


class _Message(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    ipc_version: Literal[1] = 1
    call_id: str


class WireLimits(BaseModel):
    """The attempt's caps as the worker's sandbox applies them (``SandboxLimits`` fields)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    timeout_seconds: float
    max_sequence_items: int
    max_int_bits: int
    max_output_bytes: int
    max_forwarded_calls: int
    max_response_bytes: int
    default_http_timeout: float
    max_memory_bytes: int | None


class RunRequest(_Message):
    """Parent to worker: run one program with this memory and these arguments."""

    kind: Literal["run"] = "run"
    role: str
    method_name: str
    code: str
    memory: dict[str, Any]
    args: list[Any]
    kwargs: dict[str, Any]
    limits: WireLimits
    network: Any = "allow"
    cpu_seconds: int | None = None


class RawExecRequest(_Message):
    """Parent to worker, test builds only: run raw Python, as an escaped program would."""

    kind: Literal["raw_exec"] = "raw_exec"
    code: str


class ForwardRequest(_Message):
    """Worker to parent: run ``tool``/``delegate``/``remember`` or a handle operation."""

    kind: Literal["forward"] = "forward"
    forward_id: int
    op: ForwardOp
    handle: int | None = None
    name: str | None = None
    args: list[Any] = Field(default_factory=list)
    kwargs: dict[str, Any] = Field(default_factory=dict)


class WireError(BaseModel):
    """A typed error as it crosses: the taxonomy fields of a ``RecurgentError``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    error_type: str
    message: str
    root_class: str | None = None
    root_message: str | None = None
    line: int | None = None
    subtype: str | None = None
    correction: str | None = None


class ForwardReply(_Message):
    """Parent to worker: the value of a forwarded operation, or the error it raised."""

    kind: Literal["forward_reply"] = "forward_reply"
    forward_id: int
    ok: bool
    value: Any = None
    handle: int | None = None
    error_class: str | None = None
    error: WireError | None = None


class MemoryPatch(BaseModel):
    """An in-place change to a container memory already held (a journal ``Patch`` as data).

    ``path`` leads from the memory root (top-level key first, then dict keys and list indexes)
    to the container the program changed; the parent applies the change to its own container
    at that path, so a host list or dict keeps its identity (ADR 0062).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    path: list[str | int] = Field(min_length=1, max_length=_MAX_DEPTH)
    kind: Literal["dict", "extend", "replace"]
    set: list[tuple[str, Any]] = Field(default_factory=list)
    delete: list[str] = Field(default_factory=list)
    items: list[Any] = Field(default_factory=list)


class RunResult(_Message):
    """Worker to parent: what the run produced (the ``ExecutionResult`` fields).

    ``memory_set`` holds the whole new value of every top-level key the run changed;
    ``memory_patches`` describes, for some of those keys, the same change as in-place patches of
    the containers memory held, which the parent prefers when they fit its memory.
    """

    kind: Literal["result"] = "result"
    status: Literal["ok", "error"]
    value: Any = None
    memory_set: dict[str, Any] = Field(default_factory=dict)
    memory_deleted: list[str] = Field(default_factory=list)
    memory_patches: dict[str, list[MemoryPatch]] = Field(default_factory=dict)
    stdout: str = ""
    error: WireError | None = None
    violations: list[WireError] = Field(default_factory=list)
    forwarded_calls: int = 0


Message = Annotated[
    RunRequest | RawExecRequest | ForwardRequest | ForwardReply | RunResult,
    Field(discriminator="kind"),
]
_MESSAGE: TypeAdapter[Any] = TypeAdapter(Message)


def dump_line(message: BaseModel) -> bytes:
    """One message as a JSON line (NaN and infinities are refused, not written)."""
    data = message.model_dump(mode="python")
    return json.dumps(data, allow_nan=False, separators=(",", ":")).encode("utf-8") + b"\n"


def parse_line(line: bytes) -> Any:
    """Parse one line into its message model.

    Raises:
        ValueError: not JSON, not a known message, or a different ``ipc_version``.
    """
    return _MESSAGE.validate_json(line)


class Unencodable(Exception):
    """A value that cannot cross as plain data; the message says where and what."""


def to_wire(value: Any, where: str, agent_id: Callable[[object], tuple[int, str] | None]) -> Any:
    """Encode a value for the pipe.

    Plain JSON types cross as they are (a tuple becomes a list); an ``Outcome`` and an agent
    (``agent_id`` returns its number) cross in envelopes. Anything else raises.

    Raises:
        Unencodable: a set, bytes, NaN, a non-string key, an object, or a dict that imitates
            an envelope.
    """

    def walk(item: Any, path: str, depth: int) -> Any:
        if depth > _MAX_DEPTH:
            raise Unencodable(f"{path} is nested more than {_MAX_DEPTH} levels deep")
        if item is None or type(item) in (bool, int, str):
            return item
        if type(item) is float:
            if not math.isfinite(item):
                raise Unencodable(f"{path} is {item!r}, which JSON cannot carry")
            return item
        if type(item) in (list, tuple):
            return [walk(child, f"{path}[{i}]", depth + 1) for i, child in enumerate(item)]
        if type(item) is dict:
            out: dict[str, Any] = {}
            for key, child in item.items():
                if type(key) is not str:
                    raise Unencodable(f"{path} has the non-string key {key!r}")
                out[key] = walk(child, f"{path}[{key!r}]", depth + 1)
            if len(out) == 1 and next(iter(out)) in (OUTCOME_KEY, AGENT_KEY):
                raise Unencodable(f"{path} imitates a runtime envelope ({next(iter(out))})")
            return out
        if isinstance(item, Outcome):
            fields = item.model_dump(mode="python")
            fields["value"] = walk(item.value, f"{path}.value", depth + 1)
            fields["metadata"] = walk(item.metadata, f"{path}.metadata", depth + 1)
            return {OUTCOME_KEY: fields}
        reference = agent_id(item)
        if reference is not None:
            return {AGENT_KEY: {"id": reference[0], "role": reference[1]}}
        raise Unencodable(f"{path} holds a {type(item).__name__}, which is not plain data")

    return walk(value, where, 0)


def from_wire(value: Any, agent_for: Callable[[int, str], object]) -> Any:
    """Decode a value read from the pipe (envelopes back to an ``Outcome`` or an agent)."""
    if type(value) is list:
        return [from_wire(child, agent_for) for child in value]
    if type(value) is not dict:
        return value
    if len(value) == 1 and AGENT_KEY in value and type(value[AGENT_KEY]) is dict:
        reference = value[AGENT_KEY]
        return agent_for(int(reference["id"]), str(reference["role"]))
    if len(value) == 1 and OUTCOME_KEY in value and type(value[OUTCOME_KEY]) is dict:
        fields = dict(value[OUTCOME_KEY])
        fields["value"] = from_wire(fields.get("value"), agent_for)
        fields["metadata"] = from_wire(fields.get("metadata") or {}, agent_for)
        return Outcome.model_validate(fields)
    return {key: from_wire(child, agent_for) for key, child in value.items()}


_ERROR_CLASSES: dict[str, type[RecurgentError]] = {
    cls.error_type: cls
    for cls in (
        ExecutionError,
        ResourceLimitError,
        NonSerializableResultError,
        ExecutionTimeoutError,
        GuardrailViolationError,
        BudgetExceededError,
        UsageError,
        InvalidCodeError,
        WorkerCrashError,
    )
}


def error_to_wire(error: RecurgentError) -> WireError:
    """The taxonomy fields of a runtime error."""
    return WireError(
        error_type=error.error_type,
        message=error.message,
        root_class=getattr(error, "root_class", None),
        root_message=getattr(error, "root_message", None),
        line=getattr(error, "line", None),
        subtype=getattr(error, "subtype", None),
        correction=getattr(error, "correction", None),
    )


def error_from_wire(wire: WireError) -> RecurgentError:
    """Rebuild a runtime error; an unknown type becomes an ``ExecutionError``."""
    cls = _ERROR_CLASSES.get(wire.error_type, ExecutionError)
    if issubclass(cls, ExecutionError):
        return cls(
            wire.message,
            root_class=wire.root_class,
            root_message=wire.root_message,
            line=wire.line,
        )
    if cls is GuardrailViolationError:
        return GuardrailViolationError(
            wire.message,
            subtype=wire.subtype or "unknown_guardrail_violation",
            correction=wire.correction,
            line=wire.line,
        )
    return cls(wire.message)
