"""Agent.map and Agent.starmap in process: one program, items in order, failures per item."""

from __future__ import annotations

from pathlib import Path

import pytest

from recurgent import Agent
from recurgent.errors import UsageError
from recurgent.testing import read_log
from specs.map.support import (
    DOUBLE,
    counting_agent,
    in_threads,
    lines_of,
    map_lines,
    pick,
    values,
)


class TestOneProgram:
    def test_map_returns_one_outcome_per_item_in_order_from_one_request(
        self, tmp_path: Path
    ) -> None:
        """300 items, one provider request: each Outcome is twice its item, in input order."""
        agent, provider = counting_agent(tmp_path, DOUBLE)

        outcomes = agent.map("double", range(300), batch_size=7)

        assert values(outcomes) == [2 * n for n in range(300)]
        assert provider.calls == 1
        assert {o.tool_role for o in outcomes} == {"mapper"}
        assert {o.method_name for o in outcomes} == {"double"}
        assert {o.code for o in outcomes} == {DOUBLE}

    def test_starmap_unpacks_each_item_as_positional_arguments(self, tmp_path: Path) -> None:
        """starmap calls method(*item)."""
        agent, provider = counting_agent(tmp_path, "result = args[0] - args[1]")

        outcomes = agent.starmap("subtract", [(5, 2), [10, 1], (0, 3)])

        assert values(outcomes) == [3, 9, -3]
        assert provider.calls == 1

    def test_a_second_map_reuses_the_stored_program(self, tmp_path: Path) -> None:
        """With a store, the next map's first item is a stored run: no request at all."""
        store = tmp_path / "store"
        agent, provider = counting_agent(tmp_path, DOUBLE, toolstore_root=store)
        agent.map("double", [1, 2])
        again = Agent("mapper", provider=provider, toolstore_root=store, log=False)

        outcomes = again.map("double", [3, 4, 5])

        assert values(outcomes) == [6, 8, 10]
        assert provider.calls == 1

    def test_an_empty_map_asks_nothing_and_returns_an_empty_list(self, tmp_path: Path) -> None:
        """No items, no request, no item lines: only the summary."""
        agent, provider = counting_agent(tmp_path, DOUBLE)

        assert agent.map("double", []) == []
        assert provider.calls == 0
        assert [pick(e, "map_items", "map_ok") for e in map_lines(tmp_path / "calls.jsonl")] == [
            {"map_items": 0, "map_ok": 0}
        ]

    def test_concurrent_maps_of_one_method_generate_once(self, tmp_path: Path) -> None:
        """Four threads map the same method at once: one request; each gets its own answers."""
        agent, provider = counting_agent(tmp_path, DOUBLE, delay=0.3)

        results = in_threads(4, lambda i: agent.map("double", range(i * 10, i * 10 + 10)))

        assert provider.calls == 1
        assert [values(r) for r in results] == [
            [2 * n for n in range(i * 10, i * 10 + 10)] for i in range(4)
        ]
        sources = sorted(e["map_program_source"] for e in map_lines(tmp_path / "calls.jsonl"))
        assert sources == ["generated", "shared", "shared", "shared"]

    def test_a_program_that_ignores_its_arguments_is_not_mapped(self, tmp_path: Path) -> None:
        """A program for one input only (it reads no args) is no map's program: each item is
        an ordinary call with its own request."""
        agent, provider = counting_agent(tmp_path, "result = 7")

        outcomes = agent.map("seven", [1, 2, 3])

        assert values(outcomes) == [7, 7, 7]
        assert provider.calls == 3
        (summary,) = map_lines(tmp_path / "calls.jsonl")
        assert pick(summary, "map_mode", "map_items", "map_ok") == {
            "map_mode": "calls",
            "map_items": 3,
            "map_ok": 3,
        }


