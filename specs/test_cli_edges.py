"""``recurgent watch`` on hostile logs: escapes shown, never emitted; bad lines skipped and counted."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

import pytest

from recurgent._cli import MAX_INDENT_LEVELS, WatchFilter, _Printer, main, render_entry, visible
from recurgent._store import checksum

ESC = "\x1b"
OSC52 = f"{ESC}]52;c;cm0gLXJmIH4=\x07"  # clipboard write
TITLE = f"{ESC}]0;pwned\x07"  # window title change
LINK = f"{ESC}]8;;https://evil.example{ESC}\\click{ESC}]8;;{ESC}\\"  # hyperlink
CLEAR = f"{ESC}[2J{ESC}[H"  # screen clear


def _entry(**fields: Any) -> dict[str, Any]:
    entry: dict[str, Any] = {
        "timestamp": "2026-02-20T10:00:00.000Z",
        "role": "worker",
        "method": "run",
        "duration_ms": 1.0,
        "attempt_id": 1,
        "program_source": "generated",
        "trace_id": "t" * 24,
        "call_id": "c" * 16,
        "parent_call_id": None,
        "depth": 0,
        "outcome_status": "ok",
    }
    entry.update(fields)
    return entry


def _write(path: Path, *lines: str) -> None:
    path.write_text("".join(line + "\n" for line in lines), "utf-8")


class TestEscapes:
    """Control characters a program put in the log are printed as escapes."""

    def test_visible_escapes_like_repr(self) -> None:
        """ESC, BEL, C1, DEL, bidi override and line separators become backslash escapes."""
        assert visible(f"a{ESC}[2Jb\x07\x9b\x7f\u202e\u2028\t") == (
            "a\\x1b[2Jb\\x07\\x9b\\x7f\\u202e\\u2028\\t"
        )
        assert visible("plain text é 漢字") == "plain text é 漢字"

    def test_every_field_is_rendered_visibly(self) -> None:
        """Role, method, error type, message and code lines carry no raw control character."""
        entry = _entry(
            role=f"r{OSC52}",
            method=f"m{TITLE}",
            outcome_status="error",
            outcome_error_type=f"e{CLEAR}",
            outcome_error_message=f"failed {LINK}",
            program_source=f"s{ESC}c",
            trace_id=f"{ESC}[31m" * 3,
            code=f"print('{CLEAR}')",
        )

        lines = render_entry(entry, show_code=True)

        assert lines == [
            "10:00:00.000  r\\x1b]52;c;cm0gLXJmIH4=\\x07.m\\x1b]0;pwned\\x07  "
            "error e\\x1b[2J\\x1b[H  attempts=1  source=s\\x1bc  1.0ms  "
            "trace=\\x1b[31m\\x1b[3 call=cccccccc",
            "                failed \\x1b]8;;https://evil.example\\x1b\\click\\x1b]8;;\\x1b\\",
            "                | print('\\x1b[2J\\x1b[H')",
        ]
        assert not any(char < " " or "\x7f" <= char <= "\x9f" for line in lines for char in line)

    def test_watch_output_has_no_raw_escape(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """The printed output of a log full of escapes contains no ESC or BEL byte."""
        log = tmp_path / "calls.jsonl"
        _write(
            log,
            json.dumps(_entry(role=OSC52, outcome_status="error", error_message=TITLE + LINK)),
        )

        assert main(["watch", str(log)]) == 0

        output = capsys.readouterr().out
        assert ESC not in output
        assert "\x07" not in output
        assert "\\x1b]52;c;cm0gLXJmIH4=\\x07" in output


class TestBadLines:
    """Lines that cannot be parsed or shown are skipped and counted; good lines all print."""

    def test_deep_nesting_huge_duration_and_depth(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """Deep JSON, duration 10**400 and depth 10**8 do not stop the good lines around them."""
        log = tmp_path / "calls.jsonl"
        _write(
            log,
            json.dumps(_entry(role="first", call_id="1" * 16)),
            "[" * 200_000 + "]" * 200_000,
            '{"role": "slow", "duration_ms": 1' + "0" * 400 + ', "call_id": "2222222222222222"}',
            '{"role": "deep", "depth": 100000000, "call_id": "3333333333333333"}',
            json.dumps(_entry(role="last", call_id="4" * 16)),
        )

        assert main(["watch", str(log)]) == 0

        captured = capsys.readouterr()
        lines = captured.out.splitlines()
        assert [line.split()[1] for line in lines] == ["first.run", "last.run", "slow.?", "deep.?"]
        assert "  -ms  " in lines[2]
        assert lines[3].startswith("--:--:--.---" + "  " + "  " * MAX_INDENT_LEVELS + "deep.?")
        assert len(lines[3]) < 200
        assert captured.err == "recurgent watch: skipped 1 unparsable line\n"

    def test_unshowable_entries_are_counted(self) -> None:
        """An entry the renderer cannot turn into text is skipped and counted; others print."""

        class Unprintable:
            def __str__(self) -> str:
                raise ValueError("no text")

        out = io.StringIO()
        printer = _Printer(out, WatchFilter(), show_code=False)

        printer.show(
            [
                _entry(role="ok"),
                _entry(role="x", outcome_status="error", outcome_error_type=Unprintable()),
                _entry(role="also-ok"),
            ]
        )

        assert [line.split()[1] for line in out.getvalue().splitlines()] == [
            "ok.run",
            "also-ok.run",
        ]
        assert printer.unshowable == 1
        assert printer.counts == {"ok": 2, "error": 0, "interrupted": 0}


class TestReuseFacts:
    """The call line shows where the program came from and whether it will be reused."""

    def test_persisted_program_shows_its_checksum(self) -> None:
        """A persisted run shows ``source=persisted`` and the start of the program checksum."""
        line = render_entry(_entry(program_source="persisted", artifact_checksum="ab" * 32))[0]
        assert "source=persisted #abababab" in line

    def test_a_real_checksum_shows_eight_hex_digits(self) -> None:
        """``sha256:<hex>`` as the log writes it shows its first 8 hex digits (ADR 0098)."""
        line = render_entry(_entry(program_source="persisted", artifact_checksum=checksum("x")))[0]
        assert f"source=persisted #{checksum('x')[7:15]} " in line + " "
        assert len(checksum("x")[7:15]) == 8

    def test_unreusable_program_says_why(self) -> None:
        """A program that is never reused names the reason."""
        line = render_entry(_entry(cacheable=False, cacheability_reason="conversational"))[0]
        assert "noreuse=conversational" in line

    def test_repair_outcome_is_marked(self) -> None:
        """A repaired stored program is ``repair=ok``; a failed repair ``repair=failed``."""
        ok = render_entry(_entry(repair_attempted=True, repair_succeeded=True))[0]
        failed = render_entry(_entry(repair_attempted=True, repair_succeeded=False))[0]
        assert ("repair=ok" in ok, "repair=failed" in failed) == (True, True)
