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
from typing import Any

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
from recurgent._worker._tickets import PreparationTicket
from recurgent.errors import EnvironmentPreparingError

__all__ = ["SupervisorFactory", "WorkerLane"]

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

    def prestart(self) -> None:
        """Start the worker of an agent without dependencies now, in the background (ADR 0093).

        For ``isolation="process"``: its start-up overlaps the agent's first request to the
        provider instead of following it. Nothing happens for an unconfined lane, or once the
        manifest has grown (that worker starts when its environment is ready).
        """
        with self._lock:
            if not self._isolation.confined or self._manifest.entries:
                return
            supervisor = self._worker_for(None)
        supervisor.prestart()

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
