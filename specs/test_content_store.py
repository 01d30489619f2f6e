"""The content store on its own: refs, kinds, digests, retention, LRU order, reads (ADR 0101)."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import threading
from dataclasses import replace
from typing import Any

import pytest

from recurgent._content_serialization import serialize
from recurgent._content_store import (
    ContentReads,
    ContentRetention,
    ContentStore,
    content_log_fields,
)
from recurgent._runtime_config import RuntimeSettings
from recurgent.outcome import Outcome
from specs.forking import report_of_a_child_forked_while_held
from specs.test_content_serialization import Count, Label

REF = re.compile(r"content:[0-9a-f]{24}")


class FakeClock:
    """A monotonic clock the spec moves by hand."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def _digest(text: str) -> str:
    return "sha256:" + hashlib.sha256(text.encode()).hexdigest()


def _write(
    store: ContentStore,
    value: Any,
    retention: ContentRetention | None = None,
    *,
    depth: int = 0,
    outcome: Outcome | None = None,
) -> Any:
    return store.write(
        outcome if outcome is not None else Outcome.ok(value),
        retention=retention or ContentRetention(),
        depth=depth,
    )


class TestScalarWrites:
    """``write`` takes its own route for a short int, str, bool or None (ADR 0122) and keeps
    what ``serialize`` would."""

    @pytest.mark.parametrize(
        "value",
        [
            0,
            -(10**18) + 1,
            10**18 - 1,
            10**18,
            -(10**18),
            10**300,
            "",
            'quote " backslash \\ newline \n',
            "lone \ud800 surrogate",
            "héllo ✓ 𝄞",
            True,
            False,
            None,
            0.1,
            Label("sub"),
            Count(3),
            [1, "a"],
            {"k": None},
        ],
    )
    def test_a_write_keeps_what_serialize_gives(self, value: Any) -> None:
        """``write`` takes its own route for a short int, str, bool or None (ADR 0122); the
        write reports exactly the kind, size, digest and mode of ``serialize``, the general
        path, keeps its text, and reads back as ``content(ref)`` would from it."""
        store = ContentStore()
        general = serialize(value)

        kept = _write(store, value)
        entry = store.describe(kept.ref)

        assert entry is not None
        assert (kept.kind, kept.size, kept.digest, kept.mode) == (
            general.kind,
            general.size,
            general.digest,
            general.mode,
        )
        assert entry == {"text": general.text, "size": general.size}
        assert store.read(kept.ref, ContentRetention()) == (True, json.loads(general.text))


