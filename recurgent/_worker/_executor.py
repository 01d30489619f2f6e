"""``ProcessExecutor``: the execution port over a worker process, and the parent's forwarding.

It encodes the call's memory and arguments for the pipe (agents become numbered references
valid for one run), answers the worker's forwarded calls with the host bridge under the
attempt's deadline, and turns the worker's answer back into an ``ExecutionResult`` carrying
the worker's log fields. The worker's memory writes are applied to the given memory, or, for
the lifecycle, returned uncommitted as journal ``Writes``: a container memory held that the
program changed in place is patched in place (a host list keeps its identity, ADR 0062); a key
the program reassigned, or whose patches do not fit the host's memory, gets its whole value.
The run's clock (its forwarded calls' deadline too) starts when its worker is ready, and a run
that leaves its worker unfit for the next program retires that worker (ADR 0093).

A worker may be subverted (raw code that escaped its sandbox writes what it likes on the pipe),
so what it sends is held to what the in-process sandbox lets a program do (red team R28): no
value nested past the 64 levels the worker itself could send back, no handle name the sandbox's
policy refuses, no ``delegate``/``tool`` setting over the sandbox's bound, no more printed
output than the attempt's ``max_output_bytes``, and a count of forwarded calls the parent saw.
"""

from __future__ import annotations

import json
import re
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from recurgent._execution import Capabilities, ExecutionInputs
from recurgent._guardrails import is_terminal
from recurgent._journal import Patch, Writes
from recurgent._levels import MemoryShape, deep_patch, deep_place, parts as levels_below
from recurgent._redact import redact
from recurgent._registry import TOOLS_KEY
from recurgent._sandbox import ExecutionResult, HandleOps, HostBridge, SandboxLimits
from recurgent._sandbox._boundary import PLAIN_SUFFIX
from recurgent._sandbox._forwarding import MEMORY_SUFFIX, bounded_setting
from recurgent._sandbox._guards import INSPECTION_NAMES
from recurgent._sandbox._limits import attempt_deadline, truncation_marker
from recurgent._worker._codec import MAX_DEPTH
from recurgent._worker._env import Environment
from recurgent._worker._protocol import (
    OUTCOME_KEY,
    ForwardReply,
    ForwardRequest,
    MemoryPatch,
    RawExecRequest,
    RunRequest,
    RunResult,
    Unencodable,
    WireError,
    WireLimits,
    error_from_wire,
    error_to_wire,
    from_wire,
    to_wire,
)
from recurgent._worker._retire import retire_reason
from recurgent._worker._supervisor import RunStats, WorkerSupervisor
from recurgent.errors import (
    BudgetExceededError,
    GuardrailViolationError,
    InvalidOutcomeError,
    NonSerializableResultError,
    RecurgentError,
    UsageError,
    WorkerCrashError,
)
from recurgent.program import Program

__all__ = ["ProcessExecutor", "WorkerExecutionResult", "uncrossable_message"]

_PASSED_ERRORS = (
    BudgetExceededError,
    UsageError,
    GuardrailViolationError,
    NonSerializableResultError,
)
# The one guardrail violation a worker's sandbox raises itself (``_guards``' ``setattr`` of an
# agent, module or host class, reported by ``ForwardedCalls._violation``), and its text.
_MUTATION_SUBTYPE = "singleton_method_mutation"
_MUTATION_TEXT = re.compile(
    r"Generated code may not modify [A-Za-z_][\w.]{0,200}(?: object)?: mutating agents, "
    r"modules or host classes is not supported; keep state in context or in objects your "
    r"code creates"
)
# Values that cross the pipe as JSON scalars at any depth (``to_wire`` checks no depth for them).
_SCALARS = frozenset({type(None), bool, str, int, float})
# Forwarded operations that spend the in-process sandbox's forwarded-call budget (a handle's
# memory read does not; HTTP requests do, and only the worker sees those).
_SPENDING_OPS = frozenset(
    {"delegate", "tool", "remember", "content", "handle_call", "handle_set", "handle_remember"}
)


