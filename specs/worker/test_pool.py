"""Workers that do not pile up: idle timeout, a cap on live workers, reaping (ADR 0061).

Real worker processes throughout; the idle timeout is driven by a fake clock and an explicit
``reap_idle()`` except in the one spec that pins the reaper thread itself (50 ms timeout).
"""

from __future__ import annotations

import dataclasses
import gc
import math
import os
import signal
import subprocess
import sys
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

import recurgent._worker._pool as pool_module
from recurgent import Agent
from recurgent._execution import ExecutionInputs
from recurgent._sandbox import SandboxLimits
from recurgent._worker._executor import ProcessExecutor, WorkerExecutionResult
from recurgent._worker._pool import (
    DEFAULT_IDLE_TIMEOUT_SECONDS,
    DEFAULT_MAX_WORKERS,
    WorkerPool,
    configure_workers,
)
from recurgent._worker._supervisor import WorkerSupervisor
from recurgent.errors import UsageError
from recurgent.program import Program
from recurgent.testing import ScriptedProvider, read_log
from specs.sandbox.support import Host
from specs.worker.support import run, supervisor

pytestmark = pytest.mark.slow


class FakeClock:
    """Monotonic seconds that move only when a spec says so."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def child_state(pid: int) -> str | None:
    """The state letter of ``pid`` if it is a child of this process (``Z``: zombie), else None."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):
        return None
    fields = text.rsplit(")", 1)[1].split()
    return fields[0] if int(fields[1]) == os.getpid() else None


def eventually(predicate: Callable[[], bool], bound: float = 30.0) -> bool:
    """Poll ``predicate`` until it holds or a generous bound passes (background work only)."""
    end = time.monotonic() + bound
    while not predicate():
        if time.monotonic() > end:
            return False
        time.sleep(0.01)
    return True


@pytest.fixture
def clock() -> FakeClock:
    """A fake clock for a pool without its reaper thread."""
    return FakeClock()


@pytest.fixture
def pools() -> Iterator[list[WorkerPool]]:
    """Pools made by a spec; every worker of theirs is stopped at the end."""
    made: list[WorkerPool] = []
    yield made
    for pool in made:
        pool.close()


def make_pool(pools: list[WorkerPool], **settings: Any) -> WorkerPool:
    pool = WorkerPool(**settings)
    pools.append(pool)
    return pool


def run_on(worker: WorkerSupervisor, source: str = "return 1", **host: Any) -> Any:
    """Run a program on ``worker``; returns the result (its error, if any, fails the spec)."""
    result = run(ProcessExecutor(worker), source, host=Host(**host))
    assert result.error is None
    return result


def run_with_remember(
    worker: WorkerSupervisor, on_remember: Callable[[], None]
) -> WorkerExecutionResult:
    """Run a program whose ``remember()`` (a call forwarded to this process) runs ``on_remember``."""
    host = Host()
    bridge = dataclasses.replace(host.bridge(), remember=lambda entries: on_remember())
    return ProcessExecutor(worker).run(
        Program(code="remember(step=1)\nreturn 'done'"),
        ExecutionInputs(memory={}, args=(), kwargs={}),
        SandboxLimits(timeout_seconds=30.0),
        bridge,
    )


# -- idle timeout


def test_defaults_are_five_minutes_and_eight_workers() -> None:
    """The interpreter's pool stops a worker idle 300 s and keeps at most 8 live."""
    assert (DEFAULT_IDLE_TIMEOUT_SECONDS, DEFAULT_MAX_WORKERS) == (300.0, 8)
    assert (WorkerPool().idle_timeout_seconds, WorkerPool().max_workers) == (300.0, 8)


