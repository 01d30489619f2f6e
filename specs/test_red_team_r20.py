"""Red team R20: ids cut in batches (ADR 0144) and the split of the sandbox's limits and display.

Today's changes: call ids (8 bytes) and content refs (12 bytes) are cut 64 at a time from a 4 KiB
block of ``os.urandom`` and handed out by ``list.pop()`` without a lock, a forked child dropping
the block and the cut ids (ADR 0144); the watchdog (``_sandbox/_watchdog.py``) and the resident
memory meter (``_sandbox/_memory.py``) moved out of ``_sandbox/_limits.py``, the display
functions out of ``_values.py`` into ``_display.py`` (no behaviour change intended). Tried (the
figures are runs on the shared 2-core machine, Python 3.11 with the GIL):

1. Duplicate ids between threads. Held. 16 threads each taking 10 000 ids (8 and 12 bytes
   alternately) with ``sys.setswitchinterval(1e-6)``: 160 000 ids, 160 000 different, with the
   64-id batches (2 532 refills where 2 500 suffice: 32 refills raced and about 2 000 cut ids
   were dropped unused) and with batches of 1, 2 and 3 ids (80 007 refills for 160 000 ids at
   2). Two threads refilling at once each hand out their own list; a list replaced while a
   thread still pops from it only ever yields ids no other list holds (pinned exactly below).
   16 threads making 250 calls each, half on their own agent and half on one shared agent:
   4 000 call ids and 4 000 content refs, all different (pinned with 100 calls each: 1 600).
2. Ids shared by a forked child and its parent. Held. A plain ``os.fork`` with both lengths
   partly used: the child's 2 000 ids include none of the 126 the parent had cut and not
   handed out, and none of the parent's next 2 000. Twenty forks while 8 parent threads took
   ids without pause (2.9 million ids in the parent): 20 000 child ids, none the parent's
   (pinned with 5 forks beside 4 threads: 2 000). A
   ``multiprocessing`` pool on the fork start method (4 workers, 8 jobs of 4 000 ids): 32 000
   ids, all different, none the parent's next 4 000. Agents called in such a pool: 200 call
   ids and 200 content refs, none the parent's next 50 of each. recurgent forks nothing
   itself: ``Agent.map(executor="process")`` runs ``WorkerSupervisor`` workers started by
   ``subprocess.Popen`` (fresh interpreters), and ids are made in the host only.
3. A program observing or predicting another call's content ref. Held, no better or worse
   than before: the ids waiting in ``_POOL.ready`` (at most 63 a length) are hex text where
   the block was bytes, and neither is reachable: ``content.ready``/``delegate.ready``,
   ``getattr(content, '__globals__')``, ``vars(content)``, ``dir()`` and ``import`` of
   ``recurgent``, ``recurgent._ids``, ``os``, ``sys``, ``gc``, ``inspect`` are all refused.
   A program sees its own agent's earlier call ids and refs (history, by design); ids are
   disjoint slices of ``getrandom`` output, so one says nothing of the next. A ref of another
   agent's answer reads as ``None``: each agent's content store is its own.
4. The split's monkeypatch targets. Held: ``MemoryMeter`` is one class whichever module names
   it (``_memory``, ``_limits``, ``_batch``, the package), ``WATCHDOG`` one object, the hand-off
   limit is read from ``_watchdog`` at each wait; ``_limits`` and ``_values`` no longer hold the
   moved names, so a stale ``monkeypatch.setattr`` on them fails loudly instead of patching
   nothing. Every spec's target was moved (``_watchdog._HANDOFF_SECONDS``,
   ``_memory.MemoryMeter``, ``_watchdog.WATCHDOG``); the moved code is line for line the old.
5. The at-fork hooks after the split. Held: a child forked while another thread of the parent
   is inside an attempt (registered with the watchdog, in its host section) has nothing
   watched, no watchdog thread and no statm descriptor; its ``while True: pass`` call ends as
   ``timeout`` under a 1 s deadline, it reads ``/proc/<child>/statm``, and a program growing
   48 MB a step is stopped at the 64 MiB cap, nested or not. With the two hooks' registrations
   removed the child had 1 attempt watched, read the parent's statm and grew 1.9 GB unstopped
   (and the nested child answered ``grown``): the fork spec below fails without them. The
   spec measures the growth as traced memory: on real resident memory its nested case
   answered ``grown`` once in a full ``make test`` run, the forked pytest worker serving the
   48 MB list from freed memory it kept resident (R18's open item).
6. The deadline. Held: ``while True: pass`` and ``sum(itertools.count())`` end as ``timeout``
   at 1 s; ``sum(range(10**10))`` (a long C call) is refused at once by the 10 000 000-item
   cap of ``range()``; ``urllib.parse.parse_qsl`` of 2 million pairs (library code, no ticks)
   ends as ``timeout`` at 0.3 s; a generator leaked past the attempt whose cleanup loops
   forever stops at the next ``gc.collect()`` with nothing unraisable.
7. The memory cap (ADR 0141; R18's nested attack). Held: a program holding 48 MB more a step
   is stopped past 64 MiB, and a nested child holding 48 MB in a parent holding 48 MB is
   stopped while the parent answers (traced memory, as R18; real resident memory in a fresh
   forked child when this was tried).

Fixed after the report (specs in ``specs/test_ids.py`` and
``specs/sandbox/test_fast_paths.py::TestTextCallsAreLocated``): ``random_hex(0)`` raised
``ZeroDivisionError`` (it was ``''``; no caller passes 0) and is ``''`` again. A lambda whose
body is ``str()`` of anything but a name (``lambda: str(12)``, not only the reported
``lambda: str(__import__('uuid'))``) failed to compile with ``AttributeError`` (``'Call' object
has no attribute 'lineno'``): the checked ``_str_(str, ...)`` call the policy puts in its place
had no location, and the lambda's tick takes its body's. The agent reported a ``provider``
error for a valid program; a comprehension's ``for j in str('ab')`` failed the same way (45 of
1 050 expression-in-context programs tried). The checked call now takes the call's location:
0 of 1 050 fail. Noted, not a hole: an asynchronous signal handler that forks between
``random_hex``'s check and its pop leaves the child popping its parent's list (the old code
likewise handed the child the bytes its parent had just drawn): host code only, unchanged in
kind.
"""

