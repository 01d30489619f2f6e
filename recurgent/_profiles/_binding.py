"""One agent's role profile: which profile is active for it, and what it saw its methods do
(ADR 0083).

Built with the agent. The ``role_profile=`` option publishes its profile to the store's
registry and makes it active, and ``role_profile_version=`` activates a stored version, as the
original does, so every later agent of the role (in any process) starts from them. Without a
store (``toolstore_root=None``) or when the registry cannot be written, the option's profile is
held in memory for this agent only. An agent reads its role's active profile again whenever
this process changed a ``role_profiles.json`` (an applied proposal, another agent's option);
a change made by another process reaches the agents built after it.

:meth:`ProfileBinding.publish`, :meth:`~ProfileBinding.activate` and
:meth:`~ProfileBinding.rollback` change the agent's role profile the same way (an applied
``role_profile_update`` proposal uses them, with ``hold_if_refused=False``: a store that refuses
the write fails the proposal instead of holding the change for this agent alone); with a store
they go through :class:`~recurgent._profiles._registry.RoleProfileRegistry`. A rollback without
a version goes to the most recent other version active before, as the registry's does, with or
without a store.

The observation cache keeps, per profile kind, the last value each method showed in this agent
(and what setters wrote: ``agent.x = v`` shows method ``x=`` using key ``x``); the guard
compares a call with it and with the store's telemetry.
"""

from __future__ import annotations

import copy
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from recurgent._forksafe import fork_safe_lock
from recurgent._history import HISTORY_KEY
from recurgent._profiles._model import (
    constraint_applies,
    normalize_profile,
    normalize_version,
)
from recurgent._profiles._registry import HISTORY_KEPT, RoleProfileRegistry, changes
from recurgent._registry import TOOLS_KEY
from recurgent.errors import UsageError

__all__ = ["ProfileBinding"]

_OBSERVED_KEPT = 256
_KINDS = ("shared_state_slot", "return_shape_family", "signature_family")


