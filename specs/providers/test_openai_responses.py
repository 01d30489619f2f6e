"""Specs for OpenAIProvider(api="responses"): the real openai SDK against a loopback server."""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from recurgent.errors import InvalidCodeError, ProviderAuthError, ProviderError, UsageError
from recurgent.program import PROGRAM_SCHEMA
from recurgent.providers import ProviderReply
from recurgent.providers.openai import OpenAIProvider, strict_problems, strict_schema
from specs.providers.fake_openai_server import FakeOpenAIServer, FakeReply, chat_completion
from specs.providers.loopback import LoopbackServer, Reply
from specs.providers.support import FakeClock, isolate_provider_env, make_request

KEY = "sk-test-responses-1"
PROGRAM = {"code": "result = 6 * 7", "dependencies": None}


def response(*items: Mapping[str, Any], cached: int = 640) -> Reply:
    """A completed Responses API object with ``items`` as its output."""
    return Reply(
        200,
        {
            "id": "resp_fake",
            "object": "response",
            "created_at": 1_700_000_000,
            "status": "completed",
            "model": "gpt-test",
            "output": [dict(item) for item in items],
            "parallel_tool_calls": False,
            "tool_choice": "auto",
            "tools": [],
            "usage": {
                "input_tokens": 1000,
                "input_tokens_details": {"cached_tokens": cached, "cache_write_tokens": 0},
                "output_tokens": 50,
                "output_tokens_details": {"reasoning_tokens": 0},
                "total_tokens": 1050,
            },
        },
    )


def output_message(*parts: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "type": "message",
        "id": "msg_fake",
        "role": "assistant",
        "status": "completed",
        "content": [dict(part) for part in parts],
    }


def output_text(text: str) -> dict[str, Any]:
    return {"type": "output_text", "text": text, "annotations": []}


REASONING = {"type": "reasoning", "id": "rs_fake", "summary": []}


