"""The reuse / repair / regenerate decision for one call, as pure functions (ADR 0037).

The lifecycle asks three questions and acts on the answers; nothing here touches the store,
the provider or memory:

1. :func:`plan_call`: run the persisted program, or generate? (from the store's lookup)
2. :func:`after_persisted`: the persisted run ended; return its outcome, repair it once, or
   regenerate?
3. :func:`after_repair`: the repaired program ran; return its outcome or regenerate?

:func:`result_kind` sorts an outcome into a success, a *domain error* (a typed error the
program returned on purpose, e.g. ``division_by_zero``: a valid answer that neither triggers a
repair nor counts toward "degraded") or a failure.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from recurgent._lifecycle._lanes import TAXONOMY, FailureClass, failure_class
from recurgent._store import Lookup
from recurgent.outcome import Outcome

__all__ = [
    "MAX_REPAIRS_BEFORE_REGEN",
    "ResultKind",
    "Route",
    "Start",
    "after_persisted",
    "after_repair",
    "plan_call",
    "result_kind",
]

#: Repairs of one program lineage before the next failure regenerates from scratch.
MAX_REPAIRS_BEFORE_REGEN = 3

ResultKind = Literal["ok", "domain_error", "failure"]


@dataclass(frozen=True, slots=True)
class Start:
    """How a call begins.

    Attributes:
        action: ``persisted`` (run the stored program, no provider request) or ``generate``.
        reason: ``hit``, ``persistence_off``, or why the stored program may not run.
    """

    action: Literal["persisted", "generate"]
    reason: str


@dataclass(frozen=True, slots=True)
class Route:
    """What to do once a persisted or repaired program has run.

    Attributes:
        action: ``return`` the outcome as it is, ``repair`` the program (one provider request
            with the failing code, the failure and the inputs), or ``regenerate`` (fresh
            generation, the normal attempt loop).
        kind: The outcome's :data:`ResultKind`.
        failure_class: The failure's class when ``kind`` is ``failure``.
        reason: Why, for the log (``ok``, ``domain_error``, ``extrinsic``,
            ``repairable``, ``repair_budget_exhausted``, ``repair_failed``).
    """

    action: Literal["return", "repair", "regenerate"]
    kind: ResultKind
    failure_class: FailureClass | None
    reason: str


# Immutable answers every persisted call gives, made once.
_PERSISTENCE_OFF = Start("generate", "persistence_off")
_HIT = Start("persisted", "hit")
_ANSWERED: dict[str, Route] = {
    kind: Route("return", kind, None, kind) for kind in ("ok", "domain_error")
}


def plan_call(lookup: Lookup | None) -> Start:
    """Run the stored program when the store says it is reusable; ``None`` means the agent
    has persistence turned off."""
    if lookup is None:
        return _PERSISTENCE_OFF
    if lookup.reusable:
        return _HIT
    return Start("generate", lookup.reason)


def result_kind(outcome: Outcome | None, *, raised: bool) -> ResultKind:
    """Sort a finished run's outcome.

    Args:
        outcome: The run's outcome (``None`` when there is none).
        raised: The outcome was built by the runtime from an exception (execution error,
            timeout, guardrail, ...), not returned by the program.

    A domain error is an error outcome the program *returned*, whose ``error_type`` is not in
    the runtime's taxonomy: the runtime's own types and the taught tool vocabulary
    (``parse_failed``, ``low_utility``, ``network_error``, ...) keep their failure classes.
    """
    if outcome is None:
        return "failure"
    ok = outcome.status == "ok"
    if ok:
        return "ok"
    if raised:
        return "failure"
    error_type = outcome.error_type or ""
    if error_type and error_type not in TAXONOMY:
        return "domain_error"
    return "failure"


def _classify(outcome: Outcome | None, raised: bool) -> tuple[ResultKind, FailureClass | None]:
    kind = result_kind(outcome, raised=raised)
    if kind != "failure":
        return kind, None
    return kind, failure_class(outcome.error_type if outcome is not None else None)


def after_persisted(
    outcome: Outcome | None, *, raised: bool, repair_count: int, stalled: bool = False
) -> Route:
    """Route the end of a persisted run.

    Successes and domain errors are returned; extrinsic failures (timeout, provider, network,
    rate limit) are returned as they are, since a new program would not fix them; any other
    failure gets one repair while the lineage has had fewer than
    :data:`MAX_REPAIRS_BEFORE_REGEN` repairs since it was generated, else a fresh generation.

    ``stalled``: the runtime's deadline stopped a run that waited on nothing outside it (no
    tool, agent or HTTP call): the time went to the program's own code, so the failure is
    intrinsic (ADR 0073) instead of an upstream timeout passed on as it is.
    """
    kind, klass = _classify(outcome, raised)
    if kind != "failure":
        return _ANSWERED[kind]
    if stalled:
        klass = "intrinsic"
    if klass == "extrinsic":
        return Route("return", kind, klass, "extrinsic")
    if repair_count < MAX_REPAIRS_BEFORE_REGEN:
        return Route("repair", kind, klass, "repairable")
    return Route("regenerate", kind, klass, "repair_budget_exhausted")


def after_repair(outcome: Outcome | None, *, raised: bool) -> Route:
    """Route the end of a repair: a success or domain error is the answer; an extrinsic
    failure (the provider or the network is down) is returned as it is; any other failure
    falls through to a fresh generation."""
    kind, klass = _classify(outcome, raised)
    if kind != "failure":
        return _ANSWERED[kind]
    if klass == "extrinsic":
        return Route("return", kind, klass, "extrinsic")
    return Route("regenerate", kind, klass, "repair_failed")
