"""Red team R11: a second look at R10's write rules for stored programs (ADR 0131).

Two directions: legitimate evidence (counts, sessions, promotions) that the rules must not lose,
and a hostile program (non-host writer, any role name through ``delegate``) abusing them. Each
spec names what it pins; those under a "break" class fail without the fix they name.
"""

from __future__ import annotations

import inspect
import json
import random
import subprocess
import sys
import textwrap
import threading
import warnings
from pathlib import Path
from typing import Any

import pytest

from recurgent import Agent, configure_runtime
from recurgent._store import Store, _pending, checksum
from recurgent._store._artifacts import ArtifactRecord
from recurgent._store._batch import RunsDelta
from recurgent._store._files import update_json
from recurgent._store._folding import apply_call
from recurgent._store._paths import artifact_path
from specs.store.support import (
    ScriptedModel,
    call,
    frozen,
    host_agent_without_a_model,
    version_state,
)

LATER = "2026-12-01T12:00:01.000Z"
OLD, NEW = "return 42", "return 43"


def _store(root: Path) -> Store:
    return Store(root, clock=frozen)


def _path(root: Path) -> Path:
    return artifact_path(root, "calculator", "answer")


def _data(root: Path) -> dict[str, Any]:
    return dict(json.loads(_path(root).read_text()))


def _regenerate_elsewhere(root: Path, code: str = NEW, **fields: Any) -> None:
    """Another host process regenerates the program (the old code stays a kept version)."""
    path = _path(root)
    record = ArtifactRecord.model_validate(json.loads(path.read_text()))
    new = apply_call(record, call(code=code, trace_id="other", **fields), now=LATER)
    path.write_text(json.dumps(new.to_json()))


def _cards(data: dict[str, Any]) -> dict[str, tuple[int, list[str]]]:
    return {
        code: (
            data["scorecards"][checksum(code)]["calls"],
            data["scorecards"][checksum(code)]["sessions"],
        )
        for code in (OLD, NEW)
        if checksum(code) in data["scorecards"]
    }


