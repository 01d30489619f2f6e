"""recurgent: an embedded agent runtime whose unknown methods are written by an LLM on first call.

>>> from recurgent import Agent
>>> calc = Agent.for_("calculator")
>>> calc.value = 10          # a setter: writes memory, no LLM call
>>> calc.add(5)              # LLM writes Python -> sandbox runs it -> Outcome(ok, value=15)

Test doubles live in :mod:`recurgent.testing`; the OpenAI provider in
:mod:`recurgent.providers.openai`.
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError as _PackageNotFoundError, version as _version

from recurgent._agent import Agent
from recurgent._runtime_config import configure_runtime, reset_runtime_config, runtime_config
from recurgent._worker._pool import configure_workers
from recurgent.errors import (
    BudgetExceededError,
    ExecutionError,
    ExecutionTimeoutError,
    GuardrailRetryExhaustedError,
    GuardrailViolationError,
    InvalidCodeError,
    InvalidDependencyManifestError,
    NonSerializableResultError,
    OutcomeError,
    OutcomeRepairRetryExhaustedError,
    ProviderError,
    ProviderTimeoutError,
    RecurgentError,
    ResourceLimitError,
    UsageError,
)
from recurgent.outcome import Outcome
from recurgent.program import Dependency, Program
from recurgent.providers import Provider, ProviderRequest

try:
    __version__ = _version("recurgent")
except _PackageNotFoundError:  # pragma: no cover - running from a source tree without install
    __version__ = "0.0.0"

__all__ = [
    "Agent",
    "BudgetExceededError",
    "Dependency",
    "ExecutionError",
    "ExecutionTimeoutError",
    "GuardrailRetryExhaustedError",
    "GuardrailViolationError",
    "InvalidCodeError",
    "InvalidDependencyManifestError",
    "NonSerializableResultError",
    "Outcome",
    "OutcomeError",
    "OutcomeRepairRetryExhaustedError",
    "Program",
    "Provider",
    "ProviderError",
    "ProviderRequest",
    "ProviderTimeoutError",
    "RecurgentError",
    "ResourceLimitError",
    "UsageError",
    "__version__",
    "configure_runtime",
    "configure_workers",
    "reset_runtime_config",
    "runtime_config",
]
