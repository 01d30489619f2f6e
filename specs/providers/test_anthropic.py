"""Specs for AnthropicProvider, driven through the real anthropic SDK against a loopback server."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from recurgent import Agent
from recurgent.errors import (
    InvalidCodeError,
    ProviderAuthError,
    ProviderError,
    ProviderReplyTooLargeError,
    UsageError,
)
from recurgent.program import PROGRAM_SCHEMA
from recurgent.providers import ProviderReply
from recurgent.providers.anthropic import AnthropicProvider
from recurgent.testing import read_log
from specs.providers.fake_anthropic import anthropic_error, message, text_block, tool_use
from specs.providers.loopback import LoopbackServer, Received, Reply
from specs.providers.support import FakeClock, isolate_provider_env, make_request

KEY = "sk-ant-test-key-0123"
PROGRAM = {"code": "result = 6 * 7", "dependencies": [{"name": "requests"}]}
USAGE = {
    "input_tokens": 120,
    "output_tokens": 30,
    "cache_read_input_tokens": 900,
    "cache_creation_input_tokens": 0,
}


@pytest.fixture(autouse=True)
def allow_requests(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Loopback requests allowed; no provider variable from the host environment."""
    isolate_provider_env(monkeypatch, tmp_path / "home")


@pytest.fixture
def server() -> Iterator[LoopbackServer]:
    with LoopbackServer(lambda request: message(tool_use(PROGRAM))) as fake:
        yield fake


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def provider(server: LoopbackServer, clock: FakeClock) -> AnthropicProvider:
    return AnthropicProvider(api_key=KEY, base_url=server.root, retry_policy=clock.policy())


def replies(*answers: Reply) -> Callable[[Received], Reply]:
    """A responder giving ``answers`` in order, repeating the last."""
    queue = list(answers)

    def respond(request: Received) -> Reply:
        return queue.pop(0) if len(queue) > 1 else queue[0]

    return respond


def fail_with(provider: AnthropicProvider, **overrides: object) -> ProviderError:
    with pytest.raises(ProviderError) as excinfo:
        provider.generate_program(make_request(model="claude-test", **overrides))
    return excinfo.value


class TestRequestShape:
    def test_sends_model_tool_forced_choice_cache_mark_and_key(
        self, provider: AnthropicProvider, server: LoopbackServer
    ) -> None:
        """One Messages request: the model, a forced execute_code tool, a cached system prompt."""
        provider.generate_program(make_request(model="claude-sonnet-4-5"))

        [received] = server.requests
        assert (received.method, received.path) == ("POST", "/v1/messages")
        # anthropic 2.x sends the API key as a bearer token, no longer as x-api-key.
        assert received.headers["authorization"] == f"Bearer {KEY}"
        assert "x-api-key" not in received.headers
        assert received.headers["x-stainless-retry-count"] == "0"
        assert received.body == {
            "model": "claude-sonnet-4-5",
            "max_tokens": 8192,
            "system": [
                {
                    "type": "text",
                    "text": "You write Python.",
                    "cache_control": {"type": "ephemeral"},
                }
            ],
            "messages": [{"role": "user", "content": "Add 2 and 3."}],
            "tools": [
                {
                    "name": "execute_code",
                    "description": "Provide the Python program to run",
                    "input_schema": PROGRAM_SCHEMA,
                }
            ],
            "tool_choice": {"type": "tool", "name": "execute_code"},
        }

    def test_max_tokens_is_configurable(self, server: LoopbackServer) -> None:
        """max_tokens= is sent as given."""
        AnthropicProvider(api_key=KEY, base_url=server.root, max_tokens=2048).generate_program(
            make_request()
        )

        assert server.requests[0].body["max_tokens"] == 2048

    def test_key_and_base_url_from_the_environment(
        self, server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """ANTHROPIC_API_KEY and ANTHROPIC_BASE_URL are honoured as the SDK honours them."""
        monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-from-env")
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.root)

        assert AnthropicProvider().generate_program(make_request()) == PROGRAM
        assert server.requests[0].headers["authorization"] == "Bearer sk-ant-from-env"


