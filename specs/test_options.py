"""AgentOptions: defaults, model and log path resolution, and what delegates inherit."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from recurgent import Agent
from recurgent._options import DEFAULT_MODEL, default_log_path, parse_options
from recurgent.errors import UsageError
from recurgent.testing import ScriptedProvider


class TestDefaults:
    """An agent built with no options."""

    def test_limits_and_policies(self) -> None:
        """Defaults: 2 attempts, budgets 1/1, timeouts 120/30, delegation 8, network allow."""
        options = parse_options({})

        assert (
            options.max_generation_attempts,
            options.guardrail_recovery_budget,
            options.fresh_outcome_repair_budget,
            options.provider_timeout_seconds,
            options.execution_timeout_seconds,
            options.delegation_budget,
            options.network,
        ) == (2, 1, 1, 120.0, 30.0, 8, "allow")
        assert (options.debug, options.verbose, options.provider) == (False, False, None)
        assert (options.contract, options.contract_source) == (None, "none")

    def test_trace_id_is_24_lowercase_hex(self) -> None:
        """The generated trace id is 24 lowercase hex characters, new for each agent."""
        first, second = parse_options({}).trace_id, parse_options({}).trace_id

        assert re.fullmatch(r"[0-9a-f]{24}", first)
        assert first != second

    def test_given_trace_id_is_kept_stripped(self) -> None:
        """A given trace id is used as is, without surrounding whitespace."""
        assert parse_options({"trace_id": " run-7 "}).trace_id == "run-7"

    def test_accepted_values(self) -> None:
        """Boundary values and None are accepted where documented."""
        options = parse_options(
            {
                "guardrail_recovery_budget": 0,
                "fresh_outcome_repair_budget": 2,
                "provider_timeout_seconds": None,
                "execution_timeout_seconds": 600,
                "delegation_budget": None,
                "network": ["API.example.com", "feeds.example.org"],
            }
        )

        assert options.provider_timeout_seconds is None
        assert options.execution_timeout_seconds == 600.0
        assert options.delegation_budget is None
        assert options.network == ("api.example.com", "feeds.example.org")


class TestModel:
    """The model comes from the option, then RECURGENT_MODEL, then the default."""

    def test_default_model(self) -> None:
        """With neither option nor environment the default model is used."""
        assert parse_options({}).model == DEFAULT_MODEL

    def test_environment_model(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """RECURGENT_MODEL is used when no model option is given."""
        monkeypatch.setenv("RECURGENT_MODEL", "env-model")

        assert parse_options({}).model == "env-model"

    def test_option_beats_environment(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """The model option wins over RECURGENT_MODEL."""
        monkeypatch.setenv("RECURGENT_MODEL", "env-model")

        assert parse_options({"model": "opt-model"}).model == "opt-model"

    def test_blank_environment_model_is_ignored(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A blank RECURGENT_MODEL falls back to the default."""
        monkeypatch.setenv("RECURGENT_MODEL", "  ")

        assert parse_options({}).model == DEFAULT_MODEL


