"""The continuity report of one call (recurgent/_profiles/_guard.py, ADR 0083)."""

from __future__ import annotations

from typing import Any

from recurgent._profiles import continuity_report, empty_report, normalize_profile


def _profile(**constraints: dict[str, Any]) -> dict[str, Any]:
    return normalize_profile({"role": "calculator", "version": 3, "constraints": constraints})


def _slot(value: str | None) -> dict[str, str | None]:
    return {"shared_state_slot": value, "signature_family": None, "return_shape_family": None}


def _seen(**methods: str) -> dict[str, dict[str, str]]:
    return {"shared_state_slot": dict(methods)}


COORDINATION = _profile(accumulator={})
PRESCRIPTIVE = _profile(accumulator={"mode": "prescriptive", "canonical_key": "value"})


class TestCoordination:
    """Sibling methods must agree with each other."""

    def test_agreeing_siblings_pass(self) -> None:
        """increment using 'value' like add passes, with the observations listed."""
        report = continuity_report(COORDINATION, "increment", _slot("value"), _seen(add="value"))

        assert report == {
            "profile_version": 3,
            "evaluated": True,
            "continuity_pass_rate": 1.0,
            "passed": True,
            "violation_count": 0,
            "violation_types": [],
            "correction_hint": None,
            "reason": None,
            "constraint_results": [
                {
                    "constraint": "accumulator",
                    "kind": "shared_state_slot",
                    "mode": "coordination",
                    "scope": "all_methods",
                    "methods": ["add", "increment"],
                    "observations": {"add": "value", "increment": "value"},
                    "family_label": "state key",
                    "passed": True,
                    "type": "shared_state_slot_drift",
                }
            ],
        }

    def test_drift_fails_with_an_actionable_correction(self) -> None:
        """increment using 'memory' fails; the correction names the siblings' key."""
        report = continuity_report(COORDINATION, "increment", _slot("memory"), _seen(add="value"))

        assert (report["passed"], report["violation_count"], report["violation_types"]) == (
            False,
            1,
            ["shared_state_slot_drift"],
        )
        assert (
            report["reason"] == "state key diverged across sibling methods: increment used 'memory'"
        )
        assert report["correction_hint"] == (
            "keep this role's state in memory key 'value' (context['value']), as sibling method "
            "add does; this program used 'memory'"
        )

    def test_the_first_method_has_nothing_to_disagree_with(self) -> None:
        """With no sibling seen yet, any key passes."""
        report = continuity_report(COORDINATION, "add", _slot("value"), {})

        assert report["passed"] is True

    def test_the_methods_own_earlier_value_is_not_a_sibling(self) -> None:
        """A new version of add may change add's key when no sibling uses the old one."""
        report = continuity_report(COORDINATION, "add", _slot("total"), _seen(add="value"))

        assert report["passed"] is True

    def test_siblings_that_already_disagree_accept_one_of_their_leading_keys(self) -> None:
        """With add/sub on 'value' and mul on 'memory', 'value' passes and 'acc' fails."""
        seen = _seen(add="value", sub="value", mul="memory")

        assert continuity_report(COORDINATION, "div", _slot("value"), seen)["passed"] is True
        failed = continuity_report(COORDINATION, "div", _slot("acc"), seen)
        assert failed["passed"] is False
        assert "as sibling methods add, sub do" in failed["correction_hint"]

    def test_a_program_that_shows_no_key_is_not_judged(self) -> None:
        """A program using no memory has no state key to compare: the report is empty."""
        report = continuity_report(COORDINATION, "describe", _slot(None), _seen(add="value"))

        assert report == empty_report(3)


class TestPrescriptive:
    """Every method must use the canonical key or value."""

    def test_canonical_key_passes(self) -> None:
        """Using the canonical key passes even against drifted siblings."""
        report = continuity_report(PRESCRIPTIVE, "add", _slot("value"), _seen(mul="memory"))

        assert report["passed"] is True

    def test_other_key_fails_naming_the_canonical_key(self) -> None:
        """Another key fails; the correction names the canonical key."""
        report = continuity_report(PRESCRIPTIVE, "add", _slot("total"), {})

        assert (
            report["reason"] == "state key diverged from expected value 'value': add used 'total'"
        )
        assert report["correction_hint"] == (
            "keep this role's state in memory key 'value' (context['value']), as role profile "
            "constraint 'accumulator' requires; this program used 'total'"
        )

    def test_canonical_value_of_a_return_shape(self) -> None:
        """A return-shape constraint compares the answer's family with canonical_value."""
        profile = _profile(
            shape={
                "kind": "return_shape_family",
                "mode": "prescriptive",
                "canonical_value": "numeric",
            }
        )
        current = {
            "shared_state_slot": None,
            "signature_family": None,
            "return_shape_family": "string",
        }

        report = continuity_report(profile, "add", current, {})

        assert report["violation_types"] == ["return_shape_family_drift"]
        assert report["correction_hint"].startswith("return a value of shape 'numeric'")


class TestScope:
    """Which methods a constraint covers and compares."""

    def test_explicit_methods_cover_only_the_listed(self) -> None:
        """A method not listed gets the empty report; a listed one compares only listed ones."""
        profile = _profile(pair={"scope": "explicit_methods", "methods": ["add", "sub"]})
        seen = _seen(sub="value", mul="memory")

        assert continuity_report(profile, "mul", _slot("acc"), seen) == empty_report(3)
        report = continuity_report(profile, "add", _slot("value"), seen)
        assert report["constraint_results"][0]["observations"] == {"add": "value", "sub": "value"}
        assert report["passed"] is True

    def test_excluded_methods_are_neither_judged_nor_compared(self) -> None:
        """reset is excluded: its call is not judged, and its key does not bind others."""
        profile = _profile(accumulator={"exclude_methods": ["reset"]})

        assert continuity_report(profile, "reset", _slot("x"), _seen(add="value")) == empty_report(
            3
        )
        report = continuity_report(profile, "add", _slot("value"), _seen(reset="x"))
        assert report["passed"] is True
        assert report["constraint_results"][0]["methods"] == ["add"]

    def test_two_constraints_one_failing_halves_the_pass_rate(self) -> None:
        """The pass rate is the share of judged constraints that passed."""
        profile = _profile(
            slot={},
            signature={
                "kind": "signature_family",
                "mode": "prescriptive",
                "canonical_value": "args:0|kwargs:none",
            },
        )
        current = {
            "shared_state_slot": "value",
            "signature_family": "args:none|kwargs:x",
            "return_shape_family": None,
        }

        report = continuity_report(profile, "add", current, _seen(sub="value"))

        assert (report["continuity_pass_rate"], report["violation_types"]) == (
            0.5,
            ["signature_family_drift"],
        )
