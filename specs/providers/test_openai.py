"""Specs for OpenAIProvider, driven through the real openai SDK against a loopback fake server."""

from __future__ import annotations

import copy
import json
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import openai
import pytest

from recurgent import providers
from recurgent.errors import ProviderAuthError, ProviderError, ProviderTimeoutError, UsageError
from recurgent.program import PROGRAM_SCHEMA
from recurgent.providers.openai import OpenAIProvider, strict_schema
from specs.providers.fake_openai_server import FakeOpenAIServer, FakeReply, chat_completion
from specs.providers.support import FakeClock, isolate_provider_env, make_request

SECRET = "sk-test-secret-123"
PROGRAM = {"code": "result = 6 * 7", "dependencies": [{"name": "requests", "version": None}]}

STRICT_PROGRAM_SCHEMA = {
    "type": "object",
    "additionalProperties": False,
    "required": ["code", "dependencies"],
    "properties": {
        "code": {
            "type": "string",
            "description": "Python source run in the sandbox; assign `result` or `return` a value.",
        },
        "dependencies": {
            "type": ["array", "null"],
            "description": "Optional pip packages the code imports.",
            "items": {
                "type": "object",
                "additionalProperties": False,
                "required": ["name", "version"],
                "properties": {
                    "name": {"type": "string"},
                    "version": {
                        "type": ["string", "null"],
                        "description": "Optional specifier, e.g. >=2.0",
                    },
                },
            },
        },
    },
}


