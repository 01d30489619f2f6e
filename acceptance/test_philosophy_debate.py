"""Scenario 4: a symposium host delegates three philosophers and runs three rounds."""

from __future__ import annotations

import pytest

from acceptance.harness import Backend, children_of, log_shape, single_trace
from acceptance.programs.debate import (
    GUIDANCE,
    PHILOSOPHERS,
    QUESTION,
    RESPOND_BREAKS_CONTRACT,
    RESPOND_RAISES,
    ROLE,
    THINKERS,
)
from recurgent import Agent, Outcome

NAMES = [thinker["name"] for thinker in THINKERS]


def hold_symposium(provider: Backend) -> tuple[Agent, Outcome, Outcome]:
    host = provider.agent(ROLE, debug=True)
    symposium = host.host(
        question=QUESTION, tool_contract_guidance=GUIDANCE, thinkers=THINKERS, rounds=3
    )
    return host, symposium, host.debate_takeaways(10)


class TestSymposium:
    def test_nine_delegated_contributions_under_one_host_call(
        self, provider: Backend, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """host() logs nine depth-1 philosopher calls, then itself; takeaways read its context."""
        _, symposium, takeaways = hold_symposium(provider)
        entries = provider.log()

        single_trace(entries)
        host_entry, takeaways_entry = [e for e in entries if e["depth"] == 0]
        assert (host_entry["method"], takeaways_entry["method"]) == ("host", "debate_takeaways")
        assert takeaways_entry["args"] == [10]
        assert children_of(entries, takeaways_entry) == []
        if provider.live:
            return  # a live host may shape its panel and value differently

        assert len(entries) == 11
        philosopher_lines = [(1, role, "respond", "ok", None) for role in PHILOSOPHERS] * 3
        assert philosopher_lines == log_shape(entries)[:9]
        assert entries[:9] == children_of(entries, host_entry)
        assert {("fields", GUIDANCE["purpose"], True, True)} == {
            (
                e["contract_source"],
                e["contract_purpose"],
                e["contract_validation_applied"],
                e["contract_validation_passed"],
            )
            for e in entries[:9]
        }
        assert GUIDANCE["deliverable"] == entries[0]["contract_deliverable"]
        assert {
            key: symposium.value[key] for key in ("question", "thinkers", "rounds_completed")
        } == {"question": QUESTION, "thinkers": NAMES, "rounds_completed": 3}
        assert symposium.value["summary"] == {"total_contributions": 9, "failed_contributions": 0}
        assert [entry["thinker"] for entry in symposium.value["transcript"]] == NAMES * 3
        assert [t["synthesis"] for t in symposium.value["transcript"]] == takeaways.value[
            "takeaways"
        ]
        # persona= is no delegate option: ignored with a debug warning, never fatal.
        assert [
            f"[AGENT DELEGATE OPTION IGNORE {ROLE}->{role}] ignored non-runtime options: persona"
            for role in PHILOSOPHERS
        ] == capsys.readouterr().err.splitlines()

    @pytest.mark.parametrize(
        ("program", "error_type"),
        [(RESPOND_RAISES, "execution"), (RESPOND_BREAKS_CONTRACT, "contract_violation")],
        ids=["raises", "breaks_contract"],
    )
    def test_a_failing_philosopher_leaves_a_partial_symposium_that_is_still_ok(
        self, offline_provider: Backend, program: str, error_type: str
    ) -> None:
        """Epicurus fails every round: six contributions, three failures, and host() is ok."""
        offline_provider.script(("philosopher_1", "respond"), program)
        host, symposium, takeaways = hold_symposium(offline_provider)
        entries = offline_provider.log()

        round_lines = [
            (1, "philosopher_0", "respond", "ok", None),
            (1, "philosopher_1", "respond", "error", error_type),
            (1, "philosopher_2", "respond", "ok", None),
        ]
        assert round_lines * 3 + [
            (0, ROLE, "host", "ok", None),
            (0, ROLE, "debate_takeaways", "ok", None),
        ] == log_shape(entries)
        assert symposium.value["summary"] == {"total_contributions": 6, "failed_contributions": 3}
        assert [("Epicurus", error_type)] * 3 == [
            (failure["thinker"], failure["error_type"])
            for failure in host.runtime_context["symposium"]["failures"]
        ]
        assert len(takeaways.value["takeaways"]) == 6
        assert takeaways.value["failed_contributions"] == 3
