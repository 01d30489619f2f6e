"""``<root>/role_profiles.json``: the versions of each role's profile and which one is active
(ADR 0083).

The file is ``{"schema_version": 1, "roles": {role: {"role", "active_version", "versions":
{"<n>": profile}, "history": [...], "updated_at"}}}``, the original's layout. Every change is a
merge-on-write under the file's lock (:func:`~recurgent._store._files.update_json`), so processes
publishing at once lose nothing; a corrupt file is moved aside (``.corrupt-<stamp>``) and read as
empty; a file of another schema version is neither read nor overwritten. Profiles read back are
checked like the ``role_profile=`` option (the file is untrusted input, ADR 0070): a version that
fails the check is skipped, never used.

This is the API the proposals room calls to apply a ``role_profile_update``::

    registry = RoleProfileRegistry(root)
    registry.publish(profile, actor="ana", proposal_id="prop-...")  # and make it active
    registry.activate("calculator", 2, actor="ana")
    registry.rollback("calculator", actor="ana")      # back to the version active before
    registry.active("calculator")                    # the active profile, or None
"""

from __future__ import annotations

import datetime
import itertools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recurgent._forksafe import fork_safe_lock
from recurgent._os_user import os_user_name
from recurgent._profiles._model import normalize_profile, normalize_version
from recurgent._store._cache import IdentityCache
from recurgent._store._files import SCHEMA_VERSION, Loaded, quarantine, read_json, update_json
from recurgent._values import utc_timestamp
from recurgent.errors import UsageError

__all__ = [
    "HISTORY_KEPT",
    "VERSIONS_KEPT",
    "RoleProfileRegistry",
    "RoleProfiles",
    "changes",
    "current_actor",
    "role_profiles_path",
]

#: History events kept per role (the newest), as the original.
HISTORY_KEPT = 200
#: Versions kept per role: publishing past it drops the oldest versions that are not active.
VERSIONS_KEPT = 64
_NOTE_CHARS = 1000
_FIELD_CHARS = 200

Clock = Callable[[], datetime.datetime]

_generation = itertools.count(1)
_generation_lock = fork_safe_lock()
_current_generation = 0


def changes() -> int:
    """A number that grows whenever this process changes a ``role_profiles.json``: agents
    compare it to know when to read their role's profile again."""
    return _current_generation


def _bump() -> None:
    global _current_generation
    with _generation_lock:
        _current_generation = next(_generation)


def current_actor() -> str:
    """The OS user (the original's ``$USER``), ``unknown`` when there is none."""
    return os_user_name() or "unknown"


def role_profiles_path(root: Path) -> Path:
    """``<root>/role_profiles.json``."""
    return Path(root) / "role_profiles.json"


@dataclass(frozen=True, slots=True)
class RoleProfiles:
    """One role's profiles as read (every version checked).

    Attributes:
        role: The role.
        versions: Each usable version's profile, by version.
        active_version: The active version: the recorded one when it is usable, else the
            highest (``None`` without versions).
        history: The recorded events, oldest first.
    """

    role: str
    versions: dict[int, dict[str, Any]] = field(default_factory=dict)
    active_version: int | None = None
    history: list[dict[str, Any]] = field(default_factory=list)

    @property
    def active(self) -> dict[str, Any] | None:
        """The active profile, or ``None``."""
        if self.active_version is None:
            return None
        return self.versions.get(self.active_version)


def _select_active(versions: Mapping[int, Any], preferred: Any) -> int | None:
    if not versions:
        return None
    wanted = normalize_version(preferred)
    return wanted if wanted is not None and wanted in versions else max(versions)


def _role_entry(role: str, raw: Any) -> RoleProfiles:
    if not isinstance(raw, Mapping):
        return RoleProfiles(role)
    versions: dict[int, dict[str, Any]] = {}
    stored = raw.get("versions")
    if isinstance(stored, Mapping):
        for key, profile in stored.items():
            version = normalize_version(key)
            if version is None:
                continue
            try:
                checked = normalize_profile(profile, expected_role=role)
            except UsageError:
                continue  # a damaged or foreign version is skipped, never used
            if checked["version"] == version:
                versions[version] = checked
    history = raw.get("history")
    events = (
        [dict(e) for e in history if isinstance(e, Mapping)] if isinstance(history, list) else []
    )
    return RoleProfiles(
        role, versions, _select_active(versions, raw.get("active_version")), events[-HISTORY_KEPT:]
    )


