"""AgentState: everything one Agent keeps, held in the facade's single underscored slot.

Kept in one record so the Agent's own namespace stays the short public surface of ADR 0001:
dynamic method names never collide with the agent's state.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from recurgent._content_store import ContentStore
from recurgent._forksafe import fork_safe_rlock
from recurgent._governance._desk import Governance
from recurgent._lifecycle import AgentRuntime
from recurgent._lifecycle._patterns import AgentPatterns
from recurgent._observability import CallLogger
from recurgent._options import AgentOptions
from recurgent._profiles import ProfileBinding
from recurgent._self_model import SelfModelSlot
from recurgent._store import Store
from recurgent._worker._slot import LaneSlot
from recurgent.providers import Provider

if TYPE_CHECKING:
    from recurgent._agent import Agent

__all__ = ["AgentState"]


@dataclass(slots=True)
class AgentState:
    """One agent's role, options, memory and the runtime parts built for it."""

    role: str
    options: AgentOptions
    # Who built the agent (ADR 0074): the host's own code, or generated code (a delegate/tool
    # call through a handle's bridge, or any agent such an agent built). Never changes.
    built_by_program: bool = False
    memory: dict[str, Any] = field(default_factory=dict)
    provider: Provider | None = None
    logger: CallLogger | None = None
    lock: threading.RLock = field(default_factory=fork_safe_rlock)
    runtime: AgentRuntime | None = None
    store: Store | None = None
    # Tools this agent materialized, by name: tool(name) hands back the same child, so the
    # memory a tool keeps (handle.x = v, its own programs' writes) is there at its next call.
    children: dict[str, tuple[str, Agent]] = field(default_factory=dict)
    # Children whose registration reached registry.json (only once an attempt committed it).
    stored_tools: set[str] = field(default_factory=set)
    workers: LaneSlot | None = None
    # Its proposals desk, made on first use (recurgent._governance._wiring).
    governance: Governance | None = None
    # Kept answers for content(ref) (ADR 0101): the agent's own, outliving a rebuilt runtime.
    content: ContentStore = field(default_factory=ContentStore)
    # Its pattern memory without a store, and its latest programs (ADR 0107).
    patterns: AgentPatterns = field(default_factory=AgentPatterns)
    # Its role profile and observations (ADR 0083), and its last captured call (ADR 0085).
    profiles: ProfileBinding | None = None
    self_model: SelfModelSlot = field(default_factory=SelfModelSlot)
