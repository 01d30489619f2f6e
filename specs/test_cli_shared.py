"""``--json`` and ``--root`` before a subcommand of ``recurgent tools`` / ``recurgent proposals``
mean what they mean after it (recurgent/_cli_shared.py, ADR 0128)."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from recurgent import Agent
from recurgent._cli_shared import hoist_shared_options
from recurgent._governance._cli import main as proposals_main
from recurgent._store._cli import main as tools_main
from recurgent.testing import ScriptedProvider

COMMANDS = ("list", "show")


class TestHoist:
    """The pure rearrangement."""

    @pytest.mark.parametrize(
        ("given", "expected"),
        [
            (["--root", "R", "list"], ["list", "--root", "R"]),
            (["--json", "--root=R", "show", "x"], ["show", "--json", "--root=R", "x"]),
            (["--json", "show", "x", "--root", "R"], ["show", "--json", "x", "--root", "R"]),
            (["list", "--json"], ["list", "--json"]),
            (["--json", "--root", "R"], ["--json", "--root", "R"]),
            (["--json", "nope"], ["--json", "nope"]),
            (["--root"], ["--root"]),
            (["--limit", "2", "list"], ["--limit", "2", "list"]),
            ([], []),
        ],
    )
    def test_only_a_leading_run_of_the_two_options_moves(
        self, given: list[str], expected: list[str]
    ) -> None:
        """A leading run of ``--json``/``--root PATH``/``--root=PATH`` goes after a known
        subcommand; anything else (another option first, an unknown word, a dangling
        ``--root``) is left for argparse to judge."""
        assert hoist_shared_options(given, COMMANDS) == expected


def _run(main: object, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)  # type: ignore[operator]
    return code, out.getvalue(), err.getvalue()


class TestThroughTheCommands:
    """Both groups accept the options in front, with the same answer as behind."""

    def test_tools_list_and_scorecards(self, tmp_path: Path) -> None:
        """``tools --root R --json list`` lists R's store as ``tools list --root R --json``."""
        root = tmp_path / "store"
        agent = Agent(
            "calculator",
            provider=ScriptedProvider({"add": "return args[0] + 1"}),
            log=False,
            toolstore_root=root,
        )
        assert agent.add(1).value == 2

        front = _run(tools_main, "--root", str(root), "--json", "list")
        back = _run(tools_main, "list", "--root", str(root), "--json")
        assert front == back
        assert [(a["role"], a["method"]) for a in json.loads(front[1])["artifacts"]] == [
            ("calculator", "add")
        ]
        code, out, _ = _run(
            tools_main, "--json", "scorecards", "calculator", "add", "--root", str(root)
        )
        assert (code, json.loads(out)["versions"][0]["lifecycle_state"]) == (0, "probation")

    def test_proposals_list_and_the_bare_group(self, tmp_path: Path) -> None:
        """``proposals --root R --json list`` and ``proposals --json --root R`` both list."""
        root = tmp_path / "store"
        agent = Agent("calculator", provider=ScriptedProvider({}), log=False, toolstore_root=root)
        made = agent.propose(proposal_type="note", target="t", proposed_diff_summary="s")

        for argv in (("--root", str(root), "--json", "list"), ("--json", "--root", str(root))):
            code, out, _ = _run(proposals_main, *argv)
            listed = json.loads(out)
            assert (code, listed["proposal_count"], listed["proposals"][0]["id"]) == (
                0,
                1,
                made.value["id"],
            )