@dataclass(slots=True)
class WorkerExecutionResult(ExecutionResult):
    """An ``ExecutionResult`` plus the worker's log fields (``execution_receiver`` etc.)."""

    log_fields: dict[str, Any] = field(default_factory=dict)


class _Run:
    """The agent references and forwarded-call answers of one run."""

    def __init__(
        self,
        bridge: HostBridge,
        timeout_seconds: float,
        max_forwarded_calls: int,
        max_output_bytes: int = SandboxLimits().max_output_bytes,
    ) -> None:
        self._bridge = bridge
        self._timeout = timeout_seconds
        self._deadline = time.monotonic() + timeout_seconds
        self.max_calls = max_forwarded_calls
        self.max_output_bytes = max_output_bytes
        #: Qualified type names of values sent into the run whose methods reach module state.
        self.received: set[str] = set()
        #: Forwarded calls of the kinds the sandbox's budget counts, as the parent saw them.
        self.spent = 0
        #: The guardrail violations this parent's forwarded calls raised, as sent to the worker.
        self.guardrails: list[WireError] = []
        self._ops: dict[int, HandleOps] = {}
        self._numbers: dict[int, int] = {}
        # The wire form of every answer a forwarded call gave the worker (ADR 0065, F15).
        self._answered: set[str] = set()

    @property
    def memory_shape(self) -> MemoryShape | None:
        """Whether the agent's memory may hold a container twice (ADR 0161; ``None``: not known)."""
        return self._bridge.memory_shape

    def _register(self, ops: HandleOps, key: int) -> int:
        number = self._numbers.get(key)
        if number is None:
            number = len(self._ops) + 1
            self._ops[number] = ops
            self._numbers[key] = number
        return number

    def reference(self, value: object) -> tuple[int, str] | None:
        ops = self._bridge.handle_for_agent(value)
        if ops is None:
            return None
        return self._register(ops, id(ops.agent())), ops.role

    def agent(self, number: int, role: str) -> object:
        ops = self._ops.get(number)
        if ops is None:
            # The role is the worker's text: a few characters of it name the reference.
            raise WorkerCrashError(f"worker referred to unknown agent #{number} ({role[:64]!r})")
        return ops.agent()

    def start_clock(self) -> None:
        """The worker is ready: the run's deadline counts from now (ADR 0093)."""
        self._deadline = time.monotonic() + self._timeout

    def encode(self, value: Any, where: str) -> Any:
        return to_wire(value, where, self.reference, self.received)

    def decode(self, value: Any) -> Any:
        return from_wire(value, self.agent)

    def settle(self, wire: Any) -> Any:
        """The worker's result with every Outcome it did not receive from a forwarded call
        naming the call that ran: a subverted worker's word on attribution is not taken
        (ADR 0059 settles it in the worker's own sandbox; this holds if that one is bypassed).
        """
        if type(wire) is list:
            return [self.settle(item) for item in wire]
        if type(wire) is not dict:
            return wire
        envelope = wire.get(OUTCOME_KEY) if len(wire) == 1 else None
        if type(envelope) is not dict:
            return {key: self.settle(item) for key, item in wire.items()}
        if _fingerprint(wire) in self._answered:
            return wire  # a child's answer passed on unchanged keeps the child's name
        fields = dict(envelope)
        fields.update(tool_role=self._bridge.role, method_name=self._bridge.method_name)
        fields["value"] = self.settle(fields.get("value"))
        fields["metadata"] = self.settle(fields.get("metadata"))
        return {OUTCOME_KEY: fields}

    def vouched(self, wire: WireError) -> RecurgentError:
        """A typed error the worker reports; a guardrail violation only if its origin is known.

        A program in process breaks a guardrail in two ways only: a forwarded call the host
        refused (recorded here as it was sent) or a write to an agent, module or host class
        (the sandbox's own ``singleton_method_mutation`` text). A subverted worker reported any
        subtype, message and correction, and a message naming a missing credential ended the
        call as a terminal guardrail with its text in the log (red team R28): that is a
        worker that broke the protocol.

        Raises:
            WorkerCrashError: a violation neither the parent raised nor the sandbox writes.
        """
        error = error_from_wire(wire)
        if not isinstance(error, GuardrailViolationError):
            return error
        for raised in self.guardrails:
            if raised.subtype == wire.subtype and wire.message in (
                raised.message,
                redact(raised.message),
            ):
                return GuardrailViolationError(
                    raised.message,
                    subtype=error.subtype,
                    correction=raised.correction,
                    line=wire.line,
                )
        if (
            wire.subtype == _MUTATION_SUBTYPE
            and wire.correction is None
            and _MUTATION_TEXT.fullmatch(wire.message)
            and not is_terminal(wire.message)
        ):
            return error
        raise WorkerCrashError(
            f"the worker reported a guardrail violation ({wire.subtype!s:.64}) the parent "
            "never raised"
        )

    def _handle(self, number: int | None) -> HandleOps:
        ops = self._ops.get(number or 0)
        if ops is None:
            raise WorkerCrashError(f"worker used unknown handle #{number}")
        return ops

    def _perform(self, request: ForwardRequest) -> tuple[Any, int | None]:
        bridge = self._bridge
        args = self.decode(request.args)
        kwargs = self.decode(request.kwargs)
        # What the sandbox's boundary refuses before any forwarded call (red team R28: a
        # worker's remember() and handle writes reached memory 98 levels deep).
        refuse_nesting(args, f"{request.op}() arguments", 0)
        refuse_nesting(kwargs, f"{request.op}() options", 0)
        name = request.name or ""
        if request.op in ("delegate", "tool"):
            # The sandbox's own bound on a role, a name and the options, for a worker's too.
            label = "role" if request.op == "delegate" else "name"
            bounded_setting(name, f"{request.op} {label}")
            bounded_setting(kwargs, f"{request.op} options")
            opener = bridge.delegate if request.op == "delegate" else bridge.tool
            ops = opener(name, **kwargs)
            return ops.role, self._register(ops, id(ops.agent()))
        if request.op == "remember":
            bridge.remember(kwargs)
            return None, None
        if request.op == "content":
            # Read-only, answered from this agent's store; the read is recorded here.
            reader = bridge.content
            # As the sandbox's content(): a reference that is not text finds nothing.
            ref = args[0] if args else None
            found = reader(ref) if reader is not None and type(ref) is str else None
            return self.encode(found, "content()"), None
        ops = self._handle(request.handle)
        if request.op != "handle_remember":
            _refuse_handle_name(ops.role, name, written=request.op == "handle_set")
        if request.op == "handle_call":
            wire = self.encode(ops.call(name, tuple(args), kwargs), f"{ops.role}.{name}()")
            self._answered.add(_fingerprint(wire))
            return wire, None
        if request.op == "handle_set":
            ops.set(name, args[0] if args else None)
            return None, None
        if request.op == "handle_read":
            found, value = ops.read(name)
            return self.encode([found, value], f"{ops.role}.{name}"), None
        ops.remember(kwargs)
        return None, None

    def answer(self, request: ForwardRequest) -> ForwardReply:
        """Run a forwarded operation for the worker; its failure goes back as data."""
        reply = {"call_id": request.call_id, "forward_id": request.forward_id}
        # Counted as the sandbox counts (a handle's memory read is free in process: counting
        # it failed an honest program's sixth read at a budget of five, red team R28). Reads
        # are bounded by the run's deadline, which every forwarded call now keeps.
        spends = request.op in _SPENDING_OPS
        self.spent += spends
        if spends and self.spent > self.max_calls:
            # The worker's sandbox counts too; this count holds even if the worker is subverted.
            wire = WireError(
                error_type="budget_exceeded",
                message=f"the attempt made more than {self.max_calls} forwarded calls",
            )
            return ForwardReply(**reply, ok=False, error_class="BudgetExceededError", error=wire)
        try:
            with attempt_deadline(lambda: self._deadline - time.monotonic()):
                value, handle = self._perform(request)
        except WorkerCrashError:
            raise
        except _PASSED_ERRORS as error:
            wire = error_to_wire(error).model_copy(update={"message": redact(error.message)})
            if isinstance(error, GuardrailViolationError):
                self.guardrails.append(wire)
            return ForwardReply(**reply, ok=False, error_class=type(error).__name__, error=wire)
        except Unencodable as error:
            wire = WireError(error_type="non_serializable_result", message=str(error))
            return ForwardReply(
                **reply, ok=False, error_class="NonSerializableResultError", error=wire
            )
        except Exception as error:  # noqa: BLE001 - a host failure goes back as a fresh message
            # The same text the in-process sandbox shows: the message, redacted.
            wire = WireError(error_type="execution", message=_safe_text(error))
            return ForwardReply(**reply, ok=False, error_class="RuntimeError", error=wire)
        return ForwardReply(**reply, ok=True, value=value, handle=handle)


