"""Role-profile mutations an applied proposal makes, behind one small contract (ADR 0088).

:class:`RoleProfileMutations` is what ``apply_proposal`` needs from a role-profile registry:
publish a version (and maybe activate it), activate a version, roll back. Whatever registry
the runtime uses implements it; :func:`~recurgent._governance._wiring.governance_of` picks it.

:class:`FileRoleProfiles` and :class:`MemoryRoleProfiles` are a minimal registry behind that
contract, in the original's file format (``<root>/role_profiles.json`` is ``{"schema_version":
1, "roles": {role: {"role", "active_version", "versions": {"<n>": profile}, "history": [...],
"updated_at"}}}``). They check a profile's shape only as far as they must (a role, a version,
a ``constraints`` mapping); the full profile rules belong to the role-profile room.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from recurgent._governance._proposals import encoded_size
from recurgent._store._files import SCHEMA_VERSION, Loaded, quarantine, update_json
from recurgent._values import utc_timestamp

__all__ = [
    "HISTORY_KEPT",
    "PROFILE_BYTES",
    "FileRoleProfiles",
    "MemoryRoleProfiles",
    "RoleProfileChange",
    "RoleProfileMutations",
    "RoleProfileRefusal",
    "role_profiles_path",
]

#: Registry events kept per role (the original's 200).
HISTORY_KEPT = 200
#: Largest profile published (compact UTF-8 JSON).
PROFILE_BYTES = 32 * 1024
_ROLE_CHARS = 200


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
    """The registry refuses the profile or version (an ``invalid_proposal_payload``)."""


class RoleProfileMutations(Protocol):
    """The role-profile registry as ``apply_proposal`` uses it.

    Every method records ``actor``, ``proposal_id`` and ``note`` in the role's history. A
    profile or version the registry refuses raises :class:`ValueError` (the proposal's payload
    is then invalid, and nothing changed); a registry that cannot be read or written raises
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
        make it the active one when ``activate``."""
        ...

    def activate(
        self, role: str, version: int, *, actor: str, proposal_id: str, note: str | None
    ) -> RoleProfileChange:
        """Make the stored ``version`` of ``role`` the active one."""
        ...

    def rollback(
        self, role: str, version: int | None, *, actor: str, proposal_id: str, note: str | None
    ) -> RoleProfileChange:
        """Make ``version`` active again, or (``None``) the version active before this one."""
        ...


def _version(value: Any) -> int | None:
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        return None
    return value


def _profile(role: str, profile: Mapping[str, Any]) -> dict[str, Any]:
    """``profile`` with its role and version checked (and the role filled in when absent)."""
    if not isinstance(profile, Mapping):
        raise RoleProfileRefusal("a role profile must be a mapping")
    shaped = {str(key): value for key, value in profile.items()}
    named = shaped.get("role", role)
    if named != role:
        raise RoleProfileRefusal(f"the profile is for role {named!r}, not {role!r}")
    version = _version(shaped.get("version"))
    if version is None:
        raise RoleProfileRefusal(
            f"a role profile needs a version (an int >= 1), got {shaped.get('version')!r}"
        )
    constraints = shaped.get("constraints", {})
    if not isinstance(constraints, Mapping) or not all(
        isinstance(value, Mapping) for value in constraints.values()
    ):
        raise RoleProfileRefusal("constraints must map each name to a mapping")
    shaped.update(role=role, version=version)
    if encoded_size(shaped) > PROFILE_BYTES:
        raise RoleProfileRefusal(f"the profile is larger than {PROFILE_BYTES} bytes of JSON")
    return shaped


def _entry_of(roles: dict[str, Any], role: str) -> dict[str, Any]:
    if len(role) > _ROLE_CHARS or not role.strip():
        raise RoleProfileRefusal(f"a role name must have 1 to {_ROLE_CHARS} characters")
    entry = roles.get(role)
    entry = dict(entry) if isinstance(entry, dict) else {}
    versions = entry.get("versions")
    entry["versions"] = dict(versions) if isinstance(versions, dict) else {}
    history = entry.get("history")
    entry["history"] = list(history) if isinstance(history, list) else []
    entry["role"] = role
    return entry


def _active(entry: Mapping[str, Any]) -> int | None:
    version = _version(entry.get("active_version"))
    return version if version is not None and str(version) in entry["versions"] else None


def _record(
    entry: dict[str, Any],
    event: str,
    active: int | None,
    *,
    actor: str,
    proposal_id: str,
    note: str | None,
) -> None:
    now = utc_timestamp()
    happened: dict[str, Any] = {
        "event": event,
        "active_version": active,
        "source": "proposal_apply",
        "actor": actor,
        "proposal_id": proposal_id,
        "at": now,
    }
    if note:
        happened["note"] = note
    entry["active_version"] = active
    entry["history"] = [*entry["history"], happened][-HISTORY_KEPT:]
    entry["updated_at"] = now


def _publish(
    roles: dict[str, Any],
    role: str,
    profile: Mapping[str, Any],
    activate: bool,
    **who: Any,
) -> RoleProfileChange:
    shaped = _profile(role, profile)
    entry = _entry_of(roles, role)
    before = _active(entry)
    entry["versions"][str(shaped["version"])] = shaped
    active = shaped["version"] if activate or before is None else before
    _record(entry, "publish", active, **who)
    roles[role] = entry
    return RoleProfileChange(role, active, shaped["version"], before)


def _activate(
    roles: dict[str, Any], role: str, version: int | None, event: str, **who: Any
) -> RoleProfileChange:
    entry = _entry_of(roles, role)
    before = _active(entry)
    if version is None:
        version = _earlier_version(entry, before)
    if str(version) not in entry["versions"]:
        raise RoleProfileRefusal(f"role {role!r} has no profile version {version}")
    _record(entry, event, version, **who)
    roles[role] = entry
    return RoleProfileChange(role, version, None, before)


def _earlier_version(entry: Mapping[str, Any], current: int | None) -> int:
    """The version active before ``current``, from the role's history."""
    for happened in reversed(entry["history"]):
        version = _version(happened.get("active_version")) if isinstance(happened, dict) else None
        if version is not None and version != current and str(version) in entry["versions"]:
            return version
    raise RoleProfileRefusal(
        f"role {entry['role']!r} has no earlier active profile version to roll back to"
    )


