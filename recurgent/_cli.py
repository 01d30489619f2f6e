"""The ``recurgent`` command line: ``recurgent watch`` renders the JSONL call log as call trees.

The entry point itself (``--version``, ``--help``, a bare ``recurgent``) loads only the standard
library: the tool store's and the proposals' parsers are imported when their command runs, and
the help lists their commands from ``recurgent._cli_index`` (ADR 0115).

One line per dynamic call, indented by depth::

    22:21:29.062  personal assistant.ask  ok  attempts=1  source=generated  23.0ms  trace=8e1bb53e call=6863f8c2
    22:21:29.051    feed fetcher.fetch_feed  ok  attempts=1  source=generated  9.1ms  trace=8e1bb53e call=63c33e19

Entries are written in completion order (children before their parent); a whole file is printed
as trees, grouped by trace, parents before children. ``--follow`` then streams appended entries
in arrival order, like ``tail -f``. Only the standard library is used.

Log text is written by programs an attacker may steer, so every printed line has its control
and other non-printable characters shown as ``repr`` escapes (``\x1b``), never emitted raw; a
line that cannot be parsed or shown is skipped and counted, and the rest still print (ADR 0032).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from recurgent._cli_index import index_text
from recurgent._log_path import default_log_path
from recurgent._logfollow import LogFollower, follow

__all__ = [
    "LogFollower",
    "WatchFilter",
    "build_parser",
    "follow",
    "main",
    "normalize_status",
    "render_entry",
    "run_watch",
    "tree_order",
    "visible",
]

Entry = Mapping[str, Any]

MAX_MESSAGE_CHARS = 160
CODE_PREVIEW_LINES = 12
DEFAULT_POLL_MS = 300
_ID_CHARS = 8
_CLOCK_WIDTH = len("HH:MM:SS.mmm")
_COLUMN_GAP = "  "
MAX_INDENT_LEVELS = 40
"""Deeper calls are indented as if at this depth (a hostile ``depth`` cannot flood the screen)."""
_MAX_DURATION_MS = 1e15


def visible(text: str) -> str:
    """``text`` with every non-printable character (ESC, BEL, C1, bidi overrides) escaped as repr does."""
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else repr(char)[1:-1] for char in text)


def normalize_status(entry: Entry) -> str:
    """``outcome_status`` when ok/error/interrupted, else ``error`` if an exception was logged, else ok."""
    status = entry.get("outcome_status")
    if status in ("ok", "error", "interrupted"):
        return str(status)
    return "error" if entry.get("error_class") else "ok"


@dataclass(frozen=True, slots=True)
class WatchFilter:
    """Which entries ``watch`` prints.

    Attributes:
        status: Keep only this normalized status (``ok`` or ``error``).
        role: Keep roles this pattern matches anywhere (``re.search``).
        method: Keep methods this pattern matches anywhere.
        trace: Keep the trace whose id starts with this prefix.
    """

    status: str | None = None
    role: re.Pattern[str] | None = None
    method: re.Pattern[str] | None = None
    trace: str | None = None

    def matches(self, entry: Entry) -> bool:
        """Whether the entry passes every filter that is set."""
        if self.status is not None and normalize_status(entry) != self.status:
            return False
        if self.role is not None and not self.role.search(str(entry.get("role") or "")):
            return False
        if self.method is not None and not self.method.search(str(entry.get("method") or "")):
            return False
        return self.trace is None or str(entry.get("trace_id") or "").startswith(self.trace)

    def describe(self) -> str:
        """The filters in effect, e.g. ``status=error, role=/fetch/``, or ``none``."""
        parts = []
        if self.status is not None:
            parts.append(f"status={self.status}")
        if self.role is not None:
            parts.append(f"role=/{self.role.pattern}/")
        if self.method is not None:
            parts.append(f"method=/{self.method.pattern}/")
        if self.trace is not None:
            parts.append(f"trace={self.trace}")
        return ", ".join(parts) or "none"


def _clock(timestamp: Any) -> str:
    try:
        moment = datetime.fromisoformat(str(timestamp))
    except (ValueError, OverflowError, TypeError):
        return "--:--:--.---"
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return f"{moment:%H:%M:%S}.{moment.microsecond // 1000:03d}"


def _depth(entry: Entry) -> int:
    depth = entry.get("depth")
    if not isinstance(depth, int) or isinstance(depth, bool) or depth <= 0:
        return 0
    return min(depth, MAX_INDENT_LEVELS)


def _duration(value: Any) -> str:
    if _number(value) and abs(value) < _MAX_DURATION_MS:
        return f"{float(value):.1f}ms"
    return "-ms"


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _attempts(entry: Entry) -> str:
    for key in ("attempt_id", "generation_attempt"):
        value = entry.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return str(value)
    return "-"


def _short_id(value: Any) -> str:
    return str(value)[:_ID_CHARS] if value else "-"


def _one_line(text: str) -> str:
    flat = " ".join(text.split())
    if len(flat) <= MAX_MESSAGE_CHARS:
        return flat
    return flat[: MAX_MESSAGE_CHARS - 3] + "..."


def _source(entry: Entry) -> str:
    """``source=persisted`` and, when the log says so, the program's reuse facts (ADR 0047).

    ``#1a2b3c4d`` is the start of the checksum of the program that ran; ``noreuse=ask`` says
    why it will not be reused; ``repair=ok``/``repair=failed`` marks a repaired stored program.
    """
    text = f"source={entry.get('program_source') or '-'}"
    checksum = entry.get("artifact_checksum")
    if isinstance(checksum, str) and checksum:
        # "sha256:<hex>": the first 8 hex digits, as `recurgent tools` and verbose show them.
        text += f" #{checksum.partition(':')[2][:8] or checksum[:8]}"
    if entry.get("cacheable") is False:
        text += f" noreuse={entry.get('cacheability_reason') or '?'}"
    if entry.get("repair_attempted") is True:
        text += " repair=ok" if entry.get("repair_succeeded") is True else " repair=failed"
    return text


def render_entry(entry: Entry, *, show_code: bool = False) -> list[str]:
    """The printed lines of one log entry: the call line, then details for errors.

    Args:
        entry: One parsed JSONL log entry.
        show_code: Also print the first lines of ``code`` under error entries.

    Returns:
        Lines without trailing newlines. The call line is indented two spaces per depth after
        the clock column; an error adds its message (one line, at most 160 characters) and,
        with ``show_code``, a ``|`` gutter holding the program.
    """
    indent = "  " * _depth(entry)
    status = normalize_status(entry)
    outcome = status
    if status == "error":
        error_type = entry.get("outcome_error_type") or entry.get("error_class")
        outcome = f"error {error_type}" if error_type else "error"
    duration = entry.get("duration_ms")
    call = _COLUMN_GAP.join(
        [
            _clock(entry.get("timestamp")),
            f"{indent}{entry.get('role') or '?'}.{entry.get('method') or '?'}",
            outcome,
            f"attempts={_attempts(entry)}",
            _source(entry),
            _duration(duration),
            f"trace={_short_id(entry.get('trace_id'))} call={_short_id(entry.get('call_id'))}",
        ]
    )
    lines = [call]
    if status != "error":
        return [visible(call)]
    detail = " " * (_CLOCK_WIDTH + len(_COLUMN_GAP)) + indent + "  "
    message = entry.get("outcome_error_message") or entry.get("error_message")
    if message:
        lines.append(detail + _one_line(str(message)))
    code = entry.get("code")
    if show_code and isinstance(code, str) and code.strip():
        program = code.strip("\n").splitlines()
        lines.extend(
            f"{detail}| {line.expandtabs(4)}".rstrip() for line in program[:CODE_PREVIEW_LINES]
        )
        if len(program) > CODE_PREVIEW_LINES:
            lines.append(f"{detail}| ... ({len(program) - CODE_PREVIEW_LINES} more lines)")
    return [visible(line) for line in lines]


def tree_order(entries: Sequence[Entry]) -> list[Entry]:
    """Entries grouped by trace (in order of first appearance), each tree in pre-order.

    Within a trace a call comes before its children (linked by ``parent_call_id``), siblings
    keep file order, and a call whose parent is not in the trace starts a tree of its own.
    """
    traces: dict[str | None, list[int]] = {}
    for index, entry in enumerate(entries):
        trace = entry.get("trace_id")
        traces.setdefault(trace if isinstance(trace, str) else None, []).append(index)
    order: list[int] = []
    for members in traces.values():
        order.extend(_preorder(entries, members))
    return [entries[index] for index in order]


def _preorder(entries: Sequence[Entry], members: list[int]) -> list[int]:
    index_of_call: dict[str, int] = {}
    for index in members:
        call_id = entries[index].get("call_id")
        if isinstance(call_id, str):
            index_of_call.setdefault(call_id, index)
    children: dict[int, list[int]] = {}
    roots: list[int] = []
    for index in members:
        parent_id = entries[index].get("parent_call_id")
        parent = index_of_call.get(parent_id) if isinstance(parent_id, str) else None
        if parent is None or parent == index:
            roots.append(index)
        else:
            children.setdefault(parent, []).append(index)
    visited: set[int] = set()
    order: list[int] = []
    # Members on a parent_call_id cycle are reachable from no root; the second pass keeps them.
    for start in [*roots, *members]:
        stack = [start]
        while stack:
            index = stack.pop()
            if index in visited:
                continue
            visited.add(index)
            order.append(index)
            stack.extend(reversed(children.get(index, [])))
    return order


class _Printer:
    """Prints the entries that pass the filter and counts them by status.

    An entry that cannot be filtered or rendered (a value no conversion can show) is skipped
    and counted in :attr:`unshowable`; the following entries still print.
    """

    def __init__(self, out: TextIO, selection: WatchFilter, *, show_code: bool) -> None:
        self._out = out
        self._selection = selection
        self._show_code = show_code
        self.counts = {"ok": 0, "error": 0, "interrupted": 0}
        self.unshowable = 0
        self.tokens: dict[str, int] = {}

    def show(self, entries: Sequence[Entry]) -> None:
        for entry in entries:
            try:
                if not self._selection.matches(entry):
                    continue
                text = "\n".join(render_entry(entry, show_code=self._show_code)) + "\n"
            except (ValueError, TypeError, OverflowError, RecursionError, MemoryError):
                self.unshowable += 1
                continue
            self._out.write(text)
            self.counts[normalize_status(entry)] += 1
            _add_tokens(self.tokens, entry.get("usage"))
        # Piped output is block-buffered; a watcher must show each batch as it arrives.
        self._out.flush()


def _add_tokens(total: dict[str, int], usage: object) -> None:
    """Add a log line's ``usage`` counts to a session total (malformed counts are ignored)."""
    if not isinstance(usage, dict):
        return
    for key, count in usage.items():
        if isinstance(key, str) and type(count) is int and 0 <= count < 10**15:
            total[key] = total.get(key, 0) + count


