"""Preparation tickets: an environment built in the background, awaited with a timeout.

``Agent.prepare(dependencies=[...])`` (wired by the lifecycle) starts one so the first call of
the agent does not pay for the install. A ticket moves once from ``pending`` to ``ready`` or
``error``; the first transition wins. Callbacks added with :meth:`PreparationTicket.when_settled`
run once, after that transition (ADR 0158).
"""

from __future__ import annotations

import logging
import secrets
import threading
from collections.abc import Callable
from typing import Generic, Literal, TypeVar

from recurgent.errors import EnvironmentPreparingError, RecurgentError

__all__ = ["PreparationTicket", "TicketStatus"]

TicketStatus = Literal["pending", "ready", "error"]
_T = TypeVar("_T")

# A callback that raises is reported here and the others still run, as
# ``concurrent.futures.Future.add_done_callback`` does: the preparation thread has no caller to
# raise to. The library emits on its own logger and configures none.
_LOGGER = logging.getLogger("recurgent")


class PreparationTicket(Generic[_T]):
    """A background preparation: ``status``, ``wait(timeout)``, ``value``, ``error``.

    Args:
        work: Runs in a daemon thread; its return value resolves the ticket, a
            ``RecurgentError`` it raises rejects it (as ``environment_preparing`` unless the
            error is already that). Any other exception also rejects it.
        label: What is being prepared, for error messages (a role).
    """

    def __init__(self, work: Callable[[], _T], *, label: str) -> None:
        self.ticket_id = secrets.token_hex(8)
        self._label = label
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._status: TicketStatus = "pending"
        self._value: _T | None = None
        self._error: EnvironmentPreparingError | None = None
        self._callbacks: list[Callable[[PreparationTicket[_T]], object]] = []
        self._thread = threading.Thread(
            target=self._run, args=(work,), name=f"recurgent-prepare-{self.ticket_id}", daemon=True
        )
        self._thread.start()

    def _run(self, work: Callable[[], _T]) -> None:
        try:
            value = work()
        except BaseException as error:  # noqa: BLE001 - every failure rejects the ticket
            detail = error.message if isinstance(error, RecurgentError) else str(error)
            cause = error.error_type if isinstance(error, RecurgentError) else type(error).__name__
            self._settle(
                "error",
                None,
                EnvironmentPreparingError(
                    f"Environment preparation failed for {self._label}: {detail}",
                    metadata={"cause": cause, "prep_ticket_id": self.ticket_id},
                ),
            )
            return
        self._settle("ready", value, None)

    def _settle(
        self, status: TicketStatus, value: _T | None, error: EnvironmentPreparingError | None
    ) -> None:
        with self._lock:
            if self._status != "pending":
                return
            self._status, self._value, self._error = status, value, error
            callbacks, self._callbacks = self._callbacks, []
        self._done.set()
        for callback in callbacks:
            self._notify(callback)

    def when_settled(self, callback: Callable[[PreparationTicket[_T]], object]) -> None:
        """Call ``callback(ticket)`` once the ticket is ready or failed.

        A settled ticket calls it at once, in the caller's thread (an exception reaches the
        caller); a pending one calls it from the preparation's thread right after it settles
        (an exception is logged on the ``recurgent`` logger, and later callbacks still run).
        """
        with self._lock:
            if self._status == "pending":
                self._callbacks.append(callback)
                return
        callback(self)

    def _notify(self, callback: Callable[[PreparationTicket[_T]], object]) -> None:
        try:
            callback(self)
        except Exception:  # one callback's failure must not stop the others
            _LOGGER.exception("a preparation callback raised (ticket %s)", self.ticket_id)

    @property
    def status(self) -> TicketStatus:
        """``"pending"``, ``"ready"`` or ``"error"``."""
        return self._status

    @property
    def value(self) -> _T | None:
        """What the work returned (``None`` until ready)."""
        return self._value

    @property
    def error(self) -> EnvironmentPreparingError | None:
        """The ``environment_preparing`` error when the work failed."""
        return self._error

    def wait(self, timeout: float | None = None) -> TicketStatus:
        """Block until the ticket settles or ``timeout`` seconds pass; return the status."""
        self._done.wait(timeout)
        return self._status

    def require(self) -> _T:
        """The value, for a call that needs the environment now.

        Raises:
            EnvironmentPreparingError: still pending (retriable), or the preparation failed.
        """
        if self._status == "ready":
            return self._value  # type: ignore[return-value]
        if self._error is not None:
            raise self._error
        raise EnvironmentPreparingError(
            f"the environment for {self._label} is still being prepared (ticket {self.ticket_id})",
            metadata={"prep_ticket_id": self.ticket_id},
        )