class TestWrites:
    """What is kept, under which ref, and the reasons a write is skipped."""

    def test_an_ok_depth_0_answer_is_kept_under_a_random_ref(self) -> None:
        """The write reports ref, kind, bytes, digest and the store's counts."""
        store = ContentStore()

        first = _write(store, {"title": "x"})
        second = _write(store, {"title": "x"})

        assert REF.fullmatch(first.ref) and REF.fullmatch(second.ref)
        assert first.ref != second.ref
        assert (first.stored, first.kind, first.size, first.digest, first.skipped_reason) == (
            True,
            "object",
            13,
            _digest('{"title":"x"}'),
            None,
        )
        assert (second.entry_count, second.total_bytes, second.evicted) == (2, 26, 0)
        assert first.summary() == {
            "content_ref": first.ref,
            "content_kind": "object",
            "content_bytes": 13,
            "content_digest": _digest('{"title":"x"}'),
        }

    def test_an_entry_keeps_only_what_is_read_back(self) -> None:
        """An entry is the answer's JSON text and its size (ADR 0137): the call's ids, role,
        method, kind and digest are in its history record and log line, not kept twice."""
        store = ContentStore()

        write = _write(store, [1])

        assert store.describe(write.ref) == {"text": "[1]", "size": 3}
        assert store.describe("content:" + "0" * 24) is None

    def test_nested_answers_are_skipped_unless_captured(self) -> None:
        """Depth 1 is skipped as nested_capture_disabled; with nested capture it is kept."""
        store = ContentStore()

        skipped = _write(store, 1, depth=1)
        kept = _write(store, 1, ContentRetention(nested_capture=True), depth=1)

        assert (skipped.stored, skipped.skipped_reason, skipped.summary()) == (
            False,
            "nested_capture_disabled",
            {},
        )
        assert (kept.stored, len(store)) == (True, 1)

    def test_error_payloads_are_skipped_unless_kept(self) -> None:
        """An error outcome is skipped; with error payloads on its fields are kept (any depth)."""
        store = ContentStore()
        error = Outcome.error(error_type="not_found", error_message="gone", metadata={"id": 3})

        skipped = _write(store, None, outcome=error)
        kept = _write(store, None, ContentRetention(error_payloads=True), depth=2, outcome=error)

        assert skipped.skipped_reason == "error_payload_capture_disabled"
        assert kept.stored
        assert store.read(kept.ref, ContentRetention()) == (
            True,
            {
                "error_type": "not_found",
                "error_message": "gone",
                "retriable": False,
                "metadata": {"id": 3},
            },
        )

    def test_no_outcome_is_an_invalid_outcome(self) -> None:
        """A call that ended without an outcome is skipped with invalid_outcome."""
        store = ContentStore()

        write = store.write(None, retention=ContentRetention(), depth=0)

        assert (write.stored, write.skipped_reason) == (False, "invalid_outcome")

    def test_an_entry_larger_than_the_byte_bound_is_skipped(self) -> None:
        """entry_exceeds_max_bytes; the store keeps what it had."""
        store = ContentStore()
        _write(store, "a")

        write = _write(store, "x" * 100, ContentRetention(max_bytes=50))

        assert (write.stored, write.skipped_reason, write.entry_count, write.total_bytes) == (
            False,
            "entry_exceeds_max_bytes",
            1,
            3,
        )


class TestEviction:
    """Bounds by entries, bytes and age; least recently used first out."""

    def test_eviction_by_count_drops_the_oldest(self) -> None:
        """With max_entries=2 the third write evicts the first."""
        store = ContentStore()
        retention = ContentRetention(max_entries=2)

        refs = [_write(store, n, retention).ref for n in range(3)]
        third = _write(store, 3, retention)

        assert list(store) == [refs[2], third.ref]
        assert (third.evicted, third.entry_count) == (1, 2)
        assert store.read(refs[0], retention) == (False, None)

    def test_eviction_by_bytes_drops_as_many_as_needed(self) -> None:
        """Three 12-byte entries under a 30-byte bound: a 25-byte write evicts two."""
        store = ContentStore()
        retention = ContentRetention(max_bytes=30)
        refs = [_write(store, "x" * 10, retention).ref for _ in range(2)]

        write = _write(store, "y" * 23, retention)

        assert (write.evicted, write.entry_count, write.total_bytes) == (2, 1, 25)
        assert list(store) == [write.ref]
        assert all(store.read(ref, retention) == (False, None) for ref in refs)

    def test_a_read_makes_an_entry_the_most_recently_used(self) -> None:
        """Reading the oldest entry saves it; the next eviction takes the second."""
        store = ContentStore()
        retention = ContentRetention(max_entries=2)
        first = _write(store, "a", retention).ref
        second = _write(store, "b", retention).ref

        assert store.read(first, retention) == (True, "a")
        _write(store, "c", retention)

        assert store.read(second, retention) == (False, None)
        assert store.read(first, retention) == (True, "a")

    def test_ttl_expires_entries_by_age_from_their_write(self) -> None:
        """With ttl 60: at +60 s an entry is still there, at +60.5 s it is gone (even if read)."""
        clock = FakeClock()
        store = ContentStore(clock=clock)
        retention = ContentRetention(ttl_seconds=60)
        ref = _write(store, "a", retention).ref

        clock.now += 60
        assert store.read(ref, retention) == (True, "a")
        clock.now += 0.5
        assert store.read(ref, retention) == (False, None)
        assert (len(store), store.total_bytes) == (0, 0)

    def test_expired_entries_count_as_evictions_of_the_next_write(self) -> None:
        """Two expired entries and a bound eviction: the write reports 3 evictions."""
        clock = FakeClock()
        store = ContentStore(clock=clock)
        _write(store, 1, ContentRetention(ttl_seconds=10))
        _write(store, 2, ContentRetention(ttl_seconds=10))
        clock.now += 5
        survivor = _write(store, 3).ref
        clock.now += 6

        write = _write(store, 4, ContentRetention(ttl_seconds=10, max_entries=1))

        assert (write.evicted, list(store)) == (3, [write.ref])
        assert survivor not in list(store)

    def test_no_ttl_keeps_entries_forever(self) -> None:
        """Without a TTL an entry written a year ago is still read."""
        clock = FakeClock()
        store = ContentStore(clock=clock)
        ref = _write(store, "old").ref

        clock.now += 365 * 86400

        assert store.read(ref, ContentRetention()) == (True, "old")

    def test_enforce_applies_a_tighter_retention_at_once(self) -> None:
        """Shrinking max_entries from 128 to 1 evicts all but the newest entry now."""
        store = ContentStore()
        refs = [_write(store, n).ref for n in range(4)]

        evicted = store.enforce(ContentRetention(max_entries=1))

        assert (evicted, list(store)) == (3, [refs[-1]])

    def test_discard_forgets_a_ref(self) -> None:
        """discard drops the entry and its bytes; a second discard finds nothing."""
        store = ContentStore()
        ref = _write(store, "abc").ref

        assert (store.discard(ref), store.discard(ref), store.total_bytes) == (True, False, 0)


