"""OpenAI provider: asks Chat Completions or the Responses API (OpenAI or compatible) for a program.

This is the only module of recurgent that imports the ``openai`` SDK. It sends the request
through the shared retry policy (:mod:`recurgent.providers._retry`), returns the reply's JSON
object unvalidated (the runtime validates it with :func:`~recurgent.program.parse_program`) as a
:class:`~recurgent.providers.ProviderReply` carrying the token usage, and turns every SDK failure
into a typed :class:`~recurgent.errors.ProviderError` whose message carries no credentials.
"""

from __future__ import annotations

import copy
import os
from collections.abc import Mapping
from typing import Any, Literal

import openai
from openai.types.chat import ChatCompletionFunctionToolParam, ChatCompletionMessageParam

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
    json_object,
    no_program,
    served_model,
    token_counts,
)
from recurgent.providers._retry import (
    Failure,
    RetryPolicy,
    check_option,
)

__all__ = ["OpenAIProvider", "strict_problems", "strict_schema"]

_SERVICE = "OpenAI"
_TOOL_NAME = "execute_code"
# Local OpenAI-compatible servers (Ollama, llama.cpp, vLLM) ignore the key, but the SDK wants one.
_PLACEHOLDER_KEY = "not-needed"
# Keywords whose values are subschemas (dicts or lists of them); enum, const and default are data.
_SUBSCHEMA_KEYWORDS = ("items", "prefixItems", "anyOf", "oneOf", "allOf", "not")
_SUBSCHEMA_MAPS = ("properties", "$defs", "definitions")
_APIS = ("chat", "responses")
_MODES = ("function_call", "json_schema")
_CHAT_USAGE = {
    "input_tokens": "prompt_tokens",
    "output_tokens": "completion_tokens",
    "cached_tokens": "prompt_tokens_details.cached_tokens",
}
_RESPONSES_USAGE = {
    "input_tokens": "input_tokens",
    "output_tokens": "output_tokens",
    "cached_tokens": "input_tokens_details.cached_tokens",
}


