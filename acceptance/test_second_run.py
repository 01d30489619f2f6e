"""Issue 11: each scenario run twice on one tool store root (the backend's explicit root).

The second run is a new agent, as a new process would build it: every method the first run
stored as cacheable answers from the store with no provider request, and the answers are the
same.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from acceptance.harness import Backend
from acceptance.programs.calculator import ROLE as CALCULATOR
from acceptance.programs.debate import GUIDANCE, QUESTION, ROLE as HOST, THINKERS
from acceptance.programs.news import NEWS_QUESTION, ROLE as ASSISTANT

Scenario = Callable[[Backend], list[Any]]


def calculator(provider: Backend) -> list[Any]:
    calc = provider.agent(CALCULATOR)
    calc.value = 5
    calls = [
        ("add", (3,), {}),
        ("multiply", (4,), {}),
        ("sqrt", (32,), {}),
        ("factorial", (10,), {}),
        ("convert", (100,), {"from": "celsius", "to": "fahrenheit"}),
    ]
    return [getattr(calc, method)(*args, **kwargs).value for method, args, kwargs in calls]


def news(provider: Backend) -> list[Any]:
    return [provider.agent(ASSISTANT).ask(NEWS_QUESTION).value]


def debate(provider: Backend) -> list[Any]:
    host = provider.agent(HOST)
    symposium = host.host(
        question=QUESTION, tool_contract_guidance=GUIDANCE, thinkers=THINKERS, rounds=3
    )
    return [symposium.value, host.debate_takeaways(10).value]


def _stable(value: Any) -> Any:
    """``value`` without ``fetched_at``: provenance records when each run fetched."""
    if isinstance(value, dict):
        return {k: _stable(v) for k, v in value.items() if k != "fetched_at"}
    if isinstance(value, list):
        return [_stable(item) for item in value]
    return value


def _stored_cacheable(provider: Backend) -> set[tuple[str, str]]:
    return {(e["role"], e["method"]) for e in provider.log() if e["cacheable"] is True}


def _twice(provider: Backend, scenario: Scenario) -> None:
    first = scenario(provider)
    cacheable = _stored_cacheable(provider)
    before = {key: len(provider.requests_for(*key)) for key in cacheable}
    logged = len(provider.log())

    second = scenario(provider)

    assert cacheable, "the first run stored no reusable program"
    assert _stable(second) == _stable(first)
    assert {key: len(provider.requests_for(*key)) for key in cacheable} == before
    again = [e for e in provider.log()[logged:] if (e["role"], e["method"]) in cacheable]
    assert again, "the second run called none of the stored methods"
    assert {(e["program_source"], e["artifact_hit"], e["generation_attempt"]) for e in again} == {
        ("persisted", True, 0)
    }


class TestSecondRun:
    def test_calculator(self, offline_provider: Backend) -> None:
        """Every calculator method of the second run comes from the store."""
        _twice(offline_provider, calculator)

    def test_news_assistant(self, offline_provider: Backend) -> None:
        """ask is generated again; the fetcher and parser tools come from the store."""
        _twice(offline_provider, news)
        assert {("news_assistant", "ask")} & _stored_cacheable(offline_provider) == set()

    def test_debate(self, offline_provider: Backend) -> None:
        """host is generated again; the philosophers' programs come from the store."""
        _twice(offline_provider, debate)
