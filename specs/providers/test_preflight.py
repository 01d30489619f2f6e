"""Fail fast (ADR 0097): the routed provider's key or SDK is checked when the agent is built."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from recurgent import Agent
from recurgent.errors import UsageError
from recurgent.providers.anthropic import AnthropicProvider
from recurgent.testing import ScriptedProvider
from specs.providers.support import isolate_provider_env


@pytest.fixture(autouse=True)
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No provider variable from the host."""
    isolate_provider_env(monkeypatch, tmp_path / "home")


class TestOpenAI:
    """OpenAI's models and any other name need OPENAI_API_KEY or OPENAI_BASE_URL."""

    def test_no_key_is_a_usage_error_at_construction(self) -> None:
        """``Agent.for_("x")`` with no key raises, naming the variables and the way out."""
        with pytest.raises(UsageError) as raised:
            Agent.for_("x")

        assert raised.value.message == (
            "model 'gpt-4.1-mini' routes to OpenAI, which needs OPENAI_API_KEY (or "
            "OPENAI_BASE_URL for an OpenAI-compatible server such as Ollama or vLLM, which needs "
            "no key); for Claude models set ANTHROPIC_API_KEY and pip install "
            "'recurgent[anthropic]'; or pass provider= (a provider object; "
            "recurgent.testing.ScriptedProvider runs offline)"
        )

    @pytest.mark.parametrize(
        ("variable", "value"),
        [("OPENAI_API_KEY", "sk-test-key-123"), ("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")],
    )
    def test_a_key_or_a_base_url_is_enough(
        self, monkeypatch: pytest.MonkeyPatch, variable: str, value: str
    ) -> None:
        """Either variable builds the agent; the provider is still built on the first call."""
        monkeypatch.setenv(variable, value)

        agent = Agent.for_("x", model="llama3.1:8b", log=False)

        assert agent._agent.provider is None

    def test_a_blank_key_counts_as_none(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """OPENAI_API_KEY='  ' is no key."""
        monkeypatch.setenv("OPENAI_API_KEY", "  ")

        with pytest.raises(UsageError, match="needs OPENAI_API_KEY"):
            Agent.for_("x", log=False)


class TestAnthropic:
    """claude-* models need the anthropic extra and a key."""

    def test_missing_sdk_names_the_extra(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Without the anthropic package the message says what to install."""
        real = importlib.util.find_spec

        def find_spec(name: str, *args: Any) -> Any:
            return None if name == "anthropic" else real(name, *args)

        monkeypatch.setattr(importlib.util, "find_spec", find_spec)
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-123")

        with pytest.raises(UsageError) as raised:
            Agent.for_("x", model="claude-sonnet-4-5", log=False)

        assert raised.value.message.startswith(
            "model 'claude-sonnet-4-5' routes to Anthropic, which needs the anthropic SDK: "
            "pip install 'recurgent[anthropic]'"
        )

    def test_missing_key_names_the_variable(self) -> None:
        """No ANTHROPIC_API_KEY (and no SDK profile): the message names the variable."""
        with pytest.raises(UsageError, match=r"routes to Anthropic: .*set ANTHROPIC_API_KEY"):
            Agent.for_("x", model="claude-sonnet-4-5", log=False)

    def test_a_key_builds_lazily(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """With the variable set, nothing is built until the first call."""
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-123")

        agent = Agent.for_("x", model="claude-sonnet-4-5", log=False)

        assert agent._agent.provider is None

    def test_recurgent_provider_routes_the_check(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """RECURGENT_PROVIDER=anthropic checks Anthropic's key even for a gpt- model."""
        monkeypatch.setenv("RECURGENT_PROVIDER", "anthropic")
        monkeypatch.setenv("OPENAI_API_KEY", "sk-openai-test-123")

        with pytest.raises(UsageError, match="set ANTHROPIC_API_KEY"):
            Agent.for_("x", model="gpt-4o", log=False)

    def test_credentials_only_the_sdk_finds_are_kept(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A provider the check had to build (to let the SDK look) is the agent's provider."""
        built = AnthropicProvider(api_key="sk-ant-profile-123")
        monkeypatch.setattr("recurgent.providers._preflight.route_provider", lambda model: built)

        agent = Agent.for_("x", model="claude-sonnet-4-5", log=False)

        assert agent._agent.provider is built


class TestOffline:
    """A provider object needs no key, and neither do the agents it is passed on to."""

    def test_a_provider_object_needs_no_key(self) -> None:
        """provider= a double: no variable is read."""
        agent = Agent.for_("x", provider=ScriptedProvider({"run": "result = 1"}), log=False)

        assert agent.run().value == 1

    def test_delegates_inherit_it(self) -> None:
        """A child of such an agent is built without a key."""
        parent = Agent.for_("x", provider=ScriptedProvider(), log=False)

        assert isinstance(parent.delegate("helper")._agent.options.provider, ScriptedProvider)

    def test_an_unknown_recurgent_provider_fails_at_construction(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """RECURGENT_PROVIDER=gemini is refused by Agent(), naming the variable."""
        monkeypatch.setenv("RECURGENT_PROVIDER", "gemini")

        with pytest.raises(UsageError, match="Unknown provider 'gemini' in RECURGENT_PROVIDER"):
            Agent.for_("x", log=False)