class TestReplies:
    def test_tool_input_and_usage_come_back(self, provider: AnthropicProvider) -> None:
        """The tool_use input is the reply, with input, output and cache token counts."""
        reply = provider.generate_program(make_request())

        assert isinstance(reply, ProviderReply)
        assert reply == PROGRAM
        assert reply.usage == USAGE

    def test_text_before_the_tool_call_is_skipped(
        self, provider: AnthropicProvider, server: LoopbackServer
    ) -> None:
        """A text block ahead of the tool_use block does not hide the program."""
        server.respond = replies(message(text_block("Here you go."), tool_use(PROGRAM)))

        assert provider.generate_program(make_request()) == PROGRAM

    def test_a_reply_without_tool_call_is_invalid_code(
        self, provider: AnthropicProvider, server: LoopbackServer
    ) -> None:
        """Only text, no tool call: an invalid_code error quoting the text, retriable."""
        server.respond = replies(message(text_block("result = 1"), stop_reason="end_turn"))

        error = fail_with(provider)

        assert type(error) is InvalidCodeError
        assert (error.error_type, error.retriable) == ("invalid_code", True)
        assert error.message == (
            "No program in Anthropic response: no tool_use block in the reply; text: 'result = 1'"
        )

    def test_a_refusal_is_invalid_code(
        self, provider: AnthropicProvider, server: LoopbackServer
    ) -> None:
        """stop_reason refusal: an invalid_code error carrying the model's words."""
        server.respond = replies(message(text_block("I can't do that."), stop_reason="refusal"))

        error = fail_with(provider)

        assert type(error) is InvalidCodeError
        assert error.message == "Anthropic refused to write the program: I can't do that."

    def test_a_reply_cut_off_at_max_tokens_says_so(
        self, provider: AnthropicProvider, server: LoopbackServer
    ) -> None:
        """stop_reason max_tokens: invalid_code naming the limit, even with a partial tool call."""
        server.respond = replies(message(tool_use({"code": "x = ("}), stop_reason="max_tokens"))

        error = fail_with(provider)

        assert type(error) is InvalidCodeError
        assert error.message == (
            "No program in Anthropic response: the reply was cut off at max_tokens=8192; "
            "write a shorter program (or raise AnthropicProvider(max_tokens=...))"
        )


