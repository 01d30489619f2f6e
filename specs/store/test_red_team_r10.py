"""Red team R10: the write rules of stored programs (ADR 0131).

Runs of one program may be counted only for that program: never for another role's, the
host's, or a model's when a test double ran them, whichever way they reach the file (a flush,
a write carrying waiting runs, a delta put back after a failed flush). Each payload is what
another process sharing the root (or a hostile program choosing a role name through
``delegate``) can arrange; each spec fails without the fix it names.
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from recurgent import Agent
from recurgent._store import Store, _pending, checksum
from recurgent._store._artifacts import ArtifactRecord
from recurgent._store._batch import RunsDelta
from recurgent._store._folding import apply_call
from recurgent._store._paths import artifact_path
from recurgent._store._promotion import promotion_mode
from recurgent._store._provenance import Provenance, Reader
from specs.store.support import ScriptedModel, call, frozen, host_lookup

NOW = "2026-12-01T12:00:00.123Z"
DOUBLE = Provenance(provider_kind="test_double:ScriptedProvider", double_fingerprint="sha256:a")
MODEL = Provenance(provider_kind="openai", model="gpt-4.1-mini-2025-04-14", prompt_version="p1")
#: Two role names whose path segments collide (red team R8's birthday search).
VICTIM, COLLIDER = "Calc.$@/", "Calc/^?+"
CODE = "return 42"


def _store(root: Path) -> Store:
    return Store(root, clock=frozen)


def _path(root: Path, role: str = "calculator") -> Path:
    return artifact_path(root, role, "answer")


def _data(root: Path, role: str = "calculator") -> dict[str, Any]:
    return dict(json.loads(_path(root, role).read_text()))


def _plant(root: Path, role: str = "calculator", **fields: Any) -> None:
    """Another process writes a fresh record (one generation) at the path of ``role``."""
    path = _path(root, role)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(apply_call(None, call(role=role, **fields), now=NOW).to_json()))


def _totals(data: dict[str, Any]) -> tuple[int, int, list[str]]:
    card = data["scorecards"][checksum(CODE)]
    return data["success_count"], card["calls"], card["sessions"]


class TestOneBatchHoldsOneWritersRuns:
    """A batch is checked as its latest run: runs of the same code by another writer folded
    into it would be written under that writer's name."""

    def test_a_doubles_runs_never_ride_a_models_run_of_the_same_code(self, tmp_path: Path) -> None:
        """A double's run waits; a model writes the same code; a model's run of it follows:
        the flush counts the model's run only (one generation, one run, its two sessions)."""
        store = _store(tmp_path / "store")
        store.record_call(call(provenance=DOUBLE))
        store.record_call(call(source="persisted", provenance=DOUBLE, trace_id="double-1"))
        _plant(store.root, provenance=MODEL)
        store.record_call(call(source="persisted", provenance=MODEL, trace_id="model-1"))

        store.flush()

        assert _totals(_data(store.root)) == (2, 2, ["trace-1", "model-1"])

    def test_a_colliding_roles_runs_never_ride_its_own(self, tmp_path: Path) -> None:
        """The victim's runs wait; the path now holds the colliding role's record of the same
        code; the colliding role's run follows: only its own run counts for it."""
        store = _store(tmp_path / "store")
        store.record_call(call(role=VICTIM))
        store.record_call(call(role=VICTIM, source="persisted", trace_id="victim-1"))
        _plant(store.root, role=COLLIDER)
        store.record_call(call(role=COLLIDER, source="persisted", trace_id="collider-1"))

        store.flush()

        data = _data(store.root, COLLIDER)
        assert (data["role"], _totals(data)) == (COLLIDER, (2, 2, ["trace-1", "collider-1"]))

    def test_a_programs_runs_never_ride_the_hosts(self, tmp_path: Path) -> None:
        """A program's runs wait; the host's agent wrote the same code since and ran it: the
        host's version is credited with the host's run only."""
        store = _store(tmp_path / "store")
        store.record_call(call(author="program"))
        store.record_call(call(source="persisted", author="program", trace_id="program-1"))
        _plant(store.root, author="host")
        store.record_call(call(source="persisted", author="host", trace_id="host-1"))

        store.flush()

        assert _totals(_data(store.root)) == (2, 2, ["trace-1", "host-1"])

    def test_a_batch_put_back_never_merges_another_writers_runs(self, tmp_path: Path) -> None:
        """A double's batch whose write failed goes back into the table, where a model's run of
        the same code waits: the flush counts the model's run only."""
        store = _store(tmp_path / "store")
        _plant(store.root, provenance=MODEL)
        store.record_call(call(source="persisted", provenance=MODEL, trace_id="model-1"))
        doubles = call(source="persisted", provenance=DOUBLE, trace_id="double-1")
        failed = RunsDelta.start(doubles, NOW)
        failed.add(doubles, NOW)

        _pending.RUNS.put_back(_path(store.root), store.root, failed)
        store.flush()

        assert _totals(_data(store.root)) == (2, 2, ["trace-1", "model-1"])