class TestReads:
    """content(ref): a fresh copy or None, every read recorded."""

    def test_each_read_is_a_fresh_copy(self) -> None:
        """Changing what one read returned changes neither the store nor the next read."""
        store = ContentStore()
        ref = _write(store, {"items": [1, 2]}).ref
        reads = ContentReads()
        content = store.reader(ContentRetention, reads)

        first = content(ref)
        first["items"].append(3)

        assert content(ref) == {"items": [1, 2]}

    def test_reads_count_hits_and_misses_and_list_refs_once(self) -> None:
        """Two hits on one ref and a miss: counts 2/1, each ref listed once in read order."""
        store = ContentStore()
        ref = _write(store, 1).ref
        reads = ContentReads()
        content = store.reader(ContentRetention, reads)
        unknown = "content:" + "f" * 24

        values = [content(ref), content(f"  {ref} "), content(unknown)]

        assert values == [1, 1, None]
        assert (reads.hits, reads.misses, reads.refs) == (2, 1, [ref, unknown])

    @pytest.mark.parametrize("ref", [None, 3, "", "   ", ["content:x"]])
    def test_a_non_string_or_blank_ref_is_none_and_not_counted(self, ref: Any) -> None:
        """Only a non-blank string names content."""
        reads = ContentReads()

        assert ContentStore().reader(ContentRetention, reads)(ref) is None
        assert (reads.hits, reads.misses, reads.refs) == (0, 0, [])

    def test_the_retention_is_asked_at_each_read(self) -> None:
        """A reader sees a TTL that appeared after it was made."""
        clock = FakeClock()
        store = ContentStore(clock=clock)
        ref = _write(store, "a").ref
        current = [ContentRetention()]
        content = store.reader(lambda: current[0], ContentReads())
        clock.now += 100

        assert content(ref) == "a"
        current[0] = ContentRetention(ttl_seconds=10)
        assert content(ref) is None

    def test_listed_refs_are_bounded(self) -> None:
        """A program probing 150 refs lists 100 of them, each cut to 80 characters."""
        reads = ContentReads()
        content = ContentStore().reader(ContentRetention, reads)

        for n in range(150):
            content(f"{n:03d}" + "z" * 200)

        assert (reads.misses, len(reads.refs), {len(ref) for ref in reads.refs}) == (
            150,
            100,
            {80},
        )


