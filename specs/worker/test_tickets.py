"""Preparation tickets: background work, wait with timeout, first transition wins, typed failure."""

from __future__ import annotations

import threading

import pytest

from recurgent._worker._tickets import PreparationTicket
from recurgent.errors import DependencyInstallError, EnvironmentPreparingError


def test_a_ticket_becomes_ready_with_the_value() -> None:
    """wait() returns 'ready' and the value is what the work returned."""
    ticket = PreparationTicket(lambda: "env-1", label="pdf tool")
    assert ticket.wait(timeout=30) == "ready"
    assert (ticket.status, ticket.value, ticket.error) == ("ready", "env-1", None)
    assert ticket.require() == "env-1"
    assert len(ticket.ticket_id) == 16


def test_wait_with_a_timeout_returns_pending_while_the_work_runs() -> None:
    """A short wait on unfinished work returns 'pending'; require() raises a retriable error."""
    release = threading.Event()
    ticket = PreparationTicket(lambda: release.wait(30), label="pdf tool")
    assert ticket.wait(timeout=0.01) == "pending"
    with pytest.raises(EnvironmentPreparingError, match="still being prepared") as raised:
        ticket.require()
    assert (raised.value.error_type, raised.value.retriable) == ("environment_preparing", True)
    release.set()
    assert ticket.wait(timeout=30) == "ready"


def test_a_failure_rejects_the_ticket_as_environment_preparing() -> None:
    """An install failure becomes environment_preparing with the cause and the message."""

    def work() -> str:
        raise DependencyInstallError("pip install failed in /x: boom")

    ticket = PreparationTicket(work, label="pdf tool")
    assert ticket.wait(timeout=30) == "error"
    assert ticket.error is not None
    assert (
        ticket.error.message
        == "Environment preparation failed for pdf tool: pip install failed in /x: boom"
    )
    assert ticket.error.metadata == {
        "cause": "dependency_install_failed",
        "prep_ticket_id": ticket.ticket_id,
    }
    with pytest.raises(EnvironmentPreparingError):
        ticket.require()


def test_the_first_transition_wins() -> None:
    """A ticket settled once ignores later settlements."""
    ticket = PreparationTicket(lambda: 1, label="x")
    ticket.wait(timeout=30)
    ticket._settle("error", None, EnvironmentPreparingError("late"))
    assert (ticket.status, ticket.value, ticket.error) == ("ready", 1, None)
