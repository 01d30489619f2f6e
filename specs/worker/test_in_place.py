"""Memory writes from a worker patch the host's containers in place (ADR 0062).

A list or dict the host put in memory keeps its identity when a worker program appends to it or
changes it; a key the program reassigned, the tool registry, and any patch that does not fit
the host's memory take the whole new value instead. A tuple stays a tuple in the worker, as in
process (ADR 0094), so a program extends it only by reassigning the key.
"""

from __future__ import annotations

import textwrap
from collections.abc import Iterator
from typing import Any, cast

import pytest

from recurgent import Agent
from recurgent._execution import ExecutionInputs
from recurgent._sandbox import SandboxLimits
from recurgent._worker._executor import ProcessExecutor
from recurgent._worker._pool import WorkerPool
from recurgent._worker._protocol import MemoryPatch, RunResult
from recurgent._worker._supervisor import WorkerSupervisor
from recurgent.program import Program
from recurgent.testing import ScriptedProvider
from specs.sandbox.support import Host
from specs.worker.support import ReplyingSupervisor, run, supervisor

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def executor() -> Iterator[ProcessExecutor]:
    """One worker for the module, in a pool of its own."""
    pool = WorkerPool(reaper=False)
    yield ProcessExecutor(supervisor(pool=pool))
    pool.close()


def run_uncommitted(executor: ProcessExecutor, source: str, host: Host) -> Any:
    """Run ``source`` with the lifecycle's settings: writes come back, memory is untouched."""
    return executor.run(
        Program(code=textwrap.dedent(source)),
        ExecutionInputs(memory=dict(host.memory), commit_memory=False),
        SandboxLimits(timeout_seconds=30.0),
        host.bridge(),
    )


def test_a_host_list_and_dict_keep_their_identity_after_a_worker_run(
    executor: ProcessExecutor,
) -> None:
    """Append, set, delete and nested extend reach the host's own containers."""
    items, table = [1], {"a": 1, "nested": {"deep": [1]}}
    pair = ([1], 2)
    host = Host(memory={"items": items, "table": table, "pair": pair})

    result = run(
        executor,
        """
        context['items'].append(2)
        context['table']['b'] = 2
        del context['table']['a']
        context['table']['nested']['deep'].extend([2, 3])
        context['pair'][0].append(5)
        return len(context['items'])
        """,
        host=host,
    )

    assert (result.error, result.value) == (None, 2)
    assert host.memory == {
        "items": [1, 2],
        "table": {"nested": {"deep": [1, 2, 3]}, "b": 2},
        "pair": ([1, 5], 2),
    }
    assert (host.memory["items"] is items, host.memory["table"] is table) == (True, True)
    assert host.memory["pair"] is pair


def test_uncommitted_writes_carry_patches_and_commit_in_place(executor: ProcessExecutor) -> None:
    """For the lifecycle the writes come back as patches; memory changes only at commit."""
    items = [1]
    host = Host(memory={"items": items, "count": 1})

    result = run_uncommitted(
        executor, "context['items'].append(2)\ncontext['count'] = 2\nreturn 0", host
    )
    writes = result.writes
    before_commit = (list(items), host.memory["count"])
    writes.apply(host.memory)

    assert before_commit == ([1], 1)
    assert (writes.set, writes.delete) == ({"count": 2}, [])
    assert [(p.path, p.kind, p.items) for p in writes.patches] == [(("items",), "extend", [2])]
    assert host.memory == {"items": [1, 2], "count": 2}
    assert host.memory["items"] is items


def test_reassigned_keys_tuples_and_the_tool_registry_take_whole_values(
    executor: ProcessExecutor,
) -> None:
    """A reassigned list, a reassigned tuple (still a tuple), and ``tools`` are replaced whole."""
    kept, pair, tools = [1], (1, 2), {"adder": {"usage_count": 1}}
    host = Host(memory={"kept": kept, "pair": pair, "tools": tools})

    result = run_uncommitted(
        executor,
        """
        context['kept'] = [9]
        context['pair'] = context['pair'] + (3,)
        context['tools']['adder']['usage_count'] += 1
        return type(context['pair']).__name__
        """,
        host,
    )

    assert (result.error, result.value) == (None, "tuple")
    assert result.writes.set == {
        "kept": [9],
        "pair": (1, 2, 3),
        "tools": {"adder": {"usage_count": 2}},
    }
    assert result.writes.patches == []