class TestLogPath:
    """The default log path and how logging is disabled."""

    def test_default_under_xdg_state_home(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """$XDG_STATE_HOME/recurgent/recurgent.jsonl is the default log."""
        monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))

        assert parse_options({}).log == tmp_path / "state" / "recurgent" / "recurgent.jsonl"

    def test_fallback_to_local_state(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """Without XDG_STATE_HOME the log goes under ~/.local/state."""
        monkeypatch.delenv("XDG_STATE_HOME")
        monkeypatch.setenv("HOME", str(tmp_path))

        expected = tmp_path / ".local" / "state" / "recurgent" / "recurgent.jsonl"
        assert default_log_path() == expected
        assert parse_options({}).log == expected

    @pytest.mark.parametrize("value", [None, False])
    def test_none_or_false_disables(self, value: object) -> None:
        """log=None and log=False disable logging."""
        assert parse_options({"log": value}).log is None

    def test_true_means_the_default_path(self) -> None:
        """log=True is the default path."""
        assert parse_options({"log": True}).log == default_log_path()

    def test_a_test_double_logs_nowhere_by_default(self) -> None:
        """With a test double as provider and no log option there is no log (ADR 0127), as
        there is no store; log=True or a path turns it on."""
        double = ScriptedProvider({})

        assert parse_options({"provider": double}).log is None
        assert parse_options({"provider": double, "log": True}).log == default_log_path()
        assert parse_options({"provider": double, "log": "calls.jsonl"}).log == Path("calls.jsonl")

    def test_path_and_string_are_accepted(self, tmp_path: Path) -> None:
        """A Path or a str names the log file."""
        assert parse_options({"log": tmp_path / "a.jsonl"}).log == tmp_path / "a.jsonl"
        assert parse_options({"log": str(tmp_path / "b.jsonl")}).log == tmp_path / "b.jsonl"


class TestForDelegate:
    """The options a delegate is built with."""

    def test_inherits_and_decrements_budget(self, tmp_path: Path) -> None:
        """A child's options copy the parent's runtime settings with the budget minus one."""
        provider = ScriptedProvider()
        parent = parse_options(
            {"provider": provider, "log": tmp_path / "x.jsonl", "trace_id": "t", "purpose": "p"}
        )

        child = parent.for_delegate({})

        assert child["provider"] is provider
        assert child["log"] == tmp_path / "x.jsonl"
        assert child["trace_id"] == "t"
        assert child["delegation_budget"] == 7
        assert "purpose" not in child

    def test_disabled_log_is_passed_as_false(self) -> None:
        """A parent without a log passes log=False, so the child skips the default path."""
        assert parse_options({"log": False}).for_delegate({})["log"] is False

    def test_runtime_overrides_win_and_other_keys_are_dropped(self) -> None:
        """Runtime options in overrides replace inherited ones; other keys are left out."""
        parent = parse_options({"model": "m-1"})

        child = parent.for_delegate({"model": "m-2", "methods": ["x"], "purpose": "p"})

        assert child["model"] == "m-2"
        assert "methods" not in child
        assert "purpose" not in child


class TestOptionTypes:
    """Wrong option types are refused at construction with a UsageError naming option and value."""

    @pytest.mark.parametrize(
        ("options", "message"),
        [
            (
                {"execution_timeout_seconds": 10**400},
                "execution_timeout_seconds must be a finite number between 1 and 600, got 1000",
            ),
            (
                {"provider_timeout_seconds": -(10**5000)},
                "provider_timeout_seconds must be a finite number > 0 or None, "
                "got -10000000000000000000...<5001 digits>",
            ),
            (
                {"max_generation_attempts": -(10**5000)},
                "max_generation_attempts must be an int >= 1, got -10000000000000000000...<5001",
            ),
            (
                {"max_generation_attempts": "3"},
                "max_generation_attempts must be an int >= 1, got '3'",
            ),
            (
                {"execution_timeout_seconds": float("nan")},
                "execution_timeout_seconds must be a finite number between 1 and 600, got nan",
            ),
            (
                {"provider_timeout_seconds": True},
                "provider_timeout_seconds must be a finite number > 0 or None, got True",
            ),
            ({"delegation_budget": 1.0}, "delegation_budget must be an int >= 0 or None, got 1.0"),
            ({"debug": 1}, "debug must be True or False, got 1"),
            ({"model": 3}, "model must be a non-empty str, got 3"),
        ],
    )
    def test_refused(self, options: dict[str, object], message: str) -> None:
        """Each bad value raises UsageError whose message starts with option, expectation, value."""
        with pytest.raises(UsageError) as raised:
            Agent("worker", log=False, **options)  # type: ignore[arg-type]  # bad values on purpose

        assert str(raised.value).startswith(message)

    def test_error_message_is_bounded(self) -> None:
        """A huge wrong value is shown shortened (at most 200 characters plus a marker)."""
        with pytest.raises(UsageError) as raised:
            Agent("worker", log=False, trace_id=["x" * 10_000])  # type: ignore[arg-type]  # on purpose

        assert len(str(raised.value)) < 300
        assert str(raised.value).startswith("trace_id must be a non-empty str, got ['xxxx")