class TestFaults:
    def test_401_is_not_retried(
        self, provider: AnthropicProvider, server: LoopbackServer, clock: FakeClock
    ) -> None:
        """401: one request, a non-retriable ProviderAuthError with the status and what to check."""
        server.respond = replies(anthropic_error(401, "authentication_error", "invalid x-api-key"))

        error = fail_with(provider)

        assert type(error) is ProviderAuthError
        assert (error.error_type, error.retriable) == ("provider", False)
        assert error.metadata == {"status": 401, "tries": 1}
        assert error.message == (
            "Anthropic API rejected the API key (HTTP 401): invalid x-api-key. Check "
            f"ANTHROPIC_API_KEY (or api_key=) and the base URL {server.root} "
            "(ANTHROPIC_BASE_URL or base_url=); not retried"
        )
        assert (len(server.requests), clock.sleeps) == (1, [])

    def test_403_is_not_retried(self, provider: AnthropicProvider, server: LoopbackServer) -> None:
        """403: one request, a non-retriable ProviderAuthError."""
        server.respond = replies(anthropic_error(403, "permission_error", "no access"))

        error = fail_with(provider)

        assert (type(error), error.metadata["status"]) == (ProviderAuthError, 403)
        assert len(server.requests) == 1

    def test_529_overloaded_is_retried_with_backoff(
        self, provider: AnthropicProvider, server: LoopbackServer, clock: FakeClock
    ) -> None:
        """Two 529 overloaded_error replies, then a program: three requests, two growing waits."""
        overloaded = anthropic_error(529, "overloaded_error", "Overloaded")
        server.respond = replies(overloaded, overloaded, message(tool_use(PROGRAM)))

        assert provider.generate_program(make_request()) == PROGRAM
        assert len(server.requests) == 3
        assert clock.sleeps == [0.25, 0.5]

    def test_429_honours_retry_after(
        self, provider: AnthropicProvider, server: LoopbackServer, clock: FakeClock
    ) -> None:
        """A 429 with Retry-After: 3 waits 3 s (not the shorter backoff), then succeeds."""
        limited = anthropic_error(429, "rate_limit_error", "slow down", {"Retry-After": "3"})
        server.respond = replies(limited, message(tool_use(PROGRAM)))

        assert provider.generate_program(make_request()) == PROGRAM
        assert clock.sleeps == [3.0]

    def test_a_retry_after_past_the_timeout_is_not_waited_for(
        self, provider: AnthropicProvider, server: LoopbackServer, clock: FakeClock
    ) -> None:
        """Retry-After 60 with a 5 s budget: no wait, the 429 is reported at once."""
        server.respond = replies(
            anthropic_error(429, "rate_limit_error", "slow down", {"Retry-After": "60"})
        )

        error = fail_with(provider)

        assert error.message == (
            "Anthropic API error (HTTP 429): slow down "
            "(no retry: the next try would start after the timeout)"
        )
        assert (len(server.requests), clock.sleeps) == (1, [])

    @pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
    def test_a_reply_over_the_size_cap_is_refused(
        self, server: LoopbackServer, chunked: bool
    ) -> None:
        """A 2 MB body against a 1 MB cap: a typed provider error, whether or not it is sized."""
        provider = AnthropicProvider(api_key=KEY, base_url=server.root, max_reply_bytes=1 << 20)
        server.respond = replies(Reply(200, b"x" * 65536, chunked=chunked, repeat=32))

        error = fail_with(provider)

        assert type(error) is ProviderReplyTooLargeError
        assert (error.error_type, error.metadata) == (
            "provider",
            {"max_reply_bytes": 1048576, "tries": 1},
        )
        assert error.message == "Anthropic reply body exceeded max_reply_bytes (1048576 bytes)"

    def test_a_body_that_is_not_json_is_invalid_code(
        self, provider: AnthropicProvider, server: LoopbackServer
    ) -> None:
        """A 200 whose body is not JSON: invalid_code, not a raw JSONDecodeError."""
        server.respond = replies(Reply(200, b'{"content": ['))

        error = fail_with(provider)

        assert type(error) is InvalidCodeError
        assert error.message == (
            "No program in Anthropic response: body is not JSON "
            "(Expecting value: line 1 column 14 (char 13))"
        )

    def test_an_exception_with_a_broken_str_is_described(
        self, provider: AnthropicProvider, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Whatever the SDK raises, even with a __str__ that raises, becomes a ProviderError."""

        class Hostile(Exception):
            def __str__(self) -> str:
                raise RuntimeError("no")

        def explode(**kwargs: object) -> object:
            raise Hostile

        monkeypatch.setattr(provider._client.messages, "create", explode)

        error = fail_with(provider)

        assert type(error) is ProviderError
        assert error.message == (
            "Anthropic provider failed: Hostile: <exception message unavailable: its __str__ failed>"
        )


class TestConstruction:
    def test_missing_extra_says_what_to_install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Without the anthropic SDK: a UsageError naming the extra."""
        monkeypatch.setitem(sys.modules, "anthropic", None)

        with pytest.raises(UsageError) as excinfo:
            AnthropicProvider(api_key=KEY)

        assert excinfo.value.message == (
            "The Anthropic provider needs the anthropic SDK, an optional extra: "
            "pip install 'recurgent[anthropic]'"
        )

    def test_missing_key_says_what_to_set(self) -> None:
        """No key anywhere: a UsageError at construction naming ANTHROPIC_API_KEY."""
        with pytest.raises(UsageError) as excinfo:
            AnthropicProvider()

        assert excinfo.value.message == (
            "AnthropicProvider has no credentials: set ANTHROPIC_API_KEY (or pass api_key=); "
            "ANTHROPIC_BASE_URL (or base_url=) points it at another API root"
        )

    @pytest.mark.parametrize(
        ("options", "message"),
        [
            (
                {"max_tokens": "big"},
                "AnthropicProvider option max_tokens must be an int >= 1, got 'big' (str)",
            ),
            (
                {"max_retries": "3"},
                "AnthropicProvider option max_retries must be an int >= 0 or None, got '3' (str)",
            ),
            (
                {"max_reply_bytes": 10},
                "AnthropicProvider option max_reply_bytes must be an int >= 1024, got 10 (int)",
            ),
            (
                {"api_key": 42},
                "AnthropicProvider option api_key must be a str or None, got 42 (int)",
            ),
        ],
    )
    def test_bad_options_are_refused(self, options: dict[str, object], message: str) -> None:
        """Each bad option is a UsageError naming the option, the rule and the value."""
        with pytest.raises(UsageError) as excinfo:
            AnthropicProvider(**{"api_key": KEY, **options})  # type: ignore[arg-type]

        assert excinfo.value.message == message


class TestThroughAnAgent:
    def test_claude_model_routes_to_anthropic_and_a_refusal_is_retried_with_feedback(
        self, server: LoopbackServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
    ) -> None:
        """model='claude-*' uses Anthropic; a refusal is retried with the reason in the prompt."""
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.root)
        server.respond = replies(
            message(text_block("No."), stop_reason="refusal"),
            message(tool_use({"code": "result = 5"})),
        )
        log = tmp_path / "calls.jsonl"

        outcome = Agent("calculator", model="claude-sonnet-4-5", log=log).add(2, 3)

        assert (outcome.status, outcome.value) == ("ok", 5)
        first, second = server.requests
        assert first.body["model"] == second.body["model"] == "claude-sonnet-4-5"
        retry_prompt = second.body["messages"][0]["content"]
        assert "Anthropic refused to write the program: No." in retry_prompt
        assert len(read_log(log)) == 1

    def test_401_through_an_agent_is_a_non_retriable_outcome(
        self, server: LoopbackServer, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The Outcome of a 401 is provider, not retriable, with the status in metadata."""
        monkeypatch.setenv("ANTHROPIC_API_KEY", KEY)
        monkeypatch.setenv("ANTHROPIC_BASE_URL", server.root)
        server.respond = replies(anthropic_error(401, "authentication_error", "bad key"))

        outcome = Agent("calculator", model="claude-sonnet-4-5", log=False).add(2, 3)

        assert (outcome.status, outcome.error_type, outcome.retriable) == (
            "error",
            "provider",
            False,
        )
        assert outcome.metadata["status"] == 401
