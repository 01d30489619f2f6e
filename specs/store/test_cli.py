"""`recurgent tools` list / show / prune / forget on a real store in tmp_path (ADR 0038)."""

from __future__ import annotations

import datetime
import io
import json
from pathlib import Path
from typing import Any

import pytest

from recurgent._store import Store
from recurgent._store._cli import main
from recurgent._store._paths import artifact_path
from recurgent._store._provenance import Provenance
from specs.store.support import call

OLD = datetime.datetime(2026, 10, 1, tzinfo=datetime.UTC)
NEW = datetime.datetime(2026, 11, 30, tzinfo=datetime.UTC)
NOW = datetime.datetime(2026, 12, 1, tzinfo=datetime.UTC)


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err, now=NOW)
    return code, out.getvalue(), err.getvalue()


def _json(*argv: str) -> Any:
    code, out, err = _run(*argv, "--json")
    assert (code, err) == (0, "")
    return json.loads(out)


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A store with an old calculator.add, a recent calculator.answer and a recent tool."""
    root = tmp_path / "store"
    Store(root, clock=lambda: OLD).record_call(call("return args[0]", method="add"))
    Store(root, clock=lambda: NEW).record_call(call())
    fetcher = Store(root, clock=lambda: NEW)
    fetcher.register_tool("web_fetcher", {"purpose": "fetch pages"})
    fetcher.record_call(
        call(
            "return args[0]",
            role="web_fetcher",
            method="fetch",
            result="failure",
            failure_class="adaptive",
        )
    )
    fetcher.touch_tool("web_fetcher", "fetch", ok=False)
    return root


class TestList:
    """list: roles, methods, cacheable, counts, last used."""

    def test_json(self, root: Path) -> None:
        """Every artifact with its summary, and the registered tools."""
        data = _json("list", "--root", str(root))

        assert [
            (a["role"], a["method"], a["cacheable"], a["success_count"], a["failure_count"])
            for a in data["artifacts"]
        ] == [
            ("calculator", "add", True, 1, 0),
            ("calculator", "answer", True, 1, 0),
            ("web_fetcher", "fetch", True, 0, 1),
        ]
        assert [a["last_used_at"] for a in data["artifacts"]] == [
            "2026-10-01T00:00:00.000Z",
            "2026-11-30T00:00:00.000Z",
            "2026-11-30T00:00:00.000Z",
        ]
        assert [a["registered_tool"] for a in data["artifacts"]] == [False, False, True]
        assert [(t["name"], t["usage_count"], t["failure_count"]) for t in data["tools"]] == [
            ("web_fetcher", 1, 1)
        ]

    def test_counts_still_waiting_in_this_process_are_listed(self, root: Path) -> None:
        """Two persisted runs not yet written: list (run in the same process) flushes first."""
        store = Store(root, clock=lambda: NEW)
        store.record_call(call(source="persisted"))
        store.record_call(call(source="persisted"))

        data = _json("list", "--root", str(root))

        assert [(a["method"], a["success_count"]) for a in data["artifacts"]] == [
            ("add", 1),
            ("answer", 3),
            ("fetch", 0),
        ]

    def test_the_author_of_each_program_is_listed(self, root: Path) -> None:
        """``author`` says whose call the code was generated for (ADR 0074); unknown is null
        in JSON and ``-`` in the table."""
        Store(root, clock=lambda: NEW).record_call(call(method="planted", author="program"))
        Store(root, clock=lambda: NEW).record_call(call(method="legacy", author=None))

        data = _json("list", "--root", str(root))
        _, out, _ = _run("list", "--root", str(root))

        assert [(a["method"], a["author"]) for a in data["artifacts"]] == [
            ("add", "host"),
            ("answer", "host"),
            ("legacy", None),
            ("planted", "program"),
            ("fetch", "host"),
        ]
        assert [line.split()[3] for line in out.splitlines()[1:4]] == ["host", "host", "-"]

    def test_text_table(self, root: Path) -> None:
        """The human form is a table with one row per artifact."""
        code, out, _ = _run("list", "--root", str(root))

        lines = out.splitlines()
        assert code == 0
        assert lines[0].split() == [
            "ROLE",
            "METHOD",
            "CACHEABLE",
            "AUTHOR",
            "OK",
            "FAILED",
            "LAST",
            "USED",
            "STATE",
        ]
        assert lines[1].split() == [
            "calculator",
            "add",
            "yes",
            "host",
            "1",
            "0",
            "2026-10-01T00:00:00.000Z",
            "ok",
        ]
        assert lines[3].split()[-2:] == ["ok", "(tool)"]

    def test_empty_store(self, tmp_path: Path) -> None:
        """A store that does not exist yet lists nothing."""
        code, out, _ = _run("list", "--root", str(tmp_path / "none"))
        assert (code, out) == (0, f"The tool store at {tmp_path / 'none'} is empty.\n")

    def test_root_defaults_to_the_environment(
        self, root: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Without --root, RECURGENT_TOOLSTORE_ROOT is used (Ruby's CLI ignored it)."""
        monkeypatch.setenv("RECURGENT_TOOLSTORE_ROOT", str(root))
        assert len(_json("list")["artifacts"]) == 3

    def test_damaged_files_are_shown_not_moved(self, root: Path) -> None:
        """A corrupt artifact appears with its state and stays where it is."""
        path = artifact_path(root, "calculator", "add")
        path.write_text("{broken")

        data = _json("list", "--root", str(root))

        damaged = [a for a in data["artifacts"] if a["path"] == str(path)]
        assert [(a["role"], a["method"], a["state"]) for a in damaged] == [
            ("calculator-d2d4a592", "add-7e9e5ac3", "corrupt")
        ]
        assert path.read_text() == "{broken"


