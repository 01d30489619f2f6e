"""The JSONL call log: one line per dynamic call, safe values, no secrets, no global config."""

from __future__ import annotations

import json
import logging
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog

from recurgent import Agent
from recurgent._observability import CallLogger
from recurgent.testing import ScriptedProvider, read_log
from specs.store.support import ScriptedModel

SECRET = "sk-test-abcdef123456"


class TestOneLinePerDynamicCall:
    """Only dynamic calls write log lines."""

    def test_each_dynamic_call_writes_one_line(self, log_path: Path) -> None:
        """Two dynamic calls, including a failed one, write two lines in order."""
        provider = ScriptedProvider({"add": "result = 1", "fail": RuntimeError("down")})
        agent = Agent("calculator", provider=provider, log=log_path)

        agent.add()
        agent.fail()

        entries = read_log(log_path)
        assert [(e["method"], e["outcome_status"]) for e in entries] == [
            ("add", "ok"),
            ("fail", "error"),
        ]
        assert entries[1]["outcome_error_type"] == "provider"

    def test_setters_reads_remember_and_delegate_write_nothing(self, log_path: Path) -> None:
        """Setters, memory reads, remember, delegate and tool write no line."""
        agent = Agent("calculator", provider=ScriptedProvider(), log=log_path)

        agent.value = 1
        _ = agent.value
        agent.remember(mode="x")
        agent.delegate("helper")
        agent.tool("helper")

        assert not log_path.exists()

    def test_log_false_writes_no_file(self, tmp_path: Path) -> None:
        """log=False writes nothing anywhere, not even the default path."""
        agent = Agent("calculator", provider=ScriptedProvider({"add": "result = 1"}), log=False)

        agent.add()

        assert list(tmp_path.rglob("*.jsonl")) == []

    def test_default_log_lands_under_xdg_state_home(self, tmp_path: Path) -> None:
        """Without a log option the line goes to $XDG_STATE_HOME/recurgent/recurgent.jsonl
        (for an agent whose provider is not a test double: ADR 0127)."""
        agent = Agent("calculator", provider=ScriptedModel({"add": "result = 1"}))

        agent.add()

        [entry] = read_log(tmp_path / "xdg-state" / "recurgent" / "recurgent.jsonl")
        assert entry["method"] == "add"


class TestSafeValues:
    """Values that are not JSON are rendered, never fatal."""

    def test_non_json_values_are_rendered_with_repr(self, log_path: Path) -> None:
        """Objects, sets, tuples and non-finite floats in args and memory are logged safely."""

        class Opaque:
            def __repr__(self) -> str:
                return "<opaque>"

        provider = ScriptedProvider({"keep": "context['kept'] = args[0]\nresult = 1"})
        agent = Agent("keeper", provider=provider, log=log_path, debug=True)

        agent.keep(Opaque(), (1, 2), when=float("nan"), tags={"a"})

        [entry] = read_log(log_path)
        assert entry["args"] == ["<opaque>", [1, 2]]
        assert entry["kwargs"] == {"when": "nan", "tags": ["a"]}
        assert entry["context"]["kept"] == "<opaque>"

    def test_a_broken_repr_does_not_break_the_line(self, log_path: Path) -> None:
        """An argument whose repr raises is logged as an unrepresentable marker."""

        class Broken:
            def __repr__(self) -> str:
                raise RuntimeError("no repr")

        agent = Agent("keeper", provider=ScriptedProvider({"keep": "result = 1"}), log=log_path)

        assert agent.keep(Broken()).value == 1

        [entry] = read_log(log_path)
        assert entry["args"] == ["<unrepresentable Broken: RuntimeError>"]

    def test_invalid_utf8_bytes_are_replaced(self, log_path: Path) -> None:
        """Bytes that are not UTF-8 are logged with replacement characters."""
        agent = Agent("keeper", provider=ScriptedProvider({"keep": "result = 1"}), log=log_path)

        agent.keep(b"ok\xff\xfe")

        [entry] = read_log(log_path)
        assert entry["args"] == ["ok\ufffd\ufffd"]

    def test_lone_surrogates_are_replaced(self, log_path: Path) -> None:
        """A str holding a lone surrogate is logged as valid UTF-8."""
        agent = Agent("keeper", provider=ScriptedProvider({"keep": "result = 1"}), log=log_path)

        agent.keep("a\udcffb")

        [entry] = read_log(log_path)
        assert entry["args"] == ["a?b"]


