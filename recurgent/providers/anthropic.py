"""Anthropic provider: asks the Claude Messages API for a program through a forced tool call.

This is the only module of recurgent that imports the ``anthropic`` SDK, an optional extra
(``pip install 'recurgent[anthropic]'``); without it, construction raises a
:class:`~recurgent.errors.UsageError` saying what to install. The program schema is the
``input_schema`` of an ``execute_code`` tool the model must call (``tool_choice``); the static
system prompt carries a ``cache_control`` breakpoint so repeated calls read it from Anthropic's
prompt cache. Requests go through the shared retry policy with the SDK's own retries off; the
reply is returned as a :class:`~recurgent.providers.ProviderReply` with its token usage (ADR 0033).
"""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import TYPE_CHECKING, Any

from recurgent import providers
from recurgent.errors import (
    InvalidCodeError,
    ProviderError,
    UsageError,
)
from recurgent.providers import ProviderReply, ProviderRequest
from recurgent.providers._classify import SdkErrors, classify_sdk_error
from recurgent.providers._http import DEFAULT_MAX_REPLY_BYTES, capped_client
from recurgent.providers._reply import (
    SNIPPET_CHARS,
    Redactor,
    no_program,
    served_model,
    token_counts,
)
from recurgent.providers._retry import (
    Failure,
    RetryPolicy,
    check_option,
)

if TYPE_CHECKING:
    import anthropic

__all__ = ["DEFAULT_MAX_TOKENS", "AnthropicProvider"]

#: Output tokens allowed per program. Every current Claude model can write this many without
#: streaming, and it holds a program of roughly 30 KB; a longer reply is cut off and reported
#: as such (ADR 0033).
DEFAULT_MAX_TOKENS = 8192

_SERVICE = "Anthropic"
_TOOL_NAME = "execute_code"
_INSTALL_HINT = "pip install 'recurgent[anthropic]'"
_USAGE = {
    "input_tokens": "input_tokens",
    "output_tokens": "output_tokens",
    "cache_read_input_tokens": "cache_read_input_tokens",
    "cache_creation_input_tokens": "cache_creation_input_tokens",
}


def _load_sdk() -> ModuleType:
    try:
        return importlib.import_module("anthropic")
    except ImportError:
        raise UsageError(
            f"The Anthropic provider needs the anthropic SDK, an optional extra: {_INSTALL_HINT}"
        ) from None


def _text_option(name: str, value: object) -> None:
    check_option(
        "AnthropicProvider", name, value, "a str or None", value is None or isinstance(value, str)
    )


