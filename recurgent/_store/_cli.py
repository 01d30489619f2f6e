"""``recurgent tools``: list, show, prune and forget what the tool store holds (ADR 0038), the
promotion lifecycle's scorecards, decisions and set-lifecycle (ADR 0081), and a role's namespace
pressure (ADR 0084).

Read-only views (``list``, ``show``) never move or change a file, damaged ones included; they
show them with their state. ``prune`` is a dry run unless ``--yes``. ``forget`` removes what
it names at once: asking for it by name is the confirmation. Every command takes ``--json``
(one JSON document on stdout) and ``--root`` (default: ``$RECURGENT_TOOLSTORE_ROOT``, else the
XDG state directory). Only the standard library and the store room are used.

Everything printed was written by generated programs (code, roles, purposes): every control or
other non-printable character is escaped on the way out, as ``recurgent watch`` does, so a
stored ``\\x1b]0;...`` cannot retitle or clear the terminal (ADR 0071). ``--json`` output
escapes them as ``\\uXXXX`` and stays valid JSON.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import io
import json
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO, cast

from pydantic import ValidationError

from recurgent._cli_index import TOOLS_COMMANDS
from recurgent._cli_shared import (
    hoist_shared_options,
    leading_shared_options,
    refuse,
    shared_options,
)
from recurgent._profiles._cli import namespace_pressure
from recurgent._profiles._namespace import forget_namespace
from recurgent._store import _cli_lifecycle, _pending
from recurgent._store._artifacts import RUNTIME_TAG, ArtifactRecord
from recurgent._store._files import locked, note_change, read_json
from recurgent._store._paths import (
    artifact_path,
    artifacts_dir,
    default_root,
    registry_path,
    role_dir,
)
from recurgent._store._registry import remove_tools

__all__ = ["Entry", "build_parser", "main", "scan", "visible"]

_CODE_INDENT = "    "


def _json_escape(char: str) -> str:
    code = ord(char)
    if code < 0x10000:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


def visible(text: str, *, json_text: bool = False) -> str:
    """``text`` with every non-printable character but newline escaped: as ``repr`` does
    (``\\x1b``), or with ``json_text`` as a JSON ``\\uXXXX`` escape (JSON text holds them only
    inside strings, so the document stays valid)."""
    if text.isprintable():
        return text
    escape = _json_escape if json_text else (lambda char: repr(char)[1:-1])
    return "".join(char if char == "\n" or char.isprintable() else escape(char) for char in text)


class _Escaping(io.TextIOBase):
    """A text stream that passes everything through :func:`visible` (ADR 0071)."""

    def __init__(self, target: TextIO, *, json_text: bool) -> None:
        super().__init__()
        self._target = target
        self._json = json_text

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        self._target.write(visible(text, json_text=self._json))
        return len(text)

    def flush(self) -> None:
        self._target.flush()


@dataclass(frozen=True, slots=True)
class Entry:
    """One artifact file as the CLI sees it.

    Attributes:
        path: The file.
        state: ``ok``, ``corrupt``, ``unsupported``, ``unreadable``, ``foreign_runtime`` or
            ``invalid_record``.
        record: The parsed record when ``state`` is ``ok``.
        data: The raw object when it could be read.
    """

    path: Path
    state: str
    record: ArtifactRecord | None = None
    data: dict[str, Any] | None = None

    @property
    def role(self) -> str:
        """The role as recorded, else the directory segment."""
        value = (self.data or {}).get("role")
        return value if isinstance(value, str) else self.path.parent.name

    @property
    def method(self) -> str:
        """The method as recorded, else the file segment."""
        value = (self.data or {}).get("method_name")
        return value if isinstance(value, str) else self.path.stem

    def summary(self, registered: bool) -> dict[str, Any]:
        """The fields ``list`` prints."""
        record = self.record
        return {
            "role": self.role,
            "method": self.method,
            "state": self.state,
            "cacheable": record.cacheable if record else None,
            "cacheability_reason": record.cacheability_reason if record else None,
            "author": record.author if record else None,
            "success_count": record.success_count if record else None,
            "failure_count": record.failure_count if record else None,
            "last_used_at": record.last_used_at if record else None,
            "registered_tool": registered,
            "path": str(self.path),
        }


def _entry(path: Path, root: Path) -> Entry:
    loaded = read_json(path, quarantine_corrupt=False, root=root)
    if loaded.state != "ok" or loaded.data is None:
        return Entry(path, loaded.state, data=loaded.data)
    if loaded.data.get("runtime") != RUNTIME_TAG:
        return Entry(path, "foreign_runtime", data=loaded.data)
    try:
        record = ArtifactRecord.model_validate(loaded.data)
    except ValidationError:
        return Entry(path, "invalid_record", data=loaded.data)
    return Entry(path, "ok", record, loaded.data)


def scan(root: Path, role: str | None = None, method: str | None = None) -> list[Entry]:
    """Every artifact under ``root`` (or of one role, or one method), sorted by role, method."""
    if role is not None and method is not None:
        path = artifact_path(root, role, method)
        paths = [path] if path.is_file() else []
    else:
        base = role_dir(root, role) if role is not None else artifacts_dir(root)
        pattern = "*.json" if role is not None else "*/*.json"
        paths = [p for p in base.glob(pattern) if p.is_file()] if base.is_dir() else []
    entries = [_entry(path, root) for path in paths]
    return sorted(entries, key=lambda e: (e.role, e.method, str(e.path)))


def _age_days(stamp: Any, now: datetime.datetime) -> float | None:
    if not isinstance(stamp, str):
        return None
    try:
        moment = datetime.datetime.fromisoformat(stamp.replace("Z", "+00:00"))
    except ValueError:
        return None
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=datetime.UTC)
    return (now - moment).total_seconds() / 86400


def _is_stale(stamp: Any, days: float, now: datetime.datetime) -> bool:
    # Never used (or an unreadable stamp) counts as stale: nothing shows it is wanted.
    age = _age_days(stamp, now)
    return age is None or age > days


def _remove(path: Path, root: Path) -> bool:
    # Under the file's lock, so a call writing the artifact right now is not half-undone; the
    # lock file itself stays (removing it could let two holders in).
    with locked(path, root=root):
        try:
            path.unlink()
        except FileNotFoundError:
            return False
        finally:
            # Counted even when nothing was removed, or an exception landed after the call.
            note_change()
    return True


def _table(rows: list[dict[str, Any]]) -> list[str]:
    headers = ("ROLE", "METHOD", "CACHEABLE", "AUTHOR", "OK", "FAILED", "LAST USED", "STATE")
    cells = [
        (
            str(row["role"]),
            str(row["method"]),
            {True: "yes", False: "no", None: "-"}[row["cacheable"]],
            str(row["author"] or "-"),
            "-" if row["success_count"] is None else str(row["success_count"]),
            "-" if row["failure_count"] is None else str(row["failure_count"]),
            row["last_used_at"] or "-",
            row["state"] + (" (tool)" if row["registered_tool"] else ""),
        )
        for row in rows
    ]
    widths = [max(len(line[i]) for line in [headers, *cells]) for i in range(len(headers))]
    return [
        "  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip()
        for line in [headers, *cells]
    ]


def _cmd_list(args: argparse.Namespace, root: Path, out: TextIO) -> int:
    tools, _ = _load_tools_readonly(root)
    rows = [entry.summary(entry.role in tools) for entry in scan(root)]
    artifact_roles = {row["role"] for row in rows}
    tool_rows = [
        {
            "name": name,
            "purpose": entry.get("purpose"),
            "methods": entry.get("methods", []),
            "usage_count": entry.get("usage_count", 0),
            "success_count": entry.get("success_count", 0),
            "failure_count": entry.get("failure_count", 0),
            "last_used_at": entry.get("last_used_at"),
        }
        for name, entry in sorted(tools.items())
    ]
    if args.json:
        _dump({"root": str(root), "artifacts": rows, "tools": tool_rows}, out)
        return 0
    if not rows and not tool_rows:
        out.write(f"The tool store at {root} is empty.\n")
        return 0
    if rows:
        out.write("\n".join(_table(rows)) + "\n")
    only_tools = [row for row in tool_rows if row["name"] not in artifact_roles]
    if only_tools:
        out.write("Registered tools without artifacts:\n")
        for row in only_tools:
            out.write(f"  {row['name']}: {row['purpose']} (used {row['usage_count']}x)\n")
    return 0


def _load_tools_readonly(root: Path) -> tuple[dict[str, dict[str, Any]], str]:
    """Registered tools without quarantining a damaged registry, and the file's state."""
    loaded = read_json(registry_path(root), quarantine_corrupt=False, root=root)
    tools = (loaded.data or {}).get("tools") if loaded.state == "ok" else None
    if not isinstance(tools, dict):
        return {}, loaded.state
    return {str(k): v for k, v in tools.items() if isinstance(v, dict)}, loaded.state


