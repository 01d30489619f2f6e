"""Host code in memory as the journal hands it out (ADRs 0065, 0068, 0069): guarded, withheld,
resolved back when stored, and a defaultdict's factory committed or refused."""

from __future__ import annotations

import collections
import json
from typing import Any

import pytest

from recurgent._journal import Journal
from recurgent._journal._shared import HostCall, HostClass, Withheld
from recurgent._sandbox import rebuild
from recurgent.errors import NonSerializableResultError


class _Stopped(Exception):
    """What the test guard raises once its attempt 'ended'."""


class _Guard:
    def __init__(self) -> None:
        self.ended = False

    def __call__(self) -> None:
        if self.ended:
            raise _Stopped


class _Thing:
    def __init__(self, n: int = 0) -> None:
        self.n = n


def _journal(memory: dict[str, Any]) -> tuple[Journal, _Guard]:
    guard = _Guard()
    return Journal(memory, guard=guard), guard


class TestHostClasses:
    """A host class is a ``HostClass`` given a guard; builtin types stay as they are."""

    def test_it_constructs_until_the_guard_refuses(self) -> None:
        """Called while the attempt runs it builds; after, the guard's stop is raised."""
        journal, guard = _journal({"cls": _Thing})
        wrapper = journal.view["cls"]
        built = wrapper(3)
        guard.ended = True

        with pytest.raises(_Stopped):
            wrapper(4)
        assert (type(wrapper), type(built), built.n) == (HostClass, _Thing, 3)

    def test_builtin_types_are_shared_as_they_are(self) -> None:
        """``list`` in memory is ``list``: the program has it anyway."""
        journal, _ = _journal({"kind": list})

        assert journal.view["kind"] is list

    def test_stored_elsewhere_it_resolves_to_the_class(self) -> None:
        """Moving the wrapper to another key commits the class itself."""
        memory: dict[str, Any] = {"cls": _Thing}
        journal, _ = _journal(memory)
        journal.view["again"] = journal.view["cls"]

        journal.prepare(rebuild).apply(memory)

        assert memory == {"cls": _Thing, "again": _Thing}

    def test_without_a_guard_the_class_is_shared(self) -> None:
        """A journal built without a guard hands host code out as it is (ADR 0057)."""
        assert Journal({"cls": _Thing}).view["cls"] is _Thing


class TestModules:
    """A module in memory is withheld, and resolves back when moved."""

    def test_a_module_is_withheld_and_moves_as_itself(self) -> None:
        """The view holds a stand-in; stored under another key, memory gets the module."""
        memory: dict[str, Any] = {"mod": json}
        journal, _ = _journal(memory)
        stand_in = journal.view["mod"]
        journal.view["copy"] = stand_in

        journal.prepare(rebuild).apply(memory)

        assert type(stand_in) is Withheld and memory == {"mod": json, "copy": json}


def _make() -> str:
    return "made"


class TestDefaultdictFactories:
    """A defaultdict's factory: guarded on copy, committed when changed, refused when made."""

    def test_a_host_function_factory_is_guarded_on_the_copy(self) -> None:
        """The copy's factory is a ``HostCall``; after the attempt a missing key stops."""
        journal, guard = _journal({"d": collections.defaultdict(_make)})
        copy = journal.view["d"]
        first = copy["a"]
        guard.ended = True

        with pytest.raises(_Stopped):
            copy["b"]
        assert (type(copy.default_factory), first) == (HostCall, "made")

    def test_an_unchanged_host_factory_writes_nothing(self) -> None:
        """Reading a key through the guarded factory commits the key, not a factory patch."""
        groups: collections.defaultdict[str, str] = collections.defaultdict(_make)
        memory: dict[str, Any] = {"d": groups}
        journal, _ = _journal(memory)
        journal.view["d"]["a"]

        writes = journal.prepare(rebuild)
        writes.apply(memory)

        assert [patch.kind for patch in writes.patches] == ["dict"]
        assert (groups.default_factory, dict(groups)) == (_make, {"a": "made"})

    def test_a_plain_factory_commits(self) -> None:
        """``default_factory = set`` lands on memory's defaultdict as an ``attrs`` patch."""
        groups: collections.defaultdict[str, Any] = collections.defaultdict(list)
        memory: dict[str, Any] = {"d": groups}
        journal, _ = _journal(memory)
        journal.view["d"].default_factory = set

        writes = journal.prepare(rebuild)
        writes.apply(memory)

        assert [patch.kind for patch in writes.patches] == ["attrs"]
        assert groups.default_factory is set

    def test_a_factory_the_attempt_made_is_refused(self) -> None:
        """A function that is neither plain nor memory's: ``NonSerializableResultError``."""
        groups: collections.defaultdict[str, Any] = collections.defaultdict(list)
        journal, _ = _journal({"d": groups})
        journal.view["d"].default_factory = lambda: 1

        with pytest.raises(NonSerializableResultError, match=r"context\['d'\]\.default_factory"):
            journal.prepare(rebuild)
        assert groups.default_factory is list

    def test_a_withheld_factory_leaves_the_copy_without_one(self) -> None:
        """``rows.pop`` of a host list is withheld: a missing key on the copy is a ``KeyError``
        and pops nothing from the host's list (it used to); memory keeps its factory."""
        rows: list[Any] = ["kept"]
        groups: collections.defaultdict[str, Any] = collections.defaultdict(rows.pop)
        memory: dict[str, Any] = {"d": groups}
        journal, _ = _journal(memory)
        copy = journal.view["d"]

        with pytest.raises(KeyError):
            copy["x"]
        writes = journal.prepare(rebuild)
        writes.apply(memory)

        assert (copy.default_factory, writes.patches, rows) == (None, [], ["kept"])
        assert groups.default_factory == rows.pop