class ProcessExecutor:
    """Runs programs in a worker process bound to one environment (or none).

    Args:
        supervisor: The worker of this environment and isolation.
        environment: The dependency environment, or ``None`` for isolation without packages.
    """

    def __init__(
        self, supervisor: WorkerSupervisor, environment: Environment | None = None
    ) -> None:
        self._supervisor = supervisor
        self._environment = environment

    @property
    def capabilities(self) -> Capabilities:
        """Dependencies, process isolation, and C calls stopped by killing the process."""
        return Capabilities(dependencies=True, isolation="process", interrupts_c_calls=True)

    @property
    def supervisor(self) -> WorkerSupervisor:
        """The worker this executor runs on."""
        return self._supervisor

    def _fields(self, stats: RunStats | None) -> dict[str, Any]:
        fields: dict[str, Any] = {
            "execution_receiver": "worker",
            "isolation_backend": self._supervisor.backend,
            "worker_pid": self._supervisor.pid if stats is None else stats.pid,
            "worker_restarts": self._supervisor.restarts if stats is None else stats.restarts,
            "worker_start_ms": None if stats is None else round(stats.start_ms, 1),
            "worker_retired": None if stats is None else stats.retired,
        }
        if self._environment is not None:
            fields.update(self._environment.log_fields())
        return fields

    def run(
        self,
        program: Program,
        inputs: ExecutionInputs,
        limits: SandboxLimits,
        bridge: HostBridge,
    ) -> WorkerExecutionResult:
        """Run ``program`` in the worker; every failure of the program is reported in the result.

        Raises:
            UsageError: under ``isolation="process"``, memory or arguments the host gave the
                call hold a value that cannot cross to the worker (ADR 0094).
        """
        run = _Run(
            bridge, limits.timeout_seconds, limits.max_forwarded_calls, limits.max_output_bytes
        )
        try:
            request = RunRequest(
                call_id=secrets.token_hex(8),
                role=bridge.role,
                method_name=bridge.method_name,
                code=program.code,
                memory=run.encode(inputs.memory, "context"),
                args=run.encode(list(inputs.args), "args"),
                kwargs=run.encode(dict(inputs.kwargs), "kwargs"),
                limits=WireLimits(
                    **{name: getattr(limits, name) for name in WireLimits.model_fields}
                ),
                network=inputs.network,
                cpu_seconds=int(limits.timeout_seconds) + 2
                if self._supervisor.backend != "none"
                else None,
            )
        except Unencodable as problem:
            if self._supervisor.backend != "none":
                # The developer chose isolation="process"; the program has no part in this.
                raise UsageError(uncrossable_message(bridge.role, str(problem))) from None
            return self._failed(
                NonSerializableResultError(f"{problem}; it cannot cross to the worker process")
            )
        stats = RunStats()
        code = program.code
        answer = self._call(
            request,
            run,
            limits.timeout_seconds,
            stats,
            lambda result: retire_reason(code, result, run.received),
        )
        return self._finish(answer, run, inputs.memory, commit=inputs.commit_memory, stats=stats)

    def _call(
        self,
        request: RunRequest | RawExecRequest,
        run: _Run,
        timeout: float,
        stats: RunStats,
        retire: Callable[[RunResult], str | None] | None = None,
    ) -> RunResult | RecurgentError:
        try:
            return self._supervisor.run(
                request,
                run.answer,
                timeout_seconds=timeout,
                on_clock=run.start_clock,
                retire=retire,
                stats=stats,
            )
        except RecurgentError as error:
            return error

    def _failed(
        self, error: RecurgentError, stats: RunStats | None = None, run: _Run | None = None
    ) -> WorkerExecutionResult:
        # A run without the worker's answer (a timeout, a crash, a refused answer) made the
        # calls the parent answered: reported as 0, a persisted program that timed out waiting
        # on a tool was "stalled" (its own fault, repaired) where in process it was not (red
        # team R28). HTTP requests only the worker saw stay uncounted.
        spent = 0 if run is None else min(run.spent, run.max_calls + 1)
        return WorkerExecutionResult(
            error=error, forwarded_calls=spent, log_fields=self._fields(stats)
        )

    def _finish(
        self,
        answer: RunResult | RecurgentError,
        run: _Run,
        memory: dict[str, Any],
        *,
        commit: bool,
        stats: RunStats,
    ) -> WorkerExecutionResult:
        """Decode the worker's answer; its writes go to ``memory`` (``commit``) or come back."""
        if isinstance(answer, RecurgentError):
            return self._failed(answer, stats, run)
        try:
            writes = Writes(
                set={key: run.decode(value) for key, value in answer.memory_set.items()},
                delete=list(answer.memory_deleted),
            )
            for key, written in writes.set.items():
                # Memory nested past the cap could never be sent to a worker again: every
                # later call of an isolation="process" agent was a UsageError (red team R28).
                refuse_nesting(written, f"context[{key!r}]", 0, MEMORY_SUFFIX)
            _patch_in_place(writes, answer.memory_patches, memory, run)
            shape = run.memory_shape
            if writes.patches and (shape is None or shape.shared):
                # A worker's writes reach memory as copies, never placing memory's own
                # container again: only a memory already marked (or not known) is walked.
                _refuse_deep_patch(writes, memory)
            value = run.decode(run.settle(answer.value))
            refuse_nesting(value, "the result", 0)
            violations = [run.vouched(item) for item in answer.violations]
            reported = None if answer.error is None else run.vouched(answer.error)
        except (WorkerCrashError, NonSerializableResultError) as refused:
            return self._failed(refused, stats, run)
        except (ValueError, KeyError, TypeError, InvalidOutcomeError) as problem:
            # An envelope an honest worker never sends (an Outcome that fails validation, an
            # agent reference without a number): the answer of a subverted worker, which must
            # not escape the call as a raw exception (red-team F14).
            name = type(problem).__name__
            return self._failed(
                WorkerCrashError(f"the worker sent a malformed answer ({name})"), stats, run
            )
        if commit:
            writes.apply(memory)
        return WorkerExecutionResult(
            value=value,
            error=reported,
            stdout=_bounded_output(answer.stdout, run.max_output_bytes),
            violations=[v for v in violations if isinstance(v, GuardrailViolationError)],
            forwarded_calls=_forwarded_calls(answer.forwarded_calls, run.spent, run),
            writes=writes,
            log_fields=self._fields(stats),
        )

    def run_raw(self, code: str, *, timeout_seconds: float = 10.0) -> WorkerExecutionResult:
        """Test hook: run raw Python in the worker, as a program that escaped the policy would.

        The parent retires the worker after it exactly as after a program with this source.
        """
        bridge_free = _Run(_NO_BRIDGE, timeout_seconds, 0)
        request = RawExecRequest(call_id=secrets.token_hex(8), code=code)
        stats = RunStats()
        answer = self._call(
            request,
            bridge_free,
            timeout_seconds,
            stats,
            lambda result: retire_reason(code, result),
        )
        return self._finish(answer, bridge_free, {}, commit=True, stats=stats)