def _cmd_show(args: argparse.Namespace, root: Path, out: TextIO, err: TextIO) -> int:
    entries = scan(root, args.role, args.method)
    tools, _ = _load_tools_readonly(root)
    tool = tools.get(args.role)
    if not entries and tool is None:
        target = f"{args.role}.{args.method}" if args.method else args.role
        why = f"nothing stored for {target} under {root}"
        return refuse("show", "not_found", why, as_json=args.json, out=out, err=err)
    if args.json:
        shown = [{"path": str(e.path), "state": e.state, "artifact": e.data} for e in entries]
        _dump({"role": args.role, "tool": tool, "artifacts": shown}, out)
        return 0
    if tool is not None:
        out.write(f"tool {args.role}: {tool.get('purpose')}\n")
        for key in ("methods", "usage_count", "success_count", "failure_count", "last_used_at"):
            out.write(f"  {key}: {json.dumps(tool.get(key))}\n")
    for entry in entries:
        out.write(f"\n{entry.role}.{entry.method}  [{entry.state}]  {entry.path}\n")
        record = entry.record
        if record is None:
            continue
        for key in (
            "code_checksum",
            "author",
            "cacheable",
            "cacheability_reason",
            "contract_fingerprint",
            "runtime_version",
            "prompt_version",
            "model",
            "success_count",
            "failure_count",
            "repair_count_since_regen",
            "created_at",
            "last_used_at",
        ):
            out.write(f"  {key}: {json.dumps(getattr(record, key))}\n")
        # Who wrote the code (ADR 0077); null for a file written before it was recorded.
        block = record.provenance.model_dump(mode="json") if record.provenance else None
        out.write(f"  provenance: {json.dumps(block)}\n")
        if record.dependencies:
            out.write(f"  dependencies: {json.dumps(record.dependencies)}\n")
        out.write("  code:\n")
        for line in record.code.splitlines():
            out.write(f"{_CODE_INDENT}{line}\n".rstrip() + "\n")
    return 0


