"""ExecutionSandbox: compiles generated code and runs it in a fresh, guarded namespace per attempt.

This package is the only place that imports RestrictedPython. A sandbox is built for one attempt
and discarded; everything generated code defines dies with it (ADR 0010). What it can reach is
exactly the namespace in :data:`VISIBLE_NAMES`, the vetted builtins and the allowed imports.
Lower layers return values: :meth:`ExecutionSandbox.run` never raises for a failure of the
generated code, it reports it in :class:`ExecutionResult` (ADR 0011, 0012).

The sandbox is split by concern (ADR 0067): ``_bridge`` holds what goes in and comes out,
``_forwarding`` the forwarded calls, ``_namespace`` the attempt's globals; this module runs the
program and turns its failure into a typed error.
"""

from __future__ import annotations

import decimal
import traceback
from typing import Any

from recurgent._cancellation import CallCancelled, on_cancel
from recurgent._journal import Journal
from recurgent._sandbox._boundary import SCALAR_TYPES, Attribution, find_unplain, rebuild
from recurgent._sandbox._bridge import ExecutionResult, HostBridge
from recurgent._sandbox._compile import CompiledProgram, compile_program
from recurgent._sandbox._decimal_operands import sandbox_decimal
from recurgent._sandbox._forwarding import RUNNING, generated_code_running, safe_text
from recurgent._sandbox._guards import GENERATED_FILENAME
from recurgent._sandbox._handles import AgentHandle, HandleOps
from recurgent._sandbox._idioms import sandbox_decimal_context
from recurgent._sandbox._limits import (
    Clock,
    DeadlineExceeded,
    MemoryLimitExceeded,
    OutputCollector,
    SandboxLimits,
    SizeLimitExceeded,
    Ticker,
    attempt_deadline,
    monotonic_clock,
)
from recurgent._sandbox._memory import MemoryMeter
from recurgent._sandbox._modules import ALLOWED_MODULES
from recurgent._sandbox._namespace import VISIBLE_NAMES, AttemptNamespace
from recurgent._sandbox._numbers import attempt_decimal_context
from recurgent._sandbox._policy import MAIN_FUNCTION
from recurgent._sandbox._watchdog import Watchdog
from recurgent.errors import (
    BudgetExceededError,
    ExecutionError,
    ExecutionTimeoutError,
    GuardrailViolationError,
    NonSerializableResultError,
    RecurgentError,
    ResourceLimitError,
)
from recurgent.outcome import outcome_context

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


def _error_line(error: BaseException) -> int | None:
    line = None
    for frame, lineno in traceback.walk_tb(error.__traceback__):
        if frame.f_code.co_filename == GENERATED_FILENAME:
            line = lineno
    return line


