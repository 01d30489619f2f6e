"""The lifecycle's side of role profiles, namespace telemetry, the self model and the solver
shape (ADRs 0083-0085).

* :func:`check_continuity` runs in every attempt after the contract check: it judges the
  program against the active role profile, notes the report on the call state and, with
  ``role_profile_enforcement_enabled``, raises the guardrail failure the guardrail lane retries
  with the report's correction (the attempt's writes are dropped like any failed attempt's).
  Without an active profile, or with both role-profile switches off, it returns at once.
* :func:`finish_continuity` runs once per finished call: it keeps what the accepted program
  showed for later sibling checks, records a new code version in the role's state-key
  telemetry (nothing for a stored program answering again), keeps the self-model snapshot, and
  builds this module's log fields when the call is logged.

The judgements are :mod:`recurgent._profiles`' and :mod:`recurgent._self_model`'s; this module
only sequences them and fills the call state.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recurgent._forksafe import fork_safe_lock
from recurgent._profiles import (
    COUNTED_FIGURES,
    constraint_applies,
    continuity_report as _report,
    expected_value,
    load_namespace,
    observe_program,
    pressure,
    pressure_counts,
    record_namespace,
    return_shape,
    seen_values,
)
from recurgent._self_model import (
    SELF_MODEL_FIELDS,
    SOLVER_SHAPE_FIELDS,
    CallSnapshot,
    self_model,
    solver_shape_log_fields,
)
from recurgent._store import HOST, PROGRAM, checksum
from recurgent.errors import GuardrailViolationError
from recurgent.outcome import Outcome

if TYPE_CHECKING:
    import ast

    from recurgent._lifecycle import AgentRuntime
    from recurgent._lifecycle._state import CallState

__all__ = [
    "NAMESPACE_FIELDS",
    "NO_AGENCY_FIELDS",
    "ROLE_PROFILE_FIELDS",
    "check_continuity",
    "finish_continuity",
    "prompt_profile",
]

SUBTYPE = "role_profile_continuity_violation"
ROLE_PROFILE_FIELDS = (
    "role_profile_compliance",
    "role_profile_compliant",
    "role_profile_violation_count",
    "role_profile_violation_types",
    "role_profile_correction_hint",
    "role_profile_shadow_mode",
    "role_profile_enforced",
)
NAMESPACE_FIELDS = COUNTED_FIGURES
#: Every log field of this module, null (a call that was not logged through it).
NO_AGENCY_FIELDS: Mapping[str, Any] = dict.fromkeys(
    (*ROLE_PROFILE_FIELDS, *NAMESPACE_FIELDS, *SOLVER_SHAPE_FIELDS, *SELF_MODEL_FIELDS)
)


@dataclass(slots=True)
class Continuity:
    """What the guard saw in a call.

    Attributes:
        code: The program of the latest judged attempt.
        values: Its value per profile kind.
        shadow, enforced: The switches as they were.
        failed: ``(code checksum, violation types)`` of every attempt that failed the guard.
    """

    code: str
    values: dict[str, str | None]
    shadow: bool
    enforced: bool
    failed: list[tuple[str, str]] = field(default_factory=list)


def _seen(runtime: AgentRuntime, hosts_only: bool = False) -> dict[str, dict[str, str]] | None:
    store = runtime.store
    if store is None:
        return None
    return seen_values(load_namespace(store.root, runtime.role), hosts_only=hosts_only)


def _author(state: CallState) -> str | None:
    """Who wrote the call's program: a stored one's author, else the caller (ADR 0074)."""
    if state.program_source == "persisted":
        return state.artifact_author
    return HOST if state.host_call else PROGRAM


def check_continuity(
    runtime: AgentRuntime,
    state: CallState,
    code: str,
    tree: ast.Module | None,
    outcome: Outcome,
) -> None:
    """Judge the attempt against the active role profile (see the module docstring).

    Raises:
        GuardrailViolationError: the program broke the profile and enforcement is on
            (subtype ``role_profile_continuity_violation``, the report's correction).
    """
    binding = runtime.profiles
    if binding is None:
        return
    settings = runtime.options.settings
    enforced = settings.role_profile_enforcement_enabled
    shadow = settings.role_profile_shadow_mode_enabled
    if not (enforced or shadow):
        return
    profile = binding.active()
    if profile is None:
        return
    shape = observe_program(code, tree)
    values: dict[str, str | None] = {
        "shared_state_slot": shape.primary_key,
        "signature_family": shape.signature,
        "return_shape_family": return_shape(outcome.value) if outcome.is_ok else None,
    }
    # The host's own call is judged against the host's methods: a program's agent of the role
    # must not make the host's code drift by writing a sibling (ADR 0133).
    report = _report(profile, state.method, values, binding.seen(_seen(runtime, state.host_call)))
    notes = state.continuity if isinstance(state.continuity, Continuity) else None
    failed = notes.failed if notes is not None else []
    state.continuity = Continuity(code, values, shadow, enforced, failed)
    state.role_profile_report = report
    state.role_profile_compliant = bool(report["passed"])
    if report["passed"]:
        return
    failed.append((checksum(code), ",".join(report["violation_types"])))
    if enforced:
        hint = report["correction_hint"]
        raise GuardrailViolationError(
            f"{SUBTYPE}: {report['reason']}. correction: {hint}",
            subtype=SUBTYPE,
            correction=hint,
            metadata={"role_profile_version": report["profile_version"]},
        )


# (root, role, method) -> (code, return shape recorded, problems counted): what this process
# last recorded, so a stored program answering again records nothing.
_RECORDED: dict[tuple[Path, str, str], tuple[str, bool, frozenset[str]]] = {}
_RECORDED_KEPT = 4096
_RECORDED_LOCK = fork_safe_lock()


def _record(runtime: AgentRuntime, state: CallState, notes: Continuity | None) -> None:
    store = runtime.store
    code = state.code
    if store is None or not code or code.isspace():
        return
    outcome = state.outcome
    ok = outcome is not None and outcome.status == "ok"
    key = (store.root, runtime.role, state.method)
    known = _RECORDED.get(key)
    failed = notes.failed if notes is not None else None
    # The common case, a stored program answering again: the same code object as last time.
    if known is not None and known[0] is code and (known[1] or not ok) and not failed:
        return
    problems = [
        ("role_profile", f"{state.method} failed {types}", digest) for digest, types in failed or ()
    ]
    marks = frozenset(f"role_profile@{digest}" for _, _, digest in problems)
    same_code = known is not None and known[0] == code
    if same_code and known is not None and (known[1] or not ok) and marks <= known[2]:
        # The same text in another object (the store read the artifact again): remember this
        # one, so the next answer of the same record takes the identity test above.
        with _RECORDED_LOCK:
            _RECORDED[key] = (code, known[1], known[2])
        return
    shape_of_answer = None
    if ok and outcome is not None:
        if notes is not None and notes.code == code:
            shape_of_answer = notes.values["return_shape_family"]
        else:
            shape_of_answer = return_shape(outcome.value)
    author = _author(state)
    updated = record_namespace(
        store.root,
        runtime.role,
        state.method,
        shape=observe_program(code),
        checksum=checksum(code),
        return_shape=shape_of_answer,
        violations=problems,
        author=author,
    )
    if updated is not None:
        # The promotion gate reads the role's consistency per version (ADR 0080): the value
        # measured when this version was recorded goes on its scorecard; the host's version's
        # of the host's methods alone (ADR 0133).
        figures = pressure(updated, runtime.role, hosts_only=author == HOST)
        ratio = figures.get("state_key_consistency_ratio")
        if isinstance(ratio, int | float):
            state.state_key_consistency_ratio = float(ratio)
    with _RECORDED_LOCK:
        if len(_RECORDED) >= _RECORDED_KEPT:
            _RECORDED.clear()
        counted = (known[2] if same_code and known is not None else frozenset()) | marks
        _RECORDED[key] = (code, ok or (same_code and known is not None and known[1]), counted)


def finish_continuity(runtime: AgentRuntime, state: CallState) -> None:
    """Close the call's continuity, namespace and self-model bookkeeping (never raises for a
    store problem: telemetry never breaks a call)."""
    notes = state.continuity if isinstance(state.continuity, Continuity) else None
    current = notes is not None and (notes.code is state.code or notes.code == state.code)
    if notes is not None and not current:
        # The report describes an attempt that was refused; the program that ran last was
        # never judged (it failed before the guard).
        state.role_profile_report = None
        state.role_profile_compliant = None
    accepted = current and state.outcome is not None and not state.rollback_applied
    if accepted and notes is not None and runtime.profiles is not None:
        runtime.profiles.remember(state.method, notes.values)
    try:
        _record(runtime, state, notes)
    except Exception:  # noqa: BLE001 - telemetry never breaks a call (as the store's record)
        pass
    settings = runtime.options.settings
    snapshot: CallSnapshot | None = None
    if settings.self_model_capture_enabled and runtime.self_model is not None:
        frame = state.frame
        snapshot = CallSnapshot(
            runtime.role, state.method, frame.trace_id, frame.call_id, state.code
        )
        runtime.self_model.last = snapshot
    if runtime.logger is not None:
        try:
            state.agency = _log_fields(runtime, state, notes if current else None, snapshot)
        except Exception:  # noqa: BLE001 - the line is written with these fields null instead
            state.agency = None


def _log_fields(
    runtime: AgentRuntime,
    state: CallState,
    notes: Continuity | None,
    snapshot: CallSnapshot | None,
) -> dict[str, Any]:
    settings = runtime.options.settings
    fields: dict[str, Any] = dict(NO_AGENCY_FIELDS)
    if settings.solver_shape_capture_enabled:
        shape = solver_shape_log_fields(
            role=runtime.role,
            method=state.method,
            depth=state.frame.depth,
            arg_count=len(state.args),
            kwarg_count=len(state.kwargs),
            contract=state.contract,
            program_source=state.program_source,
            artifact_hit=state.artifact_hit,
        )
        fields.update(shape)
    if snapshot is not None:
        binding = runtime.profiles
        model = self_model(
            settings,
            runtime.options.contract,
            binding.active_version() if binding is not None else None,
            snapshot,
        )
        fields["self_model"] = model
        fields.update(model)
    report = state.role_profile_report
    if report is not None:
        fields.update(
            role_profile_compliance=report,
            role_profile_compliant=state.role_profile_compliant,
            role_profile_violation_count=report["violation_count"],
            role_profile_violation_types=report["violation_types"],
            role_profile_correction_hint=report["correction_hint"],
            role_profile_shadow_mode=notes.shadow if notes is not None else None,
            role_profile_enforced=notes.enforced if notes is not None else None,
        )
    store = runtime.store
    if store is not None:
        try:
            # Derived once per record: a call that changed nothing reads the same record.
            counts: tuple[int | None, ...] = pressure_counts(
                load_namespace(store.root, runtime.role)
            )
        except (OSError, ValueError, RecursionError):
            counts = (None,) * len(NAMESPACE_FIELDS)
        fields.update(zip(NAMESPACE_FIELDS, counts, strict=True))
    return fields


def _siblings_value(
    constraint: Mapping[str, Any], method: str, seen: Mapping[str, str]
) -> str | None:
    listed = constraint.get("methods") if constraint.get("scope") == "explicit_methods" else None
    excluded = constraint.get("exclude_methods", ())
    values = [
        value
        for name, value in seen.items()
        if name != method and name not in excluded and (listed is None or name in listed)
    ]
    ranked = Counter(values).most_common(1)
    return ranked[0][0] if ranked else None


def prompt_profile(
    runtime: AgentRuntime, method: str, *, hosts_only: bool = False
) -> dict[str, Any] | None:
    """What the prompt says about the active role profile for ``method``: each constraint that
    covers it with the value to use (the canonical one, else the siblings' most common one;
    ``hosts_only``, for the host's own call: of the host's methods, ADR 0133)."""
    binding = runtime.profiles
    if binding is None:
        return None
    profile = binding.active()
    if profile is None:
        return None
    seen: dict[str, dict[str, str]] | None = None
    rows: list[dict[str, Any]] = []
    for name, constraint in (profile.get("constraints") or {}).items():
        if not constraint_applies(constraint, method):
            continue
        value = expected_value(constraint) if constraint.get("mode") == "prescriptive" else None
        if value is None:
            if seen is None:
                seen = binding.seen(_seen(runtime, hosts_only))
            value = _siblings_value(constraint, method, seen.get(constraint["kind"], {}))
        rows.append(
            {"name": name, "kind": constraint["kind"], "mode": constraint["mode"], "value": value}
        )
    if not rows:
        return None
    return {"version": profile["version"], "constraints": rows}
