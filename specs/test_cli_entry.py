"""The ``recurgent`` console script's entry (ADR 0115): ``--version``, a bare ``recurgent``, the
top-level help listing every command, and an entry that loads no runtime.

Through the installed console script (a subprocess) and through ``recurgent._cli.main`` in
process. Help text depends on the terminal width, so subprocesses run with ``COLUMNS=80``.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from importlib.metadata import version
from pathlib import Path

import pytest

from recurgent import Agent
from recurgent._cli import build_parser, main
from recurgent._cli_index import PROPOSALS_COMMANDS, TOOLS_COMMANDS, index_text
from recurgent._governance._cli import build_parser as proposals_parser
from recurgent._store._cli import build_parser as tools_parser
from recurgent.testing import ScriptedProvider

SCRIPT = Path(sys.executable).with_name("recurgent")
VERSION_LINE = f"recurgent {version('recurgent')}\n"
USAGE = "usage: recurgent [-h] [-V] COMMAND ..."
# Loaded by the runtime, never by the entry itself.
RUNTIME_MODULES = (
    "RestrictedPython",
    "jsonschema",
    "openai",
    "pydantic",
    "regex",
    "structlog",
    "recurgent._agent",
    "recurgent._governance",
    "recurgent._options",
    "recurgent._store",
)


def _run(*argv: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "COLUMNS": "80"}
    return subprocess.run([str(SCRIPT), *argv], capture_output=True, text=True, env=env, timeout=60)


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, str]]:
    """(name, help) of each subcommand, in the parser's order."""
    (group,) = (
        action for action in parser._actions if isinstance(action, argparse._SubParsersAction)
    )
    return [(choice.dest, str(choice.help)) for choice in group._choices_actions]


def _modules_after(argv: list[str]) -> list[str]:
    """The modules a fresh interpreter holds after ``main(argv)`` (stdout discarded)."""
    script = (
        "import io, json, sys, contextlib\n"
        "from recurgent._cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
        f"    code = main({argv!r})\n"
        "print(json.dumps([code, sorted(sys.modules)]))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=60
    )
    code, modules = json.loads(done.stdout)
    assert code in (0, 1)
    return list(modules)


class TestVersion:
    """``recurgent --version`` prints the installed package's version."""

    def test_console_script_prints_the_version(self) -> None:
        """The script prints ``recurgent <version from the metadata>`` and exits 0."""
        done = _run("--version")

        assert (done.returncode, done.stdout, done.stderr) == (0, VERSION_LINE, "")

    def test_short_flag_and_in_process(self, capsys: pytest.CaptureFixture[str]) -> None:
        """``-V`` is the same flag; ``main`` returns 0 instead of exiting."""
        assert main(["-V"]) == 0
        assert capsys.readouterr().out == VERSION_LINE

    def test_python_dash_m(self) -> None:
        """``python -m recurgent --version`` is the same command."""
        done = subprocess.run(
            [sys.executable, "-m", "recurgent", "--version"],
            capture_output=True,
            text=True,
            timeout=60,
        )

        assert (done.returncode, done.stdout) == (0, VERSION_LINE)

    def test_matches_the_package_attribute(self) -> None:
        """The version printed is ``recurgent.__version__``."""
        import recurgent

        assert f"recurgent {recurgent.__version__}\n" == VERSION_LINE


class TestBareInvocation:
    """A bare ``recurgent`` prints the help on stdout and exits 0 (the menu was asked for)."""

    def test_console_script_prints_the_help(self) -> None:
        """Exit 0, nothing on stderr, and stdout is the ``--help`` text."""
        bare = _run()
        helped = _run("--help")

        assert (bare.returncode, bare.stderr) == (0, "")
        assert bare.stdout == helped.stdout
        assert bare.stdout.splitlines()[0] == USAGE

    def test_in_process(self, capsys: pytest.CaptureFixture[str]) -> None:
        """``main([])`` returns 0 and prints the parser's help."""
        assert main([]) == 0
        assert capsys.readouterr().out == build_parser().format_help()

    def test_an_unknown_command_is_a_usage_error(self) -> None:
        """An unknown command still exits 2 with argparse's message on stderr."""
        done = _run("bogus")

        assert (done.returncode, done.stdout) == (2, "")
        assert done.stderr.splitlines() == [
            USAGE,
            "recurgent: error: argument COMMAND: invalid choice: 'bogus' "
            "(choose from 'watch', 'tools', 'proposals')",
        ]


