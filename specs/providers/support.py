"""Helpers shared by the provider specs: requests, a fake clock, environment isolation."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from recurgent import providers
from recurgent.providers import ProviderRequest
from recurgent.providers._retry import RetryPolicy

__all__ = ["PROVIDER_ENV", "FakeClock", "isolate_provider_env", "make_request"]

#: Environment variables that configure providers; specs start with none of them.
PROVIDER_ENV = (
    "OPENAI_API_KEY",
    "OPENAI_BASE_URL",
    "OPENAI_CUSTOM_HEADERS",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_BASE_URL",
    "ANTHROPIC_CUSTOM_HEADERS",
    "ANTHROPIC_PROFILE",
    "ANTHROPIC_CONFIG_DIR",
    "ANTHROPIC_FEDERATION_RULE_ID",
    "ANTHROPIC_ORGANIZATION_ID",
    "ANTHROPIC_IDENTITY_TOKEN",
    "ANTHROPIC_IDENTITY_TOKEN_FILE",
    "RECURGENT_PROVIDER",
    "RECURGENT_OPENAI_API",
)


def isolate_provider_env(monkeypatch: pytest.MonkeyPatch, home: Path) -> None:
    """Allow provider requests (loopback only), clear every provider variable, empty ``HOME``.

    ``HOME`` moves to ``home`` so no credentials profile of the host (``~/.config/anthropic``)
    is found.
    """
    monkeypatch.setattr(providers, "ALLOW_PROVIDER_REQUESTS", True)
    monkeypatch.setenv("HOME", str(home))
    for name in PROVIDER_ENV:
        monkeypatch.delenv(name, raising=False)


def make_request(**overrides: Any) -> ProviderRequest:
    """A request for calculator.add with both prompts and a 5 s timeout, fields overridable."""
    fields: dict[str, Any] = {
        "role": "calculator",
        "method_name": "add",
        "args": (),
        "kwargs": {},
        "depth": 0,
        "model": "gpt-test",
        "system_prompt": "You write Python.",
        "user_prompt": "Add 2 and 3.",
        "attempt": 1,
        "timeout_seconds": 5.0,
    }
    return ProviderRequest(**{**fields, **overrides})


class FakeClock:
    """A monotonic clock that only moves when ``sleep`` is called; records every sleep."""

    def __init__(self, jitter: float = 0.0) -> None:
        self.now = 1000.0
        self.sleeps: list[float] = []
        self._jitter = jitter

    def clock(self) -> float:
        """The fake time."""
        return self.now

    def sleep(self, seconds: float) -> None:
        """Record ``seconds`` and advance the clock by it."""
        self.sleeps.append(seconds)
        self.now += seconds

    def policy(self, **overrides: Any) -> RetryPolicy:
        """A RetryPolicy on this clock, with a fixed jitter draw."""
        fields: dict[str, Any] = {
            "sleep": self.sleep,
            "clock": self.clock,
            "wall_clock": lambda: 1_700_000_000.0,
            "jitter": lambda: self._jitter,
        }
        return RetryPolicy(**{**fields, **overrides})