def strict_schema(schema: Mapping[str, Any]) -> dict[str, Any]:
    """Rewrite a JSON schema for OpenAI strict mode, which requires every property.

    Each object node with ``properties`` lists all of them in ``required``; those that were
    optional become nullable instead (``"string"`` -> ``["string", "null"]``), so the model
    answers ``null`` where it would have left them out. Such a node without
    ``additionalProperties`` gets ``additionalProperties: false``, which strict mode demands.

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
    node.setdefault("additionalProperties", False)


def strict_problems(schema: Mapping[str, Any]) -> list[str]:
    """What keeps ``schema`` from being accepted by OpenAI strict mode (empty when nothing).

    Checks every object node with ``properties``: all of them required and
    ``additionalProperties`` false.

    Args:
        schema: The schema to check, e.g. ``strict_schema(PROGRAM_SCHEMA)``.

    Returns:
        One line per problem, naming the node by its JSON pointer.
    """
    problems: list[str] = []
    _check_strict(schema, "", problems)
    return problems


def _check_strict(node: object, pointer: str, problems: list[str]) -> None:
    if isinstance(node, list):
        for index, item in enumerate(node):
            _check_strict(item, f"{pointer}/{index}", problems)
        return
    if not isinstance(node, Mapping):
        return
    for keyword in _SUBSCHEMA_KEYWORDS:
        if keyword in node:
            _check_strict(node[keyword], f"{pointer}/{keyword}", problems)
    for keyword in _SUBSCHEMA_MAPS:
        subschemas = node.get(keyword)
        if isinstance(subschemas, Mapping):
            for name, subschema in subschemas.items():
                _check_strict(subschema, f"{pointer}/{keyword}/{name}", problems)
    properties = node.get("properties")
    if not isinstance(properties, Mapping):
        return
    where = pointer or "/"
    missing = [name for name in properties if name not in node.get("required", ())]
    if missing:
        problems.append(f"{where}: properties not required: {', '.join(missing)}")
    if node.get("additionalProperties") is not False:
        problems.append(f"{where}: additionalProperties is not false")


def _make_nullable(schema: dict[str, Any]) -> None:
    kind = schema.get("type")
    if isinstance(kind, str) and kind != "null":
        schema["type"] = [kind, "null"]
    elif isinstance(kind, list) and "null" not in kind:
        schema["type"] = [*kind, "null"]


def _text_option(name: str, value: object) -> None:
    check_option(
        "OpenAIProvider", name, value, "a str or None", value is None or isinstance(value, str)
    )


class OpenAIProvider:
    """Writes programs with OpenAI (Chat Completions or Responses), or any server speaking them.

    Credentials come from the arguments, else from ``OPENAI_API_KEY`` and ``OPENAI_BASE_URL``.
    A base URL without a key is enough for local servers; with neither, construction fails
    with a :class:`UsageError` that says what to set.

    Args:
        api_key: API key; defaults to ``OPENAI_API_KEY``.
        base_url: API root such as ``http://localhost:11434/v1``; defaults to ``OPENAI_BASE_URL``,
            else OpenAI's own.
        client: A ready-made SDK client; when given, ``api_key``, ``base_url`` and
            ``max_reply_bytes`` are ignored (its own HTTP client reads replies whole).
        api: ``"chat"`` (Chat Completions, the default, spoken by compatible servers) or
            ``"responses"`` (the Responses API, strict JSON schema output); defaults to
            ``RECURGENT_OPENAI_API``, else ``"chat"``.
        mode: For ``api="chat"``: ``"function_call"`` forces a call of the ``execute_code``
            tool, which most compatible servers support; ``"json_schema"`` asks for
            structured output instead.
        max_retries: Retries of transient failures (429, 5xx, connection errors) within the
            request's timeout; overrides ``retry_policy.max_retries``. The SDK's own retries
            are always off: this policy decides (ADR 0034).
        retry_policy: Backoff, jitter, sleep and clocks; defaults to :class:`RetryPolicy`.
        max_reply_bytes: Largest reply body read; a larger one is a
            :class:`~recurgent.errors.ProviderReplyTooLargeError`.

    Raises:
        UsageError: An option has the wrong type or value, or no credentials are configured.
    """

    def __init__(
        self,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        client: openai.OpenAI | None = None,
        api: Literal["chat", "responses"] | None = None,
        mode: Literal["function_call", "json_schema"] = "function_call",
        max_retries: int | None = None,
        retry_policy: RetryPolicy | None = None,
        max_reply_bytes: int = DEFAULT_MAX_REPLY_BYTES,
    ) -> None:
        _text_option("api_key", api_key)
        _text_option("base_url", base_url)
        check_option(
            "OpenAIProvider",
            "client",
            client,
            "an openai.OpenAI client or None",
            client is None or isinstance(client, openai.OpenAI),
        )
        if mode not in _MODES:
            raise UsageError(f"mode must be 'function_call' or 'json_schema', got {mode!r}")
        if api is None:
            api = os.environ.get("RECURGENT_OPENAI_API", "").strip().lower() or "chat"  # type: ignore[assignment]
            if api not in _APIS:
                raise UsageError(f"RECURGENT_OPENAI_API must be 'chat' or 'responses', got {api!r}")
        check_option("OpenAIProvider", "api", api, "'chat' or 'responses'", api in _APIS)
        check_option(
            "OpenAIProvider",
            "max_retries",
            max_retries,
            "an int >= 0 or None",
            max_retries is None or (type(max_retries) is int and max_retries >= 0),
        )
        check_option(
            "OpenAIProvider",
            "retry_policy",
            retry_policy,
            "a RetryPolicy or None",
            retry_policy is None or isinstance(retry_policy, RetryPolicy),
        )
        check_option(
            "OpenAIProvider",
            "max_reply_bytes",
            max_reply_bytes,
            "an int >= 1024",
            type(max_reply_bytes) is int and max_reply_bytes >= 1024,
        )
        self._api = api
        self._mode = mode
        self._policy = (retry_policy or RetryPolicy()).with_retries(max_retries)
        if client is None:
            api_key = api_key or os.environ.get("OPENAI_API_KEY") or None
            base_url = base_url or os.environ.get("OPENAI_BASE_URL") or None
            if api_key is None and base_url is None:
                raise UsageError(
                    "OpenAIProvider has no credentials: set OPENAI_API_KEY (or pass api_key=); "
                    "for an OpenAI-compatible server set OPENAI_BASE_URL (or pass base_url=); "
                    "for Claude models set ANTHROPIC_API_KEY and pip install 'recurgent[anthropic]'"
                )
            client = openai.OpenAI(
                api_key=api_key or _PLACEHOLDER_KEY,
                base_url=base_url,
                max_retries=0,
                http_client=capped_client(openai.DefaultHttpxClient, max_reply_bytes),
            )
        self._client = client
        self._redact = Redactor(client.api_key)
        self._max_reply_bytes = max_reply_bytes

    @property
    def api(self) -> str:
        """``"chat"`` or ``"responses"``."""
        return self._api

    def generate_program(self, request: ProviderRequest) -> object:
        """Ask the model for a program.

        Args:
            request: What to write, with the model, prompts, timeout and reply schema.

        Returns:
            A :class:`ProviderReply`: the reply's JSON object, e.g.
            ``{"code": "...", "dependencies": None}``, with the token usage.

        Raises:
            ProviderTimeoutError: No answer within ``request.timeout_seconds`` (all tries).
            ProviderAuthError: HTTP 401/403; not retried.
            ProviderReplyTooLargeError: The reply body exceeded ``max_reply_bytes``.
            InvalidCodeError: The reply holds no program (no tool call, no JSON, a refusal).
            ProviderError: Requests are disabled, or the API failed after every retry.
        """
        if not providers.ALLOW_PROVIDER_REQUESTS:
            raise ProviderError(
                "Provider requests are disabled "
                "(recurgent.providers.ALLOW_PROVIDER_REQUESTS is False)"
            )
        schema = strict_schema(request.response_schema)
        timeout = request.timeout_seconds
        if self._api == "responses":
            response = self._policy.run(
                lambda left: self._responses(request, schema, left),
                lambda error: self._classify(error, timeout),
                timeout=timeout,
                service=_SERVICE,
            )
            return self._program_from_response(response, request.model)
        completion = self._policy.run(
            lambda left: self._chat(request, schema, left),
            lambda error: self._classify(error, timeout),
            timeout=timeout,
            service=_SERVICE,
        )
        return self._program_from_completion(completion, request.model)

    def _chat(self, request: ProviderRequest, schema: dict[str, Any], left: float | None) -> object:
        messages: list[ChatCompletionMessageParam] = [
            {"role": "system", "content": request.system_prompt},
            {"role": "user", "content": request.user_prompt},
        ]
        if self._mode == "json_schema":
            return self._client.chat.completions.create(
                model=request.model,
                messages=messages,
                response_format={
                    "type": "json_schema",
                    "json_schema": {"name": _TOOL_NAME, "strict": True, "schema": schema},
                },
                timeout=left,
            )
        tool: ChatCompletionFunctionToolParam = {
            "type": "function",
            "function": {
                "name": _TOOL_NAME,
                "description": "Provide the Python program to run",
                "parameters": schema,
                "strict": True,
            },
        }
        return self._client.chat.completions.create(
            model=request.model,
            messages=messages,
            tools=[tool],
            tool_choice={"type": "function", "function": {"name": _TOOL_NAME}},
            timeout=left,
        )

    def _responses(
        self, request: ProviderRequest, schema: dict[str, Any], left: float | None
    ) -> object:
        # The system prompt goes first and unchanged so OpenAI's automatic prefix caching
        # can reuse it across calls; nothing needs marking (ADR 0035).
        return self._client.responses.create(
            model=request.model,
            input=[
                {"role": "system", "content": request.system_prompt},
                {"role": "user", "content": request.user_prompt},
            ],
            text={
                "format": {
                    "type": "json_schema",
                    "name": _TOOL_NAME,
                    "strict": True,
                    "schema": schema,
                }
            },
            timeout=left,
        )

    def _classify(self, error: Exception, timeout: float | None) -> Failure:
        # The one place SDK errors are translated; messages are redacted (the SDK may quote
        # the key) and the SDK exception itself is never kept.
        return classify_sdk_error(
            error,
            errors=_SDK_ERRORS,
            service=_SERVICE,
            key_variable="OPENAI_API_KEY",
            base_url=str(self._client.base_url),
            timeout=timeout,
            redact=self._redact,
            now=self._policy.wall_clock,
        )

    def _program_from_completion(self, completion: object, requested: str) -> ProviderReply:
        # Replies are checked field by field: without strict validation the SDK builds its
        # models from whatever JSON arrives, and compatible servers omit or vary fields.
        usage = token_counts(getattr(completion, "usage", None), _CHAT_USAGE)
        model = served_model(completion, requested)
        choices = getattr(completion, "choices", None)
        if not isinstance(choices, list) or not choices:
            raise self._no_program("the reply has no choices")
        message = getattr(choices[0], "message", None)
        if message is None:
            raise self._no_program("the first choice has no message")
        self._check_refusal(getattr(message, "refusal", None))
        if self._mode == "function_call":
            tool_calls = getattr(message, "tool_calls", None)
            if isinstance(tool_calls, list) and tool_calls:
                function = getattr(tool_calls[0], "function", None)
                arguments = getattr(function, "arguments", None)
                return ProviderReply(self._json(arguments, "tool call arguments"), usage, model)
        # Some local servers answer a forced tool call with the JSON in the message content.
        content = getattr(message, "content", None)
        if content is None:
            raise self._no_program("the message has neither a tool call nor content")
        return ProviderReply(self._json(content, "message content"), usage, model)

    def _program_from_response(self, response: object, requested: str) -> ProviderReply:
        usage = token_counts(getattr(response, "usage", None), _RESPONSES_USAGE)
        model = served_model(response, requested)
        output = getattr(response, "output", None)
        if not isinstance(output, list):
            raise self._no_program("the response has no output")
        # Reasoning items may come first; the program is in the first message item.
        message = next((item for item in output if getattr(item, "type", None) == "message"), None)
        if message is None:
            raise self._no_program("the output has no message item")
        content = getattr(message, "content", None)
        if not isinstance(content, list) or not content:
            raise self._no_program("the message item has no content")
        for part in content:
            if getattr(part, "type", None) == "refusal":
                self._check_refusal(getattr(part, "refusal", None) or "(no reason given)")
        for part in content:
            if getattr(part, "type", None) == "output_text":
                text = getattr(part, "text", None)
                return ProviderReply(self._json(text, "output text"), usage, model)
        raise self._no_program("the message item has no output_text")

    def _check_refusal(self, refusal: object) -> None:
        if refusal:
            text = str(refusal)[:SNIPPET_CHARS]
            raise InvalidCodeError(self._redact(f"OpenAI refused to write the program: {text}"))

    def _json(self, text: object, source: str) -> dict[str, Any]:
        return json_object(text, source, service=_SERVICE, redact=self._redact)

    def _no_program(self, detail: str) -> InvalidCodeError:
        return no_program(_SERVICE, detail, self._redact)


def _detail(error: openai.APIStatusError | openai.APIResponseValidationError) -> str:
    # The SDK's own message is only "Error code: N" unless the body holds an error message.
    body = error.body
    detail = body.get("message") if isinstance(body, Mapping) else body
    if not isinstance(detail, str) or not detail:
        detail = error.message
    return detail[:SNIPPET_CHARS]


_SDK_ERRORS = SdkErrors(
    timeout=openai.APITimeoutError,
    status=openai.APIStatusError,
    connection=openai.APIConnectionError,
    base=openai.OpenAIError,
    detail=_detail,
    invalid_response=openai.APIResponseValidationError,
)