from __future__ import annotations

import contextlib
import gc
import json
import multiprocessing
import os
import sys
import threading
import tracemalloc
from collections.abc import Iterator
from typing import Any

import pytest

import recurgent._content_store as content_store_module
from recurgent import Agent, _ids, _sandbox as sandbox_package, _values
from recurgent._sandbox import SandboxLimits, _batch, _limits, _memory, _watchdog
from recurgent._sandbox._watchdog import WATCHDOG
from recurgent.outcome import Outcome
from recurgent.testing import ScriptedProvider
from specs.forking import report_of_a_child_forked_while_held
from specs.sandbox.support import (
    CAP_64_MIB,
    GROW_48_MB,
    STOPPED_AT_64_MIB,
    Host,
    child_that_grows,
    execute,
    leaking,
    recorded_wait_timeouts,
    traced_memory,
    traced_resident,
)

# Up to 40 steps of 48 MB (1.9 GB) when nothing stops it: bounded, so a broken meter shows as
# an answer, not as the machine's memory running out.
_GROWING = "keep = []\nfor i in range(40):\n    keep.append([0] * 6_000_000)\nresult = 'grew'"


def _agent(role: str, **replies: str) -> Agent:
    return Agent(role, provider=ScriptedProvider(replies), log=False, toolstore_root=None)


