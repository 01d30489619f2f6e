"""``BatchRunner``: one map's program held by a remote worker (a Ray actor), run item by item.

Everything crosses as plain data in the worker codec's form (ADR 0094): the job (code, role,
method, memory snapshot, limits, network policy) once, when the runner is made; each batch's
items; each item's result (its value, its typed error, the keys it wrote, its output). Nothing
the program made is pickled back to the driver: a result is rebuilt at the sandbox boundary,
encoded here and decoded on the driver (ADR 0029). Each item runs in a fresh sandbox under the
same policy and limits as in process; the runner serves no forwarded call but the network (it
holds no agent), and the driver refuses a program that needs one before any batch runs.

No Ray here: the actor class is this class, wrapped by :mod:`recurgent._map._ray`.
"""

from __future__ import annotations

from typing import Any

from recurgent._journal import Writes
from recurgent._sandbox import (
    CompiledProgram,
    ExecutionResult,
    HostBridge,
    SandboxLimits,
    compile_program,
)
from recurgent._sandbox._batch import BatchSandbox
from recurgent._worker._codec import Unencodable, from_wire, to_wire
from recurgent._worker._protocol import WireError, error_from_wire, error_to_wire
from recurgent.errors import (
    GuardrailViolationError,
    InvalidCodeError,
    NonSerializableResultError,
    RecurgentError,
    UsageError,
)

__all__ = ["BatchRunner", "decode_result", "encode_job"]

#: Fields of ``SandboxLimits`` that cross.
_LIMIT_FIELDS = (
    "timeout_seconds",
    "max_sequence_items",
    "max_int_bits",
    "max_output_bytes",
    "max_forwarded_calls",
    "max_response_bytes",
    "default_http_timeout",
    "max_memory_bytes",
)


def _no_agent(value: object) -> tuple[int, str] | None:
    return None


def _agent_refused(number: int, role: str) -> object:
    raise ValueError(f"an agent reference ({role}) cannot reach a remote map worker")


def encode_job(
    *,
    code: str,
    role: str,
    method: str,
    memory: dict[str, Any],
    limits: SandboxLimits,
    network: Any,
) -> dict[str, Any]:
    """The job as plain data for a remote worker.

    Raises:
        Unencodable: memory holds a value that cannot cross (an agent, a host object).
    """
    return {
        "code": code,
        "role": role,
        "method": method,
        "memory": to_wire(memory, "context", _no_agent),
        "limits": {name: getattr(limits, name) for name in _LIMIT_FIELDS},
        "network": network if isinstance(network, str) else sorted(network),
    }


def _refuse(what: str) -> Any:
    def refuse(*_: Any, **__: Any) -> Any:
        raise UsageError(f"{what}() is not served inside a remote map worker")

    return refuse


class BatchRunner:
    """The program of one map, compiled once, run over batches of encoded items."""

    def __init__(self, job: dict[str, Any]) -> None:
        self._role = str(job["role"])
        self._method = str(job["method"])
        self._memory = from_wire(job["memory"], _agent_refused)
        self._limits = SandboxLimits(**job["limits"])
        network = job["network"]
        self._network = network if isinstance(network, str) else list(network)
        self._bridge = HostBridge(
            role=self._role,
            method_name=self._method,
            memory=self._memory,
            args=(),
            kwargs={},
            delegate=_refuse("delegate"),
            tool=_refuse("tool"),
            remember=_refuse("remember"),
            handle_for_agent=lambda _: None,
            content=None,
        )
        self._compiled: CompiledProgram | None = None
        self._invalid: InvalidCodeError | None = None
        try:
            self._compiled = compile_program(str(job["code"]))
        except InvalidCodeError as error:
            self._invalid = error

    def run(self, items: list[list[Any]]) -> list[dict[str, Any]]:
        """Run each ``[args, kwargs]`` item as an attempt of its own; one plain result per item."""
        if self._compiled is None:
            assert self._invalid is not None
            return [_encode(ExecutionResult(error=self._invalid)) for _ in items]
        sandbox = BatchSandbox(self._bridge, limits=self._limits, network=self._network)
        calls = [
            (tuple(from_wire(args, _agent_refused)), dict(from_wire(kwargs, _agent_refused)))
            for args, kwargs in items
        ]
        return [_encode(result) for result in sandbox.run_items(self._compiled, calls)]


def _encode(result: ExecutionResult) -> dict[str, Any]:
    error: RecurgentError | None = result.error
    value: Any = None
    if error is None:
        try:
            value = to_wire(result.value, "the result", _no_agent)
        except Unencodable as problem:
            error = NonSerializableResultError(f"{problem}; it cannot cross to the map's driver")
    writes = result.writes
    written: list[str] = []
    if writes is not None and not writes.empty:
        keys = writes.touched_keys()
        written = sorted({str(key) for key in keys}) if keys else ["(memory)"]
    return {
        "value": value,
        "error": None if error is None else error_to_wire(error).model_dump(),
        "violations": [error_to_wire(v).model_dump() for v in result.violations],
        "stdout": result.stdout,
        "forwarded_calls": result.forwarded_calls,
        "written": written,
    }


def decode_result(wire: dict[str, Any]) -> ExecutionResult:
    """The driver's side: an item's plain result back into an ``ExecutionResult``.

    Raises:
        ValueError, TypeError, KeyError: a malformed result (what an honest runner never sends).
    """
    error = wire.get("error")
    violations = [error_from_wire(WireError(**item)) for item in wire.get("violations") or []]
    written = [str(key) for key in wire.get("written") or []]
    return ExecutionResult(
        value=from_wire(wire.get("value"), _agent_refused),
        error=None if error is None else error_from_wire(WireError(**error)),
        stdout=str(wire.get("stdout") or ""),
        violations=[v for v in violations if isinstance(v, GuardrailViolationError)],
        forwarded_calls=int(wire.get("forwarded_calls") or 0),
        writes=Writes(set=dict.fromkeys(written)) if written else None,
    )