class TestShow:
    """show ROLE [METHOD]: code and metadata."""

    def test_one_method_json(self, root: Path) -> None:
        """The full record of one method."""
        data = _json("show", "calculator", "add", "--root", str(root))

        assert data["tool"] is None
        assert [a["artifact"]["code"] for a in data["artifacts"]] == ["return args[0]"]

    def test_a_role_text_shows_code_and_tool(self, root: Path) -> None:
        """Text form: the tool's purpose, then each method's metadata and indented code."""
        code, out, _ = _run("show", "web_fetcher", "--root", str(root))

        assert code == 0
        assert out.startswith("tool web_fetcher: fetch pages\n")
        assert '  cacheability_reason: "stable_method_default"\n' in out
        assert '  author: "host"\n' in out
        assert out.endswith("  code:\n    return args[0]\n")

    def test_the_text_says_who_wrote_the_code(self, tmp_path: Path) -> None:
        """The provenance block, one JSON line; null for a record without one (ADR 0077)."""
        root = tmp_path / "store"
        store = Store(root, clock=lambda: NEW)
        store.record_call(call(provenance=Provenance(provider_kind="openai", model="gpt-x")))
        store.record_call(call(method="legacy"))

        code, out, _ = _run("show", "calculator", "--root", str(root))

        assert code == 0
        assert (
            '  provenance: {"provider_kind": "openai", "model": "gpt-x", "prompt_version": null,'
            ' "runtime_version": null, "double_fingerprint": null}\n'
        ) in out
        assert "  provenance: null\n" in out

    def test_unknown_role(self, root: Path) -> None:
        """Nothing stored exits 1 with a message."""
        code, out, err = _run("show", "nobody", "--root", str(root))
        assert (code, out, err) == (
            1,
            "",
            f"recurgent tools: nothing stored for nobody under {root}\n",
        )

    def test_unknown_role_with_json(self, root: Path) -> None:
        """With --json the refusal is also one JSON document on stdout (ADR 0128)."""
        code, out, _ = _run("show", "nobody", "--root", str(root), "--json")
        assert (code, json.loads(out)) == (
            1,
            {
                "command": "show",
                "status": "error",
                "error_type": "not_found",
                "error_message": f"nothing stored for nobody under {root}",
            },
        )


