"""Specs for provider routing: the provider= option, RECURGENT_PROVIDER and model names."""

from __future__ import annotations

from pathlib import Path

import pytest

from recurgent import Agent
from recurgent.errors import UsageError
from recurgent.program import Program
from recurgent.providers import (
    ProviderReply,
    provider_kind,
    reply_usage,
    resolve_provider,
    route_provider,
)
from recurgent.providers.anthropic import AnthropicProvider
from recurgent.providers.openai import OpenAIProvider
from recurgent.testing import ScriptedProvider
from specs.providers.fake_openai_server import FakeOpenAIServer, FakeReply
from specs.providers.support import isolate_provider_env


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No provider variable from the host; keys set per test."""
    isolate_provider_env(monkeypatch, tmp_path / "home")


@pytest.fixture
def keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-test")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test")


class TestModelNames:
    @pytest.mark.parametrize(
        ("model", "kind"),
        [
            ("claude-sonnet-4-5", "anthropic"),
            ("claude-3-5-haiku-latest", "anthropic"),
            ("Claude-Opus-4", "anthropic"),
            ("gpt-4.1-mini", "openai"),
            ("gpt-4o", "openai"),
            ("o1-preview", "openai"),
            ("o3-mini", "openai"),
            ("o4-mini", "openai"),
            ("chatgpt-4o-latest", "openai"),
            ("o3", "openai-compatible"),
            ("gpt5", "openai-compatible"),
            ("llama3.1:8b", "openai-compatible"),
            ("qwen2.5-coder", "openai-compatible"),
            ("anthropic/claude-sonnet", "openai-compatible"),
        ],
    )
    def test_routing_table(self, model: str, kind: str) -> None:
        """claude-* -> Anthropic; gpt-/o1-/o3-/o4-/chatgpt- -> OpenAI; others -> compatible."""
        assert provider_kind(model) == kind

    @pytest.mark.usefixtures("keys")
    @pytest.mark.parametrize(
        ("model", "cls"),
        [
            ("claude-sonnet-4-5", AnthropicProvider),
            ("gpt-4.1-mini", OpenAIProvider),
            ("llama3.1:8b", OpenAIProvider),
            (None, OpenAIProvider),
        ],
    )
    def test_route_provider_builds_the_routed_provider(
        self, model: str | None, cls: type[object]
    ) -> None:
        """route_provider(model) builds the provider the table names."""
        assert type(route_provider(model)) is cls

    @pytest.mark.usefixtures("keys")
    def test_recurgent_provider_overrides_the_model_name(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """RECURGENT_PROVIDER=openai wins over a claude-* model (e.g. an OpenAI-style proxy)."""
        monkeypatch.setenv("RECURGENT_PROVIDER", "OpenAI")

        assert type(route_provider("claude-sonnet-4-5")) is OpenAIProvider

    def test_an_unknown_recurgent_provider_is_refused(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """RECURGENT_PROVIDER=gemini: a UsageError naming the variable."""
        monkeypatch.setenv("RECURGENT_PROVIDER", "gemini")

        with pytest.raises(UsageError) as excinfo:
            route_provider("gpt-4o")

        assert excinfo.value.message == (
            "Unknown provider 'gemini' in RECURGENT_PROVIDER; "
            "pass 'openai', 'anthropic' or a provider object"
        )

    def test_a_claude_model_without_a_key_says_what_to_set(self) -> None:
        """Routing to Anthropic without ANTHROPIC_API_KEY: the UsageError names it."""
        with pytest.raises(UsageError, match="set ANTHROPIC_API_KEY"):
            route_provider("claude-sonnet-4-5")


class TestProviderOption:
    @pytest.mark.usefixtures("keys")
    @pytest.mark.parametrize(
        ("spec", "cls"),
        [
            ("openai", OpenAIProvider),
            ("ANTHROPIC", AnthropicProvider),
            (" anthropic ", AnthropicProvider),
        ],
    )
    def test_names_build_the_provider_at_construction(self, spec: str, cls: type[object]) -> None:
        """provider='openai'/'anthropic' (any case) is built when the option is read."""
        assert type(resolve_provider(spec)) is cls

    def test_a_named_provider_without_a_key_fails_at_agent_construction(self) -> None:
        """Agent(provider='anthropic') without a key: UsageError from Agent(), not a call."""
        with pytest.raises(UsageError, match="set ANTHROPIC_API_KEY"):
            Agent("calculator", provider="anthropic", log=False)

    def test_an_object_is_used_as_is(self) -> None:
        """A provider object passes through unchanged."""
        provider = ScriptedProvider()

        assert resolve_provider(provider) is provider

    def test_none_defers_to_routing(self) -> None:
        """No provider option: None, routed by model name on first use."""
        assert resolve_provider(None) is None


class TestAgentRouting:
    def test_a_gpt_model_reaches_openai_lazily(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """An Agent without provider= builds the routed provider on its first call."""
        with FakeOpenAIServer(lambda body: FakeReply.ok({"code": "result = 9"})) as server:
            monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
            agent = Agent("calculator", model="gpt-4o", log=False)
            assert server.requests == []

            outcome = agent.square(3)

        assert (outcome.status, outcome.value) == ("ok", 9)
        assert server.requests[0].body["model"] == "gpt-4o"


class TestUsage:
    def test_reply_usage_reads_provider_replies_and_programs(self) -> None:
        """Usage is taken from a ProviderReply or a Program, and only as counts."""
        reply = ProviderReply({"code": "x"}, {"input_tokens": 5, "output_tokens": 2})
        program = Program(code="x", usage={"cached_tokens": 3})

        assert reply_usage(reply) == {"input_tokens": 5, "output_tokens": 2}
        assert reply_usage(program) == {"cached_tokens": 3}
        assert reply_usage({"code": "x", "usage": {"input_tokens": 5}}) is None
        assert reply_usage(ProviderReply({"code": "x"}, {"bad": -1})) is None

    def test_a_model_written_usage_key_is_not_usage(self) -> None:
        """A 'usage' key inside the model's JSON never poses as the request's usage."""
        reply = ProviderReply({"code": "x", "usage": {"input_tokens": 10**9}}, None)

        assert reply_usage(reply) is None

    def test_program_usage_defaults_to_none(self) -> None:
        """Program.usage is optional."""
        assert Program(code="x").usage is None

    def test_a_program_with_usage_stays_hashable(self) -> None:
        """Usage does not change a program's hash (its dict is unhashable)."""
        assert hash(Program(code="x", usage={"input_tokens": 3})) == hash(Program(code="x"))
