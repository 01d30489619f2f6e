"""The journal's copy of builtin containers (``_core``): OrderedDict order on copy and commit."""

from __future__ import annotations

import collections
from collections.abc import Callable

import pytest

from recurgent._journal import Journal, MemoryView
from recurgent._sandbox import rebuild
from recurgent.errors import NonSerializableResultError
from specs.sandbox.support import nested_lists


class TestOrderedDicts:
    """An OrderedDict's own order (``move_to_end``) is copied, kept on rollback, committed."""

    def test_a_reorder_commits_into_the_same_ordered_dict(self) -> None:
        """move_to_end, a new key and a delete: memory's OrderedDict ends in the attempt's order."""
        ordered = collections.OrderedDict(a=1, b=2, c=3)
        journal = Journal({"od": ordered})
        copy = journal.view["od"]
        copy.move_to_end("a")
        copy["d"] = 4
        del copy["b"]

        journal.prepare(rebuild).apply({"od": ordered})

        assert list(ordered.items()) == [("c", 3), ("a", 1), ("d", 4)]

    def test_a_dropped_reorder_leaves_the_order(self) -> None:
        """A discarded attempt's move_to_end leaves memory's order as it was."""
        ordered = collections.OrderedDict(a=1, b=2)
        journal = Journal({"od": ordered})
        journal.view["od"].move_to_end("a")

        journal.discard()

        assert list(ordered) == ["a", "b"]

    def test_the_copy_sees_the_hosts_order(self) -> None:
        """An OrderedDict the host reordered is copied in its own order, not the storage's."""
        ordered = collections.OrderedDict(a=1, b=2)
        ordered.move_to_end("a")

        copy = Journal({"od": ordered}).view["od"]

        assert (list(copy), copy.popitem(last=False)) == (["b", "a"], ("b", 2))


class TestTopLevelChanges:
    """prepare finds every top-level change; with the key order kept it looks only where a value
    is another object (issue 22: an attempt's cost does not grow with memory's key count)."""

    def test_one_write_among_many_keys(self) -> None:
        """One key rewritten and one added among 10,000: exactly those are set, none deleted."""
        memory = {f"k{i}": [i] for i in range(10_000)}
        journal = Journal(memory)
        journal.view["k5000"] = "new"
        writes = journal.prepare(rebuild)
        assert (writes.set, writes.delete) == ({"k5000": "new"}, [])

    def test_touched_but_unchanged_values_write_nothing(self) -> None:
        """A value read (copied on touch) and left alone is no write."""
        journal = Journal({"rows": [1, 2], "n": 3})
        assert journal.view["rows"] == [1, 2]
        writes = journal.prepare(rebuild)
        assert (writes.set, writes.delete, writes.patches) == ({}, [], [])

    def test_a_key_deleted_and_added_back_with_anothers_value(self) -> None:
        """del a; a = b's value: the order moved, so every key is examined and a is written."""
        shared = [9]
        journal = Journal({"a": [1], "b": shared})
        view = journal.view
        del view["a"]
        dict.__setitem__(view, "a", shared)
        writes = journal.prepare(rebuild)
        assert (writes.set, writes.delete) == ({"a": [9]}, [])

    def test_a_delete_is_found(self) -> None:
        """A removed key is a delete, and its neighbours are untouched."""
        journal = Journal({"a": 1, "b": 2, "c": 3})
        del journal.view["b"]
        writes = journal.prepare(rebuild)
        assert (writes.set, writes.delete) == ({}, ["b"])

    def test_touched_keys_name_the_roots(self) -> None:
        """Writes.touched_keys: set and deleted keys and the root of each patch."""
        journal = Journal({"rows": [1], "gone": 0, "cfg": {"x": 1}})
        view = journal.view
        view["rows"].append(2)
        del view["gone"]
        view["new"] = 5
        assert sorted(journal.prepare(rebuild).touched_keys() or []) == ["gone", "new", "rows"]


class TestUntouched:
    """Journal.untouched tells, without preparing them, that an attempt has no writes: it is
    True exactly when prepare finds none (ADR 0124)."""

    @staticmethod
    def _journal() -> Journal:
        return Journal({"rows": [1, 2], "n": 3, "name": "a"})

    def test_an_attempt_that_only_read_atoms_is_untouched(self) -> None:
        """Reading atoms copies nothing: untouched, and prepare agrees."""
        journal = self._journal()
        assert (journal.view["n"], journal.view.get("name")) == (3, "a")
        assert journal.untouched() is True
        assert journal.prepare(rebuild).empty is True

    def test_every_kind_of_change_is_seen(self) -> None:
        """A set, a delete, an in-place change; a value taken out and put back (the key's place
        moved) and a value read (copied) but left alone: never untouched, and prepare finds the
        writes of the first three (untouched errs on the side of preparing)."""
        changes: list[Callable[[MemoryView], object]] = [
            lambda view: view.__setitem__("n", 4),
            lambda view: view.__delitem__("name"),
            lambda view: view["rows"].append(3),
            lambda view: view.__setitem__("rows", view.pop("rows")),
            lambda view: view["rows"],
        ]
        found = []
        for change in changes:
            journal = self._journal()
            change(journal.view)
            found.append((journal.untouched(), journal.prepare(rebuild).empty))

        assert found == [
            (False, False),
            (False, False),
            (False, False),
            (False, True),
            (False, True),
        ]


class TestNestingCountsFromMemorysTop:
    """A value written into a container memory holds is as deep as that container's path says:
    the 64-level cap counts from memory's top (red team R25, ADR 0152)."""

    @staticmethod
    def _innermost_after(levels: int, added: int) -> tuple[Journal, list[object]]:
        chain: list[object] = nested_lists(levels)
        journal = Journal({"deep": chain})
        copy = journal.view["deep"]
        for _ in range(levels):
            copy = copy[0]
        value: list[object] = []
        for _ in range(added):
            value = [value]
        copy.append(value)
        return journal, chain

    def test_past_the_cap_in_place_is_refused(self) -> None:
        """Sixty levels in memory and five more appended at the innermost list: refused, where
        the five counted alone passed."""
        journal, _ = self._innermost_after(60, 4)
        with pytest.raises(NonSerializableResultError, match="nested more than 64 levels deep"):
            journal.prepare(rebuild)

    def test_within_the_cap_in_place_commits(self) -> None:
        """Sixty levels and two appended (63 below the top): committed into memory's list."""
        journal, chain = self._innermost_after(60, 2)
        memory = {"deep": chain}
        journal.prepare(rebuild).apply(memory)
        innermost: object = chain
        depth = 0
        while isinstance(innermost, list) and innermost:
            innermost, depth = innermost[0], depth + 1
        assert depth == 63
