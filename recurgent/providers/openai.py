"""OpenAI provider: asks a Chat Completions API (OpenAI or compatible) to write one program.

This is the only module of recurgent that imports the ``openai`` SDK. It sends the request,
returns the reply's JSON object unvalidated (the runtime validates it with
:func:`~recurgent.program.parse_program`) and turns every SDK failure into a
:class:`~recurgent.errors.ProviderError` whose message carries no credentials.
"""

from __future__ import annotations

import copy
import json
import os
import re
from collections.abc import Callable, Mapping
from typing import Any, Literal, TypeVar

import openai
from openai.types.chat import ChatCompletionFunctionToolParam, ChatCompletionMessageParam

from recurgent import providers
from recurgent.errors import ProviderError, ProviderTimeoutError, UsageError
from recurgent.providers import ProviderRequest

__all__ = ["OpenAIProvider", "strict_schema"]

_T = TypeVar("_T")

_TOOL_NAME = "execute_code"
# Local OpenAI-compatible servers (Ollama, llama.cpp, vLLM) ignore the key, but the SDK wants one.
_PLACEHOLDER_KEY = "not-needed"
_SNIPPET_CHARS = 200
_SECRET_PATTERNS = (
    re.compile(r"\bsk-[A-Za-z0-9_-]+"),
    re.compile(r"\bBearer\s+[^\s\"',;]+", re.IGNORECASE),
)
# Keywords whose values are subschemas (dicts or lists of them); enum, const and default are data.
_SUBSCHEMA_KEYWORDS = ("items", "prefixItems", "anyOf", "oneOf", "allOf", "not")
_SUBSCHEMA_MAPS = ("properties", "$defs", "definitions")