def uncrossable_message(role: str, problem: str) -> str:
    """The ``UsageError`` text for host data an ``isolation="process"`` agent cannot send."""
    return (
        f"isolation='process' runs every program of {role!r} in a worker process, where its "
        f"memory and arguments cross as data, and {problem}. Keep data there (str, numbers, "
        "lists, dicts, tuples, sets, bytes, dates and times, Decimals, Fractions, Outcomes, "
        "agents), or build the agent with isolation='in_process' to hand it host objects"
    )


def _patch_in_place(
    writes: Writes, patches: dict[str, list[MemoryPatch]], memory: dict[str, Any], run: _Run
) -> None:
    """Turn whole-value writes into in-place patches of the host's containers where they fit.

    A key is patched only when every patch of it leads, through dicts and lists of ``memory``
    (the memory the run was given, whose containers are the host's), to a container of the kind
    the patch changes; otherwise it keeps its whole value, as before. The tool registry always
    takes its whole value, so the lifecycle's registry check sees what the program left there.
    """
    for key, entries in patches.items():
        if key not in writes.set or key == TOOLS_KEY:
            continue
        built = [_host_patch(memory, key, entry, run) for entry in entries]
        if built and all(patch is not None for patch in built):
            writes.patches.extend(patch for patch in built if patch is not None)
            del writes.set[key]


