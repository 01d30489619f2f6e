"""Red team R8: a stored program's steady state (ADR 0130) attacked through its memos.

The memos attacked: the store's verdict per artifact path (``Store._verdicts``), the per-record
``Ready`` of the persistence step (``_persistence._READY``), one ``Reader`` per test-double
fingerprint, and the answered run folded into the batch without a per-call record. The threat
model: store files are untrusted; a test double's program never runs for a model's agent, nor
a model's for a double's (ADR 0077); only host-written programs answer the host (ADR 0074); a
change on disk (another process, tampering, quarantine, ``tools forget``, ``set-lifecycle``)
is seen at the next lookup; a record changed in memory never runs.

Payloads tried, and what happened (BROKEN = failed before the fix of this round):

1. BROKEN, fixed: under promotion enforcement the record a lookup returns may be a kept
   version (a view of the cached record, not the record itself). The verdict memo checked only
   the cached record's code, so a kept version whose code was changed in memory after its
   verdict was served again as ``hit``; once the ``Ready`` entry of that view was evicted (256
   other stored programs ran), the changed code ran. The memo now also holds the returned
   record's code and serves the verdict only while it is the same object (one attribute read
   and one ``is`` per steady lookup). Store level and end to end below.
2. Held: two readers on one store alternating (a model's agent, the double that wrote the
   program, a double with another script, ``None``): each gets its own verdict, memo warm.
3. Held: two agents in one process sharing a root, a double and a model, interleaved: neither
   ever runs the other's program; the double never replaces the model's (``model_written``).
   Two doubles with different scripts, interleaved: each runs only its own script's program.
4. Held: ``host_call`` alternating True/False on one store: a program-written record never
   answers the host's call however warm the memo.
5. Held: the contract fingerprint alternating, and enforcement on/off interleaved on one
   store: each input gets its own verdict and its own choice.
6. Held: the file replaced by rename within the same second with the same size (its mtime set
   back to the old one): the inode differs, so the next lookup reads the new file.
7. Held (limit of ADR 0054, not of the memo): the file rewritten in place with the same size
   and its mtime set back (same inode, same stat identity) is not seen; the code that then
   runs is still the verified code read before, never the tampered bytes. Noted in the report.
8. Held: ``tools forget``, ``set-lifecycle degraded`` (enforcement rolls forward to the other
   version, the log names the version and state that ran) and a tampered file renamed in by
   another process, each after a warm memo: seen at the next call.
9. Held: an id reused by a new record: a ``Ready`` entry left at that id for another record
   is never served to the new one. (Since then ``Ready`` entries are keyed by the agent's
   store and method, ADR 0130; the spec pins the same rule for an entry holding another
   record.)
10. Held: two threads looking up while a third alternates the file between a host-written and
    a program-written program: no lookup ever answers the host with the program-written code.
11. Held: a forked child inherits the parent's warm memo; a change the child makes is seen by
    the child's next lookup.
12. Held: promotion gate counts, sessions, windows and ledgers written through the steady step
    equal those of the general recording step for a mixed sequence (generations, persisted
    runs over three sessions, a repair, domain errors, contract checks, enforcement running a
    kept version), time frozen. Also compared outside the suite: the artifact files and
    normalised log lines written by main at eff0477 and at this branch's base for the same
    scripted sequence (plus ``Agent.map`` and ``isolation="process"``) are identical.
13. BROKEN, fixed (in the cached path since ADR 0054, not new with the memo): two role names
    whose path segments collide (``Calc.$@/`` and ``Calc/^?+``: the same cleaned text and the
    same 8 hex digits of hash, found by a birthday search in under a second; a name colliding
    with a given role takes about 2**32 hashes offline, and hostile text may carry one). While
    one role's record was cached, a lookup for the other was served from the cache with no key
    check: the host's program ran for the other role with no request, and its runs, folded
    into the same file, renamed the record's role, so the first role's agent met
    ``key_mismatch`` on every later call and asked its provider every time. A cached record
    now answers only its own (role, method), as a read file does; the memo's inputs carry both
    (two more items compared per steady lookup).
"""

from __future__ import annotations