class TestFailuresPerItem:
    def test_a_failing_item_is_its_own_error_outcome(self, tmp_path: Path) -> None:
        """100 // item fails for 0 only: that item is an execution error, the rest answer."""
        agent, provider = counting_agent(tmp_path, "result = 100 // args[0]")

        outcomes = agent.map("divide", [5, 0, 4, 10], batch_size=2)

        assert values(outcomes) == [20, ("execution",), 25, 10]
        assert "ZeroDivisionError" in (outcomes[1].error_message or "")
        assert provider.calls == 1

    def test_a_hung_item_times_out_alone(self, tmp_path: Path) -> None:
        """An item that loops forever gets its own timeout Outcome; the others answer."""
        agent, _ = counting_agent(
            tmp_path, "while args[0] == 'hang':\n    pass\nresult = args[0].upper()"
        )

        outcomes = agent.map("shout", ["a", "hang", "b"], timeout_seconds=0.5)

        assert values(outcomes) == ["A", ("timeout",), "B"]

    def test_failed_items_get_lines_and_the_map_one_summary(self, tmp_path: Path) -> None:
        """The log has the first call's line, one line per failed item and one summary: no
        line for an item that answered."""
        log = tmp_path / "calls.jsonl"
        agent, _ = counting_agent(tmp_path, "result = 100 // args[0]")

        agent.map("divide", [1, 0, 2, 0, 5], batch_size=2)

        entries = read_log(log)
        assert [e.get("entry_kind") for e in entries] == [
            None,
            "map_item_failed",
            "map_item_failed",
            "map",
        ]
        assert [pick(e, "item_index", "outcome_error_type") for e in entries[1:3]] == [
            {"item_index": 1, "outcome_error_type": "execution"},
            {"item_index": 3, "outcome_error_type": "execution"},
        ]
        summary = entries[-1]
        assert entries[0]["map_id"] == summary["map_id"] == entries[1]["map_id"]
        assert pick(
            summary, "map_items", "map_ok", "map_errors", "map_error_types", "map_executor"
        ) == {
            "map_items": 5,
            "map_ok": 3,
            "map_errors": 2,
            "map_error_types": {"execution": 2},
            "map_executor": "in_process",
        }
        assert summary["map_first_call_id"] == entries[0]["call_id"]

    def test_failed_item_lines_are_capped(self, tmp_path: Path) -> None:
        """25 failures: 20 lines, and the summary counts the 5 left out (ADR 0113)."""
        agent, _ = counting_agent(tmp_path, "result = 100 // args[0]")

        agent.map("divide", [1] + [0] * 25, batch_size=100)

        log = tmp_path / "calls.jsonl"
        assert len(lines_of(log, "map_item_failed")) == 20
        (summary,) = map_lines(log)
        assert pick(summary, "map_failed_items_logged", "map_failed_items_omitted") == {
            "map_failed_items_logged": 20,
            "map_failed_items_omitted": 5,
        }


