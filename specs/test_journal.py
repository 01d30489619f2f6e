"""The memory journal: attempts work on a private view; commit is in place, rollback is a drop."""

from __future__ import annotations

import collections
import json
import threading
from collections.abc import Callable
from typing import Any

from recurgent import Agent
from recurgent._journal import Journal, MemoryView, apply_plain, writable
from recurgent._sandbox import rebuild
from recurgent.outcome import Outcome
from recurgent.testing import FunctionProvider, ScriptedProvider


def _commit(journal: Journal, memory: dict[str, Any]) -> None:
    journal.prepare(rebuild).apply(memory)


class TestViewIsADict:
    """Generated code's ``context`` behaves like the dict it stands for."""

    def test_dict_idioms_see_memory(self) -> None:
        """isinstance, json.dumps, dict(), {**}, items, get, in and len all see memory."""
        view = Journal({"a": [1], "b": "x"}).view

        assert (
            isinstance(view, dict),
            json.dumps(view, sort_keys=True),
            dict(view),
            {**view},
            sorted(view.items()),
            view.get("a"),
            "b" in view,
            len(view),
        ) == (
            True,
            '{"a": [1], "b": "x"}',
            {"a": [1], "b": "x"},
            {"a": [1], "b": "x"},
            [("a", [1]), ("b", "x")],
            [1],
            True,
            2,
        )

    def test_every_read_hands_out_a_copy(self) -> None:
        """No read path (item, get, values, dict(), {**}, |, copy) returns memory's own list."""
        rows = [1, 2]
        memory: dict[str, Any] = {"rows": rows}

        reads: list[Callable[[MemoryView], Any]] = [
            lambda v: v["rows"],
            lambda v: v.get("rows"),
            lambda v: next(iter(v.values())),
            lambda v: dict(v)["rows"],
            lambda v: {**v}["rows"],
            lambda v: (v | {})["rows"],
            lambda v: v.copy()["rows"],
            lambda v: v.setdefault("rows"),
            lambda v: v.pop("rows"),
        ]

        assert [read(Journal(memory).view) is rows for read in reads] == [False] * len(reads)

    def test_the_view_cannot_be_constructed_by_code(self) -> None:
        """``type(context)()`` raises instead of making a second view."""
        try:
            MemoryView()
        except TypeError as error:
            message = str(error)
        assert message == "memory views are made by the runtime; build a plain dict instead"


class TestCommitInPlace:
    """Commit writes the attempt's changes into the containers memory already holds."""

    def test_added_changed_and_deleted_keys(self) -> None:
        """New keys appear, changed ones change, deleted ones go; untouched ones stay."""
        memory: dict[str, Any] = {"keep": 1, "change": "old", "drop": [1]}
        journal = Journal(memory)
        view = journal.view
        view["new"] = True
        view["change"] = "new"
        del view["drop"]

        _commit(journal, memory)

        assert memory == {"keep": 1, "change": "new", "new": True}

    def test_nested_containers_keep_their_identity(self) -> None:
        """Lists, dicts, sets, deques and bytearrays changed through the view change in place."""
        items: list[Any] = [1, {"inner": [2]}]
        inner = items[1]
        tags = {"a"}
        queue = collections.deque([1])
        raw = bytearray(b"ab")
        memory: dict[str, Any] = {"items": items, "tags": tags, "queue": queue, "raw": raw}
        journal = Journal(memory)
        view = journal.view
        view["items"].append(3)
        view["items"][1]["inner"].append(9)
        view["items"][1]["extra"] = 1
        view["tags"].add("b")
        view["queue"].appendleft(0)
        view["raw"].extend(b"cd")

        _commit(journal, memory)

        assert (memory["items"] is items, items[1] is inner, memory["tags"] is tags) == (
            True,
            True,
            True,
        )
        assert (items, tags, list(queue), bytes(raw)) == (
            [1, {"inner": [2, 9], "extra": 1}, 3],
            {"a", "b"},
            [0, 1],
            b"abcd",
        )

    def test_containers_inside_tuples_and_outcomes(self) -> None:
        """A list inside a tuple and an Outcome's list value are changed in place too."""
        in_tuple: list[int] = [1]
        in_outcome: list[int] = [2]
        memory: dict[str, Any] = {"pair": (in_tuple, 0), "last": Outcome.ok(in_outcome)}
        journal = Journal(memory)
        journal.view["pair"][0].append(5)
        journal.view["last"].value.clear()

        _commit(journal, memory)

        assert (in_tuple, in_outcome, memory["pair"][0] is in_tuple) == ([1, 5], [], True)

    def test_shared_and_cyclic_containers(self) -> None:
        """A list shared by two keys stays shared; a self-referencing list keeps its cycle."""
        shared = [1]
        cycle: list[Any] = []
        cycle.append(cycle)
        memory: dict[str, Any] = {"a": shared, "b": shared, "cycle": cycle}
        journal = Journal(memory)
        view = journal.view
        view["a"].append(2)
        view["cycle"].append("x")

        _commit(journal, memory)

        assert (memory["a"] is memory["b"] is shared, shared, len(cycle), cycle[0] is cycle) == (
            True,
            [1, 2],
            2,
            True,
        )

    def test_a_copy_stored_under_a_new_key_is_the_original(self) -> None:
        """``context['b'] = context['a']`` commits as memory's own object, not a copy."""
        rows = [1]
        memory: dict[str, Any] = {"a": rows}
        journal = Journal(memory)
        journal.view["b"] = journal.view["a"]

        _commit(journal, memory)

        assert memory["b"] is rows

    def test_writes_are_plain_data(self) -> None:
        """``Writes.as_plain()`` names top-level sets/deletes and patches by path."""
        memory: dict[str, Any] = {"rows": [1], "gone": 0, "cfg": {"k": 1}}
        journal = Journal(memory)
        view = journal.view
        view["rows"].append(2)
        view["cfg"]["k"] = 2
        del view["gone"]
        view["n"] = 1

        plain = journal.prepare(rebuild).as_plain()

        assert plain == {
            "set": {"n": 1},
            "delete": ["gone"],
            "patches": [
                {"path": ["rows"], "kind": "extend", "set": [], "delete": [], "items": [2]},
                {"path": ["cfg"], "kind": "dict", "set": [["k", 2]], "delete": [], "items": []},
            ],
        }
        assert json.loads(json.dumps(plain)) == plain


