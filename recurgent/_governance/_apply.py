"""What applying a proposal changes: one mutation per proposal type (ADR 0088).

:data:`MUTATIONS` maps a ``proposal_type`` to its mutation; a type without one only changes
status (the original's ``tool_patch``, ``policy_tuning_suggestion``, ...). A mutation returns
the description kept as the record's ``applied_mutation``, or raises :class:`PayloadError`
(``invalid_proposal_payload``) having changed nothing.

* ``role_profile_update``: ``action`` (from ``metadata``, else ``target``; default
  ``publish_and_activate``) is ``publish_and_activate``, ``publish`` (``publish_only`` is the
  same: the version is stored, the active one stays), ``activate`` or ``rollback`` (of the
  ``version`` named, else of the carried ``role_profile``'s version, ADR 0163); it goes
  through :class:`~recurgent._governance._role_profiles.RoleProfileMutations` (the agent's
  role-profile binding, or the store's registry).
* ``content_retention_policy_update``: the ``content_store_*`` settings, checked as
  ``configure_runtime`` checks them, become the applying agent's settings and the process's.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from recurgent._governance._proposals import ProposalStoreError
from recurgent._governance._role_profiles import RoleProfileChange, RoleProfileMutations
from recurgent._runtime_config import RuntimeSettings, configure_runtime, with_settings
from recurgent.errors import UsageError

__all__ = [
    "MUTATIONS",
    "RETENTION_SETTINGS",
    "ROLE_PROFILE_ACTIONS",
    "ApplyContext",
    "Mutation",
    "PayloadError",
    "mutate",
]

ROLE_PROFILE_ACTIONS = ("publish_and_activate", "publish", "publish_only", "activate", "rollback")
#: The runtime settings a retention policy may change.
RETENTION_SETTINGS = (
    "content_store_max_entries",
    "content_store_max_bytes",
    "content_store_ttl_seconds",
    "content_store_nested_capture_enabled",
    "content_store_store_error_payloads",
)
_SHORT_NAMES = {name.removeprefix("content_store_"): name for name in RETENTION_SETTINGS}


class PayloadError(Exception):
    """The proposal does not say what to change, or says something the runtime refuses."""


@dataclass(frozen=True, slots=True)
class ApplyContext:
    """What a mutation may use and change.

    Attributes:
        role: The applying agent's role: the role a role-profile proposal that names none
            changes (``None`` from the command line, where the proposal must name it).
        actor: Who applies.
        note: The applier's note.
        settings: The applying agent's runtime settings.
        install_settings: Makes new settings the applying agent's.
        role_profiles: The role-profile registry.
    """

    role: str | None
    actor: str
    note: str | None
    settings: RuntimeSettings
    install_settings: Callable[[RuntimeSettings], None]
    role_profiles: RoleProfileMutations


Mutation = Callable[[Mapping[str, Any], ApplyContext], dict[str, Any]]


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _first(record: Mapping[str, Any], *keys: str) -> Any:
    """The first of ``keys`` found in the metadata, then in the target."""
    for source in (_mapping(record.get("metadata")), _mapping(record.get("target"))):
        for key in keys:
            if source.get(key) is not None:
                return source[key]
    return None


def _text(value: Any, what: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise PayloadError(f"{what} must be a non-empty str, got {value!r:.80}")
    return value.strip()


def _version(value: Any) -> int | None:
    if value is None:
        return None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise PayloadError(f"the role profile version must be an int >= 1, got {value!r:.80}")
    return value


def _named_profile(record: Mapping[str, Any]) -> Mapping[str, Any] | None:
    """``metadata.role_profile``, else ``target.role_profile``; ``None`` when neither is set."""
    metadata, target = _mapping(record.get("metadata")), _mapping(record.get("target"))
    for candidate in (metadata.get("role_profile"), target.get("role_profile")):
        if candidate is not None:
            if not isinstance(candidate, Mapping):
                raise PayloadError("role_profile must be a mapping")
            return candidate
    return None


def _profile(record: Mapping[str, Any]) -> Mapping[str, Any]:
    named = _named_profile(record)
    if named is not None:
        return named
    target = _mapping(record.get("target"))
    if "constraints" in target:
        # The target is the profile; its action is the proposal's, not the profile's.
        return {key: value for key, value in target.items() if key != "action"}
    raise PayloadError("it names no role profile to publish (metadata.role_profile)")


def _role(record: Mapping[str, Any], context: ApplyContext, profile_role: Any = None) -> str:
    named = _text(_first(record, "role"), "role")
    of_profile = _text(profile_role, "the profile's role")
    if named is not None and of_profile is not None and named != of_profile:
        raise PayloadError(f"it names role {named!r} but its profile is for {of_profile!r}")
    role = named or of_profile or context.role
    if role is None:
        raise PayloadError("it names no role (target.role or metadata.role)")
    return role


def _described(action: str, change: RoleProfileChange) -> dict[str, Any]:
    described: dict[str, Any] = {
        "proposal_type": "role_profile_update",
        "action": action,
        "role": change.role,
        "active_version": change.active_version,
        "previous_active_version": change.previous_active_version,
    }
    if change.published_version is not None:
        described["published_version"] = change.published_version
    return described


def _role_profile_update(record: Mapping[str, Any], context: ApplyContext) -> dict[str, Any]:
    action = _text(_first(record, "action"), "action") or "publish_and_activate"
    if action not in ROLE_PROFILE_ACTIONS:
        raise PayloadError(
            f"unsupported role_profile_update action {action!r:.80}; use one of "
            + ", ".join(ROLE_PROFILE_ACTIONS)
        )
    actor, proposal_id, note = context.actor, str(record["id"]), context.note
    registry = context.role_profiles
    try:
        if action in ("activate", "rollback"):
            named = _first(record, "active_version", "version")
            # No version named: the version of the profile the proposal carries (ADR 0163).
            profile = _named_profile(record) if named is None else None
            version = _version(profile.get("version") if profile is not None else named)
            role = _role(record, context, profile.get("role") if profile is not None else None)
            if action == "activate":
                if version is None:
                    raise PayloadError("it names no role profile version to activate")
                change = registry.activate(
                    role, version, actor=actor, proposal_id=proposal_id, note=note
                )
            else:
                change = registry.rollback(
                    role, version, actor=actor, proposal_id=proposal_id, note=note
                )
        else:
            profile = _profile(record)
            role = _role(record, context, profile.get("role"))
            change = registry.publish(
                role,
                profile,
                activate=action == "publish_and_activate",
                actor=actor,
                proposal_id=proposal_id,
                note=note,
            )
    except ValueError as refused:
        raise PayloadError(str(refused)) from None
    except OSError as error:
        raise ProposalStoreError(
            f"the role-profile registry cannot be changed ({type(error).__name__}: {error})",
            retriable=True,
        ) from None
    return _described(action, change)


def _retention_policy(record: Mapping[str, Any]) -> dict[str, Any]:
    metadata, target = _mapping(record.get("metadata")), _mapping(record.get("target"))
    for nested in (
        metadata.get("content_retention_policy"),
        target.get("content_retention_policy"),
    ):
        if nested is None:
            continue
        if not isinstance(nested, Mapping):
            raise PayloadError("content_retention_policy must be a mapping")
        policy = {}
        for key, value in nested.items():
            name = _SHORT_NAMES.get(str(key), str(key))
            if name not in RETENTION_SETTINGS:
                raise PayloadError(
                    f"unsupported content retention setting {str(key)!r:.80}; use "
                    + ", ".join(RETENTION_SETTINGS)
                )
            policy[name] = value
        return policy
    # A policy given inline: the retention settings among the target's (or metadata's) keys.
    for source in (target, metadata):
        inline = {name: source[name] for name in RETENTION_SETTINGS if name in source}
        if inline:
            return inline
    return {}


def _content_retention_policy_update(
    record: Mapping[str, Any], context: ApplyContext
) -> dict[str, Any]:
    policy = _retention_policy(record)
    if not policy:
        raise PayloadError(
            "it names no content retention setting (metadata.content_retention_policy with "
            + ", ".join(RETENTION_SETTINGS)
            + ")"
        )
    try:
        changed = with_settings(context.settings, **policy)
    except UsageError as refused:
        raise PayloadError(refused.message) from None
    parsed = {name: getattr(changed, name) for name in policy}
    # As the original: agents this process builds from now on use the policy too.
    configure_runtime(**parsed)
    context.install_settings(changed)
    described: dict[str, Any] = {
        "proposal_type": "content_retention_policy_update",
        "action": "apply_runtime_policy",
        "policy": parsed,
        "actor": context.actor,
    }
    if context.note:
        described["note"] = context.note
    return described


MUTATIONS: Mapping[str, Mutation] = {
    "role_profile_update": _role_profile_update,
    "content_retention_policy_update": _content_retention_policy_update,
}


def mutate(record: Mapping[str, Any], context: ApplyContext) -> dict[str, Any] | None:
    """Apply ``record``'s mutation; return its description (``None``: the type has none).

    Raises:
        PayloadError: the proposal's payload is invalid; nothing changed.
        ProposalStoreError: a registry it changes cannot be written.
    """
    mutation = MUTATIONS.get(str(record["proposal_type"]))
    return None if mutation is None else mutation(record, context)