class TestAWriteCarriesOnlyRunsItMay:
    """A write made at once carries the runs waiting for its file: they pass the same rules
    as a flush of them would, and a refused write loses none of them."""

    def test_a_models_failure_never_carries_a_doubles_runs(self, tmp_path: Path) -> None:
        """A double's run waits; a model wrote the same code; the model's run of it fails: the
        write counts the failure, never the double's answer."""
        store = _store(tmp_path / "store")
        store.record_call(call(provenance=DOUBLE))
        store.record_call(call(source="persisted", provenance=DOUBLE, trace_id="double-1"))
        _plant(store.root, provenance=MODEL)

        written = store.record_call(
            call(source="persisted", provenance=MODEL, result="failure", trace_id="model-1")
        )

        data = _data(store.root)
        assert written.written is True
        assert (data["success_count"], data["failure_count"], _totals(data)) == (
            1,
            1,
            (1, 2, ["trace-1", "model-1"]),
        )

    def test_a_refused_write_still_writes_the_waiting_runs(self, tmp_path: Path) -> None:
        """A model's runs wait; a double in the same process writes a program at that path and
        is refused (model_written): the model's runs are written at once, on their own, and
        nothing is left waiting."""
        store = _store(tmp_path / "store")
        store.record_call(call(provenance=MODEL))
        store.record_call(call(source="persisted", provenance=MODEL, trace_id="model-1"))

        refused = store.record_call(call(code="return 7", provenance=DOUBLE))

        data = _data(store.root)
        waiting = _path(store.root) in _pending.RUNS.pending()
        assert (refused.reason, data["code"], _totals(data), waiting) == (
            "model_written",
            CODE,
            (2, 2, ["trace-1", "model-1"]),
            False,
        )

    def test_a_colliding_roles_refused_write_keeps_the_victims_runs(self, tmp_path: Path) -> None:
        """The victim's runs wait; the colliding role's new program is refused (key_mismatch):
        the victim's runs are still written."""
        store = _store(tmp_path / "store")
        store.record_call(call(role=VICTIM))
        store.record_call(call(role=VICTIM, source="persisted", trace_id="victim-1"))

        refused = store.record_call(call(role=COLLIDER, code="return 7"))
        store.flush()

        data = _data(store.root, VICTIM)
        assert (refused.reason, data["role"], _totals(data)) == (
            "key_mismatch",
            VICTIM,
            (2, 2, ["trace-1", "victim-1"]),
        )