@pytest.fixture
def full_disk(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
    """The next ``failures["left"]`` batch writes fail as on a full disk, then writes work."""
    failures = {"left": 0}
    real = update_json

    def flaky(*args: Any, **kwargs: Any) -> Any:
        if failures["left"]:
            failures["left"] -= 1
            raise OSError(28, "No space left on device")
        return real(*args, **kwargs)

    monkeypatch.setattr(_pending, "update_json", flaky)
    warnings.simplefilter("ignore", RuntimeWarning)
    return failures


def _old_runs_put_back_behind_new_ones(tmp_path: Path) -> Store:
    """A store whose program another process regenerated: a run of the new code waits, and a
    batch of two runs of the old code whose flush failed is put back behind it."""
    store = _store(tmp_path / "store")
    store.record_call(call(code=OLD))
    _regenerate_elsewhere(store.root)
    store.record_call(call(code=NEW, source="persisted", trace_id="s2"))
    old = call(code=OLD, source="persisted", trace_id="s1")
    failed = RunsDelta.start(old, LATER)
    failed.add(old, LATER)
    _pending.RUNS.put_back(_path(store.root), store.root, failed)
    return store


class TestWaitingRunsOfAReplacedProgramAreNeverDropped:
    """Break: runs waiting for a program that another process replaced since were dropped
    when their own write failed (``_defer_run`` swallowed the error; a put-back batch that
    could not merge with the newer program's runs was discarded). They count in the totals
    and in the old version's scorecard, as any stale run does (ADR 0131, R10)."""

    def test_a_failed_write_of_the_replaced_batch_keeps_it_waiting(
        self, tmp_path: Path, full_disk: dict[str, int]
    ) -> None:
        """The host's run of the old code waits; another process regenerates; the disk is
        full for two writes (the flush, then the replaced batch's own write when the new
        code's run arrives): both runs are written afterwards (4 answers; each version two
        calls)."""
        store = _store(tmp_path / "store")
        store.record_call(call(code=OLD))
        store.record_call(call(code=OLD, source="persisted", trace_id="s1"))
        _regenerate_elsewhere(store.root)
        full_disk["left"] = 2

        assert store.flush() == 0
        store.record_call(call(code=NEW, source="persisted", trace_id="s2"))
        store.flush()

        data = _data(store.root)
        assert data["success_count"] == 4
        assert _cards(data) == {OLD: (2, ["trace-1", "s1"]), NEW: (2, ["other", "s2"])}
        assert _path(store.root) not in _pending.RUNS.pending()

    def test_a_long_chain_of_waiting_batches_is_written_without_recursion(
        self, tmp_path: Path
    ) -> None:
        """A disk that stayed full while two programs alternated leaves one waiting batch per
        alternation. 400 of them, with 200 frames of stack left, are written oldest first by
        a loop (the recursive write needed a frame per batch and raised RecursionError); the
        current code's runs land on its scorecard, the other's in the totals: 401 answers."""
        store = _store(tmp_path / "store")
        store.record_call(call(code=OLD))
        latest: RunsDelta | None = None
        for number in range(400):
            code = OLD if number % 2 else NEW
            delta = RunsDelta.start(call(code=code, source="persisted"), LATER)
            delta.add(call(code=code, source="persisted"), LATER)
            delta.earlier = latest
            latest = delta
        assert latest is not None
        limit = sys.getrecursionlimit()
        sys.setrecursionlimit(len(inspect.stack()) + 200)
        try:
            _pending.write_runs(_path(store.root), store.root, latest)
        finally:
            sys.setrecursionlimit(limit)

        data = _data(store.root)
        assert (data["success_count"], latest.earlier) == (401, None)
        assert {digest: card[0] for digest, card in _cards(data).items()} == {OLD: 201}

    def test_a_put_back_batch_waits_before_the_newer_programs_runs(self, tmp_path: Path) -> None:
        """A batch of the old code whose flush failed is put back while runs of the new code
        wait: the flush writes both (4 answers), each to its own version."""
        store = _old_runs_put_back_behind_new_ones(tmp_path)
        store.flush()

        data = _data(store.root)
        assert data["success_count"] == 4
        assert _cards(data) == {OLD: (2, ["trace-1", "s1"]), NEW: (2, ["other", "s2"])}

    def test_a_write_made_at_once_carries_both_batches(self, tmp_path: Path) -> None:
        """The same two batches wait; the new code's failure is written at once and carries
        both: 4 answers and 1 failure; the old version two calls, the new one three."""
        store = _old_runs_put_back_behind_new_ones(tmp_path)

        store.record_call(call(code=NEW, source="persisted", result="failure", trace_id="s3"))

        data = _data(store.root)
        assert (data["success_count"], data["failure_count"]) == (4, 1)
        assert _cards(data) == {OLD: (2, ["trace-1", "s1"]), NEW: (3, ["other", "s2", "s3"])}
        assert _path(store.root) not in _pending.RUNS.pending()


_EXITS_WITH_A_FULL_DISK = """
import json, sys, warnings
from pathlib import Path
sys.path.insert(0, {repo!r})
from recurgent._store import Store, _pending
from recurgent._store._artifacts import ArtifactRecord
from recurgent._store._files import update_json
from recurgent._store._folding import apply_call
from recurgent._store._paths import artifact_path
from specs.store.support import call, frozen

store = Store(Path({root!r}), clock=frozen)
path = artifact_path(store.root, "calculator", "answer")
store.record_call(call(code={old!r}))
store.record_call(call(code={old!r}, source="persisted", trace_id="s1"))
record = ArtifactRecord.model_validate(json.loads(path.read_text()))
newer = apply_call(record, call(code={new!r}, trace_id="other"), now={later!r})
path.write_text(json.dumps(newer.to_json()))
left = [2]

def flaky(*args, **kwargs):
    if left[0]:
        left[0] -= 1
        raise OSError(28, "No space left on device")
    return update_json(*args, **kwargs)

_pending.update_json = flaky
warnings.simplefilter("ignore")
store.flush()
store.record_call(call(code={new!r}, source="persisted", trace_id="s2"))
"""


@pytest.mark.slow
def test_a_process_exiting_writes_both_waiting_batches(tmp_path: Path) -> None:
    """Break (the same fix, through the exit flush of a real process): the disk is full for
    the flush and for the replaced batch's own write, then the process ends: its exit flush
    writes both batches (4 answers; each version two calls)."""
    root = tmp_path / "store"
    repo = str(Path(__file__).resolve().parents[2])
    script = _EXITS_WITH_A_FULL_DISK.format(
        repo=repo, root=str(root), old=OLD, new=NEW, later=LATER
    )

    child = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )

    data = _data(root)
    assert (child.returncode, child.stderr) == (0, "")
    assert data["success_count"] == 4
    assert _cards(data) == {OLD: (2, ["trace-1", "s1"]), NEW: (2, ["other", "s2"])}


#: Doubles its input; raises for a negative one (an intrinsic failure, then a repair).
DOUBLING = "if args[0] < 0:\n    raise ValueError('negative')\nreturn args[0] * 2"
TRIPLING = "return args[0] * 3"

