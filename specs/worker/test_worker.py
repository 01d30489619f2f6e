"""The worker process: round trips, forwarded calls, capture, survival, timeouts, crashes, packages."""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

import pytest

from recurgent._execution import Executor
from recurgent._worker._executor import ProcessExecutor
from recurgent._worker._imports import installed_top_level_names
from recurgent.errors import ExecutionError, ExecutionTimeoutError, WorkerCrashError
from recurgent.outcome import Outcome
from specs.sandbox.support import FakeAgent, Host
from specs.worker.support import run, supervisor

pytestmark = pytest.mark.slow


def test_process_executor_satisfies_the_execution_port(plain_executor: ProcessExecutor) -> None:
    """ProcessExecutor is an Executor that runs dependencies, isolates and stops C calls."""
    assert isinstance(plain_executor, Executor)
    caps = plain_executor.capabilities
    assert (caps.dependencies, caps.isolation, caps.interrupts_c_calls) == (True, "process", True)


def test_round_trip_applies_memory_writes_and_returns_the_value(
    plain_executor: ProcessExecutor,
) -> None:
    """Memory goes out as data, writes (set and delete) come back, the value crosses."""
    host = Host(memory={"count": 1, "gone": "x", "kept": [1]}, args=(2,), kwargs={"extra": 3})
    result = run(
        plain_executor,
        """
        context["count"] += 1
        del memory["gone"]
        return args[0] + kwargs["extra"]
        """,
        host=host,
    )
    assert (result.error, result.value) == (None, 5)
    assert host.memory == {"count": 2, "kept": [1]}
    assert result.log_fields["execution_receiver"] == "worker"
    assert result.log_fields["isolation_backend"] == "none"
    assert result.log_fields["worker_pid"] == plain_executor.supervisor.pid


def test_remember_tool_and_delegate_are_forwarded_to_the_parent(
    plain_executor: ProcessExecutor,
) -> None:
    """remember() writes parent memory; tool/delegate handles call the parent's agents."""
    host = Host()
    host.child("search")
    result = run(
        plain_executor,
        """
        remember(topic="worker")
        found = tool("search").find("x", limit=2)
        helper = delegate("summarizer", purpose="sum")
        helper.style = "short"
        said = helper.say(found.value)
        return [found.value, said.value, helper.style, helper.role]
        """,
        host=host,
    )
    assert result.error is None, result.error
    assert result.value == [
        "search.find('x',)",
        "summarizer.say(\"search.find('x',)\",)",
        "short",
        "summarizer",
    ]
    assert host.memory == {"topic": "worker"}
    assert host.children["search"].calls == [("find", ("x",), {"limit": 2})]
    assert host.delegations == [("summarizer", {"purpose": "sum"})]
    assert host.children["summarizer"].memory == {"style": "short"}
    assert result.forwarded_calls == 6


def test_agents_cross_as_references_and_come_back_as_the_same_agent(
    plain_executor: ProcessExecutor,
) -> None:
    """Agents in memory and arguments are handles in the worker and the parent's agents after."""
    agent = FakeAgent("calc", reply=lambda m, a, k: Outcome.ok(a[0] * 10))
    host = Host(memory={"calc": agent}, args=(agent,))
    result = run(
        plain_executor,
        "memory['again'] = memory['calc']\nreturn [memory['calc'].times(4).value, args[0]]",
        host=host,
    )
    assert result.error is None, result.error
    assert result.value == [40, agent]
    assert result.value[1] is agent
    assert host.memory["calc"] is agent and host.memory["again"] is agent
    assert agent.calls == [("times", (4,), {})]


def test_forwarded_failures_come_back_as_errors_in_the_program(
    plain_executor: ProcessExecutor,
) -> None:
    """An unknown tool raises inside the program, which may catch it; the message is the parent's."""
    result = run(
        plain_executor,
        """
        try:
            tool("missing")
        except Exception as error:
            return str(error)
        """,
    )
    assert result.value == "tool failed: unknown tool 'missing'"