class TestAVersionsEvidenceIsItsWritersOwn:
    """A version's scorecard and lifecycle state are evidence about the program one writer
    wrote: a model that writes the code a test double's script had starts with none."""

    def test_a_model_writing_a_doubles_code_inherits_no_evidence(self, tmp_path: Path) -> None:
        """A double's program earns durable (10 calls, 2 sessions); a model writes the same
        code: its version has the model's one call and is on probation, as a new program is; no
        version is the incumbent."""
        store = _store(tmp_path / "store")
        store.record_call(call(provenance=DOUBLE, trace_id="double-0"))
        for n in range(9):
            store.record_call(
                call(source="persisted", provenance=DOUBLE, trace_id=f"double-{n % 2}")
            )
        store.flush()
        earned = _data(store.root)["lifecycle"]["versions"][checksum(CODE)]["lifecycle_state"]

        store.record_call(call(provenance=MODEL, trace_id="model-0"))

        data = _data(store.root)
        lifecycle = data["lifecycle"]
        assert (earned, data["provenance"]["provider_kind"]) == ("durable", "openai")
        assert (
            _totals(data)[1:],
            lifecycle["versions"][checksum(CODE)]["lifecycle_state"],
            lifecycle["incumbent_durable_checksum"],
        ) == ((1, ["model-0"]), "probation", None)

    def test_the_hosts_code_written_by_a_program_first_inherits_nothing(
        self, tmp_path: Path
    ) -> None:
        """A program's agent earns durable for its code; the host's agent then writes the same
        code: the host's version starts with the host's one call."""
        store = _store(tmp_path / "store")
        store.record_call(call(author="program", trace_id="program-0"))
        for n in range(9):
            store.record_call(
                call(source="persisted", author="program", trace_id=f"program-{n % 2}")
            )
        store.flush()

        store.record_call(call(author="host", trace_id="host-0"))

        data = _data(store.root)
        assert (data["author"], _totals(data), data["lifecycle"]["incumbent_durable_checksum"]) == (
            "host",
            (11, 1, ["host-0"]),
            None,
        )

    def test_a_regeneration_by_the_same_writer_keeps_its_evidence(self, tmp_path: Path) -> None:
        """The control: the same model writing the same code again keeps the version's
        scorecard and its durable state (nothing of its own is lost)."""
        store = _store(tmp_path / "store")
        store.record_call(call(provenance=MODEL, trace_id="model-0"))
        for n in range(9):
            store.record_call(call(source="persisted", provenance=MODEL, trace_id=f"model-{n % 2}"))
        store.flush()

        store.record_call(call(provenance=MODEL, trace_id="model-2"))

        data = _data(store.root)
        assert (_totals(data)[1], data["lifecycle"]["incumbent_durable_checksum"]) == (
            11,
            checksum(CODE),
        )

    def test_waiting_runs_never_become_another_writers_evidence(self, tmp_path: Path) -> None:
        """A model's runs wait; the file now holds a double's program of the same code (the
        model's was forgotten meanwhile): the runs count in the totals only, and the double's
        version keeps its own one call."""
        store = _store(tmp_path / "store")
        store.record_call(call(provenance=MODEL))
        store.record_call(call(source="persisted", provenance=MODEL, trace_id="model-1"))
        _plant(store.root, provenance=DOUBLE)

        store.flush()

        data = _data(store.root)
        assert (data["provenance"]["provider_kind"], _totals(data)) == (
            "test_double:ScriptedProvider",
            (2, 1, ["trace-1"]),
        )


_MODEL_WRITES = """
import sys
from pathlib import Path
sys.path.insert(0, {repo!r})
from recurgent._store import Store
from specs.store.test_red_team_r10 import MODEL
from specs.store.support import call
print(Store(Path({root!r})).record_call(call(provenance=MODEL, trace_id="child-0")).written)
"""


@pytest.mark.slow
def test_two_processes_a_models_version_earns_only_its_own_runs(tmp_path: Path) -> None:
    """Two real processes on one root: this one's double wrote the program and has a run
    waiting; the other process's model writes the same code; a model's agent here then runs
    it. The model's version holds the other process's generation and this model's run, never
    the double's calls; the double's waiting run is not written into it."""
    store = _store(tmp_path / "store")
    store.record_call(call(provenance=DOUBLE, trace_id="double-0"))
    store.record_call(call(source="persisted", provenance=DOUBLE, trace_id="double-1"))
    repo = str(Path(__file__).resolve().parents[2])
    script = textwrap.dedent(_MODEL_WRITES).format(repo=repo, root=str(store.root))

    child = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=60, check=False
    )
    store.record_call(call(source="persisted", provenance=MODEL, trace_id="model-1"))
    store.flush()

    data = _data(store.root)
    assert (child.returncode, child.stdout, child.stderr) == (0, "True\n", "")
    assert (
        data["provenance"]["provider_kind"],
        _totals(data),
        data["lifecycle"]["versions"][checksum(CODE)]["lifecycle_state"],
    ) == ("openai", (3, 2, ["child-0", "model-1"]), "probation")


