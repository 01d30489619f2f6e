"""Role-profile mutations an applied proposal makes: one contract, and the role-profile room
behind it (ADRs 0083, 0088).

:class:`RoleProfileMutations` is what ``apply_proposal`` needs from a role-profile registry:
publish a version (and maybe activate it), activate a version, roll back.
:class:`AppliedRoleProfiles` implements it on the role-profile room's own objects, so
``<root>/role_profiles.json`` has one writer,
:class:`~recurgent._profiles._registry.RoleProfileRegistry`:

* the applying agent's own role goes through the agent's
  :class:`~recurgent._profiles._binding.ProfileBinding`, so the agent uses the change from its
  next call; an agent with no store holds it in memory, as it holds its ``role_profile=``
  option;
* another role (named by the proposal, or every role from ``recurgent proposals apply``) goes
  to the registry under the store root; other agents of that role in this process see it at
  their next call, agents of other processes when they are built.

Every change is recorded in the role's history with ``source`` ``proposal_apply``, the actor,
the proposal id and the note. A profile or version the room refuses (its ``UsageError``) is a
``ValueError`` here; a store that cannot be written is an ``OSError`` (never held in memory
instead: a proposal applied only for one agent would say ``applied`` while every other agent,
and the next process, go on without it).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, Protocol

from recurgent._profiles import ProfileBinding, RoleProfileRegistry, normalize_profile

__all__ = [
    "SOURCE",
    "AppliedRoleProfiles",
    "RoleProfileChange",
    "RoleProfileMutations",
    "RoleProfileRefusal",
]

#: The ``source`` of the history events an applied proposal records (the original's).
SOURCE = "proposal_apply"


@dataclass(frozen=True, slots=True)
class RoleProfileChange:
    """What a role-profile mutation did.

    Attributes:
        role: The role whose profiles changed.
        active_version: The version active afterwards (``None`` when none is).
        published_version: The version published, for ``publish``.
        previous_active_version: The version active before.
    """

    role: str
    active_version: int | None
    published_version: int | None = None
    previous_active_version: int | None = None


class RoleProfileRefusal(ValueError):
    """The change cannot be made here (an ``invalid_proposal_payload``)."""


class RoleProfileMutations(Protocol):
    """The role-profile registry as ``apply_proposal`` uses it.

    Every method records ``actor``, ``proposal_id`` and ``note`` in the role's history (an
    agent with no store keeps no history: the proposal's record is its account). A profile or
    version the registry refuses raises :class:`ValueError` (the proposal's payload is then
    invalid, and nothing changed); a registry that cannot be read or written raises
    :class:`OSError`.
    """

    def publish(
        self,
        role: str,
        profile: Mapping[str, Any],
        *,
        activate: bool,
        actor: str,
        proposal_id: str,
        note: str | None,
    ) -> RoleProfileChange:
        """Store ``profile`` as its version of ``role`` (replacing one of the same version);
        make it the active one when ``activate`` (a role's first version is active anyway)."""
        ...

    def activate(
        self, role: str, version: int, *, actor: str, proposal_id: str, note: str | None
    ) -> RoleProfileChange:
        """Make the stored ``version`` of ``role`` the active one."""
        ...

    def rollback(
        self, role: str, version: int | None, *, actor: str, proposal_id: str, note: str | None
    ) -> RoleProfileChange:
        """Make ``version`` active again, or (``None``) the most recent other version active
        before the current one."""
        ...


class AppliedRoleProfiles:
    """:class:`RoleProfileMutations` over an agent's binding and the store's registry.

    Args:
        root: The store root, or ``None`` (an agent with no store).
        binding: The applying agent's binding, or ``None`` (the command line).
    """

    def __init__(self, root: Path | None, binding: ProfileBinding | None = None) -> None:
        self.root = root
        self.binding = binding

    def __repr__(self) -> str:
        role = self.binding.role if self.binding is not None else None
        return f"AppliedRoleProfiles(root={self.root!r}, role={role!r})"

    def _own(self, role: str) -> ProfileBinding | None:
        binding = self.binding
        return binding if binding is not None and binding.role == role else None

    def _registry(self, role: str) -> RoleProfileRegistry:
        if self.root is None:
            # Not retriable: this agent will never have a store, and its proposals live in its
            # memory, where no agent of the other role can apply them either.
            own = self.binding.role if self.binding is not None else None
            raise RoleProfileRefusal(
                f"this agent ({own!r}) has no tool store, so it changes only its own role's "
                f"profile; role {role!r} keeps its profiles in a tool store: propose this on an "
                "agent with a toolstore_root and apply it there or with recurgent proposals apply"
            )
        return RoleProfileRegistry(self.root)

    def publish(
        self,
        role: str,
        profile: Mapping[str, Any],
        *,
        activate: bool,
        actor: str,
        proposal_id: str,
        note: str | None,
    ) -> RoleProfileChange:
        if not isinstance(profile, Mapping):
            raise RoleProfileRefusal("a role profile must be a mapping")
        # A profile naming no role is for the role the proposal names.
        shaped = {"role": role, **{str(key): value for key, value in profile.items()}}
        own = self._own(role)
        if own is not None:
            before = own.active_version()
            published = own.publish(
                shaped,
                activate=activate,
                actor=actor,
                proposal_id=proposal_id,
                note=note,
                source=SOURCE,
                hold_if_refused=False,
            )
            return RoleProfileChange(role, own.active_version(), published["version"], before)
        registry = self._registry(role)
        checked = normalize_profile(shaped, expected_role=role)
        before = registry.active_version(role)
        registry.publish(
            checked,
            activate=activate,
            actor=actor,
            proposal_id=proposal_id,
            note=note,
            source=SOURCE,
        )
        return RoleProfileChange(role, registry.active_version(role), checked["version"], before)

    def activate(
        self, role: str, version: int, *, actor: str, proposal_id: str, note: str | None
    ) -> RoleProfileChange:
        return self._switch("activate", role, version, actor, proposal_id, note)

    def rollback(
        self, role: str, version: int | None, *, actor: str, proposal_id: str, note: str | None
    ) -> RoleProfileChange:
        return self._switch("rollback", role, version, actor, proposal_id, note)

    def _switch(
        self,
        action: Literal["activate", "rollback"],
        role: str,
        version: int | None,
        actor: str,
        proposal_id: str,
        note: str | None,
    ) -> RoleProfileChange:
        """Make ``version`` active, or go back to it (to the one before when ``None``): through
        the agent's own binding when the role is the agent's, so its guard sees the change at
        once, else in the registry on disk."""
        own = self._own(role)
        if own is not None:
            before = own.active_version()
            switch = own.activate if action == "activate" else own.rollback
            switch(
                version,
                actor=actor,
                proposal_id=proposal_id,
                note=note,
                source=SOURCE,
                hold_if_refused=False,
            )
            return RoleProfileChange(role, own.active_version(), None, before)
        registry = self._registry(role)
        before = registry.active_version(role)
        change = registry.activate if action == "activate" else registry.rollback
        change(
            role,
            version,  # type: ignore[arg-type]  # activate is only ever given a version
            actor=actor,
            proposal_id=proposal_id,
            note=note,
            source=SOURCE,
        )
        return RoleProfileChange(role, registry.active_version(role), None, before)
