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

The instance keeps everything in one underscored slot (an ``AgentState``), so the public
namespace is only ``for_``, ``prepare``, ``remember``, ``runtime_context``, ``delegate``,
``tool``, ``responds_to``, ``getdoc``, ``aio`` (the async view, ADR 0096), ``map`` and
``starmap`` (one program over many items, ADR 0110), ``role_profile``
and ``self_model`` (properties, ADRs 0083 and 0085) and the proposal methods (``propose``,
``proposals``, ``proposal``, ``approve_proposal``, ``reject_proposal``, ``apply_proposal``;
ADR 0086), which never reach a provider. Its bases hold the rest (ADR 0067): the agent's
parts, their wiring to the lifecycle and the checks on memory writes
(``_agent_wiring.AgentWiring``), and making, keeping and reaching child agents
(``_agent_children.ChildAgents``); ``map``/``starmap`` hand their items to
``_agent_map.map_items``.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, NoReturn, SupportsIndex, Unpack, cast

from recurgent._agent_map import map_items
from recurgent._agent_names import PROBE_NAMES, PUBLIC_NAMES, RESERVED_NAMES
from recurgent._agent_state import AgentState
from recurgent._agent_wiring import AgentWiring
from recurgent._aio import AsyncAgent
from recurgent._display import key_listing
from recurgent._governance._wiring import governance_of
from recurgent._lifecycle import run_call
from recurgent._option_types import AgentOptionsDict, DynamicAttribute, MapExecutorOption
from recurgent._options import parse_options
from recurgent._registry import TOOLS_KEY
from recurgent._sandbox import generated_code_running
from recurgent._self_model import self_model
from recurgent._worker._slot import Preparation
from recurgent.errors import (
    GuardrailViolationError,
    RecurgentError,
    UsageError,
)
from recurgent.outcome import Outcome
from recurgent.program import parse_program

__all__ = ["PROBE_NAMES", "RESERVED_NAMES", "Agent"]


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


