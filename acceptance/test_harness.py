"""The harness itself: routing by the prompts' markers, scripted sequences, and loud failures."""

from __future__ import annotations

import pytest

from acceptance.harness import Backend, openai_handler
from acceptance.programs import PROGRAMS
from acceptance.programs.calculator import ROLE as CALCULATOR
from acceptance.programs.news import NEWS_QUESTION, ROLE as ASSISTANT
from acceptance.scripted import ProgramRouter, UnroutedRequest
from recurgent import Agent, providers
from recurgent.providers.openai import OpenAIProvider
from specs.providers.fake_openai_server import FakeOpenAIServer

SYSTEM = "## Who You Are\nYou are a Tool Builder called 'calculator'. ..."


def user_prompt(method: str, args: str = "[]", memory: str = "{}") -> str:
    return (
        f"<invocation>\n<action>\n<method>{method}</method>\n<args>{args}</args>\n"
        f"<kwargs>{{}}</kwargs>\n</action>\n<memory>{memory}</memory>\n</invocation>"
    )


class TestUnknownRoutes:
    def test_an_unscripted_method_fails_loudly_and_is_recorded(
        self, offline_provider: Backend
    ) -> None:
        """No program for calculator.tan: a provider error naming the route, in both modes."""
        outcome = offline_provider.agent(CALCULATOR).tan(1)

        assert outcome.error_type == "provider" and outcome.error_message is not None
        assert "No scripted program for 'calculator'.tan" in outcome.error_message
        assert (offline_provider.take_unrouted()) == [
            "No scripted program for 'calculator'.tan with arguments [1]"
        ] * 2

    def test_the_loopback_model_answers_an_unknown_route_with_http_500(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Over HTTP the failure is a 500 whose message the provider error carries."""
        monkeypatch.setattr(providers, "ALLOW_PROVIDER_REQUESTS", True)
        router = ProgramRouter(PROGRAMS)
        with FakeOpenAIServer(openai_handler(router)) as server:
            provider = OpenAIProvider(
                base_url=server.base_url, api_key="sk-loopback-test", max_retries=0
            )
            outcome = Agent(CALCULATOR, provider=provider, log=False).tan(1)

        assert outcome.error_type == "provider"
        assert outcome.error_message == (
            "OpenAI API error (HTTP 500): loopback model: No scripted program for "
            "'calculator'.tan with arguments [1]"
        )
        assert len(server.requests) == 2
        assert len(router.unrouted) == 2

    def test_an_ask_turn_with_no_scripted_phrase_lists_the_phrases_it_knows(self) -> None:
        """An unknown question names the phrases the scripted ask turns answer."""
        router = ProgramRouter({(ASSISTANT, "ask", "Google News"): "result = 1"})
        system = SYSTEM.replace("calculator", ASSISTANT)

        with pytest.raises(UnroutedRequest, match="scripted phrases: 'Google News'"):
            router.reply(system, user_prompt("ask", "['What time is it?']"))
        assert len(router.unrouted) == 1

    def test_prompts_without_markers_are_unroutable(self) -> None:
        """A system prompt without called '<role>' cannot be routed, and says why."""
        router = ProgramRouter({(CALCULATOR, "add"): "result = 1"})

        with pytest.raises(UnroutedRequest, match="called '<role>'"):
            router.reply("You write Python.", user_prompt("add"))
        assert (router.unrouted) == [
            "Unable to route a request: no called '<role>' in the system prompt marker"
        ]


class TestRouting:
    def test_ask_turns_are_told_apart_by_their_arguments_only(self) -> None:
        """A phrase in memory does not route a turn; the same phrase in the arguments does."""
        router = ProgramRouter(
            {(ASSISTANT, "ask", "Google News"): "result = 'news'", (ASSISTANT, "ask"): "result = 0"}
        )
        system = SYSTEM.replace("calculator", ASSISTANT)

        assert (
            router.reply(
                system, user_prompt("ask", "['Where from?']", memory="{'last': 'Google News'}")
            )
            == "result = 0"
        )
        assert router.reply(system, user_prompt("ask", repr([NEWS_QUESTION]))) == "result = 'news'"

    def test_a_sequence_is_used_in_order_and_its_last_reply_repeats(self) -> None:
        """Replies [a, None, b] answer a, then no program, then b for every later request."""
        router = ProgramRouter({(CALCULATOR, "add"): ["result = 1", None, "result = 2"]})

        replies = [router.reply(SYSTEM, user_prompt("add")) for _ in range(5)]

        assert replies == ["result = 1", None, "result = 2", "result = 2", "result = 2"]
        assert len(router.routes_for(CALCULATOR, "add")) == 5

    def test_placeholders_are_substituted_in_every_program(self) -> None:
        """{FEED_BASE} becomes the feed server's URL in the program text."""
        router = ProgramRouter(
            {(CALCULATOR, "add"): "url = '{FEED_BASE}/google/rss'"},
            substitutions={"{FEED_BASE}": "http://127.0.0.1:8080"},
        )

        assert (
            router.reply(SYSTEM, user_prompt("add")) == "url = 'http://127.0.0.1:8080/google/rss'"
        )
