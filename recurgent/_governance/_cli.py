"""``recurgent proposals``: list, show, approve, reject and apply proposals (ADRs 0086-0088).

The command works on ``<root>/proposals.json`` exactly as the Agent's methods do: the same
states, the same authority check (maintainers from ``RECURGENT_AUTHORITY_MAINTAINERS``, else the
OS user; ``--actor`` names someone else), the same mutations. Every command takes ``--json``
(one JSON document on stdout) and ``--root`` (default: ``$RECURGENT_TOOLSTORE_ROOT``, else the
XDG state directory). Proposal text is anyone's: control characters are escaped on the way out,
as ``recurgent tools`` does (ADR 0071).

Exit status: 0 when the step was taken, 1 when it was refused (an error Outcome: denied, not
found, wrong state, invalid payload, store unavailable), 2 for a usage error.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, TextIO

from recurgent._cli_index import PROPOSALS_COMMANDS
from recurgent._cli_shared import hoist_shared_options, shared_options
from recurgent._governance._apply import RETENTION_SETTINGS
from recurgent._governance._desk import Governance
from recurgent._governance._proposals import STATUSES, FileBook
from recurgent._governance._role_profiles import AppliedRoleProfiles
from recurgent._runtime_config import RuntimeSettings, current_settings
from recurgent._store._cli import visible
from recurgent._store._paths import default_root
from recurgent.errors import UsageError
from recurgent.outcome import Outcome

__all__ = ["build_parser", "main"]

_STEPS = {"approve": "Approved", "reject": "Rejected", "apply": "Applied"}
_SUMMARY_SHOWN = 60


def _limit(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise argparse.ArgumentTypeError(f"expected an integer >= 0, got {text!r}")
    return value


def build_parser(prog: str = "recurgent proposals") -> argparse.ArgumentParser:
    """The ``recurgent proposals`` argument parser."""
    common = shared_options("the tool store holding proposals.json")
    decision = argparse.ArgumentParser(add_help=False, parents=[common])
    decision.add_argument("proposal_id", metavar="ID")
    decision.add_argument(
        "--actor", metavar="NAME", help="who takes the step (default: the OS user)"
    )
    decision.add_argument("--note", metavar="TEXT", help="why, kept with the step")
    parser = argparse.ArgumentParser(
        prog=prog, description="See and decide the proposals agents recorded."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    listing = commands.add_parser("list", parents=[common], help="the proposals, oldest first")
    listing.add_argument("--status", choices=STATUSES, help="only proposals with this status")
    listing.add_argument("--limit", type=_limit, metavar="N", help="only the last N")
    show = commands.add_parser("show", parents=[common], help="one proposal in full")
    show.add_argument("proposal_id", metavar="ID")
    commands.add_parser("approve", parents=[decision], help="approve a proposed proposal")
    commands.add_parser("reject", parents=[decision], help="reject a proposed or approved one")
    commands.add_parser(
        "apply", parents=[decision], help="apply an approved proposal (runs its mutation)"
    )
    return parser


def _desk(root: Path) -> Governance:
    held = [current_settings()]

    def install(settings: RuntimeSettings) -> None:
        held[0] = settings

    return Governance(
        book=FileBook(root),
        role=None,
        author={"role": None, "model": None, "trace_id": None},
        settings=lambda: held[0],
        install_settings=install,
        # No agent here: every role's profiles change in the store's registry.
        role_profiles=AppliedRoleProfiles(root),
    )


def _dump(value: Any, out: TextIO) -> None:
    out.write(visible(json.dumps(value, indent=2, ensure_ascii=False), json_text=True) + "\n")


def _one_line(text: str) -> str:
    line = " ".join(text.split())
    return line if len(line) <= _SUMMARY_SHOWN else line[: _SUMMARY_SHOWN - 3] + "..."


def _compact(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _error_document(command: str, outcome: Outcome) -> dict[str, Any]:
    return {
        "command": command,
        "status": "error",
        "error_type": outcome.error_type,
        "error_message": outcome.error_message,
        "metadata": outcome.metadata,
    }


def _refused(
    command: str, outcome: Outcome, args: argparse.Namespace, out: TextIO, err: TextIO
) -> int:
    if args.json:
        _dump(_error_document(command, outcome), out)
    else:
        err.write(
            visible(f"recurgent proposals: [{outcome.error_type}] {outcome.error_message}") + "\n"
        )
    return 1


def _list(desk: Governance, args: argparse.Namespace, root: Path, out: TextIO, err: TextIO) -> int:
    outcome = desk.proposals(status=args.status, limit=args.limit)
    if not outcome.is_ok:
        return _refused("list", outcome, args, out, err)
    records: list[dict[str, Any]] = outcome.value
    unreadable = outcome.metadata.get("unreadable_entries", 0)
    if args.json:
        _dump(
            {
                "root": str(root),
                "proposal_count": len(records),
                "status_filter": args.status,
                "unreadable_entries": unreadable,
                "proposals": records,
            },
            out,
        )
        return 0
    if not records:
        which = f"{args.status} proposals" if args.status else "proposals"
        out.write(visible(f"No {which} under {root}.") + "\n")
    for record in records:
        summary = _one_line(record["proposed_diff_summary"])
        out.write(
            visible(
                f"{record['id']}  {record['status']:<8}  {record['proposal_type']}  "
                f"{record['created_at']}  {summary}".rstrip()
            )
            + "\n"
        )
    if unreadable:
        out.write(f"({unreadable} unreadable entr{'y' if unreadable == 1 else 'ies'} not shown)\n")
    return 0


def _describe(record: Mapping[str, Any]) -> list[str]:
    author = record.get("author_context") or {}
    lines = [
        f"{record['id']}  ({record['proposal_type']})",
        f"status: {record['status']}",
        f"created: {record['created_at']}"
        + (f" by role {author['role']}" if author.get("role") else ""),
        f"updated: {record['updated_at']}",
        f"summary: {record['proposed_diff_summary']}",
    ]
    if record["evidence_refs"]:
        lines.append("evidence: " + ", ".join(record["evidence_refs"]))
    lines.append(f"target: {_compact(record['target'])}")
    lines.append(f"metadata: {_compact(record['metadata'])}")
    for action in record["actions"]:
        note = f": {action['note']}" if action.get("note") else ""
        lines.append(f"  {action['status']} by {action['actor']} at {action['at']}{note}")
    if record.get("applied_mutation") is not None:
        lines.append(f"applied mutation: {_compact(record['applied_mutation'])}")
    return lines


def _show(desk: Governance, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    outcome = desk.proposal(args.proposal_id)
    if not outcome.is_ok:
        return _refused("show", outcome, args, out, err)
    if args.json:
        _dump({"command": "show", "status": "ok", "proposal": outcome.value}, out)
    else:
        out.write(visible("\n".join(_describe(outcome.value))) + "\n")
    return 0


def _step(desk: Governance, args: argparse.Namespace, out: TextIO, err: TextIO) -> int:
    command: str = args.command
    take = {"approve": desk.approve, "reject": desk.reject, "apply": desk.apply}[command]
    outcome = take(args.proposal_id, actor=args.actor, note=args.note)
    if not outcome.is_ok:
        return _refused(command, outcome, args, out, err)
    record = outcome.value
    if args.json:
        _dump({"command": command, "status": "ok", "proposal": record}, out)
        return 0
    text = f"{_STEPS[command]} {record['id']} as {record['last_action']['actor']}."
    mutation = record.get("applied_mutation")
    if command == "apply" and mutation is not None:
        text += f"\nChanged: {_compact(mutation)}"
        if record["proposal_type"] == "content_retention_policy_update":
            text += (
                "\nA retention policy changes the settings of the process applying it: this "
                "command's own. Apply it from the program whose agents should keep it ("
                + ", ".join(RETENTION_SETTINGS)
                + ")."
            )
    out.write(visible(text) + "\n")
    return 0


def main(
    argv: Sequence[str] | None = None, *, out: TextIO | None = None, err: TextIO | None = None
) -> int:
    """Run ``recurgent proposals``.

    Args:
        argv: Arguments after ``proposals`` (default: ``sys.argv[1:]``); without a command
            (nothing, or options only) the command is ``list``.
        out, err: Where to write (default: stdout, stderr).

    Returns:
        0 when done, 1 when refused, 2 for a usage error.
    """
    out = out or sys.stdout
    err = err or sys.stderr
    arguments = list(sys.argv[1:] if argv is None else argv)
    # `--json show ID` is `show ID --json` (ADR 0128).
    arguments = hoist_shared_options(arguments, [name for name, _ in PROPOSALS_COMMANDS])
    if not arguments or (arguments[0].startswith("-") and arguments[0] not in ("-h", "--help")):
        # `recurgent proposals [--json] [--status S] ...` lists, as the original's `proposals`.
        arguments.insert(0, "list")
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            args = build_parser().parse_args(arguments)
    except SystemExit as exit_request:
        return exit_request.code if isinstance(exit_request.code, int) else 2
    root = args.root.expanduser() if args.root is not None else default_root()
    try:
        desk = _desk(root)
        if args.command == "list":
            return _list(desk, args, root, out, err)
        if args.command == "show":
            return _show(desk, args, out, err)
        return _step(desk, args, out, err)
    except UsageError as mistake:
        err.write(visible(f"recurgent proposals: {mistake.message}") + "\n")
        return 2


if __name__ == "__main__":
    sys.exit(main())