class ExecutionSandbox(AttemptNamespace):
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
        self._commit_memory = commit_memory
        self._limits = limits
        self._network = network
        self._clock = clock
        self._start_attempt(bridge, {})
        self._build_namespace()

    def _start_attempt(
        self,
        bridge: HostBridge,
        namespace: dict[str, Any],
        memory_baseline: MemoryMeter | None = None,
        passed: set[int] | None = None,
    ) -> None:
        """Everything that belongs to one attempt, made anew: the journal over the bridge's
        memory, the counts, the output, the globals and their deadline ticker (a batch sandbox
        makes them per item on one set-up, ADR 0111; it passes the ids of the item's arguments
        as ``passed``, its bridge being the batch's)."""
        limits = self._limits
        self._bridge = bridge
        # Agents in memory are shared (reached through handles); other host objects the
        # journal can neither copy nor share are withheld (ADR 0057).
        self._journal = Journal(
            bridge.memory,
            is_agent=lambda value: bridge.handle_for_agent(value) is not None,
            guard=self._after_the_attempt,
            # Copying a huge memory value checks the deadline as the program's loops do (H8).
            tick=lambda: self._ticker.tick(),
            checked={decimal.Decimal: sandbox_decimal},  # int operands checked (ADR 0129)
            shape=bridge.memory_shape,
        )
        self._passed = (
            {id(arg) for arg in (*bridge.args, *bridge.kwargs.values())}
            if passed is None
            else passed
        )
        self._violations = []
        self._forwarded = 0
        self._answers = {}
        self._output = OutputCollector(limits.max_output_bytes)
        self._namespace = namespace
        self._ticker = Ticker(
            namespace,
            timeout_seconds=limits.timeout_seconds,
            clock=self._clock,
            max_memory_bytes=limits.max_memory_bytes,
            memory_baseline=memory_baseline,
        )

    @property
    def visible_names(self) -> list[str]:
        """The names generated code can read besides builtins and imports, sorted."""
        return sorted(name for name in self._namespace if not name.startswith("_"))

    def _result_value(self, value: Any) -> Any:
        """The program's value rebuilt as plain data for the host (a scalar is its own)."""
        if type(value) in SCALAR_TYPES:
            return value
        bridge = self._bridge
        return rebuild(
            value,
            "the result",
            handles=lambda ops: ops.agent(),
            keep=self._is_agent,
            attribution=Attribution(bridge.role, bridge.method_name, self._answers),
        )

    def _failure(self, error: BaseException, where: str) -> RecurgentError:
        """The typed failure of an attempt that raised ``error`` (never Ctrl-C or a cancel);
        a batch's items are translated here too (ADR 0111)."""
        if isinstance(error, DeadlineExceeded | MemoryLimitExceeded) and isinstance(
            error.__cause__, type(error)
        ):
            # Library code wrapped the stop ("encoding with 'punycode' codec failed
            # (DeadlineExceeded: )", CPython's codec machinery): the stop itself is reported.
            error = error.__cause__
        if isinstance(error, DeadlineExceeded):
            # A stop delivered to the thread (ADR 0089) carries no text: the ticker's has it.
            text = str(error) or str(self._ticker.stop or "")
            return ExecutionTimeoutError(f"Execution timeout in {where}: {text}")
        if isinstance(error, SizeLimitExceeded | MemoryLimitExceeded):
            text = safe_text(error) or safe_text(self._ticker.stop or error)
            return ResourceLimitError(
                f"Resource limit in {where}: {text}",
                root_class=type(error).__name__,
                root_message=text,
                line=_error_line(error),
            )
        if isinstance(error, BudgetExceededError | NonSerializableResultError):
            return error
        if isinstance(error, GuardrailViolationError):
            if error.line is None:
                error.line = _error_line(error)
            return error
        message = safe_text(error)
        name = str.__str__(type(error).__name__)
        return ExecutionError(
            f"Execution error in {where}: {name}: {message}",
            root_class=name,
            root_message=message,
            line=_error_line(error),
        )

    def run(self, program: CompiledProgram) -> ExecutionResult:
        """Run a compiled program once and report what happened."""
        bridge = self._bridge
        where = f"{bridge.role}.{bridge.method_name}"
        result = ExecutionResult(memory=self._journal.view)
        watchdog = Watchdog(self._ticker)
        self._ticker.start()
        watchdog.start()
        # A cancelled awaited call stops its program at the next tick (ADR 0096).
        cancelling = on_cancel(lambda: self._ticker.expire(CallCancelled(where)))
        try:
            exec(program.code, self._namespace)
            main = self._namespace.pop(MAIN_FUNCTION)
            running = RUNNING.set(True)
            active = self._journal.activate()
            try:
                with (
                    attempt_decimal_context(),
                    outcome_context(bridge.role, bridge.method_name),
                    attempt_deadline(self._ticker.remaining, self._ticker.memory_budget),
                    sandbox_decimal_context(),
                ):
                    # Stoppable in any Python frame at the deadline, library code's too (ADR 0089).
                    value = self._ticker.run(main)
                if self._ticker.expired:
                    # A stop the program's code swallowed (a closing generator ends quietly
                    # on any exception, ADR 0060) still ends the attempt: tick re-raises it.
                    self._ticker.tick()
            finally:
                Journal.deactivate(active)
                RUNNING.reset(running)
            result.value = self._result_value(value)
            result.writes = self._memory_writes()
        except (KeyboardInterrupt, CallCancelled):
            # Ctrl-C, or the task awaiting the call was cancelled: the call ends, nothing
            # committed (ADR 0096).
            raise
        except BaseException as error:  # noqa: BLE001 - generated code may raise anything
            result.error = self._failure(error, where)
        finally:
            # Anything the attempt leaked (a generator, a method of an object it made) stops
            # at its first tick from now on; no stop is delivered to this thread any more.
            self._ticker.interrupter.leave()
            self._ticker.expire()
            watchdog.stop()
            cancelling.close()
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
