"""``WorkerLane``: one agent's way into the worker room: manifest, policy, environment, worker.

The lifecycle asks it, per attempt, which executor runs a program (``select``); it returns
``None`` for the in-process sandbox, or a ``ProcessExecutor`` bound to the environment of the
agent's effective manifest. It grows the manifest, checks the policy and prepares the
environment *before* committing the grown manifest (ADR 0042 #1), keeps one worker per agent and
replaces it when the environment changes. It raises typed errors and logs nothing.
"""

from __future__ import annotations

import dataclasses
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Generic, TypeVar

from recurgent._worker._env import Environment, EnvironmentManager
from recurgent._worker._executor import ProcessExecutor
from recurgent._worker._isolation import IsolationSettings
from recurgent._worker._manifest import (
    DependencyPolicy,
    EffectiveManifest,
    ManifestEntry,
    normalize_manifest,
)
from recurgent._worker._supervisor import WorkerSupervisor
from recurgent._worker._tickets import PreparationTicket, TicketStatus
from recurgent.errors import EnvironmentPreparingError

__all__ = ["LaneSlot", "Preparation", "SupervisorFactory", "WorkerLane"]

SupervisorFactory = Callable[..., WorkerSupervisor]


class WorkerLane:
    """The worker side of one agent.

    Args:
        policy: The runtime dependency policy.
        isolation: The agent's confinement (``mode="process"`` sends every program to a worker).
        environments: Builds environments; one with ``policy`` and the default cache if omitted.
        supervisor_factory: Makes workers (specs inject a fake).
    """

    def __init__(
        self,
        *,
        policy: DependencyPolicy | None = None,
        isolation: IsolationSettings | None = None,
        environments: EnvironmentManager | None = None,
        supervisor_factory: SupervisorFactory = WorkerSupervisor,
    ) -> None:
        self._policy = policy or DependencyPolicy()
        self._isolation = isolation or IsolationSettings()
        self._environments = environments or EnvironmentManager(self._policy)
        self._factory = supervisor_factory
        self._manifest = EffectiveManifest()
        self._environment: Environment | None = None
        self._supervisor: WorkerSupervisor | None = None
        self._supervisor_key: str | None = None
        self._ticket: PreparationTicket[Environment] | None = None
        self._lock = threading.RLock()

    @property
    def manifest(self) -> tuple[ManifestEntry, ...]:
        """The committed effective manifest (``normalized_dependencies`` in the log)."""
        return self._manifest.entries

    @property
    def environment(self) -> Environment | None:
        """The environment of the committed manifest, once prepared."""
        return self._environment

    def _admit(self, dependencies: Any, role: str) -> Environment | None:
        """Grow, check, prepare, then commit; ``None`` when the manifest stays empty."""
        candidate = self._manifest.candidate(normalize_manifest(dependencies), role=role)
        if not candidate:
            return None
        if candidate == self._manifest.entries and self._environment is not None:
            if not self._environment.cache_hit:
                # Later calls find it ready: each call's log reports its own preparation.
                self._environment = dataclasses.replace(
                    self._environment,
                    cache_hit=True,
                    prepare_ms=0.0,
                    resolve_ms=0.0,
                    install_ms=0.0,
                )
            return self._environment
        self._policy.check(candidate)
        environment = self._environments.ensure(candidate)
        self._manifest.commit(candidate)
        self._environment = environment
        return environment

    def _worker_for(self, environment: Environment | None) -> WorkerSupervisor:
        key = environment.env_id if environment is not None else "no-environment"
        if self._supervisor is not None and self._supervisor_key == key:
            return self._supervisor
        if self._supervisor is not None:
            # A new environment needs a new interpreter: the old worker goes, its count with it.
            self._supervisor.shutdown()
        if environment is None:
            self._supervisor = self._factory(python=sys.executable, isolation=self._isolation)
        else:
            self._supervisor = self._factory(
                python=str(environment.python),
                site_packages=environment.site_packages,
                env_dir=environment.env_dir,
                isolation=self._isolation,
            )
        self._supervisor_key = key
        return self._supervisor

    def select(
        self, dependencies: Any, *, role: str, wait_seconds: float | None = None
    ) -> ProcessExecutor | None:
        """The executor of one attempt: ``None`` for in-process, else a worker executor.

        Args:
            dependencies: The program's raw ``dependencies`` (``None`` or a list).
            role: The agent's role, for error messages.
            wait_seconds: How long to wait for a pending :meth:`prepare` (``None``: until done).

        Raises:
            InvalidDependencyManifestError: the declared list is malformed.
            DependencyManifestIncompatibleError: it changes a present package's version.
            DependencyPolicyViolationError: the policy refuses a package or a source.
            DependencyResolutionError, DependencyInstallError: building the environment failed.
            EnvironmentPreparingError: a preparation is still running after ``wait_seconds``.
        """
        ticket = self._ticket
        if ticket is not None and ticket.wait(wait_seconds) == "pending":
            raise EnvironmentPreparingError(
                f"the environment for {role} is still being prepared (ticket {ticket.ticket_id})",
                metadata={"prep_ticket_id": ticket.ticket_id},
            )
        with self._lock:
            environment = self._admit(dependencies, role)
            if environment is None and not self._isolation.confined:
                return None
            return ProcessExecutor(self._worker_for(environment), environment)

    def prepare(self, dependencies: Any, *, role: str) -> PreparationTicket[Environment]:
        """Build the environment of ``dependencies`` in the background (``Agent.prepare``).

        The ticket's value is the environment; a failure is ``environment_preparing`` and leaves
        the manifest as it was.
        """

        def work() -> Environment:
            with self._lock:
                environment = self._admit(dependencies, role)
            if environment is None:
                raise EnvironmentPreparingError("no dependencies to prepare")
            return environment

        ticket: PreparationTicket[Environment] = PreparationTicket(work, label=role)
        self._ticket = ticket
        return ticket

    def shutdown(self) -> None:
        """Stop the agent's worker, if any."""
        with self._lock:
            if self._supervisor is not None:
                self._supervisor.shutdown()
            self._supervisor = None
            self._supervisor_key = None


class LaneSlot:
    """An agent's worker lane, made on first use: agents that never need a worker pay nothing.

    Args:
        policy: The agent's dependency policy.
        isolation: ``"in_process"`` or ``"process"``.
        network: The agent's network policy (a denied network gets its own namespace in bwrap).
        cache_root: Where environments are cached (``None``: the default cache).
    """

    def __init__(
        self,
        *,
        policy: DependencyPolicy,
        isolation: str,
        network: object,
        cache_root: Path | None,
    ) -> None:
        self._policy = policy
        self._confined = isolation == "process"
        self._network = network
        self._cache_root = cache_root
        self._lane: WorkerLane | None = None
        self._lock = threading.Lock()

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


_A = TypeVar("_A")


class Preparation(Generic[_A]):
    """What ``Agent.prepare`` returns: the agent at once, and its environment's ticket.

    Attributes:
        agent: The agent, usable now; a call that needs the environment before it is ready
            waits for it (``environment_preparing`` if the preparation failed).
    """

    def __init__(self, agent: _A, ticket: PreparationTicket[Environment]) -> None:
        self.agent = agent
        self._ticket = ticket

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

    def __repr__(self) -> str:
        return f"<Preparation {self.ticket_id} {self.status}>"
