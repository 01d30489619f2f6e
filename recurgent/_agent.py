"""Agent: turns unknown public attribute calls into dynamic calls run by the lifecycle (ADR 0001).

Dispatch rules:

* ``agent.x = v`` writes ``agent.runtime_context["x"]`` and calls no provider.
* ``agent.x`` returns ``runtime_context["x"]`` when that key exists, without a provider call.
* Any other public name is a callable; calling it performs a dynamic call returning an Outcome.
* Names starting with ``_`` and the public names tools probe (:data:`PROBE_NAMES`) raise
  ``AttributeError`` at once, so ``copy``, ``pickle``, IPython, pytest and mocks never reach a
  provider (ADR 0031).
* Assigning to a name the Agent itself uses (:data:`RESERVED_NAMES`) raises ``UsageError``.
* ``str(agent)`` is ``repr(agent)``; copying or pickling an agent raises ``TypeError``.

The instance keeps everything in one underscored slot, so the public namespace is only
``for_``, ``prepare``, ``remember``, ``runtime_context``, ``delegate``, ``tool``,
``responds_to`` and ``getdoc``.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NoReturn, SupportsIndex

from recurgent._contracts import CONTRACT_FIELDS, infer_intent_signature
from recurgent._journal import writable
from recurgent._lifecycle import AgentRuntime, run_call
from recurgent._lifecycle._generation import check_provider
from recurgent._lifecycle._stored_tools import (
    hydrate_tools,
    register_stored_tool,
    touch_stored_tool,
)
from recurgent._observability import CallLogger
from recurgent._options import KNOWN_OPTIONS, AgentOptions, parse_options
from recurgent._registry import TOOLS_KEY, integrity_violation, record_tool_use, register_tool
from recurgent._sandbox import HandleOps, generated_code_running
from recurgent._store import Store
from recurgent._worker._slot import LaneSlot, Preparation
from recurgent.errors import (
    BudgetExceededError,
    GuardrailViolationError,
    RecurgentError,
    UsageError,
)
from recurgent.outcome import Outcome
from recurgent.program import parse_program
from recurgent.providers import Provider, route_provider

__all__ = ["PROBE_NAMES", "RESERVED_NAMES", "Agent"]

_Invocation = tuple[str, tuple[Any, ...], Mapping[str, Any]]
_PUBLIC = frozenset(
    {
        "for_",
        "prepare",
        "remember",
        "runtime_context",
        "delegate",
        "tool",
        "responds_to",
        "getdoc",
    }
)

# Public names that introspection machinery looks up on any object it is shown. Each would
# otherwise be a dynamic method, and the ones a tool *calls* would become provider requests. Names
# starting with "_" (IPython's _repr_*_, _ipython_*_, _ipython_canary_method_should_not_exist_,
# _getAttributeNames, _fields; dunders such as __wrapped__, __signature__, __length_hint__) are
# refused by the underscore rule and need no entry. ``getdoc`` is a real method (ADR 0031).
PROBE_NAMES = frozenset(
    {
        # IPython < 1.0 completion (dir2) called obj.trait_names(); Traits/traitlets detection.
        "trait_names",
        # pytest reads module-level objects' marks while collecting.
        "pytestmark",
        # rich's "does this object claim every attribute?" canary.
        "awehoi1234_wdfjwljet234_234wdfoijsdfmmnxpi492",
    }
)
RESERVED_NAMES = _PUBLIC | PROBE_NAMES
"""Names ``agent.name = value`` refuses: the Agent's own attributes and the probe names."""


@dataclass(slots=True)
class _Internals:
    role: str
    options: AgentOptions
    memory: dict[str, Any] = field(default_factory=dict)
    provider: Provider | None = None
    logger: CallLogger | None = None
    lock: threading.RLock = field(default_factory=threading.RLock)
    runtime: AgentRuntime | None = None
    store: Store | None = None
    # Tools this agent materialized, by name: tool(name) hands back the same child, so the
    # memory a tool keeps (handle.x = v, its own programs' writes) is there at its next call.
    children: dict[str, tuple[str, Agent]] = field(default_factory=dict)
    # Children whose registration reached registry.json (only once an attempt committed it).
    stored_tools: set[str] = field(default_factory=set)
    workers: LaneSlot | None = None


