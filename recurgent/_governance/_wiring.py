"""An agent's proposals desk: made on first use and kept in its state (ADRs 0086, 0088).

An agent with a tool store shares ``<root>/proposals.json`` (and, through the role-profile
registry, ``role_profiles.json``) with every process using that root. An agent with no store
(``toolstore_root=None``) keeps its proposals, and its own role's profiles, in memory for as long
as it lives: the whole flow works in a test or a notebook, and nothing is written.
"""

from __future__ import annotations

from dataclasses import replace

from recurgent._agent_state import AgentState
from recurgent._content_store import ContentRetention
from recurgent._governance._desk import Governance
from recurgent._governance._proposals import FileBook, MemoryBook, ProposalBook
from recurgent._governance._role_profiles import AppliedRoleProfiles
from recurgent._runtime_config import RuntimeSettings
from recurgent._sandbox import generated_code_running
from recurgent.errors import GuardrailViolationError
from recurgent.providers._identity import is_test_double

__all__ = ["governance_of"]


def governance_of(state: AgentState) -> Governance:
    """The desk of the agent whose state is ``state``.

    Raises:
        GuardrailViolationError: generated code is running (proposals are the host's: a
            program never proposes or decides, whatever object reached it).
    """
    if generated_code_running():
        raise GuardrailViolationError(
            f"Generated code reached {state.role}'s proposals; proposals and their decisions "
            "belong to the host program",
            subtype="unforwarded_agent_call",
            correction="do not call propose/approve_proposal/apply_proposal or read proposals "
            "from generated code",
        )
    desk = state.governance
    if desk is None:
        with state.lock:
            desk = state.governance
            if desk is None:
                desk = state.governance = _desk(state)
    return desk


def _desk(state: AgentState) -> Governance:
    # The agent's store decides, not the option alone: an agent that persists nothing (no
    # root, or one the runtime chose not to open) writes no proposals either.
    root = state.store.root if state.store is not None else None
    book: ProposalBook = MemoryBook() if root is None else FileBook(root)
    # The agent's own role changes through its binding (it sees the change at its next call);
    # other roles through the store's registry, refused without a store (ADR 0088).
    registry = AppliedRoleProfiles(root, state.profiles)

    def install(settings: RuntimeSettings) -> None:
        with state.lock:
            state.options = replace(state.options, settings=settings)
            # The lifecycle's view of the agent holds the options too; the rest of it (history
            # cursor, lock) is kept.
            if state.runtime is not None:
                state.runtime = replace(state.runtime, options=state.options)
        # A lowered bound drops the answers past it now: a read applies only the age limit,
        # so a program could read them until the next call's write (red team R15).
        state.content.enforce(ContentRetention.from_settings(settings))

    return Governance(
        book=book,
        role=state.role,
        author={
            "role": state.role,
            # A test double wrote nothing under the model option's name (ADR 0077): no model.
            "model": None if is_test_double(state.options.provider) else state.options.model,
            "trace_id": state.options.trace_id,
        },
        settings=lambda: state.options.settings,
        install_settings=install,
        role_profiles=registry,
    )
