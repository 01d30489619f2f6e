"""``LaneSlot``: an agent's worker lane made on first use, and ``Preparation`` (``Agent.prepare``).

Light on purpose: importing it loads neither the supervisor nor the environment manager, so an
agent whose programs all run in process pays nothing for the worker room at import or call time.
An agent with ``isolation="process"`` makes its lane at once and starts its worker in the
background (ADR 0093), and refuses host values its memory cannot send there (ADR 0094).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from recurgent._worker._manifest import DependencyPolicy
from recurgent._worker._tickets import PreparationTicket, TicketStatus
from recurgent.errors import DependencyActivationError, EnvironmentPreparingError, UsageError
from recurgent.outcome import Outcome

if TYPE_CHECKING:
    from recurgent._worker._env import Environment
    from recurgent._worker._executor import ProcessExecutor
    from recurgent._worker._lane import WorkerLane

__all__ = ["LaneSlot", "Preparation"]


class LaneSlot:
    """An agent's worker lane, made on first use: agents that never need a worker pay nothing.

    Args:
        policy: The agent's dependency policy.
        isolation: ``"in_process"`` or ``"process"``.
        network: The agent's network policy (a denied network gets its own namespace in bwrap).
        cache_root: Where environments are cached (``None``: the default cache).
        role: The agent's role, for error messages.
    """

    def __init__(
        self,
        *,
        policy: DependencyPolicy,
        isolation: str,
        network: object,
        cache_root: Path | None,
        role: str = "agent",
    ) -> None:
        self._policy = policy
        self._confined = isolation == "process"
        self._network = network
        self._cache_root = cache_root
        self._role = role
        self._lane: WorkerLane | None = None
        self._lock = threading.Lock()
        if self._confined:
            try:
                self.lane().prestart()
            except (DependencyActivationError, OSError):
                pass  # the first call starts it again and reports why it cannot

    def check_memory(self, entries: Mapping[str, Any]) -> None:
        """Refuse host values a confined agent's memory could not send to its worker.

        Raises:
            UsageError: under ``isolation="process"``, a value is not data that crosses (a
                function, a class, an object of the host's, a cyclic container; ADR 0094).
        """
        if not self._confined:
            return
        from recurgent._worker._codec import Unencodable, to_wire
        from recurgent._worker._executor import uncrossable_message

        for name, value in entries.items():
            try:
                to_wire(value, f"context[{name!r}]", _any_agent)
            except Unencodable as problem:
                raise UsageError(uncrossable_message(self._role, str(problem))) from None

    @property
    def confined(self) -> bool:
        """True when every program of the agent runs in a worker (``isolation="process"``)."""
        return self._confined

    @property
    def started(self) -> bool:
        """True once the lane exists."""
        return self._lane is not None

    def lane(self) -> WorkerLane:
        """The lane, created on the first call."""
        with self._lock:
            if self._lane is None:
                # Imported here: agents that never need a worker never load the worker room.
                from recurgent._worker._env import EnvironmentManager
                from recurgent._worker._isolation import IsolationSettings
                from recurgent._worker._lane import WorkerLane

                self._lane = WorkerLane(
                    policy=self._policy,
                    isolation=IsolationSettings(
                        mode="process" if self._confined else "in_process",
                        network=self._network,
                    ),
                    environments=EnvironmentManager(self._policy, cache_root=self._cache_root),
                )
            return self._lane

    def select(self, dependencies: Any, *, role: str) -> ProcessExecutor | None:
        """The executor of one attempt, without making a lane an in-process program never needs."""
        if not dependencies and not self._confined and self._lane is None:
            return None
        return self.lane().select(dependencies, role=role)

    def shutdown(self) -> None:
        """Stop the agent's worker, if one was started."""
        if self._lane is not None:
            self._lane.shutdown()


def _any_agent(value: object) -> tuple[int, str] | None:
    # Agents cross as references, whatever number the run gives them.
    return (0, "agent") if getattr(type(value), "__recurgent_agent__", False) is True else None


_A = TypeVar("_A")


class Preparation(Generic[_A]):
    """What ``Agent.prepare`` returns: the agent at once, and its environment's ticket.

    Attributes:
        agent: The agent, usable now; a call that needs the environment before it is ready
            waits for it (``environment_preparing`` if the preparation failed).
    """

    def __init__(self, agent: _A, ticket: PreparationTicket[Environment], *, role: str) -> None:
        self.agent = agent
        self._ticket = ticket
        self._role = role

    @property
    def ticket_id(self) -> str:
        """The ticket's id (``prep_ticket_id`` in errors)."""
        return self._ticket.ticket_id

    @property
    def status(self) -> TicketStatus:
        """``"pending"``, ``"ready"`` or ``"error"``."""
        return self._ticket.status

    @property
    def env_id(self) -> str | None:
        """The prepared environment's id, once ready."""
        environment = self._ticket.value
        return environment.env_id if environment is not None else None

    @property
    def error(self) -> EnvironmentPreparingError | None:
        """The ``environment_preparing`` error when the preparation failed."""
        return self._ticket.error

    def wait(self, timeout: float | None = None) -> TicketStatus:
        """Block until the environment is ready or failed, or ``timeout`` seconds pass."""
        return self._ticket.wait(timeout)

    def on_ready(self, callback: Callable[[_A], object]) -> Preparation[_A]:
        """Call ``callback(agent)`` once the environment is ready; return this preparation.

        Already ready: called now, in this thread. Still pending: called from the preparation's
        thread when it is ready (an exception it raises is logged on the ``recurgent`` logger).
        Never called when the preparation fails.
        """

        def settled(ticket: PreparationTicket[Environment]) -> None:
            if ticket.status == "ready":
                callback(self.agent)

        self._ticket.when_settled(settled)
        return self

    def on_error(self, callback: Callable[[Outcome], object]) -> Preparation[_A]:
        """Call ``callback(outcome)`` once the preparation has failed; return this preparation.

        ``outcome`` is the ``environment_preparing`` error (retriable, its metadata naming the
        cause and ``prep_ticket_id``) as an :class:`~recurgent.Outcome`, the form every other
        failure takes. Called as :meth:`on_ready` is; never called when the environment is
        ready.
        """

        def settled(ticket: PreparationTicket[Environment]) -> None:
            error = ticket.error
            if error is not None:
                callback(
                    Outcome.error(
                        error_type=error.error_type,
                        error_message=error.message,
                        retriable=error.retriable,
                        metadata=error.metadata,
                        tool_role=self._role,
                        method_name="prepare",
                    )
                )

        self._ticket.when_settled(settled)
        return self

    def __repr__(self) -> str:
        return f"<Preparation {self.ticket_id} {self.status}>"
