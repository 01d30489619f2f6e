"""ExecutionSandbox: compiles generated code and runs it in a fresh, guarded namespace per attempt.

This package is the only place that imports RestrictedPython. A sandbox is built for one attempt
and discarded; everything generated code defines dies with it (ADR 0010). What it can reach is
exactly the namespace in :data:`VISIBLE_NAMES`, the vetted builtins and the allowed imports.
Lower layers return values: :meth:`ExecutionSandbox.run` never raises for a failure of the
generated code, it reports it in :class:`ExecutionResult` (ADR 0011, 0012).
"""

from __future__ import annotations

import ast
import functools
import traceback
import types
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from recurgent._redact import redact
from recurgent._sandbox._builtins import make_builtins
from recurgent._sandbox._guards import (
    GENERATED_FILENAME,
    MUTABLE_TYPES,
    NOT_HANDLED,
    OPEN_TYPES,
    AttributePolicy,
    OutputCollector,
    SandboxType,
    is_sandbox_made,
    size_hooks,
)
from recurgent._sandbox._handles import AgentHandle, HandleOps, HandleWriter
from recurgent._sandbox._limits import (
    Clock,
    DeadlineExceeded,
    SandboxLimits,
    SizeLimitExceeded,
    Ticker,
    TickingIterator,
    monotonic_clock,
)
from recurgent._sandbox._modules import ALLOWED_MODULES, ModuleFacade, _Spec, make_importer
from recurgent._sandbox._network import make_network_modules
from recurgent._sandbox._policy import MAIN_FUNCTION, SandboxPolicy, wrap_in_main
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
]

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
_MAX_DEPTH = 64


@dataclass(frozen=True, slots=True)
class CompiledProgram:
    """Generated code after the sandbox policy, ready to run in any number of attempts."""

    source: str
    code: types.CodeType
    tree: ast.Module


@functools.lru_cache(maxsize=256)
def compile_program(source: str) -> CompiledProgram:
    """Compile generated code under the sandbox policy (cached by source text).

    Raises:
        InvalidCodeError: a syntax error, or a construct the policy refuses (with RestrictedPython's
            ``Line N: ...`` messages, which models repair well).
    """
    try:
        tree = ast.parse(source, GENERATED_FILENAME, "exec")
    except SyntaxError as error:
        raise InvalidCodeError(
            f"Generated code has invalid Python syntax: line {error.lineno}: {error.msg}"
        ) from None
    original = ast.parse(source, GENERATED_FILENAME, "exec")
    tree.body = [
        node
        for node in tree.body
        if not (isinstance(node, ast.ImportFrom) and node.module == "__future__")
    ]
    errors: list[str] = []
    transformed = SandboxPolicy(errors, [], {}).visit(tree)
    if errors:
        raise InvalidCodeError("Generated code breaks the sandbox policy: " + "; ".join(errors))
    wrapped = wrap_in_main(transformed)
    try:
        code = compile(wrapped, GENERATED_FILENAME, "exec")
    except SyntaxError as error:
        raise InvalidCodeError(
            f"Generated code has invalid Python syntax: line {error.lineno}: {error.msg}"
        ) from None
    return CompiledProgram(source=source, code=code, tree=original)


@dataclass(frozen=True, slots=True)
class HostBridge:
    """What the host lends one attempt: its memory, arguments and forwarded operations.

    Every callable here is a host-side closure; the sandbox never hands one to generated code
    directly, it wraps each call with budget, marshalling and error redaction.

    Attributes:
        role: Role of the agent whose code runs.
        method_name: Method being executed.
        memory: The agent's live memory dict (``context`` and ``memory`` in code).
        args: Positional arguments of the call.
        kwargs: Keyword arguments of the call.
        delegate: ``delegate(role, **options)`` returning the child's operations.
        tool: ``tool(name, **options)`` returning the tool's operations.
        remember: Writes entries into the agent's memory.
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
    """

    value: Any = None
    error: RecurgentError | None = None
    stdout: str = ""
    violations: list[GuardrailViolationError] = field(default_factory=list)
    forwarded_calls: int = 0


def _unplain_reason(value: Any) -> str | None:
    if isinstance(value, AgentHandle):
        return "an agent handle"
    if isinstance(value, ModuleFacade):
        return "a module"
    if isinstance(value, type):
        return f"the class {value.__name__}"
    if isinstance(value, TickingIterator | types.GeneratorType):
        return "an iterator"
    if is_sandbox_made(value):
        kind = "a function" if callable(value) else f"an instance of {type(value).__name__}"
        return kind
    if isinstance(
        value,
        types.FunctionType
        | types.BuiltinFunctionType
        | types.MethodType
        | functools.partial
        | types.BuiltinMethodType,
    ):
        return "a function"
    return None


