"""Isolation shared by every test: no provider requests, no writes outside tmp_path."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from recurgent import providers
from recurgent._runtime_config import SETTING_NAMES, reset_runtime_config
from recurgent._store import _pending, flush as store_flush

# Specs look at what waits in the tables; the background writer would write it a second later
# (ADR 0166). Its own specs turn it on.
_pending.WRITER.enabled = False


@pytest.fixture(autouse=True)
def _isolate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Redirect XDG state into tmp_path, drop proxies and forbid provider requests."""
    state = tmp_path / "xdg-state"
    monkeypatch.setenv("XDG_STATE_HOME", str(state))
    monkeypatch.delenv("RECURGENT_MODEL", raising=False)
    # The tool store's default root follows XDG_STATE_HOME into this test's tmp_path: every test
    # starts from an empty store, and only its own calls can be reused.
    monkeypatch.delenv("RECURGENT_TOOLSTORE_ROOT", raising=False)
    # Loopback servers only: a proxy from the environment would carry test requests off the host.
    for name in (
        "http_proxy",
        "https_proxy",
        "all_proxy",
        "HTTP_PROXY",
        "HTTPS_PROXY",
        "ALL_PROXY",
    ):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setattr(providers, "ALLOW_PROVIDER_REQUESTS", False)
    # Runtime switches come from the defaults in every test unless the test sets them.
    for name in SETTING_NAMES:
        monkeypatch.delenv("RECURGENT_" + name.upper(), raising=False)
    reset_runtime_config()
    yield
    reset_runtime_config()
    # Counter changes still waiting in this process belong to this test's store (ADR 0055).
    store_flush()
    # A change the flush could not write (a test that refused its store's lock file) would wait
    # for the next test's flush and be reported there: it goes with this test's store.
    for table in (_pending.RUNS, _pending.USES):
        for path in table.pending():
            table.take(path)


@pytest.fixture
def log_path(tmp_path: Path) -> Path:
    """A JSONL log file inside tmp_path."""
    return tmp_path / "calls.jsonl"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Skip live tests unless selected with -m live and an OpenAI or Anthropic key is set, and
    Ray specs unless selected with -m ray."""
    import os

    selected = config.getoption("-m") or ""
    keyed = os.environ.get("OPENAI_API_KEY") or os.environ.get("ANTHROPIC_API_KEY")
    live_ok = "live" in selected and "not live" not in selected and keyed
    skip = pytest.mark.skip(
        reason="live test: run with -m live and OPENAI_API_KEY or ANTHROPIC_API_KEY set"
    )
    ray_ok = "ray" in selected and "not ray" not in selected
    skip_ray = pytest.mark.skip(
        reason="Ray spec: run with -m ray (make unit does, in a pytest of its own)"
    )
    for item in items:
        if "live" in item.keywords and not live_ok:
            item.add_marker(skip)
        if "ray" in item.keywords and not ray_ok:
            item.add_marker(skip_ray)
