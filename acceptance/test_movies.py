"""Scenario 3: asked for showtimes it cannot see, the assistant says so with a typed error."""

from __future__ import annotations

from acceptance.feed_server import FeedServer
from acceptance.harness import Backend, children_of, log_shape, single_trace
from acceptance.programs.news import (
    ASK_MOVIES,
    ASK_MOVIES_FALLBACK,
    FETCHER,
    MOVIES_QUESTION,
    NEWS_QUESTION,
    PARSER,
    RECIPE_QUESTION,
    ROLE,
    SOURCE_QUESTION,
)

MOVIES_KEY = (ROLE, "ask", "movies")
BOUNDARY_METADATA_KEYS = {
    "requested_capability",
    "available_capabilities",
    "blocking_gap",
    "suggested_workarounds",
}


class TestMoviesBoundary:
    def test_showtimes_are_a_non_retriable_capability_unavailable_error(
        self, provider: Backend
    ) -> None:
        """No listings tool: a typed capability_unavailable with metadata, no invented movies."""
        movies = provider.agent(ROLE).ask(MOVIES_QUESTION)
        entries = provider.log()

        single_trace(entries)
        assert (
            entries[-1]["depth"],
            entries[-1]["role"],
            entries[-1]["method"],
        ) == (0, ROLE, "ask")
        if provider.live:
            assert movies.is_error  # a live model must not invent listings either
            return

        assert movies.error_type == "capability_unavailable"
        assert movies.retriable is False
        assert set(movies.metadata) == BOUNDARY_METADATA_KEYS
        assert movies.metadata["requested_capability"] == "live_movie_showtimes"
        assert movies.metadata["available_capabilities"] == []
        assert log_shape(entries) == [(0, ROLE, "ask", "error", "capability_unavailable")]
        assert entries[0]["outcome_retriable"] is False
        assert entries[0]["guardrail_recovery_attempts"] == 0

    def test_a_hardcoded_fallback_list_is_refused_and_the_retry_answers_honestly(
        self, offline_provider: Backend, feed_server: FeedServer
    ) -> None:
        """Fetch-style code returning a canned list as success is a guardrail violation."""
        offline_provider.script(MOVIES_KEY, [ASK_MOVIES_FALLBACK, ASK_MOVIES])
        movies = offline_provider.agent(ROLE).ask(MOVIES_QUESTION)
        [entry] = offline_provider.log()

        assert movies.error_type == "capability_unavailable"
        assert movies.retriable is False
        # The line describes the final, honest attempt; the refused one is in attempt_failures.
        assert None is entry["guardrail_violation_subtype"]
        assert entry["guardrail_recovery_attempts"] == 1
        assert entry["guardrail_retry_exhausted"] is False
        [refused] = entry["attempt_failures"]
        assert (
            refused["attempt_id"],
            refused["stage"],
            refused["error_class"],
        ) == (1, "validation", "GuardrailViolationError")
        assert "Hardcoded fallback" in refused["error_message"]
        assert "fallback_movies" in refused["error_message"]
        assert (entry["attempt_id"], entry["retry_feedback_injected"]) == (2, True)
        first, retry = offline_provider.requests_for(ROLE, "ask")
        assert "<violation_subtype>" not in first.user_prompt
        assert (
            "<violation_subtype>hardcoded_external_fallback_success</violation_subtype>"
            in retry.user_prompt
        )
        # Refused before it ran: the canned program never reached the network.
        assert sum(feed_server.hits.values()) == 0


class TestFavouriteSequence:
    def test_news_source_movies_and_recipe_in_one_conversation(
        self, offline_provider: Backend, feed_server: FeedServer
    ) -> None:
        """Four turns, ten log lines, one trace; only the news turn delegates or fetches."""
        assistant = offline_provider.agent(ROLE)
        questions = (NEWS_QUESTION, SOURCE_QUESTION, MOVIES_QUESTION, RECIPE_QUESTION)
        turns = [assistant.ask(question) for question in questions]
        entries = offline_provider.log()

        single_trace(entries)
        assert [turn.status for turn in turns] == ["ok", "ok", "error", "ok"]
        assert turns[2].metadata["available_capabilities"] == [FETCHER, PARSER]
        assert turns[3].value["dish"] == "Jaffna Kool"
        asks = [entry for entry in entries if entry["depth"] == 0]
        assert len(entries) == 10
        assert [entry["conversation_history_size"] for entry in asks] == [1, 2, 3, 4]
        assert [len(children_of(entries, ask)) for ask in asks] == [6, 0, 0, 0]
        assert [entry["outcome_error_type"] for entry in asks] == [
            None,
            None,
            "capability_unavailable",
            None,
        ]
        assert {key: count for key, count in feed_server.hits.items() if count} == {
            "google": 1,
            "yahoo": 1,
            "nyt": 1,
        }