def find_unplain(value: Any, path: str, *, exempt: frozenset[int] = frozenset()) -> str | None:
    """Describe the first function, class, handle or iterator inside ``value``, or ``None``.

    ``exempt`` holds ids of objects that were already there before the attempt (a host value
    the user stored is not the attempt's doing).
    """
    seen: set[int] = set()

    def walk(item: Any, where: str, depth: int) -> str | None:
        if id(item) in exempt or id(item) in seen or depth > _MAX_DEPTH:
            return None
        kind = type(item)
        if kind in (str, int, float, bool, bytes) or item is None:
            return None
        reason = _unplain_reason(item)
        if reason is not None:
            return f"{where} holds {reason}"
        seen.add(id(item))
        if isinstance(item, Mapping):
            for key, child in item.items():
                found = walk(child, f"{where}[{key!r}]", depth + 1)
                if found:
                    return found
        elif isinstance(item, list | tuple | set | frozenset):
            for index, child in enumerate(item):
                found = walk(child, f"{where}[{index}]", depth + 1)
                if found:
                    return found
        elif isinstance(item, Outcome):
            return walk(item.value, f"{where}.value", depth + 1)
        return None

    return walk(value, path, 0)


def _preexisting_unplain(value: Any) -> frozenset[int]:
    """Ids of functions, classes and the like the host had stored before the attempt ran."""
    ids: set[int] = set()
    seen: set[int] = set()

    def walk(item: Any, depth: int) -> None:
        if id(item) in seen or depth > _MAX_DEPTH:
            return
        seen.add(id(item))
        if _unplain_reason(item) is not None:
            ids.add(id(item))
        elif isinstance(item, Mapping):
            for child in item.values():
                walk(child, depth + 1)
        elif isinstance(item, list | tuple | set | frozenset):
            for child in item:
                walk(child, depth + 1)

    walk(value, 0)
    return frozenset(ids)


def _error_line(error: BaseException) -> int | None:
    line = None
    for frame, lineno in traceback.walk_tb(error.__traceback__):
        if frame.f_code.co_filename == GENERATED_FILENAME:
            line = lineno
    return line


def _safe_text(error: BaseException) -> str:
    try:
        text = str(error)
    except BaseException:  # noqa: BLE001 - a generated __str__ may itself fail or hit the deadline
        text = "<unprintable exception>"
    return redact(text)