def test_a_failed_run_sends_no_patches(executor: ProcessExecutor) -> None:
    """A program that appends and then raises leaves the host's list as it was."""
    items = [1]
    host = Host(memory={"items": items})

    result = run(executor, "context['items'].append(2)\nraise ValueError('no')", host=host)

    assert (result.error.error_type if result.error else None, host.memory) == (
        "execution",
        {"items": [1]},
    )


def _answer(patches: dict[str, list[MemoryPatch]], memory_set: dict[str, Any]) -> RunResult:
    return RunResult(
        call_id="x", status="ok", value=None, memory_set=memory_set, memory_patches=patches
    )


@pytest.mark.parametrize(
    ("patch", "why"),
    [
        (MemoryPatch(path=["items", 5], kind="extend", items=[2]), "an index past the end"),
        (MemoryPatch(path=["missing"], kind="extend", items=[2]), "a key memory lacks"),
        (MemoryPatch(path=["items"], kind="dict", set=[("a", 1)]), "a dict patch on a list"),
        (MemoryPatch(path=["other"], kind="extend", items=[2]), "another key's container"),
        (MemoryPatch(path=["pair"], kind="extend", items=[2]), "a tuple"),
    ],
)
def test_patches_that_do_not_fit_the_host_memory_fall_back_to_the_whole_value(
    patch: MemoryPatch, why: str
) -> None:
    """Whatever a worker claims, a patch that does not lead to a fitting container is dropped."""
    host = Host(memory={"items": [1], "other": [0], "pair": (1,)})
    answer = _answer({"items": [patch]}, {"items": [1, 2]})
    executor = ProcessExecutor(_stub(answer))

    result = run_uncommitted(executor, "return 0", host)

    assert (result.writes.set, result.writes.patches) == ({"items": [1, 2]}, []), why


def test_patches_of_a_key_the_worker_did_not_report_changed_are_ignored() -> None:
    """A patch for a key outside ``memory_set`` never reaches the host."""
    other = [0]
    host = Host(memory={"other": other})
    answer = _answer({"other": [MemoryPatch(path=["other"], kind="extend", items=[1])]}, {})

    result = run(ProcessExecutor(_stub(answer)), "return 0", host=host)

    assert result.writes is not None
    assert (result.writes.empty, host.memory["other"]) == (True, [0])


def _stub(answer: RunResult) -> WorkerSupervisor:
    return cast(WorkerSupervisor, ReplyingSupervisor(answer))


def test_an_agents_memory_list_keeps_its_identity_across_worker_calls() -> None:
    """isolation="process": a list the caller holds grows in place; a failed call leaves it."""
    agent = Agent(
        "collector",
        provider=ScriptedProvider(
            {
                "add": "context['seen'].append(args[0])\nreturn len(context['seen'])",
                "fail": "context['seen'].append('never')\nraise ValueError('no')",
            }
        ),
        log=False,
        toolstore_root=None,
        isolation="process",
    )
    seen: list[Any] = ["start"]
    agent.seen = seen

    counts = [agent.add("a").value, agent.add("b").value]
    failed = agent.fail()

    assert (counts, failed.error_type) == ([2, 3], "execution")
    assert agent.runtime_context["seen"] is seen
    assert seen == ["start", "a", "b"]


def test_only_the_keys_a_run_changed_come_back(executor: ProcessExecutor) -> None:
    """The worker reports the keys its journal changed, as the in-process sandbox commits them:
    a key rewritten with an equal value is written, keys left alone are neither encoded nor
    sent (the worker compared every key of memory after each run; red team R25, ADR 0152)."""
    host = Host(memory={"same": [1], "left": list(range(1000)), "gone": 1})

    result = run_uncommitted(executor, "context['same'] = [1]\ndel context['gone']\nreturn 0", host)

    assert (result.writes.set, result.writes.delete, result.writes.patches) == (
        {"same": [1]},
        ["gone"],
        [],
    )
