"""Helpers shared by the store specs: a frozen clock, call records, and a scripted stand-in for a
real model."""

from __future__ import annotations

import datetime
import time
from pathlib import Path
from typing import Any

import pytest

import recurgent._store._lookup as lookup_module
from recurgent import Agent
from recurgent._store import CallRecord, Lookup, Store, checksum
from recurgent._store._cacheability import Cacheability
from recurgent._store._provenance import Reader
from recurgent.testing import ScriptedProvider

FROZEN = datetime.datetime(2026, 12, 1, 12, 0, 0, 123000, tzinfo=datetime.UTC)
"""The instant every frozen store clock returns."""

STABLE = Cacheability(True, "stable_method_default", False)
"""The classification of an ordinary reusable program."""


def frozen() -> datetime.datetime:
    """A store clock stuck at :data:`FROZEN`."""
    return FROZEN


def call(code: str = "return 42", **overrides: Any) -> CallRecord:
    """A finished ``calculator.answer`` call that generated ``code`` for the host's own agent
    and answered ok."""
    fields: dict[str, Any] = {
        "role": "calculator",
        "method": "answer",
        "code": code,
        "dependencies": [],
        "contract_fingerprint": "none",
        "prompt_version": "p1",
        "runtime_version": "0.1.0",
        "model": "m1",
        "cacheability": STABLE,
        "source": "generated",
        "result": "ok",
        "trace_id": "trace-1",
        "duration_ms": 12.34,
        "author": "host",
    }
    fields.update(overrides)
    return CallRecord(**fields)


class ScriptedModel(ScriptedProvider):
    """A :class:`ScriptedProvider` that does not declare itself a test double: it stands for the
    real model of a user's agent, so its agents store under the default root and run stored
    programs of any script, as an agent with a real provider does (ADR 0077). Specs of reuse,
    repair and store trust that are not about test doubles use it."""

    test_double = False


def version_state(data: dict[str, Any], code: str) -> tuple[int, int, list[str], str, bool]:
    """One version of an artifact's JSON ``data``, as the red-team specs compare it: calls,
    failures, sessions (sorted), lifecycle state, whether it is the durable incumbent."""
    digest = checksum(code)
    card = data["scorecards"][digest]
    lifecycle = data["lifecycle"]
    return (
        card["calls"],
        card["failures"],
        sorted(card["sessions"]),
        lifecycle["versions"][digest]["lifecycle_state"],
        lifecycle["incumbent_durable_checksum"] == digest,
    )


def host_lookup(store: Store, *, enforce: bool = False, reader: Reader | None = None) -> Lookup:
    """The host's lookup of ``calculator.answer`` (no contract, runtime 0.1.0), as the store
    specs make it."""
    return store.lookup(
        "calculator",
        "answer",
        contract_fingerprint="none",
        runtime_version="0.1.0",
        host_call=True,
        enforce=enforce,
        reader=reader,
    )


def host_agent_without_a_model(root: Path, trace: str) -> Agent:
    """The host's own ``calculator`` in session ``trace`` on ``root``, whose model writes
    nothing (a repair request fails, as when the provider is down)."""
    return Agent(
        "calculator", provider=ScriptedModel({}), toolstore_root=root, log=False, trace_id=trace
    )


def past_the_recheck_window(monkeypatch: pytest.MonkeyPatch) -> None:
    """Move the artifact cache's clock an hour on (ADR 0138): a change another process made (a
    spec's own rename or edit stands in for one) is seen at the next lookup."""
    cache = lookup_module.ARTIFACTS
    monkeypatch.setattr(cache, "_clock", lambda: time.monotonic() + 3600.0)