import io
import json
import os
import re
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from recurgent import Agent, configure_runtime
from recurgent._lifecycle import _persistence, _recording
from recurgent._store import Store, checksum
from recurgent._store._artifacts import ArtifactRecord
from recurgent._store._cli import main as tools
from recurgent._store._files import write_json
from recurgent._store._folding import apply_call
from recurgent._store._paths import artifact_path
from recurgent._store._promotion import apply_override
from recurgent._store._provenance import Provenance, Reader
from recurgent.testing import ScriptedProvider, read_log
from specs.store.support import ScriptedModel, call, past_the_recheck_window

STAMPS = [f"2026-12-01T12:00:{second:02d}.000Z" for second in range(60)]
#: Doubles its input; raises for a negative one (an intrinsic failure, repaired).
DOUBLE = "if args[0] < 0:\n    raise ValueError('negative')\nreturn args[0] * 2"
#: What the repair writes: triples, never raises.
TRIPLE = "return args[0] * 3"
EVIL = "return 666"


def _tools(*argv: str) -> int:
    return tools(list(argv), out=io.StringIO(), err=io.StringIO())


def _planted(root: Path, record: ArtifactRecord) -> Path:
    path = artifact_path(root, "calculator", "answer")
    write_json(path, record.to_json(), root=root)
    return path


def _durable_then_newer() -> ArtifactRecord:
    """``return 1`` made durable by hand, then ``return 2`` generated (probation)."""
    record = apply_call(None, call("return 1"), now=STAMPS[0])
    apply_override(record, checksum("return 1"), "durable", actor="a", reason=None, now=STAMPS[1])
    return apply_call(record, call("return 2"), now=STAMPS[2])


def _look(store: Store, **inputs: Any) -> Any:
    asked: dict[str, Any] = {
        "contract_fingerprint": "none",
        "runtime_version": "0.1.0",
        "host_call": True,
    }
    asked.update(inputs)
    return store.lookup("calculator", "answer", **asked)


def _calculator(root: Path, replies: Any, **options: Any) -> tuple[Agent, ScriptedProvider]:
    provider = ScriptedModel({("calculator", "run"): replies})
    options.setdefault("log", False)
    return Agent("calculator", provider=provider, toolstore_root=root, **options), provider


def _durable_double_repaired(root: Path) -> None:
    """DOUBLE answered 10 times over two sessions (durable), then a negative input repaired
    into TRIPLE (the current code, on probation)."""
    for trace in ("session-a", "session-b"):
        agent, _ = _calculator(root, DOUBLE, trace_id=trace)
        for number in range(5):
            assert agent.run(number).value == number * 2
    agent, _ = _calculator(root, [TRIPLE], trace_id="session-c")
    assert agent.run(-1).value == -3


def _evict_ready() -> None:
    """256 other stored programs ran in this process: every older ``Ready`` entry is gone."""
    elsewhere = Store(Path("/nonexistent-store"))
    for number in range(_persistence._READY_KEPT):
        method = f"run{number}"
        other = ArtifactRecord(role="other", method_name=method, code=f"return {number}")
        _persistence._ready(other, elsewhere, method)


class TestAKeptVersionChangedInMemory:
    """Payload 1 (broken before this round): enforcement's chosen version, changed in memory."""

    def test_the_store_never_serves_the_changed_version_again(self, tmp_path: Path) -> None:
        """Three enforced lookups (the third served by the memo), the kept durable version's
        code changed in memory: the next lookup verifies it again, finds the checksum wrong
        and falls to the next choice, as every lookup did before the memo."""
        store = Store(_planted(tmp_path / "store", _durable_then_newer()).parents[2])
        _look(store, enforce=True)
        _look(store, enforce=True)
        chosen = _look(store, enforce=True)
        assert (chosen.reason, chosen.record.code) == ("hit", "return 1")

        chosen.record.code = EVIL
        after = _look(store, enforce=True)

        assert (after is chosen, after.reason, after.record.code) == (False, "hit", "return 2")

    def test_the_changed_code_never_runs(self, tmp_path: Path) -> None:
        """End to end: an enforced agent runs the durable DOUBLE from a warm memo; the view it
        runs is changed in memory and its prepared program evicted: the next call runs TRIPLE
        (the other kept choice), never the changed code."""
        root = tmp_path / "store"
        _durable_double_repaired(root)
        configure_runtime(promotion_enforcement_enabled=True)
        agent, provider = _calculator(root, [])
        assert [agent.run(5).value for _ in range(3)] == [10, 10, 10]
        store = agent._runtime().store
        assert store is not None
        served = store.lookup(
            "calculator",
            "run",
            contract_fingerprint=_persistence._NO_CONTRACT,
            runtime_version=_persistence.runtime_version(),
            host_call=True,
            enforce=True,
            reader=Reader(),
        )
        view = served.record
        assert view is not None
        assert (served.reason, view.code) == ("hit", DOUBLE)

        view.code = EVIL
        _evict_ready()
        outcome = agent.run(5)

        assert (outcome.value, provider.calls) == (15, 0)


