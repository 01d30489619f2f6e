"""Times the worker lane: round trips, first answers, environment cache hit, pool, isolation overhead.

Run it with ``.venv/bin/python bench/worker.py``. It needs no network: the environment it times is
built from a wheel written into a temporary directory. Reported, never asserted: the targets
(warm round trip of a trivial program at most 1 ms, issue 21) are printed next to the
measurements, with the time from ``Agent(..., isolation="process")`` to its first answer (the
worker starts when the agent is built, ADR 0093: with a provider that takes as long as a model
does, its start-up is hidden), and the exit status is 1 only when a program fails or the two
executors disagree on a result.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

_ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(_ROOT), str(_ROOT / "bench")]

from sandbox import PROGRAMS  # noqa: E402 - bench/sandbox.py, found through the path above

from recurgent import Agent  # noqa: E402
from recurgent._execution import ExecutionInputs, InProcessExecutor  # noqa: E402
from recurgent._sandbox import HostBridge, SandboxLimits  # noqa: E402
from recurgent._worker._env import EnvironmentManager  # noqa: E402
from recurgent._worker._executor import ProcessExecutor  # noqa: E402
from recurgent._worker._isolation import IsolationSettings  # noqa: E402
from recurgent._worker._manifest import DependencyPolicy, normalize_manifest  # noqa: E402
from recurgent._worker._pool import WorkerPool  # noqa: E402
from recurgent._worker._supervisor import WorkerSupervisor  # noqa: E402
from recurgent.program import Program  # noqa: E402
from recurgent.testing import FunctionProvider  # noqa: E402
from specs.worker.support import DEMO_DISTRIBUTION, build_wheel  # noqa: E402

ROUND_TRIP_TARGET_MS = 1.0
#: A provider's answer time for the first-answer measurement (a fast model reply).
MODEL_SECONDS = 1.0


def _refuse(*_: Any, **__: Any) -> Any:
    raise RuntimeError("the benchmark forwards nothing")


BRIDGE = HostBridge(
    role="bench",
    method_name="run",
    memory={},
    args=(),
    kwargs={},
    delegate=_refuse,
    tool=_refuse,
    remember=_refuse,
    handle_for_agent=lambda _: None,
)
LIMITS = SandboxLimits(timeout_seconds=60.0)


def best_ms(action: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """Best wall time of ``repeats`` runs in milliseconds, and the last result."""
    best, value = float("inf"), None
    for _ in range(repeats):
        start = time.perf_counter()
        value = action()
        best = min(best, (time.perf_counter() - start) * 1000.0)
    return best, value


def run_on(executor: Any, source: str) -> Any:
    """One run of ``source``; raises when the program fails."""
    result = executor.run(Program(code=source), ExecutionInputs(memory={}), LIMITS, BRIDGE)
    if result.error is not None:
        raise RuntimeError(f"{type(result.error).__name__}: {result.error}")
    return result.value


def memory_costs(executor: Any, repeats: int) -> None:
    """A warm ``return 1`` with memory of growing size: memory crosses to the worker on every
    run (its decoding is inside the run's deadline), and only the keys a run changed come back
    (ADR 0152). Printed as times and as a ratio to an empty memory."""
    program = Program(code="return 1")
    base_ms = 0.0
    for items in (0, 100_000, 1_000_000):
        memory = {"rows": [7] * items} if items else {}
        best, _ = best_ms(
            lambda m=memory: executor.run(program, ExecutionInputs(memory=dict(m)), LIMITS, BRIDGE),
            repeats,
        )
        base_ms = base_ms or best
        print(
            f"return 1, memory of {items:>9,} items: {best:8.2f} ms   ({best / base_ms:6.1f}x empty)"
        )


class _Clock:
    """A monotonic clock the benchmark moves past the idle timeout."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def pool_costs(repeats: int) -> None:
    """Print what the pool adds: bookkeeping per run, stopping an idle worker, the cold restart."""
    clock = _Clock()
    pool = WorkerPool(idle_timeout_seconds=300.0, clock=clock, reaper=False)
    supervisor = WorkerSupervisor(python=sys.executable, pool=pool)
    executor = ProcessExecutor(supervisor)
    try:
        run_on(executor, "return 1")
        worker = supervisor._worker
        assert worker is not None
        rounds = 10_000
        start = time.perf_counter()
        for _ in range(rounds):
            pool.checkout(worker)
            pool.checkin(worker)
        book_us = (time.perf_counter() - start) * 1e6 / rounds
        stops, restarts = [], []
        for _ in range(repeats):
            clock.now += 300.0
            start = time.perf_counter()
            pool.reap_idle()
            stops.append((time.perf_counter() - start) * 1000.0)
            start = time.perf_counter()
            run_on(executor, "return 1")
            restarts.append((time.perf_counter() - start) * 1000.0)
        print(f"pool checkout + checkin:      {book_us:8.2f} us per run")
        print(f"stop an idle worker:          {min(stops):8.2f} ms")
        print(f"first run after an idle stop: {min(restarts):8.1f} ms   (a cold start)")
    finally:
        pool.close()


def first_answer_ms(model_seconds: float) -> tuple[float, float]:
    """Milliseconds from ``Agent(..., isolation="process")`` to its first answer, and of that
    the worker's start-up the call still waited for (``worker_start_ms`` of its log line)."""
    with tempfile.TemporaryDirectory() as scratch:
        log = Path(scratch) / "calls.jsonl"

        def reply(_: Any) -> str:
            time.sleep(model_seconds)
            return "return 1"

        start = time.perf_counter()
        agent = Agent(
            "bench",
            provider=FunctionProvider(reply),
            log=log,
            toolstore_root=None,
            isolation="process",
        )
        outcome = agent.one()
        elapsed = (time.perf_counter() - start) * 1000.0
        if outcome.value != 1:
            raise RuntimeError(f"first answer: {outcome.error_type}: {outcome.error_message}")
        waited = float(json.loads(log.read_text().splitlines()[-1])["worker_start_ms"])
        slot = agent._agent.workers
        if slot is not None:
            slot.shutdown()
        return elapsed, waited


def main(argv: list[str] | None = None) -> int:
    """Print the three measurements; exit 1 when a program fails or results disagree."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=7)
    options = parser.parse_args(argv)
    failed = False

    plain = WorkerSupervisor(python=sys.executable)
    confined = WorkerSupervisor(python=sys.executable, isolation=IsolationSettings(mode="process"))
    try:
        worker = ProcessExecutor(plain)
        start = time.perf_counter()
        run_on(worker, "return 1")
        cold_ms = (time.perf_counter() - start) * 1000.0
        trip_ms, _ = best_ms(lambda: run_on(worker, "return 1"), max(options.repeats, 50))
        verdict = "ok" if trip_ms <= ROUND_TRIP_TARGET_MS else "MISSED"
        print(f"cold start + first run:       {cold_ms:8.1f} ms")
        print(
            f"warm round trip (return 1):   {trip_ms:8.2f} ms   target <= {ROUND_TRIP_TARGET_MS} ms: {verdict}"
        )

        for model_seconds in (0.0, MODEL_SECONDS):
            total, waited = first_answer_ms(model_seconds)
            print(
                f"Agent(isolation='process') to first answer, provider {model_seconds:.1f} s: "
                f"{total:8.1f} ms   (of it waiting for the worker: {waited:.1f} ms)"
            )

        pool_costs(max(1, min(options.repeats, 5)))
        memory_costs(worker, max(1, min(options.repeats, 5)))

        with tempfile.TemporaryDirectory() as scratch:
            wheels = build_wheel(Path(scratch) / "wheels").parent
            policy = DependencyPolicy.build(index_urls=[str(wheels)], source_mode="internal_only")
            manager = EnvironmentManager(policy, cache_root=Path(scratch) / "envs")
            manifest = normalize_manifest([{"name": DEMO_DISTRIBUTION}])
            build = manager.ensure(manifest)
            hit_ms, hit = best_ms(lambda: manager.ensure(manifest), options.repeats)
            print(f"environment build ({manager.installer}):     {build.prepare_ms:8.1f} ms")
            print(f"environment cache hit:        {hit_ms:8.2f} ms   (cache_hit={hit.cache_hit})")

        in_process = InProcessExecutor()
        isolated = ProcessExecutor(confined)
        run_on(isolated, "return 1")
        print(f"\nisolation backend: {confined.backend}")
        print(f"{'program':<24}{'in-process ms':>15}{'process ms':>13}{'ratio':>8}")
        for program in PROGRAMS:
            local_ms, local = best_ms(
                lambda p=program: run_on(in_process, p.source), options.repeats
            )
            remote_ms, remote = best_ms(
                lambda p=program: run_on(isolated, p.source), options.repeats
            )
            # Every plain value crosses as itself (ADR 0094): the results compare equal.
            same = type(local) is type(remote) and local == remote
            failed |= not same
            note = "" if same else "   RESULTS DIFFER"
            print(
                f"{program.name:<24}{local_ms:>15.2f}{remote_ms:>13.2f}{remote_ms / local_ms:>8.2f}{note}"
            )
    except RuntimeError as error:
        print(f"FAILURE: {error}")
        failed = True
    finally:
        plain.shutdown()
        confined.shutdown()
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