@contextlib.contextmanager
def _quick_switches() -> Iterator[None]:
    """Threads switch every microsecond, so they interleave inside ``random_hex``."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def _ids_of(count: int) -> list[str]:
    """``count`` ids of each length, 8 bytes first."""
    return [_ids.random_hex(8) for _ in range(count)] + [_ids.random_hex(12) for _ in range(count)]


def _ids_in_a_worker(_job: int) -> list[str]:
    return _ids_of(2_000)


_SHARED = _agent("forked", run="return args[0] * 2")


def _calls_in_a_worker(_job: int) -> tuple[list[str | None], list[str]]:
    outcomes = [_SHARED.run(k) for k in range(50)]
    history = _SHARED.runtime_context["conversation_history"][-50:]
    return [o.call_id for o in outcomes], [r["outcome_summary"]["content_ref"] for r in history]


class TestIdsAcrossThreads:
    """No id is handed out twice, however threads interleave (finding 1)."""

    @pytest.mark.parametrize("per_draw", [64, 2])
    def test_sixteen_threads_of_ten_thousand_ids(
        self, monkeypatch: pytest.MonkeyPatch, per_draw: int
    ) -> None:
        """160 000 ids of both lengths from 16 threads switching every microsecond are all
        different, with batches of 64 ids and with batches of 2 (a refill race every id)."""
        monkeypatch.setattr(_ids, "_POOL", _ids._Pool(per_draw=per_draw))
        taken: list[list[str]] = [[] for _ in range(16)]
        start = threading.Barrier(16)

        def take(index: int) -> None:
            start.wait()
            mine = taken[index]
            for k in range(10_000):
                mine.append(_ids.random_hex(12 if k % 2 else 8))

        threads = [threading.Thread(target=take, args=(i,)) for i in range(16)]
        with _quick_switches():
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()

        every = [one for mine in taken for one in mine]
        assert (len(every), len(set(every))) == (160_000, 160_000)
        assert sorted({len(one) for one in every}) == [16, 24]

    def test_a_list_replaced_while_a_thread_pops_from_it(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Thread A holds the batch it found; thread B, finding it empty a moment before,
        refills: A's list is dropped from the pool but A pops on from it. Each list holds its
        own cuts of the block, so A's ids and the pool's new ones never meet."""
        monkeypatch.setattr(os, "urandom", lambda size: bytes(range(256)) * (size // 256))
        pool = _ids._Pool(per_draw=4)
        monkeypatch.setattr(_ids, "_POOL", pool)
        assert _ids.random_hex(1) == "00"
        held_by_a = pool.ready[1]

        assert pool.refill(1) == "04"  # thread B's refill

        assert [held_by_a.pop() for _ in range(3)] == ["01", "02", "03"]
        assert [_ids.random_hex(1) for _ in range(4)] == ["05", "06", "07", "08"]

    def test_agents_called_from_sixteen_threads(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """16 threads, 100 calls each, alternately on their own agent and on one shared agent:
        1 600 call ids and 1 600 content refs, all different."""
        refs: list[str] = []
        real = _ids.random_hex  # what the content store calls
        assert getattr(content_store_module, "random_hex") is real  # noqa: B009 - not exported

        def recording(count: int) -> str:
            refs.append(real(count))
            return refs[-1]

        monkeypatch.setattr(content_store_module, "random_hex", recording)
        shared = _agent("shared", run="return args[0] * 2")
        call_ids: list[list[str | None]] = [[] for _ in range(16)]
        start = threading.Barrier(16)

        def call(index: int) -> None:
            own = _agent(f"own{index}", run="return args[0] + 1")
            start.wait()
            for k in range(100):
                outcome = (shared if k % 2 else own).run(k)
                assert outcome.ok
                call_ids[index].append(outcome.call_id)

        threads = [threading.Thread(target=call, args=(i,)) for i in range(16)]
        with _quick_switches():
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()

        every = [one for mine in call_ids for one in mine]
        assert (len(every), len(set(every)), len(refs), len(set(refs))) == (1600, 1600, 1600, 1600)


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
class TestIdsAcrossAFork:
    """A forked child hands out none of its parent's ids (finding 2)."""

    def test_the_child_drops_the_cut_ids_of_both_lengths(self) -> None:
        """The parent has cut and not handed out 63 ids of each length; the child's 1 000 of
        each include none of them, nor any of the parent's next 1 000 of each."""
        _ids.random_hex(8)
        _ids.random_hex(12)
        pending = {one for batch in _ids._POOL.ready.values() for one in batch}
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child: report, then leave at once
            try:
                os.write(write_end, json.dumps(_ids_of(1_000)).encode())
            finally:
                os._exit(0)
        os.close(write_end)
        with os.fdopen(read_end, "rb") as reader:
            child = json.loads(reader.read())
        os.waitpid(pid, 0)
        parent = _ids_of(1_000)

        assert len(pending) >= 2
        assert (len(child), len(set(child)), set(child) & pending, set(child) & set(parent)) == (
            2_000,
            2_000,
            set(),
            set(),
        )

    def test_a_child_forked_while_threads_take_ids(self) -> None:
        """Five forks while 4 threads of the parent take ids without pause (lists replaced,
        the block's lock taken, at the fork): no child id is one of the parent's."""
        stop = threading.Event()
        seen: list[list[str]] = [[] for _ in range(4)]

        def take(index: int) -> None:
            mine = seen[index]
            while not stop.is_set():
                mine.append(_ids.random_hex(12 if len(mine) % 2 else 8))

        threads = [threading.Thread(target=take, args=(i,)) for i in range(4)]
        children: list[str] = []
        with _quick_switches():
            for thread in threads:
                thread.start()
            try:
                for _ in range(5):
                    while sum(len(mine) for mine in seen) < 1_000:
                        threading.Event().wait(0.001)
                    read_end, write_end = os.pipe()
                    pid = os.fork()
                    if pid == 0:  # pragma: no cover - the child
                        try:
                            os.write(write_end, json.dumps(_ids_of(200)).encode())
                        finally:
                            os._exit(0)
                    os.close(write_end)
                    with os.fdopen(read_end, "rb") as reader:
                        children.extend(json.loads(reader.read()))
                    os.waitpid(pid, 0)
            finally:
                stop.set()
                for thread in threads:
                    thread.join()

        parent = [one for mine in seen for one in mine]
        assert len(parent) == len(set(parent))
        assert (len(children), len(set(children)), set(children) & set(parent)) == (
            2_000,
            2_000,
            set(),
        )

    def test_a_multiprocessing_pool_on_fork(self) -> None:
        """4 workers forked by ``multiprocessing``, 8 jobs of 4 000 ids: 32 000 ids, all
        different, none of them among the parent's next 4 000."""
        _ids.random_hex(8)
        _ids.random_hex(12)
        with multiprocessing.get_context("fork").Pool(4) as pool:
            results = pool.map(_ids_in_a_worker, range(8))
        parent = set(_ids_of(2_000))

        every = [one for result in results for one in result]
        assert (len(every), len(set(every)), set(every) & parent) == (32_000, 32_000, set())

    def test_agents_called_in_forked_workers(self) -> None:
        """An agent called in 4 forked workers (50 calls each) and then in the parent: 200 call
        ids and 200 content refs from the workers, none equal to one of the parent's 50."""
        assert _SHARED.run(1).ok  # the parent's lists are partly used at the fork
        with multiprocessing.get_context("fork").Pool(4) as pool:
            results = pool.map(_calls_in_a_worker, range(4))
        call_ids, refs = _calls_in_a_worker(0)

        worker_ids = [one for result in results for one in result[0]]
        worker_refs = [one for result in results for one in result[1]]
        assert (len(worker_ids), len(set(worker_ids)), set(worker_ids) & set(call_ids)) == (
            200,
            200,
            set(),
        )
        assert (len(worker_refs), len(set(worker_refs)), set(worker_refs) & set(refs)) == (
            200,
            200,
            set(),
        )


_PROBES = """
out = {}
def attempt(label, fn):
    try:
        out[label] = 'reached ' + repr(fn())
    except BaseException as error:
        out[label] = type(error).__name__
def read_ids():
    import recurgent._ids
    return recurgent._ids
def read_gc():
    import gc
    return gc
attempt('content.ready', lambda: content.ready)
attempt('delegate.ready', lambda: delegate.ready)
attempt('content.__globals__', lambda: getattr(content, '__globals__'))
attempt('content.__closure__', lambda: getattr(content, '__closure__'))
attempt('vars(content)', lambda: vars(content))
attempt('dir(content)', lambda: dir(content))
attempt('import recurgent._ids', read_ids)
attempt('import gc', read_gc)
return out
"""


class TestIdsFromAProgram:
    """Nothing of the pool is in a program's reach; refs of other agents read as None
    (finding 3)."""

    def test_the_pool_is_out_of_reach(self) -> None:
        """The forwarders' attributes, their globals and closures, and the modules that would
        lead to ``_POOL.ready`` are all refused."""
        outcome = _agent("prober", probe=_PROBES).probe()

        assert outcome.value == {
            "content.ready": "AttributeError",
            "delegate.ready": "AttributeError",
            "content.__globals__": "AttributeError",
            "content.__closure__": "AttributeError",
            "vars(content)": "AttributeError",
            "dir(content)": "PermissionError",
            "import recurgent._ids": "ImportError",
            "import gc": "ImportError",
        }

    def test_a_ref_of_another_agents_answer_reads_as_none(self) -> None:
        """Agent A's kept answer: A's program reads it back, B's program gets ``None``."""
        read = "return content(args[0])"
        first = _agent("first", answer="return {'secret': 42}", read=read)
        second = _agent("second", read=read)
        assert first.answer().value == {"secret": 42}
        ref = first.runtime_context["conversation_history"][-1]["outcome_summary"]["content_ref"]

        assert (first.read(ref).value, second.read(ref).value) == ({"secret": 42}, None)


class TestTheSplitsTargets:
    """Each moved name is one object wherever it is imported, and gone from its old module
    (finding 4)."""

    def test_one_meter_class_and_one_watchdog(self) -> None:
        """``MemoryMeter`` patched on ``_memory`` is the class every attempt and batch makes;
        ``WATCHDOG`` is the one the batch registers with."""
        meters = [module.MemoryMeter for module in (_limits, _batch, sandbox_package)]
        assert meters == [_memory.MemoryMeter] * 3
        assert getattr(_batch, "WATCHDOG") is _watchdog.WATCHDOG  # noqa: B009 - not exported
        assert getattr(sandbox_package, "Watchdog") is _watchdog.Watchdog  # noqa: B009

    def test_stale_targets_fail_loudly(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A patch of a name at its old place raises, rather than patching what no code reads."""
        for module, name in [
            (_limits, "_HANDOFF_SECONDS"),
            (_limits, "WATCHDOG"),
            (_limits, "_statm"),
            (_limits, "_WatchdogService"),
            (_values, "describe"),
            (_values, "key_listing"),
            (_values, "DISPLAY_MAX_CHARS"),
        ]:
            with pytest.raises(AttributeError):
                monkeypatch.setattr(module, name, None)

    def test_the_hand_off_limit_is_read_at_each_wait(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """The specs patch ``_watchdog._HANDOFF_SECONDS``: the watchdog's wait uses the value
        patched, not one bound at import."""
        service = _watchdog._WatchdogService(period=30.0, linger_polls=0)
        timeouts = recorded_wait_timeouts(monkeypatch, service._condition)
        monkeypatch.setattr(_watchdog, "_HANDOFF_SECONDS", 0.0125)
        stop = threading.Event()
        alive = threading.Thread(target=stop.wait, args=(5,), daemon=True)
        alive.start()
        with service._condition:
            service._due = 0.0
            service._thread = alive

        service.unregister(object())  # type: ignore[arg-type]
        stop.set()

        assert timeouts == [0.0125]


@contextlib.contextmanager
def _an_attempt_in_its_host_section() -> Iterator[None]:
    """Another thread runs an attempt, registered with the watchdog, that waits inside a
    delegated call until the block ends."""
    inside, release = threading.Event(), threading.Event()
    host = Host()

    def reply(method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Outcome:
        inside.set()
        release.wait(60)
        return Outcome.ok("done", tool_role="helper")

    host.child("helper").reply = reply
    results: list[Any] = []
    thread = threading.Thread(
        target=lambda: results.append(
            execute(
                "result = delegate('helper').work().value",
                host=host,
                limits=SandboxLimits(timeout_seconds=60.0),
            )
        )
    )
    thread.start()
    assert inside.wait(10)
    try:
        assert WATCHDOG.watching >= 1
        yield
    finally:
        release.set()
        thread.join(10)
    assert (results[0].error, results[0].value) == (None, "done")


def _nested_growth(limits: SandboxLimits) -> tuple[Any, Any, list[str]]:
    """A program holding 48 MB delegates to a child attempt (on its thread) holding 48 MB
    more: the program's error and value, and what the child saw."""
    host = Host()
    seen = child_that_grows(host, limits)
    result = execute(
        GROW_48_MB + "result = delegate('helper').work().value", host=host, limits=limits
    )
    return result.error, result.value, seen


class TestAForkedChildsLimits:
    """The split's at-fork hooks still reset the watchdog and the statm descriptor (finding 5)."""

    @pytest.mark.skipif(
        not (hasattr(os, "fork") and os.path.exists("/proc/self/statm")), reason="fork, /proc"
    )
    def test_a_child_forked_while_an_attempt_runs(self) -> None:
        """Forked while another thread's attempt is registered: the child watches nothing, has
        no watchdog thread and no descriptor; its spinning call times out, its meter reads its
        own statm, and growth is stopped at the 64 MiB cap, nested or not. The growth is
        measured as traced memory, as R18's specs do: a child forked from a worker that ran
        thousands of specs serves a 48 MB list from freed memory the worker kept resident, and
        its resident size does not grow (the nested case answered ``grown`` once in a full run;
        R18's open item)."""

        def child() -> str:
            forgotten = (WATCHDOG.watching, WATCHDOG._thread, _memory._statm == _memory._UNOPENED)
            agent = Agent(
                "tester",
                provider=ScriptedProvider(
                    {"spin": "while True:\n    pass", "add": "return 41 + 1"}
                ),
                log=False,
                toolstore_root=None,
                execution_timeout_seconds=1,
                guardrail_recovery_budget=0,
            )
            spin, add = agent.spin(), agent.add()
            reads = os.readlink(f"/proc/self/fd/{_memory._statm}") == f"/proc/{os.getpid()}/statm"
            watched = WATCHDOG._thread is not None and WATCHDOG._thread.is_alive()
            # A throwaway process: the patch and the tracing end with it.
            tracemalloc.start()
            _memory.MemoryMeter._resident = traced_resident  # type: ignore[method-assign,assignment]
            limits = SandboxLimits(timeout_seconds=60.0, max_memory_bytes=CAP_64_MIB)
            grown = execute(_GROWING, limits=limits)
            nested = _nested_growth(limits)
            stopped_child = nested[2] == [STOPPED_AT_64_MIB]
            seen = [forgotten, spin.error_type, add.value, reads, watched]
            seen += [str(grown.error), grown.value, nested[0], nested[1], stopped_child]
            return repr(tuple(seen))

        report = report_of_a_child_forked_while_held(
            _an_attempt_in_its_host_section, child, wait=60
        )

        forgotten = ((0, None, True), "timeout", 42, True, True)
        stopped = (STOPPED_AT_64_MIB, None, None, STOPPED_AT_64_MIB, True)
        assert report == repr(forgotten + stopped)


_ONE_SECOND = SandboxLimits(timeout_seconds=1.0)
_TIMED_OUT = "Execution timeout in tester.run: generated code exceeded execution_timeout_seconds="


class TestTheDeadline:
    """Hostile loops still end at the deadline after the split (finding 6)."""

    @pytest.mark.parametrize(
        "source",
        ["while True:\n    pass", "import itertools\nresult = sum(itertools.count())"],
    )
    def test_an_endless_loop(self, source: str) -> None:
        """An endless Python loop and an endless C-level sum end as ``timeout``."""
        result = execute(source, limits=_ONE_SECOND)

        assert (result.error is not None and result.error.error_type, str(result.error)) == (
            "timeout",
            _TIMED_OUT + "1",
        )

    def test_a_long_c_call_is_refused_before_it_runs(self) -> None:
        """``sum(range(10**10))`` would be one C call of minutes: ``range`` refuses it."""
        result = execute("result = sum(range(10**10))", limits=_ONE_SECOND)

        assert str(result.error) == (
            "Resource limit in tester.run: range() would create 10000000000 items; "
            "the sandbox limit is 10000000"
        )

    def test_library_code_that_never_ticks(self) -> None:
        """``parse_qsl`` of two million pairs (seconds of library code) ends as ``timeout``:
        only the watchdog's stop reaches it (ADR 0089)."""
        result = execute(
            "import urllib.parse\nresult = len(urllib.parse.parse_qsl('a=1&' * 2_000_000))",
            limits=SandboxLimits(timeout_seconds=0.3),
        )

        assert str(result.error) == _TIMED_OUT + "0.3"

    def test_a_generator_leaked_past_the_attempt(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A leaked generator whose cleanup loops forever: the attempt answers, and the next
        collection returns, the loop stopped quietly."""
        result = execute(leaking("while True:\n            pass", "result = 1"), limits=_ONE_SECOND)
        unraisable: list[str] = []
        monkeypatch.setattr(sys, "unraisablehook", lambda u: unraisable.append(u.exc_type.__name__))
        gc.collect()
        monkeypatch.undo()

        assert (result.error, result.value, unraisable) == (None, 1, [])


class TestTheMemoryCap:
    """Growth is still stopped at the cap, nested or not (finding 7; R18's attack)."""

    @pytest.fixture(autouse=True)
    def _traced_memory(self, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
        """The meters read the bytes Python has allocated, as in R18: a process that ran other
        specs serves lists from freed blocks it keeps resident."""
        with traced_memory(monkeypatch):
            yield

    def test_a_growing_program(self) -> None:
        """48 MB more a step: stopped past 64 MiB."""
        result = execute(
            _GROWING, limits=SandboxLimits(timeout_seconds=60.0, max_memory_bytes=CAP_64_MIB)
        )

        assert (str(result.error), result.value) == (STOPPED_AT_64_MIB, None)

    def test_a_nested_child_counts_what_its_parent_grew(self) -> None:
        """48 MB in the parent and 48 MB in its child: the child is stopped, the parent
        answers with the child's error."""
        error, value, seen = _nested_growth(
            SandboxLimits(timeout_seconds=60.0, max_memory_bytes=CAP_64_MIB)
        )

        assert (error, value, seen) == (None, STOPPED_AT_64_MIB, [STOPPED_AT_64_MIB])
