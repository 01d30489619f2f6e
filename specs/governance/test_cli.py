"""`recurgent proposals list|show|approve|reject|apply`, in text and JSON, through the same
authority check as the agent (ADRs 0086-0088)."""

from __future__ import annotations

import getpass
import io
import json
from pathlib import Path
from typing import Any

import pytest

from recurgent import Agent
from recurgent._cli import build_parser as build_top_parser, main as top_main
from recurgent._governance._cli import main
from recurgent.testing import ScriptedProvider
from specs.governance.support import PROFILE_V1

AUTHORITY = {"observe": True, "propose": True, "enact": False}


@pytest.fixture(autouse=True)
def _maintainer(monkeypatch: pytest.MonkeyPatch) -> None:
    """The OS user is 'tester'; alice is the one maintainer."""
    monkeypatch.setattr(getpass, "getuser", lambda: "tester")
    monkeypatch.setenv("RECURGENT_AUTHORITY_MAINTAINERS", "alice")


@pytest.fixture
def root(tmp_path: Path) -> Path:
    """A store root."""
    return tmp_path / "store"


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


def _json(*argv: str, code: int = 0) -> Any:
    status, out, err = _run(*argv, "--json")
    assert (status, err) == (code, "")
    return json.loads(out)


def _propose(root: Path, proposal_type: str = "tool_patch", **fields: Any) -> dict[str, Any]:
    agent = Agent.for_("calculator", provider=ScriptedProvider(), toolstore_root=root, log=False)
    outcome = agent.propose(proposal_type, **fields)
    assert outcome.status == "ok"
    record: dict[str, Any] = outcome.value
    return record


class TestList:
    """list prints one line per proposal, or the records as JSON."""

    def test_an_empty_store(self, root: Path) -> None:
        """No proposals: a sentence in text, count 0 in JSON."""
        assert _run("list", "--root", str(root)) == (0, f"No proposals under {root}.\n", "")
        assert _json("list", "--root", str(root)) == {
            "root": str(root),
            "proposal_count": 0,
            "status_filter": None,
            "unreadable_entries": 0,
            "proposals": [],
        }

    def test_text_and_json(self, root: Path) -> None:
        """Text: id, status, type, created, first line of the summary; JSON: the records."""
        first = _propose(root, proposed_diff_summary="use value\nfor the total")
        second = _propose(root, "role_profile_update")

        code, out, err = _run("list", "--root", str(root))
        document = _json("list", "--root", str(root))

        assert (code, err) == (0, "")
        assert out == (
            f"{first['id']}  proposed  tool_patch  {first['created_at']}  use value for the total\n"
            f"{second['id']}  proposed  role_profile_update  {second['created_at']}\n"
        )
        assert document["proposal_count"] == 2
        assert document["proposals"] == [first, second]

    def test_status_and_limit(self, root: Path) -> None:
        """--status approved shows the approved one; --limit 1 the last one."""
        first, second = _propose(root), _propose(root)
        assert _run("approve", first["id"], "--actor", "alice", "--root", str(root))[0] == 0

        approved = _json("list", "--status", "approved", "--root", str(root))
        last = _json("list", "--limit", "1", "--root", str(root))

        assert [p["id"] for p in approved["proposals"]] == [first["id"]]
        assert [p["id"] for p in last["proposals"]] == [second["id"]]

    def test_json_names_the_status_filter_as_the_original(self, root: Path) -> None:
        """The list document carries the original's `status_filter` (`recurgent-tools
        proposals`' key): the --status asked for, `null` without one (ADR 0086, amended)."""
        _propose(root)

        filtered = _json("list", "--status", "approved", "--root", str(root))
        unfiltered = _json("list", "--root", str(root))

        assert (filtered["status_filter"], filtered["proposal_count"]) == ("approved", 0)
        assert (unfiltered["status_filter"], unfiltered["proposal_count"]) == (None, 1)

    def test_without_a_command_the_proposals_are_listed(self, root: Path) -> None:
        """`recurgent proposals --root R --json` (no command) is `list`, as the original's."""
        record = _propose(root)

        assert _json("--root", str(root))["proposals"] == [record]
        assert _run("--root", str(root), "--status", "approved")[:2] == (
            0,
            f"No approved proposals under {root}.\n",
        )

    @pytest.mark.parametrize("argv", [["--limit", "-1"], ["--limit", "x"], ["--status", "done"]])
    def test_bad_filters_are_usage_errors(self, root: Path, argv: list[str]) -> None:
        """A negative or non-numeric limit, or an unknown status: exit 2, nothing on stdout."""
        code, out, err = _run("list", *argv, "--root", str(root))

        assert (code, out) == (2, "")
        assert "usage: recurgent proposals list" in err

    def test_control_characters_are_escaped(self, root: Path) -> None:
        """A summary holding an escape sequence prints as \\x1b, never raw."""
        _propose(root, proposed_diff_summary="\x1b]0;owned\x07 hi")

        out = _run("list", "--root", str(root))[1]

        assert "\x1b" not in out
        assert "\\x1b]0;owned\\x07 hi" in out


