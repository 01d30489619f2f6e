"""``Preparation.on_ready``/``on_error`` and ``Agent.prepare(timeout_seconds=)`` (ADR 0158).

The original's ``PreparationTicket#on_ready``/``#on_error``: the agent once the environment is
ready, the ``environment_preparing`` error Outcome once it failed; each callback at most once,
at once when already settled, chained. These specs drive ``Preparation`` with tickets whose work
the spec controls; ``specs/worker/test_runtime.py`` builds a real environment.
"""

from __future__ import annotations

import threading
from typing import Any

import pytest

from recurgent import Agent, Outcome
from recurgent._worker._slot import Preparation
from recurgent._worker._tickets import PreparationTicket
from recurgent.errors import DependencyInstallError, UsageError

_AGENT = object()


def _prepared(work: Any) -> Preparation[object]:
    return Preparation(_AGENT, PreparationTicket(work, label="calc"), role="calc")


def _settle(prepared: Preparation[object]) -> None:
    prepared.wait(30)
    prepared._ticket._thread.join(30)


def _fail() -> Any:
    raise DependencyInstallError("pip install failed in /x: boom")


def test_on_ready_gives_the_agent_once_the_environment_is_ready() -> None:
    """Registered while pending: called once with the agent; ``on_error``'s callback never."""
    release = threading.Event()
    prepared = _prepared(lambda: release.wait(30))
    ready: list[object] = []
    failed: list[Outcome] = []
    assert prepared.on_ready(ready.append).on_error(failed.append) is prepared
    release.set()
    _settle(prepared)
    assert (ready, failed) == ([_AGENT], [])


def test_on_error_gives_the_environment_preparing_outcome() -> None:
    """A failed preparation: an error Outcome naming the cause, the role and ``prepare``."""
    prepared = _prepared(_fail)
    _settle(prepared)
    ready: list[object] = []
    failed: list[Outcome] = []
    prepared.on_ready(ready.append).on_error(failed.append)
    (outcome,) = failed
    assert ready == []
    assert (
        outcome.status,
        outcome.error_type,
        outcome.error_message,
        outcome.retriable,
        outcome.tool_role,
        outcome.method_name,
        outcome.metadata,
    ) == (
        "error",
        "environment_preparing",
        "Environment preparation failed for calc: pip install failed in /x: boom",
        True,
        "calc",
        "prepare",
        {"cause": "dependency_install_failed", "prep_ticket_id": prepared.ticket_id},
    )


def test_a_callback_added_after_the_preparation_is_ready_runs_at_once() -> None:
    """Already ready: ``on_ready`` calls back before it returns, in the caller's thread."""
    prepared = _prepared(lambda: True)
    _settle(prepared)
    threads: list[str] = []
    prepared.on_ready(lambda agent: threads.append(threading.current_thread().name))
    assert threads == [threading.current_thread().name]


@pytest.mark.parametrize("timeout", [-1, float("nan"), float("inf"), "5", True])
def test_prepare_refuses_a_timeout_that_is_not_a_duration(timeout: Any) -> None:
    """``timeout_seconds`` is a finite number >= 0 or None, checked before anything is built."""
    with pytest.raises(UsageError) as raised:
        Agent.prepare("calc", dependencies=[], timeout_seconds=timeout, log=False)
    assert raised.value.message == (
        f"timeout_seconds must be a number >= 0 or None, got {timeout!r}"
    )
