"""The worker protocol: JSON lines between the parent and a worker, one pydantic model per message.

Version 1 (ADR 0040). A worker announces itself once with :class:`Ready` when its runtime is
imported (ADR 0093); then parent and worker take turns on one pair of pipes: the parent sends a
:class:`RunRequest`; the worker answers with any number of :class:`ForwardRequest` (each
answered by one :class:`ForwardReply`) and finally one :class:`RunResult`, each carrying the
request's ``call_id`` (the parent takes no other as an answer, ADR 0095). Values cross as JSON
plus envelopes (``_codec``, ADR 0094): the values the in-process boundary keeps, an ``Outcome``
and an agent reference (a number the parent maps to the agent it stands for, valid for one
run). No pickle: nothing the worker writes can make the parent run code.
"""

from __future__ import annotations

import json
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter
from pydantic_core import PydanticSerializationError

from recurgent._worker._codec import (
    AGENT_KEY,
    MAX_DEPTH,
    OUTCOME_KEY,
    Unencodable,
    from_wire,
    to_wire,
)
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

__all__ = [
    "AGENT_KEY",
    "IPC_VERSION",
    "OUTCOME_KEY",
    "ForwardOp",
    "ForwardReply",
    "ForwardRequest",
    "MemoryPatch",
    "Message",
    "RawExecRequest",
    "Ready",
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
# Every model writes a non-finite float as NaN/Infinity (ser_json_inf_nan="constants", not
# pydantic's default null), so dump_line can refuse it rather than send another value.

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
    model_config = ConfigDict(frozen=True, extra="forbid", ser_json_inf_nan="constants")

    ipc_version: Literal[1] = 1
    call_id: str


class WireLimits(BaseModel):
    """The attempt's caps as the worker's sandbox applies them (``SandboxLimits`` fields)."""

    model_config = ConfigDict(frozen=True, extra="forbid", ser_json_inf_nan="constants")

    timeout_seconds: float
    max_sequence_items: int
    max_int_bits: int
    max_output_bytes: int
    max_forwarded_calls: int
    max_response_bytes: int
    default_http_timeout: float
    max_memory_bytes: int | None


class Ready(BaseModel):
    """Worker to parent, once, before any request: the runtime is imported and warmed up."""

    model_config = ConfigDict(frozen=True, extra="forbid", ser_json_inf_nan="constants")

    ipc_version: Literal[1] = 1
    kind: Literal["ready"] = "ready"


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

    model_config = ConfigDict(frozen=True, extra="forbid", ser_json_inf_nan="constants")

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

    model_config = ConfigDict(frozen=True, extra="forbid", ser_json_inf_nan="constants")

    path: list[str | int] = Field(min_length=1, max_length=MAX_DEPTH)
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
    Ready | RunRequest | RawExecRequest | ForwardRequest | ForwardReply | RunResult,
    Field(discriminator="kind"),
]
_MESSAGE: TypeAdapter[Any] = TypeAdapter(Message)


def dump_line(message: BaseModel) -> bytes:
    """One message as a JSON line (NaN and infinities are refused, not written).

    Written by pydantic-core (several times faster than ``json.dumps`` of the dumped model:
    memory crosses on every run, red team R25); by the standard library when that cannot
    write it (a lone surrogate, written as its escape) or when the text holds ``NaN`` or
    ``Infinity``, which ``json.dumps`` refuses if they are numbers.
    """
    try:
        line = message.model_dump_json().encode("utf-8")
    except PydanticSerializationError:
        line = b""
    if not line or b"NaN" in line or b"Infinity" in line:
        data = message.model_dump(mode="python")
        line = json.dumps(data, allow_nan=False, separators=(",", ":")).encode("utf-8")
    return line + b"\n"


def parse_line(line: bytes) -> Any:
    """Parse one line into its message model.

    Raises:
        ValueError: not JSON, not a known message, or a different ``ipc_version``.
    """
    try:
        return _MESSAGE.validate_json(line)
    except ValueError as refused:
        if b"\\ud" not in line and b"\\uD" not in line:
            raise
        # A lone surrogate (text decoded with surrogateescape, a program's chr(0xDCE9)) is
        # written by json.dumps as its escape, which pydantic's JSON parser refuses: Python's
        # reads it, and the message is validated as Python data (red team R25).
        try:
            data = json.loads(line)
        except (ValueError, RecursionError):
            # A line nested past the parser's recursion limit is refused as pydantic refused
            # it: a ValueError, which the parent reads as a broken worker (red team R26).
            raise refused from None
        if _nested_past(data, _JSON_DEPTH):
            # pydantic's parser refuses a line nested deeper than this; the decoding after it
            # recurses (red team R26: a 900-level answer raised RecursionError in the parent).
            raise ValueError(f"message nested more than {_JSON_DEPTH} levels deep") from None
        return _MESSAGE.validate_python(data)


# The deepest nesting pydantic-core's JSON parser accepts (the message object counted).
_JSON_DEPTH = 200


def _nested_past(data: Any, levels: int) -> bool:
    """Whether parsed JSON ``data`` nests containers more than ``levels`` deep (the outermost
    counted as one)."""
    frontier = [data] if type(data) in (dict, list) else []
    depth = 0
    while frontier:
        depth += 1
        if depth > levels:
            return True
        below: list[Any] = []
        for node in frontier:
            children = node.values() if type(node) is dict else node
            below.extend(child for child in children if type(child) in (dict, list))
        frontier = below
    return False


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