class TestPrune:
    """prune --older-than DAYS: dry run unless --yes."""

    def test_dry_run_changes_nothing(self, root: Path) -> None:
        """The old artifact is reported and still there."""
        data = _json("prune", "--older-than", "30", "--root", str(root))

        assert data["dry_run"] is True
        assert [(a["role"], a["method"]) for a in data["stale_artifacts"]] == [
            ("calculator", "add")
        ]
        assert (data["stale_tools"], data["removed_artifacts"]) == ([], [])
        assert artifact_path(root, "calculator", "add").exists()

    def test_yes_removes_stale_artifacts_and_tools(self, root: Path) -> None:
        """With --yes the stale artifact and a stale tool go; fresh ones stay."""
        data = _json("prune", "--older-than", "0.5", "--yes", "--root", str(root))

        assert data["removed_artifacts"] == [
            str(artifact_path(root, m_role, m))
            for m_role, m in [
                ("calculator", "add"),
                ("calculator", "answer"),
                ("web_fetcher", "fetch"),
            ]
        ]
        assert data["removed_tools"] == ["web_fetcher"]
        assert _json("list", "--root", str(root)) == {
            "root": str(root),
            "artifacts": [],
            "tools": [],
        }

    def test_text_dry_run(self, root: Path) -> None:
        """The text form says it is a dry run."""
        code, out, _ = _run("prune", "--older-than", "30", "--root", str(root))
        assert code == 0
        assert out.splitlines() == [
            "Would remove 1 artifact(s) and 0 tool(s) unused for more than 30 day(s):",
            "  calculator.add  last used 2026-10-01T00:00:00.000Z",
            "Dry run: nothing was removed. Add --yes to remove them.",
        ]

    @pytest.mark.parametrize("days", ["-1", "soon", "nan"])
    def test_bad_days_are_a_usage_error(self, root: Path, days: str) -> None:
        """A negative or non-numeric day count exits 2."""
        assert _run("prune", "--older-than", days, "--root", str(root))[0] == 2


class TestForget:
    """forget ROLE [METHOD]."""

    def test_one_method(self, root: Path) -> None:
        """Only that artifact goes; the role's other methods stay."""
        data = _json("forget", "calculator", "add", "--root", str(root))

        assert data == {
            "target": "calculator.add",
            "removed_artifacts": [str(artifact_path(root, "calculator", "add"))],
            "removed_tool": False,
        }
        assert artifact_path(root, "calculator", "answer").exists()

    def test_a_role_drops_its_artifacts_and_registry_entry(self, root: Path) -> None:
        """Forgetting a tool removes its methods and its registry entry."""
        code, out, _ = _run("forget", "web_fetcher", "--root", str(root))

        assert (code, out) == (0, "Forgot web_fetcher: 1 artifact(s), registry entry.\n")
        assert json.loads((root / "registry.json").read_text())["tools"] == {}

    def test_a_damaged_file_can_be_forgotten(self, root: Path) -> None:
        """forget removes a corrupt artifact too."""
        path = artifact_path(root, "calculator", "add")
        path.write_text("{broken")

        assert _run("forget", "calculator", "add", "--root", str(root))[0] == 0
        assert not path.exists()

    def test_nothing_to_forget(self, root: Path) -> None:
        """An unknown role exits 1."""
        assert _run("forget", "nobody", "--root", str(root))[:2] == (1, "")


def test_no_command_is_a_usage_error() -> None:
    """Without a command the parser exits 2."""
    assert _run()[0] == 2


_COMMANDS = "list, show, prune, forget, scorecards, decisions, set-lifecycle, namespace-pressure"


@pytest.mark.parametrize(
    ("argv", "why"),
    [
        (("--root", "/tmp/somewhere", "--json"), "a command is required"),
        (("--json", "bogus"), "unknown command 'bogus'"),
        (("--root", "/tmp/somewhere", "bogus"), "unknown command 'bogus'"),
    ],
)
def test_shared_options_then_no_command_name_the_commands(argv: tuple[str, ...], why: str) -> None:
    """``tools --root R`` with no command, or with an unknown one, exits 2 naming what is
    wrong and the commands, never calling the root's path an invalid command."""
    code, out, err = _run(*argv)

    assert (code, out) == (2, "")
    assert err.splitlines()[-1] == f"recurgent tools: error: {why}; choose from {_COMMANDS}"
    assert "/tmp/somewhere" not in err


def test_shared_options_then_help_print_the_help() -> None:
    """``tools --json -h`` prints the help and exits 0; ``--jsonx`` is an unknown argument
    to argparse, not a missing command."""
    code, out, err = _run("--json", "-h")
    assert (code, out.startswith("usage: recurgent tools"), err) == (0, True, "")

    code, _, err = _run("--jsonx")
    assert code == 2 and "a command is required" not in err


def test_an_empty_root_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """``--root ''`` is a usage error (exit 2), not the current directory: nothing is written
    where the command runs."""
    monkeypatch.chdir(tmp_path)

    code, out, err = _run("list", "--root", "")

    assert (code, out) == (2, "")
    assert err.splitlines()[-1] == (
        "recurgent tools list: error: argument --root: an empty path; give the store's directory"
    )
    assert list(tmp_path.iterdir()) == []