_HOST_SESSION = """
import sys
sys.path.insert(0, {repo!r})
from pathlib import Path
from recurgent import Agent
from specs.store.support import ScriptedModel
provider = ScriptedModel({{("calculator", "run"): {code!r}}})
agent = Agent("calculator", provider=provider, toolstore_root=Path({root!r}), log=False,
              trace_id={trace!r})
for number in range(5):
    assert agent.run(number).value == number * 2
"""


def _host_session(root: Path, trace: str, replies: Any = DOUBLING) -> None:
    """The host's own agent answers 0..4 in one session (``trace``)."""
    provider = ScriptedModel({("calculator", "run"): replies})
    agent = Agent("calculator", provider=provider, toolstore_root=root, log=False, trace_id=trace)
    for number in range(5):
        assert agent.run(number).value == number * 2


def _artifact(root: Path, role: str = "calculator", method: str = "run") -> dict[str, Any]:
    Store(root).flush()
    return dict(json.loads(artifact_path(root, role, method).read_text()))


def _planner(root: Path, program: str, trace: str, calc: str | None = None) -> Agent:
    """A host agent whose generated program builds agents of its own with ``delegate``
    (``calc``: what the model writes for their ``calculator.run``, when asked)."""
    script: dict[tuple[str, str], Any] = {("planner", "go"): program}
    if calc is not None:
        script["calculator", "run"] = calc
    return Agent(
        "planner", provider=ScriptedModel(script), toolstore_root=root, log=False, trace_id=trace
    )