def _host_patch(memory: dict[str, Any], key: str, entry: MemoryPatch, run: _Run) -> Patch | None:
    """The journal ``Patch`` of ``entry`` on the host's container, or ``None`` if it does not fit."""
    if entry.path[0] != key:
        return None
    node: Any = memory
    for step in entry.path:
        keyed = type(node) is dict and type(step) is str and step in node
        indexed = type(node) in (list, tuple) and type(step) is int and 0 <= step < len(node)
        if not (keyed or indexed):
            return None
        node = node[step]
    wanted = dict if entry.kind == "dict" else list
    if type(node) is not wanted:
        # A tuple the program saw as a list, or a value the host replaced meanwhile.
        return None
    if entry.kind == "dict" and entry.items:
        # A dict patch's items are an OrderedDict's new order, and only a plain dict is
        # patched here: applied, they called dict.move_to_end at commit, an AttributeError
        # with memory half-written (red team R28). The key keeps its whole value instead.
        return None
    written = {name: run.decode(value) for name, value in entry.set}
    items = list(run.decode(entry.items))
    # The patched container sits len(path) - 1 levels below memory's top: what it receives
    # is counted from there, as the in-process journal counts it (ADR 0152).
    where = f"context{''.join(f'[{step!r}]' for step in entry.path)}"
    refuse_nesting(written, where, len(entry.path) - 1, MEMORY_SUFFIX)
    refuse_nesting(items, where, len(entry.path) - 1, MEMORY_SUFFIX)
    return Patch(
        node,
        tuple(entry.path),
        entry.kind,
        set=written,
        delete=list(entry.delete),
        items=items,
    )


