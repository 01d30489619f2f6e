"""ExecutionSandbox: compiles generated code and runs it in a fresh, guarded namespace per attempt.

This package is the only place that imports RestrictedPython. A sandbox is built for one attempt
and discarded; everything generated code defines dies with it (ADR 0010). What it can reach is
exactly the namespace in :data:`VISIBLE_NAMES`, the vetted builtins and the allowed imports.
Lower layers return values: :meth:`ExecutionSandbox.run` never raises for a failure of the
generated code, it reports it in :class:`ExecutionResult` (ADR 0011, 0012).
"""

from __future__ import annotations

import contextvars
import traceback
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from recurgent._journal import Journal, MemoryView, Writes
from recurgent._redact import redact
from recurgent._sandbox._boundary import (
    Attribution,
    exception_text,
    find_unplain,
    inbound,
    rebuild,
)
from recurgent._sandbox._builtins import make_builtins
from recurgent._sandbox._compile import CompiledProgram, compile_program
from recurgent._sandbox._guards import (
    GENERATED_FILENAME,
    MUTABLE_TYPES,
    NOT_HANDLED,
    OPEN_TYPES,
    AttributePolicy,
    SandboxType,
)
from recurgent._sandbox._handles import AgentHandle, HandleOps, HandleWriter
from recurgent._sandbox._idioms import sandbox_decimal_context
from recurgent._sandbox._limits import (
    Clock,
    DeadlineExceeded,
    MemoryLimitExceeded,
    OutputCollector,
    SandboxLimits,
    SizeLimitExceeded,
    Ticker,
    Watchdog,
    attempt_deadline,
    monotonic_clock,
)
from recurgent._sandbox._modules import ALLOWED_MODULES, ModuleFacade, _Spec, make_importer
from recurgent._sandbox._network import make_network_modules
from recurgent._sandbox._numbers import attempt_decimal_context
from recurgent._sandbox._policy import MAIN_FUNCTION
from recurgent._sandbox._reflection import seal
from recurgent._sandbox._sizes import size_hooks
from recurgent.errors import (
    BudgetExceededError,
    ExecutionError,
    ExecutionTimeoutError,
    GuardrailViolationError,
    NonSerializableResultError,
    RecurgentError,
    ResourceLimitError,
    UsageError,
)
from recurgent.outcome import Outcome, outcome_context

__all__ = [
    "ALLOWED_MODULES",
    "VISIBLE_NAMES",
    "AgentHandle",
    "CompiledProgram",
    "ExecutionResult",
    "ExecutionSandbox",
    "HandleOps",
    "HostBridge",
    "SandboxLimits",
    "compile_program",
    "find_unplain",
    "generated_code_running",
    "rebuild",
]

_NUMERIC_TYPES = frozenset({int, float})
_MEMORY_SUFFIX = (
    "memory may hold only plain data, so a function, class or handle defined in one attempt "
    "cannot leak into later calls"
)

#: The names generated code sees besides builtins and imports (pinned by specs/sandbox).
VISIBLE_NAMES = (
    "context",
    "memory",
    "args",
    "kwargs",
    "result",
    "tool",
    "delegate",
    "remember",
    "Outcome",
)


_RUNNING: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "recurgent_generated_code_running", default=False
)


def generated_code_running() -> bool:
    """True while generated code runs, outside the forwarded calls it makes.

    Host objects that act on their own when called (an agent's dynamic methods) check this:
    generated code must reach them through ``tool``/``delegate`` handles, which are budgeted
    and marshalled, never by handing them to library code that calls them directly (for
    example ``json.dump(data, agent)`` calling ``agent.write``).
    """
    return _RUNNING.get()


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


def _error_line(error: BaseException) -> int | None:
    line = None
    for frame, lineno in traceback.walk_tb(error.__traceback__):
        if frame.f_code.co_filename == GENERATED_FILENAME:
            line = lineno
    return line


def _safe_text(error: BaseException) -> str:
    return redact(exception_text(error))