class TestRetentionFromSettings:
    """The retention is the agent's settings, field by field."""

    def test_defaults_are_the_originals(self) -> None:
        """128 entries, 2 MiB, no TTL, no nested capture, no error payloads."""
        assert ContentRetention.from_settings(RuntimeSettings()) == ContentRetention(
            max_entries=128,
            max_bytes=2_097_152,
            ttl_seconds=None,
            nested_capture=False,
            error_payloads=False,
        )

    def test_each_setting_maps_to_its_field(self) -> None:
        """Every content_store_* setting reaches the retention."""
        settings = replace(
            RuntimeSettings(),
            content_store_max_entries=3,
            content_store_max_bytes=400,
            content_store_ttl_seconds=9.5,
            content_store_nested_capture_enabled=True,
            content_store_store_error_payloads=True,
        )

        assert ContentRetention.from_settings(settings) == ContentRetention(3, 400, 9.5, True, True)


class TestConcurrency:
    """Writes and reads from many threads keep the counts consistent."""

    def test_concurrent_writes_and_reads_respect_the_bounds(self) -> None:
        """8 threads x 50 writes under max_entries=16: 16 entries, bytes equal their sum."""
        store = ContentStore()
        retention = ContentRetention(max_entries=16)
        errors: list[BaseException] = []

        def work(worker: int) -> None:
            try:
                for n in range(50):
                    ref = _write(store, {"w": worker, "n": n}, retention).ref
                    store.read(ref, retention)
            except BaseException as error:
                errors.append(error)

        threads = [threading.Thread(target=work, args=(w,)) for w in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

        sizes = [store.describe(ref)["size"] for ref in store]  # type: ignore[index]
        assert (errors, len(store), store.total_bytes) == ([], 16, sum(sizes))


class TestLogFields:
    """The twelve content_store_* fields of a log line."""

    def test_fields_of_a_stored_write_and_reads(self) -> None:
        """A stored write and one hit give the write's ref, kind, bytes, digest and counts."""
        store = ContentStore()
        write = _write(store, "hi")
        reads = ContentReads()
        reads.record(write.ref, hit=True)

        assert content_log_fields(write, reads) == {
            "content_store_write_applied": True,
            "content_store_write_ref": write.ref,
            "content_store_write_kind": "string",
            "content_store_write_bytes": 4,
            "content_store_write_digest": _digest('"hi"'),
            "content_store_write_skipped_reason": None,
            "content_store_eviction_count": 0,
            "content_store_read_hit_count": 1,
            "content_store_read_miss_count": 0,
            "content_store_read_refs": [write.ref],
            "content_store_entry_count": 1,
            "content_store_total_bytes": 4,
        }

    def test_fields_without_a_write(self) -> None:
        """A call that never reached history: not applied, counts unknown, no reads."""
        fields = content_log_fields(None, ContentReads())

        assert fields["content_store_write_applied"] is False
        assert fields["content_store_entry_count"] is None
        assert fields["content_store_read_refs"] == []
        assert len(fields) == 12


class TestFork:
    """A child forked while a thread of the parent held a store's lock (or the reads' lock)
    keeps answers and reads them: the fork hook gives the child fresh locks."""

    @pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
    def test_a_child_forked_while_a_lock_was_held_writes_and_reads(self) -> None:
        """The parent's thread holds the store's lock and the reads' lock at the fork; the
        child writes an answer, reads it back and counts the read."""
        import recurgent._content_store as module

        store = ContentStore()

        def both_locks() -> contextlib.ExitStack:
            stack = contextlib.ExitStack()
            stack.enter_context(store._lock)
            stack.enter_context(module._READS_LOCK)
            return stack

        def child() -> str:
            reads = ContentReads()
            kept = store.write(Outcome.ok([1, 2]), retention=ContentRetention(), depth=0)
            value = store.reader(ContentRetention, reads)(kept.ref)
            return json.dumps([value, reads.hits])

        report = report_of_a_child_forked_while_held(both_locks, child)

        assert report == "[[1, 2], 1]"