def _cmd_prune(args: argparse.Namespace, root: Path, out: TextIO, now: datetime.datetime) -> int:
    # Only records this runtime understands are pruned; damaged or foreign files stay for the
    # user to inspect (or to `forget` by name).
    stale = [
        e
        for e in scan(root)
        if e.record is not None and _is_stale(e.record.last_used_at, args.older_than, now)
    ]
    tools, _ = _load_tools_readonly(root)
    stale_tools = sorted(
        n for n, t in tools.items() if _is_stale(t.get("last_used_at"), args.older_than, now)
    )
    removed: list[str] = []
    removed_tools: list[str] = []
    if args.yes:
        removed = [str(e.path) for e in stale if _remove(e.path, root)]
        if stale_tools and remove_tools(root, stale_tools).written:
            removed_tools = stale_tools
    report = {
        "dry_run": not args.yes,
        "older_than_days": args.older_than,
        "stale_artifacts": [
            {
                "role": e.role,
                "method": e.method,
                "last_used_at": e.record.last_used_at if e.record else None,
                "path": str(e.path),
            }
            for e in stale
        ],
        "stale_tools": stale_tools,
        "removed_artifacts": removed,
        "removed_tools": removed_tools,
    }
    if args.json:
        _dump(report, out)
        return 0
    verb = "Removed" if args.yes else "Would remove"
    out.write(
        f"{verb} {len(stale)} artifact(s) and {len(stale_tools)} tool(s) unused for more than {args.older_than:g} day(s):\n"
    )
    for item in report["stale_artifacts"]:
        out.write(
            f"  {item['role']}.{item['method']}  last used {item['last_used_at'] or 'never'}\n"
        )
    for name in stale_tools:
        out.write(f"  tool {name}\n")
    if not args.yes and (stale or stale_tools):
        out.write("Dry run: nothing was removed. Add --yes to remove them.\n")
    return 0


def _cmd_forget(args: argparse.Namespace, root: Path, out: TextIO, err: TextIO) -> int:
    removed = [str(e.path) for e in scan(root, args.role, args.method) if _remove(e.path, root)]
    forget_namespace(root, args.role, args.method)  # its state-key telemetry too (ADR 0084)
    tool_removed = False
    if args.method is None:
        tool_removed = remove_tools(root, [args.role]).written
    target = f"{args.role}.{args.method}" if args.method else args.role
    if args.json:
        _dump({"target": target, "removed_artifacts": removed, "removed_tool": tool_removed}, out)
    if not removed and not tool_removed:
        err.write(f"recurgent tools: nothing stored for {target} under {root}\n")
        return 1
    if not args.json:
        out.write(
            f"Forgot {target}: {len(removed)} artifact(s)"
            + (", registry entry" if tool_removed else "")
            + ".\n"
        )
    return 0


