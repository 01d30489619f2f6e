"""The continuity guard's judgement: does this call keep the role profile? (ADR 0083)

Pure functions over plain data. The lifecycle hands over the active profile, the method, what
the current program did (one value per family, see :mod:`._observe`) and what sibling methods
were last seen doing; :func:`continuity_report` returns the report the call logs (the
original's ``role_profile_compliance``) and the enforcement decision is the lifecycle's.

For each constraint that covers the method:

* the methods in scope are the listed ones (``explicit_methods``), or every method seen so far
  plus this one, minus ``exclude_methods`` (``all_methods``);
* ``prescriptive``: this program's value must equal the canonical key (or value);
* ``coordination``: this program's value must be the siblings' value; when the siblings
  already disagree among themselves, one of their most common values. (The original failed
  every later call once two siblings drifted apart, a drift no new program can repair.)

A family the program does not show (no memory key, an error answer for the return shape) is
not judged: there is nothing of this program to compare.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from typing import Any

from recurgent._profiles._model import constraint_applies, expected_value

__all__ = ["FAMILY_LABELS", "continuity_report", "empty_report"]

FAMILY_LABELS = {
    "shared_state_slot": "state key",
    "return_shape_family": "return shape",
    "signature_family": "method signature",
}
_FIX = {
    "shared_state_slot": "keep this role's state in memory key {value!r} (context[{value!r}])",
    "return_shape_family": "return a value of shape {value!r}",
    "signature_family": "read the arguments the way {value!r} says",
}
_SHOWN_VALUE = 120


def _shown(value: str) -> str:
    return value if len(value) <= _SHOWN_VALUE else value[: _SHOWN_VALUE - 3] + "..."


def empty_report(version: int) -> dict[str, Any]:
    """The report of a call no constraint of the active profile covers."""
    return {
        "profile_version": version,
        "evaluated": False,
        "continuity_pass_rate": 1.0,
        "passed": True,
        "violation_count": 0,
        "violation_types": [],
        "correction_hint": None,
        "reason": None,
        "constraint_results": [],
    }


def _scope(constraint: Mapping[str, Any], method: str, seen: Mapping[str, str]) -> list[str]:
    if constraint.get("scope") == "explicit_methods":
        return list(constraint.get("methods", ()))
    excluded = set(constraint.get("exclude_methods", ()))
    methods = [name for name in seen if name not in excluded and name != method]
    return [*methods, method]


def _judge(
    name: str,
    constraint: Mapping[str, Any],
    method: str,
    current: str | None,
    seen: Mapping[str, str],
) -> dict[str, Any] | None:
    if current is None:
        return None
    kind = str(constraint.get("kind"))
    label = FAMILY_LABELS.get(kind, "value")
    scoped = _scope(constraint, method, seen)
    observations = {m: (current if m == method else seen.get(m)) for m in scoped}
    observations = {m: v for m, v in observations.items() if v is not None}
    siblings = [v for m, v in observations.items() if m != method]
    expected = expected_value(constraint)
    if constraint.get("mode") == "prescriptive":
        target = expected
        passed = current == expected
    else:
        tally = Counter(siblings).most_common()
        leaders = [value for value, count in tally if count == tally[0][1]] if tally else []
        passed = not leaders or current in leaders
        target = leaders[0] if leaders else None
    result: dict[str, Any] = {
        "constraint": name,
        "kind": kind,
        "mode": constraint.get("mode"),
        "scope": constraint.get("scope"),
        "methods": scoped,
        "observations": observations,
        "family_label": label,
        "passed": passed,
        "type": f"{kind}_drift",
    }
    if passed:
        return result
    users = [m for m, v in observations.items() if v == target and m != method]
    if expected is not None and constraint.get("mode") == "prescriptive":
        reason = f"{label} diverged from expected value {_shown(expected)!r}"
        why = f"as role profile constraint {name!r} requires"
    else:
        reason = f"{label} diverged across sibling methods"
        named = ", ".join(users[:5]) + (", ..." if len(users) > 5 else "")
        why = (
            f"as sibling method {named} does"
            if len(users) == 1
            else f"as sibling methods {named} do"
        )
    assert target is not None
    fix = _FIX.get(kind, "use {value!r}").format(value=_shown(target))
    result["reason"] = f"{reason}: {method} used {_shown(current)!r}"
    result["correction_hint"] = f"{fix}, {why}; this program used {_shown(current)!r}"
    return result


def continuity_report(
    profile: Mapping[str, Any],
    method: str,
    current: Mapping[str, str | None],
    seen: Mapping[str, Mapping[str, str]],
) -> dict[str, Any]:
    """Judge one call against the active profile.

    Args:
        profile: The active (normalized) profile.
        method: The method called.
        current: What this call's program shows, by kind (``None``: not shown).
        seen: By kind, each other method's last known value.

    Returns:
        ``{profile_version, evaluated, continuity_pass_rate, passed, violation_count,
        violation_types, correction_hint, reason, constraint_results}``; ``reason`` and
        ``correction_hint`` are the first failed constraint's.
    """
    constraints = profile.get("constraints") or {}
    results: list[dict[str, Any]] = []
    for name, constraint in constraints.items():
        if not constraint_applies(constraint, method):
            continue
        kind = str(constraint.get("kind"))
        judged = _judge(name, constraint, method, current.get(kind), seen.get(kind, {}))
        if judged is not None:
            results.append(judged)
    version = int(profile.get("version") or 0)
    if not results:
        return empty_report(version)
    failed = [result for result in results if not result["passed"]]
    return {
        "profile_version": version,
        "evaluated": True,
        "continuity_pass_rate": round((len(results) - len(failed)) / len(results), 4),
        "passed": not failed,
        "violation_count": len(failed),
        "violation_types": [result["type"] for result in failed],
        "correction_hint": failed[0]["correction_hint"] if failed else None,
        "reason": failed[0]["reason"] if failed else None,
        "constraint_results": results,
    }
