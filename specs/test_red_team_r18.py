"""Red team R18: the watchdog's hand-off (ADR 0140, commit 846c464), from a hostile program.

An attempt that ends after the watchdog thread's sleep has ended (``_WatchdogService._due``)
waits on the watchdog's condition, at most ``_HANDOFF_SECONDS`` (5 ms when this ran, 1 ms since), until the thread has
visited. Tried, from the program's side (the figures are runs on the shared 2-core machine,
with and without the hand-off taking turns in one process; docs/security.md has them all):

1. Making the host wait: many attempts ending while the watchdog is due (150 delegated
   children per call, ``Agent.map`` of 2 000 one-item batches, calls beside a CPU-bound
   attempt on another thread, attempts ending by their deadline). Held: an ending attempt
   waits at most once per visit, each wait ended by the visit (tens to a few hundred
   microseconds), and a watchdog held up elsewhere costs one 5 ms wait per period however many
   attempts end (pinned below). The ratios with/without moved both ways within the machine's
   noise.
2. An enclosing attempt's stop arriving while the thread waits in the hand-off. Held: an
   attempt ends inside another only within the enclosing attempt's host section (a delegated
   call, ADR 0089), so the innermost armed attempt of the waiting thread is always shielded and
   no stop is delivered there; children ending by their deadline or the memory cap in a parent
   past its own deadline leave nothing registered, the condition free and no waiter behind,
   and the parent fails with its own timeout (pinned below, with every ending forced into the
   hand-off).
3. A fork while a thread of the parent waits in the hand-off. Held: the child's condition is
   free with no waiters (ADR 0139), its due time and thread are forgotten, and its first
   attempt runs and is watched by a thread of its own (pinned below).
4. BROKEN, fixed (ADR 0141): the memory cap of nested attempts. A delegated child measured its
   growth from its own start while its parent, in its host section, was not checked, so each
   level of nesting added a cap: four nested calls each holding 860 MB under the default 1 GiB
   cap all answered, the process 3.4 GiB larger. A nested attempt (single, or a batch's item)
   now measures from the lower of its and the enclosing attempt's baselines with the smaller
   cap: the first child is stopped, the process 1 039 MiB larger at its peak.
5. Small, fixed: when the watchdog is held up, the first ending attempt to give up its wait
   moved the due time on but did not notify, so the others waiting for the same visit each
   waited to the end of their own 5 ms. It notifies them now.
6. BROKEN, fixed: the due time was written and compared with ``time.monotonic``, which
   freezegun replaces for the attempt's thread but not for the watchdog's (run by
   ``threading``, which it leaves on the real clock): under a frozen clock every period's
   first ending attempt waited its full 5 ms (200 back-to-back calls: 696 us each frozen, 500
   us unfrozen). Both sides read the real clock now (479 and 458 us).
"""

from __future__ import annotations

import contextlib
import math
import os
import textwrap
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import freezegun
import pytest

from recurgent import Agent
from recurgent._async_stop import innermost
from recurgent._lifecycle._map_executor import in_callers_context
from recurgent._sandbox import SandboxLimits, _limits, _watchdog, compile_program
from recurgent._sandbox._batch import BatchSandbox
from recurgent._sandbox._watchdog import WATCHDOG, _WatchdogService
from recurgent.outcome import Outcome
from recurgent.testing import FunctionProvider, ScriptedProvider
from specs.forking import report_of_a_child_forked_while_held
from specs.sandbox.support import (
    CAP_64_MIB,
    GROW_48_MB,
    STOPPED_AT_64_MIB,
    Host,
    child_that_grows,
    execute,
    recorded_wait_timeouts,
    traced_memory,
)

_GROWING = "s = 'a' * 1000\nwhile True:\n    s = s + s"
_SPINNING = "n = 0\nfor i in range(300000):\n    n += i\nresult = n"


@dataclass
class _HandOffs:
    """What every forced hand-off saw: the thread's innermost attempt as ``(armed, shielded)``
    (``None`` outside any attempt), what escaped ``unregister``, and each wait's outcome (True:
    the visit came)."""

    innermost: list[tuple[bool, bool] | None] = field(default_factory=list)
    escaped: list[str] = field(default_factory=list)
    waits: list[bool] = field(default_factory=list)


