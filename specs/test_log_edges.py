"""The call log at the edges: secrets by key name, huge and large values, debug growth, log targets, short writes."""

from __future__ import annotations

import errno
import json
import os
import warnings
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from recurgent import Agent, Outcome, _observability as observability
from recurgent._history import append_record
from recurgent._observability import MAX_LINE_BYTES, CallLogger
from recurgent.errors import UsageError
from recurgent.testing import FunctionProvider, read_log


@pytest.fixture
def log_path(tmp_path: Path) -> Path:
    return tmp_path / "calls.jsonl"


@pytest.fixture(autouse=True)
def _fresh_warnings() -> Iterator[None]:
    """Each spec starts with no log file warned about yet."""
    observability._WARNED.clear()
    yield
    observability._WARNED.clear()


def _agent(log_path: Path, code: str = "result = 'done'", **options: Any) -> Agent:
    return Agent(
        "service", provider=FunctionProvider(lambda request: code), log=log_path, **options
    )


class TestSecretsByKeyName:
    """Values under secret-named keys are masked in the log; other values stay."""

    def test_secret_keyword_arguments_are_masked(self, log_path: Path) -> None:
        """password and token kwargs are [REDACTED]; user and max_tokens stay as given."""
        agent = _agent(log_path)

        agent.connect(user="bob", password="hunter2", token="t0k", max_tokens=5)

        assert read_log(log_path)[0]["kwargs"] == {
            "user": "bob",
            "password": "[REDACTED]",
            "token": "[REDACTED]",
            "max_tokens": 5,
        }

    def test_nested_and_compound_keys_are_masked(self, log_path: Path) -> None:
        """Nested DB_Password, X-Api-Key, Cookie and privateKey values are masked at any depth."""
        agent = _agent(log_path)
        config = {
            "db": {"host": "h", "DB_Password": "pw"},
            "headers": [{"X-Api-Key": "k1", "Cookie": "c=1", "Accept": "json"}],
            "privateKey": {"pem": "...", "bits": 2048},
            "password": None,
        }

        agent.configure(config)

        assert read_log(log_path)[0]["args"] == [
            {
                "db": {"host": "h", "DB_Password": "[REDACTED]"},
                "headers": [{"X-Api-Key": "[REDACTED]", "Cookie": "[REDACTED]", "Accept": "json"}],
                "privateKey": "[REDACTED]",
                "password": None,
            }
        ]

    def test_debug_memory_history_and_value_are_masked(self, log_path: Path) -> None:
        """With debug, memory api_key, the history copy of kwargs and a returned secret are masked."""
        agent = _agent(log_path, "result = {'session_token': 'abc', 'user': 'bob'}", debug=True)
        agent.api_key = "plain-key"

        agent.login(user="bob", passwd="pw")

        entry = read_log(log_path)[0]
        assert entry["context"]["api_key"] == "[REDACTED]"
        assert entry["context"]["conversation_history"][0]["kwargs"] == {
            "user": "bob",
            "passwd": "[REDACTED]",
        }
        assert entry["outcome_value"] == {"session_token": "[REDACTED]", "user": "bob"}
        assert agent.runtime_context["api_key"] == "plain-key"

    def test_secret_values_are_masked_in_prompts_code_and_stdout(self, log_path: Path) -> None:
        """A password given by keyword or kept in memory appears nowhere in the debug line."""
        agent = _agent(
            log_path,
            "print('using', kwargs['password'], context['db_token'])\nresult = 'ok'",
            debug=True,
        )
        agent.db_token = "tok-9f8e7d"

        outcome = agent.connect(user="bob", password="hunter2-secret")

        assert outcome.value == "ok"
        text = log_path.read_text("utf-8")
        assert "hunter2-secret" not in text
        assert "tok-9f8e7d" not in text
        entry = read_log(log_path)[0]
        assert entry["stdout"] == "using [REDACTED] [REDACTED]\n"
        assert "bob" in entry["user_prompt"]