class TestHelpListsEveryCommand:
    """The top-level help names watch, tools and proposals, and every command of the last two."""

    def test_command_lines(self) -> None:
        """The three commands, each on its own line with its summary."""
        lines = _run("--help").stdout.splitlines()

        assert lines[0] == USAGE
        assert "    watch        print the JSONL call log as indented call trees" in lines
        assert (
            "    tools        stored programs: list, show, prune, forget, their lifecycle" in lines
        )
        assert "    proposals    list, show, approve, reject or apply proposals" in lines
        assert "  -V, --version  print the installed version and exit" in lines

    def test_every_room_command_is_listed(self) -> None:
        """The closing section is the index, and names every tools and proposals command."""
        text = _run("--help").stdout

        assert text.endswith(index_text() + "\n")
        for name, _ in (*TOOLS_COMMANDS, *PROPOSALS_COMMANDS):
            assert f"\n  {name:<20}" in text, name

    def test_index_matches_the_tools_parser(self) -> None:
        """The index's tools commands are the tool store parser's, in order, with its help."""
        assert list(TOOLS_COMMANDS) == _subcommands(tools_parser())

    def test_index_matches_the_proposals_parser(self) -> None:
        """The index's proposals commands are the governance parser's, in order, with its help."""
        assert list(PROPOSALS_COMMANDS) == _subcommands(proposals_parser())

    def test_tools_commands_by_name(self) -> None:
        """The tools commands that exist today (a new one must be added to the index)."""
        assert [name for name, _ in TOOLS_COMMANDS] == [
            "list",
            "show",
            "prune",
            "forget",
            "scorecards",
            "decisions",
            "set-lifecycle",
            "namespace-pressure",
        ]


class TestEntryLoadsNoRuntime:
    """``--help``, ``--version``, bare and ``watch`` run on the standard library alone."""

    @pytest.mark.parametrize("argv", [["--help"], ["--version"], []])
    def test_entry_points(self, argv: list[str]) -> None:
        """None of the runtime's libraries or rooms is imported."""
        loaded = set(_modules_after(argv))

        assert sorted(name for name in RUNTIME_MODULES if name in loaded) == []

    def test_watch(self, tmp_path: Path) -> None:
        """``recurgent watch LOG`` reads the log without the runtime."""
        log = tmp_path / "calls.jsonl"
        log.write_text(json.dumps({"role": "calc", "method": "add", "outcome_status": "ok"}) + "\n")

        loaded = set(_modules_after(["watch", str(log)]))

        assert sorted(name for name in RUNTIME_MODULES if name in loaded) == []

    def test_console_script_imports(self) -> None:
        """The installed script's own imports, read from ``-X importtime``, hold no runtime."""
        done = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "recurgent", "--help"],
            capture_output=True,
            text=True,
            timeout=60,
        )
        imported = {
            line.rsplit("|", 1)[1].strip()
            for line in done.stderr.splitlines()
            if line.startswith("import time:")
        }

        assert done.returncode == 0
        assert "recurgent._cli" in imported
        assert sorted(name for name in RUNTIME_MODULES if name in imported) == []


class TestWatchShowsTheChecksum:
    """Through the public API: a reused call's line in ``recurgent watch`` names its program."""

    def test_eight_hex_digits_of_the_stored_programs_checksum(self, tmp_path: Path) -> None:
        """The second ``add`` runs the stored program; watch prints 8 hex digits of its checksum."""
        log = tmp_path / "calls.jsonl"
        provider = ScriptedProvider({"add": "result = args[0] + args[1]"})
        calc = Agent.for_("calc", provider=provider, log=log, toolstore_root=tmp_path / "tools")
        assert calc.add(1, 2).value == 3
        assert calc.add(3, 4).value == 7
        entries = [json.loads(line) for line in log.read_text().splitlines()]
        reused = [entry for entry in entries if entry["program_source"] == "persisted"]
        digest = reused[0]["artifact_checksum"].removeprefix("sha256:")

        done = _run("watch", str(log))

        (line,) = [line for line in done.stdout.splitlines() if "source=persisted" in line]
        assert f"source=persisted #{digest[:8]}  " in line
        assert len(digest) == 64
