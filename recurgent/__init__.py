"""recurgent: an embedded agent runtime whose unknown methods are written by an LLM on first call.

>>> from recurgent import Agent
>>> calc = Agent.for_("calculator")
>>> calc.value = 10          # a setter: writes memory, no LLM call
>>> calc.add(5)              # LLM writes Python -> sandbox runs it -> Outcome(ok, value=15)

Test doubles live in :mod:`recurgent.testing`; the OpenAI provider in
:mod:`recurgent.providers.openai`.
"""

from __future__ import annotations

import typing as _typing

# The errors are light (the standard library only) and often caught without anything else.
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

# Everything else loads when first read (ADR 0114): `import recurgent` stays cheap.
_LAZY_EXPORTS = {
    "Agent": "recurgent._agent",
    "Dependency": "recurgent.program",
    "Outcome": "recurgent.outcome",
    "Program": "recurgent.program",
    "Provider": "recurgent.providers",
    "ProviderRequest": "recurgent.providers",
    "__version__": "recurgent._version",
    "configure_runtime": "recurgent._runtime_config",
    "configure_workers": "recurgent._worker._pool",
    "reset_runtime_config": "recurgent._runtime_config",
    "runtime_config": "recurgent._runtime_config",
}

if _typing.TYPE_CHECKING:
    from recurgent._agent import Agent as Agent
    from recurgent._runtime_config import (
        configure_runtime as configure_runtime,
        reset_runtime_config as reset_runtime_config,
        runtime_config as runtime_config,
    )
    from recurgent._version import __version__ as __version__
    from recurgent._worker._pool import configure_workers as configure_workers
    from recurgent.outcome import Outcome as Outcome
    from recurgent.program import Dependency as Dependency, Program as Program
    from recurgent.providers import Provider as Provider, ProviderRequest as ProviderRequest
else:
    from recurgent._lazy import lazy_exports

    __getattr__, __dir__ = lazy_exports(
        __name__,
        globals(),
        _LAZY_EXPORTS,
        submodules=("outcome", "program", "providers", "testing"),
    )
    del lazy_exports

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