class TestKeptVersionsUnderEnforcement:
    """Enforcement may run a kept earlier version (ADR 0081): its runs count for it, under the
    rules of who wrote that version, not of who wrote the current code."""

    def test_a_doubles_kept_version_counts_its_own_failure(self, tmp_path: Path) -> None:
        """A double wrote v1; a model replaced it with v2. Under enforcement the double's agent
        runs v1 (the model's v2 is not its to run); v1's failure is written and counted for
        v1, and the model's v2 stays current."""
        enforced = promotion_mode(shadow=True, enforced=True)
        store = _store(tmp_path / "store")
        store.record_call(call(provenance=DOUBLE, promotion=enforced))
        path = _path(store.root)
        data = _data(store.root)
        replaced = apply_call(
            ArtifactRecord.model_validate(data),
            call(code="return 7", provenance=MODEL, promotion=enforced),
            now=NOW,
        )
        path.write_text(json.dumps(replaced.to_json()))
        found = host_lookup(
            store, enforce=True, reader=Reader(test_double=True, fingerprint="sha256:a")
        )

        written = store.record_call(
            call(
                source="persisted",
                provenance=DOUBLE,
                result="failure",
                promotion=enforced,
                trace_id="double-1",
            )
        )

        after = _data(store.root)
        card = after["scorecards"][checksum(CODE)]
        assert (found.reason, found.record and found.record.code) == ("hit", CODE)
        assert (written.written, written.reason) == (True, None)
        assert (after["code"], card["calls"], card["failures"]) == ("return 7", 2, 1)


class TestAStaleRunNeverWritesCode:
    """A persisted run reports code the record held when it ran: a write of it a moment later
    never makes that code current again, nor recreates a forgotten file."""

    def test_a_stale_failure_leaves_the_newer_program_current(self, tmp_path: Path) -> None:
        """Another process put the same role's new program there (the old version not kept);
        the old program's failure is counted in the totals, and the new program stays current
        with its history unchanged."""
        store = _store(tmp_path / "store")
        _plant(store.root, code="return 7")

        written = store.record_call(
            call(source="persisted", result="failure", failure_class="intrinsic")
        )

        data = _data(store.root)
        assert (written.written, data["code"], len(data["history"])) == (True, "return 7", 1)
        assert (data["success_count"], data["failure_count"], list(data["scorecards"])) == (
            1,
            1,
            [checksum("return 7")],
        )

    def test_a_failure_of_a_forgotten_program_does_not_recreate_it(self, tmp_path: Path) -> None:
        """The artifact was forgotten while its program ran; its failure is not written: no
        file comes back (as a batch of its answers would not)."""
        store = _store(tmp_path / "store")
        store.record_call(call())
        path = _path(store.root)
        path.unlink()

        written = store.record_call(call(source="persisted", result="failure"))

        assert (written.written, written.reason, path.exists()) == (False, "missing", False)

    def test_a_stale_failure_is_never_another_writers_evidence(self, tmp_path: Path) -> None:
        """The host's program ran; the file now holds a program's record of the same code
        (the host's was forgotten meanwhile): the host's failure counts in the totals, never
        on the program's version."""
        store = _store(tmp_path / "store")
        _plant(store.root, author="program")

        written = store.record_call(
            call(source="persisted", result="failure", author="host", trace_id="host-1")
        )

        data = _data(store.root)
        assert (written.written, data["author"], data["failure_count"], _totals(data)) == (
            True,
            "program",
            1,
            (1, 1, ["trace-1"]),
        )
        # No evaluation was made for it: the program's own last decision is not reported.
        assert written.decision is None