class TestShow:
    """show prints one proposal in full, or refuses an unknown id."""

    def test_text(self, root: Path) -> None:
        """Every field on its own line; each step with its actor and note."""
        record = _propose(
            root,
            target={"method": "add"},
            proposed_diff_summary="rename",
            evidence_refs=["trace:1"],
            metadata={"k": 1},
        )
        _run("approve", record["id"], "--actor", "alice", "--note", "fine", "--root", str(root))

        code, out, err = _run("show", record["id"], "--root", str(root))

        shown = json.loads(_run("show", record["id"], "--root", str(root), "--json")[1])
        updated = shown["proposal"]
        assert (code, err) == (0, "")
        assert out == (
            f"{record['id']}  (tool_patch)\n"
            "status: approved\n"
            f"created: {record['created_at']} by role calculator\n"
            f"updated: {updated['updated_at']}\n"
            "summary: rename\n"
            "evidence: trace:1\n"
            'target: {"method": "add"}\n'
            'metadata: {"k": 1}\n'
            f"  approved by alice at {updated['last_action']['at']}: fine\n"
        )

    def test_json(self, root: Path) -> None:
        """{command, status: ok, proposal}."""
        record = _propose(root)

        assert _json("show", record["id"], "--root", str(root)) == {
            "command": "show",
            "status": "ok",
            "proposal": record,
        }

    def test_an_unknown_id(self, root: Path) -> None:
        """Exit 1; text on stderr; JSON the original's error document."""
        unknown = "prop-ffffffffffffffff"

        code, out, err = _run("show", unknown, "--root", str(root))
        document = _json("show", unknown, "--root", str(root), code=1)

        assert (code, out) == (1, "")
        assert err.startswith(f"recurgent proposals: [not_found] Proposal '{unknown}' not found")
        assert document == {
            "command": "show",
            "status": "error",
            "error_type": "not_found",
            "error_message": f"Proposal '{unknown}' not found in {root / 'proposals.json'}",
            "metadata": {"proposal_id": unknown},
        }