def test_print_is_captured_and_stray_stdout_cannot_corrupt_the_protocol(
    plain_executor: ProcessExecutor,
) -> None:
    """print() lands in stdout of the result; writes to fd 1 by raw code go to stderr."""
    result = run(plain_executor, "print('hello', 42)\nreturn 'done'")
    assert (result.value, result.stdout) == ("done", "hello 42\n")
    raw = plain_executor.run_raw(
        "import os\nos.write(1, b'{not json}\\n')\nprint('noise')\nresult = 7"
    )
    assert raw.value == 7
    assert run(plain_executor, "return 8").value == 8


def test_sys_exit_never_kills_the_worker(plain_executor: ProcessExecutor) -> None:
    """SystemExit in raw code is an execution error; the same worker serves the next run."""
    pid = plain_executor.supervisor.pid or plain_executor.supervisor.start()
    raw = plain_executor.run_raw("import sys\nsys.exit(3)")
    assert raw.error is not None and raw.error.message == "SystemExit: 3"
    assert run(plain_executor, "return 1").value == 1
    assert plain_executor.supervisor.pid == pid


def test_errors_of_the_program_keep_their_taxonomy(plain_executor: ProcessExecutor) -> None:
    """1/0 is an execution error with root class and line; a syntax error is invalid_code."""
    result = run(plain_executor, "x = 1\nreturn x / 0")
    assert isinstance(result.error, ExecutionError)
    assert (result.error.error_type, result.error.root_class, result.error.line) == (
        "execution",
        "ZeroDivisionError",
        2,
    )
    assert (
        result.error.message == "Execution error in tester.run: ZeroDivisionError: division by zero"
    )
    refused = run(plain_executor, "import os\nreturn os.getcwd()")
    assert refused.error is not None and "import of 'os' is not allowed" in refused.error.message
    policy = run(plain_executor, "return ().__class__.__bases__")
    assert policy.error is not None and policy.error.error_type == "invalid_code"


def test_values_the_wire_cannot_carry_are_non_serializable(plain_executor: ProcessExecutor) -> None:
    """A cyclic result (kept in process, a tree on the pipe) is non_serializable_result; a set
    and a NaN in memory cross as themselves (ADR 0094); the worker lives on."""
    result = run(plain_executor, "loop = []\nloop.append(loop)\nreturn loop")
    assert result.error is not None and result.error.error_type == "non_serializable_result"
    assert result.error.message.startswith("the result[0][0]")
    host = Host(memory={})
    stored = run(plain_executor, "memory['s'] = {float('nan')}\nreturn 1", host=host)
    assert (stored.error, stored.value) == (None, 1)
    assert stored.writes is not None and [type(v) for v in stored.writes.set["s"]] == [float]
    assert run(plain_executor, "return 2").value == 2


def test_host_objects_in_memory_are_refused_before_the_worker_runs(
    plain_executor: ProcessExecutor,
) -> None:
    """A host object in memory cannot cross to a dependency worker: non_serializable_result,
    memory untouched (under isolation="process" it is a UsageError: test_parity.py)."""
    thing = object()
    host = Host(memory={"s": thing})
    result = run(plain_executor, "return 1", host=host)
    assert result.error is not None and result.error.error_type == "non_serializable_result"
    assert (
        result.error.message
        == "context['s'] holds a object, which is not plain data; it cannot cross to the worker process"
    )
    assert host.memory == {"s": thing}


def test_outcomes_cross_both_ways(plain_executor: ProcessExecutor) -> None:
    """A program returning Outcome.error gets an Outcome in the parent with its fields."""
    result = run(
        plain_executor,
        "return Outcome.error(error_type='parse_error', error_message='bad', retriable=True)",
    )
    assert isinstance(result.value, Outcome)
    assert (result.value.error_type, result.value.retriable, result.value.tool_role) == (
        "parse_error",
        True,
        "tester",
    )


