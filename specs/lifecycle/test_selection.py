"""The reuse / repair / regenerate decision, as tables (ADR 0037)."""

from __future__ import annotations

from pathlib import Path

import pytest

from recurgent import Outcome
from recurgent._lifecycle._selection import (
    MAX_REPAIRS_BEFORE_REGEN,
    Route,
    Start,
    after_persisted,
    after_repair,
    plan_call,
    result_kind,
)
from recurgent._store import Lookup
from recurgent._store._artifacts import ArtifactRecord

RECORD = ArtifactRecord(role="calculator", method_name="add", code="return 1")
OK = Outcome.ok(5)


def _error(error_type: str) -> Outcome:
    return Outcome.error(error_type=error_type, error_message="m")


@pytest.mark.parametrize(
    ("lookup", "start"),
    [
        (None, Start("generate", "persistence_off")),
        (Lookup(RECORD, "hit", Path("a.json")), Start("persisted", "hit")),
        (Lookup(None, "hit", Path("a.json")), Start("generate", "hit")),
        (Lookup(None, "missing", Path("a.json")), Start("generate", "missing")),
        (Lookup(RECORD, "degraded", Path("a.json")), Start("generate", "degraded")),
        (
            Lookup(RECORD, "checksum_mismatch", Path("a.json")),
            Start("generate", "checksum_mismatch"),
        ),
        (Lookup(None, "corrupt", Path("a.json")), Start("generate", "corrupt")),
    ],
)
def test_plan_call(lookup: Lookup | None, start: Start) -> None:
    """Only a reusable record runs persisted; every miss generates and keeps its reason."""
    assert plan_call(lookup) == start


@pytest.mark.parametrize(
    ("outcome", "raised", "kind"),
    [
        (OK, False, "ok"),
        (None, False, "failure"),
        (_error("division_by_zero"), False, "domain_error"),
        (_error("invalid_input"), False, "domain_error"),
        (_error("division_by_zero"), True, "failure"),
        (_error("execution"), False, "failure"),
        (_error("parse_failed"), False, "failure"),
        (_error("low_utility"), False, "failure"),
        (_error("network_error"), False, "failure"),
        (_error("timeout"), True, "failure"),
        (_error("missing_capability"), False, "failure"),
    ],
)
def test_result_kind(outcome: Outcome | None, raised: bool, kind: str) -> None:
    """A returned error outside the taxonomy is a domain error; runtime errors, raised errors
    and the taught tool vocabulary are failures."""
    assert result_kind(outcome, raised=raised) == kind


@pytest.mark.parametrize(
    ("outcome", "raised", "repairs", "route"),
    [
        (OK, False, 0, Route("return", "ok", None, "ok")),
        (OK, False, 3, Route("return", "ok", None, "ok")),
        (
            _error("division_by_zero"),
            False,
            0,
            Route("return", "domain_error", None, "domain_error"),
        ),
        (_error("timeout"), True, 0, Route("return", "failure", "extrinsic", "extrinsic")),
        (_error("provider"), True, 0, Route("return", "failure", "extrinsic", "extrinsic")),
        (_error("rate_limited"), False, 0, Route("return", "failure", "extrinsic", "extrinsic")),
        (_error("network_error"), False, 2, Route("return", "failure", "extrinsic", "extrinsic")),
        (_error("parse_failed"), False, 0, Route("repair", "failure", "adaptive", "repairable")),
        (
            _error("contract_violation"),
            False,
            2,
            Route("repair", "failure", "adaptive", "repairable"),
        ),
        (_error("execution"), True, 0, Route("repair", "failure", "intrinsic", "repairable")),
        (
            _error("tool_registry_violation"),
            True,
            1,
            Route("repair", "failure", "intrinsic", "repairable"),
        ),
        (
            _error("division_by_zero"),
            True,
            0,
            Route("repair", "failure", "intrinsic", "repairable"),
        ),
        (None, False, 0, Route("repair", "failure", "intrinsic", "repairable")),
        (
            _error("parse_failed"),
            False,
            3,
            Route("regenerate", "failure", "adaptive", "repair_budget_exhausted"),
        ),
        (
            _error("execution"),
            True,
            7,
            Route("regenerate", "failure", "intrinsic", "repair_budget_exhausted"),
        ),
    ],
)
def test_after_persisted(outcome: Outcome | None, raised: bool, repairs: int, route: Route) -> None:
    """Answers return; extrinsic failures return as they are; others repair within budget,
    then regenerate."""
    assert after_persisted(outcome, raised=raised, repair_count=repairs) == route


@pytest.mark.parametrize(
    ("stalled", "repairs", "route"),
    [
        (False, 0, Route("return", "failure", "extrinsic", "extrinsic")),
        (True, 0, Route("repair", "failure", "intrinsic", "repairable")),
        (True, 3, Route("regenerate", "failure", "intrinsic", "repair_budget_exhausted")),
    ],
)
def test_a_stalled_run_is_the_programs_failure(stalled: bool, repairs: int, route: Route) -> None:
    """A deadline stop of a run that waited on nothing outside is intrinsic; else extrinsic."""
    outcome = _error("timeout")

    assert after_persisted(outcome, raised=True, repair_count=repairs, stalled=stalled) == route


def test_the_repair_budget_is_three() -> None:
    """Three repairs since the last generation are allowed, the fourth failure regenerates."""
    routes = [
        after_persisted(_error("execution"), raised=True, repair_count=n).action for n in range(5)
    ]
    assert (MAX_REPAIRS_BEFORE_REGEN, routes) == (
        3,
        ["repair", "repair", "repair", "regenerate", "regenerate"],
    )


@pytest.mark.parametrize(
    ("outcome", "raised", "route"),
    [
        (OK, False, Route("return", "ok", None, "ok")),
        (
            _error("invalid_input"),
            False,
            Route("return", "domain_error", None, "domain_error"),
        ),
        (_error("provider"), True, Route("return", "failure", "extrinsic", "extrinsic")),
        (_error("timeout"), True, Route("return", "failure", "extrinsic", "extrinsic")),
        (_error("execution"), True, Route("regenerate", "failure", "intrinsic", "repair_failed")),
        (
            _error("parse_failed"),
            False,
            Route("regenerate", "failure", "adaptive", "repair_failed"),
        ),
    ],
)
def test_after_repair(outcome: Outcome, raised: bool, route: Route) -> None:
    """A repaired answer returns; an outage returns as is; a still-broken program regenerates."""
    assert after_repair(outcome, raised=raised) == route
