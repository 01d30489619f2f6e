"""Scenario 2: the news assistant delegates a fetcher and a parser, then answers a follow-up.

Also issue 3, phase 5: delegated calls log at depth 1 under the ``ask`` call, every line was
run by the sandbox, and nothing the generated programs defined leaks onto the agent.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import Any

from acceptance.feed_server import HIT_KEYS, FeedServer, to_latin1
from acceptance.harness import Backend, LogLine, children_of, log_shape, single_trace
from acceptance.programs.news import (
    FETCH,
    FETCH_WITHOUT_PROVENANCE,
    FETCHER,
    FORMAT_QUESTION,
    NEWS_QUESTION,
    PARSER,
    ROLE,
    SOURCE_QUESTION,
)
from recurgent import Agent

SOURCES = {"Google News": "google", "Yahoo! News": "yahoo", "NY Times": "nyt"}
FETCH_OK: LogLine = (1, FETCHER, "fetch", "ok", None)
PARSE_OK: LogLine = (1, PARSER, "parse", "ok", None)
ASK_OK: LogLine = (0, ROLE, "ask", "ok", None)
HEALTHY_NEWS = [FETCH_OK, PARSE_OK, FETCH_OK, PARSE_OK, FETCH_OK, PARSE_OK, ASK_OK]
# The helper function the news program defines for itself.
PROGRAM_HELPER = "headline_entries"


def hits(**counts: int) -> dict[str, int]:
    """Feed-server hit counters: the given routes, every other route zero."""
    return {key: counts.get(key, 0) for key in HIT_KEYS}


def top_titles(feed: bytes, count: int = 5) -> list[str]:
    """The first ``count`` item titles of a feed, parsed independently of the agent."""
    root = ET.fromstring(feed)
    return [(item.findtext("title") or "").strip() for item in root.iter("item")][:count]


def source_uris(value: dict[str, Any]) -> list[str]:
    return [source["uri"] for source in value["provenance"]["sources"]]


def ask_news(provider: Backend) -> tuple[Agent, Any]:
    assistant = provider.agent(ROLE)
    return assistant, assistant.ask(NEWS_QUESTION)


class TestHeadlineJourney:
    def test_top_news_from_three_feeds_then_the_source_from_history(
        self, provider: Backend, feed_server: FeedServer
    ) -> None:
        """ask() fetches and parses each feed once at depth 1; the follow-up refetches nothing."""
        assistant, news = ask_news(provider)
        after_news = provider.log()
        follow_up = assistant.ask(SOURCE_QUESTION)
        entries = provider.log()

        single_trace(entries)
        assert all(entry["execution_receiver"] == "sandbox" for entry in entries)
        ask_entry = after_news[-1]
        assert (ask_entry["depth"], ask_entry["method"]) == (0, "ask")
        assert all(entry["depth"] == 1 for entry in children_of(entries, ask_entry))
        assert after_news[:-1] == children_of(entries, ask_entry)
        assert children_of(entries, entries[-1]) == []
        assert PROGRAM_HELPER not in dir(assistant)
        assert not assistant.responds_to(PROGRAM_HELPER)
        assert not hasattr(Agent, PROGRAM_HELPER)
        if provider.live:
            return  # live models pick their own feeds, tools and value shapes

        urls = [feed_server.url(source) for source in SOURCES.values()]
        assert news.is_ok
        assert urls == source_uris(news.value)
        assert {"fixture"} == {s["retrieval_mode"] for s in news.value["provenance"]["sources"]}
        assert {
            name: top_titles(feed_server.feed_bytes(source)) for name, source in SOURCES.items()
        } == {
            name: [item["title"] for item in items]
            for name, items in news.value["by_source"].items()
        }
        assert len(news.value["items"]) == 15
        assert news.value["errors"] == []
        assert log_shape(entries) == [*HEALTHY_NEWS, ASK_OK]
        assert hits(google=1, yahoo=1, nyt=1) == feed_server.hits

        assert follow_up.is_ok
        assert urls == follow_up.value["sources"]
        assert follow_up.value["answered_from"] == "conversation_history"
        assert ask_entry["call_id"] == follow_up.value["call_id"]
        # One fetcher program, generated for the first feed and reused from the tool store for
        # the other two (ADR 0047).
        assert len(provider.requests_for(FETCHER)) == 1

    def test_delegated_calls_carry_their_contracts(self, offline_provider: Backend) -> None:
        """Fetcher and parser lines log the contract they were delegated with, validated."""
        ask_news(offline_provider)
        entries = offline_provider.log()

        assert [(entry["role"], entry["contract_deliverable"]) for entry in entries[:-1]] == [
            (FETCHER, {"type": "object", "required": ["status", "body"]}),
            (PARSER, {"type": "object", "required": ["items"]}),
        ] * 3
        assert {("fields", True, True)} == {
            (
                entry["contract_source"],
                entry["contract_validation_applied"],
                entry["contract_validation_passed"],
            )
            for entry in entries[:-1]
        }
        assert entries[-1]["contract_source"] == "none"


class TestContentFollowUp:
    def test_format_that_answer_reads_the_whole_earlier_answer_through_content(
        self, offline_provider: Backend, feed_server: FeedServer
    ) -> None:
        """ "Format that answer as markdown": the follow-up program takes the news answer's
        content_ref from history and reads all of it with content(ref) (the record's preview
        stops at 500 characters); no feed is fetched again and no tool is called (ADR 0102)."""
        assistant, news = ask_news(offline_provider)
        summary = assistant.runtime_context["conversation_history"][-1]["outcome_summary"]

        formatted = assistant.ask(FORMAT_QUESTION)
        entries = offline_provider.log()

        assert (summary["content_kind"], summary["value_preview"][-3:]) == ("object", "...")
        assert formatted.is_ok
        expected = []
        for name, source in SOURCES.items():
            expected.append(f"## {name}")
            links = [item["link"] for item in news.value["by_source"][name]]
            titles = top_titles(feed_server.feed_bytes(source))
            expected.extend(f"- [{t}]({link})" for t, link in zip(titles, links, strict=True))
            expected.append("")
        assert formatted.value == "\n".join(expected).rstrip()
        assert log_shape(entries) == [*HEALTHY_NEWS, ASK_OK]
        assert hits(google=1, yahoo=1, nyt=1) == feed_server.hits
        follow_up = entries[-1]
        assert (
            follow_up["content_store_read_hit_count"],
            follow_up["content_store_read_miss_count"],
            follow_up["content_store_read_refs"],
            follow_up["history_access_detected"],
            follow_up["content_store_entry_count"],
        ) == (1, 0, [summary["content_ref"]], True, 2)
        assert entries[-2]["content_store_write_ref"] == summary["content_ref"]
        assert children_of(entries, follow_up) == []


class TestFeedFaults:
    def test_a_yahoo_redirect_is_followed(
        self, offline_provider: Backend, feed_server: FeedServer
    ) -> None:
        """A 308 from Yahoo is followed to its target; all three sources still answer."""
        feed_server.set_fault("yahoo", "redirect")
        _, news = ask_news(offline_provider)

        assert news.is_ok
        assert list(SOURCES) == list(news.value["by_source"])
        assert [feed_server.url(source) for source in SOURCES.values()] == source_uris(news.value)
        assert log_shape(offline_provider.log()) == HEALTHY_NEWS
        assert hits(google=1, yahoo=1, yahoo_redirect_target=1, nyt=1) == feed_server.hits

    def test_a_forbidden_yahoo_feed_leaves_two_sources_and_a_typed_http_error(
        self, offline_provider: Backend, feed_server: FeedServer
    ) -> None:
        """A 403 is a typed http_error at depth 1; the answer carries on with two sources."""
        feed_server.set_fault("yahoo", "forbidden")
        _, news = ask_news(offline_provider)
        entries = offline_provider.log()

        forbidden: LogLine = (1, FETCHER, "fetch", "error", "http_error")
        assert [FETCH_OK, PARSE_OK, forbidden, FETCH_OK, PARSE_OK, ASK_OK] == log_shape(entries)
        yahoo_url = feed_server.url("yahoo")
        assert {"status_code": 403, "url": yahoo_url} == entries[2]["outcome_error_metadata"]
        assert entries[2]["outcome_retriable"] is False
        assert entries[-1]["call_id"] == entries[2]["parent_call_id"]
        assert news.is_ok
        assert list(news.value["by_source"]) == ["Google News", "NY Times"]
        assert [feed_server.url("google"), feed_server.url("nyt")] == source_uris(news.value)
        assert [("Yahoo! News", yahoo_url, "fetch", "http_error")] == [
            (e["source"], e["uri"], e["stage"], e["error_type"]) for e in news.value["errors"]
        ]

    def test_malformed_nyt_xml_is_a_parse_error_at_depth_one(
        self, offline_provider: Backend, feed_server: FeedServer
    ) -> None:
        """Broken XML fails the parser with parse_error; the assistant keeps the other feeds."""
        feed_server.set_fault("nyt", "malformed")
        _, news = ask_news(offline_provider)

        broken: LogLine = (1, PARSER, "parse", "error", "parse_error")
        assert [*HEALTHY_NEWS[:5], broken, ASK_OK] == log_shape(offline_provider.log())
        assert list(news.value["by_source"]) == ["Google News", "Yahoo! News"]
        assert [(e["source"], e["stage"], e["error_type"]) for e in news.value["errors"]] == [
            ("NY Times", "parse", "parse_error")
        ]

    def test_a_latin1_feed_is_decoded_by_its_declared_charset(
        self, offline_provider: Backend, feed_server: FeedServer
    ) -> None:
        """An ISO-8859-1 NYT feed reads as the same headlines, accents intact."""
        feed_server.set_fault("nyt", "latin1")
        _, news = ask_news(offline_provider)

        expected = top_titles(to_latin1(feed_server.feed_bytes("nyt")))
        assert expected == [item["title"] for item in news.value["by_source"]["NY Times"]]
        assert "In a Quiet Alpine Town, a Café Becomes a Lifeline" in expected
        assert log_shape(offline_provider.log()) == HEALTHY_NEWS


class TestProvenanceGuardrail:
    def test_fetching_without_provenance_twice_exhausts_the_guardrail_at_depth_one(
        self, offline_provider: Backend, feed_server: FeedServer
    ) -> None:
        """Two provenance-less fetches end the Google fetch; the assistant answers from the rest."""
        offline_provider.script(
            (FETCHER, "fetch"), [FETCH_WITHOUT_PROVENANCE, FETCH_WITHOUT_PROVENANCE, FETCH]
        )
        _, news = ask_news(offline_provider)
        entries = offline_provider.log()

        exhausted: LogLine = (1, FETCHER, "fetch", "error", "guardrail_retry_exhausted")
        assert [exhausted, FETCH_OK, PARSE_OK, FETCH_OK, PARSE_OK, ASK_OK] == log_shape(entries)
        google = entries[0]
        assert google["guardrail_violation_subtype"] == "missing_external_provenance"
        assert google["guardrail_recovery_attempts"] == 2
        assert google["guardrail_retry_exhausted"] is True
        assert [f["stage"] for f in google["attempt_failures"]] == ["validation", "validation"]
        metadata = google["outcome_error_metadata"]
        assert metadata["last_violation_subtype"] == "missing_external_provenance"
        assert "normalized" not in metadata
        assert entries[-1]["call_id"] == google["parent_call_id"]
        assert news.is_ok
        assert list(news.value["by_source"]) == ["Yahoo! News", "NY Times"]
        assert [(e["source"], e["error_type"]) for e in news.value["errors"]] == [
            ("Google News", "guardrail_retry_exhausted")
        ]
        # Both refused attempts really fetched before their value was refused.
        assert hits(google=2, yahoo=1, nyt=1) == feed_server.hits
        first, retry, *_ = offline_provider.requests_for(FETCHER)
        assert "<violation_subtype>" not in first.user_prompt
        assert (
            "<violation_subtype>missing_external_provenance</violation_subtype>"
            in retry.user_prompt
        )
        # Two refused Google programs, one for Yahoo; NY Times reuses Yahoo's stored program
        # (the refused one never answered, so it was not reused: ADR 0047).
        assert len(offline_provider.requests_for(FETCHER)) == 3
