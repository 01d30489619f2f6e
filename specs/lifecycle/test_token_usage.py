"""Token usage: each call's log line sums its provider replies; ``watch`` shows a session total."""

from __future__ import annotations

import io
from pathlib import Path

from recurgent import Agent
from recurgent._cli import WatchFilter, _Printer, token_summary
from recurgent.providers import ProviderReply
from recurgent.testing import FunctionProvider, read_log

USAGE = {"input_tokens": 1200, "output_tokens": 40, "cached_tokens": 1024}


class TestUsageInTheLog:
    """The ``usage`` field of a call counts every reply its attempts received."""

    def test_one_reply_is_logged_as_is(self, tmp_path: Path) -> None:
        """A single reply's counts appear unchanged in the call's line."""
        log = tmp_path / "calls.jsonl"
        provider = FunctionProvider(lambda request: ProviderReply({"code": "result = 1"}, USAGE))
        Agent("t", provider=provider, log=log).run()
        assert read_log(log)[-1]["usage"] == USAGE

    def test_attempts_are_summed(self, tmp_path: Path) -> None:
        """A call whose first program failed and was repaired logs the sum of both replies."""
        log = tmp_path / "calls.jsonl"
        codes = iter(["result = 1 / 0", "result = 2"])
        provider = FunctionProvider(lambda request: ProviderReply({"code": next(codes)}, USAGE))
        assert Agent("t", provider=provider, log=log).run().value == 2
        assert read_log(log)[-1]["usage"] == {key: 2 * value for key, value in USAGE.items()}

    def test_replies_without_usage_log_null(self, tmp_path: Path) -> None:
        """Test doubles report no usage: the field is null."""
        log = tmp_path / "calls.jsonl"
        Agent("t", provider=FunctionProvider(lambda request: "result = 1"), log=log).run()
        assert read_log(log)[-1]["usage"] is None


class TestWatchTotal:
    """``recurgent watch`` adds the usage of the calls it shows."""

    def test_session_total_counts_cached_tokens(self, tmp_path: Path) -> None:
        """Two calls of 1200 in (1024 cached) and 40 out each total 2400 in, 2048 cached, 80 out."""
        log = tmp_path / "calls.jsonl"
        provider = FunctionProvider(lambda request: ProviderReply({"code": "result = 1"}, USAGE))
        agent = Agent("t", provider=provider, log=log)
        agent.one()
        agent.two()
        printer = _Printer(io.StringIO(), WatchFilter(), show_code=False)
        printer.show(read_log(log))
        assert token_summary(printer.tokens) == "tokens: 2400 in (2048 cached), 80 out"