class Agent(AgentWiring):
    """An object whose unknown methods are written by an LLM when first called.

    Args:
        role: What the agent is, in words ("calculator", "news assistant"). Prompts use it.
        **options: Keyword-only options (see the README's option table), typed by
            :class:`~recurgent._option_types.AgentOptionsDict`; an unknown option raises
            :class:`~recurgent.errors.UsageError`.

    Example::

        calc = Agent.for_("calculator")
        calc.value = 10          # memory write, no provider call
        outcome = calc.add(5)    # LLM writes the code; Outcome(ok, value=15)
    """

    __slots__ = ("_agent",)
    __recurgent_agent__ = True

    def __init__(self, role: str, **options: Unpack[AgentOptionsDict]) -> None:
        if not isinstance(role, str) or not role.strip():
            raise UsageError(f"role must be a non-empty str, got {role!r}")
        object.__setattr__(
            self, "_agent", AgentState(role=role.strip(), options=parse_options(options))
        )
        self._build_parts()

    @classmethod
    def for_(cls, role: str, **options: Unpack[AgentOptionsDict]) -> Agent:
        """Create an agent (the canonical constructor; ``Agent(role, ...)`` is the same)."""
        return cls(role, **options)

    @classmethod
    def prepare(
        cls,
        role: str,
        *,
        dependencies: list[Mapping[str, Any]],
        timeout_seconds: float | None = None,
        **options: Unpack[AgentOptionsDict],
    ) -> Preparation[Agent]:
        """Create an agent and build its dependency environment in the background.

        ``dependencies`` is a list of ``{"name", "version"}`` objects, checked at once against
        the manifest rules (``UsageError``) and later against ``dependency_policy``. The
        result's ``agent`` is usable at once; ``wait(timeout)`` and ``status`` follow the
        preparation, whose failure is ``environment_preparing`` (ADR 0042).
        ``on_ready(callback)`` calls ``callback(agent)`` once the environment is ready and
        ``on_error(callback)`` calls ``callback(outcome)`` with that error as an Outcome once it
        failed: at once when it already has, else from the preparation's thread; each returns
        the preparation, so they chain (ADR 0158). ``timeout_seconds``: wait up to that long
        before returning (the preparation may still be pending).
        """
        if timeout_seconds is not None and (
            type(timeout_seconds) not in (int, float)
            or not math.isfinite(timeout_seconds)
            or timeout_seconds < 0
        ):
            raise UsageError(
                f"timeout_seconds must be a number >= 0 or None, got {timeout_seconds!r}"
            )
        try:
            parse_program({"code": "pass", "dependencies": dependencies}, method_name="prepare")
        except RecurgentError as invalid:
            raise UsageError(f"dependencies: {invalid.message}") from None
        agent = cls(role, **options)
        slot = agent._agent.workers
        assert slot is not None
        ticket = slot.lane().prepare(dependencies, role=agent._agent.role)
        prepared = Preparation(agent, ticket, role=agent._agent.role)
        if timeout_seconds is not None:
            prepared.wait(timeout_seconds)
        return prepared

    # ----------------------------------------------------------------- public surface

    @property
    def runtime_context(self) -> dict[str, Any]:
        """The agent's live memory dict."""
        return self._agent.memory

    @property
    def role_profile(self) -> dict[str, Any] | None:
        """The active role profile (a copy), or ``None`` (ADR 0083).

        Set with the ``role_profile=``/``role_profile_version=`` options or an applied
        proposal; kept per role in the tool store's ``role_profiles.json``.
        """
        profiles = self._agent.profiles
        return profiles.active_copy() if profiles is not None else None

    @property
    def self_model(self) -> dict[str, Any] | None:
        """What the agent knows about itself (ADR 0085): ``awareness_level`` (``l1``/``l2``/
        ``l3``), ``authority``, the active contract and role-profile versions and the snapshot
        refs of its last call; ``None`` when ``self_model_capture_enabled`` is off."""
        internals = self._agent
        settings = internals.options.settings
        if not settings.self_model_capture_enabled:
            return None
        profiles = internals.profiles
        return self_model(
            settings,
            internals.options.contract,
            profiles.active_version() if profiles is not None else None,
            internals.self_model.last,
        )

    @property
    def aio(self) -> AsyncAgent:
        """The async view of this agent: ``await agent.aio.method(...)`` runs the call without
        blocking the event loop; same memory, log and Outcome (ADR 0096)."""
        return AsyncAgent(self)

    def map(
        self,
        method: str,
        items: Iterable[Any],
        /,
        *,
        executor: MapExecutorOption = None,
        batch_size: int | None = None,
        concurrency: int | None = None,
        progress: bool = False,
        timeout_seconds: float | None = None,
    ) -> list[Outcome]:
        """Call ``method(item)`` for every item with one program; one Outcome per item, in order.

        The program is obtained once, by the first item's ordinary call (stored, repaired or
        generated); concurrent maps of the method share it. The other items run it in batches
        on ``executor`` (``"in_process"``, ``"process"`` or ``"ray"``; ``None``: as an ordinary
        call would), each its own attempt with its own deadline (``timeout_seconds``, default
        the agent's ``execution_timeout_seconds``) against a read-only snapshot of memory. A
        failed item is its error Outcome; a program that fails on many items is repaired once.
        ``progress=True`` shows a bar on stderr. The log gets one summary line (ADRs 0110-0113).

        Raises:
            UsageError: a bad argument, an executor that cannot be used (Ray not installed),
                items that cannot reach it, or a program needing what it cannot serve.
        """
        return map_items(
            self, method, items, False, executor, batch_size, concurrency, progress, timeout_seconds
        )

    def starmap(
        self,
        method: str,
        items: Iterable[Iterable[Any]],
        /,
        *,
        executor: MapExecutorOption = None,
        batch_size: int | None = None,
        concurrency: int | None = None,
        progress: bool = False,
        timeout_seconds: float | None = None,
    ) -> list[Outcome]:
        """:meth:`map`, calling ``method(*item)``: each item is the call's positional arguments."""
        return map_items(
            self, method, items, True, executor, batch_size, concurrency, progress, timeout_seconds
        )

    def remember(self, /, **entries: Any) -> Agent:
        """Write entries into memory and return the same agent.

        Raises:
            GuardrailViolationError: the entries would put executable objects in ``tools``;
                nothing is written then.
        """
        self._check_registry_write(entries, phase="remember")
        self._check_crossing(entries)
        self._agent.memory.update(entries)
        self._observe_setters(list(entries))
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
        return name in self._agent.memory or name in PUBLIC_NAMES

    def delegate(self, role: str, **options: Unpack[AgentOptionsDict]) -> Agent:
        """Create a child agent (a tool) that inherits this agent's settings.

        Contract fields (``purpose``, ``deliverable``, ``acceptance``, ``failure_policy``,
        ``intent_signature``, ``delegation_contract``) describe the child's job; runtime options
        override inherited ones; other options are ignored (a warning in debug mode). The child
        is recorded in ``runtime_context["tools"]``. Called by host code on an agent the host
        built, the child is the host's: it never answers from a program stored for an agent
        generated code made (ADR 0074).

        Raises:
            GuardrailViolationError: ``role`` is this agent's own role.
            BudgetExceededError: this agent has no delegation budget left.
        """
        return self._delegate(role, options, None, api="delegate")

    def tool(self, name: str, **options: Unpack[AgentOptionsDict]) -> Agent:
        """Materialize a tool recorded in ``runtime_context["tools"]`` again, with its contract.

        The tool kept under ``name`` is returned as it is; a tool built anew is the program's
        (the registry is written by generated code too), so it runs any stored program of its
        role with no request (ADR 0074).

        Raises:
            UsageError: no tool of that name is recorded.
        """
        return self._tool(name, options, None)

    # ----------------------------------------------------------------- proposals (ADR 0086)

    def propose(
        self,
        /,
        proposal_type: str,
        *,
        target: Any = None,
        proposed_diff_summary: str = "",
        evidence_refs: Sequence[str] = (),
        metadata: Mapping[str, Any] | None = None,
    ) -> Outcome:
        """Record a proposal (status ``proposed``); the Outcome's value is the record, whose
        ``id`` is ``prop-`` and 16 hex digits. Anyone may propose; no provider is asked.

        Raises:
            UsageError: a blank ``proposal_type``, or a field that is not JSON data or is over
                its bound.
        """
        return governance_of(self._agent).propose(
            proposal_type,
            target=target,
            proposed_diff_summary=proposed_diff_summary,
            evidence_refs=evidence_refs,
            metadata=metadata,
        )

    def proposals(self, /, status: str | None = None, limit: int | None = None) -> Outcome:
        """The proposals (a list, oldest first), only those with ``status``, the last ``limit``."""
        return governance_of(self._agent).proposals(status=status, limit=limit)

    def proposal(self, proposal_id: str, /) -> Outcome:
        """One proposal's record, or the ``not_found`` error Outcome."""
        return governance_of(self._agent).proposal(proposal_id)

    def approve_proposal(
        self, proposal_id: str, /, *, actor: str | None = None, note: str | None = None
    ) -> Outcome:
        """Approve a proposed proposal; ``actor`` (default: the OS user) must be a maintainer
        (``authority_denied`` otherwise; ADR 0087)."""
        return governance_of(self._agent).approve(proposal_id, actor=actor, note=note)

    def reject_proposal(
        self, proposal_id: str, /, *, actor: str | None = None, note: str | None = None
    ) -> Outcome:
        """Reject a proposed or approved proposal (maintainers only, as ``approve_proposal``)."""
        return governance_of(self._agent).reject(proposal_id, actor=actor, note=note)

    def apply_proposal(
        self, proposal_id: str, /, *, actor: str | None = None, note: str | None = None
    ) -> Outcome:
        """Apply an approved proposal: ``role_profile_update`` and
        ``content_retention_policy_update`` change the runtime (ADR 0088); other types only
        become ``applied`` (maintainers only, as ``approve_proposal``)."""
        return governance_of(self._agent).apply(proposal_id, actor=actor, note=note)

    # ----------------------------------------------------------------- dispatch

    def __getattr__(self, name: str) -> DynamicAttribute:
        # Typed for users: a call of it returns an Outcome; as memory it is any value (ADR 0099).
        if name.startswith("_") or name in PROBE_NAMES:
            raise AttributeError(name)
        memory = self._agent.memory
        if name in memory:
            return cast("DynamicAttribute", memory[name])
        return cast("DynamicAttribute", _DynamicMethod(self, name))

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
        self._check_crossing({name: value})
        self._agent.memory[name] = value
        self._observe_setters([name])

    def __delattr__(self, name: str) -> None:
        if name.startswith("_") or name not in self._agent.memory:
            raise AttributeError(name)
        del self._agent.memory[name]

    def __dir__(self) -> list[str]:
        # Only a key that is a name can be read as an attribute; a key that is not a string may
        # be a tuple whose parts repeat, gigabytes as text (ADR 0142).
        memory_names = (
            key for key in list(self._agent.memory) if type(key) is str and key.isidentifier()
        )
        return sorted({*PUBLIC_NAMES, *(n for n in memory_names if n not in PROBE_NAMES)})

    def __repr__(self) -> str:
        return f"<Agent({self._agent.role}) context={key_listing(self._agent.memory)}>"

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

    def _dispatch(
        self,
        name: str,
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        *,
        from_program: bool = False,
    ) -> Outcome:
        """Run one dynamic call; ``from_program`` when generated code made it through a handle
        (then, as for an agent generated code built, the call is not the host's: ADR 0074)."""
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
        if from_program and name in RESERVED_NAMES:
            # Through a handle, a reserved name would become a method the model writes:
            # proposals, role profiles and the self model are the host's (ADR 0083).
            raise GuardrailViolationError(
                f"Generated code called {internals.role}.{name} through a handle; {name!r} is "
                "reserved by Agent and is never a dynamic method",
                subtype="reserved_agent_method",
                correction=f"do not call {name} on a tool()/delegate() handle: call its other "
                "methods, read its memory as handle.key and write it with handle.key = value "
                "or handle.remember(...); proposals, role_profile and self_model belong to the "
                "host program",
            )
        # No lock is held while the call runs: the attempt works on its own journal view and
        # the lifecycle takes the lock only to commit and to append history (ADR 0027), so
        # agents calling each other from two threads cannot deadlock.
        host_call = not (from_program or internals.built_by_program)
        return run_call(self._runtime(), name, tuple(args), dict(kwargs), host_call=host_call)