@pytest.fixture(autouse=True)
def allow_requests(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Loopback requests allowed; no provider variable from the host environment."""
    isolate_provider_env(monkeypatch, tmp_path / "home")


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    program = output_message(output_text(json.dumps(PROGRAM)))
    with LoopbackServer(lambda request: response(REASONING, program)) as fake:
        yield fake


@pytest.fixture
def provider(server: LoopbackServer) -> OpenAIProvider:
    return OpenAIProvider(
        api="responses",
        api_key=KEY,
        base_url=f"{server.root}/v1",
        retry_policy=FakeClock().policy(),
    )


def fail_with(provider: OpenAIProvider) -> ProviderError:
    with pytest.raises(ProviderError) as excinfo:
        provider.generate_program(make_request())
    return excinfo.value


class TestResponsesApi:
    def test_request_asks_for_strict_json_schema_text(
        self, provider: OpenAIProvider, server: LoopbackServer
    ) -> None:
        """POST /v1/responses with both prompts as input and a strict json_schema text format."""
        provider.generate_program(make_request())

        [received] = server.requests
        assert (received.method, received.path) == ("POST", "/v1/responses")
        assert received.headers["authorization"] == f"Bearer {KEY}"
        assert received.body == {
            "model": "gpt-test",
            "input": [
                {"role": "system", "content": "You write Python."},
                {"role": "user", "content": "Add 2 and 3."},
            ],
            "text": {
                "format": {
                    "type": "json_schema",
                    "name": "execute_code",
                    "strict": True,
                    "schema": strict_schema(PROGRAM_SCHEMA),
                }
            },
        }

    def test_program_and_cached_tokens_come_back(self, provider: OpenAIProvider) -> None:
        """The message's output_text is the program (reasoning skipped); usage has cached_tokens."""
        reply = provider.generate_program(make_request())

        assert isinstance(reply, ProviderReply)
        assert reply == PROGRAM
        assert reply.usage == {"input_tokens": 1000, "output_tokens": 50, "cached_tokens": 640}

    def test_a_refusal_is_invalid_code(
        self, provider: OpenAIProvider, server: LoopbackServer
    ) -> None:
        """A refusal content part: an invalid_code error with the model's words."""
        refusal = {"type": "refusal", "refusal": "I won't."}
        server.respond = lambda request: response(output_message(refusal))

        error = fail_with(provider)

        assert type(error) is InvalidCodeError
        assert error.message == "OpenAI refused to write the program: I won't."

    def test_output_without_a_message_is_invalid_code(
        self, provider: OpenAIProvider, server: LoopbackServer
    ) -> None:
        """Only reasoning in the output: invalid_code naming what is missing."""
        server.respond = lambda request: response(REASONING)

        error = fail_with(provider)

        assert type(error) is InvalidCodeError
        assert error.message == "No program in OpenAI response: the output has no message item"

    def test_401_is_not_retried(self, provider: OpenAIProvider, server: LoopbackServer) -> None:
        """A 401 on the Responses API is final too."""
        body = {"error": {"message": "bad key", "type": "invalid_request_error", "code": None}}
        server.respond = lambda request: Reply(401, body)

        error = fail_with(provider)

        assert (type(error), error.metadata, len(server.requests)) == (
            ProviderAuthError,
            {"status": 401, "tries": 1},
            1,
        )

    def test_environment_selects_the_responses_api(
        self, server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """RECURGENT_OPENAI_API=responses switches the default API."""
        monkeypatch.setenv("RECURGENT_OPENAI_API", "responses")

        provider = OpenAIProvider(api_key=KEY, base_url=f"{server.root}/v1")

        assert provider.api == "responses"
        assert provider.generate_program(make_request()) == PROGRAM
        assert server.requests[0].path == "/v1/responses"

    def test_chat_stays_the_default(self) -> None:
        """Without api= or the variable, Chat Completions is used."""
        assert OpenAIProvider(api_key=KEY).api == "chat"

    def test_an_unknown_api_in_the_environment_is_refused(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """RECURGENT_OPENAI_API=assistants: a UsageError at construction."""
        monkeypatch.setenv("RECURGENT_OPENAI_API", "assistants")

        with pytest.raises(UsageError) as excinfo:
            OpenAIProvider(api_key=KEY)

        assert excinfo.value.message == (
            "RECURGENT_OPENAI_API must be 'chat' or 'responses', got 'assistants'"
        )


class TestStrictCompatibility:
    def test_the_program_schema_is_strict_compatible_once_rewritten(self) -> None:
        """Every object requires all its properties and forbids others."""
        assert strict_problems(strict_schema(PROGRAM_SCHEMA)) == []

    def test_problems_are_named_by_pointer(self) -> None:
        """A loose nested object is reported with its JSON pointer."""
        schema = {
            "type": "object",
            "additionalProperties": False,
            "required": ["a"],
            "properties": {"a": {"type": "object", "properties": {"b": {"type": "string"}}}},
        }

        assert strict_problems(schema) == [
            "/properties/a: properties not required: b",
            "/properties/a: additionalProperties is not false",
        ]


class TestChatUsage:
    def test_chat_completions_report_cached_tokens(self) -> None:
        """Chat Completions usage (prompt, completion, cached) comes back on the reply."""
        completion = chat_completion(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": "c",
                        "type": "function",
                        "function": {"name": "execute_code", "arguments": json.dumps(PROGRAM)},
                    }
                ],
            }
        )
        completion["usage"] = {
            "prompt_tokens": 2000,
            "completion_tokens": 80,
            "total_tokens": 2080,
            "prompt_tokens_details": {"cached_tokens": 1920},
        }
        with FakeOpenAIServer(lambda body: FakeReply.raw(json.dumps(completion))) as server:
            reply = OpenAIProvider(api_key=KEY, base_url=server.base_url).generate_program(
                make_request()
            )

        assert isinstance(reply, ProviderReply)
        assert (reply, reply.usage) == (
            PROGRAM,
            {"input_tokens": 2000, "output_tokens": 80, "cached_tokens": 1920},
        )


class TestOptions:
    @pytest.mark.parametrize(
        ("options", "message"),
        [
            (
                {"max_retries": "3"},
                "OpenAIProvider option max_retries must be an int >= 0 or None, got '3' (str)",
            ),
            (
                {"max_retries": -1},
                "OpenAIProvider option max_retries must be an int >= 0 or None, got -1 (int)",
            ),
            (
                {"api": "assistants"},
                "OpenAIProvider option api must be 'chat' or 'responses', got 'assistants' (str)",
            ),
            (
                {"base_url": 8080},
                "OpenAIProvider option base_url must be a str or None, got 8080 (int)",
            ),
            (
                {"retry_policy": 3},
                "OpenAIProvider option retry_policy must be a RetryPolicy or None, got 3 (int)",
            ),
            (
                {"client": "openai"},
                "OpenAIProvider option client must be an openai.OpenAI client or None, "
                "got 'openai' (str)",
            ),
        ],
    )
    def test_bad_options_are_refused_at_construction(
        self, options: dict[str, Any], message: str
    ) -> None:
        """Each bad option is a UsageError naming the option, the rule and the value."""
        with pytest.raises(UsageError) as excinfo:
            OpenAIProvider(**{"api_key": KEY, **options})

        assert excinfo.value.message == message

    def test_a_huge_reply_is_refused(self) -> None:
        """A 2 MB chat reply against a 1 MB cap: a typed provider error, not a 2 MB buffer."""
        with LoopbackServer(lambda request: Reply(200, b" " * 65536, repeat=32)) as server:
            provider = OpenAIProvider(
                api_key=KEY, base_url=f"{server.root}/v1", max_reply_bytes=1 << 20
            )
            error = fail_with(provider)

        assert (error.error_type, error.message) == (
            "provider",
            "OpenAI reply body exceeded max_reply_bytes (1048576 bytes)",
        )