def test_an_idle_worker_past_the_timeout_is_stopped_and_the_next_run_starts_anew(
    pools: list[WorkerPool], clock: FakeClock
) -> None:
    """Idle 299 s: kept; 300 s: stopped and reaped; the next run starts a worker (one restart)."""
    pool = make_pool(pools, idle_timeout_seconds=300, clock=clock, reaper=False)
    worker = supervisor(pool=pool)
    first = run_on(worker).log_fields["worker_pid"]

    clock.now += 299
    kept = pool.reap_idle()
    clock.now += 1
    stopped = pool.reap_idle()

    assert (kept, stopped, child_state(first), pool.live(), worker.running) == (
        0,
        1,
        None,
        0,
        False,
    )
    fields = run_on(worker).log_fields
    assert fields["worker_pid"] != first
    assert (fields["worker_restarts"], pool.live()) == (1, 1)


def test_a_busy_worker_is_never_stopped_by_the_idle_timeout(
    pools: list[WorkerPool], clock: FakeClock
) -> None:
    """A run that lasts past the timeout keeps its worker; the idle clock starts at its end."""
    pool = make_pool(pools, idle_timeout_seconds=300, clock=clock, reaper=False)
    worker = supervisor(pool=pool)
    run_on(worker)
    reaped: list[int] = []

    def long_forwarded_call() -> None:
        clock.now += 1000
        reaped.append(pool.reap_idle())

    result = run_with_remember(worker, long_forwarded_call)
    clock.now += 299
    reaped.append(pool.reap_idle())

    assert (result.error, result.value, reaped, worker.running) == (None, "done", [0, 0], True)


def test_the_reaper_thread_stops_idle_workers_by_itself_with_one_thread(
    pools: list[WorkerPool],
) -> None:
    """Three idle workers, one reaper thread; it stops them all and then ends."""
    pool = make_pool(pools, idle_timeout_seconds=3600)
    workers = [supervisor(pool=pool) for _ in range(3)]
    before = {t for t in threading.enumerate() if t.name == "recurgent-worker-reaper"}
    pids = [run_on(worker).log_fields["worker_pid"] for worker in workers]
    reapers = {t for t in threading.enumerate() if t.name == "recurgent-worker-reaper"} - before

    pool.configure(idle_timeout_seconds=0.05)

    assert len(reapers) == 1
    assert eventually(lambda: pool.live() == 0)
    assert eventually(lambda: not next(iter(reapers)).is_alive())
    assert [child_state(pid) for pid in pids] == [None, None, None]
    assert [worker.running for worker in workers] == [False, False, False]


def test_the_reaper_wakes_for_a_worker_that_goes_idle_after_it_slept(
    pools: list[WorkerPool],
) -> None:
    """The reaper, asleep while the only worker ran, stops it once it has been idle 50 ms."""
    pool = make_pool(pools, idle_timeout_seconds=0.05)
    worker = supervisor(pool=pool)

    pid = run_on(worker).log_fields["worker_pid"]

    assert eventually(lambda: pool.live() == 0)
    assert eventually(lambda: child_state(pid) is None)
    assert worker.running is False


def test_a_timeout_of_none_keeps_idle_workers(pools: list[WorkerPool], clock: FakeClock) -> None:
    """``idle_timeout_seconds=None`` turns the idle timeout off."""
    pool = make_pool(pools, idle_timeout_seconds=None, clock=clock, reaper=False)
    worker = supervisor(pool=pool)
    run_on(worker)
    clock.now += 10**9

    assert (pool.reap_idle(), worker.running) == (0, True)


# -- cap


def test_starting_one_worker_over_the_cap_stops_the_least_recently_used_idle_one(
    pools: list[WorkerPool],
) -> None:
    """Cap 2: a third worker stops the oldest idle one; that agent's next run evicts the next."""
    pool = make_pool(pools, max_workers=2, reaper=False)
    a, b, c = (supervisor(pool=pool) for _ in range(3))
    pid_a = run_on(a).log_fields["worker_pid"]
    run_on(b)
    run_on(c)

    assert (a.running, b.running, c.running, pool.live()) == (False, True, True, 2)
    assert child_state(pid_a) is None

    run_on(b)  # b is now the most recently used, c the least
    fields = run_on(a).log_fields

    assert (a.running, b.running, c.running, pool.live()) == (True, True, False, 2)
    assert (fields["worker_restarts"], fields["worker_pid"] != pid_a) == (1, True)