class TestPlainWritesForAWorker:
    """Writes survive a JSON round trip and commit by path into another copy of memory."""

    def test_plain_writes_commit_in_place_by_path(self) -> None:
        """A worker's plain writes land in the host's own containers, found by path."""
        rows: list[Any] = [{"n": 1}]
        host: dict[str, Any] = {"rows": rows, "cfg": {"k": 1}, "gone": 0}
        worker = json.loads(json.dumps(host))
        journal = Journal(worker)
        view = journal.view
        view["rows"][0]["n"] = 2
        view["rows"].append({"n": 3})
        view["cfg"]["k"] = 2
        del view["gone"]
        view["new"] = [1]
        shipped = json.loads(json.dumps(journal.prepare(rebuild).as_plain()))

        apply_plain(host, shipped)

        assert (host, host["rows"] is rows) == (
            {"rows": [{"n": 2}, {"n": 3}], "cfg": {"k": 2}, "new": [1]},
            True,
        )

    def test_discard_leaves_memory_and_forgets_the_copies(self) -> None:
        """``discard()`` empties the view; memory is as it was."""
        memory: dict[str, Any] = {"rows": [1]}
        journal = Journal(memory)
        journal.view["rows"].append(2)

        journal.discard()

        assert (memory, dict.__len__(journal.view)) == ({"rows": [1]}, 0)


class TestRollbackLeavesOthersAlone:
    """Dropping a journal undoes only its own attempt."""

    def test_discarded_attempt_changes_nothing(self) -> None:
        """Writes through a view that is never committed never reach memory."""
        rows = [1]
        memory: dict[str, Any] = {"rows": rows}
        view = Journal(memory).view
        view["rows"].append(2)
        view["x"] = 1

        assert (memory, rows) == ({"rows": [1]}, [1])

    def test_host_setter_from_another_thread_survives_a_failed_call(self) -> None:
        """A value set from another thread while a program runs survives the program's failure."""
        entered, release = threading.Event(), threading.Event()

        def blocking(request: Any) -> str:
            entered.set()
            release.wait(10)
            return "result = 'waited'"

        gate = Agent("gate", provider=FunctionProvider(blocking), log=False)
        failing = "context['mine'] = 1\nargs[0].wait()\nraise ValueError('boom')"
        agent = Agent(
            "worker",
            provider=ScriptedProvider({"work": [failing, "raise ValueError('again')"]}),
            log=False,
        )
        results: list[Outcome] = []
        thread = threading.Thread(target=lambda: results.append(agent.work(gate)))
        thread.start()
        assert entered.wait(10)
        agent.setting = "from host"  # while the worker's program is running
        release.set()
        thread.join(30)

        memory = agent.runtime_context
        assert (results[0].error_type, memory.get("setting"), "mine" in memory) == (
            "execution",
            "from host",
            False,
        )

    def test_another_agents_committed_append_to_a_shared_list_survives(self) -> None:
        """B appends to a list A and B share, during A's failing attempt: B's append stays."""
        shared: list[str] = []
        b = Agent("b", provider=ScriptedProvider({"add": "context['log'].append('b')"}), log=False)
        b.log = shared
        failing = "context['log'].append('a')\nargs[0].add()\nraise ValueError('boom')"
        a = Agent(
            "a",
            provider=ScriptedProvider({"fail": [failing, "raise ValueError('again')"]}),
            log=False,
        )
        a.log = shared

        outcome = a.fail(b)

        assert (outcome.error_type, shared, a.log is shared, b.log is shared) == (
            "execution",
            ["b"],
            True,
            True,
        )

    def test_append_commit_keeps_a_concurrent_append(self) -> None:
        """An attempt that only appended commits by extending, after appends made meanwhile."""
        rows: list[int] = [1]
        memory: dict[str, Any] = {"rows": rows}
        journal = Journal(memory)
        journal.view["rows"].append(3)
        rows.append(2)  # someone else, meanwhile

        _commit(journal, memory)

        assert rows == [1, 2, 3]


