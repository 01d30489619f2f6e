"""Agent: turns unknown public attribute calls into dynamic calls run by the lifecycle (ADR 0001).

Dispatch rules:

* ``agent.x = v`` writes ``agent.runtime_context["x"]`` and calls no provider.
* ``agent.x`` returns ``runtime_context["x"]`` when that key exists, without a provider call.
* Any other public name is a callable; calling it performs a dynamic call returning an Outcome.
* Names starting with ``_`` raise ``AttributeError`` at once, so ``copy``, ``pickle``, IPython
  and mocks never reach a provider.
* ``str(agent)`` is ``repr(agent)``; copying or pickling an agent raises ``TypeError``.

The instance keeps everything in one underscored slot, so the public namespace is only
``for_``, ``remember``, ``runtime_context``, ``delegate``, ``tool`` and ``responds_to``.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, NoReturn, SupportsIndex

from recurgent._contracts import CONTRACT_FIELDS, infer_intent_signature
from recurgent._lifecycle import AgentRuntime, run_call
from recurgent._observability import CallLogger
from recurgent._options import KNOWN_OPTIONS, AgentOptions, parse_options
from recurgent._registry import TOOLS_KEY, integrity_violation, record_tool_use, register_tool
from recurgent._sandbox import HandleOps, generated_code_running
from recurgent._store import Store
from recurgent.errors import BudgetExceededError, GuardrailViolationError, UsageError
from recurgent.outcome import Outcome
from recurgent.providers import Provider, default_provider

__all__ = ["Agent"]

_Invocation = tuple[str, tuple[Any, ...], Mapping[str, Any]]
_PUBLIC = frozenset({"for_", "remember", "runtime_context", "delegate", "tool", "responds_to"})


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


class _DynamicMethod:
    """The callable ``agent.name`` returns for a name that is not in memory."""

    __slots__ = ("_agent", "_name")

    def __init__(self, agent: Agent, name: str) -> None:
        self._agent = agent
        self._name = name

    def __call__(self, *args: Any, **kwargs: Any) -> Outcome:
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
        if internals.options.log is not None:
            internals.logger = CallLogger(internals.options.log, debug=internals.options.debug)
        self._open_store()

    @classmethod
    def for_(cls, role: str, **options: Any) -> Agent:
        """Create an agent (the canonical constructor; ``Agent(role, ...)`` is the same)."""
        return cls(role, **options)

    # ----------------------------------------------------------------- public surface

    @property
    def runtime_context(self) -> dict[str, Any]:
        """The agent's live memory dict."""
        return self._agent.memory

    def remember(self, **entries: Any) -> Agent:
        """Write entries into memory and return the same agent.

        Raises:
            GuardrailViolationError: the entries would put executable objects in ``tools``;
                nothing is written then.
        """
        self._check_registry_write(entries, phase="remember")
        self._agent.memory.update(entries)
        return self

    def responds_to(self, name: object) -> bool:
        """Introspection: True for a setter name (``"x="``), a memory key, or a public method.

        A dynamic name that is not in memory answers False: ``hasattr`` cannot tell, because
        every public name returns a callable.
        """
        if not isinstance(name, str):
            return False
        if name.endswith("="):
            base = name[:-1]
            return bool(base) and not base.startswith("_")
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
        if name.startswith("_"):
            raise AttributeError(name)
        memory = self._agent.memory
        if name in memory:
            return memory[name]
        return _DynamicMethod(self, name)

    def __setattr__(self, name: str, value: Any) -> None:
        if name.startswith("_"):
            raise AttributeError(f"cannot set private attribute {name!r} on an Agent")
        if name == TOOLS_KEY:
            self._check_registry_write({name: value}, phase="setter")
        self._agent.memory[name] = value

    def __delattr__(self, name: str) -> None:
        if name.startswith("_") or name not in self._agent.memory:
            raise AttributeError(name)
        del self._agent.memory[name]

    def __dir__(self) -> list[str]:
        return sorted({*_PUBLIC, *map(str, self._agent.memory)})

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
        with internals.lock:
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
                store=internals.store,
            )
        return internals.runtime

    def _provider(self) -> Provider:
        internals = self._agent
        if internals.options.provider is not None:
            return internals.options.provider
        if internals.provider is None:
            internals.provider = default_provider()
        return internals.provider

    def _ops(self, child: Agent, registered: str | None = None) -> HandleOps:
        """Handle operations on ``child``; calls through a registered tool update its usage."""
        parent_memory = self._agent.memory

        def call(method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Outcome:
            outcome = child._dispatch(method, args, kwargs)
            if registered is not None:
                record_tool_use(parent_memory, registered, method, outcome.is_ok)
                self._touch_stored_tool(registered, method, outcome.is_ok)
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
        if "provider" not in options and internals.options.provider is None and internals.provider:
            child_options["provider"] = internals.provider
        child = Agent(
            name,
            **child_options,
            **fields,
            delegation_contract=options.get("delegation_contract"),
        )
        register_tool(internals.memory, name, child._agent.options.contract)
        violation = integrity_violation(
            internals.memory, phase="register", role=internals.role, method=api
        )
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
        tools = internals.memory.get(TOOLS_KEY)
        entry = tools.get(key) if isinstance(tools, Mapping) else None
        if not isinstance(entry, Mapping) and self._hydrate_tools():
            # Another agent or process may have registered it since this agent was built.
            tools = internals.memory.get(TOOLS_KEY)
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
        """Merge the persisted registry into ``context["tools"]`` (memory wins for scalars);
        False when there is nothing persisted to merge."""
        internals = self._agent
        store = internals.store
        if store is None:
            return False
        persisted = store.registry_entries()
        if not persisted:
            return False
        current = internals.memory.get(TOOLS_KEY)
        if current is not None and not isinstance(current, Mapping):
            return False  # a broken registry is the integrity guard's to report
        merged = store.known_tools(current)
        if isinstance(current, dict):
            # In place: a running program may hold this very dict as context["tools"].
            current.update(merged)
        else:
            internals.memory[TOOLS_KEY] = merged
        return True

    def _touch_stored_tool(self, name: str, method: str, ok: bool) -> None:
        store = self._agent.store
        if store is not None:
            store.touch_tool(name, method, ok=ok)

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
        register_tool(self._agent.memory, name, child._agent.options.contract)
        return child

    def _keep_child(self, name: str, options: Mapping[str, Any], child: Agent) -> None:
        internals = self._agent
        internals.children[name] = (self._child_key(options), child)
        if internals.store is not None:
            internals.store.register_tool(name, child._agent.options.contract)
