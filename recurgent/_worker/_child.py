"""The worker process: reads run requests on stdin and runs each program in a restricted sandbox.

Started as ``python -I -m recurgent._worker`` (ADR 0040). Generated code is compiled by the same
policy as in the parent (``compile_program``) and runs in an ``ExecutionSandbox`` whose
``tool``/``delegate``/``remember``/``content`` and handle operations are forwarded to the
parent over the pipe, so the parent runs them with its budgets and logs them. The protocol writes go to a
private duplicate of the original stdout; file descriptor 1 and ``sys.stdout`` point at stderr,
so nothing a package prints can corrupt the stream.
"""

from __future__ import annotations

import builtins
import json
import os
import resource
import sys
import traceback
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import IO, Any

from recurgent._sandbox import (
    ExecutionResult,
    ExecutionSandbox,
    HandleOps,
    HostBridge,
    SandboxLimits,
    compile_program,
)
from recurgent._where import Where
from recurgent._worker._imports import DependencyAccess, installed_top_level_names
from recurgent._worker._protocol import (
    ForwardReply,
    ForwardRequest,
    MemoryPatch,
    RawExecRequest,
    Ready,
    RunRequest,
    RunResult,
    Unencodable,
    WireError,
    dump_line,
    error_to_wire,
    from_wire,
    parse_line,
    to_wire,
)
from recurgent.errors import (
    BudgetExceededError,
    ExecutionError,
    GuardrailViolationError,
    InvalidCodeError,
    NonSerializableResultError,
    ResourceLimitError,
    UsageError,
)
from recurgent.outcome import Outcome

__all__ = ["RemoteAgent", "main"]

#: Set by the parent only when a test asks for it: enables ``raw_exec`` requests.
TEST_HOOKS_VARIABLE = "RECURGENT_WORKER_TEST_HOOKS"


class RemoteAgent:
    """The worker's stand-in for an agent the parent holds (valid for one run)."""

    __slots__ = ("number", "role")

    def __init__(self, number: int, role: str) -> None:
        self.number = number
        self.role = role

    def __repr__(self) -> str:
        return f"<agent {self.role!r}>"


class ProtocolBroken(Exception):
    """The parent sent something this worker cannot follow; the worker exits."""


class _Channel:
    def __init__(self, reader: IO[bytes], writer: IO[bytes]) -> None:
        self._reader = reader
        self._writer = writer

    def send(self, message: Any) -> None:
        self._writer.write(dump_line(message))
        self._writer.flush()

    def receive(self) -> Any:
        line = self._reader.readline()
        if not line:
            return None
        try:
            return parse_line(line)
        except ValueError as error:
            raise ProtocolBroken(f"unreadable message: {error}") from None


_FORWARDED_ERRORS: dict[str, type[Exception]] = {
    "BudgetExceededError": BudgetExceededError,
    "UsageError": UsageError,
}