class _DynamicMethod:
    """The callable ``agent.name`` returns for a name that is not in memory."""

    __slots__ = ("_agent", "_name")

    def __init__(self, agent: Agent, name: str) -> None:
        self._agent = agent
        self._name = name

    # ``self`` is positional-only so ``agent.update(self=1)`` passes ``self`` as a keyword.
    def __call__(self, /, *args: Any, **kwargs: Any) -> Outcome:
        return self._agent._dispatch(self._name, args, kwargs)

    @property
    def __name__(self) -> str:
        return self._name

    def __repr__(self) -> str:
        return f"<dynamic method {self._agent._agent.role}.{self._name}>"


class Agent:
    """An object whose unknown methods are written by an LLM when first called.

    Args:
        role: What the agent is, in words ("calculator", "news assistant"). Prompts use it.
        **options: Keyword-only options (see the README's option table); an unknown option
            raises :class:`~recurgent.errors.UsageError`.

    Example::

        calc = Agent.for_("calculator")
        calc.value = 10          # memory write, no provider call
        outcome = calc.add(5)    # LLM writes the code; Outcome(ok, value=15)
    """

    __slots__ = ("_agent",)
    __recurgent_agent__ = True
    _agent: _Internals

    def __init__(self, role: str, **options: Any) -> None:
        if not isinstance(role, str) or not role.strip():
            raise UsageError(f"role must be a non-empty str, got {role!r}")
        object.__setattr__(
            self, "_agent", _Internals(role=role.strip(), options=parse_options(options))
        )
        internals = self._agent
        if internals.options.provider is not None:
            check_provider(internals.options.provider)
        if internals.options.log is not None:
            internals.logger = CallLogger(internals.options.log, debug=internals.options.debug)
        opts = internals.options
        internals.workers = LaneSlot(
            policy=opts.dependency_policy,
            isolation=opts.isolation,
            network=opts.network,
            cache_root=opts.environment_cache_root,
        )
        self._open_store()

    @classmethod
    def for_(cls, role: str, **options: Any) -> Agent:
        """Create an agent (the canonical constructor; ``Agent(role, ...)`` is the same)."""
        return cls(role, **options)

    @classmethod
    def prepare(
        cls, role: str, *, dependencies: list[Mapping[str, Any]], **options: Any
    ) -> Preparation[Agent]:
        """Create an agent and build its dependency environment in the background.

        ``dependencies`` is a list of ``{"name", "version"}`` objects, checked at once against
        the manifest rules (``UsageError``) and later against ``dependency_policy``. The
        result's ``agent`` is usable at once; ``wait(timeout)`` and ``status`` follow the
        preparation, whose failure is ``environment_preparing`` (ADR 0042).
        """
        agent = cls(role, **options)
        try:
            parse_program({"code": "pass", "dependencies": dependencies}, method_name="prepare")
        except RecurgentError as invalid:
            raise UsageError(f"dependencies: {invalid.message}") from None
        slot = agent._agent.workers
        assert slot is not None
        ticket = slot.lane().prepare(dependencies, role=agent._agent.role)
        return Preparation(agent, ticket)

    # ----------------------------------------------------------------- public surface

    @property
    def runtime_context(self) -> dict[str, Any]:
        """The agent's live memory dict."""
        return self._agent.memory

    def remember(self, /, **entries: Any) -> Agent:
        """Write entries into memory and return the same agent.

        Raises:
            GuardrailViolationError: the entries would put executable objects in ``tools``;
                nothing is written then.
        """
        self._check_registry_write(entries, phase="remember")
        self._agent.memory.update(entries)
        return self

    def getdoc(self) -> str:
        """A short description of this agent; IPython's ``agent?`` shows it (ADR 0031)."""
        internals = self._agent
        keys = ", ".join(map(str, internals.memory)) or "none"
        return (
            f"Agent({internals.role!r}): a recurgent agent. Calling any other public method asks "
            f"the model to write it and returns an Outcome. Memory keys: {keys}."
        )

    def responds_to(self, name: object) -> bool:
        """Introspection: True for a setter name (``"x="``), a memory key, or a public method.

        A dynamic name that is not in memory answers False: ``hasattr`` cannot tell, because
        every public name returns a callable. Reserved names have no setter; probe names are
        never answered.
        """
        if not isinstance(name, str):
            return False
        if name.endswith("="):
            base = name[:-1]
            return bool(base) and not base.startswith("_") and base not in RESERVED_NAMES
        if name in PROBE_NAMES:
            return False
        return name in self._agent.memory or name in _PUBLIC

    def delegate(self, role: str, **options: Any) -> Agent:
        """Create a child agent (a tool) that inherits this agent's settings.

        Contract fields (``purpose``, ``deliverable``, ``acceptance``, ``failure_policy``,
        ``intent_signature``, ``delegation_contract``) describe the child's job; runtime options
        override inherited ones; other options are ignored (a warning in debug mode). The child
        is recorded in ``runtime_context["tools"]``.

        Raises:
            GuardrailViolationError: ``role`` is this agent's own role.
            BudgetExceededError: this agent has no delegation budget left.
        """
        return self._delegate(role, options, None, api="delegate")

    def tool(self, name: str, **options: Any) -> Agent:
        """Materialize a tool recorded in ``runtime_context["tools"]`` again, with its contract.

        Raises:
            UsageError: no tool of that name is recorded.
        """
        return self._tool(name, options, None)

    # ----------------------------------------------------------------- dispatch

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_") or name in PROBE_NAMES:
            raise AttributeError(name)
        memory = self._agent.memory
        if name in memory:
            return memory[name]
        return _DynamicMethod(self, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("_"):
            raise AttributeError(f"cannot set private attribute {name!r} on an Agent")
        if name in RESERVED_NAMES:
            raise UsageError(
                f"{name!r} is reserved by Agent and cannot be assigned; reserved names: "
                f"{', '.join(sorted(RESERVED_NAMES))}. Store the value under another name "
                f"(agent.my_{name.strip('_')} = value), or write the key itself with "
                f"agent.remember({name}=value) and read it back as "
                f"agent.runtime_context[{name!r}]"
            )
        if name == TOOLS_KEY:
            self._check_registry_write({name: value}, phase="setter")
        self._agent.memory[name] = value

    def __delattr__(self, name: str) -> None:
        if name.startswith("_") or name not in self._agent.memory:
            raise AttributeError(name)
        del self._agent.memory[name]

    def __dir__(self) -> list[str]:
        memory_names = (str(key) for key in self._agent.memory)
        return sorted({*_PUBLIC, *(n for n in memory_names if n not in PROBE_NAMES)})

    def __repr__(self) -> str:
        return f"<Agent({self._agent.role}) context={list(map(str, self._agent.memory))!r}>"

    # str() runs implicitly (f-strings, logging, exception text), so unlike Ruby's to_s it never
    # makes a dynamic call.
    __str__ = __repr__

    def __reduce_ex__(self, protocol: SupportsIndex) -> NoReturn:
        # copy, deepcopy and pickle all come here. An agent holds a live provider, a lock and a
        # log writer, and a copy sharing them would be a second agent in disguise: refuse.
        raise TypeError(
            f"Agent({self._agent.role!r}) cannot be copied or pickled; build another with "
            "Agent.for_(role, **options) and copy its memory with "
            "remember(**agent.runtime_context)"
        )

    def _dispatch(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Outcome:
        internals = self._agent
        if generated_code_running():
            # Library code handed a raw agent (json.dump(data, agent) calls agent.write) would
            # make LLM calls outside the forwarded-call budget and the handle boundary.
            raise GuardrailViolationError(
                f"Generated code called {internals.role}.{name} directly; agents are reachable "
                "only through tool()/delegate() handles",
                subtype="unforwarded_agent_call",
                correction="call other agents only through handles returned by tool('name') or "
                "delegate('name', ...); never pass an agent to library functions",
            )
        # No lock is held while the call runs: the attempt works on its own journal view and
        # the lifecycle takes the lock only to commit and to append history (ADR 0027), so
        # agents calling each other from two threads cannot deadlock.
        return run_call(self._runtime(), name, tuple(args), dict(kwargs))

    # ----------------------------------------------------------------- runtime wiring

    def _runtime(self) -> AgentRuntime:
        internals = self._agent
        if internals.runtime is None:
            internals.runtime = AgentRuntime(
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
            )
        return internals.runtime

    def _provider(self) -> Provider:
        internals = self._agent
        if internals.options.provider is not None:
            return internals.options.provider
        if internals.provider is None:
            internals.provider = route_provider(internals.options.model)
        return internals.provider

    def _ops(self, child: Agent, registered: str | None = None) -> HandleOps:
        """Handle operations on ``child``; calls through a registered tool update its usage."""
        parent_memory = self._agent.memory

        def call(method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Outcome:
            outcome = child._dispatch(method, args, kwargs)
            if registered is not None:
                record_tool_use(writable(parent_memory), registered, method, outcome.is_ok)
                touch_stored_tool(
                    self._agent.store, self._agent.memory, registered, method, ok=outcome.is_ok
                )
            return outcome

        def set_value(name: str, value: Any) -> None:
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

    def _remember_from_code(self, entries: Mapping[str, Any]) -> None:
        self.remember(**dict(entries))

    def _check_registry_write(self, entries: Mapping[str, Any], *, phase: str) -> None:
        if TOOLS_KEY not in entries:
            return
        violation = integrity_violation(
            {TOOLS_KEY: entries[TOOLS_KEY]}, phase=phase, role=self._agent.role, method=phase
        )
        if violation is not None:
            raise violation

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
        self, role: Any, options: Mapping[str, Any], invocation: _Invocation | None, *, api: str
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
        cached = self._cached_child(name, options)
        if cached is not None:
            return cached
        fields = {key: options.get(key) for key in CONTRACT_FIELDS}
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
        child = Agent(
            name,
            **child_options,
            **fields,
            delegation_contract=options.get("delegation_contract"),
        )
        # Inside this agent's attempt these write the attempt's view (they roll back with it).
        memory = writable(internals.memory)
        register_tool(memory, name, child._agent.options.contract)
        violation = integrity_violation(memory, phase="register", role=internals.role, method=api)
        if violation is not None:
            raise violation
        self._keep_child(name, options, child)
        return child

    def _tool(self, name: Any, options: Mapping[str, Any], invocation: _Invocation | None) -> Agent:
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
            known = ", ".join(sorted(map(str, tools))) if isinstance(tools, Mapping) else ""
            raise UsageError(
                f"Unknown tool {key!r} in {internals.role}.tool; known tools: {known or 'none'}"
            )
        merged = dict(options)
        for field_name in CONTRACT_FIELDS:
            if field_name not in merged and entry.get(field_name) is not None:
                merged[field_name] = entry[field_name]
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
        # The inferred intent signature differs per request and does not change the tool.
        return repr(sorted((k, repr(v)) for k, v in options.items() if k != "intent_signature"))

    def _cached_child(self, name: str, options: Mapping[str, Any] | None) -> Agent | None:
        """The child kept under ``name``, when it was made with the same ``options`` (any
        options when ``None``)."""
        kept = self._agent.children.get(name)
        if kept is None or (options is not None and kept[0] != self._child_key(options)):
            return None
        child = kept[1]
        register_tool(writable(self._agent.memory), name, child._agent.options.contract)
        # The attempt that made it may have been rolled back before its registration was written.
        self._store_registration(name, child, refresh=False)
        return child

    def _keep_child(self, name: str, options: Mapping[str, Any], child: Agent) -> None:
        self._agent.children[name] = (self._child_key(options), child)
        self._store_registration(name, child, refresh=True)