class ProfileBinding:
    """The active role profile of one agent and its observation cache.

    Args:
        role: The agent's role.
        root: Its store root, or ``None`` when persistence is off.
        profile: The ``role_profile=`` option, if given.
        version: The ``role_profile_version=`` option, if given.

    Raises:
        UsageError: the profile is malformed or for another role, or the version is not an
            int >= 1 or not stored for the role.
    """

    __slots__ = (
        "_active",
        "_history",
        "_lock",
        "_memory",
        "_observed",
        "_pinned",
        "_registry",
        "_seen",
        "role",
    )

    def __init__(
        self, role: str, root: Path | None, *, profile: Any = None, version: Any = None
    ) -> None:
        self.role = role
        self._lock = fork_safe_lock()
        self._observed: dict[str, dict[str, str]] = {kind: {} for kind in _KINDS}
        # Versions held in memory (no store, or a store that refused them) and the active one
        # among them, which then wins over the registry's.
        self._memory: dict[int, dict[str, Any]] = {}
        self._pinned: int | None = None
        self._history: list[int] = []
        self._active: dict[str, Any] | None = None
        self._seen = -1
        self._registry = RoleProfileRegistry(root) if root is not None else None
        if profile is not None:
            self.publish(profile, activate=True, source="initialize_option")
        if version is not None:
            self.activate(version, source="initialize_option")

    # ----------------------------------------------------------------- changing

    def _pin(self, version: int) -> None:
        self._pinned = version
        self._history = [*self._history, version][-HISTORY_KEPT:]

    def _earlier_held(self, current: int) -> int | None:
        """The most recent held version active before ``current`` (the registry's rule)."""
        for version in reversed(self._history):
            if version != current and version in self._memory:
                return version
        return None

    def publish(
        self,
        profile: Any,
        *,
        activate: bool = True,
        actor: str | None = None,
        proposal_id: str | None = None,
        note: str | None = None,
        source: str = "runtime",
        hold_if_refused: bool = True,
    ) -> dict[str, Any]:
        """Publish a profile of this agent's role (and make it active unless ``activate`` is
        false): to the store's registry, or held in memory when there is no store or (unless
        ``hold_if_refused`` is false) it refuses the write.

        Raises:
            UsageError: the profile is malformed or for another role.
            OSError: the store refused the write and ``hold_if_refused`` is false.
        """
        checked = normalize_profile(profile, expected_role=self.role)
        version = checked["version"]
        if self._registry is not None:
            try:
                self._registry.publish(
                    checked,
                    activate=activate,
                    actor=actor,
                    proposal_id=proposal_id,
                    note=note,
                    source=source,
                )
            except OSError:
                if not hold_if_refused:
                    raise
                # held in memory below
            else:
                if activate:
                    self._pinned = None
                self._memory.pop(version, None)
                return checked
        self._memory[version] = checked
        if activate or (self._pinned is None and self._registry is None):
            self._pin(version)
        return checked

    def activate(
        self,
        version: Any,
        *,
        actor: str | None = None,
        proposal_id: str | None = None,
        note: str | None = None,
        source: str = "runtime",
        event: str = "activate",
        hold_if_refused: bool = True,
    ) -> dict[str, Any]:
        """Make a published version of this agent's role active.

        Raises:
            UsageError: ``version`` is not an int >= 1, or no such version is known.
            OSError: the store refused the write and ``hold_if_refused`` is false.
        """
        wanted = normalize_version(version)
        if wanted is None:
            raise UsageError(f"role_profile_version must be an int >= 1, got {version!r}")
        stored = self._registry.versions(self.role) if self._registry is not None else {}
        if wanted in stored and self._registry is not None:
            try:
                self._registry.activate(
                    self.role,
                    wanted,
                    actor=actor,
                    proposal_id=proposal_id,
                    note=note,
                    source=source,
                    event=event,
                )
            except OSError:
                if not hold_if_refused:
                    raise
                self._memory[wanted] = stored[wanted]
            else:
                self._pinned = None
                return stored[wanted]
        if wanted not in self._memory:
            known = ", ".join(map(str, sorted({*stored, *self._memory}))) or "none"
            where = "stored" if self._registry is not None else "held (no tool store)"
            raise UsageError(
                f"role_profile_version {wanted} not found for role {self.role!r}; "
                f"versions {where}: {known}"
            )
        self._pin(wanted)
        return self._memory[wanted]

    def rollback(
        self,
        version: Any = None,
        *,
        actor: str | None = None,
        proposal_id: str | None = None,
        note: str | None = None,
        source: str = "runtime",
        hold_if_refused: bool = True,
    ) -> dict[str, Any]:
        """Make an earlier version active again: ``version``, else the most recent other
        version active before the current one (so two rollbacks in a row come back, as the
        registry's do).

        Raises:
            UsageError: no such version, or nothing to roll back to.
            OSError: the store refused the write (and ``hold_if_refused`` is false, when a
                version is named).
        """
        if version is None and self._pinned is not None:
            version = self._earlier_held(self._pinned)
        if version is None and self._registry is not None:
            active = self._registry.rollback(
                self.role, actor=actor, proposal_id=proposal_id, note=note, source=source
            )
            self._pinned = None
            return active
        if version is None:
            raise UsageError(
                f"role {self.role!r} has no earlier active role_profile version to roll back to"
            )
        return self.activate(
            version,
            actor=actor,
            proposal_id=proposal_id,
            note=note,
            source=source,
            event="rollback",
            hold_if_refused=hold_if_refused,
        )

    # ----------------------------------------------------------------- reading

    def active(self) -> dict[str, Any] | None:
        """The active profile (shared: read it, never change it), or ``None``."""
        if self._pinned is not None:
            return self._memory[self._pinned]
        if self._registry is None:
            return None
        seen = changes()
        if seen != self._seen:
            self._active = self._registry.active(self.role)
            self._seen = seen
        return self._active

    def active_copy(self) -> dict[str, Any] | None:
        """A copy of the active profile the caller may keep and change."""
        return copy.deepcopy(self.active())

    def active_version(self) -> int | None:
        """The active profile's version, or ``None``."""
        profile = self.active()
        return int(profile["version"]) if profile is not None else None

    # ----------------------------------------------------------------- observations

    def remember(self, method: str, values: Mapping[str, str | None]) -> None:
        """Keep what ``method`` showed in an accepted call, per kind."""
        with self._lock:
            for kind, value in values.items():
                if value is None or kind not in self._observed:
                    continue
                observed = self._observed[kind]
                observed.pop(method, None)
                observed[method] = value
                while len(observed) > _OBSERVED_KEPT:
                    del observed[next(iter(observed))]

    def observe_setter(self, names: list[str]) -> None:
        """``agent.x = v`` (or ``remember(x=v)``) shows method ``x=`` using state key ``x``,
        when a state-slot constraint of the active profile covers that method."""
        profile = self.active()
        if profile is None:
            return
        constraints = [
            c
            for c in (profile.get("constraints") or {}).values()
            if c.get("kind") == "shared_state_slot"
        ]
        for name in names:
            if name in (TOOLS_KEY, HISTORY_KEY):
                continue
            method = f"{name}="
            if any(constraint_applies(c, method) for c in constraints):
                self.remember(method, {"shared_state_slot": name})

    def seen(self, persisted: Mapping[str, Mapping[str, str]] | None) -> dict[str, dict[str, str]]:
        """By kind, each method's last known value: the store's telemetry, then what this agent
        saw (newer, so it wins)."""
        with self._lock:
            merged = {kind: dict((persisted or {}).get(kind, {})) for kind in _KINDS}
            for kind, observed in self._observed.items():
                merged[kind].update(observed)
        return merged
