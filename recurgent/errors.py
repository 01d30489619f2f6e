"""The one exception hierarchy of recurgent; every class knows its ``error_type`` and retriability.

::

    RecurgentError                          execution                  (base; never raised bare)
    ├── UsageError (ValueError)             developer mistakes; never become an Outcome
    ├── ProviderError                       provider                   retriable
    │   ├── ProviderAuthError               provider                   (401/403: not retriable)
    │   ├── ProviderReplyTooLargeError      provider                   retriable
    │   ├── ProviderTimeoutError            timeout                    retriable
    │   ├── InvalidCodeError                invalid_code               retriable
    │   └── InvalidDependencyManifestError  invalid_dependency_manifest
    ├── ExecutionError                      execution
    │   ├── ResourceLimitError              resource_limit
    │   ├── NonSerializableResultError      non_serializable_result
    │   └── InvalidOutcomeError             execution   (an Outcome field out of bounds)
    ├── ExecutionTimeoutError               timeout                    retriable
    ├── DependencyManifestIncompatibleError dependency_manifest_incompatible   (worker lane,
    ├── DependencyPolicyViolationError      dependency_policy_violation         ADR 0039-0042)
    ├── DependencyResolutionError           dependency_resolution_failed
    ├── DependencyInstallError              dependency_install_failed   retriable
    ├── DependencyActivationError           dependency_activation_failed retriable
    ├── EnvironmentPreparingError           environment_preparing       retriable
    ├── WorkerCrashError                    worker_crash                retriable
    ├── GuardrailViolationError             tool_registry_violation
    ├── GuardrailRetryExhaustedError        guardrail_retry_exhausted
    ├── OutcomeRepairRetryExhaustedError    outcome_repair_retry_exhausted
    ├── BudgetExceededError                 budget_exceeded
    └── OutcomeError                        any other type     (raised by Outcome.unwrap())

Constructors store data and do nothing else. The lifecycle turns every class except
``UsageError`` into an error ``Outcome`` by reading ``error_type`` and ``retriable``
(ADR 0003); :func:`error_for` turns an error ``Outcome`` back into an exception for
``Outcome.unwrap()`` (ADR 0098).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

__all__ = [
    "BudgetExceededError",
    "DependencyActivationError",
    "DependencyInstallError",
    "DependencyManifestIncompatibleError",
    "DependencyPolicyViolationError",
    "DependencyResolutionError",
    "EnvironmentPreparingError",
    "ExecutionError",
    "ExecutionTimeoutError",
    "GuardrailRetryExhaustedError",
    "GuardrailViolationError",
    "InvalidCodeError",
    "InvalidDependencyManifestError",
    "InvalidOutcomeError",
    "NonSerializableResultError",
    "OutcomeError",
    "OutcomeRepairRetryExhaustedError",
    "ProviderAuthError",
    "ProviderError",
    "ProviderReplyTooLargeError",
    "ProviderTimeoutError",
    "RecurgentError",
    "ResourceLimitError",
    "UsageError",
    "WorkerCrashError",
    "error_for",
]


class RecurgentError(Exception):
    """Base of every error the runtime raises.

    Attributes:
        metadata: Plain data that travels into the error ``Outcome``'s metadata.
    """

    error_type: ClassVar[str] = "execution"
    retriable: ClassVar[bool] = False

    def __init__(self, message: str, *, metadata: Mapping[str, Any] | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.metadata: dict[str, Any] = dict(metadata or {})


class UsageError(RecurgentError, ValueError):
    """A developer mistake: a bad option, an unknown tool, a misuse of the API."""

    error_type = "usage"


class ProviderError(RecurgentError):
    """The provider failed to produce a program (transport, API or malformed reply)."""

    error_type = "provider"
    retriable = True


class ProviderAuthError(ProviderError):
    """The provider refused the credentials (HTTP 401) or the permission (HTTP 403).

    Retrying cannot help until someone fixes the key or the base URL, so it is not retriable;
    ``metadata["status"]`` holds the HTTP status.
    """

    retriable = False


class ProviderReplyTooLargeError(ProviderError):
    """The provider's reply body was larger than the provider's ``max_reply_bytes``."""


class ProviderTimeoutError(ProviderError, TimeoutError):
    """The provider did not answer within ``provider_timeout_seconds``."""

    error_type = "timeout"


class InvalidCodeError(ProviderError):
    """The provider's reply is not a runnable program (no code, blank, syntax or policy error)."""

    error_type = "invalid_code"


class InvalidDependencyManifestError(ProviderError):
    """The program's ``dependencies`` list is malformed."""

    error_type = "invalid_dependency_manifest"
    retriable = False


class ExecutionError(RecurgentError):
    """Generated code raised an exception while it ran.

    Attributes:
        root_class: Class name of the exception raised by the generated code.
        root_message: Its message (redacted).
        line: Line of the generated code where it was raised, when known.
    """

    error_type = "execution"

    def __init__(
        self,
        message: str,
        *,
        root_class: str | None = None,
        root_message: str | None = None,
        line: int | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message, metadata=metadata)
        self.root_class = root_class
        self.root_message = root_message
        self.line = line


class ResourceLimitError(ExecutionError):
    """Generated code asked for more than a size or call cap allows."""

    error_type = "resource_limit"


class NonSerializableResultError(ExecutionError):
    """Generated code returned or stored something that is not plain data (a function, a class)."""

    error_type = "non_serializable_result"


