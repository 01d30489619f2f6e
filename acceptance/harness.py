"""The scenario harness: one backend per provider mode, and readers for the call log.

A scenario runs the same agent code against three backends:

``scripted``
    A :class:`~recurgent.testing.FunctionProvider` answering from :class:`ProgramRouter`.
``openai_loopback``
    The real :class:`~recurgent.providers.openai.OpenAIProvider`, talking HTTP through the
    ``openai`` SDK to a loopback OpenAI-compatible server answering from the same router.
``live``
    ``OpenAIProvider()`` configured from the environment; only shapes and invariants hold.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from acceptance.programs import ProgramKey
from acceptance.scripted import ProgramRouter, Reply, Route, UnroutedRequest
from recurgent import Agent, Provider
from recurgent.testing import read_log
from specs.providers.fake_openai_server import FakeOpenAIServer, FakeReply

__all__ = [
    "OFFLINE_MODES",
    "Backend",
    "LogLine",
    "children_of",
    "log_shape",
    "openai_handler",
    "single_trace",
]

OFFLINE_MODES = ("scripted", "openai_loopback")

LogLine = tuple[int, str, str, str, str | None]
"""``(depth, role, method, outcome_status, outcome_error_type)`` of one log entry."""


@dataclass
class Backend:
    """A provider in one mode, with the log path and (offline) the router behind it.

    Attributes:
        mode: ``scripted``, ``openai_loopback`` or ``live``.
        provider: What agents are built with.
        log_path: Where agents built by :meth:`agent` log.
        router: The scripted programs (``None`` when live).
        openai_server: The loopback server (``openai_loopback`` only).
        store_root: The tool store agents built by :meth:`agent` share. Explicit, because a
            scripted provider is a test double and persists nothing without one (ADR 0077);
            ``None`` leaves each agent its default.
    """

    mode: str
    provider: Provider
    log_path: Path
    router: ProgramRouter | None = None
    openai_server: FakeOpenAIServer | None = None
    store_root: Path | None = None

    @property
    def live(self) -> bool:
        """True when a real model writes the programs (exact values cannot be asserted)."""
        return self.mode == "live"

    def agent(self, role: str, **options: Any) -> Agent:
        """An agent on this backend, logging to :attr:`log_path`, storing under
        :attr:`store_root` (unless ``toolstore_root`` is given)."""
        if self.store_root is not None:
            options.setdefault("toolstore_root", self.store_root)
        return Agent(role, provider=self.provider, log=self.log_path, **options)

    def log(self) -> list[dict[str, Any]]:
        """Every log entry written so far."""
        return read_log(self.log_path)

    def script(self, key: ProgramKey, replies: Reply | Sequence[Reply]) -> None:
        """Make the scripted model answer ``key`` differently (offline modes only)."""
        if self.router is None:
            raise RuntimeError(f"the {self.mode} backend has no scripted programs")
        self.router.script(key, replies)

    def requests_for(self, role: str, method: str | None = None) -> list[Route]:
        """The requests the scripted model answered for ``role`` (and ``method``), in order."""
        if self.router is None:
            raise RuntimeError(f"the {self.mode} backend has no scripted programs")
        return self.router.routes_for(role, method)

    def take_unrouted(self) -> list[str]:
        """The requests nothing answered, acknowledged so teardown does not fail on them."""
        if self.router is None:
            return []
        taken = list(self.router.unrouted)
        self.router.unrouted.clear()
        return taken


def openai_handler(router: ProgramRouter) -> Callable[[dict[str, Any]], FakeReply]:
    """A loopback-server handler answering chat completions from ``router``.

    ``None`` (no program) is sent as ``{"code": null}``, what a strict-schema model that gave up
    returns. An unrouted request gets an HTTP 500 naming what was missing.
    """

    def handle(body: dict[str, Any]) -> FakeReply:
        messages = body.get("messages") or []
        by_role = {m.get("role"): str(m.get("content") or "") for m in messages}
        try:
            code = router.reply(by_role.get("system", ""), by_role.get("user", ""))
        except UnroutedRequest as failure:
            return FakeReply.fail(500, f"loopback model: {failure}")
        return FakeReply.ok({"code": code, "dependencies": None})

    return handle


def log_shape(entries: Sequence[Mapping[str, Any]]) -> list[LogLine]:
    """The compact shape of a log, in order, for whole-log assertions."""
    return [
        (
            entry["depth"],
            entry["role"],
            entry["method"],
            entry["outcome_status"],
            entry["outcome_error_type"],
        )
        for entry in entries
    ]


def single_trace(entries: Sequence[Mapping[str, Any]]) -> str:
    """The one trace id every entry shares (fails when there are several, or no entries)."""
    traces: set[str] = {entry["trace_id"] for entry in entries}
    assert len(traces) == 1, f"expected one trace id, got {sorted(traces)}"
    return traces.pop()


def children_of(
    entries: Sequence[Mapping[str, Any]], parent: Mapping[str, Any]
) -> list[Mapping[str, Any]]:
    """The entries whose ``parent_call_id`` is ``parent``'s call id, in log order."""
    return [entry for entry in entries if entry["parent_call_id"] == parent["call_id"]]
