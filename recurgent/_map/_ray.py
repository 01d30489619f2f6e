"""Batches on Ray (``executor="ray"``, the optional extra ``recurgent[ray]``; ADR 0112).

The only module that imports ``ray``, and only when a map asks for it (``import recurgent``
never loads Ray). One actor per worker holds the compiled program (a
:class:`~recurgent._map._runner.BatchRunner`) for the whole map and runs batches; a batch is one
round trip, never one task per item. Ray is started locally (``ray.init``) when it is not
running yet, or joins the cluster ``RAY_ADDRESS`` names (Ray reads that variable itself).

Values cross as plain data in the worker codec's form; nothing the program made is unpickled on
the driver. A batch whose actor stops answering (a program stuck in one C call the sandbox's
deadline cannot interrupt) is given up after every item's deadline plus a margin: its actor is
killed and replaced, and its items get timeout errors.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Sequence
from typing import Any

from recurgent._execution import BatchJob, Capabilities, ItemCall
from recurgent._map._runner import BatchRunner, decode_result, encode_job
from recurgent._sandbox import ExecutionResult
from recurgent._worker._codec import Unencodable, to_wire
from recurgent.errors import ExecutionTimeoutError, UsageError, WorkerCrashError

__all__ = ["RayBatches", "ray_module"]

#: Seconds a batch may take beyond the sum of its items' deadlines before its actor is killed.
_BATCH_MARGIN_SECONDS = 30.0
_INSTALL_HINT = "executor='ray' needs Ray: pip install 'recurgent[ray]'"
_START_LOCK = threading.Lock()


def ray_module() -> Any:
    """The ``ray`` module, imported now.

    Raises:
        UsageError: Ray is not installed.
    """
    try:
        import ray
    except ImportError:
        raise UsageError(_INSTALL_HINT) from None
    return ray


def _connect(ray: Any) -> None:
    """Start a local Ray, or join ``RAY_ADDRESS``'s cluster, unless this process already did."""
    with _START_LOCK:
        if ray.is_initialized():
            return
        if os.environ.get("RAY_ADDRESS"):
            ray.init(configure_logging=False, log_to_driver=False)
            return
        # A local cluster started on the library's initiative reports no usage statistics; a
        # host that wants them (or other settings) calls ray.init itself before mapping.
        os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
        ray.init(include_dashboard=False, configure_logging=False, log_to_driver=False)


def _no_agent(value: object) -> tuple[int, str] | None:
    return None


class RayBatches:
    """One Ray actor per worker, each holding the map's program."""

    capabilities = Capabilities(
        dependencies=False,
        isolation="remote",
        interrupts_c_calls=True,
        serves=frozenset({"network"}),
    )

    def __init__(self) -> None:
        self._ray: Any = None
        self._actor_class: Any = None
        self._job_ref: Any = None
        self._idle: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self._actors: list[Any] = []
        self._lock = threading.Lock()
        self._item_seconds = 0.0

    def start(self, job: BatchJob, workers: int | None) -> int:
        """Connect to Ray, send the job once and start the actors.

        Raises:
            UsageError: Ray is not installed, or memory holds a value that cannot cross.
        """
        ray = self._ray = ray_module()
        try:
            wire = encode_job(
                code=job.program.code,
                role=job.bridge.role,
                method=job.bridge.method_name,
                memory=job.memory,
                limits=job.limits,
                network=job.network,
            )
        except Unencodable as problem:
            raise UsageError(
                f"executor='ray' sends the agent's memory to Ray as data, and {problem}; keep "
                "only data in memory while mapping on Ray, or map in process"
            ) from None
        _connect(ray)
        cpus = int(ray.cluster_resources().get("CPU", 1)) or 1
        count = max(1, min(workers or cpus, cpus))
        self._item_seconds = job.limits.timeout_seconds
        self._job_ref = ray.put(wire)
        # Actors reserve no CPU: maps running side by side share the cluster instead of waiting
        # for each other's actors to end; one actor per CPU, spread over the nodes.
        self._actor_class = ray.remote(num_cpus=0, scheduling_strategy="SPREAD")(BatchRunner)
        for _ in range(count):
            self._idle.put(self._new_actor())
        return count

    def _new_actor(self) -> Any:
        actor = self._actor_class.remote(self._job_ref)
        with self._lock:
            self._actors.append(actor)
        return actor

    def run_batch(self, items: Sequence[ItemCall]) -> list[ExecutionResult]:
        """Send one batch to an idle actor and wait for its results."""
        ray = self._ray
        encoded = [
            [to_wire(list(args), "args", _no_agent), to_wire(dict(kwargs), "kwargs", _no_agent)]
            for args, kwargs in items
        ]
        actor = self._idle.get()
        limit = self._item_seconds * len(items) + _BATCH_MARGIN_SECONDS
        try:
            answer = ray.get(actor.run.remote(encoded), timeout=limit)
        except ray.exceptions.GetTimeoutError:
            self._replace(actor)
            error = ExecutionTimeoutError(
                f"Execution timeout: a Ray worker did not finish its batch in {limit:g}s"
            )
            return [ExecutionResult(error=error) for _ in items]
        except ray.exceptions.RayError as failure:
            self._replace(actor)
            crash = WorkerCrashError(f"a Ray worker failed: {type(failure).__name__}")
            return [ExecutionResult(error=crash) for _ in items]
        self._idle.put(actor)
        try:
            if type(answer) is not list or len(answer) != len(items):
                raise ValueError("one result per item")
            return [decode_result(wire) for wire in answer]
        except (ValueError, TypeError, KeyError) as problem:
            crash = WorkerCrashError(
                f"a Ray worker sent a malformed answer ({type(problem).__name__})"
            )
            return [ExecutionResult(error=crash) for _ in items]

    def _replace(self, actor: Any) -> None:
        self._ray.kill(actor)
        with self._lock:
            if actor in self._actors:
                self._actors.remove(actor)
        self._idle.put(self._new_actor())

    def stop(self) -> None:
        """Kill the map's actors (Ray itself keeps running for the next map)."""
        with self._lock:
            actors, self._actors = self._actors, []
        for actor in actors:
            self._ray.kill(actor)
