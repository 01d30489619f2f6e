"""Provider protocol: the request the runtime hands over and the reply it expects back.

A provider turns a :class:`ProviderRequest` into a program: a :class:`~recurgent.program.Program`
or a mapping ``{"code": ..., "dependencies": [...]}``. Anything else (``None`` included) counts as
an invalid reply and is retried by the lifecycle. Providers raise on transport failures; the
lifecycle classifies those (ADR 0004).

Test doubles live in :mod:`recurgent.testing`, never imported from here.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, Protocol, runtime_checkable

from recurgent.errors import UsageError
from recurgent.program import PROGRAM_SCHEMA

__all__ = [
    "ALLOW_PROVIDER_REQUESTS",
    "Provider",
    "ProviderRequest",
    "default_provider",
    "resolve_provider",
]

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
    """Anything that can write a program for a request."""

    def generate_program(self, request: ProviderRequest) -> object:
        """Return a ``Program``, a mapping with ``code``, or anything else to signal failure."""
        ...


def resolve_provider(spec: object) -> Provider | None:
    """Validate the ``provider`` option.

    Args:
        spec: A provider object, ``"openai"``, or ``None`` (OpenAI, built on first use).

    Returns:
        The provider object, or ``None`` when the default OpenAI provider should be built lazily.

    Raises:
        UsageError: ``spec`` is neither.
    """
    if spec is None:
        return None
    if isinstance(spec, str):
        if spec.strip().lower() == "openai":
            return None
        raise UsageError(f"Unknown provider {spec!r}; pass 'openai' or a provider object")
    if isinstance(spec, type):
        raise UsageError(f"provider must be an instance, got the class {spec.__name__}")
    if isinstance(spec, Provider):
        return spec
    raise UsageError(
        f"provider must be 'openai' or an object with generate_program(request), "
        f"got {type(spec).__name__}"
    )


def default_provider() -> Provider:
    """Build the OpenAI provider from the environment (``OPENAI_API_KEY``, ``OPENAI_BASE_URL``)."""
    from recurgent.providers.openai import OpenAIProvider

    return OpenAIProvider()