class InvalidOutcomeError(ExecutionError):
    """An Outcome was built with an ``error_type`` that is not a short identifier, or with an
    ``error_message`` longer than the cap (ADR 0059).

    Raised by ``Outcome.error(...)`` and by the coercion of an error mapping, so generated code
    that builds one fails like any program that raised, and its repair feedback says why.
    """


class ExecutionTimeoutError(RecurgentError, TimeoutError):
    """Generated code ran past ``execution_timeout_seconds`` and was stopped."""

    error_type = "timeout"
    retriable = True


class GuardrailViolationError(RecurgentError):
    """A program broke a runtime policy (mutating agents, misusing the tool registry, ...).

    Its ``error_type`` keeps the Ruby vocabulary, ``tool_registry_violation``.

    Attributes:
        subtype: Which policy, e.g. ``singleton_method_mutation``.
        correction: What the next program must do differently.
        line: Line of the generated code that violated it, when known.
    """

    error_type = "tool_registry_violation"

    def __init__(
        self,
        message: str,
        *,
        subtype: str = "unknown_guardrail_violation",
        correction: str | None = None,
        line: int | None = None,
        metadata: Mapping[str, Any] | None = None,
    ) -> None:
        super().__init__(message, metadata=metadata)
        self.subtype = subtype
        self.correction = correction
        self.line = line


class GuardrailRetryExhaustedError(RecurgentError):
    """Every guardrail recovery attempt of a call was used up."""

    error_type = "guardrail_retry_exhausted"


class OutcomeRepairRetryExhaustedError(RecurgentError):
    """Every outcome repair attempt of a call was used up."""

    error_type = "outcome_repair_retry_exhausted"


class BudgetExceededError(RecurgentError):
    """``delegate``/``tool`` was called with no delegation budget left."""

    error_type = "budget_exceeded"


class DependencyManifestIncompatibleError(RecurgentError):
    """A program's dependencies change the version of a package the agent already uses."""

    error_type = "dependency_manifest_incompatible"


class DependencyPolicyViolationError(RecurgentError):
    """A dependency or package index is refused by the runtime dependency policy."""

    error_type = "dependency_policy_violation"


class DependencyResolutionError(RecurgentError):
    """The installer could not resolve the manifest (unknown package, impossible versions)."""

    error_type = "dependency_resolution_failed"


class DependencyInstallError(RecurgentError):
    """Creating the environment or installing the resolved packages failed."""

    error_type = "dependency_install_failed"
    retriable = True


class DependencyActivationError(RecurgentError):
    """The environment exists but its worker could not be started."""

    error_type = "dependency_activation_failed"
    retriable = True


class EnvironmentPreparingError(RecurgentError):
    """The environment of a prepared agent is not ready (still building, or its build failed)."""

    error_type = "environment_preparing"
    retriable = True


class WorkerCrashError(RecurgentError):
    """The worker process died, broke the protocol or had to be killed without a result."""

    error_type = "worker_crash"
    retriable = True


class OutcomeError(RecurgentError):
    """An error Outcome raised by ``Outcome.unwrap()`` whose ``error_type`` no runtime class owns.

    A domain error a program returned (``division_by_zero``), the tool vocabulary
    (``network_error``) or ``contract_violation``: the instance carries the outcome's
    ``error_type`` and ``retriable``, so ``except OutcomeError as e: e.error_type`` reads it.
    """


def _canonical_classes() -> dict[str, type[RecurgentError]]:
    # One class per error_type. Where several classes share a type, the general one answers:
    # ``timeout`` is ExecutionTimeoutError (both timeouts are TimeoutErrors), ``provider`` is
    # ProviderError, ``execution`` is ExecutionError.
    classes: tuple[type[RecurgentError], ...] = (
        ExecutionError,
        ProviderError,
        ExecutionTimeoutError,
        InvalidCodeError,
        InvalidDependencyManifestError,
        ResourceLimitError,
        NonSerializableResultError,
        UsageError,
        GuardrailViolationError,
        GuardrailRetryExhaustedError,
        OutcomeRepairRetryExhaustedError,
        BudgetExceededError,
        DependencyManifestIncompatibleError,
        DependencyPolicyViolationError,
        DependencyResolutionError,
        DependencyInstallError,
        DependencyActivationError,
        EnvironmentPreparingError,
        WorkerCrashError,
    )
    return {cls.error_type: cls for cls in classes}


_BY_ERROR_TYPE = _canonical_classes()


def error_for(
    error_type: str,
    message: str,
    *,
    retriable: bool,
    metadata: Mapping[str, Any] | None = None,
) -> RecurgentError:
    """The exception an error Outcome stands for: its class by ``error_type``, its fields kept.

    Args:
        error_type: The outcome's type; one no class owns gives an :class:`OutcomeError`.
        message: The outcome's ``error_message``.
        retriable: The outcome's flag; the instance reports it even where the class says
            otherwise (a program may mark its own error retriable).
        metadata: The outcome's metadata.
    """
    cls = _BY_ERROR_TYPE.get(error_type, OutcomeError)
    error = cls(message, metadata=metadata)
    # Instance values over the class defaults: what the outcome said is what the error says.
    if cls.error_type != error_type:
        vars(error)["error_type"] = error_type
    if cls.retriable != retriable:
        vars(error)["retriable"] = retriable
    return error
