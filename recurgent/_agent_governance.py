"""An agent's governance surface: its role profile, its self model and its proposals.

``role_profile`` (ADR 0083) and ``self_model`` (ADR 0085) are read-only properties; the six
proposal methods (``propose``, ``proposals``, ``proposal``, ``approve_proposal``,
``reject_proposal``, ``apply_proposal``; ADRs 0086-0088) hand the agent's proposals desk
(``_governance._wiring.governance_of``) its arguments. None reaches a provider, and all are
reserved names: generated code cannot call them through a handle, because they belong to the
host program (``Agent._dispatch``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from recurgent._agent_state import AgentState
from recurgent._governance._wiring import governance_of
from recurgent._self_model import self_model
from recurgent.outcome import Outcome

__all__ = ["AgentGovernance"]


class AgentGovernance:
    """The Agent facade's base: its role profile, self model and proposal methods.

    It adds no slot and has no ``__init__``: the state lives in the facade's one slot,
    ``_agent``, which :class:`~recurgent._agent.Agent` sets.
    """

    __slots__ = ()
    _agent: AgentState

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
