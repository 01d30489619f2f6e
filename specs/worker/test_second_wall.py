"""Process isolation as a second wall you can rely on (issue 21, ADR 0093).

A worker's start-up is not the program's time: the run's clock starts when the worker says it
is ready, so a hang ends within the deadline plus the parent's grace (0.5 s) however long the
start took. A worker that may hold what a program left behind (a timeout, a resource cap, a
module with process-wide caches) is killed before any other program runs on it. An agent with
``isolation="process"`` starts its worker when it is built, and ``RECURGENT_ISOLATION``
turns process isolation on for every agent and its delegates.

Timing assertions here are generous upper bounds on a safety property (a hang must end), never
speed targets; they subtract the start-up the log reports, which a loaded machine stretches.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from recurgent import Agent
from recurgent._worker._executor import ProcessExecutor
from recurgent._worker._isolation import bwrap_path
from recurgent._worker._pool import WorkerPool
from recurgent._worker._process import live_workers
from recurgent.errors import ExecutionTimeoutError
from recurgent.testing import ScriptedProvider, read_log
from specs.worker.support import confined, run, supervisor

pytestmark = pytest.mark.slow

#: The deadline of these specs and the bound a hang must end within (deadline + 1 s).
DEADLINE = 1.0
BOUND = DEADLINE + 1.0

POISON = """
import time

class Sticky(str):
    def __hash__(self):
        return hash('%Y')

    def __eq__(self, other):
        while True:
            pass

time.strptime('2024', Sticky('%Y'))
return 'left a key in strptime\\'s cache'
"""


def test_a_hung_c_call_in_a_cold_worker_ends_within_the_deadline_plus_one_second() -> None:
    """One C call that nothing but a kill stops, in a worker that has not started yet: the
    parent kills it at the deadline plus its grace counted from the worker's readiness, not
    from its spawn (before: 10 s more for a cold worker, so 11.5 s here). Confined as
    isolation="process" confines it (in bubblewrap where it works)."""
    worker = supervisor(
        isolation=confined(use_bwrap=bwrap_path() is not None),
        pool=WorkerPool(idle_timeout_seconds=None, reaper=False),
    )
    executor = ProcessExecutor(worker)
    try:
        began = time.monotonic()
        result = executor.run_raw(
            "import re\nre.match(r'(a+)+$', 'a' * 40 + 'b')", timeout_seconds=DEADLINE
        )
        wall = time.monotonic() - began

        assert isinstance(result.error, ExecutionTimeoutError)
        start = result.log_fields["worker_start_ms"] / 1000.0
        assert start > 0.0  # it really waited for a cold start
        assert wall - start < BOUND, (wall, start)
        assert result.log_fields["worker_retired"] == "timeout"
    finally:
        worker.shutdown()


def test_an_agents_endless_program_ends_within_the_deadline_plus_one_second(
    tmp_path: Path,
) -> None:
    """``while True: pass`` as the first program of a new isolation="process" agent: the call,
    less its worker's start-up, ends within deadline + 1 s, and the worker is replaced."""
    log = tmp_path / "calls.jsonl"
    agent = Agent(
        "spinner",
        provider=ScriptedProvider({"spin": "while True:\n    pass", "one": "return 1"}),
        log=log,
        toolstore_root=None,
        isolation="process",
        execution_timeout_seconds=DEADLINE,
    )

    began = time.monotonic()
    outcome = agent.spin()
    wall = time.monotonic() - began

    # A timeout is extrinsic: one attempt, never regenerated, so one start-up to subtract.
    assert outcome.error_type == "timeout"
    (entry,) = read_log(log)
    assert entry["execution_receiver"] == "worker"
    start = entry["worker_start_ms"] / 1000.0
    assert wall - start < BOUND, (wall, start)
    assert entry["worker_retired"] == "timeout"
    assert agent.one().value == 1


def test_a_poisoned_cache_does_not_reach_the_next_program(tmp_path: Path) -> None:
    """A program leaves a key with a looping ``__eq__`` in ``_strptime``'s process-wide cache;
    its worker is retired (it imported ``time``), so the next program's ``time.strptime`` runs
    in a fresh interpreter (new pid) with a clean cache and answers."""
    log = tmp_path / "calls.jsonl"
    agent = Agent(
        "clock",
        provider=ScriptedProvider(
            {
                "poison": POISON,
                "year": "import time\nreturn time.strptime('2024', '%Y').tm_year",
            }
        ),
        log=log,
        toolstore_root=None,
        isolation="process",
        execution_timeout_seconds=5,
    )

    # The first wall may refuse or convert the str subclass (exact types into library calls):
    # whichever it does, this wall must not depend on it, so the poisoning call is not judged.
    agent.poison()
    year = agent.year()

    assert (year.status, year.value) == ("ok", 2024)
    first, second = read_log(log)
    assert first["worker_retired"] == "module:time"
    assert second["worker_pid"] != first["worker_pid"]
    assert second["worker_restarts"] == first["worker_restarts"] + 1