class _Forwarder:
    """The bridge operations of one run, each a round trip to the parent."""

    def __init__(self, channel: _Channel, call_id: str) -> None:
        self._channel = channel
        self._call_id = call_id
        self._next = 0
        self._agents: dict[int, RemoteAgent] = {}

    def agent(self, number: int, role: str) -> RemoteAgent:
        found = self._agents.get(number)
        if found is None:
            found = self._agents[number] = RemoteAgent(number, role)
        return found

    def reference(self, value: object) -> tuple[int, str] | None:
        if isinstance(value, RemoteAgent):
            return value.number, value.role
        return None

    def _encode(self, value: Any, where: str) -> Any:
        try:
            return to_wire(value, where, self.reference)
        except Unencodable as error:
            raise NonSerializableResultError(str(error)) from None

    def forward(
        self,
        op: Any,
        *,
        handle: int | None = None,
        name: str | None = None,
        args: Any = (),
        kwargs: Mapping[str, Any] | None = None,
    ) -> ForwardReply:
        self._next += 1
        request = ForwardRequest(
            call_id=self._call_id,
            forward_id=self._next,
            op=op,
            handle=handle,
            name=name,
            args=self._encode(list(args), f"{op} arguments"),
            kwargs=self._encode(dict(kwargs or {}), f"{op} options"),
        )
        self._channel.send(request)
        reply = self._channel.receive()
        if (
            not isinstance(reply, ForwardReply)
            or reply.forward_id != self._next
            or reply.call_id != self._call_id
        ):
            raise ProtocolBroken("expected the reply to a forwarded call")
        if reply.ok:
            return reply
        wire = reply.error or WireError(error_type="execution", message="forwarded call failed")
        if reply.error_class == "GuardrailViolationError":
            raise GuardrailViolationError(
                wire.message, subtype=wire.subtype or "unknown", correction=wire.correction
            )
        if reply.error_class == "NonSerializableResultError":
            raise NonSerializableResultError(wire.message)
        raise _FORWARDED_ERRORS.get(reply.error_class or "", RuntimeError)(wire.message)

    def ops(self, number: int, role: str) -> HandleOps:
        forward, decode = self.forward, self.decode

        def call(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Outcome:
            reply = forward("handle_call", handle=number, name=name, args=args, kwargs=kwargs)
            value = decode(reply.value)
            return value if isinstance(value, Outcome) else Outcome.ok(value)

        def set_value(name: str, value: Any) -> None:
            forward("handle_set", handle=number, name=name, args=[value])

        def read(name: str) -> tuple[bool, Any]:
            reply = forward("handle_read", handle=number, name=name)
            found, value = decode(reply.value)
            return bool(found), value

        def remember(entries: Mapping[str, Any]) -> None:
            forward("handle_remember", handle=number, kwargs=entries)

        return HandleOps(
            role=role,
            call=call,
            set=set_value,
            read=read,
            remember=remember,
            agent=lambda: self.agent(number, role),
        )

    def remember(self, entries: Mapping[str, Any]) -> None:
        self.forward("remember", kwargs=entries)

    def content(self, ref: Any) -> Any:
        """``content(ref)``: the parent's content store answers (ADR 0102)."""
        return self.decode(self.forward("content", args=[ref]).value)

    def decode(self, value: Any) -> Any:
        return from_wire(value, self.agent)

    def opener(self, op: Any) -> Any:
        # Positional-only, as the host's: an option named "name" is an option (red team R9).
        def open_handle(name: Any, /, **options: Any) -> HandleOps:
            reply = self.forward(op, name=str(name), kwargs=options)
            if reply.handle is None:
                raise ProtocolBroken(f"{op} reply without a handle")
            return self.ops(reply.handle, str(reply.value))

        return open_handle

    def handle_for(self, value: object) -> HandleOps | None:
        if isinstance(value, RemoteAgent):
            return self.ops(value.number, value.role)
        return None


def _limit_cpu(seconds: int | None) -> None:
    """Let this run use ``seconds`` more CPU seconds (the hard limit is the parent's)."""
    if seconds is None:
        return
    usage = resource.getrusage(resource.RUSAGE_SELF)
    used = int(usage.ru_utime + usage.ru_stime) + 1
    _soft, hard = resource.getrlimit(resource.RLIMIT_CPU)
    wanted = used + seconds
    if hard != resource.RLIM_INFINITY:
        wanted = min(wanted, hard)
    resource.setrlimit(resource.RLIMIT_CPU, (wanted, hard))


def _memory_writes(
    before: Mapping[str, Any], after: Mapping[str, Any]
) -> tuple[dict[str, Any], list[str]]:
    written = {
        key: value
        for key, value in after.items()
        if key not in before or json.dumps(before[key]) != json.dumps(value)
    }
    deleted = [key for key in before if key not in after]
    return written, deleted


def _written(
    request: RunRequest, memory: dict[str, Any], done: ExecutionResult, forwarder: _Forwarder
) -> tuple[dict[str, Any], list[str]]:
    """What a run wrote to memory, as wire values, and the keys it deleted.

    Only the keys the run's journal says it changed are encoded: memory it left alone is
    neither encoded nor compared, so a run's cost does not grow with it (red team R25, ADR
    0152). A run that failed commits nothing. Writes whose keys are unknown (a patch without a
    path) are found by comparing every key, as before. Each key's value is encoded alone.
    """
    writes = done.writes
    if done.error is not None or done.violations or writes is None:
        return {}, []
    touched = writes.touched_keys()
    if touched is not None:
        keys = _string_keys(dict.fromkeys(touched))
        changed = [key for key in keys if key in memory]
        deleted = [key for key in writes.delete if key not in memory]
        return _encoded_keys(memory, changed, forwarder), deleted
    return _memory_writes(request.memory, _encoded_keys(memory, list(memory), forwarder))


def _encoded_keys(memory: dict[str, Any], keys: list[Any], forwarder: _Forwarder) -> dict[str, Any]:
    """``memory``'s values at ``keys``, each encoded on its own.

    Encoding the mapping of them whole wrote it as a ``__recurgent_dict__`` envelope when its
    one key looked like an envelope or a key was not a string, and the parent stored that
    envelope's pairs under ``"__recurgent_dict__"`` (red team R27). A key that is not a string
    cannot name a ``memory_set`` entry: the run is refused, as for a value that cannot cross.

    Raises:
        Unencodable: a key that is not a string, or a value that cannot cross.
    """
    return {
        key: to_wire(memory[key], str(Where("context", (key,))), forwarder.reference)
        for key in _string_keys(keys)
    }


def _string_keys(keys: Iterable[Any]) -> list[str]:
    """``keys`` (memory's, changed or deleted), each a string.

    Raises:
        Unencodable: one is not: ``memory_set`` and ``memory_deleted`` name keys by strings.
    """
    found: list[str] = []
    for key in keys:
        if type(key) is not str:
            raise Unencodable(
                f"context has a key of type {type(key).__name__}; memory keys cross the worker "
                "boundary as strings only"
            )
        found.append(key)
    return found


def _commit(done: ExecutionResult, memory: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    """Commit a successful run's writes to the worker's copy of memory, as the sandbox would.

    Returns the in-place patches of containers memory held, by top-level key, for the keys
    the run changed only in place (a key it reassigned or deleted crosses as a whole value).
    """
    writes = done.writes
    if done.error is not None or done.violations or writes is None:
        return {}
    plain = writes.as_plain()
    writes.apply(memory)
    whole = set(writes.set) | set(writes.delete)
    patches: dict[str, list[dict[str, Any]]] = {}
    for patch in plain["patches"]:
        key = patch["path"][0] if patch["path"] else None
        if isinstance(key, str) and key not in whole:
            patches.setdefault(key, []).append(patch)
    return patches


def _wire_patches(
    patches: dict[str, list[dict[str, Any]]], changed: dict[str, Any], forwarder: _Forwarder
) -> dict[str, list[MemoryPatch]]:
    """The patches of the changed keys as protocol data; a key whose patches cannot cross
    (a path or a kind the parent would not follow) keeps only its whole value."""
    wired: dict[str, list[MemoryPatch]] = {}
    for key, entries in patches.items():
        if key not in changed:
            continue
        try:
            wired[key] = [
                MemoryPatch(
                    path=entry["path"],
                    kind=entry["kind"],
                    set=[
                        (name, to_wire(value, f"context[{key!r}]", forwarder.reference))
                        for name, value in entry["set"]
                    ],
                    delete=entry["delete"],
                    items=to_wire(entry["items"], f"context[{key!r}]", forwarder.reference),
                )
                for entry in entries
            ]
        except (Unencodable, ValueError):
            continue
    return wired


def _finish(
    request: RunRequest,
    forwarder: _Forwarder,
    memory: Any,
    done: ExecutionResult,
    patches: dict[str, list[dict[str, Any]]],
) -> RunResult:
    error = done.error
    if isinstance(error, ExecutionError) and error.root_class == "MemoryError":
        # In a confined worker this is RLIMIT_AS refusing an allocation: a resource limit.
        error = ResourceLimitError(
            error.message.replace("Execution error", "Resource limit", 1),
            root_class="MemoryError",
            root_message=error.root_message,
            line=error.line,
        )
    value: Any = None
    written: dict[str, Any] = {}
    deleted: list[str] = []
    wired: dict[str, list[MemoryPatch]] = {}
    try:
        if error is None:
            value = to_wire(done.value, "the result", forwarder.reference)
        written, deleted = _written(request, memory, done, forwarder)
        wired = _wire_patches(patches, written, forwarder)
    except Unencodable as problem:
        if error is None:
            error = NonSerializableResultError(
                f"{problem}; only plain data (dicts, lists, strings, numbers, booleans, None, "
                "Outcomes) can cross the worker boundary"
            )
        value = None
    return RunResult(
        call_id=request.call_id,
        status="ok" if error is None else "error",
        value=value,
        memory_set=written,
        memory_deleted=deleted,
        memory_patches=wired if error is None else {},
        stdout=done.stdout,
        error=None if error is None else error_to_wire(error),
        violations=[error_to_wire(violation) for violation in done.violations],
        forwarded_calls=done.forwarded_calls,
    )


def run_request(request: RunRequest, channel: _Channel, access: DependencyAccess) -> RunResult:
    """Run one program; every failure of the program is reported, never raised."""
    forwarder = _Forwarder(channel, request.call_id)
    memory = forwarder.decode(request.memory)
    bridge = HostBridge(
        role=request.role,
        method_name=request.method_name,
        memory=memory,
        args=tuple(forwarder.decode(request.args)),
        kwargs=forwarder.decode(request.kwargs),
        delegate=forwarder.opener("delegate"),
        tool=forwarder.opener("tool"),
        remember=forwarder.remember,
        handle_for_agent=forwarder.handle_for,
        content=forwarder.content,
    )
    try:
        program = compile_program(request.code)
    except InvalidCodeError as error:
        return RunResult(call_id=request.call_id, status="error", error=error_to_wire(error))
    sandbox = ExecutionSandbox(
        bridge,
        limits=SandboxLimits(**request.limits.model_dump()),
        network=request.network,
        # Committed below, after the journal's in-place patches are taken (ADR 0062).
        commit_memory=False,
    )
    # The sandbox owns its namespace; the worker widens exactly two entries of it (ADR 0042).
    namespace = sandbox._namespace
    namespace["__builtins__"]["__import__"] = access.wrap_importer(
        namespace["__builtins__"]["__import__"]
    )
    namespace["_getattr_"] = access.wrap_getattr(namespace["_getattr_"])
    _limit_cpu(request.cpu_seconds)
    done = sandbox.run(program)
    patches = _commit(done, memory)
    return _finish(request, forwarder, memory, done, patches)


def _raw_exec(request: RawExecRequest) -> RunResult:
    """Test hook: what a program that escaped the policy could do (plain ``exec``)."""
    namespace: dict[str, Any] = {"__builtins__": builtins, "result": None}
    try:
        exec(request.code, namespace)
        value = to_wire(namespace.get("result"), "the result", lambda _: None)
    except BaseException as error:
        if isinstance(error, KeyboardInterrupt):
            raise
        wire = WireError(
            error_type="execution",
            message=f"{type(error).__name__}: {error}",
            root_class=type(error).__name__,
            root_message=str(error),
        )
        return RunResult(call_id=request.call_id, status="error", error=wire)
    return RunResult(call_id=request.call_id, status="ok", value=value)


def _refuse(*_: Any, **__: Any) -> Any:
    raise UsageError("nothing is forwarded while the worker warms up")


def _warm_up() -> None:
    """Compile and run one trivial program, so the first real run finds everything loaded.

    Done before the ready line: what it costs is start-up, which no deadline counts (ADR 0093).
    """
    bridge = HostBridge(
        role="warm-up",
        method_name="warm_up",
        memory={},
        args=(),
        kwargs={},
        delegate=_refuse,
        tool=_refuse,
        remember=_refuse,
        handle_for_agent=lambda _: None,
    )
    sandbox = ExecutionSandbox(bridge, limits=SandboxLimits(timeout_seconds=30.0), network="deny")
    sandbox.run(compile_program("return 1"))


def _serve(channel: _Channel, access: DependencyAccess, test_hooks: bool) -> int:
    while True:
        request = channel.receive()
        if request is None:
            return 0
        if isinstance(request, RunRequest):
            channel.send(run_request(request, channel, access))
        elif isinstance(request, RawExecRequest) and test_hooks:
            channel.send(_raw_exec(request))
        else:
            raise ProtocolBroken(f"unexpected {type(request).__name__}")


def main(argv: list[str] | None = None) -> int:
    """Serve requests until stdin closes. ``argv``: ``[--site-packages DIR]``."""
    argv = list(sys.argv[1:] if argv is None else argv)
    site = Path(argv[argv.index("--site-packages") + 1]) if "--site-packages" in argv else None
    access = DependencyAccess(installed_top_level_names(site) if site else frozenset())
    test_hooks = os.environ.pop(TEST_HOOKS_VARIABLE, "") == "1"
    protocol_out = os.fdopen(os.dup(1), "wb", buffering=0)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    channel = _Channel(sys.stdin.buffer, protocol_out)
    try:
        _warm_up()
        channel.send(Ready())
        return _serve(channel, access, test_hooks)
    except ProtocolBroken as broken:
        sys.stderr.write(f"recurgent worker: {broken}\n")
        return 2
    except BaseException:  # noqa: BLE001 - the tail of stderr is what the parent reports
        traceback.print_exc(file=sys.stderr)
        return 3