def test_a_hung_c_call_is_killed_at_the_deadline_and_the_worker_restarts() -> None:
    """Catastrophic regex backtracking (one C call) ends as timeout; a new worker serves next."""
    worker = supervisor()
    executor = ProcessExecutor(worker)
    try:
        first_pid = worker.start()
        result = executor.run_raw(
            "import re\nre.match(r'(a+)+$', 'a' * 40 + 'b')", timeout_seconds=1.0
        )
        assert isinstance(result.error, ExecutionTimeoutError)
        assert result.error.message == "Execution timeout: the worker ran past 1s and was killed"
        with pytest.raises(ProcessLookupError):
            os.kill(first_pid, 0)
        after = run(executor, "return 'alive'")
        assert after.value == "alive"
        assert after.log_fields["worker_restarts"] == 1
        assert after.log_fields["worker_pid"] != first_pid
    finally:
        worker.shutdown()


def test_a_crash_is_worker_crash_with_the_stderr_tail() -> None:
    """A worker that dies mid-run reports worker_crash with what it wrote to stderr."""
    worker = supervisor()
    executor = ProcessExecutor(worker)
    try:
        result = executor.run_raw(
            "import os, sys\nsys.stderr.write('segfault-ish trouble\\n')\nsys.stderr.flush()\nos._exit(9)"
        )
        assert isinstance(result.error, WorkerCrashError)
        assert (result.error.error_type, result.error.retriable) == ("worker_crash", True)
        assert "worker exited without response (exit code 9)" in result.error.message
        assert result.error.message.endswith("stderr tail:\nsegfault-ish trouble")
        assert run(executor, "return 3").value == 3
        assert worker.restarts == 1
    finally:
        worker.shutdown()


def test_a_worker_killed_between_runs_is_replaced() -> None:
    """A worker that died while idle is noticed and restarted before the next run."""
    worker = supervisor()
    executor = ProcessExecutor(worker)
    try:
        pid = worker.start()
        os.killpg(pid, signal.SIGKILL)
        process = worker._worker
        assert process is not None
        while process.alive():
            time.sleep(0.01)
        result = run(executor, "return 'fresh'")
        assert result.value == "fresh"
        assert result.log_fields["worker_pid"] != pid
    finally:
        worker.shutdown()


def test_shutdown_ends_the_worker_process_group() -> None:
    """After shutdown the worker pid no longer exists."""
    worker = supervisor()
    pid = worker.start()
    worker.shutdown()
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)


def test_a_program_imports_its_declared_package(demo_executor: ProcessExecutor) -> None:
    """import and from-import of the installed wheel work; its objects' public attributes read."""
    result = run(
        demo_executor,
        """
        import recurgent_demo_dep as demo
        from recurgent_demo_dep import Greeter
        return [demo.double(21), Greeter("ada").greet(), Greeter("x").name, demo.VERSION]
        """,
    )
    assert result.error is None, result.error
    assert result.value == [42, "hello ada", "x", "0.1.0"]
    fields = result.log_fields
    assert fields["execution_receiver"] == "worker"
    assert fields["env_id"] == demo_executor._environment.env_id  # type: ignore[union-attr]
    assert set(fields) == {
        "execution_receiver", "isolation_backend", "worker_pid", "worker_restarts", "env_id",
        "environment_cache_hit", "env_prepare_ms", "env_resolve_ms", "env_install_ms",
        "worker_start_ms", "worker_retired",
    }  # fmt: skip


@pytest.mark.parametrize(
    ("source", "message"),
    [
        ("import recurgent_demo_dep as d\nreturn d.system('id')", "re-exported from 'posix'"),
        ("import recurgent_demo_dep as d\nreturn d.os", "'os' is not an installed dependency"),
        ("import os\nreturn 1", "import of 'os' is not allowed"),
        ("import pydantic\nreturn 1", "import of 'pydantic' is not allowed"),
    ],
)
def test_packages_do_not_open_side_doors(
    demo_executor: ProcessExecutor, source: str, message: str
) -> None:
    """Re-exported host functions, stdlib modules behind a package and host packages stay closed."""
    result = run(demo_executor, source)
    assert result.error is not None and message in result.error.message


