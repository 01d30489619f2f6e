"""Fail fast: what the routed provider needs, checked when an agent is built (ADR 0097).

An agent without ``provider=`` builds its provider on its first call (building one costs an
HTTP client and its TLS context, about 0.1 s). What that provider needs is checked when the
agent is made instead, so a missing key or SDK is a :class:`~recurgent.errors.UsageError`
from ``Agent(...)`` that names the variable or the extra, not a retriable ``provider`` error
on the first call:

* OpenAI and OpenAI-compatible servers need ``OPENAI_API_KEY`` or ``OPENAI_BASE_URL`` (a
  local server needs no key), exactly what :class:`~recurgent.providers.openai.OpenAIProvider`
  reads;
* Anthropic needs the ``anthropic`` extra, and a key: with ``ANTHROPIC_API_KEY`` or
  ``ANTHROPIC_AUTH_TOKEN`` set that is enough; otherwise the provider is built at once, so
  credentials only the SDK finds (its profiles) count, and the agent keeps that provider.

Only the variables' presence is read; no SDK is imported and no request is made.
"""

from __future__ import annotations

import importlib.util
import os

from recurgent.errors import UsageError
from recurgent.providers import Provider, configured_provider_name, provider_kind, route_provider

__all__ = ["check_route"]

_NO_PROVIDER_HINT = (
    "or pass provider= (a provider object; recurgent.testing.ScriptedProvider runs offline)"
)


def _set(name: str) -> bool:
    return bool(os.environ.get(name, "").strip())


def check_route(model: str) -> Provider | None:
    """Refuse, now, a routed provider that could not be built; a provider built to tell.

    Args:
        model: The agent's model id (``RECURGENT_MODEL`` already applied).

    Returns:
        ``None`` when the environment is enough for the first call to build the provider; the
        provider itself when it had to be built to find out (Anthropic credentials only the SDK
        resolves).

    Raises:
        UsageError: ``RECURGENT_PROVIDER`` names no provider, the ``anthropic`` extra is
            missing, or no credentials are configured; the message names what to set or
            install.
    """
    name = configured_provider_name()
    if name is None:
        name = "anthropic" if provider_kind(model) == "anthropic" else "openai"
    if name == "anthropic":
        if importlib.util.find_spec("anthropic") is None:
            raise UsageError(
                f"model {model!r} routes to Anthropic, which needs the anthropic SDK: "
                f"pip install 'recurgent[anthropic]'; {_NO_PROVIDER_HINT}"
            )
        if _set("ANTHROPIC_API_KEY") or _set("ANTHROPIC_AUTH_TOKEN"):
            return None
        try:
            return route_provider(model)
        except UsageError as error:
            raise UsageError(
                f"model {model!r} routes to Anthropic: {error.message}; {_NO_PROVIDER_HINT}"
            ) from None
    if _set("OPENAI_API_KEY") or _set("OPENAI_BASE_URL"):
        return None
    raise UsageError(
        f"model {model!r} routes to OpenAI, which needs OPENAI_API_KEY (or OPENAI_BASE_URL "
        "for an OpenAI-compatible server such as Ollama or vLLM, which needs no key); for "
        "Claude models set ANTHROPIC_API_KEY and pip install 'recurgent[anthropic]'; "
        f"{_NO_PROVIDER_HINT}"
    )
