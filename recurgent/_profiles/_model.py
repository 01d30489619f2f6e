"""A role profile: the written agreement of one role's sibling methods (ADR 0083).

A profile is ``{"role", "version", "constraints": {name: constraint}}``, the original's shape.
Each constraint names what sibling methods must share (``kind``), whether they only have to
agree with each other or with a stated value (``mode``) and which methods it covers
(``scope`` with ``methods`` or ``exclude_methods``). :func:`normalize_profile` checks a profile
and returns it in one canonical, JSON-safe form (defaults filled in, lists de-duplicated); the
same function reads profiles back from ``role_profiles.json``, which is untrusted input (ADR
0070), so every size is bounded.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from recurgent._repr import safe_repr
from recurgent.errors import UsageError

__all__ = [
    "KINDS",
    "MODES",
    "SCOPES",
    "constraint_applies",
    "expected_value",
    "normalize_profile",
    "normalize_version",
]

KINDS = ("shared_state_slot", "return_shape_family", "signature_family")
MODES = ("coordination", "prescriptive")
SCOPES = ("all_methods", "explicit_methods")
_PROFILE_KEYS = frozenset({"role", "version", "constraints"})
_CONSTRAINT_KEYS = frozenset(
    {"kind", "mode", "scope", "methods", "exclude_methods", "canonical_key", "canonical_value"}
)
#: Bounds on what a profile may hold: it is shown in prompts and read from a file anyone with
#: the user's rights may have written.
MAX_CONSTRAINTS = 32
MAX_METHODS = 128
MAX_NAME_CHARS = 200
MAX_VALUE_CHARS = 400
MAX_VERSION = 10**9


def _shown(value: Any) -> str:
    return safe_repr(value, limit=120)


def normalize_version(value: Any) -> int | None:
    """A profile version: an int (or digit string) from 1 to 10**9, else ``None``."""
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value.strip())
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_VERSION:
        return None
    return value


def _name(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value.strip():
        raise UsageError(f"{what} must be a non-empty str, got {_shown(value)}")
    text = value.strip()
    if len(text) > MAX_NAME_CHARS:
        raise UsageError(f"{what} is longer than {MAX_NAME_CHARS} characters")
    return text


def _names(value: Any, what: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, str) or not isinstance(value, list | tuple | set | frozenset):
        raise UsageError(f"{what} must be a list of method names, got {_shown(value)}")
    names: list[str] = []
    for item in sorted(value, key=str) if isinstance(value, set | frozenset) else value:
        name = _name(item, f"{what} entry")
        if name not in names:
            names.append(name)
    if len(names) > MAX_METHODS:
        raise UsageError(f"{what} lists {len(names)} methods, more than {MAX_METHODS}")
    return names


def _choice(raw: Mapping[str, Any], key: str, choices: tuple[str, ...], where: str) -> str:
    value = raw.get(key)
    if value is None or (isinstance(value, str) and not value.strip()):
        return choices[0]
    if not isinstance(value, str) or value.strip() not in choices:
        raise UsageError(
            f"{where} has unsupported {key} {_shown(value)}; expected one of {', '.join(choices)}"
        )
    return value.strip()


def _canonical_value(value: Any, where: str) -> str | int | float | bool:
    if isinstance(value, float) and value != value:  # NaN never equals an observation
        raise UsageError(f"{where} canonical_value must be a finite number, str or bool")
    if not isinstance(value, str | int | float | bool):
        raise UsageError(
            f"{where} canonical_value must be a str, number or bool, got {_shown(value)}"
        )
    if isinstance(value, str) and len(value) > MAX_VALUE_CHARS:
        raise UsageError(f"{where} canonical_value is longer than {MAX_VALUE_CHARS} characters")
    return value


def _constraint(name: str, raw: Any) -> dict[str, Any]:
    where = f"role_profile constraint {name!r}"
    if not isinstance(raw, Mapping):
        raise UsageError(f"{where} must be a dict, got {_shown(raw)}")
    unknown = sorted(map(str, set(raw) - _CONSTRAINT_KEYS))
    if unknown:
        raise UsageError(
            f"{where} has unknown key(s) {', '.join(unknown)}; "
            f"known keys: {', '.join(sorted(_CONSTRAINT_KEYS))}"
        )
    kind = _choice(raw, "kind", KINDS, where)
    mode = _choice(raw, "mode", MODES, where)
    scope = _choice(raw, "scope", SCOPES, where)
    methods = _names(raw.get("methods"), f"{where} methods")
    excluded = _names(raw.get("exclude_methods"), f"{where} exclude_methods")
    constraint: dict[str, Any] = {"kind": kind, "mode": mode, "scope": scope}
    if scope == "all_methods":
        if methods:
            raise UsageError(f"{where} with scope all_methods must not list methods")
        if excluded:
            constraint["exclude_methods"] = excluded
    else:
        if not methods:
            raise UsageError(f"{where} with scope explicit_methods needs methods")
        if excluded:
            raise UsageError(f"{where} with scope explicit_methods must not list exclude_methods")
        constraint["methods"] = methods
    if raw.get("canonical_key") is not None:
        constraint["canonical_key"] = _name(raw["canonical_key"], f"{where} canonical_key")
    if raw.get("canonical_value") is not None:
        constraint["canonical_value"] = _canonical_value(raw["canonical_value"], where)
    if mode == "prescriptive" and expected_value(constraint) is None:
        raise UsageError(f"{where} in prescriptive mode needs canonical_key or canonical_value")
    return constraint


def normalize_profile(raw: Any, *, expected_role: str | None = None) -> dict[str, Any]:
    """Check a role profile and return its canonical form.

    Args:
        raw: ``{"role", "version", "constraints": {name: {...}}}``.
        expected_role: The role the profile must be for (the agent's), when known.

    Returns:
        A new dict: ``role`` and ``version`` (an int), and every constraint with its ``kind``,
        ``mode`` and ``scope`` filled in (defaults ``shared_state_slot``, ``coordination``,
        ``all_methods``).

    Raises:
        UsageError: the profile is malformed; the message names the field.
    """
    if not isinstance(raw, Mapping):
        raise UsageError(f"role_profile must be a dict, got {_shown(raw)}")
    unknown = sorted(map(str, set(raw) - _PROFILE_KEYS))
    if unknown:
        raise UsageError(
            f"role_profile has unknown key(s) {', '.join(unknown)}; "
            "known keys: constraints, role, version"
        )
    role = _name(raw.get("role"), "role_profile role")
    if expected_role is not None and role != expected_role:
        raise UsageError(
            f"role_profile role {role!r} must match the agent's role {expected_role!r}"
        )
    version = normalize_version(raw.get("version"))
    if version is None:
        raise UsageError(
            f"role_profile version must be an int from 1 to {MAX_VERSION}, "
            f"got {_shown(raw.get('version'))}"
        )
    constraints = raw.get("constraints")
    if not isinstance(constraints, Mapping):
        raise UsageError(f"role_profile constraints must be a dict, got {_shown(constraints)}")
    if len(constraints) > MAX_CONSTRAINTS:
        raise UsageError(
            f"role_profile has {len(constraints)} constraints, more than {MAX_CONSTRAINTS}"
        )
    normalized: dict[str, Any] = {}
    for name, constraint in constraints.items():
        key = _name(name, "role_profile constraint name")
        normalized[key] = _constraint(key, constraint)
    return {"role": role, "version": version, "constraints": normalized}


def expected_value(constraint: Mapping[str, Any]) -> str | None:
    """What a prescriptive constraint requires, as text: its ``canonical_key``, else its
    ``canonical_value`` (``None`` when it states neither)."""
    if constraint.get("canonical_key") is not None:
        return str(constraint["canonical_key"])
    value = constraint.get("canonical_value")
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def constraint_applies(constraint: Mapping[str, Any], method: str) -> bool:
    """Whether ``constraint`` covers calls of ``method``."""
    if constraint.get("scope") == "explicit_methods":
        return method in constraint.get("methods", ())
    return method not in constraint.get("exclude_methods", ())