class TestHeld:
    """Payloads that found the rules holding, pinned."""

    def test_a_legacy_record_keeps_its_runs_and_its_evidence(self, tmp_path: Path) -> None:
        """A record written before authors and provenance were recorded: a model's waiting
        runs are written into it, and the host writing the same code keeps the version's
        evidence (an unknown author is not another writer)."""
        store = _store(tmp_path / "store")
        store.record_call(call(author="program"))
        path = _path(store.root)
        data = _data(store.root)
        for field in ("author", "provenance"):
            data.pop(field, None)
            data["versions"][checksum(CODE)].pop(field, None)
        path.write_text(json.dumps(data))
        store.record_call(call(source="persisted", author=None, trace_id="legacy-1"))
        store.flush()
        counted = _totals(_data(store.root))

        store.record_call(call(author="host", provenance=MODEL, trace_id="host-0"))

        assert (counted, _totals(_data(store.root))) == (
            (2, 2, ["trace-1", "legacy-1"]),
            (3, 3, ["trace-1", "legacy-1", "host-0"]),
        )

    def test_role_spellings_are_separate_records(self, tmp_path: Path) -> None:
        """Case, Unicode normal forms and trailing space give other paths (the hash is of the
        raw bytes): runs of one spelling never reach another's record."""
        store = _store(tmp_path / "store")
        spellings = ["café", "cafe\u0301", "Café", "café "]
        for role in spellings:
            store.record_call(call(role=role, code=f"return {len(role.encode())}"))
            store.record_call(
                call(role=role, source="persisted", code=f"return {len(role.encode())}")
            )
        store.flush()

        paths = {_path(store.root, role) for role in spellings}
        found = [
            (_data(store.root, role)["role"], _data(store.root, role)["success_count"])
            for role in spellings
        ]
        assert (len(paths), found) == (4, [(role, 2) for role in spellings])

    def test_a_look_alike_provider_kind_is_a_models(self, tmp_path: Path) -> None:
        """A record whose provider kind only resembles a test double's (case, a leading space)
        counts as a model's: a double's program never replaces it."""
        store = _store(tmp_path / "store")
        for kind in ("Test_Double:ScriptedProvider", " test_double:ScriptedProvider"):
            _plant(store.root, provenance=Provenance(provider_kind=kind))
            written = _path(store.root).read_bytes()

            refused = store.record_call(call(code="return 7", provenance=DOUBLE))

            assert (refused.reason, _path(store.root).read_bytes() == written) == (
                "model_written",
                True,
            )

    def test_children_a_program_makes_share_the_hosts_session(self, tmp_path: Path) -> None:
        """A program making four helper agents (each with other options) in one host call
        gives the helper's version four calls in one session: generated code never mints a
        session (``trace_id`` is inherited and host-only)."""
        program = (
            "out = []\n"
            "for i in range(4):\n"
            "    out.append(delegate('helper', execution_timeout_seconds=5 + i).work())\n"
            "return out"
        )
        provider = ScriptedModel({("planner", "go"): program, ("helper", "work"): "return 1"})
        planner = Agent("planner", provider=provider, log=False, toolstore_root=tmp_path)

        answered = planner.go()
        Store(tmp_path).flush()

        data = json.loads(artifact_path(tmp_path, "helper", "work").read_text())
        card = data["scorecards"][checksum("return 1")]
        assert (answered.ok, card["calls"], card["sessions"]) == (
            True,
            4,
            [planner._agent.options.trace_id],
        )


class TestAKeptVersionStatesItsOwnAuthor:
    """A kept version is run as written by whoever wrote it: an unknown author never borrows
    the current code's."""

    def test_the_hosts_agent_never_runs_a_legacy_version_as_its_own(self, tmp_path: Path) -> None:
        """A legacy program of unknown author is refused to the host's agent
        (``author_unknown``); the host's own program replaces it, then degrades under
        enforcement. The legacy version left is not run for the host as if the host's."""
        off = promotion_mode(shadow=False, enforced=False)
        enforced = promotion_mode(shadow=True, enforced=True)
        store = _store(tmp_path / "store")
        path = _path(store.root)
        path.parent.mkdir(parents=True)
        data = apply_call(
            None, call(code="return 1", author=None, promotion=off), now=NOW
        ).to_json()
        data.pop("author")
        for version in data["versions"].values():
            version.pop("author")
        path.write_text(json.dumps(data))

        def lookup() -> tuple[str, str | None]:
            found = host_lookup(store, enforce=True)
            return found.reason, found.record.code if found.record else None

        before = lookup()
        store.record_call(call(author="host", promotion=enforced))
        store.record_call(
            call(source="persisted", result="failure", author="host", promotion=enforced)
        )

        assert (before, lookup()) == (
            ("author_unknown", "return 1"),
            ("author_unknown", "return 1"),
        )


