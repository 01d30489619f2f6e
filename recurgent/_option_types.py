"""The agent options as types, for users' editors and type checkers (ADR 0099).

:class:`AgentOptionsDict` names every keyword option ``Agent(...)``, ``Agent.for_(...)``,
``Agent.prepare(...)``, ``delegate(...)`` and ``tool(...)`` take, with the type each accepts;
their signatures read ``**options: Unpack[AgentOptionsDict]``, so mypy or pyright flags
``Agent.for_("x", execution_timeout_seconds="slow")`` in a user's script. It is the one typed
declaration of the options: :data:`recurgent._options.KNOWN_OPTIONS` is what the runtime
validates, and ``specs/test_option_types.py`` fails when the two disagree (an option added to
one and not the other).

:class:`DynamicAttribute` is how a checker sees ``agent.name`` (``Agent.__getattr__``): a call
of it returns an :class:`~recurgent.outcome.Outcome`, and as a memory value it is whatever the
program stored (so ``calc.value + 1`` type-checks too).
"""

from __future__ import annotations

import os
from collections.abc import Coroutine, Mapping
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from recurgent._worker._manifest import DependencyPolicy
from recurgent.providers import Provider

if TYPE_CHECKING:
    from recurgent.outcome import Outcome

__all__ = ["AgentOptionsDict", "AsyncDynamicAttribute", "DynamicAttribute", "MapExecutorOption"]

#: A file or directory path option.
PathOption = str | os.PathLike[str]
#: ``network=``: everything, nothing, or the hosts reachable (``host``, ``host:port``, a URL).
NetworkOption = Literal["allow", "deny"] | list[str] | tuple[str, ...] | set[str] | frozenset[str]
#: ``Agent.map(..., executor=)``: where the items run (``None``: as an ordinary call would; ADR 0111).
MapExecutorOption = Literal["in_process", "process", "ray"] | None


class AgentOptionsDict(TypedDict, total=False):
    """Every keyword option of an agent, with the values each accepts (all optional).

    The README's option table says what each does; an option not listed here is refused
    at run time with :class:`~recurgent.errors.UsageError`.
    """

    provider: Provider | str | None
    model: str | None
    log: PathOption | bool | None
    debug: bool
    verbose: bool
    max_generation_attempts: int
    guardrail_recovery_budget: int
    fresh_outcome_repair_budget: int
    provider_timeout_seconds: float | None
    execution_timeout_seconds: float
    delegation_budget: int | None
    trace_id: str | None
    network: NetworkOption
    forwarded_call_budget: int
    toolstore_root: PathOption | None
    isolation: Literal["in_process", "process"]
    dependency_policy: DependencyPolicy | Mapping[str, Any] | None
    environment_cache_root: PathOption | None
    purpose: str | None
    #: A JSON Schema mapping (the type/required form included) or a type pydantic validates.
    deliverable: Any
    acceptance: Any
    failure_policy: Any
    intent_signature: str | None
    delegation_contract: Mapping[str, Any] | None
    #: A role profile in the original's shape (``role``, ``version``, ``constraints``).
    role_profile: Mapping[str, Any] | None
    role_profile_version: int | None


if TYPE_CHECKING:
    # Type checkers only: at run time an attribute is a memory value or a dynamic method
    # (``recurgent._agent._DynamicMethod``). An ``Any`` base keeps a memory read usable as any
    # type, while a call is known to return an Outcome.

    class DynamicAttribute(Any):  # type: ignore[misc]
        """``agent.name``: calling it runs a dynamic call and returns its Outcome."""

        def __call__(self, /, *args: Any, **kwargs: Any) -> Outcome: ...

    class AsyncDynamicAttribute(Any):  # type: ignore[misc]
        """``agent.aio.name``: calling it returns a coroutine of the call's Outcome."""

        def __call__(self, /, *args: Any, **kwargs: Any) -> Coroutine[Any, Any, Outcome]: ...

else:
    DynamicAttribute = Any
    AsyncDynamicAttribute = Any
