"""Specs for the ``recurgent watch`` command line (recurgent/_cli.py), on a recorded log and by hand."""

from __future__ import annotations

import io
import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from recurgent._cli import (
    LogFollower,
    WatchFilter,
    build_parser,
    follow,
    main,
    normalize_status,
    render_entry,
    run_watch,
    tree_order,
)

RECORDED_LOG = Path(__file__).parent / "fixtures" / "recorded_log.jsonl"

# Trace 8e1bb53e: ask -> fetch_feed (ok) -> parse_items, fetch_feed (http_error), then a second
# ask turn; trace 77244b65: add, sqrt retried once; trace 8d24eff1: guardrail exhaustion.
ASK = "22:21:29.062  personal assistant.ask  ok  attempts=1  source=generated  23.0ms  trace=8e1bb53e call=6863f8c2"
FETCH_OK = "22:21:29.051    feed fetcher.fetch_feed  ok  attempts=1  source=generated  9.1ms  trace=8e1bb53e call=63c33e19"
PARSE = "22:21:29.046      rss parser.parse_items  ok  attempts=1  source=generated  2.3ms  trace=8e1bb53e call=a8b5af73"
FETCH_ERROR = "22:21:29.057    feed fetcher.fetch_feed  error http_error  attempts=1  source=generated  1.5ms  trace=8e1bb53e call=40ac752e"
FETCH_ERROR_MESSAGE = "                  HTTP 403 Forbidden for http://127.0.0.1:8000/yahoo"
SECOND_ASK = "22:21:29.072  personal assistant.ask  ok  attempts=1  source=generated  1.4ms  trace=8e1bb53e call=1b6791b9"
ADD = "22:21:29.067  calculator.add  ok  attempts=1  source=generated  1.3ms  trace=77244b65 call=dcae8a24"
SQRT = "22:21:29.080  calculator.sqrt  ok  attempts=2  source=generated  4.6ms  trace=77244b65 call=a442c79f"
HEADLINES = "22:21:29.088  news fetcher.headlines  error guardrail_retry_exhausted  attempts=2  source=generated  3.9ms  trace=8d24eff1 call=ddca007a"
HEADLINES_MESSAGE = "                This request couldn't be completed after multiple attempts."

RECORDED_TREE = [
    ASK,
    FETCH_OK,
    PARSE,
    FETCH_ERROR,
    FETCH_ERROR_MESSAGE,
    SECOND_ASK,
    ADD,
    SQRT,
    HEADLINES,
    HEADLINES_MESSAGE,
]
SKIPPED_NOTE = "recurgent watch: skipped 1 unparsable line\n"


def _text(lines: list[str]) -> str:
    return "".join(line + "\n" for line in lines)


def _entry(call_id: str, **fields: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "timestamp": "2026-02-20T10:00:00.000Z",
        "role": "worker",
        "method": "run",
        "duration_ms": 1.0,
        "attempt_id": 1,
        "program_source": "generated",
        "trace_id": "t" * 24,
        "call_id": call_id,
        "parent_call_id": None,
        "depth": 0,
        "outcome_status": "ok",
    }
    entry.update(fields)
    return entry


def _line(entry: dict[str, Any]) -> str:
    return json.dumps(entry) + "\n"


def _append(path: Path, text: str) -> None:
    with path.open("a", encoding="utf-8") as file:
        file.write(text)


def _watch_args(*argv: str) -> Any:
    return build_parser().parse_args(["watch", *argv])