def test_a_cache_poisoned_past_the_policy_does_not_reach_the_next_program() -> None:
    """The same poison from a program that escaped the policy (raw code: no first wall at
    all): the parent retires the worker from the source alone, and the next sandboxed program
    runs ``time.strptime`` in a new worker with an empty cache."""
    worker = supervisor(pool=WorkerPool(idle_timeout_seconds=None, reaper=False))
    executor = ProcessExecutor(worker)
    try:
        raw = POISON.replace("return 'left", "result = 'left")
        poisoned = executor.run_raw(raw + "import _strptime\nresult = len(_strptime._regex_cache)")
        assert (poisoned.error, poisoned.value) == (None, 1)
        assert poisoned.log_fields["worker_retired"] == "module:time"

        cache = executor.run_raw("import _strptime\nresult = len(_strptime._regex_cache)")
        year = run(executor, "import time\nreturn time.strptime('2024', '%Y').tm_year")

        assert (cache.error, cache.value) == (None, 0)
        assert cache.log_fields["worker_pid"] != poisoned.log_fields["worker_pid"]
        assert (year.error, year.value) == (None, 2024)
        assert year.log_fields["worker_pid"] == cache.log_fields["worker_pid"]
    finally:
        worker.shutdown()


def test_a_program_without_stateful_modules_keeps_its_warm_worker(tmp_path: Path) -> None:
    """Retirement is not every run: a program using only stateless modules keeps the worker."""
    log = tmp_path / "calls.jsonl"
    agent = Agent(
        "maths",
        provider=ScriptedProvider({"root": "import math\nreturn math.isqrt(args[0])"}),
        log=log,
        toolstore_root=None,
        isolation="process",
    )

    assert (agent.root(49).value, agent.root(81).value) == (7, 9)
    first, second = read_log(log)
    assert (first["worker_retired"], second["worker_retired"]) == (None, None)
    assert (second["worker_pid"], second["worker_start_ms"]) == (first["worker_pid"], 0.0)


def test_an_agent_with_process_isolation_starts_its_worker_when_it_is_built(
    tmp_path: Path,
) -> None:
    """The worker exists before the first call, and that call runs on it."""
    before = {worker.pid for worker in live_workers()}
    log = tmp_path / "calls.jsonl"
    agent = Agent(
        "eager",
        provider=ScriptedProvider({"one": "return 1"}),
        log=log,
        toolstore_root=None,
        isolation="process",
    )
    started = [worker.pid for worker in live_workers() if worker.pid not in before]

    assert agent.one().value == 1
    (entry,) = read_log(log)
    assert started == [entry["worker_pid"]]
    assert entry["worker_restarts"] == 0


def test_recurgent_isolation_sends_every_agent_and_its_delegates_to_workers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """RECURGENT_ISOLATION=process: an agent built without the option runs its programs in a
    worker, and so does the delegate its program makes (inherited, not overridable)."""
    monkeypatch.setenv("RECURGENT_ISOLATION", "process")
    log = tmp_path / "calls.jsonl"
    agent = Agent(
        "boss",
        provider=ScriptedProvider(
            {
                ("boss", "total"): "return delegate('adder').add(2).value",
                ("adder", "add"): "return args[0] + 40",
            }
        ),
        log=log,
        toolstore_root=None,
    )

    assert agent.total().value == 42
    entries = {entry["role"]: entry for entry in read_log(log)}
    assert (entries["boss"]["execution_receiver"], entries["adder"]["execution_receiver"]) == (
        "worker",
        "worker",
    )
    assert entries["boss"]["isolation_backend"] in ("bwrap", "rlimits")
    assert entries["adder"]["isolation_backend"] == entries["boss"]["isolation_backend"]
    assert entries["adder"]["worker_pid"] != entries["boss"]["worker_pid"]


def test_a_fresh_worker_is_ready_before_the_first_run_sends_its_program() -> None:
    """start() waits for the ready line: a run after it reports no start-up wait."""
    worker = supervisor(pool=WorkerPool(idle_timeout_seconds=None, reaper=False))
    try:
        pid = worker.start()
        result = run(ProcessExecutor(worker), "return 'warm'")
        assert (result.value, result.log_fields["worker_pid"]) == ("warm", pid)
        assert result.log_fields["worker_start_ms"] == 0.0
    finally:
        worker.shutdown()
