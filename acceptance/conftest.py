"""Acceptance fixtures: the loopback feed server and the provider backends every scenario runs on."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from acceptance.feed_server import FeedServer
from acceptance.harness import OFFLINE_MODES, Backend, openai_handler
from acceptance.programs import PROGRAMS, feed_substitutions
from acceptance.scripted import ProgramRouter
from recurgent import providers
from recurgent.providers import route_provider
from recurgent.providers.openai import OpenAIProvider
from specs.providers.fake_openai_server import FakeOpenAIServer

_PROXY_VARIABLES = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY")
_LOOPBACK_KEY = "sk-loopback-test"
# Read before the root conftest clears it for each test: a live run picks its model, and so its
# provider (claude-* -> Anthropic), with RECURGENT_MODEL (ADR 0035).
_LIVE_MODEL = os.environ.get("RECURGENT_MODEL", "").strip() or None


@pytest.fixture(autouse=True)
def _direct_connections(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keep loopback traffic (urllib in the sandbox, httpx in the SDK) away from any proxy."""
    for name in _PROXY_VARIABLES:
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)


@pytest.fixture
def feed_server() -> Iterator[FeedServer]:
    """The synthetic news feeds on 127.0.0.1, a fresh server (and hit counters) per test."""
    with FeedServer() as server:
        yield server


def _backend(
    mode: str, feed_server: FeedServer, log_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Backend]:
    # Every mode stores under one explicit root beside the log: the scripted provider is a test
    # double, which persists nothing without one (ADR 0077).
    root = log_path.parent / "toolstore"
    if mode == "live":
        monkeypatch.setattr(providers, "ALLOW_PROVIDER_REQUESTS", True)
        if _LIVE_MODEL is not None:
            monkeypatch.setenv("RECURGENT_MODEL", _LIVE_MODEL)
        yield Backend(mode, route_provider(_LIVE_MODEL), log_path, store_root=root)
        return
    router = ProgramRouter(PROGRAMS, substitutions=feed_substitutions(feed_server.base_url))
    if mode == "scripted":
        yield Backend(mode, router.provider(), log_path, router, store_root=root)
    else:
        monkeypatch.setattr(providers, "ALLOW_PROVIDER_REQUESTS", True)
        for name in ("OPENAI_API_KEY", "OPENAI_BASE_URL"):
            monkeypatch.delenv(name, raising=False)
        with FakeOpenAIServer(openai_handler(router)) as server:
            # One HTTP request per generation attempt: unscripted routes answer 500 (ADR 0034).
            provider = OpenAIProvider(
                base_url=server.base_url, api_key=_LOOPBACK_KEY, max_retries=0
            )
            yield Backend(mode, provider, log_path, router, server, store_root=root)
    assert not router.unrouted, f"requests no scripted program answered: {router.unrouted}"


@pytest.fixture(params=[*OFFLINE_MODES, pytest.param("live", marks=pytest.mark.live)])
def provider(
    request: pytest.FixtureRequest,
    feed_server: FeedServer,
    log_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Backend]:
    """Each scenario three ways: scripted, through the loopback OpenAI server, and live."""
    yield from _backend(request.param, feed_server, log_path, monkeypatch)


@pytest.fixture(params=OFFLINE_MODES)
def offline_provider(
    request: pytest.FixtureRequest,
    feed_server: FeedServer,
    log_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Backend]:
    """Both offline modes, for variants that script a misbehaving model."""
    yield from _backend(request.param, feed_server, log_path, monkeypatch)