@pytest.fixture
def hand_offs(monkeypatch: pytest.MonkeyPatch) -> _HandOffs:
    """Every attempt that ends finds the watchdog due (its due time is put in the past first),
    so each one waits in the hand-off, where a stop of an enclosing attempt could land."""
    seen = _HandOffs()
    condition = WATCHDOG._condition
    real_unregister = WATCHDOG.unregister
    real_wait_for = condition.wait_for

    def recording_wait_for(predicate: Any, timeout: float | None = None) -> bool:
        seen.waits.append(real_wait_for(predicate, timeout))
        return seen.waits[-1]

    def due_unregister(ticker: Any) -> None:
        current = innermost()
        seen.innermost.append(None if current is None else (current._armed, current.shielded))
        # The condition (an RLock) is held from the due time's change into ``unregister``: a
        # visit of the watchdog in between would move the due time on, and that attempt would
        # not wait (seen once under load: 59 waits for 60 attempts).
        with condition:
            WATCHDOG._due = 0.0
            try:
                real_unregister(ticker)
            except BaseException as error:
                seen.escaped.append(type(error).__name__)
                raise

    monkeypatch.setattr(condition, "wait_for", recording_wait_for)
    monkeypatch.setattr(WATCHDOG, "unregister", due_unregister)
    return seen


def _condition_is_free() -> bool:
    """Whether another thread can take the watchdog's condition now (then gives it back)."""
    taken: list[bool] = []

    def take() -> None:
        got = WATCHDOG._condition.acquire(blocking=False)
        if got:
            WATCHDOG._condition.release()
        taken.append(got)

    thread = threading.Thread(target=take)
    thread.start()
    thread.join(5)
    return taken == [True]


def _left_behind() -> tuple[int, int, bool]:
    """Attempts still registered, threads still waiting on the condition, condition free."""
    return WATCHDOG.watching, len(WATCHDOG._condition._waiters), _condition_is_free()  # type: ignore[attr-defined]


class _HeldVisit:
    """A watched attempt whose visit blocks the watchdog thread until released: the thread is
    then past its due time and held up elsewhere."""

    def __init__(self) -> None:
        self.inside = threading.Event()
        self.release = threading.Event()

    def watch(self) -> None:
        self.inside.set()
        self.release.wait(30)


@contextlib.contextmanager
def _watchdog_held_up() -> Iterator[_HeldVisit]:
    """The process's watchdog thread inside a visit that does not end before the block does;
    its due time is in the past (as when its sleep has ended)."""
    held = _HeldVisit()
    assert WATCHDOG.register(held)
    try:
        assert held.inside.wait(5)
        with WATCHDOG._condition:
            WATCHDOG._due = 0.0
        yield held
    finally:
        held.release.set()
        WATCHDOG.unregister(held)


