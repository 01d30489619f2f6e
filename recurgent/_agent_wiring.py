"""An agent's runtime parts: built from its options, consulted as memory is written, handed to
the lifecycle.

When an agent is made, its options name its parts: the provider (checked at once, ADR 0097),
the call logger, the worker lane, the tool store and the role-profile binding. On its first
call they are handed to the lifecycle as one ``AgentRuntime``, with the callbacks a program's
``delegate``/``tool``/``remember`` and returned agents go through. Every write into memory,
from ``remember``, a setter or a program, is checked here (a ``tools`` entry must be data, and
under ``isolation="process"`` memory must cross to the worker) and shown to the role profile.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, cast

from recurgent._agent_children import ChildAgents
from recurgent._levels import shares_a_part
from recurgent._lifecycle import AgentRuntime
from recurgent._lifecycle._generation import check_provider
from recurgent._observability import CallLogger
from recurgent._profiles import ProfileBinding
from recurgent._registry import TOOLS_KEY, integrity_violation
from recurgent._worker._slot import LaneSlot
from recurgent.providers import Provider, route_provider
from recurgent.providers._preflight import check_route

if TYPE_CHECKING:
    from recurgent._agent import Agent

__all__ = ["AgentWiring"]


class AgentWiring(ChildAgents):
    """The Agent facade's base: its parts, their wiring to the lifecycle, and memory writes.

    It adds no slot and has no ``__init__``: the state lives in the facade's one slot,
    ``_agent``, which :class:`~recurgent._agent.Agent` sets before :meth:`_build_parts`.
    """

    __slots__ = ()

    def _build_parts(self) -> None:
        """Make the parts the agent's options name; a provider that cannot be used fails here."""
        internals = self._agent
        if internals.options.provider is not None:
            check_provider(internals.options.provider)
        else:
            # Fail fast (ADR 0097): a missing key or SDK is a UsageError here, not a
            # provider error on the first call.
            internals.provider = check_route(internals.options.model)
        if internals.options.log is not None:
            internals.logger = CallLogger(internals.options.log, debug=internals.options.debug)
        opts = internals.options
        internals.workers = LaneSlot(
            policy=opts.dependency_policy,
            isolation=opts.isolation,
            network=opts.network,
            cache_root=opts.environment_cache_root,
            role=internals.role,
        )
        self._open_store()
        # After the store: the profile is published where this agent's programs are kept.
        store = internals.store
        internals.profiles = ProfileBinding(
            internals.role,
            store.root if store is not None else None,
            profile=opts.role_profile,
            version=opts.role_profile_version,
        )

    # ----------------------------------------------------------------- runtime wiring

    def _runtime(self) -> AgentRuntime:
        internals = self._agent
        if internals.runtime is None:
            internals.runtime = self._new_runtime()
        return internals.runtime

    def _new_runtime(self) -> AgentRuntime:
        """The lifecycle's view of this agent, made on its first call and kept in its state."""
        # Imported here, once per agent: recurgent._agent imports this module (its base). Not
        # in _runtime, which every call runs: a name its lambdas captured would be a cell made
        # at each of its calls.
        from recurgent._agent import Agent

        internals = self._agent
        return AgentRuntime(
            role=internals.role,
            options=internals.options,
            memory=internals.memory,
            provider=self._provider,
            logger=internals.logger,
            delegate=lambda name, opts, invocation: self._ops(
                self._delegate(name, opts, invocation, api="delegate"), registered=name
            ),
            tool=lambda name, opts, invocation: self._ops(
                self._tool(name, opts, invocation), registered=name
            ),
            remember=self._remember_from_code,
            handle_for_agent=lambda obj: self._ops(obj) if isinstance(obj, Agent) else None,
            lock=internals.lock,
            store=internals.store,
            workers=internals.workers,
            content=internals.content,
            patterns=internals.patterns,
            profiles=internals.profiles,
            self_model=internals.self_model,
        )

    def _provider(self) -> Provider:
        internals = self._agent
        if internals.options.provider is not None:
            return internals.options.provider
        if internals.provider is None:
            internals.provider = route_provider(internals.options.model)
        return internals.provider

    # ----------------------------------------------------------------- memory writes

    def _remember_from_code(self, entries: Mapping[str, Any]) -> None:
        # Entries a program wrote through a handle (rebuilt once, so a part it reached twice
        # stays one object) reach memory past the journal: memory may now hold a container at
        # two places, and later patches must walk it (red team R31, ADR 0161).
        if shares_a_part(entries):
            self._runtime().memory_shape.shared = True
        cast("Agent", self).remember(**dict(entries))

    def _observe_setters(self, names: list[str]) -> None:
        profiles = self._agent.profiles
        if profiles is not None:
            profiles.observe_setter(names)

    def _check_crossing(self, entries: Mapping[str, Any]) -> None:
        # isolation="process": memory must be data its worker can receive (ADR 0094).
        if self._agent.workers is not None:
            self._agent.workers.check_memory(entries)

    def _check_registry_write(self, entries: Mapping[str, Any], *, phase: str) -> None:
        if TOOLS_KEY not in entries:
            return
        violation = integrity_violation(
            {TOOLS_KEY: entries[TOOLS_KEY]}, phase=phase, role=self._agent.role, method=phase
        )
        if violation is not None:
            raise violation