def test_package_objects_cannot_cross_back(demo_executor: ProcessExecutor) -> None:
    """Returning a package object is non_serializable_result."""
    result = run(demo_executor, "import recurgent_demo_dep as d\nreturn d.Greeter('x')")
    assert result.error is not None and result.error.error_type == "non_serializable_result"
    assert result.error.message.startswith("the result holds an object of type Greeter")


def test_the_parent_caps_forwarded_calls_even_for_a_subverted_worker() -> None:
    """Forward requests beyond max_forwarded_calls are refused by the parent itself."""
    from recurgent._worker._executor import _Run
    from recurgent._worker._protocol import ForwardRequest

    host = Host()
    run_state = _Run(host.bridge(), timeout_seconds=60.0, max_forwarded_calls=2)
    replies = [
        run_state.answer(ForwardRequest(call_id="c", forward_id=n, op="remember", kwargs={"n": n}))
        for n in range(1, 4)
    ]
    assert [reply.ok for reply in replies] == [True, True, False]
    assert replies[2].error_class == "BudgetExceededError"
    assert replies[2].error is not None
    assert replies[2].error.message == "the attempt made more than 2 forwarded calls"
    assert host.memory == {"n": 2}


def test_an_oversized_protocol_line_is_a_crash(monkeypatch: pytest.MonkeyPatch) -> None:
    """A worker writing a line past the cap is killed as worker_crash, not buffered without bound."""
    monkeypatch.setattr("recurgent._worker._process.MAX_LINE_BYTES", 1000)
    worker = supervisor()
    try:
        result = ProcessExecutor(worker).run_raw(
            "import os\nos.write(3, b'x' * 5000 + b'\\n')\nresult = 1"
        )
        assert isinstance(result.error, WorkerCrashError)
        assert "worker sent a message over 1000 bytes" in result.error.message
    finally:
        worker.shutdown()


def test_a_forwarded_call_may_run_another_program_on_the_same_worker(
    plain_executor: ProcessExecutor,
) -> None:
    """Re-entry (a tool whose call runs a program on this agent's worker) does not deadlock."""
    host = Host()
    inner = host.child("inner")
    inner.reply = lambda method, args, kwargs: Outcome.ok(
        run(plain_executor, "return 41 + 1").value
    )
    result = run(plain_executor, "return tool('inner').answer().value", host=host)
    assert (result.error, result.value) == (None, 42)
    assert result.log_fields["worker_restarts"] == plain_executor.supervisor.restarts


def test_packages_cannot_claim_standard_library_names(tmp_path: Path) -> None:
    """A top-level module named like a stdlib or runtime module is never served as a dependency."""
    for name in ("os.py", "json", "recurgent", "demo_mod.py", "_private.py", "pkg-1.0.dist-info"):
        path = tmp_path / name
        if name.endswith(".py"):
            path.write_text("")
        else:
            path.mkdir()
    assert installed_top_level_names(tmp_path) == frozenset({"demo_mod"})


def test_a_worker_that_cannot_start_is_dependency_activation_failed(tmp_path: Path) -> None:
    """A missing interpreter is a typed, retriable error in the result, not a raw OSError."""
    worker = supervisor(python=str(tmp_path / "missing" / "python"))
    result = run(ProcessExecutor(worker), "return 1")
    assert result.error is not None
    assert (result.error.error_type, result.error.retriable) == (
        "dependency_activation_failed",
        True,
    )
    assert result.error.message.startswith(
        f"worker could not be started ({tmp_path / 'missing' / 'python'})"
    )
    assert worker.restarts == 0