class ExecutionSandbox:
    """One attempt's execution environment. Build one per attempt; never reuse it.

    Args:
        bridge: The host's memory, arguments and forwarded operations.
        limits: Deadline and size caps.
        network: The agent's network policy (``"allow"``, ``"deny"`` or host names).
        clock: Monotonic clock for the deadline; tests inject a fake one.
        commit_memory: Commit the attempt's memory writes when it succeeds. The lifecycle
            passes ``False`` and commits (or drops) ``ExecutionResult.writes`` itself.
    """

    def __init__(
        self,
        bridge: HostBridge,
        *,
        limits: SandboxLimits,
        network: Any = "allow",
        clock: Clock = monotonic_clock,
        commit_memory: bool = True,
    ) -> None:
        self._bridge = bridge
        # Agents in memory are shared (reached through handles); other host objects the
        # journal can neither copy nor share are withheld (ADR 0057).
        self._journal = Journal(
            bridge.memory,
            is_agent=lambda value: bridge.handle_for_agent(value) is not None,
            guard=self._after_the_attempt,
        )
        self._passed = {id(arg) for arg in (*bridge.args, *bridge.kwargs.values())}
        self._commit_memory = commit_memory
        self._limits = limits
        self._network = network
        self._clock = clock
        self._violations: list[GuardrailViolationError] = []
        self._forwarded = 0
        # Outcomes forwarded calls returned, by the id of the copy the program got, with the
        # child's own (the dict keeps each alive, so ids stay unique).
        self._answers: dict[int, tuple[Outcome, Outcome]] = {}
        self._output = OutputCollector(limits.max_output_bytes)
        self._namespace: dict[str, Any] = {}
        self._ticker = Ticker(
            self._namespace,
            timeout_seconds=limits.timeout_seconds,
            clock=clock,
            max_memory_bytes=limits.max_memory_bytes,
        )
        self._build_namespace()

    @property
    def visible_names(self) -> list[str]:
        """The names generated code can read besides builtins and imports, sorted."""
        return sorted(name for name in self._namespace if not name.startswith("_"))

    # ----------------------------------------------------------------- namespace

    def _cheap_tick(self) -> bool:
        return next(self._namespace["_ticker_"], False) or self._ticker.tick()

    def _build_namespace(self) -> None:
        ns = self._namespace
        network = make_network_modules(
            policy=self._network,
            limits=self._limits,
            remaining=self._ticker.remaining,
            spend=self._spend,
        )
        policy = AttributePolicy(
            handle_attribute=self._handle_attribute,
            handle_writer=self._handle_writer,
            on_violation=self._violation,
            tick=self._cheap_tick,
        )
        importer = make_importer(
            tick=self._cheap_tick,
            extra_modules={
                "modules": {name: (module, _Spec()) for name, module in network.items()},
                "time_overrides": {"sleep": self._sleep},
                "getattr": policy.getattr,
            },
        )
        ns["__builtins__"] = make_builtins(policy=policy, importer=importer, tick=self._cheap_tick)
        ns.update(size_hooks())
        cheap_tick = self._cheap_tick
        # The inline fast path reads attributes natively for the types in _OPEN_. Classes the
        # code defines join them, and so do module facades: the guard would return the same
        # getattr() for them (a facade's own __getattr__ applies its module's spec).
        # XML elements stay on the guarded path: adding a child is checked for cycles (F19).
        open_types = (set(OPEN_TYPES) - {ElementTree.Element}) | {ModuleFacade}

        def make_class(name: str, bases: tuple[type, ...], body: dict[str, Any], **kw: Any) -> type:
            cls = SandboxType(name, bases, body, **kw)
            open_types.add(cls)
            return cls

        ns.update(
            _getattr_=policy.getattr,
            _write_=policy.write,
            _getiter_=lambda obj: cheap_tick() and obj,
            _apply_=lambda function, *a, **k: function(*a, **k),
            _print_=lambda _getattr: self._output,
            _tick_=self._ticker.tick,
            _next_=next,
            _type_=type,
            _OPEN_=open_types,
            _MUTABLE_=MUTABLE_TYPES,
            # Tests of the policy's other fast paths (_fastpaths): generated code cannot rebind
            # these, unlike int, float or type.
            _INT_=int,
            _FLOAT_=float,
            _NUMERIC_=_NUMERIC_TYPES,
            _SANDBOX_TYPE_=SandboxType,
            __metaclass__=make_class,
            __name__="sandbox",
        )
        bridge = self._bridge
        view = self._journal.view
        ns.update(
            context=view,
            memory=view,
            args=[self._to_sandbox(arg) for arg in bridge.args],
            kwargs={key: self._to_sandbox(value) for key, value in bridge.kwargs.items()},
            result=None,
            Outcome=Outcome,
            **self._forwarders(),
        )

    def _forwarders(self) -> dict[str, Callable[..., Any]]:
        """``delegate``, ``tool`` and ``remember``: plain closures, never bound methods."""
        host_call, to_host, bridge = self._host_call, self._to_host, self._bridge

        def delegate(role: Any, **options: Any) -> AgentHandle:
            plain_role = to_host(role, "delegate role")
            plain = to_host(options, "delegate options")
            return AgentHandle(host_call("delegate", lambda: bridge.delegate(plain_role, **plain)))

        def tool(name: Any, **options: Any) -> AgentHandle:
            plain_name = to_host(name, "tool name")
            plain = to_host(options, "tool options")
            return AgentHandle(host_call("tool", lambda: bridge.tool(plain_name, **plain)))

        view = self._journal.view

        def remember(**entries: Any) -> None:
            plain = to_host(entries, "remember()")
            host_call("remember", lambda: bridge.remember(plain))
            view.update(plain)

        # Sealed: the closures hold the sandbox and the bridge (ADR 0021).
        return {
            name: seal(forwarder)
            for name, forwarder in (("delegate", delegate), ("tool", tool), ("remember", remember))
        }

    def _sleep(self, seconds: float) -> None:
        import time

        remaining = self._ticker.remaining()
        if seconds >= remaining:
            time.sleep(max(0.0, remaining))
            self._ticker.expire()
            raise DeadlineExceeded("time.sleep() ran past the attempt's deadline")
        time.sleep(max(0.0, seconds))

    # ----------------------------------------------------------------- boundary

    def _after_the_attempt(self) -> None:
        # A host function called by a generator the attempt leaked, after it ended (F12).
        if self._ticker.expired:
            self._ticker.tick()

    def _spend(self, what: str) -> None:
        if self._ticker.expired:
            # A generator the attempt leaked, finalized later by the host's garbage collector,
            # must not reach agents or memory after the attempt ended.
            self._ticker.tick()
        self._forwarded += 1
        if self._forwarded > self._limits.max_forwarded_calls:
            raise SizeLimitExceeded(
                f"{what}: the attempt made more than {self._limits.max_forwarded_calls} "
                "forwarded calls (tool, delegate, remember, agent calls, HTTP requests)"
            )

    def _violation(self, message: str) -> BaseException:
        violation = GuardrailViolationError(message, subtype="singleton_method_mutation")
        self._violations.append(violation)
        return GuardrailViolationError(message, subtype="singleton_method_mutation")

    def _to_sandbox(self, value: Any) -> Any:
        """An argument of the call: agents (also inside an ok Outcome) become handles."""
        ops = self._bridge.handle_for_agent(value)
        if ops is not None:
            return AgentHandle(ops)
        if isinstance(value, Outcome) and value.is_ok:
            inner = self._bridge.handle_for_agent(value.value)
            if inner is not None:
                return value.model_copy(update={"value": AgentHandle(inner)})
        return value

    def _to_host(self, value: Any, where: str) -> Any:
        """Rebuild a value leaving the sandbox: handles become agents; code objects are refused."""
        return rebuild(value, where, handles=lambda ops: ops.agent(), keep=self._is_agent)

    def _is_agent(self, value: Any) -> bool:
        # Host objects that may pass unchanged: agents, and the caller's own arguments (an
        # object of the caller's class stored in memory is the caller's doing, not the code's).
        return id(value) in self._passed or self._bridge.handle_for_agent(value) is not None

    def _memory_writes(self) -> Writes:
        """The attempt's memory writes, each new value rebuilt (handles refused)."""

        def plain(value: Any, where: str, *, resolve: Callable[[Any], Any | None]) -> Any:
            return rebuild(
                value, where, resolve=resolve, keep=self._is_agent, suffix=_MEMORY_SUFFIX
            )

        return self._journal.prepare(plain)

    def _host_call(self, what: str, operation: Callable[[], Any]) -> Any:
        """Run a host operation for generated code; host exceptions come back fresh and redacted."""
        self._spend(what)
        failure: BaseException | None = None
        forwarded = _RUNNING.set(False)
        try:
            return operation()
        except (BudgetExceededError, UsageError) as error:
            failure = type(error)(redact(error.message))
        except GuardrailViolationError as error:
            fresh = GuardrailViolationError(
                redact(error.message), subtype=error.subtype, correction=error.correction
            )
            self._violations.append(fresh)
            failure = GuardrailViolationError(
                redact(error.message), subtype=error.subtype, correction=error.correction
            )
        except NonSerializableResultError as error:
            failure = TypeError(redact(error.message))
        except Exception as error:  # noqa: BLE001 - any host failure is re-raised as a fresh error
            failure = RuntimeError(f"{what} failed: {_safe_text(error)}")
        finally:
            _RUNNING.reset(forwarded)
        # Raised outside the except blocks so the host exception is not chained as __context__.
        raise failure

    def _handle_attribute(self, obj: Any, name: str) -> Any:
        if isinstance(obj, AgentHandle):
            ops = obj._handle_ops
        else:
            found_ops = self._bridge.handle_for_agent(obj)
            if found_ops is None:
                return NOT_HANDLED
            ops = found_ops
        if name == "remember":

            def remember(**entries: Any) -> AgentHandle:
                plain = self._to_host(entries, f"{ops.role}.remember()")
                self._host_call(f"{ops.role}.remember", lambda: ops.remember(plain))
                return AgentHandle(ops)

            return remember
        if name == "role":
            return ops.role
        found, value = ops.read(name)
        if found:
            return inbound(value, self._bridge.handle_for_agent)

        def dynamic_call(*args: Any, **kwargs: Any) -> Any:
            plain_args = self._to_host(list(args), f"{ops.role}.{name}() arguments")
            plain_kwargs = self._to_host(kwargs, f"{ops.role}.{name}() keyword arguments")
            outcome = self._host_call(
                f"{ops.role}.{name}", lambda: ops.call(name, tuple(plain_args), plain_kwargs)
            )
            answer = inbound(outcome, self._bridge.handle_for_agent)
            if isinstance(answer, Outcome) and isinstance(outcome, Outcome):
                # A child's answer keeps its own role if the program passes it on unchanged
                # (ADR 0059, red-team F10).
                self._answers[id(answer)] = (answer, outcome)
            return answer

        return dynamic_call

    def _handle_writer(self, obj: Any) -> HandleWriter | None:
        if isinstance(obj, AgentHandle):
            ops: HandleOps | None = obj._handle_ops
        else:
            ops = self._bridge.handle_for_agent(obj)
        if ops is None:
            return None
        target = ops

        def set_value(name: str, value: Any) -> None:
            if name.startswith("_"):
                raise AttributeError(f"cannot set {name!r}: names starting with '_' are private")
            plain = self._to_host(value, f"{target.role}.{name}")
            self._host_call(f"{target.role}.{name} =", lambda: target.set(name, plain))

        return HandleWriter(set_value)

    # ----------------------------------------------------------------- running

    def run(self, program: CompiledProgram) -> ExecutionResult:
        """Run a compiled program once and report what happened."""
        bridge = self._bridge
        where = f"{bridge.role}.{bridge.method_name}"
        result = ExecutionResult(memory=self._journal.view)
        watchdog = Watchdog(self._ticker)
        self._ticker.start()
        watchdog.start()
        try:
            exec(program.code, self._namespace)
            main = self._namespace.pop(MAIN_FUNCTION)
            running = _RUNNING.set(True)
            active = self._journal.activate()
            try:
                with (
                    attempt_decimal_context(),
                    outcome_context(bridge.role, bridge.method_name),
                    attempt_deadline(self._ticker.remaining),
                    sandbox_decimal_context(),
                ):
                    value = main()
                if self._ticker.expired:
                    # A stop the program's code swallowed (a closing generator ends quietly
                    # on any exception, ADR 0060) still ends the attempt: tick re-raises it.
                    self._ticker.tick()
            finally:
                Journal.deactivate(active)
                _RUNNING.reset(running)
            result.value = rebuild(
                value,
                "the result",
                handles=lambda ops: ops.agent(),
                keep=self._is_agent,
                attribution=Attribution(bridge.role, bridge.method_name, self._answers),
            )
            result.writes = self._memory_writes()
        except KeyboardInterrupt:
            raise
        except DeadlineExceeded as stop:
            result.error = ExecutionTimeoutError(f"Execution timeout in {where}: {stop}")
        except (SizeLimitExceeded, MemoryLimitExceeded) as breach:
            result.error = ResourceLimitError(
                f"Resource limit in {where}: {_safe_text(breach)}",
                root_class=type(breach).__name__,
                root_message=_safe_text(breach),
                line=_error_line(breach),
            )
        except (BudgetExceededError, NonSerializableResultError) as error:
            result.error = error
        except GuardrailViolationError as violation:
            result.error = violation
            if violation.line is None:
                violation.line = _error_line(violation)
        except BaseException as error:  # noqa: BLE001 - generated code may raise anything
            message = _safe_text(error)
            name = str.__str__(type(error).__name__)
            result.error = ExecutionError(
                f"Execution error in {where}: {name}: {message}",
                root_class=name,
                root_message=message,
                line=_error_line(error),
            )
        finally:
            # Anything the attempt leaked (a generator, a method of an object it made) stops
            # at its first tick from now on.
            self._ticker.expire()
            watchdog.stop()
        result.stdout = self._output.text()
        result.violations = list(self._violations)
        result.forwarded_calls = self._forwarded
        if (
            self._commit_memory
            and result.error is None
            and not result.violations
            and result.writes is not None
        ):
            result.writes.apply(bridge.memory)
        return result
