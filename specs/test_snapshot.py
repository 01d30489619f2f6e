"""MemorySnapshot: restores memory exactly, in place, so references held elsewhere stay valid."""

from __future__ import annotations

import collections
from typing import Any

from recurgent import Agent
from recurgent._snapshot import MemorySnapshot
from recurgent.outcome import Outcome
from recurgent.testing import ScriptedProvider


class TestRestoreInPlace:
    """Every mutable container goes back to its recorded contents without being replaced."""

    def test_added_changed_and_deleted_keys_are_restored(self) -> None:
        """Keys added after the snapshot vanish, deleted ones return, changed ones revert."""
        memory: dict[str, Any] = {"keep": 1, "change": "old", "drop": [1]}
        snapshot = MemorySnapshot.take(memory)
        memory["new"] = True
        memory["change"] = "new"
        del memory["drop"]

        snapshot.restore()

        assert memory == {"keep": 1, "change": "old", "drop": [1]}

    def test_nested_containers_are_the_same_objects_with_old_contents(self) -> None:
        """Lists, dicts, sets, deques and bytearrays nested anywhere are restored in place."""
        items = [1, {"inner": [2]}]
        tags = {"a"}
        queue = collections.deque([1])
        raw = bytearray(b"ab")
        memory: dict[str, Any] = {"items": items, "tags": tags, "queue": queue, "raw": raw}
        inner = items[1]
        snapshot = MemorySnapshot.take(memory)
        items.append(3)
        inner["inner"].append(9)
        inner["extra"] = 1
        tags.add("b")
        queue.appendleft(0)
        raw.extend(b"cd")
        memory["items"] = ["replacement"]

        snapshot.restore()

        assert memory["items"] is items
        assert items[1] is inner
        assert (items, tags, list(queue), bytes(raw)) == ([1, {"inner": [2]}], {"a"}, [1], b"ab")

    def test_containers_inside_tuples_and_outcomes_are_restored(self) -> None:
        """A list inside a tuple and an Outcome's list value are recorded too."""
        in_tuple: list[int] = [1]
        in_outcome: list[int] = [2]
        memory: dict[str, Any] = {"pair": (in_tuple, 0), "last": Outcome.ok(in_outcome)}
        snapshot = MemorySnapshot.take(memory)
        in_tuple.append(5)
        in_outcome.clear()

        snapshot.restore()

        assert (in_tuple, in_outcome) == ([1], [2])

    def test_cycles_and_shared_references_survive(self) -> None:
        """A self-referencing list and a list shared by two keys restore once, keeping sharing."""
        shared = [1]
        cycle: list[Any] = []
        cycle.append(cycle)
        memory: dict[str, Any] = {"a": shared, "b": shared, "cycle": cycle}
        snapshot = MemorySnapshot.take(memory)
        shared.append(2)
        cycle.append("x")

        snapshot.restore()

        assert memory["a"] is memory["b"] is shared
        assert shared == [1]
        assert len(cycle) == 1
        assert cycle[0] is cycle

    def test_deep_nesting_is_restored_at_any_depth(self) -> None:
        """A change 1000 levels down is undone."""
        root: list[Any] = []
        node = root
        for _ in range(1000):
            child: list[Any] = []
            node.append(child)
            node = child
        memory: dict[str, Any] = {"root": root}
        snapshot = MemorySnapshot.take(memory)
        node.append("deep change")

        snapshot.restore()

        assert node == []

    def test_agents_in_memory_are_kept_by_reference_without_dynamic_calls(self) -> None:
        """Taking and restoring a snapshot never calls an agent stored in memory."""
        provider = ScriptedProvider()
        stored = Agent("helper", provider=provider, log=False)
        memory: dict[str, Any] = {"helper": stored}
        snapshot = MemorySnapshot.take(memory)
        memory["helper"] = None

        snapshot.restore()

        assert memory["helper"] is stored
        assert provider.calls == 0
