"""Kept code versions and enforcement selection (ADR 0081): the versions map, the order the
lifecycle prefers, runs of a kept version, and a stored program's failure counted for it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from recurgent._store import Store, StoredRun
from recurgent._store._artifacts import ArtifactRecord, checksum
from recurgent._store._batch import RunsDelta, apply_runs
from recurgent._store._folding import apply_call
from recurgent._store._promotion import apply_override, promotion_mode, state_of
from recurgent._store._promotion_format import VERSIONS_KEPT
from recurgent._store._provenance import Provenance, Reader
from recurgent._store._versions import enforced_choices, version_view
from specs.store.support import STABLE, call

STAMPS = [f"2026-12-01T12:00:{second:02d}.000Z" for second in range(60)]
ENFORCED = promotion_mode(shadow=True, enforced=True)
FAIL = {"result": "failure", "error_type": "execution", "failure_class": "intrinsic"}


def _version(record: ArtifactRecord | None, code: str, now: str, **fields: Any) -> ArtifactRecord:
    return apply_call(record, call(code, **fields), now=now)


def _durable_then_newer() -> ArtifactRecord:
    """``return 1`` made durable by hand, then ``return 2`` generated (probation)."""
    record = _version(None, "return 1", STAMPS[0])
    apply_override(record, checksum("return 1"), "durable", actor="a", reason=None, now=STAMPS[1])
    return _version(record, "return 2", STAMPS[2])


class TestVersionsMap:
    """versions keeps the code of the last 8 versions, described when first written."""

    def test_each_version_keeps_its_code_and_what_it_was_written_for(self) -> None:
        """A generated version is kept with its code, dependencies, author and contract; a later
        run only moves its last_used_at."""
        record = _version(None, "return 1", STAMPS[0], dependencies=[{"name": "x"}])
        record = _version(record, "return 1", STAMPS[5], source="persisted")
        kept = record.versions[checksum("return 1")]
        assert (kept.code, kept.dependencies, kept.author, kept.contract_fingerprint) == (
            "return 1",
            [{"name": "x"}],
            "host",
            "none",
        )
        assert (kept.created_at, kept.last_used_at, kept.cacheable) == (
            STAMPS[0],
            STAMPS[5],
            True,
        )

    def test_at_most_eight_versions_the_incumbent_always_among_them(self) -> None:
        """Twelve versions leave eight: the current one, the durable incumbent (however old),
        and the six used most recently."""
        record = _version(None, "return 0", STAMPS[0])
        apply_override(
            record, checksum("return 0"), "durable", actor="a", reason=None, now=STAMPS[0]
        )
        for number in range(1, 12):
            record = _version(record, f"return {number}", STAMPS[number])
        assert len(record.versions) == VERSIONS_KEPT == 8
        assert set(record.versions) == {checksum(f"return {n}") for n in (0, 5, 6, 7, 8, 9, 10, 11)}
        assert set(record.scorecards) == set(record.versions)


class TestChoices:
    """enforced_choices: the order enforcement tries versions in."""

    def test_incumbent_then_durable_probation_candidate_newest_first(self) -> None:
        """The incumbent first, then other durable versions, then probation, newest first;
        degraded versions never appear."""
        record = _version(None, "return 1", STAMPS[0])  # probation
        record = _version(record, "return 2", STAMPS[1])  # probation
        record = _version(record, "return 3", STAMPS[2])  # probation
        record = _version(record, "return 4", STAMPS[3])  # probation (current)
        record = _version(record, "return 5", STAMPS[4], **FAIL)  # candidate (current)
        digest = {n: checksum(f"return {n}") for n in range(1, 6)}
        apply_override(record, digest[1], "durable", actor="a", reason=None, now=STAMPS[5])
        apply_override(record, digest[2], "durable", actor="a", reason=None, now=STAMPS[6])
        apply_override(record, digest[3], "degraded", actor="a", reason=None, now=STAMPS[7])

        order = [choice.code_checksum for choice in enforced_choices(record) or ()]

        # return 2 is the incumbent (the last made durable); return 1 the other durable one.
        assert order == [digest[2], digest[1], digest[4], digest[5]]

    def test_views_run_the_kept_code_with_its_own_description(self) -> None:
        """A choice is the record with the kept version's code, checksum and author; the
        current record is its own view."""
        record = _durable_then_newer()
        [incumbent, newer] = enforced_choices(record) or ()
        assert (incumbent.code, incumbent.code_checksum) == ("return 1", checksum("return 1"))
        assert newer is record
        assert (record.code, incumbent.scorecards is record.scorecards) == ("return 2", True)
        assert version_view(record, checksum("return 2")) is record

    def test_a_kept_version_states_its_own_provenance(self) -> None:
        """A version a test double wrote keeps the double's provenance in its view, and a
        version with none is unknown: neither borrows the current code's (ADR 0077)."""
        double = Provenance(provider_kind="test_double:ScriptedProvider", double_fingerprint="f")
        model = Provenance(provider_kind="openai", model="gpt-4.1-mini")
        record = _version(None, "return 1", STAMPS[0], provenance=double)
        record = _version(record, "return 2", STAMPS[1], provenance=model)
        assert version_view(record, checksum("return 1")).provenance == double
        record.versions[checksum("return 1")].provenance = None
        assert version_view(record, checksum("return 1")).provenance is None
        assert version_view(record, checksum("return 2")).provenance == model

    def test_no_lifecycle_means_no_choice_and_all_degraded_means_none(self) -> None:
        """A record without lifecycle data runs as without enforcement (None); one whose every
        version is degraded offers nothing (an empty tuple)."""
        legacy = apply_call(
            None, call(promotion=promotion_mode(shadow=False, enforced=False)), now=STAMPS[0]
        )
        assert enforced_choices(legacy) is None
        record = _version(None, "return 1", STAMPS[0])
        apply_override(
            record, checksum("return 1"), "degraded", actor="a", reason=None, now=STAMPS[1]
        )
        assert enforced_choices(record) == ()