def test_when_every_worker_is_busy_one_more_runs_over_the_cap_then_the_pool_trims(
    pools: list[WorkerPool],
) -> None:
    """Cap 1, a busy worker: another worker still starts (no wait) and stops once it is idle."""
    pool = make_pool(pools, max_workers=1, reaper=False)
    busy, extra = supervisor(pool=pool), supervisor(pool=pool)
    seen: dict[str, Any] = {}

    def inside_busy_run() -> None:
        def inside_extra_run() -> None:
            seen["live during"] = pool.live()

        seen["extra"] = run_with_remember(extra, inside_extra_run).value
        seen["live after"] = pool.live()
        seen["extra running"] = extra.running

    result = run_with_remember(busy, inside_busy_run)

    assert (result.error, result.value) == (None, "done")
    assert seen == {"live during": 2, "extra": "done", "live after": 1, "extra running": False}
    assert (busy.running, pool.live()) == (True, 1)


def test_lowering_the_cap_stops_idle_workers_at_once(pools: list[WorkerPool]) -> None:
    """configure(max_workers=1) with two idle workers stops the least recently used one."""
    pool = make_pool(pools, max_workers=4, reaper=False)
    a, b = supervisor(pool=pool), supervisor(pool=pool)
    run_on(a)
    run_on(b)

    pool.configure(max_workers=1)

    assert (a.running, b.running, pool.live(), pool.max_workers) == (False, True, 1, 1)


def test_a_crashed_worker_leaves_the_pool(pools: list[WorkerPool]) -> None:
    """A worker that crashed no longer counts toward the cap; the next run starts another."""
    pool = make_pool(pools, max_workers=2, reaper=False)
    worker = supervisor(pool=pool)
    executor = ProcessExecutor(worker)
    run_on(worker)

    crashed = executor.run_raw("import os\nos._exit(3)")

    assert (crashed.error and crashed.error.error_type, pool.live()) == ("worker_crash", 0)
    assert (run_on(worker).log_fields["worker_restarts"], pool.live()) == (1, 1)


@pytest.mark.parametrize(
    ("setting", "value"),
    [
        ("idle_timeout_seconds", 0),
        ("idle_timeout_seconds", -1.0),
        ("idle_timeout_seconds", math.nan),
        ("idle_timeout_seconds", True),
        ("idle_timeout_seconds", "300"),
        ("max_workers", 0),
        ("max_workers", 2.5),
        ("max_workers", False),
    ],
)
def test_bad_settings_are_refused(setting: str, value: Any) -> None:
    """A timeout must be a positive number and a cap a positive integer (or None)."""
    with pytest.raises(UsageError, match=setting):
        WorkerPool(**{setting: value})
    with pytest.raises(UsageError, match=setting):
        configure_workers(**{setting: value})


def test_configure_workers_sets_the_interpreters_pool(monkeypatch: pytest.MonkeyPatch) -> None:
    """configure_workers changes the interpreter's pool; unnamed settings stay as they were."""
    pool = WorkerPool(reaper=False)
    monkeypatch.setattr(pool_module, "WORKERS", pool)

    configure_workers(max_workers=3)
    configure_workers(idle_timeout_seconds=None)

    assert (pool.max_workers, pool.idle_timeout_seconds) == (3, None)


# -- reaping


def test_a_dropped_supervisor_takes_its_worker_with_it(pools: list[WorkerPool]) -> None:
    """When nothing holds a supervisor any more its worker is killed and reaped at once."""
    pool = make_pool(pools, reaper=False)
    worker = supervisor(pool=pool)
    pid = run_on(worker).log_fields["worker_pid"]
    assert child_state(pid) is not None

    del worker
    gc.collect()

    assert pool.live() == 0
    assert eventually(lambda: child_state(pid) is None)


