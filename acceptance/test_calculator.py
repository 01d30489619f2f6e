"""Scenario 1: a calculator whose invented methods share one running value across calls."""

from __future__ import annotations

from acceptance.harness import Backend, log_shape, single_trace
from acceptance.programs.calculator import ROLE

CALLS = [
    ("add", (3,), {}),
    ("multiply", (4,), {}),
    ("sqrt", (32,), {}),
    ("sqrt", (144,), {}),
    ("factorial", (10,), {}),
    ("convert", (100,), {"from": "celsius", "to": "fahrenheit"}),
    ("solve", ("2x + 5 = 17",), {}),
]
EXPECTED = [8, 32, 5.656854249492381, 12.0, 3628800, 212.0, 6.0]


class TestCalculatorJourney:
    def test_methods_share_the_value_and_history_lists_earlier_calls(
        self, provider: Backend
    ) -> None:
        """Setter, seven arithmetic calls and history(): eight depth-0 log lines, one state key."""
        calc = provider.agent(ROLE)
        calc.value = 5
        outcomes = [getattr(calc, method)(*args, **kwargs) for method, args, kwargs in CALLS]
        history = calc.history()

        entries = provider.log()
        single_trace(entries)
        assert [(0, ROLE, method) for method, _, _ in [*CALLS, ("history", (), {})]] == [
            (entry["depth"], entry["role"], entry["method"]) for entry in entries
        ]
        assert all(entry["execution_receiver"] == "sandbox" for entry in entries)
        assert all(outcome.is_ok for outcome in [*outcomes, history])
        if provider.live:
            return  # a live model's values and state keys vary; the shape above is the contract

        assert [outcome.value for outcome in outcomes] == EXPECTED
        assert calc.value == 32
        assert {"value", "conversation_history"} == set(calc.runtime_context)
        assert [(method, list(args), kwargs, "ok") for method, args, kwargs in CALLS] == [
            (call["method"], call["args"], call["kwargs"], call["status"]) for call in history.value
        ]
        assert [call["value"] for call in history.value] == [
            "8",
            "32",
            "5.656854249492381",
            "12.0",
            "3628800",
            "212.0",
            "6.0",
        ]
        assert {"user"} == {call["speaker"] for call in history.value}
        assert [e["call_id"] for e in entries[:7]] == [c["call_id"] for c in history.value]
        assert [(0, ROLE, m, "ok", None) for m, _, _ in CALLS] == log_shape(entries)[:7]
        assert list(range(1, 9)) == [entry["conversation_history_size"] for entry in entries]
        # sqrt(144) reuses the sqrt program stored by sqrt(32): 7 requests for 8 calls (ADR 0047).
        assert len(provider.requests_for(ROLE)) == 7

    def test_setter_and_reader_never_reach_the_provider(self, provider: Backend) -> None:
        """`calc.value = 5` writes memory and `calc.value` reads it back without a call or log."""
        calc = provider.agent(ROLE)
        calc.value = 5

        assert calc.value == 5
        assert provider.log() == []
        if not provider.live:
            assert provider.requests_for(ROLE) == []