class TestRepair:
    BROKEN = "result = 12 // (args[0] % 4)"
    FIXED = "result = 12 // max(1, args[0] % 4)"

    def test_a_program_failing_on_many_items_is_repaired_once(self, tmp_path: Path) -> None:
        """A quarter of the items fail intrinsically: one repair request (the store's repair of
        the stored program on a failing item), then the failed and remaining items run the
        repaired program: every item answers, two requests in all."""
        agent, provider = counting_agent(
            tmp_path, [self.BROKEN, self.FIXED], toolstore_root=tmp_path / "store"
        )
        items = list(range(1, 41))

        outcomes = agent.map("share", items, batch_size=8)

        assert values(outcomes) == [12 // max(1, n % 4) for n in items]
        assert provider.calls == 2
        assert provider.requests[1].purpose == "repair"
        (summary,) = map_lines(tmp_path / "calls.jsonl")
        assert pick(summary, "map_repair_attempted", "map_repaired", "map_ok") == {
            "map_repair_attempted": True,
            "map_repaired": True,
            "map_ok": 40,
        }
        assert summary["map_repair_call_id"] is not None

    def test_without_a_store_the_repair_is_a_new_generation(self, tmp_path: Path) -> None:
        """toolstore_root off: the failing item's call generates anew; still two requests."""
        agent, provider = counting_agent(tmp_path, [self.BROKEN, self.FIXED])

        outcomes = agent.map("share", list(range(1, 21)), batch_size=4)

        assert all(o.ok for o in outcomes)
        assert provider.calls == 2

    def test_a_few_failures_are_no_reason_to_repair(self, tmp_path: Path) -> None:
        """Two failures among forty items stay two error Outcomes; one request."""
        agent, provider = counting_agent(tmp_path, "result = 100 // args[0]")

        outcomes = agent.map("divide", [1, 0, *range(2, 39), 0], batch_size=5)

        assert sum(o.is_error for o in outcomes) == 2
        assert provider.calls == 1


class TestMemory:
    def test_items_read_a_snapshot_of_memory(self, tmp_path: Path) -> None:
        """A program reading memory sees the agent's values."""
        agent, _ = counting_agent(tmp_path, "result = args[0] * context['factor']")
        agent.factor = 3

        assert values(agent.map("scale", [1, 2, 3])) == [3, 6, 9]

    def test_items_see_the_history_as_it_was_when_the_map_began(self, tmp_path: Path) -> None:
        """The first item's call appends its record to the live history; the other items
        read the snapshot, which has the two records of before the map."""
        agent, _ = counting_agent(
            tmp_path, "result = len(context.get('conversation_history', [])) + args[0]"
        )
        agent.count_history(0)
        agent.count_history(0)

        outcomes = agent.map("count_history", [0, 0, 0], batch_size=1)

        assert values(outcomes) == [2, 2, 2]
        assert len(agent.runtime_context["conversation_history"]) == 3

    def test_a_program_that_writes_memory_is_regenerated_before_mapping(
        self, tmp_path: Path
    ) -> None:
        """The first call refuses a writing program as a guardrail (map_memory_write) and asks
        again; the second program maps; memory is as it was."""
        writer = "context['seen'] = args[0]\nresult = args[0] + 1"
        agent, provider = counting_agent(tmp_path, [writer, "result = args[0] + 1"])
        agent.count = 0

        outcomes = agent.map("bump", [1, 2, 3])

        assert values(outcomes) == [2, 3, 4]
        assert provider.calls == 2
        assert "map_memory_write" in provider.requests[1].user_prompt
        assert "seen" not in agent.runtime_context

    def test_an_item_that_writes_memory_is_refused_and_changes_nothing(
        self, tmp_path: Path
    ) -> None:
        """A write made only for some items is that item's guardrail error; memory, and the
        list the program changed in place, are unchanged for every other item."""
        program = (
            "if args[0] == 'x':\n"
            "    context['names'].append(args[0])\n"
            "result = len(context['names'])"
        )
        agent, _ = counting_agent(tmp_path, program)
        agent.names = ["a"]

        outcomes = agent.map("count", ["a", "x", "b", "x"], batch_size=1)

        assert values(outcomes) == [
            1,
            ("tool_registry_violation",),
            1,
            ("tool_registry_violation",),
        ]
        assert "mapper.count wrote 'names' while mapped" in str(outcomes[1].error_message)
        assert agent.runtime_context["names"] == ["a"]


class TestUsage:
    @pytest.mark.parametrize(
        ("call", "message"),
        [
            (lambda a: a.map("_private", [1]), "public dynamic method"),
            (lambda a: a.map("map", [1]), "one of the Agent's own names"),
            (lambda a: a.map("double", "abc"), "iterable of items"),
            (lambda a: a.map("double", [1], batch_size=0), "batch_size"),
            (lambda a: a.map("double", [1], concurrency=-1), "concurrency"),
            (lambda a: a.map("double", [1], executor="gpu"), "executor must be one of"),
            (lambda a: a.map("double", [1], timeout_seconds=0), "timeout_seconds"),
            (lambda a: a.map("double", [1], progress="yes"), "progress"),
            (lambda a: a.starmap("double", [1]), "starmap item 0"),
        ],
    )
    def test_mistakes_raise_usage_errors_before_any_request(
        self, tmp_path: Path, call: object, message: str
    ) -> None:
        """Each mistake is a UsageError naming it; the provider is never asked."""
        agent, provider = counting_agent(tmp_path, DOUBLE)

        with pytest.raises(UsageError, match=message):
            call(agent)  # type: ignore[operator]
        assert provider.calls == 0

    def test_map_and_starmap_are_reserved_names(self, tmp_path: Path) -> None:
        """They are the Agent's methods: never dynamic, never assignable."""
        agent, _ = counting_agent(tmp_path, DOUBLE)

        with pytest.raises(UsageError, match="reserved"):
            agent.map = 1  # type: ignore[assignment, method-assign]
        assert agent.responds_to("map") and agent.responds_to("starmap")
        assert {"map", "starmap"} <= set(dir(agent))


class TestProgress:
    def test_progress_draws_a_bar_on_stderr(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """progress=True: a tqdm bar on stderr naming the method, the items done and the
        failures; nothing on stdout."""
        agent, _ = counting_agent(tmp_path, "result = 100 // args[0]")

        agent.map("divide", [1, 2, 0, 4], progress=True)

        captured = capsys.readouterr()
        assert captured.out == ""
        assert "mapper.divide" in captured.err
        assert "4/4" in captured.err
        assert "failed=1" in captured.err

    def test_no_progress_is_silent(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """progress=False (the default) writes nothing."""
        agent, _ = counting_agent(tmp_path, DOUBLE)

        agent.map("double", [1, 2])

        assert capsys.readouterr() == ("", "")


class TestAsync:
    def test_aio_map_and_starmap_await_the_same_answers(self, tmp_path: Path) -> None:
        """agent.aio.map/starmap run the map off the event loop and return its Outcomes."""
        import asyncio

        agent, provider = counting_agent(
            tmp_path, "result = sum(args)", toolstore_root=tmp_path / "store"
        )

        async def both() -> tuple[list[object], list[object]]:
            mapped = await agent.aio.map("total", [1, 2, 3])
            starred = await agent.aio.starmap("total", [(1, 2), (3, 4, 5)])
            return values(mapped), values(starred)

        assert asyncio.run(both()) == ([1, 2, 3], [3, 12])
        assert provider.calls == 1


class TestFirstItem:
    def test_a_hung_first_item_times_out_under_the_maps_deadline(self, tmp_path: Path) -> None:
        """The first item's call runs under timeout_seconds too (not the agent's 30 s), and
        the other items still run its program."""
        agent, provider = counting_agent(
            tmp_path,
            "while args[0] == 'hang':\n    pass\nresult = args[0].upper()",
            execution_timeout_seconds=30.0,
        )

        outcomes = agent.map("shout", ["hang", "a", "b"], timeout_seconds=0.5)

        assert values(outcomes) == [("timeout",), "A", "B"]
        assert outcomes[0].error_message == (
            "Execution timeout in mapper.shout: generated code exceeded "
            "execution_timeout_seconds=0.5"
        )
        assert provider.calls == 1
        assert agent._agent.options.execution_timeout_seconds == 30.0
