"""The model a reply says wrote it (ADR 0077): the built-in providers report the served model,
else the requested one; a mapping key a model writes never poses as it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from recurgent.program import Program
from recurgent.providers import ProviderReply, reply_model
from recurgent.providers.anthropic import AnthropicProvider
from recurgent.providers.openai import OpenAIProvider
from specs.providers.fake_anthropic import message, tool_use
from specs.providers.fake_openai_server import FakeOpenAIServer, FakeReply, chat_completion
from specs.providers.loopback import LoopbackServer, Received, Reply
from specs.providers.support import FakeClock, isolate_provider_env, make_request

PROGRAM = {"code": "result = 6 * 7", "dependencies": None}


@pytest.fixture(autouse=True)
def allow_requests(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Loopback requests allowed; no provider variable from the host environment."""
    isolate_provider_env(monkeypatch, tmp_path / "home")


def _tool_call_body(model: str | None) -> bytes:
    call = {
        "id": "call_fake",
        "type": "function",
        "function": {"name": "execute_code", "arguments": json.dumps(PROGRAM)},
    }
    body: dict[str, Any] = chat_completion(
        {"role": "assistant", "content": None, "tool_calls": [call]}, model=model or "x"
    )
    if model is None:
        del body["model"]
    return json.dumps(body).encode()


class TestOpenAIChat:
    @pytest.fixture
    def server(self) -> Iterator[FakeOpenAIServer]:
        with FakeOpenAIServer() as fake:
            yield fake

    def _provider(self, server: FakeOpenAIServer) -> OpenAIProvider:
        return OpenAIProvider(
            base_url=server.base_url, api_key="sk-test-served", retry_policy=FakeClock().policy()
        )

    def test_the_served_snapshot_is_the_model(self, server: FakeOpenAIServer) -> None:
        """Asked for gpt-4.1-mini, served by a dated snapshot: the reply names the snapshot."""
        server.handler = lambda body: FakeReply(body=_tool_call_body("gpt-4.1-mini-2025-04-14"))

        reply = self._provider(server).generate_program(make_request(model="gpt-4.1-mini"))

        assert isinstance(reply, ProviderReply)
        assert (dict(reply), reply.model) == (PROGRAM, "gpt-4.1-mini-2025-04-14")

    def test_a_reply_without_a_model_names_the_requested_one(
        self, server: FakeOpenAIServer
    ) -> None:
        """A compatible server that omits ``model``: the model the request named."""
        server.handler = lambda body: FakeReply(body=_tool_call_body(None))

        reply = self._provider(server).generate_program(make_request(model="llama3"))

        assert isinstance(reply, ProviderReply)
        assert reply.model == "llama3"


class TestOpenAIResponses:
    def test_the_response_model_is_the_model(self) -> None:
        """The Responses API object's ``model`` is the reply's."""
        body = {
            "id": "resp_fake",
            "object": "response",
            "created_at": 1_700_000_000,
            "status": "completed",
            "model": "gpt-5-2026-01-01",
            "output": [
                {
                    "type": "message",
                    "id": "msg_fake",
                    "role": "assistant",
                    "status": "completed",
                    "content": [
                        {"type": "output_text", "text": json.dumps(PROGRAM), "annotations": []}
                    ],
                }
            ],
            "parallel_tool_calls": False,
            "tool_choice": "auto",
            "tools": [],
        }
        with LoopbackServer(lambda request: Reply(200, body)) as server:
            provider = OpenAIProvider(
                api="responses",
                api_key="sk-test-served",
                base_url=f"{server.root}/v1",
                retry_policy=FakeClock().policy(),
            )
            reply = provider.generate_program(make_request(model="gpt-5"))

        assert isinstance(reply, ProviderReply)
        assert reply.model == "gpt-5-2026-01-01"


class TestAnthropic:
    def test_the_message_model_is_the_model(self) -> None:
        """The Messages reply's ``model`` (claude-test in the fake) is the reply's."""
        with LoopbackServer(lambda request: message(tool_use(PROGRAM))) as server:
            provider = AnthropicProvider(
                api_key="sk-ant-test-served",
                base_url=server.root,
                retry_policy=FakeClock().policy(),
            )
            reply = provider.generate_program(make_request(model="claude-sonnet-4-5"))

        assert isinstance(reply, ProviderReply)
        assert reply.model == "claude-test"

    def test_a_message_without_a_model_names_the_requested_one(self) -> None:
        """No ``model`` in the reply: the requested model."""

        def respond(request: Received) -> Reply:
            reply = message(tool_use(PROGRAM))
            del reply.body["model"]
            return reply

        with LoopbackServer(respond) as server:
            provider = AnthropicProvider(
                api_key="sk-ant-test-served",
                base_url=server.root,
                retry_policy=FakeClock().policy(),
            )
            reply = provider.generate_program(make_request(model="claude-sonnet-4-5"))

        assert isinstance(reply, ProviderReply)
        assert reply.model == "claude-sonnet-4-5"


class TestReplyModel:
    def test_a_provider_reply_and_a_program_carry_it(self) -> None:
        """``ProviderReply.model`` and ``Program.model`` are read; blank is none."""
        assert reply_model(ProviderReply(PROGRAM, None, " gpt-x ")) == "gpt-x"
        assert reply_model(Program(code="result = 1", model="fake-1")) == "fake-1"
        assert reply_model(ProviderReply(PROGRAM, None, "  ")) is None
        assert reply_model(Program(code="result = 1")) is None

    def test_a_key_the_model_wrote_never_poses_as_it(self) -> None:
        """A mapping's ``model`` key is what a model wrote, not who wrote it."""
        assert reply_model({"code": "result = 1", "model": "gpt-5"}) is None
        assert reply_model(ProviderReply({"code": "result = 1", "model": "gpt-5"})) is None
        assert reply_model("result = 1") is None
