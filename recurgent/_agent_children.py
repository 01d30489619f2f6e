"""An agent's children: how ``delegate``/``tool`` make, keep, register and reach child agents.

A child inherits its parent's settings; generated code may only narrow its limits (ADR 0024)
and never materialize the parent's own role. A child generated code asks for, every agent such
a child makes, and every tool ``tool(name)`` builds are built by the program; only
``delegate()`` called by host code on an agent the host built makes a host-built child (ADR
0074). Each child is kept by name for the parent's
lifetime, registered in ``context["tools"]`` and, with a tool store, in ``registry.json``
(ADRs 0047, 0056). :meth:`ChildAgents._ops` is what a handle in generated code may do with
a child (ADR 0010).
"""

from __future__ import annotations

import hashlib
import itertools
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from recurgent._agent_state import AgentState
from recurgent._contracts import CONTRACT_FIELDS, infer_intent_signature
from recurgent._journal import writable
from recurgent._levels import shares_a_part
from recurgent._lifecycle._patterns import tool_observation
from recurgent._lifecycle._stored_tools import (
    hydrate_tools,
    register_stored_tool,
    touch_stored_tool,
)
from recurgent._options import KNOWN_OPTIONS
from recurgent._registry import TOOLS_KEY, integrity_violation, record_tool_use, register_tool
from recurgent._repr import safe_repr, shorten
from recurgent._runtime_config import inherited_settings
from recurgent._sandbox import HandleOps
from recurgent._store import Store
from recurgent._store._registry import PURPOSE_UNAVAILABLE
from recurgent._values import outgrows
from recurgent.errors import BudgetExceededError, GuardrailViolationError, UsageError
from recurgent.outcome import Outcome

if TYPE_CHECKING:
    from recurgent._agent import Agent

__all__ = ["ChildAgents", "Invocation"]

#: The dynamic call a program made a child from: method name, arguments, keyword arguments.
Invocation = tuple[str, tuple[Any, ...], Mapping[str, Any]]
# Characters the contract fields ``tool()`` takes from a registry entry may print to: a
# program writes the registry, after the sandbox's bound on its options (red team R15). The
# child's prompt shows a field past a million characters from a bounded copy anyway.
_REGISTRY_FIELD_CHARS = 1_000_000


