"""Forwarded calls: how generated code reaches the host, budgeted, marshalled and redacted.

Every way out of an attempt (``delegate``, ``tool``, ``remember``, ``content``, a handle's
dynamic call, setter or ``remember``, a memory write) passes through :class:`ForwardedCalls`: it spends the
attempt's forwarded-call budget, rebuilds values crossing the boundary from plain types
(handles become agents, code objects are refused) and re-raises host failures as fresh,
redacted errors, so no host frame or secret reaches generated code (ADR 0011, 0021).
"""

from __future__ import annotations

import contextvars
import decimal
from collections.abc import Callable
from typing import Any

from recurgent._async_stop import host_section
from recurgent._journal import Journal, Writes
from recurgent._redact import redact
from recurgent._sandbox._boundary import exception_text, rebuild
from recurgent._sandbox._bridge import HostBridge
from recurgent._sandbox._decimal_operands import sandbox_decimal
from recurgent._sandbox._guards import NOT_HANDLED
from recurgent._sandbox._handles import AgentHandle, HandleOps, HandleWriter
from recurgent._sandbox._inbound import inbound
from recurgent._sandbox._limits import SandboxLimits, SizeLimitExceeded, Ticker
from recurgent._sandbox._reflection import seal
from recurgent._values import outgrows
from recurgent._where import Location
from recurgent.errors import (
    BudgetExceededError,
    GuardrailViolationError,
    NonSerializableResultError,
    UsageError,
)
from recurgent.outcome import Outcome

__all__ = [
    "MEMORY_SUFFIX",
    "RUNNING",
    "ForwardedCalls",
    "bounded_setting",
    "generated_code_running",
    "safe_text",
]

#: How a refusal of a memory write ends.
MEMORY_SUFFIX = (
    "memory may hold only plain data, so a function, class or handle defined in one attempt "
    "cannot leak into later calls"
)

#: True while generated code runs; a forwarded call sets it back to False for its duration.
RUNNING: contextvars.ContextVar[bool] = contextvars.ContextVar(
    "recurgent_generated_code_running", default=False
)


def generated_code_running() -> bool:
    """True while generated code runs, outside the forwarded calls it makes.

    Host objects that act on their own when called (an agent's dynamic methods) check this:
    generated code must reach them through ``tool``/``delegate`` handles, which are budgeted
    and marshalled, never by handing them to library code that calls them directly (for
    example ``json.dump(data, agent)`` calling ``agent.write``).
    """
    return RUNNING.get()


# A role, a tool name and the options of one delegate()/tool() hold at most this many characters
# (the prompt's own bounds cut a five-megabyte purpose; billions are refused here).
_SETTING_CHARS = 10_000_000


def bounded_setting(plain: Any, where: str) -> Any:
    """``plain`` when its text is short: the host's refusals echo a name or an option's value,
    and shared parts (``[[s] * 1000] * 1000``) make that echo billions of characters in one C
    call, 20 to 25 s and 3.5 GB inside the program's call (red team R12)."""
    if outgrows(plain, _SETTING_CHARS):
        raise UsageError(f"{where}: more than {_SETTING_CHARS} characters")
    return plain


def safe_text(error: BaseException) -> str:
    """An exception's text without program code, with secrets redacted."""
    return redact(exception_text(error))


class ForwardedCalls:
    """The sandbox's side of every forwarded call, as methods of one attempt's sandbox.

    :class:`~recurgent._sandbox.ExecutionSandbox` derives from this class and sets the
    attributes declared here in its own ``__init__``: this class has none, so building a
    sandbox costs no extra call.
    """

    _bridge: HostBridge
    _journal: Journal
    _limits: SandboxLimits
    _ticker: Ticker
    # ids of the call's own arguments: host objects the program may hand back unchanged.
    _passed: set[int]
    _violations: list[GuardrailViolationError]
    _forwarded: int
    # Outcomes forwarded calls returned, by the id of the copy the program got, with the
    # child's own (the dict keeps each alive, so ids stay unique).
    _answers: dict[int, tuple[Outcome, Outcome]]

    def _forwarders(self) -> dict[str, Callable[..., Any]]:
        """``delegate``, ``tool``, ``remember`` and ``content``: plain closures, never bound
        methods."""
        host_call, to_host, bridge = self._host_call, self._to_host, self._bridge

        def delegate(role: Any, **options: Any) -> AgentHandle:
            plain_role = bounded_setting(to_host(role, "delegate role"), "delegate role")
            plain = bounded_setting(to_host(options, "delegate options"), "delegate options")
            return AgentHandle(host_call("delegate", lambda: bridge.delegate(plain_role, **plain)))

        def tool(name: Any, **options: Any) -> AgentHandle:
            plain_name = bounded_setting(to_host(name, "tool name"), "tool name")
            plain = bounded_setting(to_host(options, "tool options"), "tool options")
            return AgentHandle(host_call("tool", lambda: bridge.tool(plain_name, **plain)))

        def remember(**entries: Any) -> None:
            plain = to_host(entries, "remember()")
            host_call("remember", lambda: bridge.remember(plain))
            # The attempt's journal at call time: a batch gives each item its own (ADR 0111).
            self._journal.view.update(plain)

        def content(ref: Any) -> Any:
            # Read-only: the host hands back a fresh copy of the kept answer, or None (ADR 0102).
            reader = bridge.content
            if reader is None or not isinstance(ref, str):
                return None
            plain = str.__str__(ref)
            return host_call("content", lambda: reader(plain))

        # Sealed: the closures hold the sandbox and the bridge (ADR 0021).
        return {
            name: seal(forwarder)
            for name, forwarder in (
                ("delegate", delegate),
                ("tool", tool),
                ("remember", remember),
                ("content", content),
            )
        }

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
        """An argument of the call: agents (also inside an ok Outcome) become handles; a
        Decimal becomes the sandbox's checked one (ADR 0129)."""
        if type(value) is decimal.Decimal:
            return sandbox_decimal(value)
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

        def plain(
            value: Any,
            where: Location,
            *,
            resolve: Callable[[Any], Any | None],
            depth: int = 0,
            heights: dict[int, int] | None = None,
        ) -> Any:
            return rebuild(
                value,
                where,
                resolve=resolve,
                keep=self._is_agent,
                suffix=MEMORY_SUFFIX,
                depth=depth,
                heights=heights,
            )

        return self._journal.prepare(plain)

    def _host_call(self, what: str, operation: Callable[[], Any]) -> Any:
        """Run a host operation for generated code; host exceptions come back fresh and redacted."""
        self._spend(what)
        failure: BaseException | None = None
        forwarded = RUNNING.set(False)
        try:
            # Host code: never interrupted by the attempt's stop (ADR 0089).
            with host_section():
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
            failure = RuntimeError(f"{what} failed: {safe_text(error)}")
        finally:
            RUNNING.reset(forwarded)
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
        with host_section():
            found, value = ops.read(name)
        if found:
            return inbound(value, self._bridge.handle_for_agent, self._ticker.tick)

        def dynamic_call(*args: Any, **kwargs: Any) -> Any:
            plain_args = self._to_host(list(args), f"{ops.role}.{name}() arguments")
            plain_kwargs = self._to_host(kwargs, f"{ops.role}.{name}() keyword arguments")
            outcome = self._host_call(
                f"{ops.role}.{name}", lambda: ops.call(name, tuple(plain_args), plain_kwargs)
            )
            answer = inbound(outcome, self._bridge.handle_for_agent, self._ticker.tick)
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
