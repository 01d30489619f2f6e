"""Every executor behind the execution port: worker processes and Ray (a local cluster)."""

from __future__ import annotations

from pathlib import Path

import pytest

from recurgent.errors import UsageError
from specs.map.support import DOUBLE, counting_agent, in_threads, map_lines, pick, values

TRICKY = "if args[0] == 'hang':\n    while True:\n        pass\nresult = 100 // len(args[0])"
"""Answers 100 // len(item); '' fails (ZeroDivisionError); 'hang' loops until its deadline."""
TRICKY_ITEMS = ["abcd", "", "hang", "a", "abcde", "ab"]
TRICKY_VALUES = [25, ("execution",), ("timeout",), 100, 20, 50]


class TestProcesses:
    def test_worker_processes_keep_order_and_fail_items_alone(self, tmp_path: Path) -> None:
        """executor='process': order kept, a failing and a hung item get their own Outcomes."""
        agent, provider = counting_agent(tmp_path, TRICKY)

        outcomes = agent.map(
            "score", TRICKY_ITEMS, executor="process", batch_size=2, timeout_seconds=1.0
        )

        assert values(outcomes) == TRICKY_VALUES
        assert provider.calls == 1
        (summary,) = map_lines(tmp_path / "calls.jsonl")
        assert pick(summary, "map_executor", "map_workers", "map_batches") == {
            "map_executor": "process",
            "map_workers": 2,
            "map_batches": 3,
        }


@pytest.mark.ray
@pytest.mark.usefixtures("ray_cluster")
class TestRay:
    def test_ray_keeps_order_and_fails_items_alone(self, tmp_path: Path) -> None:
        """executor='ray': order kept, a failing and a hung item get their own Outcomes, one
        request; the summary names the remote executor."""
        agent, provider = counting_agent(tmp_path, TRICKY)

        outcomes = agent.map(
            "score", TRICKY_ITEMS, executor="ray", batch_size=2, timeout_seconds=1.0
        )

        assert values(outcomes) == TRICKY_VALUES
        assert provider.calls == 1
        (summary,) = map_lines(tmp_path / "calls.jsonl")
        assert pick(summary, "map_executor", "map_ok", "map_errors") == {
            "map_executor": "remote",
            "map_ok": 4,
            "map_errors": 2,
        }

    def test_ray_maps_and_starmaps_with_memory_and_rich_values(self, tmp_path: Path) -> None:
        """Memory reaches the actors as a snapshot; tuples, sets and Outcomes come back as they
        are; starmap unpacks."""
        program = (
            "if args[1] < 0:\n"
            "    result = Outcome.error(error_type='negative', error_message='below zero')\n"
            "else:\n"
            "    result = (args[0] * context['factor'], {args[1]})"
        )
        agent, provider = counting_agent(tmp_path, program)
        agent.factor = 10

        outcomes = agent.starmap("pair", [(1, 2), (2, -1), (3, 4)], executor="ray")

        assert values(outcomes) == [(10, {2}), ("negative",), (30, {4})]
        assert outcomes[1].error_message == "below zero"
        assert provider.calls == 1

    def test_concurrent_ray_maps_generate_once(self, tmp_path: Path) -> None:
        """Three threads map on Ray at once: one request, every answer right."""
        agent, provider = counting_agent(tmp_path, DOUBLE, delay=0.3)

        results = in_threads(3, lambda i: agent.map("double", [i, i + 1], executor="ray"))

        assert provider.calls == 1
        assert [values(r) for r in results] == [[2 * i, 2 * i + 2] for i in range(3)]

    def test_a_program_calling_tools_is_refused_on_ray_before_any_batch(
        self, tmp_path: Path
    ) -> None:
        """Ray's actors reach no agent: a program using tool() is a UsageError once it is
        known, before any item runs there."""
        agent, _ = counting_agent(
            tmp_path, "if args[0] > 99:\n    tool('helper')\nresult = args[0]"
        )

        with pytest.raises(UsageError, match="uses tool, which a remote map worker"):
            agent.map("ask_helper", [1, 2, 3], executor="ray")
        assert map_lines(tmp_path / "calls.jsonl")[0]["map_batches"] == 0