class TestABatchNeverRollsMetadataBack:
    """Waiting runs describe the program as it was when they ran: a flush never writes that
    description over a newer one of the same code."""

    def test_a_newer_contract_and_model_of_the_same_code_stay(self, tmp_path: Path) -> None:
        """Runs wait; another process's agent (another contract, a newer model of the same
        provider) writes the same code: the flush counts the runs and leaves the newer
        contract, model and prompt version as they are."""
        newer = Provenance(provider_kind="openai", model="gpt-5", prompt_version="p2")
        store = _store(tmp_path / "store")
        store.record_call(call(provenance=MODEL))
        store.record_call(call(source="persisted", provenance=MODEL, trace_id="model-1"))
        _plant(
            store.root,
            provenance=newer,
            contract_fingerprint="sha256:x2",
            model="gpt-5",
            prompt_version="p2",
        )

        store.flush()

        data = _data(store.root)
        assert (
            data["contract_fingerprint"],
            data["model"],
            data["prompt_version"],
            data["success_count"],
        ) == ("sha256:x2", "gpt-5", "p2", 2)

    def test_a_failure_written_at_once_rolls_nothing_back(self, tmp_path: Path) -> None:
        """The same through a persisted failure written at once: the failure counts, the newer
        contract and model stay."""
        newer = Provenance(provider_kind="openai", model="gpt-5", prompt_version="p2")
        store = _store(tmp_path / "store")
        _plant(store.root, provenance=newer, contract_fingerprint="sha256:x2", model="gpt-5")

        store.record_call(call(source="persisted", provenance=MODEL, result="failure"))

        data = _data(store.root)
        assert (data["contract_fingerprint"], data["model"], data["failure_count"]) == (
            "sha256:x2",
            "gpt-5",
            1,
        )


_RUNS = """
import sys
from pathlib import Path
sys.path.insert(0, {repo!r})
from recurgent._store import Store
from specs.store.test_red_team_r10 import MODEL
from specs.store.support import call
store = Store(Path({root!r}))
for n in range(40):
    store.record_call(call(source="persisted", provenance=MODEL, trace_id={trace!r}))
    if n % 10 == 9:
        store.flush()
"""


@pytest.mark.slow
def test_three_processes_running_one_program_lose_no_run(tmp_path: Path) -> None:
    """Held: three real processes run the same program 40 times each, flushing as they go: the
    one-writer-per-batch rule splits nothing, every run and session is counted once."""
    store = _store(tmp_path / "store")
    store.record_call(call(provenance=MODEL))
    repo = str(Path(__file__).resolve().parents[2])
    children = [
        subprocess.Popen(
            [
                sys.executable,
                "-c",
                textwrap.dedent(_RUNS).format(repo=repo, root=str(store.root), trace=f"p{n}"),
            ],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for n in range(3)
    ]
    ended = [(*child.communicate(timeout=120), child.returncode) for child in children]

    data = _data(store.root)
    assert ended == [("", "", 0)] * 3
    assert (_totals(data)[:2], sorted(_totals(data)[2])) == (
        (121, 121),
        ["p0", "p1", "p2", "trace-1"],
    )


class TestANameAsTheFileGivesItBack:
    """A store file holds a lone surrogate of a name as U+FFFD; the key check compares the name
    as the file gives it back."""

    def test_a_role_with_a_lone_surrogate_keeps_its_runs_and_its_program(
        self, tmp_path: Path
    ) -> None:
        """``calc\\ud800`` (a name from undecodable bytes, or a program's ``delegate``): its
        waiting run is written, its program is reused, and a new program replaces it (each was
        ``key_mismatch``: the run dropped, a request on every call, every write refused)."""
        role = "calc\ud800"
        store = _store(tmp_path / "store")
        store.record_call(call(role=role))
        store.record_call(call(role=role, source="persisted"))
        store.flush()
        found = store.lookup(
            role, "answer", contract_fingerprint="none", runtime_version="0.1.0", host_call=True
        )

        replaced = store.record_call(call(role=role, code="return 7"))

        data = _data(store.root, role)
        assert (found.reason, replaced.written) == ("hit", True)
        assert (data["role"], data["code"], data["success_count"]) == ("calc\ufffd", "return 7", 3)

    def test_another_name_stored_alike_is_still_another_key(self, tmp_path: Path) -> None:
        """The comparison as stored equates only names that differ in lone surrogates: the
        record of ``calc\\ud800`` copied to the path of ``calc`` is ``key_mismatch`` there."""
        store = _store(tmp_path / "store")
        _plant(store.root, role="calc\ud800")
        path = _path(store.root, "calc\ud800")
        other = _path(store.root, "calc")
        other.parent.mkdir(parents=True)
        other.write_bytes(path.read_bytes())

        found = store.lookup(
            "calc", "answer", contract_fingerprint="none", runtime_version="0.1.0", host_call=True
        )

        assert found.reason == "key_mismatch"