class ChildAgents:
    """The Agent facade's base: its children and the tool store they are registered in.

    It adds no slot and has no ``__init__``: the state lives in the facade's one slot,
    ``_agent``, which :class:`~recurgent._agent.Agent` sets.
    """

    __slots__ = ()
    _agent: AgentState

    def _ops(self, child: Agent, registered: str | None = None) -> HandleOps:
        """Handle operations on ``child``; calls through a registered tool update its usage."""
        parent_memory = self._agent.memory

        def call(method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Outcome:
            outcome = child._dispatch(method, args, kwargs, from_program=True)
            if registered is not None:
                # What the tool's program showed, for the registry's telemetry (ADR 0109).
                seen = tool_observation(child._agent.patterns, method)
                record_tool_use(writable(parent_memory), registered, method, outcome.is_ok, seen)
                touch_stored_tool(
                    self._agent.store,
                    self._agent.memory,
                    registered,
                    method,
                    ok=outcome.is_ok,
                    observation=seen,
                )
            return outcome

        def set_value(name: str, value: Any) -> None:
            # A program's value, written past the child's journal: one reaching a part twice
            # marks the child's memory, as a commit placing it would (red team R31).
            if shares_a_part(value):
                child._runtime().memory_shape.shared = True
            setattr(child, name, value)

        def read(name: str) -> tuple[bool, Any]:
            memory = child._agent.memory
            return (name in memory, memory.get(name))

        return HandleOps(
            role=child._agent.role,
            call=call,
            set=set_value,
            read=read,
            remember=child._remember_from_code,
            agent=lambda: child,
        )

    def _refuse_self(self, name: str, api: str) -> None:
        if name.lower() == self._agent.role.lower():
            raise GuardrailViolationError(
                f"Self-materialization is not allowed in {self._agent.role}.{api}; implement "
                f"this role directly instead of calling {api}({name!r})",
                subtype="self_materialization",
                correction="implement the behaviour directly in this program instead of "
                "delegating to your own role",
            )

    def _refuse_widening(self, name: str, options: Mapping[str, Any], api: str) -> None:
        """Generated code may only narrow a child's limits; anything else ends the attempt.

        A refusal rather than a silent clamp: the guardrail lane tells the model which option to
        drop, and the program never believes it got limits it did not get (ADR 0024).
        """
        refusals = self._agent.options.narrowing_refusals(options)
        if refusals:
            raise GuardrailViolationError(
                f"{self._agent.role}.{api}({name!r}) from generated code refused: "
                + "; ".join(refusals),
                subtype="delegate_option_refused",
                correction=f"call {api}() with contract fields only (purpose, deliverable, "
                "acceptance, failure_policy, intent_signature); network and the limits "
                "execution_timeout_seconds, provider_timeout_seconds and forwarded_call_budget "
                "may only be lowered, and log, provider, model, debug, verbose, trace_id and "
                "the budgets are never accepted from generated code",
            )

    def _delegate(
        self, role: Any, options: Mapping[str, Any], invocation: Invocation | None, *, api: str
    ) -> Agent:
        internals = self._agent
        name = str(role).strip()
        if not name:
            raise UsageError("delegate() needs a non-empty role")
        self._refuse_self(name, api)
        budget = internals.options.delegation_budget
        if budget == 0:
            raise BudgetExceededError(
                f"Delegation budget exceeded in {internals.role}.{api} (remaining: 0)"
            )
        if invocation is not None:
            self._refuse_widening(name, options, api)
        ignored = sorted(set(options) - KNOWN_OPTIONS)
        if ignored and internals.options.debug:
            sys.stderr.write(
                f"[AGENT DELEGATE OPTION IGNORE {internals.role}->{name}] ignored non-runtime "
                f"options: {', '.join(ignored)}\n"
            )
        # An agent generated code asks for, any agent an agent so built makes, and a tool
        # materialized from the registry (which programs write too) are the program's: their
        # programs never answer the host's own agents (ADR 0074).
        by_program = invocation is not None or internals.built_by_program or api == "tool"
        key = self._child_key(options)
        cached = self._cached_child(name, key)
        if cached is not None and (by_program or not cached._agent.built_by_program):
            return cached
        # Host code asking for a child the program made gets its own child in its place.
        fields: dict[str, Any] = {key: options.get(key) for key in CONTRACT_FIELDS}
        if fields["intent_signature"] is None and invocation is not None:
            fields["intent_signature"] = infer_intent_signature(*invocation)
        child_options = internals.options.for_delegate(options)
        # A routed provider is shared with a child of the same model; a child given another
        # model is routed afresh (a claude- child of a gpt- parent goes to Anthropic).
        inherits_routed = (
            "provider" not in options
            and "model" not in options
            and internals.options.provider is None
            and internals.provider is not None
        )
        if inherits_routed:
            child_options["provider"] = internals.provider
        # Imported here, once per child made: recurgent._agent imports this module (its base).
        from recurgent._agent import Agent

        with inherited_settings(internals.options.settings):
            child = Agent(
                name,
                **child_options,
                **fields,
                delegation_contract=options.get("delegation_contract"),
            )
        child._agent.built_by_program = by_program
        # Inside this agent's attempt these write the attempt's view (they roll back with it).
        memory = writable(internals.memory)
        register_tool(memory, name, child._agent.options.contract)
        violation = integrity_violation(memory, phase="register", role=internals.role, method=api)
        if violation is not None:
            raise violation
        self._keep_child(name, key, child)
        return child

    def _tool(self, name: Any, options: Mapping[str, Any], invocation: Invocation | None) -> Agent:
        internals = self._agent
        key = str(name).strip()
        self._refuse_self(key, "tool")
        kept = internals.children.get(key)
        if kept is not None and not options:
            # tool(name) is the same tool: a child keeps its memory for the parent's lifetime.
            return self._cached_child(key, None) or kept[1]
        tools = writable(internals.memory).get(TOOLS_KEY)
        entry = tools.get(key) if isinstance(tools, Mapping) else None
        if not isinstance(entry, Mapping) and self._hydrate_tools():
            # Another agent or process may have registered it since this agent was built.
            tools = writable(internals.memory).get(TOOLS_KEY)
            entry = tools.get(key) if isinstance(tools, Mapping) else None
        if not isinstance(entry, Mapping):
            known = _known_tools(tools) if isinstance(tools, Mapping) else ""
            raise UsageError(
                f"Unknown tool {key!r} in {internals.role}.tool; known tools: {known or 'none'}"
            )
        merged = dict(options)
        for field_name in CONTRACT_FIELDS:
            if field_name not in merged and entry.get(field_name) is not None:
                merged[field_name] = entry[field_name]
        added = {field: merged[field] for field in merged.keys() - options.keys()}
        if outgrows(added, _REGISTRY_FIELD_CHARS):
            # A child's key writes its options' text in one C call, in the host's section.
            raise UsageError(
                f"tool {key!r:.80}: its registry entry's contract fields print to more than "
                f"{_REGISTRY_FIELD_CHARS} characters"
            )
        if merged.get("purpose") == PURPOSE_UNAVAILABLE and "purpose" not in options:
            # The registry's placeholder for a tool delegated without a purpose: as a contract
            # it would change the tool's fingerprint, so tool(name) would never reuse the
            # programs the tool stored, and the prompt would state it as the tool's job.
            del merged["purpose"]
        return self._delegate(key, merged, invocation, api="tool")

    # ----------------------------------------------------------------- tool store (ADR 0047)

    def _open_store(self) -> None:
        """Open the agent's tool store and merge the persisted tool registry into memory."""
        internals = self._agent
        root = internals.options.toolstore_root
        if root is None:
            return
        internals.store = Store(root)
        self._hydrate_tools()

    def _hydrate_tools(self) -> bool:
        return hydrate_tools(self._agent.store, self._agent.memory)

    def _store_registration(self, name: str, child: Agent, *, refresh: bool) -> None:
        internals = self._agent
        register_stored_tool(
            internals.store,
            internals.memory,
            internals.stored_tools,
            name,
            child._agent.options.contract,
            refresh=refresh,
        )

    @staticmethod
    def _child_key(options: Mapping[str, Any]) -> str:
        """The key of a child made with ``options``, computed before the child is made.

        Raises:
            UsageError: the options cannot be written out (an int past CPython's digit limit,
                red team R15).
        """
        # The inferred intent signature differs per request and does not change the tool. The
        # digest is kept, not the text: a program's options may print to megabytes, and the
        # key lives as long as the agent.
        try:
            text = repr(sorted((k, repr(v)) for k, v in options.items() if k != "intent_signature"))
        except ValueError as error:
            raise UsageError(f"a child's options cannot be written out: {error}") from None
        return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()

    def _cached_child(self, name: str, key: str | None) -> Agent | None:
        """The child kept under ``name``, when it was made with options of ``key`` (any
        options when ``None``)."""
        kept = self._agent.children.get(name)
        if kept is None or (key is not None and kept[0] != key):
            return None
        child = kept[1]
        register_tool(writable(self._agent.memory), name, child._agent.options.contract)
        # The attempt that made it may have been rolled back before its registration was written.
        self._store_registration(name, child, refresh=False)
        return child

    def _keep_child(self, name: str, key: str, child: Agent) -> None:
        self._agent.children[name] = (key, child)
        self._store_registration(name, child, refresh=True)


# Characters of each name, and names, the unknown-tool message lists.
_KNOWN_NAME_CHARS = 80
_KNOWN_NAMES = 50


def _known_tools(tools: Mapping[Any, Any]) -> str:
    """The registry's names for an unknown-tool message, each and all bounded: a program
    writes the registry, and ``str`` of its tuple key of 30 000 shared 6 000-character strings
    was 180 million characters in the host's section (6.8 s, red team R17)."""
    names = sorted(
        shorten(name, _KNOWN_NAME_CHARS)
        if isinstance(name, str)
        else safe_repr(name, (), limit=_KNOWN_NAME_CHARS)
        for name in itertools.islice(tools, _KNOWN_NAMES + 1)
    )
    text = ", ".join(names[:_KNOWN_NAMES])
    return text + (", ..." if len(names) > _KNOWN_NAMES else "")