class TestLoggingFailures:
    """A log that cannot be written never breaks a call."""

    def test_unwritable_path_keeps_the_call_working(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A log that turns unwritable after construction gives the Outcome anyway and warns."""
        agent = Agent(
            "calculator",
            provider=ScriptedProvider({"add": "result = 1"}),
            log=tmp_path / "sub" / "log.jsonl",
        )
        (tmp_path / "sub").write_text("", "utf-8")  # the log's directory is now a file

        with pytest.warns(RuntimeWarning, match="could not write to its call log"):
            assert agent.add().value == 1
        assert capsys.readouterr().err == ""

    def test_debug_reports_the_failure_on_stderr(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """With debug, a write failure prints an AGENT LOG ERROR line to stderr."""
        agent = Agent(
            "calculator",
            provider=ScriptedProvider({"add": "result = 1"}),
            log=tmp_path / "sub" / "log.jsonl",
            debug=True,
        )
        (tmp_path / "sub").write_text("", "utf-8")

        with pytest.warns(RuntimeWarning):
            assert agent.add().value == 1
        assert capsys.readouterr().err.startswith(
            "[AGENT LOG ERROR calculator.add] FileExistsError"
        )

    def test_emit_reports_failure_by_return_value(self, tmp_path: Path) -> None:
        """CallLogger.emit returns True when written and False when not."""
        assert CallLogger(tmp_path / "ok.jsonl").emit({"role": "r"}) is True
        assert CallLogger(tmp_path).emit({"role": "r"}) is False

    def test_concurrent_writers_produce_whole_lines(self, log_path: Path) -> None:
        """Loggers sharing a file from several threads write whole, parseable lines."""
        loggers = [CallLogger(log_path) for _ in range(4)]

        def write(logger: CallLogger, index: int) -> None:
            for line in range(25):
                logger.emit({"writer": index, "line": line, "pad": "x" * 2000})

        threads = [threading.Thread(target=write, args=(lg, i)) for i, lg in enumerate(loggers)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

        entries = read_log(log_path)
        assert len(entries) == 100
        assert sorted((e["writer"], e["line"]) for e in entries) == sorted(
            (w, n) for w in range(4) for n in range(25)
        )


class TestNoSecrets:
    """No API key or secret-named environment value reaches a log line."""

    def test_secrets_everywhere_are_redacted(
        self, log_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The key in args, kwargs, memory, code and an exception message never appears."""
        monkeypatch.setenv("OPENAI_API_KEY", SECRET)
        monkeypatch.setenv("SERVICE_TOKEN", "plain-token-value")
        code = f"context['copy'] = '{SECRET}'\nraise ValueError('rejected ' + args[0])"
        agent = Agent("leaker", provider=ScriptedProvider({"leak": code}), log=log_path, debug=True)
        agent.remember(stored=SECRET, other="plain-token-value")

        outcome = agent.leak(SECRET, token="plain-token-value")

        assert outcome.error_type == "execution"
        text = log_path.read_text("utf-8")
        assert SECRET not in text
        assert "abcdef123456" not in text
        assert "plain-token-value" not in text
        assert "[REDACTED]" in text
        [entry] = read_log(log_path)
        assert entry["args"] == ["[REDACTED]"]
        assert entry["context"]["stored"] == "[REDACTED]"

    def test_key_in_a_provider_error_is_redacted(
        self, log_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A provider error quoting the key is logged without it."""
        monkeypatch.setenv("OPENAI_API_KEY", SECRET)
        provider = ScriptedProvider({"ask": RuntimeError(f"bad key {SECRET}")})
        agent = Agent("asker", provider=provider, log=log_path, debug=True)

        agent.ask()

        assert SECRET not in log_path.read_text("utf-8")


@pytest.fixture
def host_structlog() -> Iterator[None]:
    """A host application that configured structlog with a WARNING filter; restored afterwards."""
    saved = structlog.get_config()
    # The test plays the host application here; the library itself never does this.
    level_filter = structlog.make_filtering_bound_logger(logging.WARNING)
    structlog.configure(wrapper_class=level_filter)  # noqa: TID251
    yield
    structlog.configure(**saved)  # noqa: TID251


class TestGlobalLoggingUntouched:
    """The library never configures structlog or the standard logging module."""

    def test_calls_leave_global_configuration_unchanged(self, log_path: Path) -> None:
        """Root handlers, root level and structlog's global config are the same after calls."""
        root = logging.getLogger()
        handlers, level = list(root.handlers), root.level
        config = structlog.get_config()
        agent = Agent("calculator", provider=ScriptedProvider({"add": "result = 1"}), log=log_path)

        agent.add()
        agent.add()

        assert (list(root.handlers), root.level) == (handlers, level)
        assert structlog.get_config() == config
        assert len(read_log(log_path)) == 2

    @pytest.mark.usefixtures("host_structlog")
    def test_host_structlog_configuration_does_not_silence_the_log(self, log_path: Path) -> None:
        """A host's structlog level filter does not drop call log lines."""
        agent = Agent("calculator", provider=ScriptedProvider({"add": "result = 1"}), log=log_path)

        agent.add()

        [entry] = read_log(log_path)
        assert entry["method"] == "add"

    def test_line_is_a_flat_json_object(self, log_path: Path) -> None:
        """Each line is one JSON object with no structlog "event" key."""
        agent = Agent("calculator", provider=ScriptedProvider({"add": "result = 1"}), log=log_path)

        agent.add()

        [line] = log_path.read_text("utf-8").splitlines()
        assert "event" not in json.loads(line)


class TestOneSafePass:
    """The lifecycle's entry is made safe once, by CallState.log_entry; emit trusts it (ADR 0063)."""

    def test_short_fields_from_the_caller_are_redacted_and_bounded(
        self, log_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A secret in the role and a huge model name are cut and masked with prepared lines."""
        monkeypatch.setenv("OPENAI_API_KEY", SECRET)
        agent = Agent(
            f"role-{SECRET}",
            provider=ScriptedProvider({"tick": "result = 1"}),
            log=log_path,
            model="m" * 5_000,
            toolstore_root=None,
        )

        assert agent.tick().value == 1

        [entry] = read_log(log_path)
        assert entry["role"] == "role-[REDACTED]"
        assert entry["model"] == "m" * 4_096 + "...<904 more chars>"
        assert SECRET not in log_path.read_text("utf-8")

    def test_prepared_entries_are_written_as_given(self, tmp_path: Path) -> None:
        """emit(prepared=True) writes the values unchanged; emit() still redacts them."""
        path = tmp_path / "calls.jsonl"
        logger = CallLogger(path)
        fields = {"role": "r", "note": "Bearer abcdefghijklmnop"}

        assert logger.emit(fields, prepared=True) is True
        assert logger.emit(fields) is True

        first, second = read_log(path)
        assert first == {"role": "r", "note": "Bearer abcdefghijklmnop"}
        assert second == {"role": "r", "note": "Bearer [REDACTED]"}