class TestSteps:
    """approve, reject and apply go through the authority check."""

    def test_approve_and_apply_in_text(self, root: Path) -> None:
        """A maintainer approves and applies; each prints one sentence."""
        record = _propose(root)

        approving = _run("approve", record["id"], "--actor", "Alice", "--root", str(root))
        applying = _run("apply", record["id"], "--actor", "alice", "--root", str(root))

        assert approving == (0, f"Approved {record['id']} as Alice.\n", "")
        assert applying == (0, f"Applied {record['id']} as alice.\n", "")

    def test_reject_in_json(self, root: Path) -> None:
        """{command: reject, status: ok, proposal} with the note kept."""
        record = _propose(root)

        document = _json(
            "reject", record["id"], "--actor", "alice", "--note", "not now", "--root", str(root)
        )

        assert (document["command"], document["status"]) == ("reject", "ok")
        assert document["proposal"]["status"] == "rejected"
        assert document["proposal"]["last_action"]["note"] == "not now"

    @pytest.mark.parametrize("command", ["approve", "reject", "apply"])
    def test_a_non_maintainer_is_refused(self, root: Path, command: str) -> None:
        """The OS user (not a maintainer here) and mallory: exit 1, authority_denied, unchanged."""
        record = _propose(root)

        code, out, err = _run(command, record["id"], "--root", str(root))
        document = _json(command, record["id"], "--actor", "mallory", "--root", str(root), code=1)

        assert (code, out) == (1, "")
        assert err.startswith(
            f"recurgent proposals: [authority_denied] Actor 'tester' may not {command} proposals"
        )
        assert (document["command"], document["status"], document["error_type"]) == (
            command,
            "error",
            "authority_denied",
        )
        assert document["metadata"] == {
            "actor": "mallory",
            "action": command,
            "authority": AUTHORITY,
        }
        assert _json("show", record["id"], "--root", str(root))["proposal"]["status"] == "proposed"

    def test_apply_before_approve(self, root: Path) -> None:
        """invalid_proposal_state, exit 1."""
        record = _propose(root)

        document = _json("apply", record["id"], "--actor", "alice", "--root", str(root), code=1)

        assert document["error_type"] == "invalid_proposal_state"
        assert document["metadata"]["status"] == "proposed"

    def test_apply_a_role_profile_update_from_the_command_line(self, root: Path) -> None:
        """The profile's role is the one changed; text shows what changed."""
        record = _propose(root, "role_profile_update", metadata={"role_profile": PROFILE_V1})
        _run("approve", record["id"], "--actor", "alice", "--root", str(root))

        code, out, err = _run("apply", record["id"], "--actor", "alice", "--root", str(root))

        assert (code, err) == (0, "")
        assert out == (
            f"Applied {record['id']} as alice.\n"
            'Changed: {"action": "publish_and_activate", "active_version": 1, '
            '"previous_active_version": null, "proposal_type": "role_profile_update", '
            '"published_version": 1, "role": "calculator"}\n'
        )
        roles = json.loads((root / "role_profiles.json").read_text())["roles"]
        assert roles["calculator"]["active_version"] == 1

    def test_a_role_profile_activation_naming_no_role(self, root: Path) -> None:
        """From the command line the proposal must name its role: invalid_proposal_payload."""
        record = _propose(
            root, "role_profile_update", metadata={"action": "activate", "version": 1}
        )
        _run("approve", record["id"], "--actor", "alice", "--root", str(root))

        document = _json("apply", record["id"], "--actor", "alice", "--root", str(root), code=1)

        assert document["error_type"] == "invalid_proposal_payload"
        assert document["error_message"].endswith("it names no role (target.role or metadata.role)")

    def test_a_retention_policy_applied_here_says_whose_settings_changed(self, root: Path) -> None:
        """The text says the policy changed only this command's process."""
        record = _propose(
            root,
            "content_retention_policy_update",
            metadata={"content_retention_policy": {"content_store_max_entries": 8}},
        )
        _run("approve", record["id"], "--actor", "alice", "--root", str(root))

        out = _run("apply", record["id"], "--actor", "alice", "--root", str(root))[1]

        assert "changes the settings of the process applying it: this command's own" in out

    def test_a_note_over_its_bound_is_a_usage_error(self, root: Path) -> None:
        """--note of 1,001 characters: exit 2 with the reason."""
        record = _propose(root)

        code, out, err = _run(
            "approve", record["id"], "--actor", "alice", "--note", "x" * 1001, "--root", str(root)
        )

        assert (code, out) == (2, "")
        assert err == "recurgent proposals: note must be at most 1000 characters, got 1001\n"


class TestConsoleScript:
    """`recurgent proposals ...` reaches this command; `recurgent --help` lists it."""

    def test_the_top_level_command_dispatches(
        self, root: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """recurgent proposals list --json prints the same document."""
        record = _propose(root)

        code = top_main(["proposals", "list", "--root", str(root), "--json"])

        assert code == 0
        assert json.loads(capsys.readouterr().out)["proposals"] == [record]

    def test_help_lists_proposals(self) -> None:
        """The top-level help names the proposals command."""
        assert "list, show, approve, reject or apply proposals" in build_top_parser().format_help()

    def test_the_default_root_follows_the_environment(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Without --root: $RECURGENT_TOOLSTORE_ROOT."""
        monkeypatch.setenv("RECURGENT_TOOLSTORE_ROOT", str(tmp_path / "elsewhere"))
        record = _propose(tmp_path / "elsewhere")

        assert _json("list")["proposals"] == [record]
