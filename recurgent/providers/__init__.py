"""Provider protocol and routing: the request handed over, the reply expected, which provider.

A provider turns a :class:`ProviderRequest` into a program: a :class:`~recurgent.program.Program`
or a mapping ``{"code": ..., "dependencies": [...]}``. Anything else (``None`` included) counts as
an invalid reply and is retried by the lifecycle. Providers raise on transport failures; the
lifecycle classifies those (ADR 0004). Network providers return a :class:`ProviderReply`, a dict
that also carries the request's token usage. :func:`route_provider` picks the provider for a
model name (ADR 0035).

Test doubles live in :mod:`recurgent.testing`, never imported from here.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from recurgent.errors import UsageError
from recurgent.program import PROGRAM_SCHEMA
from recurgent.providers._retry import RetryPolicy, describe_error, safe_message

__all__ = [
    "ALLOW_PROVIDER_REQUESTS",
    "PROVIDER_NAMES",
    "Provider",
    "ProviderKind",
    "ProviderReply",
    "ProviderRequest",
    "RetryPolicy",
    "configured_provider_name",
    "default_provider",
    "describe_error",
    "provider_kind",
    "reply_model",
    "reply_usage",
    "resolve_provider",
    "route_provider",
    "safe_message",
]

#: The names ``provider=`` and ``RECURGENT_PROVIDER`` accept.
PROVIDER_NAMES = ("openai", "anthropic")

#: Which provider a model name routes to; ``openai-compatible`` is OpenAI's provider on Chat
#: Completions for any other server (vLLM, Ollama, LM Studio).
ProviderKind = Literal["anthropic", "openai", "openai-compatible"]

_OPENAI_MODEL = re.compile(r"^(gpt-|o1-|o3-|o4-|chatgpt-)", re.IGNORECASE)
_ANTHROPIC_MODEL = re.compile(r"^claude-", re.IGNORECASE)

#: Network providers refuse to send requests while this is False. The test suite's root
#: ``conftest.py`` turns it off so no test can reach a paid API by accident; tests of the OpenAI
#: provider turn it back on for their loopback server.
ALLOW_PROVIDER_REQUESTS = True


@dataclass(frozen=True, slots=True)
class ProviderRequest:
    """Everything a provider needs to write one program.

    Attributes:
        role: Role of the agent being called.
        method_name: The dynamic method being called.
        args: Positional arguments of the call.
        kwargs: Keyword arguments of the call.
        depth: Call depth (0 for a call made by user code).
        model: Model id to use.
        system_prompt: Rendered system prompt.
        user_prompt: Rendered user prompt, including any retry feedback.
        attempt: Generation attempt number within the current round, from 1.
        timeout_seconds: How long the runtime will wait; ``None`` for no limit.
        response_schema: JSON schema the reply must satisfy.
        purpose: ``generate`` for a new program, ``repair`` when the user prompt holds a
            persisted program that failed and asks for a fixed version (ADR 0047).
    """

    role: str
    method_name: str
    args: tuple[Any, ...]
    kwargs: Mapping[str, Any]
    depth: int
    model: str
    system_prompt: str
    user_prompt: str
    attempt: int
    timeout_seconds: float | None
    response_schema: Mapping[str, Any] = field(default_factory=lambda: PROGRAM_SCHEMA)
    purpose: Literal["generate", "repair"] = "generate"


@runtime_checkable
class Provider(Protocol):
    """Anything that can write a program for a request.

    A provider that is a test double sets the class attribute ``test_double = True`` (read with
    ``getattr``, so other providers need nothing): with no explicit ``toolstore_root`` its agents
    persist nothing, and the programs it writes are never run by an agent whose provider is not
    a double. A double may also define ``script_fingerprint(role, method) -> str | None``: its
    stored programs are reused only by a double whose fingerprint for the key is the same
    (ADR 0077; :mod:`recurgent.testing` has both).
    """

    def generate_program(self, request: ProviderRequest) -> object:
        """Return a ``Program``, a mapping with ``code``, or anything else to signal failure."""
        ...


class ProviderReply(dict[str, Any]):
    """A provider's reply object (the model's arguments) plus what the request cost.

    It compares equal to the plain dict of its items; the usage rides along as an attribute so
    that no key a model writes can pose as it.

    Attributes:
        usage: Token counts of the request (``input_tokens``, ``output_tokens`` and, where the
            API reports them, ``cache_read_input_tokens``/``cache_creation_input_tokens`` for
            Anthropic or ``cached_tokens`` for OpenAI), or ``None``.
        model: The model that wrote the reply: the one the server says served it, else the one
            the request named; ``None`` when unknown (ADR 0077).
    """

    usage: dict[str, int] | None
    model: str | None

    def __init__(
        self,
        items: Mapping[str, Any],
        usage: Mapping[str, int] | None = None,
        model: str | None = None,
    ) -> None:
        super().__init__(items)
        self.usage = dict(usage) if usage else None
        self.model = model if isinstance(model, str) and model.strip() else None


def reply_usage(reply: object) -> dict[str, int] | None:
    """The token usage a provider reply carries: from a :class:`ProviderReply` or a ``Program``.

    Args:
        reply: Whatever ``generate_program`` returned.

    Returns:
        A fresh dict of non-negative token counts, or ``None`` when the reply has none.
    """
    usage = getattr(reply, "usage", None) if isinstance(reply, ProviderReply) else None
    if usage is None and not isinstance(reply, Mapping):
        usage = getattr(reply, "usage", None)
    if not isinstance(usage, Mapping):
        return None
    counts = {
        key: value
        for key, value in usage.items()
        if isinstance(key, str) and type(value) is int and value >= 0
    }
    return counts or None


_MODEL_CHARS = 200


def reply_model(reply: object) -> str | None:
    """The model a provider reply says wrote it: a :class:`ProviderReply`'s or a ``Program``'s
    ``model`` (never a key of a mapping: that is what the model wrote, ADR 0077).

    Returns:
        The name, stripped and cut to 200 characters, or ``None``.
    """
    if isinstance(reply, ProviderReply):
        model = reply.model
    elif isinstance(reply, Mapping):
        return None
    else:
        model = getattr(reply, "model", None)
    if not isinstance(model, str) or not model.strip():
        return None
    return model.strip()[:_MODEL_CHARS]


def provider_kind(model: str) -> ProviderKind:
    """Route a model name: ``claude-*`` to Anthropic, OpenAI's families to OpenAI.

    Args:
        model: The model id, e.g. ``claude-sonnet-4-5`` or ``gpt-4.1-mini``.

    Returns:
        ``"anthropic"`` for ``claude-``; ``"openai"`` for ``gpt-``, ``o1-``, ``o3-``, ``o4-`` and
        ``chatgpt-``; ``"openai-compatible"`` for anything else (a local server's model).
    """
    name = model.strip()
    if _ANTHROPIC_MODEL.match(name):
        return "anthropic"
    if _OPENAI_MODEL.match(name):
        return "openai"
    return "openai-compatible"


def _provider_name(spec: str, source: str | None) -> str:
    name = spec.strip().lower()
    if name not in PROVIDER_NAMES:
        where = f" in {source}" if source else ""
        raise UsageError(
            f"Unknown provider {spec!r}{where}; pass 'openai', 'anthropic' or a provider object"
        )
    return name


def _build(name: str) -> Provider:
    if name == "anthropic":
        from recurgent.providers.anthropic import AnthropicProvider

        return AnthropicProvider()
    from recurgent.providers.openai import OpenAIProvider

    return OpenAIProvider()


def resolve_provider(spec: object) -> Provider | None:
    """Validate the ``provider`` option.

    Args:
        spec: A provider object; ``"openai"`` or ``"anthropic"`` (any case), built now from the
            environment so a missing key or SDK is reported at construction; or ``None``, for a
            provider routed by model name on first use (:func:`route_provider`).

    Returns:
        The provider object, or ``None`` when the provider should be routed lazily.

    Raises:
        UsageError: ``spec`` is none of those, or the named provider cannot be built (no SDK
            extra, no key).
    """
    if spec is None:
        return None
    if isinstance(spec, str):
        return _build(_provider_name(spec, None))
    if isinstance(spec, type):
        raise UsageError(f"provider must be an instance, got the class {spec.__name__}")
    if isinstance(spec, Provider):
        return spec
    raise UsageError(
        f"provider must be 'openai', 'anthropic' or an object with generate_program(request), "
        f"got {type(spec).__name__}"
    )


def route_provider(model: str | None) -> Provider:
    """Build the provider for ``model``: ``RECURGENT_PROVIDER`` if set, else by model name.

    Args:
        model: The agent's model id (``RECURGENT_MODEL`` already applied by the options), or
            ``None`` for OpenAI unless ``RECURGENT_PROVIDER`` says otherwise.

    Raises:
        UsageError: ``RECURGENT_PROVIDER`` names no provider, or the provider cannot be built
            (no SDK extra, no key): the message says what to install or set.
    """
    configured = configured_provider_name()
    if configured:
        return _build(configured)
    if model is not None and provider_kind(model) == "anthropic":
        return _build("anthropic")
    return _build("openai")


def configured_provider_name() -> str | None:
    """The provider ``RECURGENT_PROVIDER`` names (``openai``/``anthropic``), or ``None``.

    Raises:
        UsageError: the variable names no provider.
    """
    configured = os.environ.get("RECURGENT_PROVIDER", "").strip()
    return _provider_name(configured, "RECURGENT_PROVIDER") if configured else None


def default_provider() -> Provider:
    """The provider ``RECURGENT_PROVIDER`` names, else OpenAI, built from the environment."""
    return route_provider(None)
