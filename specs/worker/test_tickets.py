"""Preparation tickets: background work, wait with timeout, first transition wins, typed failure."""

from __future__ import annotations

import logging
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


class TestWhenSettled:
    """ADR 0158: callbacks run once after the first transition, in the thread that settles."""

    def test_a_callback_added_while_pending_runs_once_in_the_preparation_thread(self) -> None:
        """Added before the work ends: called once, from the preparation's thread, with the
        ticket already settled."""
        release = threading.Event()
        ticket = PreparationTicket(lambda: "env-1" if release.wait(30) else None, label="x")
        seen: list[tuple[str, str | None, str]] = []
        ticket.when_settled(
            lambda t: seen.append((t.status, t.value, threading.current_thread().name))
        )
        assert seen == []
        release.set()
        assert ticket.wait(timeout=30) == "ready"
        ticket._thread.join(30)
        assert seen == [("ready", "env-1", f"recurgent-prepare-{ticket.ticket_id}")]

    def test_a_callback_added_after_settling_runs_at_once_in_the_callers_thread(self) -> None:
        """A settled ticket calls a new callback before ``when_settled`` returns."""
        ticket = PreparationTicket(lambda: 7, label="x")
        ticket.wait(timeout=30)
        seen: list[tuple[str, str]] = []
        ticket.when_settled(lambda t: seen.append((t.status, threading.current_thread().name)))
        assert seen == [("ready", threading.current_thread().name)]

    def test_a_failed_preparation_calls_its_callbacks_too(self) -> None:
        """A rejected ticket settles its callbacks with the error in place."""
        release = threading.Event()

        def work() -> str:
            release.wait(30)
            raise DependencyInstallError("boom")

        ticket = PreparationTicket(work, label="x")
        seen: list[tuple[str, str | None]] = []
        ticket.when_settled(
            lambda t: seen.append((t.status, t.error.error_type if t.error else None))
        )
        release.set()
        ticket.wait(timeout=30)
        ticket._thread.join(30)
        assert seen == [("error", "environment_preparing")]

    def test_a_raising_callback_is_logged_and_the_next_still_runs(
        self, caplog: pytest.LogCaptureFixture
    ) -> None:
        """The preparation thread has no caller: the failure goes to the ``recurgent`` logger."""
        release = threading.Event()
        ticket = PreparationTicket(lambda: release.wait(30), label="x")
        seen: list[str] = []

        def broken(_: PreparationTicket[bool]) -> None:
            raise RuntimeError("callback bug")

        ticket.when_settled(broken)
        ticket.when_settled(lambda t: seen.append(t.status))
        with caplog.at_level(logging.ERROR, logger="recurgent"):
            release.set()
            ticket.wait(timeout=30)
            ticket._thread.join(30)
        assert seen == ["ready"]
        assert [
            (r.name, r.getMessage(), r.exc_info[1].args if r.exc_info and r.exc_info[1] else None)
            for r in caplog.records
        ] == [
            (
                "recurgent",
                f"a preparation callback raised (ticket {ticket.ticket_id})",
                ("callback bug",),
            )
        ]