def test_a_worker_that_dies_while_idle_is_reaped_not_left_a_zombie(
    pools: list[WorkerPool],
) -> None:
    """Killed from outside between runs, the child is reaped by its reader, not at next use."""
    pool = make_pool(pools, reaper=False)
    worker = supervisor(pool=pool)
    pid = run_on(worker).log_fields["worker_pid"]

    os.kill(pid, signal.SIGKILL)

    assert eventually(lambda: child_state(pid) is None)
    assert run_on(worker).log_fields["worker_restarts"] == 1


def test_dropped_agents_leave_no_live_or_zombie_worker(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Agents with isolation="process" dropped after a call: no child of theirs remains."""
    pool = WorkerPool(reaper=False)
    monkeypatch.setattr(pool_module, "WORKERS", pool)
    log = tmp_path / "calls.jsonl"
    for index in range(3):
        agent = Agent(
            f"counter{index}",
            provider=ScriptedProvider({"one": "result = 1"}),
            log=log,
            toolstore_root=None,
            isolation="process",
        )
        assert agent.one().value == 1
        del agent
    pids = [entry["worker_pid"] for entry in read_log(log)]

    gc.collect()

    assert (len(set(pids)), pool.live()) == (3, 0)
    assert eventually(lambda: [child_state(pid) for pid in pids] == [None, None, None])


def test_an_agents_log_shows_the_restart_after_an_idle_stop(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, clock: FakeClock
) -> None:
    """The call after an idle stop runs on a new worker: new worker_pid, worker_restarts 1."""
    pool = WorkerPool(idle_timeout_seconds=300, clock=clock, reaper=False)
    monkeypatch.setattr(pool_module, "WORKERS", pool)
    log = tmp_path / "calls.jsonl"
    agent = Agent(
        "counter",
        provider=ScriptedProvider({"one": "result = 1"}),
        log=log,
        toolstore_root=None,
        isolation="process",
    )
    try:
        agent.one()
        clock.now += 300
        assert pool.reap_idle() == 1
        agent.one()
    finally:
        pool.close()

    first, second = read_log(log)
    assert (first["worker_restarts"], second["worker_restarts"]) == (0, 1)
    assert second["worker_pid"] != first["worker_pid"]


_EXIT_SCRIPT = """
import sys
from recurgent import Agent
from recurgent.testing import ScriptedProvider

agents = []
for index in range(2):
    agent = Agent(f"counter{index}", provider=ScriptedProvider({"one": "result = 1"}),
                  log=sys.argv[1], toolstore_root=None, isolation="process")
    agent.one()
    agents.append(agent)  # still referenced at exit: only the exit hook can stop them
"""


def test_every_worker_is_killed_and_reaped_when_the_interpreter_exits(tmp_path: Path) -> None:
    """A script that exits holding live agents leaves none of its workers running."""
    log = tmp_path / "calls.jsonl"
    script = tmp_path / "script.py"
    script.write_text(textwrap.dedent(_EXIT_SCRIPT))

    done = subprocess.run(
        [sys.executable, str(script), str(log)], capture_output=True, text=True, timeout=100
    )

    assert done.returncode == 0, done.stderr
    pids = [entry["worker_pid"] for entry in read_log(log)]
    assert len(pids) == 2
    assert [_exists(pid) for pid in pids] == [False, False]


def _exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def test_a_forked_interpreter_never_kills_its_parents_workers(pools: list[WorkerPool]) -> None:
    """A fork that runs its exit hooks leaves the parent's worker alive and serving."""
    pool = make_pool(pools, reaper=False)
    worker = supervisor(pool=pool)
    pid = run_on(worker).log_fields["worker_pid"]

    child = os.fork()
    if child == 0:  # pragma: no cover - the forked interpreter
        code = 0
        signal.alarm(30)  # a child that hangs fails the spec instead of outliving it
        try:
            import atexit

            atexit._run_exitfuncs()
            gc.collect()
            code = 3 if pool.live() != 0 else 0
        finally:
            os._exit(code)
    _, status = os.waitpid(child, 0)

    assert os.waitstatus_to_exitcode(status) == 0
    assert child_state(pid) not in (None, "Z")
    assert run_on(worker).log_fields["worker_pid"] == pid