def strict_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Rewrite a JSON schema for OpenAI strict mode, which requires every property.

    Each object node with ``properties`` lists all of them in ``required``; those that were
    optional become nullable instead (``"string"`` -> ``["string", "null"]``), so the model
    answers ``null`` where it would have left them out.

    Args:
        schema: The schema to rewrite; it is not modified.

    Returns:
        A rewritten deep copy.
    """
    result = copy.deepcopy(dict(schema))
    _require_all(result)
    return result


def _require_all(node: object) -> None:
    if isinstance(node, list):
        for item in node:
            _require_all(item)
        return
    if not isinstance(node, dict):
        return
    for keyword in _SUBSCHEMA_KEYWORDS:
        _require_all(node.get(keyword))
    for keyword in _SUBSCHEMA_MAPS:
        subschemas = node.get(keyword)
        if isinstance(subschemas, dict):
            _require_all(list(subschemas.values()))
    properties = node.get("properties")
    if not isinstance(properties, dict):
        return
    required = set(node.get("required", ()))
    for name, subschema in properties.items():
        if name not in required and isinstance(subschema, dict):
            _make_nullable(subschema)
    node["required"] = list(properties)


def _make_nullable(schema: dict[str, Any]) -> None:
    kind = schema.get("type")
    if isinstance(kind, str) and kind != "null":
        schema["type"] = [kind, "null"]
    elif isinstance(kind, list) and "null" not in kind:
        schema["type"] = [*kind, "null"]


class OpenAIProvider:
    """Writes programs with OpenAI Chat Completions, or any server that speaks its API.

    Credentials come from the arguments, else from ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL``,
    read once here. A base URL without a key is enough for local servers. With neither, the
    provider is still built, and :meth:`generate_program` raises a :class:`ProviderError`
    explaining what to set.

    Args:
        api_key: API key; defaults to ``OPENAI_API_KEY``.
        base_url: API root such as ``http://localhost:11434/v1``; defaults to ``OPENAI_BASE_URL``,
            else OpenAI's own.
        client: A ready-made SDK client; when given, ``api_key`` and ``base_url`` are ignored.
        mode: ``"function_call"`` forces a call of the ``execute_code`` tool, which most
            compatible servers support; ``"json_schema"`` asks for structured output instead.
        max_retries: Retries done by the SDK itself. Defaults to 0 because the runtime already
            retries provider errors within its own attempt and time budgets; SDK retries would
            multiply attempts and outlast ``provider_timeout_seconds``.

    Raises:
        UsageError: ``mode`` is unknown or ``max_retries`` is negative.
    """

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        client: openai.OpenAI | None = None,
        mode: Literal["function_call", "json_schema"] = "function_call",
        max_retries: int = 0,
    ) -> None:
        if mode not in ("function_call", "json_schema"):
            raise UsageError(f"mode must be 'function_call' or 'json_schema', got {mode!r}")
        if max_retries < 0:
            raise UsageError(f"max_retries must be >= 0, got {max_retries}")
        self._mode = mode
        self._client = client
        self._secret = client.api_key if client is not None else None
        if client is not None:
            return
        api_key = api_key or os.environ.get("OPENAI_API_KEY") or None
        base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
        if api_key is None and base_url is None:
            return
        self._secret = api_key
        self._client = openai.OpenAI(
            api_key=api_key or _PLACEHOLDER_KEY, base_url=base_url, max_retries=max_retries
        )

    def generate_program(self, request: ProviderRequest) -> object:
        """Ask the model for a program.

        Args:
            request: What to write, with the model, prompts, timeout and reply schema.

        Returns:
            The reply's JSON object, e.g. ``{"code": "...", "dependencies": None}``.

        Raises:
            ProviderTimeoutError: No answer within ``request.timeout_seconds``.
            ProviderError: Requests are disabled, no credentials are configured, the API failed
                or the reply holds no JSON object.
        """
        if not providers.ALLOW_PROVIDER_REQUESTS:
            raise ProviderError(
                "Provider requests are disabled "
                "(recurgent.providers.ALLOW_PROVIDER_REQUESTS is False)"
            )
        client = self._client
        if client is None:
            raise ProviderError(
                "No OpenAI credentials: set OPENAI_API_KEY, or OPENAI_BASE_URL for an "
                "OpenAI-compatible server, or pass provider= to use another provider"
            )
        schema = strict_schema(request.response_schema)
        messages: list[ChatCompletionMessageParam] = [
            {"role": "system", "content": request.system_prompt},
            {"role": "user", "content": request.user_prompt},
        ]
        if self._mode == "json_schema":
            completion = self._send(
                lambda: client.chat.completions.create(
                    model=request.model,
                    messages=messages,
                    response_format={
                        "type": "json_schema",
                        "json_schema": {"name": _TOOL_NAME, "strict": True, "schema": schema},
                    },
                    timeout=request.timeout_seconds,
                ),
                request.timeout_seconds,
            )
        else:
            tool: ChatCompletionFunctionToolParam = {
                "type": "function",
                "function": {
                    "name": _TOOL_NAME,
                    "description": "Provide the Python program to run",
                    "parameters": schema,
                    "strict": True,
                },
            }
            completion = self._send(
                lambda: client.chat.completions.create(
                    model=request.model,
                    messages=messages,
                    tools=[tool],
                    tool_choice={"type": "function", "function": {"name": _TOOL_NAME}},
                    timeout=request.timeout_seconds,
                ),
                request.timeout_seconds,
            )
        return self._program_from(completion)

    def _send(self, call: Callable[[], _T], timeout: float | None) -> _T:
        # The one place SDK errors are translated. SDK exceptions hold the request, whose headers
        # carry the API key, so none may stay reachable from what we raise. Raising after the
        # except clause, where `exc` is gone, leaves no __context__ to it (`from None` states the
        # intent). A context manager could not: its __exit__ runs inside the with statement's
        # handler, so the SDK exception would become __context__ and stay in __exit__'s frame.
        failure: ProviderError
        try:
            return call()
        except openai.APITimeoutError:
            limit = f" after {timeout:g}s" if timeout is not None else ""
            failure = ProviderTimeoutError(f"OpenAI request timed out{limit}")
        except openai.OpenAIError as exc:
            failure = ProviderError(self._redact(_describe(exc)))
        except json.JSONDecodeError as exc:
            # The SDK decodes a 200 reply with json.loads and lets malformed bodies through.
            failure = self._no_program(f"body is not JSON ({exc})")
        raise failure from None

    def _program_from(self, completion: object) -> dict[str, Any]:
        # Replies are checked field by field: without strict validation the SDK builds its
        # models from whatever JSON arrives, and compatible servers omit or vary fields.
        choices = getattr(completion, "choices", None)
        if not isinstance(choices, list) or not choices:
            raise self._no_program("the reply has no choices")
        message = getattr(choices[0], "message", None)
        if message is None:
            raise self._no_program("the first choice has no message")
        refusal = getattr(message, "refusal", None)
        if refusal:
            raise ProviderError(self._redact(f"OpenAI refused to write the program: {refusal}"))
        if self._mode == "function_call":
            tool_calls = getattr(message, "tool_calls", None)
            if isinstance(tool_calls, list) and tool_calls:
                function = getattr(tool_calls[0], "function", None)
                arguments = getattr(function, "arguments", None)
                return self._json_object(arguments, "tool call arguments")
        # Some local servers answer a forced tool call with the JSON in the message content.
        content = getattr(message, "content", None)
        if content is None:
            raise self._no_program("the message has neither a tool call nor content")
        return self._json_object(content, "message content")

    def _json_object(self, text: object, source: str) -> dict[str, Any]:
        if not isinstance(text, str):
            raise self._no_program(f"no {source}")
        try:
            parsed = json.loads(text)
        except json.JSONDecodeError:
            parsed = None
        if not isinstance(parsed, dict):
            snippet = text[:_SNIPPET_CHARS]
            raise self._no_program(f"no JSON object in {source}: {snippet!r}")
        return parsed

    def _no_program(self, detail: str) -> ProviderError:
        return ProviderError(self._redact(f"No program in OpenAI response: {detail}"))

    def _redact(self, text: str) -> str:
        if self._secret:
            text = text.replace(self._secret, "[REDACTED]")
        for pattern in _SECRET_PATTERNS:
            text = pattern.sub("[REDACTED]", text)
        return text


def _describe(exc: openai.OpenAIError) -> str:
    if isinstance(exc, openai.APIStatusError | openai.APIResponseValidationError):
        # The SDK's own message is only "Error code: N" unless the body holds an error message.
        body = exc.body
        detail = body.get("message") if isinstance(body, Mapping) else body
        if not isinstance(detail, str) or not detail:
            detail = exc.message
        return f"OpenAI API error (HTTP {exc.status_code}): {detail[:_SNIPPET_CHARS]}"
    if isinstance(exc, openai.APIConnectionError):
        cause = f" ({exc.__cause__})" if exc.__cause__ is not None else ""
        return f"Could not reach the OpenAI API: {exc.message}{cause}"
    return f"OpenAI SDK error: {exc}"