def _roles_of(loaded: Loaded) -> dict[str, Any]:
    roles = (loaded.data or {}).get("roles") if loaded.state == "ok" else None
    return roles if isinstance(roles, dict) else {}


def _text(value: Any, limit: int = _FIELD_CHARS) -> str | None:
    if value is None:
        return None
    text = str(value).strip()
    return text[:limit] if text else None


#: Files read in this process, valid while unchanged (ADR 0054).
_FILES: IdentityCache[dict[str, Any]] = IdentityCache(limit=64)


class RoleProfileRegistry:
    """The role profiles kept under one store root.

    Reads never raise (a missing, corrupt or unusable file reads as no profiles). Changes
    raise when the file cannot be written, so the caller (a proposal being applied) can say so.

    Args:
        root: The store directory.
        clock: Current UTC time for stamps (tests freeze it).
    """

    def __init__(self, root: Path, *, clock: Clock | None = None) -> None:
        self.root = Path(root)
        self.path = role_profiles_path(self.root)
        self._clock = clock

    def __repr__(self) -> str:
        return f"RoleProfileRegistry({str(self.root)!r})"

    def _now(self) -> str:
        return utc_timestamp(self._clock() if self._clock is not None else None)

    # ----------------------------------------------------------------- reading

    def _roles(self) -> dict[str, Any]:
        cached = _FILES.get(self.path)
        if cached is not None:
            return cached
        moment = self._clock() if self._clock is not None else None
        loaded = read_json(self.path, now=moment, root=self.root)
        roles = _roles_of(loaded)
        stored = (loaded.data or {}).get("roles", {}) if loaded.state == "ok" else {}
        if not isinstance(stored, dict):
            # roles that is not an object: the file is damaged; keep a copy, read as empty.
            quarantine(self.path, expected=loaded.raw, now=moment)
        _FILES.put(self.path, loaded.identity if loaded.state == "ok" else None, roles)
        return roles

    def get(self, role: str) -> RoleProfiles:
        """Everything recorded for ``role`` (empty when nothing is)."""
        return _role_entry(role, self._roles().get(role))

    def roles(self) -> list[str]:
        """Every role with at least one usable version, sorted."""
        return sorted(name for name in self._roles() if self.get(name).versions)

    def active(self, role: str) -> dict[str, Any] | None:
        """The active profile of ``role`` (a copy), or ``None``."""
        return self.get(role).active

    def active_version(self, role: str) -> int | None:
        """The active version of ``role``, or ``None``."""
        return self.get(role).active_version

    def versions(self, role: str) -> dict[int, dict[str, Any]]:
        """Every usable version of ``role``, by version."""
        return self.get(role).versions

    def history(self, role: str) -> list[dict[str, Any]]:
        """The recorded events of ``role``, oldest first (at most :data:`HISTORY_KEPT`)."""
        return self.get(role).history

    # ----------------------------------------------------------------- changing

    def publish(
        self,
        profile: Mapping[str, Any],
        *,
        actor: str | None = None,
        proposal_id: str | None = None,
        note: str | None = None,
        activate: bool = True,
        source: str = "runtime",
    ) -> dict[str, Any]:
        """Store ``profile`` as its version of its role (replacing a version of that number)
        and, unless ``activate`` is false, make it the active one (the original's
        ``publish_and_activate``; ``activate=False`` is its ``publish_only``, and even then a
        role's first version becomes active). Publishing the version already stored, unchanged
        (and, with ``activate``, already active) writes nothing.

        Returns:
            The profile as stored (checked and normalized).

        Raises:
            UsageError: the profile is malformed.
            OSError: the file cannot be written (locked too long, unwritable, untrusted,
                another schema version).
        """
        checked = normalize_profile(profile)
        role, version = checked["role"], checked["version"]

        def edit(current: RoleProfiles) -> tuple[dict[int, dict[str, Any]], int | None] | None:
            versions = dict(current.versions)
            unchanged = versions.get(version) == checked
            if unchanged and (not activate or current.active_version == version):
                return None
            versions[version] = checked
            preferred = version if activate else current.active_version
            return versions, _select_active(versions, preferred)

        self._change(role, "publish", version, edit, actor, proposal_id, note, source)
        return checked

    def activate(
        self,
        role: str,
        version: int,
        *,
        actor: str | None = None,
        proposal_id: str | None = None,
        note: str | None = None,
        source: str = "runtime",
        event: str = "activate",
    ) -> dict[str, Any]:
        """Make ``version`` the active profile of ``role``.

        Returns:
            The now active profile.

        Raises:
            UsageError: ``version`` is not a stored version of ``role``.
            OSError: the file cannot be written.
        """
        wanted = normalize_version(version)
        if wanted is None:
            raise UsageError(f"role_profile version must be an int >= 1, got {version!r}")

        def edit(current: RoleProfiles) -> tuple[dict[int, dict[str, Any]], int | None] | None:
            if wanted not in current.versions:
                known = ", ".join(map(str, sorted(current.versions))) or "none"
                raise UsageError(
                    f"role_profile version {wanted} not found for role {role!r}; "
                    f"stored versions: {known}"
                )
            return dict(current.versions), wanted

        entry = self._change(role, event, wanted, edit, actor, proposal_id, note, source)
        active = entry.active
        assert active is not None
        return active

    def rollback(
        self,
        role: str,
        version: int | None = None,
        *,
        actor: str | None = None,
        proposal_id: str | None = None,
        note: str | None = None,
        source: str = "runtime",
    ) -> dict[str, Any]:
        """Make an earlier version active again: ``version``, or (without one) the version
        that was active before the current one, per the history.

        Raises:
            UsageError: no such version, or no earlier active version to go back to.
            OSError: the file cannot be written.
        """
        if version is None:
            version = self._previous(role)
        return self.activate(
            role,
            version,
            actor=actor,
            proposal_id=proposal_id,
            note=note,
            source=source,
            event="rollback",
        )

    def _previous(self, role: str) -> int:
        entry = self.get(role)
        current = entry.active_version
        for event in reversed(entry.history):
            candidate = normalize_version(event.get("active_version"))
            if candidate is not None and candidate != current and candidate in entry.versions:
                return candidate
        raise UsageError(
            f"role {role!r} has no earlier active role_profile version to roll back to"
        )

    def _change(
        self,
        role: str,
        event: str,
        version: int,
        edit: Callable[[RoleProfiles], tuple[dict[int, dict[str, Any]], int | None] | None],
        actor: str | None,
        proposal_id: str | None,
        note: str | None,
        source: str,
    ) -> RoleProfiles:
        now = self._now()
        result: list[RoleProfiles] = []

        def change(loaded: Loaded) -> dict[str, Any] | None:
            data = dict(loaded.data or {})
            roles = data.get("roles")
            if not isinstance(roles, dict):
                if roles is not None:
                    quarantine(self.path, expected=loaded.raw)
                    data = {}
                roles = {}
            current = _role_entry(role, roles.get(role))
            edited = edit(current)
            if edited is None:
                result.append(current)
                return None
            versions, active = edited
            versions = _bounded(versions, active)
            record: dict[str, Any] = {
                "event": event,
                "version": version,
                "active_version": active,
                "source": _text(source) or "runtime",
                "actor": _text(actor) or current_actor(),
                "at": now,
            }
            if _text(proposal_id) is not None:
                record["proposal_id"] = _text(proposal_id)
            if _text(note, _NOTE_CHARS) is not None:
                record["note"] = _text(note, _NOTE_CHARS)
            history = [*current.history, record][-HISTORY_KEPT:]
            roles = {**roles}
            roles[role] = {
                "role": role,
                "active_version": active,
                "versions": {str(v): versions[v] for v in sorted(versions)},
                "history": history,
                "updated_at": now,
            }
            result.append(RoleProfiles(role, versions, active, history))
            return {
                "schema_version": SCHEMA_VERSION,
                "roles": roles,
                **{k: v for k, v in data.items() if k not in ("schema_version", "roles")},
            }

        moment = self._clock() if self._clock is not None else None
        updated = update_json(self.path, change, root=self.root, now=moment)
        if updated.skipped is not None and updated.skipped != "no_change":
            raise OSError(f"{self.path} was not written: {updated.skipped}")
        if updated.written:
            _FILES.drop(self.path)
            _bump()
        return result[-1]


def _bounded(versions: dict[int, dict[str, Any]], active: int | None) -> dict[int, dict[str, Any]]:
    if len(versions) <= VERSIONS_KEPT:
        return versions
    dropped = [v for v in sorted(versions) if v != active][: len(versions) - VERSIONS_KEPT]
    return {v: p for v, p in versions.items() if v not in dropped}