class TestReadersAndInputsShareNoVerdict:
    """Payloads 2-5: every input of a lookup has its own verdict, however warm the memo."""

    def test_readers_alternating_on_one_store(self, tmp_path: Path) -> None:
        """A double-written program: its double hits; a model's agent, ``None`` and a double
        with another script are refused; three rounds, the same answers."""
        written = Provenance(provider_kind="test_double:ScriptedProvider", double_fingerprint="f")
        record = apply_call(None, call(provenance=written), now=STAMPS[0])
        store = Store(_planted(tmp_path / "store", record).parents[2])
        readers = [Reader(), Reader(test_double=True, fingerprint="f"), None]
        readers.append(Reader(test_double=True, fingerprint="g"))

        rounds = [[_look(store, reader=reader).reason for reader in readers] for _ in range(3)]

        assert (
            rounds == [["test_double_written", "hit", "test_double_written", "script_changed"]] * 3
        )

    def test_a_double_and_a_model_interleaved_on_one_root(self, tmp_path: Path) -> None:
        """The double's program never answers the model's agent, the model's never answers the
        double's, and the double never replaces the model's program."""
        root = tmp_path / "store"
        double = ScriptedProvider({("calculator", "run"): TRIPLE})
        model = ScriptedModel({("calculator", "run"): "return args[0] * 2"})
        as_double = Agent("calculator", provider=double, toolstore_root=root, log=False)
        as_model = Agent("calculator", provider=model, toolstore_root=root, log=False)

        values = [as_double.run(n).value for n in (1, 2, 3)]
        values += [as_model.run(n).value for n in (1, 2, 3)]
        values += [as_double.run(n).value for n in (4, 5)]
        values += [as_model.run(4).value]
        Store(root).flush()
        stored = json.loads(artifact_path(root, "calculator", "run").read_text("utf-8"))

        assert values == [3, 6, 9, 2, 4, 6, 12, 15, 8]
        assert (double.calls, model.calls) == (3, 1)
        assert (stored["code"], stored["provenance"]["provider_kind"]) == (
            "return args[0] * 2",
            "custom:specs.store.support.ScriptedModel",
        )

    def test_two_doubles_with_different_scripts_interleaved(self, tmp_path: Path) -> None:
        """Each double runs only a program its own script wrote: the other's stored program is
        ``script_changed`` and regenerated, however warm either agent's memo."""
        root = tmp_path / "store"
        first = ScriptedProvider({("calculator", "run"): TRIPLE})
        second = ScriptedProvider({("calculator", "run"): "return args[0] * 5"})
        one = Agent("calculator", provider=first, toolstore_root=root, log=False)
        two = Agent("calculator", provider=second, toolstore_root=root, log=False)

        values = [one.run(1).value, one.run(2).value, one.run(3).value]
        values += [two.run(1).value, two.run(2).value, one.run(4).value, two.run(3).value]

        assert values == [3, 6, 9, 5, 10, 12, 15]
        assert (first.calls, second.calls) == (2, 2)

    def test_host_call_contract_and_enforcement_alternating(self, tmp_path: Path) -> None:
        """A program-written record: host calls refused, program calls hit; a newer probation
        version over a durable one: enforcement on runs the durable one, off the newer; another
        contract is refused; each three rounds on one store."""
        programs = Store(
            _planted(
                tmp_path / "a", apply_call(None, call(author="program"), now=STAMPS[0])
            ).parents[2]
        )
        versions = Store(_planted(tmp_path / "b", _durable_then_newer()).parents[2])
        seen = []
        for _ in range(3):
            seen.append(
                (
                    _look(programs, host_call=True).reason,
                    _look(programs, host_call=False).reason,
                    _look(versions, enforce=True).record.code,
                    _look(versions, enforce=False).record.code,
                    _look(versions, contract_fingerprint="sha256:other").reason,
                )
            )

        assert seen == [("program_written", "hit", "return 1", "return 2", "contract_mismatch")] * 3