def token_summary(total: dict[str, int]) -> str:
    """The session's token total, e.g. ``tokens: 1200 in (800 cached), 300 out``."""
    cached = total.get("cache_read_input_tokens", 0) + total.get("cached_tokens", 0)
    text = f"tokens: {total.get('input_tokens', 0)} in"
    if cached:
        text += f" ({cached} cached)"
    return text + f", {total.get('output_tokens', 0)} out"


def _plural(count: int, noun: str) -> str:
    return f"{count} {noun}" if count == 1 else f"{count} {noun}s"


def run_watch(
    args: argparse.Namespace,
    *,
    out: TextIO,
    err: TextIO,
    stop: Callable[[], bool] = lambda: False,
    sleep: Callable[[float], None] = time.sleep,
) -> int:
    """Run ``recurgent watch`` with parsed arguments.

    Args:
        args: The namespace :func:`build_parser` produced for the ``watch`` command.
        out: Where call lines go.
        err: Where notices and errors go.
        stop: With ``--follow``: returning true stops following (Ctrl-C does too).
        sleep: With ``--follow``: the pause between polls.

    Returns:
        The exit status: 0, or 1 when the log is missing (without ``--follow``) or unreadable.
    """
    path = Path(args.log).expanduser() if args.log is not None else default_log_path()
    selection = WatchFilter(
        status=args.status, role=args.role, method=args.method, trace=args.trace
    )
    printer = _Printer(out, selection, show_code=args.show_code)
    follower = LogFollower(path)
    if path.is_dir():
        err.write(f"recurgent watch: {path} is a directory, not a JSONL log\n")
        return 1
    if not args.follow and not path.exists():
        err.write(
            f"recurgent watch: no log file at {path}\n"
            "  (agents create it on their first call; use --follow to wait for it)\n"
        )
        return 1
    try:
        if not args.follow:
            printer.show(tree_order(follower.poll(final=True)))
            if follower.skipped:
                err.write(
                    f"recurgent watch: skipped {_plural(follower.skipped, 'unparsable line')}\n"
                )
            if printer.unshowable:
                err.write(
                    "recurgent watch: skipped "
                    f"{_plural(printer.unshowable, 'line')} that could not be shown\n"
                )
            return 0
        waiting = "" if path.exists() else " (not there yet, waiting for it)"
        err.write(f"Watching {path}{waiting}; filters: {selection.describe()}; Ctrl-C stops.\n")
        err.flush()
        with contextlib.suppress(KeyboardInterrupt):
            printer.show(tree_order(follower.poll()))
            follow(follower, printer.show, poll_seconds=args.poll_ms / 1000, stop=stop, sleep=sleep)
    except BrokenPipeError:
        raise  # a closed stdout is the reader's choice, not a log read failure; main handles it
    except OSError as error:
        err.write(f"recurgent watch: cannot read {path}: {error.strerror or error}\n")
        return 1
    ok, failed = printer.counts["ok"], printer.counts["error"]
    interrupted = printer.counts["interrupted"]
    summary = (
        f"Stopped: {_plural(ok + failed + interrupted, 'call')} shown ({ok} ok, {failed} error"
    )
    summary += f", {interrupted} interrupted)" if interrupted else ")"
    if follower.skipped:
        summary += f", {_plural(follower.skipped, 'unparsable line')} skipped"
    if printer.unshowable:
        summary += f", {_plural(printer.unshowable, 'unshowable line')} skipped"
    if printer.tokens:
        summary += f"; {token_summary(printer.tokens)}"
    out.write(summary + ".\n")
    return 0