class TestHeld:
    """What R10's rules must not take from ordinary users, and what a hostile program still
    cannot do with them (real agents; each passes before and after R11's fix)."""

    @pytest.mark.slow
    def test_two_host_processes_make_one_program_durable(self, tmp_path: Path) -> None:
        """Two real host processes run the same program at the same time, five calls each in
        their own session: one generation, ten calls over two sessions, durable, the host's,
        the incumbent (ADR 0080's gate)."""
        root = tmp_path / "store"
        repo = str(Path(__file__).resolve().parents[2])
        children = [
            subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    textwrap.dedent(_HOST_SESSION).format(
                        repo=repo, code=DOUBLING, root=str(root), trace=trace
                    ),
                ],
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
            for trace in ("session-a", "session-b")
        ]
        ended = [(*child.communicate(timeout=120), child.returncode) for child in children]

        data = _artifact(root)
        assert ended == [("", "", 0)] * 2
        assert (data["success_count"], data["author"], len(data["history"])) == (10, "host", 1)
        assert version_state(data, DOUBLING) == (10, 0, ["session-a", "session-b"], "durable", True)

    def test_a_programs_agent_running_the_hosts_program_counts_for_it(self, tmp_path: Path) -> None:
        """A program's agent of the host's role runs the host's durable program twice: the
        host's version holds 12 calls over three sessions and stays the durable incumbent."""
        root = tmp_path / "store"
        _host_session(root, "session-a")
        _host_session(root, "session-b")
        program = "return [delegate('calculator').run(4), delegate('calculator').run(5)]"

        answered = _planner(root, program, "session-p", calc="return 0").go()

        data = _artifact(root)
        assert [outcome.value for outcome in answered.value] == [8, 10]
        assert (data["success_count"], data["author"]) == (12, "host")
        assert version_state(data, DOUBLING) == (
            12,
            0,
            ["session-a", "session-b", "session-p"],
            "durable",
            True,
        )

    def test_a_programs_failing_calls_never_unseat_the_hosts_incumbent(
        self, tmp_path: Path
    ) -> None:
        """A hostile program calls the host's durable program 24 times with input it fails on
        (its repairs are refused ``host_written``): the host's version keeps 10 calls, no
        failure, durable and incumbent, and its code stays current."""
        root = tmp_path / "store"
        _host_session(root, "session-a")
        _host_session(root, "session-b")
        program = "return [delegate('calculator').run(-1) for _ in range(8)]"

        for attempt in range(3):
            _planner(root, program, f"evil-{attempt}", calc="raise ValueError('x')").go()

        data = _artifact(root)
        assert (data["failure_count"], data["code_checksum"]) == (0, checksum(DOUBLING))
        assert version_state(data, DOUBLING) == (10, 0, ["session-a", "session-b"], "durable", True)

    def test_a_programs_failing_calls_count_for_nothing_when_the_provider_is_down(
        self, tmp_path: Path
    ) -> None:
        """R11's limit, closed by ADR 0132: the same hostile program, but its repair requests
        fail (the provider has no program for ``calculator.run``). Its 24 failing calls of the
        host's code are still not the host's evidence: 10 calls, no failure, durable, incumbent;
        each call ends with the provider's error and writes nothing (``host_written``)."""
        root = tmp_path / "store"
        _host_session(root, "session-a")
        _host_session(root, "session-b")
        program = "return [delegate('calculator').run(-1) for _ in range(8)]"

        answers = [_planner(root, program, f"evil-{attempt}").go().value for attempt in range(2)]
        log = tmp_path / "calls.jsonl"
        script = ScriptedModel({("planner", "go"): program})
        logged = Agent("planner", provider=script, toolstore_root=root, log=log, trace_id="evil-2")
        answers.append(logged.go().value)

        data = _artifact(root)
        lines = [json.loads(line) for line in log.read_text().splitlines()]
        assert {(o.status, o.error_type) for outcomes in answers for o in outcomes} == {
            ("error", "provider")
        }
        assert [line["artifact_write"] for line in lines if line["role"] == "calculator"] == [
            "host_written"
        ] * 8
        assert (data["failure_count"], data["code_checksum"]) == (0, checksum(DOUBLING))
        assert version_state(data, DOUBLING) == (10, 0, ["session-a", "session-b"], "durable", True)

    def test_the_hosts_own_failing_call_counts_when_the_provider_is_down(
        self, tmp_path: Path
    ) -> None:
        """The control: the host's own call of its program fails, and the repair request fails
        too: that failure is the host's evidence (11 calls, one failure)."""
        root = tmp_path / "store"
        _host_session(root, "session-a")
        _host_session(root, "session-b")
        agent = host_agent_without_a_model(root, "session-c")

        failed = agent.run(-1)

        data = _artifact(root)
        assert (failed.status, failed.error_type) == ("error", "provider")
        assert data["failure_count"] == 1
        assert version_state(data, DOUBLING)[:2] == (11, 1)

    def test_enforcement_keeps_counting_the_incumbent_after_a_repair(self, tmp_path: Path) -> None:
        """Under enforcement the host's durable version fails once and is repaired: the repair
        is current (probation, one call), the incumbent keeps running for the host and for a
        program's agent and holds every other call (17 calls, one failure, four sessions)."""
        configure_runtime(promotion_enforcement_enabled=True)
        root = tmp_path / "store"
        _host_session(root, "session-a")
        _host_session(root, "session-b")
        provider = ScriptedModel({("calculator", "run"): TRIPLING})
        agent = Agent(
            "calculator", provider=provider, toolstore_root=root, log=False, trace_id="session-c"
        )

        repaired = agent.run(-1).value
        answers = [agent.run(number).value for number in range(4)]
        program = "return [delegate('calculator').run(4), delegate('calculator').run(5)]"
        delegated = [o.value for o in _planner(root, program, "session-p").go().value]

        data = _artifact(root)
        assert (repaired, answers, delegated) == (-3, [0, 2, 4, 6], [8, 10])
        assert data["code_checksum"] == checksum(TRIPLING)
        assert version_state(data, TRIPLING) == (1, 0, ["session-c"], "probation", False)
        assert version_state(data, DOUBLING) == (
            17,
            1,
            ["session-a", "session-b", "session-c", "session-p"],
            "durable",
            True,
        )


def test_threads_alternating_two_kept_programs_lose_no_run_to_failed_writes(
    tmp_path: Path, full_disk: dict[str, int], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Break (the same fix, under threads): four threads run two kept versions of one
    program in turn (400 runs), flushing now and then, while two writes in five fail; once the
    disk is back a flush writes the rest. Every run is counted once: 402 answers, 402 calls
    over the two versions' scorecards (before the fix about a third were lost)."""
    store = _store(tmp_path / "store")
    store.record_call(call(code=OLD))
    store.record_call(call(code=NEW))
    draws = random.Random(7)
    failing = [True]

    def flaky(*args: Any, **kwargs: Any) -> Any:
        if failing[0] and draws.random() < 0.4:
            raise OSError(28, "No space left on device")
        return update_json(*args, **kwargs)

    monkeypatch.setattr(_pending, "update_json", flaky)

    def runs(seed: int) -> None:
        choices = random.Random(seed)
        for _ in range(100):
            code = choices.choice((OLD, NEW))
            store.record_call(call(code=code, source="persisted", trace_id=f"t{seed}"))
            if choices.random() < 0.1:
                store.flush()

    threads = [threading.Thread(target=runs, args=(seed,)) for seed in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    failing[0] = False
    store.flush()

    data = _data(store.root)
    calls = sum(card["calls"] for card in data["scorecards"].values())
    assert (data["success_count"], data["failure_count"], calls) == (402, 0, 402)
