"""All or nothing (ADR 0100): only an ok outcome commits, under the agent's memory lock; keys that
hide a method are reported."""

from __future__ import annotations

import threading
from pathlib import Path
from types import TracebackType

import pytest

from recurgent import Agent
from recurgent._journal import Patch, Writes
from recurgent._lifecycle._commit import commit
from recurgent._prompting import shared_system_prefix
from recurgent.testing import ScriptedProvider, read_log

BATCH = (
    "for amount in args[0]:\n"
    "    if context['balance'] < amount:\n"
    "        return Outcome.error('insufficient_funds', f'cannot pay {amount}')\n"
    "    context['balance'] -= amount\n"
    "    context['ledger'].append(-amount)\n"
    "return context['balance']"
)


class TestErrorOutcomesCommitNothing:
    """A program that changed memory and then returned an error leaves memory as it was."""

    def test_failed_batch_keeps_the_balance(self) -> None:
        """120, pay [30, 200]: the error is returned and balance and ledger are untouched."""
        agent = Agent("bank", provider=ScriptedProvider({"pay": BATCH}), log=False)
        agent.remember(balance=120, ledger=[])

        outcome = agent.pay([30, 200])

        assert (outcome.error_type, outcome.error_message) == (
            "insufficient_funds",
            "cannot pay 200",
        )
        assert (agent.runtime_context["balance"], agent.runtime_context["ledger"]) == (120, [])

    def test_ok_batch_commits(self) -> None:
        """120, pay [30, 20]: 70, and the ledger holds both payments."""
        agent = Agent("bank", provider=ScriptedProvider({"pay": BATCH}), log=False)
        agent.remember(balance=120, ledger=[])

        assert agent.pay([30, 20]).value == 70
        assert (agent.runtime_context["balance"], agent.runtime_context["ledger"]) == (
            70,
            [-30, -20],
        )

    def test_stored_program_error_commits_nothing(self, tmp_path: Path) -> None:
        """A stored program answering with a domain error rolls back like a fresh one."""
        provider = ScriptedProvider({"pay": BATCH})
        root = tmp_path / "store"
        first = Agent("bank", provider=provider, log=False, toolstore_root=root)
        first.remember(balance=120, ledger=[])
        assert first.pay([20]).value == 100
        second = Agent("bank", provider=provider, log=False, toolstore_root=root)
        second.remember(balance=50, ledger=[])

        outcome = second.pay([10, 90])

        assert (outcome.error_type, provider.calls) == ("insufficient_funds", 1)
        assert (second.runtime_context["balance"], second.runtime_context["ledger"]) == (50, [])

    def test_the_log_says_rolled_back(self, log_path: Path) -> None:
        """The error call's log line has rollback_applied true."""
        agent = Agent("bank", provider=ScriptedProvider({"pay": BATCH}), log=log_path)
        agent.remember(balance=10, ledger=[])

        agent.pay([20])

        (entry,) = read_log(log_path)
        assert (entry["outcome_status"], entry["rollback_applied"]) == ("error", True)

    def test_the_prompt_says_so(self) -> None:
        """The shared system prompt states the rule."""
        assert (
            "Returning `Outcome.error(...)` discards every write of the call, exactly as raising "
            "an exception does" in shared_system_prefix()
        )


class _SpyLock:
    """An RLock that signals ``contended`` when a thread has to wait for it."""

    def __init__(self, contended: threading.Event) -> None:
        self._lock = threading.RLock()
        self._contended = contended

    def __enter__(self) -> None:
        if not self._lock.acquire(blocking=False):
            self._contended.set()
            self._lock.acquire()

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._lock.release()


class TestCommitsHoldTheMemoryLock:
    """Two commits never interleave: the second waits for the agent's memory lock."""

    def test_concurrent_commits_apply_whole(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Commit A pauses between its two patches until commit B has run or is waiting for
        the lock. With the lock B waits, A finishes first and both lists read [a, b]; without
        it B runs in the gap and the second list reads [b, a] (a torn commit). No sleeps: A
        resumes on an event that B's waiting (or B's end) sets."""
        resume = threading.Event()
        agent = Agent("bank", provider=ScriptedProvider({}), log=False)
        agent._agent.lock = _SpyLock(resume)  # type: ignore[assignment]
        runtime = agent._runtime()
        first: list[str] = []
        second: list[str] = []
        agent.remember(first=first, second=second)

        def writes(tag: str) -> Writes:
            return Writes(
                patches=[
                    Patch(first, ("first",), "extend", items=[tag]),
                    Patch(second, ("second",), "extend", items=[tag]),
                ]
            )

        writes_a, writes_b = writes("a"), writes("b")
        paused = threading.Event()
        real_apply = Patch.apply

        def apply(patch: Patch) -> None:
            real_apply(patch)
            if patch is writes_a.patches[0]:
                paused.set()
                resume.wait()

        monkeypatch.setattr(Patch, "apply", apply)

        def commit_b() -> None:
            paused.wait()
            commit(runtime, writes_b)
            resume.set()

        thread_a = threading.Thread(target=commit, args=(runtime, writes_a))
        thread_b = threading.Thread(target=commit_b)
        thread_a.start()
        thread_b.start()
        thread_a.join(10)
        thread_b.join(10)

        assert (first, second) == (["a", "b"], ["a", "b"])


class TestKeysThatHideMethods:
    """A key a program writes under a method's name is listed in the log line."""

    def test_a_method_writing_its_own_name(self, log_path: Path) -> None:
        """``balance()`` storing context['balance'] is reported; reading it stays possible."""
        provider = ScriptedProvider({"balance": "context['balance'] = 120.0\nresult = 120.0"})
        agent = Agent("account", provider=provider, log=log_path)

        assert agent.balance().value == 120.0

        (entry,) = read_log(log_path)
        assert entry["memory_key_shadows_method"] == ["balance"]
        assert agent.balance == 120.0  # the key now answers the attribute
        assert agent.runtime_context["balance"] == 120.0

    def test_a_method_called_earlier(self, log_path: Path) -> None:
        """A later method writing the name of an earlier one is reported too."""
        provider = ScriptedProvider(
            {"deposit": "result = 1", "reset": "context['deposit'] = 0\ncontext['n'] = 1"}
        )
        agent = Agent("account", provider=provider, log=log_path)

        agent.deposit()
        agent.reset()

        assert [entry["memory_key_shadows_method"] for entry in read_log(log_path)] == [
            None,
            ["deposit"],
        ]

    def test_an_error_outcome_reports_nothing(self, log_path: Path) -> None:
        """A rolled-back write hides nothing, so nothing is reported."""
        provider = ScriptedProvider(
            {"balance": "context['balance'] = 1\nreturn Outcome.error('closed', 'closed')"}
        )
        agent = Agent("account", provider=provider, log=log_path)

        agent.balance()

        (entry,) = read_log(log_path)
        assert (entry["memory_key_shadows_method"], "balance" in agent.runtime_context) == (
            None,
            False,
        )

    def test_the_prompt_tells_the_model(self) -> None:
        """The shared system prompt warns against method-named keys."""
        assert "Never store a `context` key named like a method of this agent" in (
            shared_system_prefix()
        )