def _refuse_deep_patch(writes: Writes, memory: dict[str, Any]) -> None:
    """Refuse a patch of the host's container whose new items would sit past the levels a
    worker's encoder carries at the deepest place host memory holds the container once the
    commit is applied: the worker's copy of memory is a tree, so only here is a container two
    keys share one object (red team R30, the journal's rule: ``_levels.deep_patch``).

    Raises:
        NonSerializableResultError: the memory refusal's text.
    """
    found = deep_patch(memory, writes.set, writes.delete, writes.patches, most=MAX_DEPTH - 1)
    if found is not None:
        raise NonSerializableResultError(
            f"{deep_place(*found)} is nested more than {MAX_DEPTH} levels deep; {MEMORY_SUFFIX}"
        )


def refuse_nesting(value: Any, where: str, depth: int, suffix: str = PLAIN_SUFFIX) -> None:
    """Refuse a value from a worker that holds a container (or any value other than a JSON
    scalar) ``MAX_DEPTH`` levels or more below memory's top, ``value`` sitting ``depth`` levels
    down: what ``to_wire`` could not send to a worker, so what an honest worker never sends.

    The codec decodes whatever nesting the JSON parser accepts (200 levels, about 98 tuples):
    stored in memory, such a value made every later run of an ``isolation="process"`` agent a
    ``UsageError`` (it cannot be sent again), and it passed the 64-level cap the sandbox keeps
    for a program (red team R28). Walked level by level, a list of scalars at C speed.

    Raises:
        NonSerializableResultError: the in-process refusal's text.
    """
    level, frontier = depth, [value]
    while frontier:
        below: list[Any] = []
        for node in frontier:
            kind = type(node)
            if kind in _SCALARS:
                continue
            if level >= MAX_DEPTH:
                raise NonSerializableResultError(
                    f"{where} is nested more than {MAX_DEPTH} levels deep; {suffix}"
                )
            below.extend(_parts(node))
        level += 1
        frontier = below