class TestEnforcedLookup:
    """Store.lookup(enforce=True) picks the lifecycle's choice that passes every reuse check."""

    def _store(self, tmp_path: Path, record: ArtifactRecord) -> Store:
        from recurgent._store._files import write_json
        from recurgent._store._paths import artifact_path

        root = tmp_path / "store"
        write_json(artifact_path(root, "calculator", "answer"), record.to_json(), root=root)
        return Store(root)

    def _lookup(
        self, store: Store, *, enforce: bool, contract: str = "none", reader: Reader | None = None
    ) -> Any:
        return store.lookup(
            "calculator",
            "answer",
            contract_fingerprint=contract,
            runtime_version="0.1.0",
            host_call=True,
            enforce=enforce,
            reader=reader,
        )

    def test_the_incumbent_durable_version_runs_over_a_newer_probation_one(
        self, tmp_path: Path
    ) -> None:
        """Enforcement off: the newest code. On: the incumbent durable version."""
        store = self._store(tmp_path, _durable_then_newer())

        off = self._lookup(store, enforce=False)
        on = self._lookup(store, enforce=True)

        assert (off.reason, off.record.code) == ("hit", "return 2")
        assert (on.reason, on.record.code, state_of(on.record, on.record.code_checksum)) == (
            "hit",
            "return 1",
            "durable",
        )

    def test_a_degraded_current_version_rolls_back_to_the_durable_one(self, tmp_path: Path) -> None:
        """The newest version degraded: enforcement runs the kept durable version; without
        enforcement the newest still runs (today's rule: its own counts are healthy)."""
        record = _durable_then_newer()
        apply_override(
            record, checksum("return 2"), "degraded", actor="a", reason=None, now=STAMPS[9]
        )
        store = self._store(tmp_path, record)

        assert self._lookup(store, enforce=True).record.code == "return 1"
        assert self._lookup(store, enforce=False).record.code == "return 2"

    def test_a_regressed_incumbent_rolls_back_to_the_older_durable_version(
        self, tmp_path: Path
    ) -> None:
        """return 2 is the durable incumbent, return 1 an older durable version; return 2 fails
        until the regression rule degrades it: enforcement then runs return 1."""
        record = _durable_then_newer()
        apply_override(
            record, checksum("return 2"), "durable", actor="a", reason=None, now=STAMPS[3]
        )
        store = self._store(tmp_path, record)
        assert self._lookup(store, enforce=True).record.code == "return 2"

        for _ in range(3):
            store.record_call(call("return 2", source="persisted", promotion=ENFORCED, **FAIL))

        found = self._lookup(store, enforce=True)
        assert (found.reason, found.record.code) == ("hit", "return 1")
        assert found.record.lifecycle is not None
        assert found.record.lifecycle.incumbent_durable_checksum is None
        assert state_of(found.record, checksum("return 2")) == "degraded"

    def test_every_version_degraded_is_a_miss(self, tmp_path: Path) -> None:
        """Nothing left to run: the reason is degraded and the call generates."""
        record = _durable_then_newer()
        for code in ("return 1", "return 2"):
            apply_override(
                record, checksum(code), "degraded", actor="a", reason=None, now=STAMPS[9]
            )
        store = self._store(tmp_path, record)
        assert self._lookup(store, enforce=True).reason == "degraded"

    def test_a_choice_that_fails_a_reuse_check_is_passed_over(self, tmp_path: Path) -> None:
        """The incumbent was written under another contract: the next choice runs."""
        record = _version(None, "return 1", STAMPS[0], contract_fingerprint="sha256:old")
        apply_override(
            record, checksum("return 1"), "durable", actor="a", reason=None, now=STAMPS[1]
        )
        record = _version(record, "return 2", STAMPS[2])
        store = self._store(tmp_path, record)

        found = self._lookup(store, enforce=True)

        assert (found.reason, found.record.code) == ("hit", "return 2")

    def test_a_test_double_never_runs_a_kept_version_a_model_wrote(self, tmp_path: Path) -> None:
        """The durable incumbent was written by a model, the newer version by the double now
        asking: the provenance rules apply to every choice (ADR 0077), so the double's own
        version runs, and a model's agent runs the incumbent."""
        model = Provenance(provider_kind="openai", model="gpt-4.1-mini")
        double = Provenance(provider_kind="test_double:ScriptedProvider", double_fingerprint="f")
        record = _version(None, "return 1", STAMPS[0], provenance=model)
        apply_override(
            record, checksum("return 1"), "durable", actor="a", reason=None, now=STAMPS[1]
        )
        record = _version(record, "return 2", STAMPS[2], provenance=double)
        store = self._store(tmp_path, record)

        as_double = self._lookup(
            store, enforce=True, reader=Reader(test_double=True, fingerprint="f")
        )
        as_model = self._lookup(store, enforce=True)

        assert (as_double.reason, as_double.record.code) == ("hit", "return 2")
        assert (as_model.reason, as_model.record.code) == ("hit", "return 1")