@pytest.fixture(autouse=True)
def allow_requests(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Re-enable provider requests (specs/conftest.py disables them) and isolate the env."""
    isolate_provider_env(monkeypatch, tmp_path / "home")


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def server() -> Iterator[FakeOpenAIServer]:
    with FakeOpenAIServer(lambda body: FakeReply.ok(PROGRAM)) as fake:
        yield fake


@pytest.fixture
def provider(server: FakeOpenAIServer, clock: FakeClock) -> OpenAIProvider:
    return OpenAIProvider(base_url=server.base_url, api_key=SECRET, retry_policy=clock.policy())


def fail_with(provider: OpenAIProvider, **overrides: Any) -> ProviderError:
    with pytest.raises(ProviderError) as excinfo:
        provider.generate_program(make_request(**overrides))
    return excinfo.value


def completion_body(message: dict[str, Any]) -> str:
    return json.dumps(chat_completion(message))


class TestFunctionCallMode:
    def test_returns_the_tool_call_arguments(self, provider: OpenAIProvider) -> None:
        """A forced execute_code call comes back as the exact dict of its arguments."""
        assert provider.generate_program(make_request()) == PROGRAM

    def test_sends_model_messages_tool_and_forced_choice(
        self, provider: OpenAIProvider, server: FakeOpenAIServer
    ) -> None:
        """The request carries the model, both prompts, the strict tool and a forced choice."""
        provider.generate_program(make_request())

        [received] = server.requests
        assert (received.method, received.path) == ("POST", "/v1/chat/completions")
        assert received.headers["authorization"] == f"Bearer {SECRET}"
        body = received.body
        assert body["model"] == "gpt-test"
        assert body["messages"] == [
            {"role": "system", "content": "You write Python."},
            {"role": "user", "content": "Add 2 and 3."},
        ]
        assert body["tools"] == [
            {
                "type": "function",
                "function": {
                    "name": "execute_code",
                    "description": "Provide the Python program to run",
                    "parameters": STRICT_PROGRAM_SCHEMA,
                    "strict": True,
                },
            }
        ]
        assert body["tool_choice"] == {"type": "function", "function": {"name": "execute_code"}}
        assert "response_format" not in body

    def test_falls_back_to_json_content(
        self, provider: OpenAIProvider, server: FakeOpenAIServer
    ) -> None:
        """Without a tool call, a JSON object in the message content is the program."""
        content = json.dumps({"code": "result = 1"})
        server.handler = lambda body: FakeReply.raw(
            completion_body({"role": "assistant", "content": content})
        )

        assert provider.generate_program(make_request()) == {"code": "result = 1"}

    def test_rejects_arguments_that_are_not_json(
        self, provider: OpenAIProvider, server: FakeOpenAIServer
    ) -> None:
        """Tool call arguments that do not parse as a JSON object are a ProviderError."""
        call = {
            "id": "c",
            "type": "function",
            "function": {"name": "execute_code", "arguments": "{"},
        }
        server.handler = lambda body: FakeReply.raw(
            completion_body({"role": "assistant", "content": None, "tool_calls": [call]})
        )

        error = fail_with(provider)

        assert (
            error.message
            == "No program in OpenAI response: no JSON object in tool call arguments: '{'"
        )

    def test_rejects_a_message_without_tool_call_or_content(
        self, provider: OpenAIProvider, server: FakeOpenAIServer
    ) -> None:
        """An empty assistant message is a ProviderError."""
        server.handler = lambda body: FakeReply.raw(
            completion_body({"role": "assistant", "content": None})
        )

        error = fail_with(provider)

        assert error.message == (
            "No program in OpenAI response: the message has neither a tool call nor content"
        )


class TestJsonSchemaMode:
    def test_sends_response_format_and_parses_content(self, server: FakeOpenAIServer) -> None:
        """json_schema mode sends a strict response_format, no tools, and parses the content."""
        provider = OpenAIProvider(base_url=server.base_url, api_key=SECRET, mode="json_schema")

        assert provider.generate_program(make_request()) == PROGRAM

        [received] = server.requests
        assert received.body["response_format"] == {
            "type": "json_schema",
            "json_schema": {
                "name": "execute_code",
                "strict": True,
                "schema": STRICT_PROGRAM_SCHEMA,
            },
        }
        assert "tools" not in received.body
        assert "tool_choice" not in received.body

    def test_a_refusal_is_an_error(self, server: FakeOpenAIServer) -> None:
        """A refusal from the model is a ProviderError carrying its text."""
        provider = OpenAIProvider(base_url=server.base_url, api_key=SECRET, mode="json_schema")
        server.handler = lambda body: FakeReply.raw(
            completion_body({"role": "assistant", "content": None, "refusal": "I can't help."})
        )

        error = fail_with(provider)

        assert error.message == "OpenAI refused to write the program: I can't help."


class TestStrictSchema:
    def test_program_schema(self) -> None:
        """Every property becomes required; the optional ones become nullable."""
        assert strict_schema(PROGRAM_SCHEMA) == STRICT_PROGRAM_SCHEMA

    def test_does_not_mutate_its_input(self) -> None:
        """The input schema is left exactly as it was."""
        before = copy.deepcopy(PROGRAM_SCHEMA)

        strict_schema(PROGRAM_SCHEMA)

        assert before == PROGRAM_SCHEMA

    def test_leaves_nullable_and_untyped_properties_alone(self) -> None:
        """Optional properties already nullable, or without a type, keep their schema."""
        schema = {
            "type": "object",
            "properties": {
                "a": {"type": ["integer", "null"]},
                "b": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                "c": {"type": ["integer", "string"]},
            },
        }

        assert strict_schema(schema) == {
            "type": "object",
            "additionalProperties": False,
            "required": ["a", "b", "c"],
            "properties": {
                "a": {"type": ["integer", "null"]},
                "b": {"anyOf": [{"type": "string"}, {"type": "null"}]},
                "c": {"type": ["integer", "string", "null"]},
            },
        }


class TestApiErrors:
    def test_http_500(
        self, provider: OpenAIProvider, server: FakeOpenAIServer, clock: FakeClock
    ) -> None:
        """A 500 is retried twice with backoff, then a retriable ProviderError naming the status."""
        server.handler = lambda body: FakeReply.fail(500, "The server had an error")

        error = fail_with(provider)

        assert type(error) is ProviderError
        assert error.message == "OpenAI API error (HTTP 500): The server had an error"
        assert (error.retriable, error.metadata) == (True, {"status": 500, "tries": 3})
        assert len(server.requests) == 3
        assert clock.sleeps == [0.25, 0.5]

    def test_http_429(
        self, provider: OpenAIProvider, server: FakeOpenAIServer, clock: FakeClock
    ) -> None:
        """A 429 is retried (the SDK's own retries stay off), then reported with its status."""
        server.handler = lambda body: FakeReply.fail(
            429, "Rate limit reached", type="requests", code="rate_limit_exceeded"
        )

        error = fail_with(provider)

        assert error.message == "OpenAI API error (HTTP 429): Rate limit reached"
        assert len(server.requests) == 3
        assert [r.headers["x-stainless-retry-count"] for r in server.requests] == ["0"] * 3

    @pytest.mark.parametrize("status", [401, 403])
    def test_auth_failures_are_not_retried(
        self, provider: OpenAIProvider, server: FakeOpenAIServer, clock: FakeClock, status: int
    ) -> None:
        """401/403: one request, a non-retriable ProviderAuthError with the status in metadata."""
        server.handler = lambda body: FakeReply.fail(status, "nope", type="invalid_request_error")

        error = fail_with(provider)

        assert type(error) is ProviderAuthError
        assert (error.retriable, error.metadata) == (False, {"status": status, "tries": 1})
        assert (len(server.requests), clock.sleeps) == (1, [])

    def test_retry_after_is_honoured(
        self, provider: OpenAIProvider, server: FakeOpenAIServer, clock: FakeClock
    ) -> None:
        """A 429 with Retry-After: 2 is retried after 2 s (not the shorter backoff), then succeeds."""
        replies = [
            FakeReply.fail(429, "slow down", headers={"Retry-After": "2"}),
            FakeReply.ok(PROGRAM),
        ]
        server.handler = lambda body: replies.pop(0)

        assert provider.generate_program(make_request()) == PROGRAM
        assert clock.sleeps == [2.0]
        assert len(server.requests) == 2

    def test_a_400_is_not_retried(self, provider: OpenAIProvider, server: FakeOpenAIServer) -> None:
        """A 400 is the request's own fault: sent once."""
        server.handler = lambda body: FakeReply.fail(400, "Bad schema")

        error = fail_with(provider)

        assert error.message == "OpenAI API error (HTTP 400): Bad schema"
        assert len(server.requests) == 1

    def test_unknown_route(self, server: FakeOpenAIServer) -> None:
        """A 404 from a wrong base URL is a ProviderError naming the status."""
        provider = OpenAIProvider(base_url=server.base_url.removesuffix("/v1"), api_key=SECRET)

        error = fail_with(provider)

        assert error.message == "OpenAI API error (HTTP 404): Unknown route POST /chat/completions"
        assert [(r.method, r.path) for r in server.requests] == [("POST", "/chat/completions")]

    def test_malformed_body(self, provider: OpenAIProvider, server: FakeOpenAIServer) -> None:
        """A 200 whose body is not JSON is a ProviderError."""
        server.handler = lambda body: FakeReply.raw('{"choices": [')

        error = fail_with(provider)

        assert error.message == (
            "No program in OpenAI response: body is not JSON "
            "(Expecting value: line 1 column 14 (char 13))"
        )

    def test_no_choices(self, provider: OpenAIProvider, server: FakeOpenAIServer) -> None:
        """A completion without choices is a ProviderError."""
        server.handler = lambda body: FakeReply.raw('{"id": "x", "choices": []}')

        error = fail_with(provider)

        assert error.message == "No program in OpenAI response: the reply has no choices"

    def test_unreachable_server(self, clock: FakeClock) -> None:
        """A refused connection is retried, then a ProviderError, not an SDK exception."""
        with FakeOpenAIServer() as gone:
            base_url = gone.base_url

        provider = OpenAIProvider(base_url=base_url, api_key=SECRET, retry_policy=clock.policy())
        error = fail_with(provider)

        assert type(error) is ProviderError
        assert error.message.startswith("Could not reach the OpenAI API: Connection error.")
        assert (error.metadata, len(clock.sleeps)) == ({"tries": 3}, 2)

    def test_slow_reply_times_out(self, provider: OpenAIProvider, server: FakeOpenAIServer) -> None:
        """A reply slower than timeout_seconds raises ProviderTimeoutError at about that time."""
        server.handler = lambda body: FakeReply.ok(PROGRAM, delay=2.0)

        started = time.monotonic()
        with pytest.raises(ProviderTimeoutError) as excinfo:
            provider.generate_program(make_request(timeout_seconds=0.5))
        elapsed = time.monotonic() - started

        assert excinfo.value.message == "OpenAI request timed out after 0.5s"
        assert elapsed < 1.8


class TestSecrets:
    @pytest.mark.parametrize(
        ("reply", "expected"),
        [
            (
                FakeReply.fail(401, f"Incorrect API key provided: {SECRET}."),
                "OpenAI API rejected the API key (HTTP 401): Incorrect API key provided: "
                "[REDACTED]. Check OPENAI_API_KEY (or api_key=) and the base URL "
                "{base_url}/ (OPENAI_BASE_URL or base_url=); not retried",
            ),
            (
                FakeReply.fail(400, "Bad header Authorization: Bearer abc.def-ghi"),
                "OpenAI API error (HTTP 400): Bad header Authorization: [REDACTED]",
            ),
            (
                FakeReply.raw(completion_body({"role": "assistant", "content": SECRET})),
                "No program in OpenAI response: no JSON object in message content: '[REDACTED]'",
            ),
        ],
    )
    def test_messages_never_contain_the_key(
        self, provider: OpenAIProvider, server: FakeOpenAIServer, reply: FakeReply, expected: str
    ) -> None:
        """Keys and bearer tokens echoed by the server are redacted from error messages."""
        server.handler = lambda body: reply

        error = fail_with(provider)

        assert error.message == expected.format(base_url=server.base_url)
        assert SECRET not in str(error)

    def test_configured_key_is_redacted_whatever_its_shape(self, server: FakeOpenAIServer) -> None:
        """A key without the sk- prefix is redacted too."""
        provider = OpenAIProvider(base_url=server.base_url, api_key="local-key-42")
        server.handler = lambda body: FakeReply.fail(403, "Key local-key-42 is not allowed")

        error = fail_with(provider)

        assert error.message == (
            "OpenAI API refused permission (HTTP 403): Key [REDACTED] is not allowed. Check "
            f"OPENAI_API_KEY (or api_key=) and the base URL {server.base_url}/ "
            "(OPENAI_BASE_URL or base_url=); not retried"
        )

    @pytest.mark.parametrize(
        "reply", [FakeReply.fail(500), FakeReply.ok(PROGRAM, delay=2.0)], ids=["500", "timeout"]
    )
    def test_sdk_exception_is_not_reachable(
        self, provider: OpenAIProvider, server: FakeOpenAIServer, reply: FakeReply
    ) -> None:
        """The raised error neither chains to nor holds the SDK exception (it carries headers)."""
        server.handler = lambda body: reply

        error = fail_with(provider, timeout_seconds=0.5)

        assert (error.__cause__, error.__context__) == (None, None)
        frames_locals: list[object] = []
        traceback = error.__traceback__
        while traceback is not None:
            frames_locals.extend(traceback.tb_frame.f_locals.values())
            traceback = traceback.tb_next
        assert not [value for value in frames_locals if isinstance(value, openai.OpenAIError)]


class TestConfiguration:
    def test_disabled_requests_send_nothing(
        self, provider: OpenAIProvider, server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """With ALLOW_PROVIDER_REQUESTS False, nothing is sent and a ProviderError is raised."""
        monkeypatch.setattr(providers, "ALLOW_PROVIDER_REQUESTS", False)

        error = fail_with(provider)

        assert error.message == (
            "Provider requests are disabled (recurgent.providers.ALLOW_PROVIDER_REQUESTS is False)"
        )
        assert server.requests == []

    def test_no_key_and_no_base_url(self) -> None:
        """Without key or base URL, construction fails with a UsageError saying what to set."""
        with pytest.raises(UsageError) as excinfo:
            OpenAIProvider()

        assert excinfo.value.message == (
            "OpenAIProvider has no credentials: set OPENAI_API_KEY (or pass api_key=); "
            "for an OpenAI-compatible server set OPENAI_BASE_URL (or pass base_url=); "
            "for Claude models set ANTHROPIC_API_KEY and pip install 'recurgent[anthropic]'"
        )

    def test_base_url_from_environment_without_key(
        self, server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """OPENAI_BASE_URL alone is enough; a placeholder key is sent."""
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)

        assert OpenAIProvider().generate_program(make_request()) == PROGRAM

        [received] = server.requests
        assert received.headers["authorization"] == "Bearer not-needed"

    def test_key_from_environment(
        self, server: FakeOpenAIServer, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """OPENAI_API_KEY is sent when no api_key is given."""
        monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")

        OpenAIProvider(base_url=server.base_url).generate_program(make_request())

        assert server.requests[0].headers["authorization"] == "Bearer sk-from-env"

    def test_injected_client_wins(self, server: FakeOpenAIServer) -> None:
        """A ready-made client is used as is; api_key and base_url are ignored."""
        client = openai.OpenAI(api_key="sk-injected", base_url=server.base_url, max_retries=0)
        provider = OpenAIProvider(client=client, api_key=SECRET, base_url="http://127.0.0.1:9/v1")

        assert provider.generate_program(make_request()) == PROGRAM
        assert server.requests[0].headers["authorization"] == "Bearer sk-injected"

    def test_unknown_mode(self) -> None:
        """An unknown mode is a UsageError at construction."""
        with pytest.raises(UsageError) as excinfo:
            OpenAIProvider(mode="chat")  # type: ignore[arg-type]

        assert excinfo.value.message == (
            "mode must be 'function_call' or 'json_schema', got 'chat'"
        )