def _rewrite(path: Path, code: str, *, in_place: bool, fix_checksum: bool = True) -> None:
    """Replace ``return 42`` by ``code`` (as long) another process's way: a new file renamed
    over it, or the same file rewritten; its mtime then set back to the old one (the same
    second). ``fix_checksum=False``: only the current code changes, its checksum is left."""
    before = os.stat(path)
    text = path.read_text("utf-8")
    if fix_checksum:
        text = text.replace('"return 42"', json.dumps(code))
        text = text.replace(checksum("return 42"), checksum(code))
    else:
        text = text.replace('"return 42"', json.dumps(code), 1)  # the top-level code comes first
    assert len(text.encode()) == before.st_size
    if in_place:
        with open(path, "r+", encoding="utf-8") as handle:
            handle.write(text)
    else:
        temp = path.with_name(path.name + ".other")
        temp.write_text(text, "utf-8")
        os.chmod(temp, 0o600)
        os.replace(temp, path)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))


class TestChangesOnDiskThroughAWarmMemo:
    """Payloads 6-8: what another process does to the file is seen at the next lookup."""

    def test_a_same_size_replacement_in_the_same_second_is_seen(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Renamed in with the old mtime and size: the inode differs, the new code answers once
        the recheck window has passed (ADR 0138)."""
        path = _planted(tmp_path / "store", apply_call(None, call(), now=STAMPS[0]))
        store = Store(path.parents[2])
        warm = [_look(store).record.code for _ in range(3)]

        _rewrite(path, "return 41", in_place=False)
        past_the_recheck_window(monkeypatch)
        found = _look(store)

        assert (warm, found.reason, found.record.code) == (["return 42"] * 3, "hit", "return 41")

    def test_an_in_place_rewrite_with_its_stat_kept_never_runs_its_bytes(
        self, tmp_path: Path
    ) -> None:
        """Rewritten in place (same inode), same size, mtime set back, checksum left wrong: the
        stat identity is the one cached, so the verified record read before still answers;
        the tampered code is never what a lookup returns."""
        path = _planted(tmp_path / "store", apply_call(None, call(), now=STAMPS[0]))
        store = Store(path.parents[2])
        [_look(store) for _ in range(3)]

        _rewrite(path, "return 66", in_place=True, fix_checksum=False)
        found = _look(store)

        assert (found.reason, found.record.code) == ("hit", "return 42")
        assert json.loads(path.read_text("utf-8"))["code"] == "return 66"

    def test_forget_after_a_warm_memo(self, tmp_path: Path) -> None:
        """``tools forget`` between two calls: the next call asks the provider again."""
        root = tmp_path / "store"
        agent, provider = _calculator(root, TRIPLE)
        assert [agent.run(n).value for n in (1, 2, 3)] == [3, 6, 9]

        assert _tools("forget", "calculator", "run", "--root", str(root)) == 0
        assert (agent.run(4).value, provider.calls) == (12, 2)

    def test_set_lifecycle_degraded_after_a_warm_memo(self, tmp_path: Path, log_path: Path) -> None:
        """Enforcement runs the durable DOUBLE three times; a maintainer degrades it: the same
        agent's next call runs TRIPLE, and its log line names TRIPLE and its state."""
        root = tmp_path / "store"
        _durable_double_repaired(root)
        configure_runtime(promotion_enforcement_enabled=True)
        agent, provider = _calculator(root, [], log=log_path)
        assert [agent.run(5).value for _ in range(3)] == [10, 10, 10]

        digest = checksum(DOUBLE)
        assert (
            _tools("set-lifecycle", "calculator", "run", digest, "degraded", "--root", str(root))
            == 0
        )
        outcome = agent.run(5)

        entry = read_log(log_path)[-1]
        assert (outcome.value, provider.calls) == (15, 0)
        assert (
            entry["artifact_selected_checksum"],
            entry["artifact_selected_lifecycle_state"],
        ) == (
            checksum(TRIPLE),
            "probation",
        )

    def test_a_tampered_file_renamed_in_after_a_warm_memo(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Another process renames in a file whose code does not match its checksum: the first
        lookup after the recheck window quarantines it and never returns its code as a hit."""
        path = _planted(tmp_path / "store", apply_call(None, call(), now=STAMPS[0]))
        store = Store(path.parents[2])
        [_look(store) for _ in range(3)]

        _rewrite(path, "return 66", in_place=False, fix_checksum=False)
        past_the_recheck_window(monkeypatch)
        found = _look(store)

        assert (found.reason, found.quarantined_to is not None, path.exists()) == (
            "checksum_mismatch",
            True,
            False,
        )


class TestIdentityRacesAndForks:
    """Payloads 9-11."""

    def test_a_ready_entry_for_another_record_is_never_served(self) -> None:
        """The entry of a store and method holds another record (the record read before, or
        one of a store freed since whose id a new store got): it is rebuilt for the record
        the lookup handed out."""
        store = Store(Path("/nonexistent-store"))
        old = ArtifactRecord(role="calculator", method_name="run", code="return 1")
        new = ArtifactRecord(role="calculator", method_name="run", code="return 2")
        _persistence._ready(old, store, "run")

        ready = _persistence._ready(new, store, "run")

        assert (ready.record is new, _persistence._prepare_record(ready).program.code) == (
            True,
            "return 2",
        )

    def test_threads_never_answer_the_host_with_a_program_written_file(
        self, tmp_path: Path
    ) -> None:
        """Two threads look up with ``host_call`` while a third renames in, in turn, a
        host-written and a program-written program: every hit is the host's code."""
        root = tmp_path / "store"
        path = _planted(root, apply_call(None, call("return 1"), now=STAMPS[0]))
        texts = [path.read_bytes()]
        program = apply_call(None, call("return 2", author="program"), now=STAMPS[0])
        texts.append(json.dumps(program.to_json()).encode())
        store = Store(root)
        done = threading.Event()
        seen: list[tuple[str, str | None]] = []

        def swap() -> None:
            turn = 0
            while not done.is_set():
                temp = path.with_name(f"{path.name}.{turn}")
                temp.write_bytes(texts[turn % 2])
                os.chmod(temp, 0o600)
                os.replace(temp, path)
                turn += 1

        def look() -> None:
            for _ in range(300):
                found = _look(store)
                seen.append((found.reason, found.record.code if found.record else None))

        swapper = threading.Thread(target=swap)
        lookers = [threading.Thread(target=look) for _ in range(2)]
        swapper.start()
        for thread in lookers:
            thread.start()
        for thread in lookers:
            thread.join()
        done.set()
        swapper.join()

        allowed = {("hit", "return 1"), ("program_written", "return 2")}
        assert (len(seen), set(seen) - allowed) == (600, set())

    @pytest.mark.skipif(not hasattr(os, "fork"), reason="fork")
    def test_a_forked_child_sees_its_own_change(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The parent's memo is warm on a host-written program; the forked child renames in a
        program-written one: the child's next host lookup refuses it at once (its own write),
        the parent's once the recheck window has passed (another process's; ADR 0138)."""
        root = tmp_path / "store"
        path = _planted(root, apply_call(None, call("return 1"), now=STAMPS[0]))
        store = Store(root)
        [_look(store) for _ in range(3)]
        report = tmp_path / "child.txt"
        program = apply_call(None, call("return 2", author="program"), now=STAMPS[0])

        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            try:
                write_json(path, program.to_json(), root=root)
                report.write_text(_look(store).reason, "utf-8")
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        past_the_recheck_window(monkeypatch)

        assert (report.read_text("utf-8"), _look(store).reason) == (
            "program_written",
            "program_written",
        )


FROZEN_NS = 1_796_126_400_123_000_000  # 2026-12-01T12:00:00.123Z
CHECKED = (
    "if args[0] == 0:\n"
    "    return Outcome.error(error_type='division_by_zero', error_message='zero')\n"
    "return 100 // args[0]"
)


def _mixed_sequence(root: Path) -> dict[str, Any]:
    """Generations, persisted runs over three sessions, a repair, domain errors, contract
    checks and enforcement running a kept version; every artifact as written, random ids and
    durations blanked."""
    _durable_double_repaired(root)
    agent, _ = _calculator(root, [], trace_id="session-d")
    [agent.run(n) for n in range(3)]
    configure_runtime(promotion_enforcement_enabled=True)
    agent, _ = _calculator(root, [], trace_id="session-e")
    [agent.run(n) for n in range(4)]
    configure_runtime(promotion_enforcement_enabled=False)
    provider = ScriptedModel({("divider", "divide"): CHECKED})
    divider = Agent(
        "divider",
        provider=provider,
        toolstore_root=root,
        log=False,
        trace_id="session-f",
        purpose="divide 100",
        deliverable={"type": "integer"},
    )
    [divider.divide(n) for n in (5, 0, 4, 0, 10)]
    Store(root).flush()
    found = {}
    for path in sorted((root / "artifacts").rglob("*.json")):
        text = re.sub(r"gen-[0-9a-f]+", "gen-x", path.read_text("utf-8"))
        text = re.sub(r'("last_duration_ms":\s*)[0-9.]+', r"\g<1>0", text)
        found[path.parent.name.split("-")[0]] = json.loads(text)
    return found


class TestTheSteadyStepCountsAsTheGeneralStep:
    """Payload 12: the promotion gate's inputs are the same through either step."""

    def test_a_mixed_sequence_writes_the_same_artifacts(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The same sequence, time frozen, once as it runs and once with every call recorded
        by the general step: the artifacts are equal (calls, successes, sessions, contract
        counts, windows, ledgers, versions)."""
        monkeypatch.setattr(time, "time_ns", lambda: FROZEN_NS)
        monkeypatch.setattr("recurgent._store._pending.FLUSH_AFTER_SECONDS", 1e9)
        steady = _mixed_sequence(tmp_path / "steady")
        general_record = _recording.record

        def general(runtime: Any, state: Any) -> None:
            state.stored_program = None
            general_record(runtime, state)

        monkeypatch.setattr(_recording, "record", general)
        general_found = _mixed_sequence(tmp_path / "general")

        calc = steady["calculator"]["scorecards"]
        assert (len(steady), sorted(calc[checksum(DOUBLE)]["sessions"])) == (
            2,
            ["session-a", "session-b", "session-c", "session-e"],
        )
        assert steady == general_found


#: Two role names with the same path segment (cleaned text ``calc``, hash prefix ``abd5aac7``).
VICTIM, COLLIDER = "Calc.$@/", "Calc/^?+"


class TestACollidingKey:
    """Payload 13 (broken before this round): a cached record for another (role, method)."""

    def test_a_cached_record_answers_only_its_own_key(self, tmp_path: Path) -> None:
        """The victim's program is cached; the colliding role asks its own provider every
        time (its program is never stored over the victim's), and the victim's program keeps
        its key and answers with no further request."""
        root = tmp_path / "store"
        assert artifact_path(root, VICTIM, "run") == artifact_path(root, COLLIDER, "run")
        mine = ScriptedModel({(VICTIM, "run"): "return args[0] * 2"})
        theirs = ScriptedModel({(COLLIDER, "run"): "return args[0] + 1000"})
        victim = Agent(VICTIM, provider=mine, toolstore_root=root, log=False)
        collider = Agent(COLLIDER, provider=theirs, toolstore_root=root, log=False)

        before = [victim.run(n).value for n in (1, 2, 3)]
        collided = [collider.run(n).value for n in (1, 2)]
        Store(root).flush()
        after = [victim.run(n).value for n in (4, 5, 6)]
        Store(root).flush()
        stored = json.loads(artifact_path(root, VICTIM, "run").read_text("utf-8"))

        assert (before, collided, after) == ([2, 4, 6], [1001, 1002], [8, 10, 12])
        assert (mine.calls, theirs.calls, stored["role"]) == (1, 2, VICTIM)
