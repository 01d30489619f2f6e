"""The promotion lifecycle of code versions: the policy ``solver_promotion_v1``, its evaluation
and manual overrides, as pure functions on an artifact record (ADR 0080).

Each code version (checksum) of an artifact moves through ``candidate`` -> ``probation`` (its
first answer) -> ``durable`` (the gate) and ``degraded`` (the regression rule); a degraded
version becomes durable again when the gate passes. Every evaluation is appended to the shadow
ledger with its rationale. The store evaluates when a call's counts reach the file: at once for
a call written through, once per batch for answered persisted runs (ADR 0055). Which version
runs is :mod:`._versions`' business; this module only says what each version has earned.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from recurgent._store._promotion_format import (
    LEDGER_KEPT,
    LIFECYCLE_ENTRIES_KEPT,
    OVERRIDES_KEPT,
    POLICY_VERSION,
    LedgerEntry,
    Lifecycle,
    LifecycleEntry,
    LifecycleState,
    ManualOverride,
)

if TYPE_CHECKING:
    from recurgent._store._artifacts import ArtifactRecord, Scorecard

__all__ = [
    "DEFAULT_PROMOTION",
    "POLICY",
    "Decision",
    "Policy",
    "Promotion",
    "RunKind",
    "apply_override",
    "ensure_lifecycle",
    "evaluate",
    "failed_checks",
    "latest_decision",
    "metrics",
    "promotion_mode",
    "regressed",
    "state_of",
]

#: How a run of a version ended, as the policy sees it: an answer (an ok value or a domain
#: error, ADR 0037), a failure of the program (intrinsic or adaptive), or an outage (extrinsic:
#: the provider, the network, a slow upstream), which is not the program's fault.
#: How the run(s) just counted ended; ``corrected``: a user re-asked what it answered (ADR 0108).
RunKind = Literal["answered", "failed", "outage", "corrected"]


@dataclass(frozen=True, slots=True)
class Policy:
    """The thresholds of one promotion policy (the original's ``solver_promotion_v1``)."""

    version: str = POLICY_VERSION
    min_calls: int = 10
    min_sessions: int = 2
    min_contract_pass_rate: float = 0.95
    min_role_profile_pass_rate: float = 0.99
    max_guardrail_retry_exhausted: int = 0
    max_outcome_retry_exhausted: int = 0
    max_wrong_boundary_count: int = 0
    max_provenance_violations: int = 0
    min_state_key_consistency_ratio: float = 0.5
    #: The regression rule: at least this many calls, a failure rate above this, and more
    #: failures than successes.
    regression_min_calls: int = 3
    regression_failure_rate: float = 0.6


POLICY = Policy()


@dataclass(frozen=True, slots=True)
class Promotion:
    """The switches a call carries to the store (from the agent's runtime settings).

    Attributes:
        shadow: Evaluate the lifecycle and keep the ledger (``promotion_shadow_mode_enabled``).
        enforced: Selection follows the lifecycle, and a failure on probation degrades at once
            (``promotion_enforcement_enabled``).
    """

    shadow: bool = True
    enforced: bool = False


_MODES = {
    (shadow, enforced): Promotion(shadow, enforced)
    for shadow in (True, False)
    for enforced in (True, False)
}
DEFAULT_PROMOTION = _MODES[(True, False)]


def promotion_mode(*, shadow: bool, enforced: bool) -> Promotion:
    """The shared :class:`Promotion` for these switches (one of four, made once)."""
    return _MODES[(shadow, enforced)]


@dataclass(frozen=True, slots=True)
class Decision:
    """What one evaluation decided for one version.

    Attributes:
        checksum: The version.
        state: Its state afterwards.
        decision: ``promote``, ``continue_probation``, ``degrade``, ``hold`` or
            ``manual_override``.
        rationale: The metrics and checks the decision was made on.
    """

    checksum: str
    state: LifecycleState
    decision: str
    rationale: dict[str, Any]


def metrics(card: Scorecard | None) -> dict[str, Any]:
    """The numbers the policy reads from one version's scorecard (this call included).

    Rates without observations count as perfect (1.0), as in the original: a program without a
    contract is never held back by a contract rate. Successes and failures are as judged: an
    answer a user asked for again at once (a re-ask, ADR 0108) counts as a failure.
    """
    if card is None:
        calls = successes = failures = sessions = passed = failed = 0
        guardrail = outcome = boundary = provenance = profile_passed = profile_failed = 0
        state_keys = None
    else:
        calls, successes, failures = card.calls, card.successes, card.failures
        sessions = len(set(card.sessions))
        passed, failed = card.contract_pass_count, card.contract_fail_count
        guardrail = card.guardrail_retry_exhausted_count
        outcome = card.outcome_retry_exhausted_count
        boundary = card.wrong_boundary_count
        provenance = card.provenance_violation_count
        profile_passed, profile_failed = card.role_profile_pass_count, card.role_profile_fail_count
        state_keys = card.state_key_consistency_ratio
    # An answer a user corrected at once did not serve: judged a failure (ADR 0108).
    corrected = min(card.user_correction_count, successes) if card is not None else 0
    successes, failures = successes - corrected, failures + corrected
    checks = passed + failed
    profiled = profile_passed + profile_failed
    return {
        "calls": calls,
        "successes": successes,
        "failures": failures,
        "failure_rate": round(failures / calls, 4) if calls else 0.0,
        "session_count": sessions,
        "contract_checks": checks,
        "contract_pass_rate": round(passed / checks, 4) if checks else 1.0,
        "guardrail_retry_exhausted": guardrail,
        "outcome_retry_exhausted": outcome,
        "wrong_boundary_count": boundary,
        "provenance_violations": provenance,
        "state_key_consistency_ratio": 1.0 if state_keys is None else round(state_keys, 4),
        "role_profile_observation_count": profiled,
        "role_profile_pass_rate": round(profile_passed / profiled, 4) if profiled else 1.0,
        "user_correction_count": card.user_correction_count if card is not None else 0,
    }


def failed_checks(
    numbers: dict[str, Any], incumbent_rate: float, policy: Policy = POLICY
) -> list[str]:
    """The gate's checks a version does not meet yet, in the policy's order (none: it passes).

    The gate: enough calls and sessions, a contract pass rate high enough and not below the
    incumbent durable version's, no exhausted guardrail or outcome-repair budget, no wrong
    boundary, no provenance violation, consistent state keys, (only when a role profile
    observed the version) a role-profile pass rate high enough, and the regression rule not
    holding: the original promoted a version failing 7 calls in 11 if its contract checks
    passed, then had nothing to degrade it with (ADR 0080).
    """
    failed: list[str] = []
    if numbers["calls"] < policy.min_calls:
        failed.append("min_calls")
    if numbers["session_count"] < policy.min_sessions:
        failed.append("min_sessions")
    if numbers["contract_pass_rate"] < policy.min_contract_pass_rate:
        failed.append("min_contract_pass_rate")
    if numbers["guardrail_retry_exhausted"] > policy.max_guardrail_retry_exhausted:
        failed.append("max_guardrail_retry_exhausted")
    if numbers["outcome_retry_exhausted"] > policy.max_outcome_retry_exhausted:
        failed.append("max_outcome_retry_exhausted")
    if numbers["wrong_boundary_count"] > policy.max_wrong_boundary_count:
        failed.append("max_wrong_boundary_count")
    if numbers["provenance_violations"] > policy.max_provenance_violations:
        failed.append("max_provenance_violations")
    if numbers["state_key_consistency_ratio"] < policy.min_state_key_consistency_ratio:
        failed.append("min_state_key_consistency_ratio")
    if (
        numbers["role_profile_observation_count"] > 0
        and numbers["role_profile_pass_rate"] < policy.min_role_profile_pass_rate
    ):
        failed.append("min_role_profile_pass_rate")
    if numbers["contract_pass_rate"] < incumbent_rate:
        failed.append("not_worse_than_incumbent")
    if regressed(numbers, policy):
        failed.append("regression_rule")
    return failed


def regressed(numbers: dict[str, Any], policy: Policy = POLICY) -> bool:
    """The regression rule: enough calls, failure rate above the bar, failures outnumber
    successes (domain errors count as successes, ADR 0037)."""
    return bool(
        numbers["calls"] >= policy.regression_min_calls
        and numbers["failure_rate"] > policy.regression_failure_rate
        and numbers["failures"] > numbers["successes"]
    )


def _incumbent_rate(card: Scorecard | None) -> float:
    # The original's rule: no incumbent, or one without contract checks, sets no bar.
    if card is None:
        return 0.0
    checks = card.contract_pass_count + card.contract_fail_count
    return round(card.contract_pass_count / checks, 4) if checks else 0.0


def state_of(record: ArtifactRecord, digest: str | None) -> LifecycleState | None:
    """The lifecycle state of one version, ``None`` when it has none (no lifecycle data)."""
    lifecycle = record.lifecycle
    if lifecycle is None or digest is None:
        return None
    entry = lifecycle.versions.get(digest)
    return None if entry is None else entry.lifecycle_state


def ensure_lifecycle(record: ArtifactRecord, now: str) -> Lifecycle:
    """The record's lifecycle block, made on first use.

    A record that already holds code when its block is made is a legacy record (written before
    lifecycles, or while shadow mode was off): the versions it holds then start in probation,
    as in the original. Versions written later start as candidates (the original put every
    later version of a legacy record in probation too).
    """
    lifecycle = record.lifecycle
    if lifecycle is not None:
        return lifecycle
    legacy = bool(record.code.strip()) and record.code_checksum is not None
    lifecycle = Lifecycle(legacy_compatibility_mode=legacy, created_at=now)
    if legacy:
        known = [*record.scorecards, *record.versions, record.code_checksum]
        for digest in dict.fromkeys(d for d in known if d):
            lifecycle.versions[digest] = LifecycleEntry(
                artifact_checksum=digest,
                lifecycle_state="probation",
                compatibility_mode=True,
                first_seen_at=now,
                last_decision="hold",
                last_decision_at=now,
            )
    record.lifecycle = lifecycle
    return lifecycle


def _transition(
    current: LifecycleState, run: RunKind, *, enforced: bool, gate: bool, fell: bool
) -> tuple[str, LifecycleState, dict[str, Any]]:
    """(decision, next state, extra rationale): the original's table."""
    if current == "candidate":
        if run == "answered":
            return "continue_probation", "probation", {"candidate_bootstrap": True}
        return "hold", "candidate", {}
    if current == "probation":
        if enforced and run in ("failed", "corrected"):
            return "degrade", "degraded", {"enforced_immediate_regression": True}
        if gate:
            return "promote", "durable", {}
        if fell:
            return "degrade", "degraded", {}
        return "continue_probation", "probation", {}
    if current == "durable":
        if fell:
            return "degrade", "degraded", {}
        return "hold", "durable", {}
    if gate:
        return "promote", "durable", {}
    return "hold", "degraded", {}


def _append(lifecycle: Lifecycle, entry: LedgerEntry) -> None:
    evaluations = lifecycle.shadow_ledger.evaluations
    evaluations.append(entry)
    if len(evaluations) > LEDGER_KEPT:
        del evaluations[:-LEDGER_KEPT]


def _entry(lifecycle: Lifecycle, digest: str, now: str) -> LifecycleEntry:
    entry = lifecycle.versions.pop(digest, None)
    if entry is None:
        entry = LifecycleEntry(
            artifact_checksum=digest,
            lifecycle_state="candidate",
            incumbent_artifact_checksum=lifecycle.incumbent_durable_checksum,
            first_seen_at=now,
            last_decision="hold",
            last_decision_at=now,
        )
    # Re-inserted last: the map's order is least recently decided first, for its bound.
    lifecycle.versions[digest] = entry
    return entry


def _trim_entries(record: ArtifactRecord, lifecycle: Lifecycle) -> None:
    entries = lifecycle.versions
    protected = {record.code_checksum, lifecycle.incumbent_durable_checksum, *record.versions}
    for digest in list(entries):
        if len(entries) <= LIFECYCLE_ENTRIES_KEPT:
            break
        if digest not in protected:
            del entries[digest]


def evaluate(
    record: ArtifactRecord,
    digest: str,
    run: RunKind,
    *,
    enforced: bool,
    now: str,
    calls_covered: int = 1,
    policy: Policy = POLICY,
) -> Decision:
    """Evaluate one version after its latest run(s) were folded into its scorecard; update its
    lifecycle entry and the incumbent, and append the evaluation to the ledger.

    ``run`` is how the latest run ended (for a batch of answered runs, ``answered``);
    ``enforced``: under enforcement a failure on probation degrades at once. A version that
    becomes durable is the incumbent; a degraded incumbent stops being it (the original kept
    it until a manual override).
    """
    lifecycle = ensure_lifecycle(record, now)
    lifecycle.policy_version = policy.version
    entry = _entry(lifecycle, digest, now)
    incumbent = lifecycle.incumbent_durable_checksum
    if incumbent == digest:
        incumbent = None
    numbers = metrics(record.scorecards.get(digest))
    bar = _incumbent_rate(record.scorecards.get(incumbent) if incumbent else None)
    failed = failed_checks(numbers, bar, policy)
    gate = not failed
    fell = regressed(numbers, policy)
    current = entry.lifecycle_state
    decision, following, extra = _transition(current, run, enforced=enforced, gate=gate, fell=fell)
    rationale = {
        **numbers,
        "run": run,
        "incumbent_contract_pass_rate": bar,
        "observation_window_met": (
            numbers["calls"] >= policy.min_calls and numbers["session_count"] >= policy.min_sessions
        ),
        "gate_pass": gate,
        "failed_checks": failed,
        "regressed": fell,
        "profile_enabled_role": numbers["role_profile_observation_count"] > 0,
        **extra,
    }
    entry.lifecycle_state = following
    entry.last_decision = decision
    entry.last_decision_at = now
    entry.policy_version = policy.version
    if following == "durable":
        lifecycle.incumbent_durable_checksum = digest
    elif lifecycle.incumbent_durable_checksum == digest:
        lifecycle.incumbent_durable_checksum = None
    _append(
        lifecycle,
        LedgerEntry(
            tool_name=record.role,
            method_name=record.method_name,
            candidate_artifact_id=digest,
            incumbent_artifact_id=incumbent,
            decision=decision,
            from_state=current,
            to_state=following,
            policy_version=policy.version,
            window="version_scorecard",
            calls_covered=calls_covered,
            rationale=rationale,
            at=now,
        ),
    )
    _trim_entries(record, lifecycle)
    return Decision(digest, following, decision, rationale)


def latest_decision(record: ArtifactRecord, digest: str) -> Decision | None:
    """The last evaluation of ``digest`` if it is the ledger's newest entry, else ``None``."""
    lifecycle = record.lifecycle
    if lifecycle is None or not lifecycle.shadow_ledger.evaluations:
        return None
    last = lifecycle.shadow_ledger.evaluations[-1]
    entry = lifecycle.versions.get(digest)
    if last.candidate_artifact_id != digest or entry is None:
        return None
    return Decision(digest, entry.lifecycle_state, last.decision, dict(last.rationale))


def apply_override(
    record: ArtifactRecord,
    digest: str,
    state: LifecycleState,
    *,
    actor: str,
    reason: str | None,
    now: str,
) -> ManualOverride:
    """Set one version's state by hand (``recurgent tools set-lifecycle``), recorded twice: in
    ``manual_overrides`` (the last 200) and as a ``manual_override`` entry of the ledger.

    ``durable`` makes the version the incumbent; any other state takes the incumbency from it
    (the original cleared it only for ``degraded``, leaving a probation "incumbent"). The policy
    goes on evaluating the version afterwards, as in the original.
    """
    lifecycle = ensure_lifecycle(record, now)
    previous = state_of(record, digest)
    entry = _entry(lifecycle, digest, now)
    entry.lifecycle_state = state
    entry.last_decision = "manual_override"
    entry.last_decision_at = now
    if state == "durable":
        lifecycle.incumbent_durable_checksum = digest
    elif lifecycle.incumbent_durable_checksum == digest:
        lifecycle.incumbent_durable_checksum = None
    override = ManualOverride(
        at=now,
        actor=actor,
        role=record.role,
        method=record.method_name,
        artifact_checksum=digest,
        state=state,
        previous_state=previous,
        reason=reason,
    )
    overrides = lifecycle.manual_overrides
    overrides.append(override)
    if len(overrides) > OVERRIDES_KEPT:
        del overrides[:-OVERRIDES_KEPT]
    _append(
        lifecycle,
        LedgerEntry(
            decision_type="manual_override",
            tool_name=record.role,
            method_name=record.method_name,
            candidate_artifact_id=digest,
            incumbent_artifact_id=lifecycle.incumbent_durable_checksum,
            decision="manual_override",
            from_state=previous,
            to_state=state,
            policy_version=lifecycle.policy_version,
            window=None,
            calls_covered=0,
            rationale={"actor": override.actor, "reason": override.reason},
            at=now,
        ),
    )
    _trim_entries(record, lifecycle)
    return override