def _pattern(text: str) -> re.Pattern[str]:
    try:
        return re.compile(text)
    except re.error as error:
        raise argparse.ArgumentTypeError(f"invalid regular expression {text!r}: {error}") from error


def _positive_int(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value <= 0:
        raise argparse.ArgumentTypeError(f"expected a positive integer, got {text!r}")
    return value


def build_parser() -> argparse.ArgumentParser:
    """The ``recurgent`` argument parser (``watch``; ``tools`` and ``proposals`` are parsed by
    their rooms' own parsers, and listed in the help's closing section)."""
    parser = argparse.ArgumentParser(
        prog="recurgent",
        description="recurgent's command line: the call log, stored programs and proposals.",
        epilog=index_text(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "-V",
        "--version",
        action="version",
        version=f"%(prog)s {_package_version()}",
        help="print the installed version and exit",
    )
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    watch = commands.add_parser(
        "watch",
        help="print the JSONL call log as indented call trees",
        description="Print one line per dynamic call, indented by depth, grouped by trace.",
    )
    watch.add_argument(
        "log",
        nargs="?",
        metavar="LOG",
        help="the JSONL log (default: $XDG_STATE_HOME/recurgent/recurgent.jsonl, "
        "falling back to ~/.local/state)",
    )
    watch.add_argument("--trace", metavar="ID", help="only this trace (an id prefix is enough)")
    watch.add_argument(
        "--follow", action="store_true", help="keep printing entries as they are appended"
    )
    watch.add_argument(
        "--status", choices=("ok", "error", "interrupted"), help="only calls with this outcome"
    )
    watch.add_argument("--role", type=_pattern, metavar="REGEX", help="only roles matching REGEX")
    watch.add_argument(
        "--method", type=_pattern, metavar="REGEX", help="only methods matching REGEX"
    )
    watch.add_argument(
        "--show-code", action="store_true", help="print the program under each failed call"
    )
    watch.add_argument(
        "--poll-ms",
        type=_positive_int,
        default=DEFAULT_POLL_MS,
        metavar="N",
        help=f"with --follow: poll every N milliseconds (default {DEFAULT_POLL_MS})",
    )
    # Listed for --help only: main() hands ``tools ...`` to the tool store's own parser.
    commands.add_parser(
        "tools",
        add_help=False,
        help="stored programs: list, show, prune, forget, their lifecycle",
    )
    # Listed for --help only: main() hands ``proposals ...`` to the governance room's parser.
    commands.add_parser(
        "proposals",
        add_help=False,
        help="list, show, approve, reject or apply proposals",
    )
    return parser


def _package_version() -> str:
    """The installed version, from the package metadata (``recurgent --version``)."""
    from recurgent._version import __version__

    return __version__


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``recurgent`` console script.

    Args:
        argv: Arguments without the program name (default: ``sys.argv[1:]``).

    Returns:
        The exit status: 0 for ``--help``, ``--version`` and a bare ``recurgent`` (which prints
        the help on stdout: asking for nothing is asking for the menu), 2 for a usage error, as
        argparse reports it.
    """
    arguments = list(sys.argv[1:] if argv is None else argv)
    if not arguments:
        sys.stdout.write(build_parser().format_help())
        return 0
    if arguments[:1] == ["tools"]:
        from recurgent._store._cli import main as tools_main

        return tools_main(arguments[1:])
    if arguments[:1] == ["proposals"]:
        from recurgent._governance._cli import main as proposals_main

        return proposals_main(arguments[1:])
    try:
        args = build_parser().parse_args(arguments)
    except SystemExit as exit_request:
        return exit_request.code if isinstance(exit_request.code, int) else 2
    try:
        return run_watch(args, out=sys.stdout, err=sys.stderr)
    except BrokenPipeError:
        # The reader went away (`recurgent watch | head`): stop quietly, as Unix filters do, and
        # point stdout at devnull so the interpreter's final flush cannot fail again.
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
        return 1


if __name__ == "__main__":
    sys.exit(main())
