"""The journal of the attempt running in this context, and host code guarded by it.

The sandbox reads host code for the running attempt outside the journal's own copies (a value
another agent's handle reads, a class's attribute): it takes that attempt's guard, so once the
attempt has ended a call raises its stop (ADRs 0065, 0068).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from recurgent._journal._core import Journal
from recurgent._journal._shared import guarded, guarded_within
from recurgent._journal._view import ACTIVE

__all__ = ["guard_by_running_attempt", "guard_within_by_running_attempt", "running_journal"]


def running_journal() -> Journal | None:
    """The journal of the innermost attempt running in this context, or ``None`` outside any.

    Values another agent's handle reads are copied by the sandbox boundary, not by this
    journal; they still belong to this attempt, so host code among them takes its guard.
    """
    running = ACTIVE.get()
    if not running:
        return None
    journal = running[-1][1]._journal
    return journal if isinstance(journal, Journal) else None


def guard_by_running_attempt(value: Any, idle: Callable[[Any], Any]) -> Any:
    """Host code read for the running attempt, guarded by it: once the attempt has ended, a
    call raises its stop (a leaked generator cannot run it late). Read while no attempt runs
    here, ``idle(value)`` (an inert stand-in, a sealed class) is handed out instead."""
    journal = running_journal()
    if journal is None:
        return idle(value)
    guard = journal.guard
    return value if guard is None else guarded(value, guard)


def guard_within_by_running_attempt(value: Any) -> Any:
    """:func:`guard_by_running_attempt` of ``value`` and of host code in the containers it
    holds (red-team H6): guarded by the running attempt, withheld when none runs."""
    journal = running_journal()
    return guarded_within(value, None if journal is None else journal.guard)