def _parts(node: Any) -> list[Any]:
    """The values one level below a decoded value that may hold more than scalars (a level as
    memory counts one, ``_levels.parts``: a date, a Decimal, bytes or an agent has none)."""
    below = levels_below(node)
    if below is None:
        return []
    return [part for part in below if type(part) not in _SCALARS]


def _refuse_handle_name(role: str, name: str, *, written: bool) -> None:
    """A handle's read, call or write of a name the sandbox's attribute policy refuses before
    it reaches the agent: a private (underscore) name, and for a read or call one of
    RestrictedPython's inspection names (``h.gi_frame = 1`` is a memory write in process).
    From a worker, ``handle_call('_x')`` asked the child's model to write a method the sandbox
    never lets a program call (red team R28).

    Raises:
        UsageError: goes back to the worker as the call's error.
    """
    if name.startswith("_") or (not written and name in INSPECTION_NAMES):
        raise UsageError(f"{role}.{name}: {name!r} is not accessible in the sandbox")


def _bounded_output(stdout: str, limit: int) -> str:
    """The worker's printed text, cut as the sandbox's collector cuts it.

    The collector keeps ``limit`` bytes and then its marker, so an honest worker's text is
    never longer than both; a longer one (a subverted worker's 64 MiB) is cut to the same
    form (red team R28).
    """
    marker = truncation_marker(limit)
    most = limit + len(marker)
    if len(stdout) * 4 <= most:
        return stdout  # fits even at four bytes a character: nothing to encode
    encoded = stdout.encode("utf-8", "replace")
    if len(encoded) <= most:
        return stdout
    # A character past U+FFFF may have been two lone surrogates in the worker, which the
    # collector counted as one byte each ("?") and the JSON line joined into one character:
    # counted here at those two bytes, or an honest program's 32 768 printed pairs were cut
    # to a quarter (red team R30).
    astral = len(stdout.encode("utf-16-le", "replace")) // 2 - len(stdout)
    if len(encoded) - 2 * astral <= most:
        return stdout
    return encoded[:limit].decode("utf-8", "ignore") + marker


def _forwarded_calls(reported: int, spent: int, run: _Run) -> int:
    """The run's forwarded calls: the worker's count (it alone sees HTTP requests) kept
    between the spending calls the parent answered and the budget's refusal (one past it);
    a subverted worker reported -7 or 10**18 (red team R28)."""
    cap = run.max_calls + 1
    return max(min(spent, cap), min(reported, cap))


def _fingerprint(wire: Any) -> str:
    # Key order aside, equal JSON text is equal data with equal types (1, 1.0 and true differ).
    return json.dumps(wire, sort_keys=True)


def _safe_text(error: BaseException) -> str:
    try:
        text = str(error)
    except Exception:  # noqa: BLE001 - a host exception whose __str__ fails
        text = "<unprintable exception>"
    return redact(text)


def _refuse(*_: Any, **__: Any) -> Any:
    raise UsageError("no host bridge in a raw run")


_NO_BRIDGE = HostBridge(
    role="raw",
    method_name="raw",
    memory={},
    args=(),
    kwargs={},
    delegate=_refuse,
    tool=_refuse,
    remember=_refuse,
    handle_for_agent=lambda _: None,
)