def role_profiles_path(root: Path) -> Path:
    """``<root>/role_profiles.json``."""
    return root / "role_profiles.json"


class FileRoleProfiles:
    """The minimal registry in ``<root>/role_profiles.json``, changed under the file's lock."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.path = role_profiles_path(root)

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
        return self._change(
            lambda roles: _publish(
                roles, role, profile, activate, actor=actor, proposal_id=proposal_id, note=note
            )
        )

    def activate(
        self, role: str, version: int, *, actor: str, proposal_id: str, note: str | None
    ) -> RoleProfileChange:
        return self._change(
            lambda roles: _activate(
                roles, role, version, "activate", actor=actor, proposal_id=proposal_id, note=note
            )
        )

    def rollback(
        self, role: str, version: int | None, *, actor: str, proposal_id: str, note: str | None
    ) -> RoleProfileChange:
        return self._change(
            lambda roles: _activate(
                roles, role, version, "rollback", actor=actor, proposal_id=proposal_id, note=note
            )
        )

    def _change(self, mutate: Callable[[dict[str, Any]], RoleProfileChange]) -> RoleProfileChange:
        done: list[RoleProfileChange] = []

        def change(loaded: Loaded) -> dict[str, Any]:
            data = dict(loaded.data or {})
            roles = data.get("roles", {})
            if not isinstance(roles, dict):
                quarantine(self.path, expected=loaded.raw)
                data, roles = {}, {}
            roles = dict(roles)
            done.append(mutate(roles))
            others = {k: v for k, v in data.items() if k not in ("schema_version", "roles")}
            return {"schema_version": SCHEMA_VERSION, "roles": roles, **others}

        updated = update_json(self.path, change, root=self.root)
        if not updated.written:
            raise OSError(f"{self.path} is left as it is ({updated.skipped})")
        return done[0]


class MemoryRoleProfiles:
    """The minimal registry for an agent with no store: profiles live as long as the agent."""

    def __init__(self) -> None:
        self.roles: dict[str, Any] = {}
        self._lock = threading.Lock()

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
        with self._lock:
            roles = dict(self.roles)
            change = _publish(
                roles, role, profile, activate, actor=actor, proposal_id=proposal_id, note=note
            )
            self.roles = roles
            return change

    def activate(
        self, role: str, version: int, *, actor: str, proposal_id: str, note: str | None
    ) -> RoleProfileChange:
        return self._activate(role, version, "activate", actor, proposal_id, note)

    def rollback(
        self, role: str, version: int | None, *, actor: str, proposal_id: str, note: str | None
    ) -> RoleProfileChange:
        return self._activate(role, version, "rollback", actor, proposal_id, note)

    def _activate(
        self,
        role: str,
        version: int | None,
        event: str,
        actor: str,
        proposal_id: str,
        note: str | None,
    ) -> RoleProfileChange:
        with self._lock:
            roles = dict(self.roles)
            change = _activate(
                roles, role, version, event, actor=actor, proposal_id=proposal_id, note=note
            )
            self.roles = roles
            return change