class TestHostWritesDuringAnAttempt:
    """Host operations made for generated code write the attempt's view."""

    def test_writable_is_the_view_only_inside_the_attempt(self) -> None:
        """``writable(memory)`` is the active view in the attempt's context, else memory."""
        memory: dict[str, Any] = {}
        journal = Journal(memory)
        token = journal.activate()
        inside = writable(memory)
        Journal.deactivate(token)

        assert (inside is journal.view, writable(memory) is memory) == (True, True)

    def test_tool_registered_by_a_failed_attempt_is_rolled_back(self) -> None:
        """delegate() in an attempt that then fails leaves no tool entry behind."""
        code = "delegate('helper', purpose='help')\nraise ValueError('boom')"
        agent = Agent("boss", provider=ScriptedProvider({"plan": [code, code]}), log=False)

        outcome = agent.plan()

        assert (outcome.error_type, agent.runtime_context.get("tools")) == ("execution", None)


class TestRememberAndConcurrentCalls:
    """remember() from code joins the attempt; calls of one agent from two threads both commit."""

    def test_remember_in_a_failed_attempt_is_rolled_back(self) -> None:
        """``remember(x=1)`` followed by an exception leaves no ``x`` in memory."""
        code = "remember(x=1)\nraise ValueError('boom')"
        agent = Agent("t", provider=ScriptedProvider({"run": [code, code]}), log=False)

        outcome = agent.run()

        assert (outcome.error_type, "x" in agent.runtime_context) == ("execution", False)

    def test_remember_is_visible_to_the_rest_of_the_attempt(self) -> None:
        """What remember() wrote is readable through context in the same attempt."""
        code = "remember(x=[1])\ncontext['x'].append(2)\nresult = context['x']"
        agent = Agent("t", provider=ScriptedProvider({"run": code}), log=False)

        outcome = agent.run()

        assert (outcome.value, agent.x) == ([1, 2], [1, 2])

    def test_two_threads_calling_one_agent_both_commit(self) -> None:
        """Overlapping calls of one agent write different keys; both writes are kept."""
        both_running = threading.Barrier(2, timeout=10)

        def reply(request: Any) -> str:
            both_running.wait()  # the two calls overlap; neither holds the agent for long
            key = request.args[0]
            return f"context[{key!r}] = True\nresult = {key!r}"

        agent = Agent("t", provider=FunctionProvider(reply), log=False)
        threads = [threading.Thread(target=agent.mark, args=(key,)) for key in ("a", "b")]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(30)

        memory = agent.runtime_context
        assert (memory.get("a"), memory.get("b"), len(memory["conversation_history"])) == (
            True,
            True,
            2,
        )


class TestUnboundBypass:
    """``dict.<method>(context, ...)`` goes through the view, not its raw storage."""

    def test_unbound_dict_methods_return_copies(self) -> None:
        """dict.get / dict.items / dict.values on context do not hand out memory's list."""
        rows = [1]
        code = (
            "a = dict.get(context, 'rows')\n"
            "b = dict.items(context)\n"
            "c = dict.values(context)\n"
            "a.append(2)\n"
            "result = [len(a), list(b)[0][1] is a, list(c)[0] is a]"
        )
        agent = Agent("t", provider=ScriptedProvider({"run": code}), log=False)
        agent.rows = rows

        outcome = agent.run()

        assert (outcome.value, agent.rows is rows, rows) == ([2, True, True], True, [1, 2])


class TestPackageLayout:
    """The journal is a package (ADR 0058); the names other modules import keep their path."""

    def test_names_other_modules_import_come_from_recurgent_journal(self) -> None:
        """Every name imported from recurgent._journal elsewhere is there, from its submodule."""
        import recurgent._journal as journal

        homes = {
            name: getattr(getattr(journal, name), "__module__", None)
            for name in (
                "Journal",
                "MemoryView",
                "Patch",
                "Writes",
                "after_commit",
                "apply_plain",
                "writable",
            )
        }

        assert homes == {
            "Journal": "recurgent._journal._core",
            "MemoryView": "recurgent._journal._view",
            "Patch": "recurgent._journal._writes",
            "Writes": "recurgent._journal._writes",
            "after_commit": "recurgent._journal._view",
            "apply_plain": "recurgent._journal._writes",
            "writable": "recurgent._journal._view",
        }
        assert (
            sorted(journal.__all__),
            callable(journal.redirect_unbound),
            "get" in journal.REDIRECTED_DICT_METHODS,
        ) == (
            [
                "Journal",
                "MemoryView",
                "Patch",
                "REDIRECTED_DICT_METHODS",
                "Rebuild",
                "Writes",
                "after_commit",
                "apply_plain",
                "redirect_unbound",
                "writable",
            ],
            True,
            True,
        )