class TestAnEnclosingStopAndTheHandOff:
    """Children end, each waiting in the hand-off, inside a parent whose own stop is due."""

    def test_children_ending_in_a_parent_past_its_deadline(self, hand_offs: _HandOffs) -> None:
        """A parent with a 1 s deadline calls a child (about 20 ms of work each) until its
        deadline stops it; the last child's deadline is the parent's remaining time. Every child
        waits in the hand-off with the parent armed and shielded (its stop cannot be delivered
        there); nothing escapes ``unregister``; the parent fails with its own timeout; nothing
        is left registered or waiting and the condition is free."""
        provider = ScriptedProvider(
            {
                ("tester", "run"): "h = delegate('helper')\nwhile True:\n    h.work()",
                ("helper", "work"): _SPINNING,
            }
        )
        agent = Agent(
            "tester",
            provider=provider,
            guardrail_recovery_budget=0,
            log=False,
            execution_timeout_seconds=1,
        )

        outcome = agent.run()

        assert (outcome.error_type, outcome.error_message) == (
            "timeout",
            "Execution timeout in tester.run: generated code exceeded execution_timeout_seconds=1",
        )
        children = hand_offs.innermost[:-1]
        assert len(children) >= 2
        assert set(children) == {(True, True)}
        assert hand_offs.innermost[-1] is None  # the parent's own attempt, on the host's thread
        assert hand_offs.escaped == []
        assert len(hand_offs.waits) == len(hand_offs.innermost)
        assert _left_behind() == (0, 0, True)

    def test_children_stopped_by_the_memory_cap(self, hand_offs: _HandOffs) -> None:
        """Three nested attempts on the parent's thread, each stopped by its 64 MiB memory cap
        (the watchdog's stop delivered into it), each then waiting in the hand-off inside the
        parent's host section: the parent gets each child's failure as a value and ends
        normally; nothing is left behind."""
        host = Host()

        def reply(method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Outcome:
            result = execute(
                _GROWING, limits=SandboxLimits(timeout_seconds=30.0, max_memory_bytes=64 * 2**20)
            )
            return Outcome.ok(str(result.error), tool_role="helper")

        host.child("helper").reply = reply

        result = execute(
            "h = delegate('helper')\nresult = [h.work().value for i in range(3)]",
            host=host,
            limits=SandboxLimits(timeout_seconds=60.0),
        )

        assert (result.error, result.value) == (None, [STOPPED_AT_64_MIB] * 3)
        assert hand_offs.innermost == [(True, True)] * 3 + [None]
        assert hand_offs.escaped == []
        assert _left_behind() == (0, 0, True)


class TestAHeldUpWatchdog:
    """The watchdog's visit does not come (its thread is held up elsewhere)."""

    def test_many_ending_children_pay_one_timeout(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Forty children end in a row while the watchdog is due and held up: the first waits
        its 5 ms and the visit does not come; it moves the due time one period on (made 600 s
        here, so no later one comes due during the call), and none of the other 39 waits."""
        provider = ScriptedProvider(
            {
                ("tester", "run"): (
                    "h = delegate('helper')\nn = 0\nfor i in range(40):\n"
                    "    n += h.work().value\nresult = n"
                ),
                ("helper", "work"): "result = 2",
            }
        )
        agent = Agent("tester", provider=provider, guardrail_recovery_budget=0, log=False)
        with _watchdog_held_up():
            waits = recorded_wait_timeouts(monkeypatch, WATCHDOG._condition)
            monkeypatch.setattr(WATCHDOG, "_period", 600.0)
            try:
                outcome = agent.run()
            finally:
                monkeypatch.undo()

        assert (outcome.status, outcome.value) == ("ok", 80)
        # Forty children and the parent ended: one wait, for the 5 ms of the hand-off.
        assert waits == [_watchdog._HANDOFF_SECONDS]
        assert _left_behind() == (0, 0, True)

    def test_a_wait_that_gives_up_releases_the_others_waiting(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Finding 5 (small, fixed): two threads wait for the same visit of a held-up watchdog,
        a patient one (its wait made 60 s) and, after it, a brief one (50 ms). The brief one
        gives up and moves the due time on; the patient one stops at once, as it would had it
        come a moment later (before: it waited to the end of its own wait, up to 5 ms after
        the other gave up)."""
        ended: list[str] = []

        def end_an_attempt(name: str) -> None:
            ticker = _HeldVisit()
            ticker.release.set()
            assert WATCHDOG.register(ticker)
            WATCHDOG.unregister(ticker)
            ended.append(name)

        with _watchdog_held_up():
            monkeypatch.setattr(_watchdog, "_HANDOFF_SECONDS", 60.0)
            patient = threading.Thread(target=end_an_attempt, args=("patient",), daemon=True)
            patient.start()
            deadline = time.monotonic() + 5
            while not WATCHDOG._condition._waiters:  # type: ignore[attr-defined]
                assert time.monotonic() < deadline, "the thread did not start waiting"
                time.sleep(0.001)
            monkeypatch.setattr(_watchdog, "_HANDOFF_SECONDS", 0.05)
            end_an_attempt("brief")
            patient.join(5)
            finished = list(ended)  # before the watchdog is let go (its visit ends any wait)
            monkeypatch.undo()

        assert finished == ["brief", "patient"]
        assert _left_behind() == (0, 0, True)


class TestAFrozenClock:
    """Finding 6 (fixed): the hand-off's due time and freezegun."""

    def test_an_attempt_ending_under_a_frozen_clock_waits_only_when_the_thread_is_due(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The watchdog has just visited and sleeps for 30 s; under ``freeze_time`` an attempt
        ends and waits for nothing. Before, the due time was written with ``time.monotonic``
        on the watchdog's thread (freezegun leaves code run by ``threading`` on the real
        clock) and compared with it on the attempt's (frozen: seconds since 1970), so every
        attempt ending after a visit waited, mostly its full 5 ms: 200 back-to-back calls
        took 696 us each frozen against 500 us unfrozen, 7 to 8 waits of 5 ms per 200."""
        service = _WatchdogService(period=30.0, linger_polls=0)
        ticker = _HeldVisit()
        ticker.release.set()
        assert service.register(ticker)
        assert ticker.inside.wait(5)  # the first visit; the thread now sleeps for 30 s
        deadline = _limits.monotonic_clock() + 5
        while service._due == math.inf:
            assert _limits.monotonic_clock() < deadline, "the thread did not set its due time"
            time.sleep(0.001)
        waits = recorded_wait_timeouts(monkeypatch, service._condition)

        with freezegun.freeze_time("2026-12-04 12:00:00"):
            service.unregister(ticker)

        assert waits == []
        assert service.watching == 0


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
class TestForkDuringTheHandOff:
    """A child forked while a thread of the parent waits in the hand-off."""

    def test_the_childs_first_attempt_runs(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A thread of the parent waits in ``unregister`` (the watchdog held up, the wait made
        30 s) when the parent forks. In the child nothing is registered, nobody waits on the
        condition, its due time is forgotten; its first call answers and is watched by a
        watchdog thread of its own."""
        monkeypatch.setattr(_watchdog, "_HANDOFF_SECONDS", 30.0)

        @contextlib.contextmanager
        def waiting_in_the_hand_off() -> Iterator[None]:
            with _watchdog_held_up():
                ending = _HeldVisit()
                ending.release.set()

                def end_an_attempt() -> None:
                    assert WATCHDOG.register(ending)
                    WATCHDOG.unregister(ending)

                waiter = threading.Thread(target=end_an_attempt, daemon=True)
                waiter.start()
                deadline = time.monotonic() + 5
                while not WATCHDOG._condition._waiters:  # type: ignore[attr-defined]
                    assert time.monotonic() < deadline, "the thread did not start waiting"
                    time.sleep(0.001)
                yield
            waiter.join(5)

        def child() -> str:
            forgotten = (WATCHDOG.watching, len(WATCHDOG._condition._waiters), WATCHDOG._due)  # type: ignore[attr-defined]
            provider = ScriptedProvider({("tester", "run"): "result = 41 + 1"})
            agent = Agent("tester", provider=provider, guardrail_recovery_budget=0, log=False)
            outcome = agent.run()
            thread = WATCHDOG._thread
            alive = thread is not None and thread.is_alive()
            return f"{forgotten} {outcome.status} {outcome.value} watched={alive}"

        report = report_of_a_child_forked_while_held(waiting_in_the_hand_off, child)

        assert report == "(0, 0, inf) ok 42 watched=True"
        assert _left_behind() == (0, 0, True)


class TestNestedAttemptsShareOneMemoryCap:
    """Finding 4 (BROKEN before this round): each attempt measured its memory growth from its
    own start, and an enclosing attempt is not checked while its child runs (its host section),
    so a chain of nested attempts grew the process by one cap per level. Through the API, four
    nested calls each holding 860 MB under the default 1 GiB cap all answered, the process 3.4
    GiB larger (the delegation budget allows about eight levels). A nested attempt now measures
    from the enclosing attempt's baseline with the smaller cap (ADR 0141)."""

    @pytest.fixture(autouse=True)
    def _traced_memory(self, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
        """The meters read the bytes Python has allocated (``tracemalloc``) for the resident
        memory: a process that has run other specs keeps freed blocks resident and serves the
        programs' lists from them, so its resident size would not show their growth (the
        figures above are of the resident size, in a fresh process)."""
        with traced_memory(monkeypatch):
            yield

    def test_a_child_counts_what_its_parent_grew(self) -> None:
        """A parent holding 48 MB (under its 64 MiB cap) delegates to a child that holds 48 MB
        more (under its own cap from its own start): 96 MB since the parent started, so the
        child is stopped; the parent, its memory back under the cap, answers."""
        host = Host()
        limits = SandboxLimits(timeout_seconds=60.0, max_memory_bytes=CAP_64_MIB)
        seen = child_that_grows(host, limits)

        result = execute(
            GROW_48_MB + "result = delegate('helper').work().value", host=host, limits=limits
        )

        assert (result.error, result.value, seen) == (
            None,
            STOPPED_AT_64_MIB,
            [STOPPED_AT_64_MIB],
        )

    def test_a_child_without_a_cap_has_its_parents(self) -> None:
        """A nested attempt with no memory cap of its own is held to the enclosing one's."""
        host = Host()
        seen = child_that_grows(host, SandboxLimits(timeout_seconds=60.0, max_memory_bytes=None))

        result = execute(
            GROW_48_MB + "result = delegate('helper').work().value",
            host=host,
            limits=SandboxLimits(timeout_seconds=60.0, max_memory_bytes=CAP_64_MIB),
        )

        assert (result.error, seen) == (None, [STOPPED_AT_64_MIB])

    def test_a_batch_items_child_counts_from_the_batch(self) -> None:
        """An item of a batch (``Agent.map``) delegating the same way: its child is stopped."""
        host = Host()
        limits = SandboxLimits(timeout_seconds=60.0, max_memory_bytes=CAP_64_MIB)
        seen = child_that_grows(host, limits)
        batch = BatchSandbox(host.bridge(), limits=limits, network="deny")
        program = compile_program(GROW_48_MB + "result = delegate('helper').work().value")

        [result] = batch.run_items(program, [((1,), {})])

        assert (result.error, result.value, seen) == (
            None,
            STOPPED_AT_64_MIB,
            [STOPPED_AT_64_MIB],
        )

    def test_a_batch_run_inside_an_attempt_counts_from_it(self) -> None:
        """A batch whose items run inside an enclosing attempt's host section (a host function
        mapping over items): the item holding 48 MB more than the parent's 48 MB is stopped."""
        host = Host()
        limits = SandboxLimits(timeout_seconds=60.0, max_memory_bytes=CAP_64_MIB)
        seen: list[str] = []

        def reply(method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Outcome:
            batch = BatchSandbox(Host().bridge(), limits=limits, network="deny")
            program = compile_program(GROW_48_MB + "result = 'grown'")
            [item] = batch.run_items(program, [((1,), {})])
            seen.append("grown" if item.error is None else str(item.error))
            return Outcome.ok(seen[-1], tool_role="helper")

        host.child("helper").reply = reply

        result = execute(
            GROW_48_MB + "result = delegate('helper').work().value", host=host, limits=limits
        )

        assert (result.error, seen) == (None, [STOPPED_AT_64_MIB])

    def test_a_map_on_threads_inside_an_attempt_counts_from_it(self) -> None:
        """Host code mapping on two threads inside a program's host section (left open by this
        round, closed after it): each batch runs in a copy of the caller's context, so an item
        holding 48 MB more than the parent's 48 MB is stopped, as one run inline is."""
        # The first item obtains the program by a call on the caller's thread: it holds nothing.
        # The answer depends on the item, so the program is shared by batches.
        program = "if args[0] > 1:\n" + textwrap.indent(GROW_48_MB, "    ") + "result = args[0]"
        mapper = Agent(
            "mapper",
            provider=FunctionProvider(lambda request: program),
            log=False,
            toolstore_root=None,
        )
        host = Host()
        limits = SandboxLimits(timeout_seconds=60.0, max_memory_bytes=CAP_64_MIB)
        seen: list[Any] = []

        def reply(method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Outcome:
            outcomes = mapper.map("grow", [1, 2, 3], concurrency=2, batch_size=1)
            seen.extend((outcome.status, outcome.error_type) for outcome in outcomes)
            return Outcome.ok("mapped", tool_role="helper")

        host.child("helper").reply = reply

        result = execute(
            GROW_48_MB + "result = delegate('helper').work().value", host=host, limits=limits
        )

        assert (result.error, seen) == (
            None,
            [("ok", None), ("error", "resource_limit"), ("error", "resource_limit")],
        )

    def test_outside_any_attempt_a_batch_job_is_the_work_itself(self) -> None:
        """A map called by the host's own code carries nothing: its batches' job is unchanged."""

        def work(items: Any) -> list[Any]:
            return []

        assert in_callers_context(work) is work

    def test_children_one_after_another_each_have_the_room_left(self) -> None:
        """Nesting, not sequence, shares the cap: a parent holding nothing calls three children
        in turn, each holding 48 MB and letting go when it ends; all three answer."""
        host = Host()
        limits = SandboxLimits(timeout_seconds=60.0, max_memory_bytes=CAP_64_MIB)
        seen = child_that_grows(host, limits)

        result = execute(
            "h = delegate('helper')\nresult = [h.work().value for i in range(3)]",
            host=host,
            limits=limits,
        )

        assert (result.error, result.value, seen) == (None, ["grown"] * 3, ["grown"] * 3)
