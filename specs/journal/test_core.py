"""The journal's copy of builtin containers (``_core``): OrderedDict order on copy and commit."""

from __future__ import annotations

import collections

from recurgent._journal import Journal
from recurgent._sandbox import rebuild


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