class TestHugeValues:
    """A value CPython cannot turn into decimal text is still recorded and logged."""

    def test_huge_int_is_kept_in_history_and_logged(self, log_path: Path) -> None:
        """10 ** 5000 comes back intact, gets a history record and a (shortened) log line."""
        agent = _agent(log_path, "result = 10 ** 5000", debug=True)

        outcome = agent.big()

        assert outcome.value == 10**5000
        record = agent.runtime_context["conversation_history"][0]
        assert record["outcome_summary"]["value_preview"] == (
            '"10000000000000000000...<5001 digits>"'
        )
        entry = read_log(log_path)[0]
        assert entry["history_record_appended"] is True
        assert entry["outcome_value_class"] == "int"
        assert entry["outcome_value"] == "10000000000000000000...<5001 digits>"

    def test_outcome_str_and_repr_never_raise(self, log_path: Path) -> None:
        """str() and repr() of an Outcome holding 10 ** 5000 (also nested) describe it."""
        agent = _agent(log_path, "result = [10 ** 5000]")

        outcome = agent.big()

        assert str(outcome) == '["10000000000000000000...<5001 digits>"]'
        assert repr(outcome) == 'Outcome(ok, value=["10000000000000000000...<5001 digits>"])'

    def test_negative_huge_int_argument_is_logged(self, log_path: Path) -> None:
        """A huge negative int argument is logged as text with its sign and digit count."""
        agent = _agent(log_path)

        agent.take(-(10**4999))

        assert read_log(log_path)[0]["args"] == ["-10000000000000000000...<5000 digits>"]


class TestLargeArguments:
    """A large argument reaches the program intact and the log line stays small."""

    def test_fifty_megabyte_argument(self, log_path: Path) -> None:
        """A 50 MB string arrives whole; the call's log line is under 1 MB and says how much was cut."""
        agent = _agent(log_path, "result = [len(args[0]), args[0][-3:]]")
        big = "a" * (50 * 1024 * 1024 - 3) + "end"

        outcome = agent.measure(big)

        assert outcome.value == [50 * 1024 * 1024, "end"]
        assert log_path.stat().st_size < MAX_LINE_BYTES
        logged = read_log(log_path)[0]["args"][0]
        assert logged == "a" * 4096 + f"...<{len(big) - 4096} more chars>"

    def test_many_large_values_still_fit_one_line(self, log_path: Path) -> None:
        """A million-item list and many 1 MB kwargs give one line under 1 MB, debug included."""
        agent = _agent(log_path, "result = len(args[0])", debug=True)
        kwargs = {f"k{index}": "é" * 1_000_000 for index in range(20)}

        outcome = agent.count(list(range(1_000_000)), **kwargs)

        assert outcome.value == 1_000_000
        assert log_path.stat().st_size < MAX_LINE_BYTES
        entry = read_log(log_path)[0]
        assert entry["args"][0][:3] == [0, 1, 2]
        assert entry["args"][0][-1] == "<999900 more items>"

    def test_history_record_is_shortened(self, log_path: Path) -> None:
        """The history record keeps a 64 KiB head of a 50 MB argument, not a copy of it."""
        agent = _agent(log_path)

        agent.measure("b" * 50_000_000)

        stored = agent.runtime_context["conversation_history"][0]["args"][0]
        assert stored == "b" * 65_536 + f"...<{50_000_000 - 65_536} more chars>"


class TestDebugGrowth:
    """Debug lines carry only the newest history records."""

    def test_three_hundred_calls_keep_lines_flat(self, log_path: Path) -> None:
        """Over 300 debug calls the last line is within 3x the 10th; it shows the last 10 records.

        Calls 11..299 are recorded with the history's own append_record instead of run, so the
        spec stays fast; the 300th line is written by a real call over all 299 records.
        """
        agent = _agent(log_path, "result = args[0]", debug=True)
        for index in range(10):
            agent.step(index)
        for index in range(10, 299):
            append_record(
                agent.runtime_context,
                call_id=f"{index:016x}",
                method_name="step",
                args=(index,),
                kwargs={},
                outcome=Outcome.ok(index),
                trace_id="t",
                parent_call_id=None,
                depth=0,
                duration_ms=1.0,
            )

        agent.step(299)

        lines = log_path.read_bytes().split(b"\n")
        assert len(lines[10]) <= 3 * len(lines[9])
        history = read_log(log_path)[10]["context"]["conversation_history"]
        assert history[0] == "<290 earlier records omitted>"
        assert [record["args"] for record in history[1:]] == [[n] for n in range(290, 300)]
        assert len(agent.runtime_context["conversation_history"]) == 300


