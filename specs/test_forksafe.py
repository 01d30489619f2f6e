"""Locks a forked child can take (ADR 0139): a lock, re-entrant lock or condition of the
library that a thread of the parent held at the fork is unheld in the child, and a child forked
while the library's module-level locks and the provider pool's were held makes a whole dynamic
call (generation, sandbox, store, log)."""

from __future__ import annotations

import contextlib
import gc
import json
import os
import threading
import weakref
from pathlib import Path

import pytest

import recurgent._forksafe as forksafe
from recurgent import Agent
from recurgent._forksafe import fork_safe_condition, fork_safe_lock, fork_safe_rlock
from recurgent.testing import ScriptedProvider, read_log
from specs.forking import report_of_a_child_forked_while_held

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")


class TestFactories:
    """Each factory's lock, held by a parent thread at the fork, is free in the child."""

    def test_a_held_lock_is_free_in_the_child(self) -> None:
        """The child acquires it at once and can release it."""
        lock = fork_safe_lock()

        def child() -> str:
            taken = lock.acquire(timeout=2)
            lock.release()
            return f"taken={taken}"

        assert report_of_a_child_forked_while_held(lambda: lock, child) == "taken=True"

    def test_a_held_rlock_is_free_and_the_childs_own(self) -> None:
        """Owned by the parent's thread at the fork; the child takes it twice and gives it back
        twice."""
        lock = fork_safe_rlock()

        def child() -> str:
            first = lock.acquire(timeout=2)
            second = lock.acquire(timeout=2)
            lock.release()
            lock.release()
            return f"{first},{second}"

        assert report_of_a_child_forked_while_held(lambda: lock, child) == "True,True"

    def test_a_held_condition_is_free_with_no_waiters(self) -> None:
        """The child enters the condition, notifies (no waiter of the parent's is woken or
        kept) and its own timed wait times out."""
        condition = fork_safe_condition(fork_safe_lock())

        def child() -> str:
            with condition:
                condition.notify_all()
                woken = condition.wait(0.01)
            return f"woken={woken}"

        assert report_of_a_child_forked_while_held(lambda: condition, child) == "woken=False"

    def test_a_plain_lock_would_block_the_child(self) -> None:
        """The control: a ``threading.Lock`` held at the fork is never free in the child."""
        lock = threading.Lock()

        def child() -> str:
            return f"taken={lock.acquire(timeout=1)}"

        assert report_of_a_child_forked_while_held(lambda: lock, child, wait=3) == "taken=False"

    def test_a_lock_is_not_kept_alive_by_the_registry(self) -> None:
        """The registry holds its locks weakly: a lock it holds is freed once dropped."""
        lock = fork_safe_lock()
        registered = lock in forksafe._LOCKS
        reference = weakref.ref(lock)
        del lock
        gc.collect()

        assert (registered, reference()) == (True, None)


class TestADynamicCallInTheChild:
    """The library's long-lived locks are fork-safe where a call needs them."""

    def test_a_child_forked_while_the_librarys_locks_were_held_makes_a_call(
        self, tmp_path: Path
    ) -> None:
        """A parent thread holds the agent's own lock and the runtime settings', parse
        cache's, log directory's, role-continuity's and provider pool's locks at the fork; the
        child calls that agent, which generates, runs, stores and logs the call, and builds and
        calls another."""
        import recurgent._lifecycle._generation as generation
        import recurgent._lifecycle._role_continuity as continuity
        import recurgent._observability as observability
        import recurgent._parsing as parsing
        import recurgent._runtime_config as runtime_config

        # The pool has made its worker thread already, as in a process that has called before.
        Agent("warm", provider=ScriptedProvider({"run": "return 1"}), log=False).run()
        log = tmp_path / "logs" / "calls.jsonl"
        agent = Agent(
            "calculator",
            provider=ScriptedProvider({"add": "return args[0] + args[1]"}),
            toolstore_root=tmp_path / "store",
            log=log,
        )
        held = (
            object.__getattribute__(agent, "_agent").lock,
            runtime_config._lock,
            parsing._LOCK,
            observability._DIRECTORY_LOCK,
            continuity._RECORDED_LOCK,
            generation._POOL._lock,
        )

        def all_held() -> contextlib.ExitStack:
            stack = contextlib.ExitStack()
            for lock in held:
                stack.enter_context(lock)
            return stack

        def child() -> str:
            outcome = agent.add(2, 3)
            other = Agent("echo", provider=ScriptedProvider({"run": "return 7"}), log=False)
            methods = [entry["method"] for entry in read_log(log)]
            return json.dumps([outcome.value, other.run().value, methods])

        report = report_of_a_child_forked_while_held(all_held, child)

        assert report == json.dumps([5, 7, ["add"]])