class TestRunsOfAKeptVersion:
    """A persisted run of a kept earlier version counts for it and leaves the current code."""

    def test_a_written_failure_counts_for_the_kept_version_only(self) -> None:
        """apply_call of a failed run of return 1 (current: return 2) counts on return 1's
        scorecard and lifecycle; the current code, its history and author stay."""
        record = _durable_then_newer()
        history = [h.id for h in record.history]

        after = apply_call(
            record, call("return 1", source="persisted", promotion=ENFORCED, **FAIL), now=STAMPS[9]
        )

        assert (after.code, [h.id for h in after.history]) == ("return 2", history)
        assert after.scorecards[checksum("return 1")].failures == 1
        assert after.failure_count == 1
        assert after.lifecycle is not None
        assert after.lifecycle.shadow_ledger.evaluations[-1].candidate_artifact_id == checksum(
            "return 1"
        )

    def test_batched_answers_count_for_the_kept_version(self) -> None:
        """A delta of runs of return 1 folds into its scorecard, its versions entry and one
        evaluation; the current code stays return 2."""
        record = _durable_then_newer()
        run = call("return 1", source="persisted", trace_id="t9")
        delta = RunsDelta.start(run, STAMPS[10])
        for second in (10, 11, 12):
            delta.add(run, STAMPS[second])

        after = apply_runs(record, delta)

        assert after.code == "return 2"
        assert after.scorecards[checksum("return 1")].calls == 4
        assert after.versions[checksum("return 1")].last_used_at == STAMPS[12]
        assert after.lifecycle is not None
        last = after.lifecycle.shadow_ledger.evaluations[-1]
        assert (last.candidate_artifact_id, last.calls_covered, last.decision) == (
            checksum("return 1"),
            3,
            "hold",
        )


class TestStoredFailure:
    """A stored program that failed before the call repaired it is counted for its version."""

    def test_the_failed_stored_version_is_counted_and_judged(self) -> None:
        """The repaired call carries the stored run: its version gets the failure (and, under
        enforcement, leaves probation at once); the call's totals count only its answer."""
        record = _version(None, "return 1", STAMPS[0])
        stored = StoredRun(
            code="return 1",
            author="host",
            error_type="execution",
            failure_class="intrinsic",
            cacheability=STABLE,
        )

        after = apply_call(
            record,
            call(
                "return 9",
                source="repaired",
                repaired_class="intrinsic",
                stored_failure=stored,
                promotion=ENFORCED,
            ),
            now=STAMPS[1],
        )

        assert (after.code, after.success_count, after.failure_count) == ("return 9", 2, 0)
        old = after.scorecards[checksum("return 1")]
        assert (old.calls, old.failures) == (2, 1)
        assert state_of(after, checksum("return 1")) == "degraded"
        assert state_of(after, checksum("return 9")) == "probation"