class TestLogTarget:
    """log= must name something a line can be appended to."""

    def test_directory_is_refused(self, tmp_path: Path) -> None:
        """A directory as log target raises UsageError at construction."""
        with pytest.raises(UsageError, match=r"is a directory; pass the path of a JSONL file"):
            Agent("service", log=tmp_path)

    def test_fifo_is_refused(self, tmp_path: Path) -> None:
        """A FIFO (opening it would block) raises UsageError at construction."""
        fifo = tmp_path / "pipe"
        os.mkfifo(fifo)

        with pytest.raises(UsageError, match=r"is not a regular file"):
            Agent("service", log=fifo)

    def test_path_under_a_file_is_refused(self, tmp_path: Path) -> None:
        """A path whose parent is a regular file raises UsageError at construction."""
        blocker = tmp_path / "blocker"
        blocker.write_text("", "utf-8")

        with pytest.raises(UsageError, match=r"cannot be used: Not a directory"):
            Agent("service", log=blocker / "log.jsonl")

    def test_character_device_is_accepted(self) -> None:
        """os.devnull is a valid target: calls work and nothing is kept."""
        agent = Agent("service", provider=FunctionProvider(lambda r: "result = 1"), log=os.devnull)

        assert agent.run().value == 1


class _ShortWrites:
    """Stands in for os.write: the first ``failures`` writes store only half their bytes."""

    def __init__(self, failures: int) -> None:
        self.failures = failures

    def __call__(self, descriptor: int, data: bytes) -> int:
        if self.failures > 0 and len(data) > 1:
            self.failures -= 1
            return os.write(descriptor, data[: len(data) // 2])
        return os.write(descriptor, data)


class TestWholeLines:
    """A line is written whole or not at all, and a failing write never fails the call."""

    def test_short_write_is_undone_and_next_line_starts_fresh(
        self, log_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """After a short write the fragment is truncated away; the next line parses."""
        logger = CallLogger(log_path)
        assert logger.emit({"role": "first"}) is True
        before = log_path.read_bytes()
        monkeypatch.setattr(observability, "_write", _ShortWrites(failures=1))

        with pytest.warns(RuntimeWarning, match="short write"):
            assert logger.emit({"role": "second", "pad": "x" * 200}) is False

        assert log_path.read_bytes() == before
        assert logger.emit({"role": "third"}) is True
        assert [entry["role"] for entry in read_log(log_path)] == ["first", "third"]

    def test_failing_writes_warn_once_and_calls_succeed(
        self, log_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Three calls on a full disk all return ok; exactly one RuntimeWarning is issued."""

        def disk_full(descriptor: int, data: bytes) -> int:
            raise OSError(errno.ENOSPC, "No space left on device")

        agent = _agent(log_path, "result = 7")
        monkeypatch.setattr(observability, "_write", disk_full)

        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            values = [agent.run().value for _ in range(3)]

        assert values == [7, 7, 7]
        assert [str(w.message).split(" (")[0] for w in caught] == [
            f"recurgent could not write to its call log {log_path}"
        ]
        assert log_path.read_bytes() == b""

    def test_warnings_as_errors_fall_back_to_stderr(
        self, log_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """When warnings are errors the notice goes to stderr and the call still succeeds."""
        monkeypatch.setattr(observability, "_write", _ShortWrites(failures=5))
        agent = _agent(log_path, "result = 1")

        with warnings.catch_warnings():
            warnings.simplefilter("error")
            assert agent.run().value == 1

        assert capsys.readouterr().err.startswith(
            f"[recurgent] call log {log_path} is not writable"
        )

    def test_lines_from_several_writers_stay_whole(self, log_path: Path) -> None:
        """Two loggers alternating on one file produce only whole JSON lines."""
        first, second = CallLogger(log_path), CallLogger(log_path)
        for index in range(20):
            (first if index % 2 else second).emit({"index": index})

        lines = log_path.read_bytes().split(b"\n")
        assert lines[-1] == b""
        assert [json.loads(line)["index"] for line in lines[:-1]] == list(range(20))


class TestEncoding:
    """A line is compact JSON in UTF-8, written by pydantic-core's encoder, and by the standard
    library's where that one refuses (ADR 0143)."""

    def test_a_line_is_compact_utf8(self, tmp_path: Path) -> None:
        """No space after a separator; non-ASCII text as UTF-8, not escapes."""
        path = tmp_path / "calls.jsonl"

        assert CallLogger(path).emit({"role": "café", "n": 1.5, "ok": None}, prepared=True)

        assert path.read_bytes() == b'{"role":"caf\xc3\xa9","n":1.5,"ok":null}\n'

    def test_a_lone_surrogate_is_written_as_a_question_mark(self, tmp_path: Path) -> None:
        """Text with a lone surrogate (which UTF-8 cannot hold) still makes its line: the
        surrogate becomes ``?``, as before pydantic-core wrote lines."""
        path = tmp_path / "calls.jsonl"

        assert CallLogger(path).emit({"stdout": "a\udc80b", "n": 2}, prepared=True)

        assert path.read_bytes() == b'{"stdout":"a?b","n":2}\n'