class AnthropicProvider:
    """Writes programs with Anthropic's Messages API (Claude models).

    Credentials are resolved as the SDK resolves them: ``api_key``, else ``ANTHROPIC_API_KEY``
    (or ``ANTHROPIC_AUTH_TOKEN`` and the SDK's profiles); the API root is ``base_url``, else
    ``ANTHROPIC_BASE_URL``, else Anthropic's own.

    Args:
        api_key: API key; defaults to what the SDK finds (``ANTHROPIC_API_KEY``).
        base_url: API root; defaults to ``ANTHROPIC_BASE_URL``, else ``https://api.anthropic.com``.
        client: A ready-made ``anthropic.Anthropic`` client; when given, ``api_key``,
            ``base_url`` and ``max_reply_bytes`` are ignored.
        max_tokens: Output tokens allowed for one program (default 8192).
        max_retries: Retries of transient failures (429, 5xx, 529 overloaded, connection
            errors) within the request's timeout; overrides ``retry_policy.max_retries``.
        retry_policy: Backoff, jitter, sleep and clocks; defaults to :class:`RetryPolicy`.
        max_reply_bytes: Largest reply body read.

    Raises:
        UsageError: The ``anthropic`` SDK is not installed, an option is invalid, or no
            credentials are configured; the message says what to install or set.
    """

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        client: anthropic.Anthropic | None = None,
        max_tokens: int = DEFAULT_MAX_TOKENS,
        max_retries: int | None = None,
        retry_policy: RetryPolicy | None = None,
        max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES,
    ) -> None:
        sdk = _load_sdk()
        _text_option("api_key", api_key)
        _text_option("base_url", base_url)
        check_option(
            "AnthropicProvider",
            "client",
            client,
            "an anthropic.Anthropic client or None",
            client is None or isinstance(client, sdk.Anthropic),
        )
        check_option(
            "AnthropicProvider",
            "max_tokens",
            max_tokens,
            "an int >= 1",
            type(max_tokens) is int and max_tokens >= 1,
        )
        check_option(
            "AnthropicProvider",
            "max_retries",
            max_retries,
            "an int >= 0 or None",
            max_retries is None or (type(max_retries) is int and max_retries >= 0),
        )
        check_option(
            "AnthropicProvider",
            "retry_policy",
            retry_policy,
            "a RetryPolicy or None",
            retry_policy is None or isinstance(retry_policy, RetryPolicy),
        )
        check_option(
            "AnthropicProvider",
            "max_reply_bytes",
            max_reply_bytes,
            "an int >= 1024",
            type(max_reply_bytes) is int and max_reply_bytes >= 1024,
        )
        self._sdk = sdk
        self._max_tokens = max_tokens
        self._policy = (retry_policy or RetryPolicy()).with_retries(max_retries)
        if client is None:
            client = sdk.Anthropic(
                api_key=api_key or None,
                base_url=base_url or None,
                max_retries=0,
                http_client=capped_client(sdk.DefaultHttpxClient, max_reply_bytes),
            )
        if not (client.api_key or client.auth_token or client.credentials):
            raise UsageError(
                "AnthropicProvider has no credentials: set ANTHROPIC_API_KEY (or pass api_key=); "
                "ANTHROPIC_BASE_URL (or base_url=) points it at another API root"
            )
        self._client: Any = client
        self._redact = Redactor(client.api_key or client.auth_token)

    def generate_program(self, request: ProviderRequest) -> object:
        """Ask Claude for a program.

        Args:
            request: What to write, with the model, prompts, timeout and reply schema.

        Returns:
            A :class:`ProviderReply`: the ``execute_code`` tool input, with the token usage.

        Raises:
            ProviderTimeoutError: No answer within ``request.timeout_seconds`` (all tries).
            ProviderAuthError: HTTP 401/403; not retried.
            ProviderReplyTooLargeError: The reply body exceeded ``max_reply_bytes``.
            InvalidCodeError: No tool call in the reply, a refusal, or a reply cut off at
                ``max_tokens``; the lifecycle retries with feedback.
            ProviderError: Requests are disabled, or the API failed after every retry.
        """
        if not providers.ALLOW_PROVIDER_REQUESTS:
            raise ProviderError(
                "Provider requests are disabled "
                "(recurgent.providers.ALLOW_PROVIDER_REQUESTS is False)"
            )
        timeout = request.timeout_seconds
        message = self._policy.run(
            lambda left: self._send(request, left),
            lambda error: self._classify(error, timeout),
            timeout=timeout,
            service=_SERVICE,
        )
        return self._program_from(message, request.model)

    def _send(self, request: ProviderRequest, left: float | None) -> object:
        # Cache order is tools, then system, then messages: the breakpoint on the system block
        # caches the tool schema and the static system prompt together (ADR 0033).
        return self._client.messages.create(
            model=request.model,
            max_tokens=self._max_tokens,
            system=[
                {
                    "type": "text",
                    "text": request.system_prompt,
                    "cache_control": {"type": "ephemeral"},
                }
            ],
            messages=[{"role": "user", "content": request.user_prompt}],
            tools=[
                {
                    "name": _TOOL_NAME,
                    "description": "Provide the Python program to run",
                    "input_schema": dict(request.response_schema),
                }
            ],
            tool_choice={"type": "tool", "name": _TOOL_NAME},
            timeout=left,
        )

    def _classify(self, error: Exception, timeout: float | None) -> Failure:
        sdk = self._sdk
        errors = SdkErrors(
            timeout=sdk.APITimeoutError,
            status=sdk.APIStatusError,
            connection=sdk.APIConnectionError,
            base=sdk.AnthropicError,
            detail=_detail,
        )
        return classify_sdk_error(
            error,
            errors=errors,
            service=_SERVICE,
            key_variable="ANTHROPIC_API_KEY",
            base_url=str(self._client.base_url),
            timeout=timeout,
            redact=self._redact,
            now=self._policy.wall_clock,
        )

    def _program_from(self, message: object, requested: str) -> ProviderReply:
        usage = token_counts(getattr(message, "usage", None), _USAGE)
        stop_reason = getattr(message, "stop_reason", None)
        if stop_reason == "refusal":
            raise InvalidCodeError(
                self._redact(f"Anthropic refused to write the program: {_text_of(message)}")
            )
        if stop_reason == "max_tokens":
            raise self._no_program(
                f"the reply was cut off at max_tokens={self._max_tokens}; "
                "write a shorter program (or raise AnthropicProvider(max_tokens=...))"
            )
        content = getattr(message, "content", None)
        blocks = content if isinstance(content, list) else []
        for block in blocks:
            if getattr(block, "type", None) == "tool_use":
                arguments = getattr(block, "input", None)
                if not isinstance(arguments, dict):
                    raise self._no_program("the tool_use block has no input object")
                return ProviderReply(arguments, usage, served_model(message, requested))
        text = _text_of(message)
        detail = f"; text: {text!r}" if text else ""
        raise self._no_program(f"no tool_use block in the reply{detail}")

    def _no_program(self, detail: str) -> InvalidCodeError:
        return no_program(_SERVICE, detail, self._redact)


def _text_of(message: object) -> str:
    content = getattr(message, "content", None)
    parts = [
        getattr(block, "text", "")
        for block in (content if isinstance(content, list) else [])
        if getattr(block, "type", None) == "text"
    ]
    return " ".join(part for part in parts if isinstance(part, str))[:SNIPPET_CHARS]


def _detail(error: Any) -> str:
    detail = getattr(error, "api_message", None)
    if not isinstance(detail, str) or not detail:
        body = getattr(error, "body", None)
        detail = body if isinstance(body, str) and body else str(getattr(error, "message", ""))
    return detail[:SNIPPET_CHARS]