def _dump(value: Any, out: TextIO) -> None:
    out.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")


def _days(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value >= 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"expected a number of days >= 0, got {text!r}")
    return value


def build_parser(prog: str = "recurgent tools") -> argparse.ArgumentParser:
    """The ``recurgent tools`` argument parser."""
    common = shared_options("the tool store")
    parser = argparse.ArgumentParser(
        prog=prog, description="See and drop the programs and tools recurgent persisted."
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    commands.add_parser("list", parents=[common], help="every persisted method and registered tool")
    show = commands.add_parser(
        "show", parents=[common], help="the code and metadata of a role (or one method)"
    )
    show.add_argument("role", metavar="ROLE")
    show.add_argument("method", metavar="METHOD", nargs="?")
    prune = commands.add_parser(
        "prune", parents=[common], help="remove what was not used for DAYS (dry run unless --yes)"
    )
    prune.add_argument("--older-than", type=_days, required=True, metavar="DAYS")
    prune.add_argument("--yes", action="store_true", help="really remove")
    forget = commands.add_parser(
        "forget",
        parents=[common],
        help="remove a role's artifacts and registry entry, or one method's artifact",
    )
    forget.add_argument("role", metavar="ROLE")
    forget.add_argument("method", metavar="METHOD", nargs="?")
    # The promotion lifecycle's commands (ADR 0081).
    _cli_lifecycle.add_commands(commands, common)
    pressure = commands.add_parser(
        "namespace-pressure",
        parents=[common],
        help="a role's memory keys across its methods: collisions, lifetimes, drift (ADR 0084)",
    )
    pressure.add_argument("role", metavar="ROLE")
    return parser


def main(
    argv: Sequence[str] | None = None,
    *,
    out: TextIO | None = None,
    err: TextIO | None = None,
    now: datetime.datetime | None = None,
) -> int:
    """Run ``recurgent tools``.

    Args:
        argv: Arguments after ``tools`` (default: ``sys.argv[1:]``).
        out, err: Where to write (default: stdout, stderr).
        now: The current UTC time, for ``prune``.

    Returns:
        0 on success, 1 when a named role or method holds nothing or the store cannot be
        changed, 2 for a usage error.
    """
    out = out or sys.stdout
    err = err or sys.stderr
    parser = build_parser()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            arguments = list(sys.argv[1:] if argv is None else argv)
            names = [name for name, _ in TOOLS_COMMANDS]  # `--root R list` is `list --root R`
            moved, rest = leading_shared_options(arguments)
            if moved and (not rest or rest[0] not in names):
                # Shared options, then no command or an unknown one: argparse would name the
                # root's path as the unknown command.
                if rest and rest[0] in ("-h", "--help"):
                    parser.parse_args(rest[:1])  # prints the help and exits 0
                shown = f"unknown command {rest[0]!r}" if rest else "a command is required"
                parser.error(f"{shown}; choose from {', '.join(names)}")
            args = parser.parse_args(hoist_shared_options(arguments, names))
    except SystemExit as exit_request:
        return exit_request.code if isinstance(exit_request.code, int) else 2
    out = cast(TextIO, _Escaping(out, json_text=args.json))
    err = cast(TextIO, _Escaping(err, json_text=False))
    root = args.root.expanduser() if args.root is not None else default_root()
    moment = now or datetime.datetime.now(datetime.UTC)
    # Run inside a process that made calls, the command sees (and prunes) its counts too.
    _pending.flush()
    try:
        if args.command == "list":
            return _cmd_list(args, root, out)
        if args.command == "show":
            return _cmd_show(args, root, out, err)
        if args.command == "prune":
            return _cmd_prune(args, root, out, moment)
        if args.command in _cli_lifecycle.COMMANDS:
            return _cli_lifecycle.run(args, root, out, err)
        if args.command == "namespace-pressure":
            return namespace_pressure(args.role, root, as_json=args.json, out=out, err=err)
        return _cmd_forget(args, root, out, err)
    except OSError as error:
        err.write(f"recurgent tools: {error}\n")
        return 1


if __name__ == "__main__":
    sys.exit(main())