class TestRecordedLog:
    """``recurgent watch LOG`` over the recorded fixture."""

    def test_prints_every_trace_as_a_tree(self, capsys: pytest.CaptureFixture[str]) -> None:
        """Prints each trace parents-first, indented two spaces per depth, and notes the bad line."""
        status = main(["watch", str(RECORDED_LOG)])
        captured = capsys.readouterr()
        assert status == 0
        assert captured.out == _text(RECORDED_TREE)
        assert captured.err == SKIPPED_NOTE

    def test_trace_prefix_selects_one_trace(self, capsys: pytest.CaptureFixture[str]) -> None:
        """Keeps only the trace whose id starts with the --trace prefix."""
        assert main(["watch", str(RECORDED_LOG), "--trace", "77244b65"]) == 0
        assert capsys.readouterr().out == _text([ADD, SQRT])

    def test_full_trace_id_selects_one_trace(self, capsys: pytest.CaptureFixture[str]) -> None:
        """Accepts a full 24-hex trace id as well."""
        assert main(["watch", str(RECORDED_LOG), "--trace", "8d24eff14cce718bd88bfed8"]) == 0
        assert capsys.readouterr().out == _text([HEADLINES, HEADLINES_MESSAGE])

    def test_unknown_trace_prints_nothing(self, capsys: pytest.CaptureFixture[str]) -> None:
        """Prints no call line for a trace that is not in the log, and still exits 0."""
        assert main(["watch", str(RECORDED_LOG), "--trace", "ffff"]) == 0
        assert capsys.readouterr().out == ""

    def test_status_error_keeps_failures(self, capsys: pytest.CaptureFixture[str]) -> None:
        """Keeps only error calls, still in tree order and at their depth."""
        assert main(["watch", str(RECORDED_LOG), "--status", "error"]) == 0
        expected = _text([FETCH_ERROR, FETCH_ERROR_MESSAGE, HEADLINES, HEADLINES_MESSAGE])
        assert capsys.readouterr().out == expected

    def test_status_ok_keeps_successes(self, capsys: pytest.CaptureFixture[str]) -> None:
        """Keeps only ok calls."""
        assert main(["watch", str(RECORDED_LOG), "--status", "ok"]) == 0
        assert capsys.readouterr().out == _text([ASK, FETCH_OK, PARSE, SECOND_ASK, ADD, SQRT])

    def test_role_regex_searches_the_role(self, capsys: pytest.CaptureFixture[str]) -> None:
        """Keeps calls whose role the --role pattern matches anywhere."""
        assert main(["watch", str(RECORDED_LOG), "--role", "fetch"]) == 0
        expected = _text([FETCH_OK, FETCH_ERROR, FETCH_ERROR_MESSAGE, HEADLINES, HEADLINES_MESSAGE])
        assert capsys.readouterr().out == expected

    def test_method_regex_searches_the_method(self, capsys: pytest.CaptureFixture[str]) -> None:
        """Keeps calls whose method the --method pattern matches."""
        assert main(["watch", str(RECORDED_LOG), "--method", "^(ask|sqrt)$"]) == 0
        assert capsys.readouterr().out == _text([ASK, SECOND_ASK, SQRT])

    def test_filters_combine(self, capsys: pytest.CaptureFixture[str]) -> None:
        """Requires every given filter to match."""
        argv = ["watch", str(RECORDED_LOG), "--role", "^feed", "--status", "ok"]
        assert main(argv) == 0
        assert capsys.readouterr().out == _text([FETCH_OK])

    def test_show_code_prints_programs_of_failed_calls(
        self, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Prints the first lines of each failed call's program in a ``|`` gutter."""
        assert main(["watch", str(RECORDED_LOG), "--show-code", "--trace", "8d24"]) == 0
        gutter = "                | "
        expected = [
            HEADLINES,
            HEADLINES_MESSAGE,
            gutter + "from urllib.request import urlopen",
            gutter + 'headlines = ["Harbour bridge reopens", "Council votes on budget"]',
            gutter + 'result = {"items": headlines}',
        ]
        assert capsys.readouterr().out == _text(expected)

    def test_show_code_leaves_ok_calls_alone(self, capsys: pytest.CaptureFixture[str]) -> None:
        """Adds nothing under ok calls, whose programs are not the interesting ones."""
        assert main(["watch", str(RECORDED_LOG), "--show-code", "--trace", "7724"]) == 0
        assert capsys.readouterr().out == _text([ADD, SQRT])


class TestLogLocation:
    """Which file ``watch`` reads, and what happens when it cannot."""

    def test_missing_file_exits_1_with_a_message(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Exits 1 and names the missing path on stderr."""
        missing = tmp_path / "nowhere.jsonl"
        assert main(["watch", str(missing)]) == 1
        captured = capsys.readouterr()
        assert captured.out == ""
        assert captured.err == (
            f"recurgent watch: no log file at {missing}\n"
            "  (agents create it on their first call; use --follow to wait for it)\n"
        )

    def test_directory_exits_1(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """Exits 1 when LOG is a directory."""
        assert main(["watch", str(tmp_path)]) == 1
        expected = f"recurgent watch: {tmp_path} is a directory, not a JSONL log\n"
        assert capsys.readouterr().err == expected

    def test_defaults_to_the_state_home_log(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Reads $XDG_STATE_HOME/recurgent/recurgent.jsonl when no LOG is given."""
        default = Path(os.environ["XDG_STATE_HOME"]) / "recurgent" / "recurgent.jsonl"
        default.parent.mkdir(parents=True)
        shutil.copyfile(RECORDED_LOG, default)
        assert main(["watch", "--trace", "77244b65"]) == 0
        assert capsys.readouterr().out == _text([ADD, SQRT])

    def test_invalid_regex_is_a_usage_error(self, capsys: pytest.CaptureFixture[str]) -> None:
        """Returns 2 with argparse's message for a --role that does not compile."""
        assert main(["watch", str(RECORDED_LOG), "--role", "("]) == 2
        assert "invalid regular expression '('" in capsys.readouterr().err

    def test_poll_interval_must_be_positive(self, capsys: pytest.CaptureFixture[str]) -> None:
        """Returns 2 for --poll-ms 0."""
        assert main(["watch", "--follow", "--poll-ms", "0"]) == 2
        assert "expected a positive integer, got '0'" in capsys.readouterr().err

    def test_help_exits_0(self, capsys: pytest.CaptureFixture[str]) -> None:
        """Returns 0 after printing the watch help."""
        assert main(["watch", "--help"]) == 0
        assert "--show-code" in capsys.readouterr().out


class TestRenderEntry:
    """One entry's printed lines."""

    @pytest.mark.parametrize(
        ("fields", "expected"),
        [
            ({"outcome_status": "ok"}, "ok"),
            ({"outcome_status": "error"}, "error"),
            ({"outcome_status": "error", "error_class": None}, "error"),
            ({"outcome_status": None, "error_class": "ProviderError"}, "error"),
            ({"outcome_status": "unknown", "error_class": "ProviderError"}, "error"),
            ({"outcome_status": None, "error_class": None}, "ok"),
            ({}, "ok"),
        ],
    )
    def test_status_normalization(self, fields: dict[str, Any], expected: str) -> None:
        """Uses outcome_status when ok/error, else error when error_class is set, else ok."""
        assert normalize_status(fields) == expected

    def test_error_type_falls_back_to_error_class(self) -> None:
        """Names the exception class when an error entry has no outcome_error_type."""
        entry = _entry("c1", outcome_status=None, error_class="ProviderError", error_message="boom")
        assert render_entry(entry) == [
            "10:00:00.000  worker.run  error ProviderError  attempts=1  source=generated  1.0ms  trace=tttttttt call=c1",
            "                boom",
        ]

    def test_attempts_fall_back_to_generation_attempt(self) -> None:
        """Shows generation_attempt when attempt_id is absent, and '-' when both are."""
        older = _entry("c1", generation_attempt=3)
        del older["attempt_id"]
        bare = {"outcome_status": "ok"}
        assert "attempts=3" in render_entry(older)[0]
        assert render_entry(bare) == [
            "--:--:--.---  ?.?  ok  attempts=-  source=-  -ms  trace=- call=-"
        ]

    def test_indents_two_spaces_per_depth(self) -> None:
        """Puts two spaces per depth between the clock and role.method, and under an error."""
        entry = _entry("c1", depth=3, outcome_status="error", outcome_error_type="timeout")
        entry["outcome_error_message"] = "too slow"
        assert render_entry(entry) == [
            "10:00:00.000        worker.run  error timeout  attempts=1  source=generated  1.0ms  trace=tttttttt call=c1",
            "                      too slow",
        ]

    def test_long_messages_become_one_clipped_line(self) -> None:
        """Joins whitespace into single spaces and clips the message to 160 characters."""
        message = "first line\n\tsecond " + "x" * 300
        entry = _entry("c1", outcome_status="error", outcome_error_message=message)
        detail = render_entry(entry)[1]
        assert detail == "                first line second " + "x" * 139 + "..."
        assert len(detail.strip()) == 160

    def test_show_code_caps_the_preview(self) -> None:
        """Prints the first 12 code lines and says how many more there are."""
        code = "\n".join(f"step_{number} = {number}" for number in range(1, 16)) + "\n"
        entry = _entry("c1", outcome_status="error", outcome_error_message="bad", code=code)
        lines = render_entry(entry, show_code=True)
        gutter = "                | "
        assert lines[2:14] == [gutter + f"step_{n} = {n}" for n in range(1, 13)]
        assert lines[14:] == [gutter + "... (3 more lines)"]

    def test_show_code_skips_missing_code(self) -> None:
        """Prints no gutter when the failed call never obtained a program."""
        entry = _entry("c1", outcome_status="error", outcome_error_message="bad", code=None)
        assert len(render_entry(entry, show_code=True)) == 2

    def test_converts_offset_timestamps_to_utc(self) -> None:
        """Shows the clock in UTC even when the timestamp carries another offset."""
        entry = _entry("c1", timestamp="2026-02-20T12:30:05.250+02:00")
        assert render_entry(entry)[0].startswith("10:30:05.250  worker.run")


class TestTreeOrder:
    """Completion-ordered entries become parent-first trees."""

    def test_parents_precede_children_and_siblings_keep_file_order(self) -> None:
        """Orders a trace root first, then each child's subtree, siblings as in the file."""
        grandchild = _entry("g", parent_call_id="a", depth=2)
        first = _entry("a", parent_call_id="root", depth=1)
        second = _entry("b", parent_call_id="root", depth=1)
        root = _entry("root")
        ordered = tree_order([grandchild, first, second, root])
        assert [entry["call_id"] for entry in ordered] == ["root", "a", "g", "b"]

    def test_groups_traces_in_order_of_first_appearance(self) -> None:
        """Prints a whole trace before the next, even when their entries interleave."""
        entries = [
            _entry("a1", trace_id="a"),
            _entry("b1", trace_id="b"),
            _entry("a2", trace_id="a"),
            _entry("n1", trace_id=None),
        ]
        assert [entry["call_id"] for entry in tree_order(entries)] == ["a1", "a2", "b1", "n1"]

    def test_orphans_and_cycles_are_kept(self) -> None:
        """Keeps a child whose parent is absent, and entries whose parent links form a cycle."""
        entries = [
            _entry("orphan", parent_call_id="gone", depth=1),
            _entry("x", parent_call_id="y", depth=1),
            _entry("y", parent_call_id="x", depth=1),
            _entry("self", parent_call_id="self"),
        ]
        assert [entry["call_id"] for entry in tree_order(entries)] == ["orphan", "self", "x", "y"]


class TestWatchFilter:
    """The filter's description, as shown when following."""

    def test_describes_the_filters_in_effect(self) -> None:
        """Lists status, role, method and trace, or says none."""
        selection = WatchFilter(
            status="error", role=re.compile("fetch"), method=re.compile("^ask$"), trace="8e1b"
        )
        assert selection.describe() == "status=error, role=/fetch/, method=/^ask$/, trace=8e1b"
        assert WatchFilter().describe() == "none"


class TestLogFollower:
    """Incremental reads of a growing log."""

    def test_buffers_an_incomplete_last_line(self, log_path: Path) -> None:
        """Returns an entry only once its newline has been written."""
        line = _line(_entry("c1"))
        log_path.write_text(line[:20], encoding="utf-8")
        follower = LogFollower(log_path)
        assert follower.poll() == []
        _append(log_path, line[20:])
        assert follower.poll() == [_entry("c1")]
        assert follower.poll() == []
        assert follower.skipped == 0

    def test_final_poll_reads_a_last_line_without_newline(self, log_path: Path) -> None:
        """Parses the unterminated last line on a one-shot read."""
        log_path.write_text(_line(_entry("c1")) + json.dumps(_entry("c2")), encoding="utf-8")
        assert [e["call_id"] for e in LogFollower(log_path).poll(final=True)] == ["c1", "c2"]

    def test_restarts_when_the_file_shrinks(self, log_path: Path) -> None:
        """Reads from the beginning again after the log is truncated."""
        log_path.write_text(_line(_entry("c1")) + _line(_entry("c2")), encoding="utf-8")
        follower = LogFollower(log_path)
        assert len(follower.poll()) == 2
        log_path.write_text(_line(_entry("c3")), encoding="utf-8")
        assert follower.poll() == [_entry("c3")]

    def test_restarts_when_the_file_is_replaced(self, log_path: Path, tmp_path: Path) -> None:
        """Reads a rotated-in file from its beginning even when it is larger."""
        log_path.write_text(_line(_entry("c1")), encoding="utf-8")
        follower = LogFollower(log_path)
        assert len(follower.poll()) == 1
        replacement = tmp_path / "new.jsonl"
        replacement.write_text(_line(_entry("c2")) + _line(_entry("c3")), encoding="utf-8")
        os.replace(replacement, log_path)
        assert [entry["call_id"] for entry in follower.poll()] == ["c2", "c3"]

    def test_skips_lines_that_are_not_json_objects(self, log_path: Path) -> None:
        """Counts torn, non-JSON and non-object lines as skipped; ignores blank lines."""
        log_path.write_text(
            '{"role": "torn\nnot json\n[1, 2]\n\n' + _line(_entry("c1")), encoding="utf-8"
        )
        follower = LogFollower(log_path)
        assert follower.poll() == [_entry("c1")]
        assert follower.skipped == 3

    def test_missing_file_reads_empty_until_created(self, log_path: Path) -> None:
        """Returns nothing while the log is absent, then its entries once it appears."""
        follower = LogFollower(log_path)
        assert follower.poll() == []
        log_path.write_text(_line(_entry("c1")), encoding="utf-8")
        assert follower.poll() == [_entry("c1")]


def _scripted_stop(*actions: Callable[[], None]) -> Callable[[], bool]:
    """A ``stop`` callable that runs one action per check, then asks to stop."""
    pending = list(actions)

    def stop() -> bool:
        if not pending:
            return True
        pending.pop(0)()
        return False

    return stop


class TestFollow:
    """The polling loop and ``watch --follow``."""

    def test_picks_up_lines_appended_between_polls(self, log_path: Path) -> None:
        """Delivers appended entries batch by batch, across a line split between polls."""
        log_path.write_text(_line(_entry("backlog")), encoding="utf-8")
        follower = LogFollower(log_path)
        assert follower.poll() == [_entry("backlog")]
        second = _line(_entry("c2"))
        stop = _scripted_stop(
            lambda: _append(log_path, second[:15]),
            lambda: _append(log_path, second[15:] + _line(_entry("c3"))),
            lambda: _append(log_path, "garbage\n" + _line(_entry("c4"))),
        )
        batches: list[list[dict[str, Any]]] = []
        polls = follow(follower, batches.append, poll_seconds=0.01, stop=stop)
        assert polls == 3
        assert batches == [[_entry("c2"), _entry("c3")], [_entry("c4")]]
        assert follower.skipped == 1

    def test_max_polls_bounds_the_loop(self, log_path: Path) -> None:
        """Stops after max_polls polls when nothing else stops it."""
        pauses: list[float] = []
        polls = follow(
            LogFollower(log_path),
            lambda batch: None,
            poll_seconds=0.5,
            sleep=pauses.append,
            max_polls=4,
        )
        assert polls == 4
        assert pauses == [0.5, 0.5, 0.5, 0.5]

    def test_watch_follow_prints_the_backlog_as_trees_then_streams(self, log_path: Path) -> None:
        """Orders the backlog parent-first, streams later entries as they come, sums up on Ctrl-C."""
        log_path.write_text(
            _line(_entry("child", parent_call_id="root", depth=1)) + _line(_entry("root")),
            encoding="utf-8",
        )
        failing = _entry("late", parent_call_id="root2", depth=1, outcome_status="error")
        failing["outcome_error_message"] = "boom"
        pauses: list[float] = []

        def sleep(seconds: float) -> None:
            pauses.append(seconds)
            if len(pauses) == 1:
                _append(log_path, _line(failing) + _line(_entry("root2")))
            else:
                raise KeyboardInterrupt

        out, err = io.StringIO(), io.StringIO()
        args = _watch_args(str(log_path), "--follow", "--poll-ms", "10")
        assert run_watch(args, out=out, err=err, sleep=sleep) == 0
        call = "  source=generated  1.0ms  trace=tttttttt"
        assert pauses == [0.01, 0.01]
        assert out.getvalue() == _text(
            [
                f"10:00:00.000  worker.run  ok  attempts=1{call} call=root",
                f"10:00:00.000    worker.run  ok  attempts=1{call} call=child",
                f"10:00:00.000    worker.run  error  attempts=1{call} call=late",
                "                  boom",
                f"10:00:00.000  worker.run  ok  attempts=1{call} call=root2",
                "Stopped: 4 calls shown (3 ok, 1 error).",
            ]
        )
        assert err.getvalue() == f"Watching {log_path}; filters: none; Ctrl-C stops.\n"

    def test_watch_follow_waits_for_a_missing_log_and_filters(self, log_path: Path) -> None:
        """Waits for the log to appear, prints only matching entries and counts the bad line."""

        def create_log() -> None:
            bad = _entry("bad", outcome_status="error")
            log_path.write_text(_line(_entry("fine")) + "torn\n" + _line(bad), encoding="utf-8")

        stop = _scripted_stop(lambda: None, create_log)
        out, err = io.StringIO(), io.StringIO()
        args = _watch_args(str(log_path), "--follow", "--status", "error", "--poll-ms", "10")
        assert run_watch(args, out=out, err=err, stop=stop) == 0
        assert out.getvalue() == _text(
            [
                "10:00:00.000  worker.run  error  attempts=1  source=generated  1.0ms  trace=tttttttt call=bad",
                "Stopped: 1 call shown (0 ok, 1 error), 1 unparsable line skipped.",
            ]
        )
        assert err.getvalue() == (
            f"Watching {log_path} (not there yet, waiting for it); filters: status=error; "
            "Ctrl-C stops.\n"
        )


def _console_script() -> list[str]:
    script = Path(sys.executable).parent / "recurgent"
    if script.exists():
        return [str(script)]
    return [sys.executable, "-m", "recurgent._cli"]


class TestConsoleScript:
    """The installed ``recurgent`` command and ``python -m recurgent._cli``."""

    @pytest.mark.parametrize(
        "command",
        [_console_script(), [sys.executable, "-m", "recurgent._cli"]],
        ids=["console-script", "python-m"],
    )
    def test_watch_prints_the_recorded_log(self, command: list[str]) -> None:
        """Prints the recorded trees and exits 0 when run as a program."""
        completed = subprocess.run(
            [*command, "watch", str(RECORDED_LOG)],
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
        outcome = (completed.returncode, completed.stdout, completed.stderr)
        assert outcome == (0, _text(RECORDED_TREE), SKIPPED_NOTE)

    def test_closed_pipe_ends_quietly(self, log_path: Path) -> None:
        """Exits without a traceback when the reader closes the pipe early (``| head``)."""
        log_path.write_text(
            "".join(_line(_entry(f"call{number:05d}")) for number in range(3000)),
            encoding="utf-8",
        )
        with subprocess.Popen(
            [*_console_script(), "watch", str(log_path)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        ) as process:
            assert process.stdout is not None and process.stderr is not None
            first = process.stdout.readline()
            process.stdout.close()
            error_output = process.stderr.read()
            status = process.wait(timeout=60)
        assert first.decode().endswith("call=call0000\n")
        assert (status, error_output) == (1, b"")
