"""The ``recurgent`` command line: ``recurgent watch`` renders the JSONL call log as call trees.

One line per dynamic call, indented by depth::

    22:21:29.062  personal assistant.ask  ok  attempts=1  source=generated  23.0ms  trace=8e1bb53e call=6863f8c2
    22:21:29.051    feed fetcher.fetch_feed  ok  attempts=1  source=generated  9.1ms  trace=8e1bb53e call=63c33e19

Entries are written in completion order (children before their parent); a whole file is printed
as trees, grouped by trace, parents before children. ``--follow`` then streams appended entries
in arrival order, like ``tail -f``. Only the standard library is used.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import sys
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, TextIO

from recurgent._options import default_log_path

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
]

Entry = Mapping[str, Any]

MAX_MESSAGE_CHARS = 160
CODE_PREVIEW_LINES = 12
DEFAULT_POLL_MS = 300
_ID_CHARS = 8
_CLOCK_WIDTH = len("HH:MM:SS.mmm")
_COLUMN_GAP = "  "


def normalize_status(entry: Entry) -> str:
    """``outcome_status`` when it is ok/error, else ``error`` if an exception was logged, else ok."""
    status = entry.get("outcome_status")
    if status in ("ok", "error"):
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
    except ValueError:
        return "--:--:--.---"
    if moment.tzinfo is not None:
        moment = moment.astimezone(UTC)
    return f"{moment:%H:%M:%S}.{moment.microsecond // 1000:03d}"


def _depth(entry: Entry) -> int:
    depth = entry.get("depth")
    return depth if isinstance(depth, int) and not isinstance(depth, bool) and depth > 0 else 0


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
            f"source={entry.get('program_source') or '-'}",
            f"{duration:.1f}ms" if _number(duration) else "-ms",
            f"trace={_short_id(entry.get('trace_id'))} call={_short_id(entry.get('call_id'))}",
        ]
    )
    lines = [call]
    if status != "error":
        return lines
    detail = " " * (_CLOCK_WIDTH + len(_COLUMN_GAP)) + indent + "  "
    message = entry.get("outcome_error_message") or entry.get("error_message")
    if message:
        lines.append(detail + _one_line(str(message)))
    code = entry.get("code")
    if show_code and isinstance(code, str) and code.strip():
        program = code.strip("\n").splitlines()
        lines.extend(f"{detail}| {line}".rstrip() for line in program[:CODE_PREVIEW_LINES])
        if len(program) > CODE_PREVIEW_LINES:
            lines.append(f"{detail}| ... ({len(program) - CODE_PREVIEW_LINES} more lines)")
    return lines


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


class LogFollower:
    """Reads the entries appended to a JSONL log since the previous poll, like ``tail -f``.

    An incomplete last line stays buffered until its newline arrives. When the file shrinks or
    is replaced (truncation, rotation) reading restarts from its beginning. A missing file reads
    as empty. Blank lines are skipped; lines that are not a JSON object are counted in
    :attr:`skipped`.

    Args:
        path: The JSONL log file.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.skipped = 0
        self._position = 0
        self._identity: tuple[int, int] | None = None
        self._pending = b""

    def poll(self, *, final: bool = False) -> list[dict[str, Any]]:
        """The entries completed since the last poll.

        Args:
            final: Also parse a last line that has no newline yet (for a one-shot read).

        Raises:
            OSError: The file exists but cannot be read.
        """
        try:
            with self.path.open("rb") as file:
                status = os.fstat(file.fileno())
                identity = (status.st_dev, status.st_ino)
                if identity != self._identity or status.st_size < self._position:
                    self._identity = identity
                    self._position = 0
                    self._pending = b""
                file.seek(self._position)
                data = file.read()
        except FileNotFoundError:
            return []
        self._position += len(data)
        lines = (self._pending + data).split(b"\n")
        self._pending = b"" if final else lines.pop()
        return [entry for entry in map(self._parse, lines) if entry is not None]

    def _parse(self, raw: bytes) -> dict[str, Any] | None:
        text = raw.decode("utf-8", "replace").strip()
        if not text:
            return None
        try:
            entry = json.loads(text)
        except ValueError:
            entry = None
        if not isinstance(entry, dict):
            self.skipped += 1
            return None
        return entry


def follow(
    follower: LogFollower,
    on_entries: Callable[[list[dict[str, Any]]], None],
    *,
    poll_seconds: float,
    stop: Callable[[], bool] = lambda: False,
    sleep: Callable[[float], None] = time.sleep,
    max_polls: int | None = None,
) -> int:
    """Poll ``follower`` and hand every non-empty batch to ``on_entries`` until told to stop.

    Args:
        follower: Where new entries come from.
        on_entries: Receives each batch of new entries, in file order.
        poll_seconds: Pause before each poll.
        stop: Checked before each pause; returning true ends the loop.
        sleep: The pause (tests pass a fake or a short real one).
        max_polls: End after this many polls (``None``: only ``stop`` or Ctrl-C end it).

    Returns:
        How many polls were made.
    """
    polls = 0
    while (max_polls is None or polls < max_polls) and not stop():
        sleep(poll_seconds)
        batch = follower.poll()
        polls += 1
        if batch:
            on_entries(batch)
    return polls


class _Printer:
    """Prints the entries that pass the filter and counts them by status."""

    def __init__(self, out: TextIO, selection: WatchFilter, *, show_code: bool) -> None:
        self._out = out
        self._selection = selection
        self._show_code = show_code
        self.counts = {"ok": 0, "error": 0}

    def show(self, entries: Sequence[Entry]) -> None:
        for entry in entries:
            if self._selection.matches(entry):
                self._out.write("\n".join(render_entry(entry, show_code=self._show_code)) + "\n")
                self.counts[normalize_status(entry)] += 1
        # Piped output is block-buffered; a watcher must show each batch as it arrives.
        self._out.flush()


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
    summary = f"Stopped: {_plural(ok + failed, 'call')} shown ({ok} ok, {failed} error)"
    if follower.skipped:
        summary += f", {_plural(follower.skipped, 'unparsable line')} skipped"
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
    """The ``recurgent`` argument parser (``watch``; ``tools`` is parsed by the store's CLI)."""
    parser = argparse.ArgumentParser(prog="recurgent", description="recurgent tools.")
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
    watch.add_argument("--status", choices=("ok", "error"), help="only calls with this outcome")
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
        help="list, show, prune or forget stored programs (see: recurgent tools --help)",
    )
    return parser


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``recurgent`` console script.

    Args:
        argv: Arguments without the program name (default: ``sys.argv[1:]``).

    Returns:
        The exit status (2 for a usage error, as argparse reports it).
    """
    arguments = list(sys.argv[1:] if argv is None else argv)
    if arguments[:1] == ["tools"]:
        from recurgent._store._cli import main as tools_main

        return tools_main(arguments[1:])
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