class ExecutionSandbox:
    """One attempt's execution environment. Build one per attempt; never reuse it.

    Args:
        bridge: The host's memory, arguments and forwarded operations.
        limits: Deadline and size caps.
        network: The agent's network policy (``"allow"``, ``"deny"`` or host names).
        clock: Monotonic clock for the deadline; tests inject a fake one.
    """

    def __init__(
        self,
        bridge: HostBridge,
        *,
        limits: SandboxLimits,
        network: Any = "allow",
        clock: Clock = monotonic_clock,
    ) -> None:
        self._bridge = bridge
        self._limits = limits
        self._network = network
        self._clock = clock
        self._violations: list[GuardrailViolationError] = []
        self._forwarded = 0
        self._output = OutputCollector(limits.max_output_bytes)
        self._namespace: dict[str, Any] = {}
        self._ticker = Ticker(self._namespace, timeout_seconds=limits.timeout_seconds, clock=clock)
        self._build_namespace()

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
        importer, is_facade = make_importer(
            tick=self._cheap_tick,
            extra_modules={
                "modules": {name: (module, _Spec()) for name, module in network.items()},
                "time_overrides": {"sleep": self._sleep},
            },
        )
        policy = AttributePolicy(
            handle_attribute=self._handle_attribute,
            handle_writer=self._handle_writer,
            is_facade=is_facade,
            on_violation=self._violation,
        )
        ns["__builtins__"] = make_builtins(policy=policy, importer=importer, tick=self._cheap_tick)
        ns.update(size_hooks())
        cheap_tick = self._cheap_tick
        ns.update(
            _getattr_=policy.getattr,
            _write_=policy.write,
            _getiter_=lambda obj: cheap_tick() and obj,
            _apply_=lambda function, *a, **k: function(*a, **k),
            _print_=lambda _getattr: self._output,
            _tick_=self._ticker.tick,
            _type_=type,
            _OPEN_=OPEN_TYPES,
            _MUTABLE_=MUTABLE_TYPES,
            __metaclass__=SandboxType,
            __name__="sandbox",
        )
        bridge = self._bridge
        sandbox_args = [self._to_sandbox(arg) for arg in bridge.args]
        sandbox_kwargs = {key: self._to_sandbox(value) for key, value in bridge.kwargs.items()}
        ns.update(
            context=bridge.memory,
            memory=bridge.memory,
            args=sandbox_args,
            kwargs=sandbox_kwargs,
            tool=self._forward_tool,
            delegate=self._forward_delegate,
            remember=self._forward_remember,
            Outcome=Outcome,
        )

    def _sleep(self, seconds: float) -> None:
        import time

        remaining = self._ticker.remaining()
        if seconds >= remaining:
            time.sleep(max(0.0, remaining))
            self._ticker.expire()
            raise DeadlineExceeded("time.sleep() ran past the attempt's deadline")
        time.sleep(max(0.0, seconds))

    # ----------------------------------------------------------------- boundary

    def _spend(self, what: str) -> None:
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
        ops = self._bridge.handle_for_agent(value)
        if ops is not None:
            return AgentHandle(ops)
        if isinstance(value, Outcome) and value.is_ok:
            inner = self._bridge.handle_for_agent(value.value)
            if inner is not None:
                return value.model_copy(update={"value": AgentHandle(inner)})
        return value

    def _to_host(self, value: Any, where: str) -> Any:
        """Marshal a value leaving the sandbox: handles become agents; code objects are refused."""
        if isinstance(value, AgentHandle):
            return value._handle_ops.agent()
        if isinstance(value, Outcome) and isinstance(value.value, AgentHandle):
            return value.model_copy(update={"value": value.value._handle_ops.agent()})
        if isinstance(value, list | tuple) and any(isinstance(v, AgentHandle) for v in value):
            converted = [self._to_host(v, f"{where}[{i}]") for i, v in enumerate(value)]
            value = type(value)(converted) if isinstance(value, tuple) else converted
        problem = find_unplain(value, where)
        if problem is not None:
            raise NonSerializableResultError(
                f"{problem}; only plain data (dicts, lists, strings, numbers, booleans, None, "
                "Outcomes) can leave the sandbox"
            )
        return value

    def _host_call(self, what: str, operation: Callable[[], Any]) -> Any:
        """Run a host operation for generated code; host exceptions come back fresh and redacted."""
        self._spend(what)
        failure: BaseException | None = None
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
        # Raised outside the except blocks so the host exception is not chained as __context__.
        raise failure

    def _forward_delegate(self, role: Any, **options: Any) -> AgentHandle:
        plain = self._to_host(options, "delegate options")
        return AgentHandle(
            self._host_call("delegate", lambda: self._bridge.delegate(role, **plain))
        )

    def _forward_tool(self, name: Any, **options: Any) -> AgentHandle:
        plain = self._to_host(options, "tool options")
        return AgentHandle(self._host_call("tool", lambda: self._bridge.tool(name, **plain)))

    def _forward_remember(self, **entries: Any) -> None:
        plain = self._to_host(entries, "remember()")
        self._host_call("remember", lambda: self._bridge.remember(plain))

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
            return self._to_sandbox(value)

        def dynamic_call(*args: Any, **kwargs: Any) -> Any:
            plain_args = self._to_host(list(args), f"{ops.role}.{name}() arguments")
            plain_kwargs = self._to_host(kwargs, f"{ops.role}.{name}() keyword arguments")
            outcome = self._host_call(
                f"{ops.role}.{name}", lambda: ops.call(name, tuple(plain_args), plain_kwargs)
            )
            return self._to_sandbox(outcome)

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
        exempt = _preexisting_unplain(bridge.memory)
        result = ExecutionResult()
        try:
            exec(program.code, self._namespace)
            main = self._namespace.pop(MAIN_FUNCTION)
            with outcome_context(bridge.role, bridge.method_name):
                value = main()
            result.value = self._to_host(value, "the result")
            problem = find_unplain(bridge.memory, "context", exempt=exempt)
            if problem is not None:
                result.error = NonSerializableResultError(
                    f"{problem}; memory may hold only plain data, so a function, class or "
                    "handle defined in one attempt cannot leak into later calls"
                )
        except KeyboardInterrupt:
            raise
        except DeadlineExceeded as stop:
            result.error = ExecutionTimeoutError(
                f"Execution timeout in {bridge.role}.{bridge.method_name}: {stop}"
            )
        except SizeLimitExceeded as breach:
            result.error = ResourceLimitError(
                f"Resource limit in {bridge.role}.{bridge.method_name}: {_safe_text(breach)}",
                root_class="SizeLimitExceeded",
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
            result.error = ExecutionError(
                f"Execution error in {bridge.role}.{bridge.method_name}: "
                f"{type(error).__name__}: {message}",
                root_class=type(error).__name__,
                root_message=message,
                line=_error_line(error),
            )
        finally:
            # Anything the attempt leaked (a generator, an object with a __del__-free method)
            # stops at its first tick from now on.
            self._ticker.expire()
        result.stdout = self._output.text()
        result.violations = list(self._violations)
        result.forwarded_calls = self._forwarded
        return result
