"""Pins recurgent.configure_runtime / reset_runtime_config / runtime_config (ADR 0076)."""

from __future__ import annotations

import getpass
import threading
from pathlib import Path
from typing import Unpack

import pytest

import recurgent
from recurgent import Agent, UsageError, configure_runtime, reset_runtime_config, runtime_config
from recurgent._option_types import AgentOptionsDict
from recurgent._runtime_config import SETTING_NAMES, RuntimeSettings
from recurgent.testing import ScriptedProvider

_DEFAULTS = {
    "solver_shape_capture_enabled": True,
    "self_model_capture_enabled": True,
    "promotion_shadow_mode_enabled": True,
    "promotion_enforcement_enabled": False,
    "role_profile_shadow_mode_enabled": True,
    "role_profile_enforcement_enabled": False,
    "content_store_max_entries": 128,
    "content_store_max_bytes": 2_097_152,
    "content_store_ttl_seconds": None,
    "content_store_nested_capture_enabled": False,
    "content_store_store_error_payloads": False,
    "authority_enforcement_enabled": True,
    "authority_maintainers": (getpass.getuser().lower(),),
    "isolation": "in_process",
}


def _agent(**options: Unpack[AgentOptionsDict]) -> Agent:
    merged: AgentOptionsDict = {"provider": ScriptedProvider(), "log": False, **options}
    return Agent.for_("calculator", **merged)


class TestDefaults:
    """With no configuration and no variables every setting has the original's default."""

    def test_every_setting_and_its_default(self) -> None:
        """runtime_config() lists all settings in order, with their defaults."""
        assert dict(runtime_config()) == _DEFAULTS
        assert tuple(runtime_config()) == SETTING_NAMES

    def test_the_mapping_is_read_only(self) -> None:
        """The mapping cannot be changed in place."""
        config = runtime_config()
        with pytest.raises(TypeError):
            config["promotion_enforcement_enabled"] = True  # type: ignore[index]

    def test_exported_from_the_package(self) -> None:
        """The three functions are part of the public surface."""
        assert {"configure_runtime", "reset_runtime_config", "runtime_config"} <= set(
            recurgent.__all__
        )


class TestConfigure:
    """configure_runtime sets switches; reset_runtime_config forgets them."""

    def test_set_and_reset(self) -> None:
        """A set value shows in runtime_config until reset."""
        returned = configure_runtime(
            promotion_enforcement_enabled=True, content_store_max_entries=4
        )
        assert returned["promotion_enforcement_enabled"] is True
        assert runtime_config()["content_store_max_entries"] == 4
        reset_runtime_config()
        assert runtime_config()["promotion_enforcement_enabled"] is False
        assert runtime_config()["content_store_max_entries"] == 128

    @pytest.mark.parametrize(
        ("word", "expected"),
        [("1", True), ("TRUE", True), (" yes ", True), ("on", True), ("0", False), ("off", False)],
    )
    def test_boolean_words(self, word: str, expected: bool) -> None:
        """Booleans accept the original's words in code as in variables."""
        configure_runtime(role_profile_enforcement_enabled=word)
        assert runtime_config()["role_profile_enforcement_enabled"] is expected

    @pytest.mark.parametrize(("number", "expected"), [(1, True), (0, False)])
    def test_the_numbers_one_and_zero(self, number: int, expected: bool) -> None:
        """``1`` and ``0`` in code are the words ``1`` and ``0`` (the refusal offers them; it
        used to refuse the number ``1`` while naming it)."""
        configure_runtime(promotion_enforcement_enabled=number)
        assert runtime_config()["promotion_enforcement_enabled"] is expected

    def test_maintainers_from_a_string_or_a_list(self) -> None:
        """Maintainers are lower-cased, stripped and de-duplicated, in order."""
        configure_runtime(authority_maintainers=" Alice, bob ,alice,, ")
        assert runtime_config()["authority_maintainers"] == ("alice", "bob")
        configure_runtime(authority_maintainers=["Carol"])
        assert runtime_config()["authority_maintainers"] == ("carol",)
        configure_runtime(authority_maintainers=[])
        assert runtime_config()["authority_maintainers"] == ()

    def test_maintainers_equal_the_originals_list_too(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The value is a read-only tuple that also equals the list the original holds (an
        Array), from the default, the variable and code alike (ADR 0128)."""
        assert runtime_config()["authority_maintainers"] == [getpass.getuser().lower()]
        monkeypatch.setenv("RECURGENT_AUTHORITY_MAINTAINERS", "Alice,bob")
        assert runtime_config()["authority_maintainers"] == ["alice", "bob"]
        expected = ["alice", "bob"]
        assert expected.__eq__(runtime_config()["authority_maintainers"]) is NotImplemented
        assert expected == runtime_config()["authority_maintainers"]  # the reflected comparison
        assert runtime_config()["authority_maintainers"] != ["bob", "alice"]
        configure_runtime(authority_maintainers=None)
        assert runtime_config()["authority_maintainers"] == []
        assert isinstance(runtime_config()["authority_maintainers"], tuple)

    def test_none_clears_an_override(self) -> None:
        """None returns a setting to its variable or default."""
        configure_runtime(isolation="process")
        configure_runtime(isolation=None)
        assert runtime_config()["isolation"] == "in_process"

    def test_ttl_none_and_number(self) -> None:
        """The TTL takes a positive number of seconds or None."""
        configure_runtime(content_store_ttl_seconds=30)
        assert runtime_config()["content_store_ttl_seconds"] == 30.0
        configure_runtime(content_store_ttl_seconds=None)
        assert runtime_config()["content_store_ttl_seconds"] is None

    @pytest.mark.parametrize(
        ("setting", "value", "message"),
        [
            ("promotion_enforcement_enabled", "maybe", "promotion_enforcement_enabled must be"),
            ("promotion_enforcement_enabled", 2, "promotion_enforcement_enabled must be"),
            ("promotion_enforcement_enabled", 1.0, "promotion_enforcement_enabled must be"),
            ("content_store_max_entries", 0, "content_store_max_entries must be an int > 0"),
            ("content_store_max_entries", True, "content_store_max_entries must be an int > 0"),
            ("content_store_max_bytes", "lots", "content_store_max_bytes must be an int > 0"),
            ("content_store_ttl_seconds", -1, "content_store_ttl_seconds must be a number"),
            ("content_store_ttl_seconds", float("nan"), "content_store_ttl_seconds must be"),
            ("authority_maintainers", 7, "authority_maintainers must be a list"),
            ("authority_maintainers", ["ok", 3], "authority_maintainers must hold user names"),
            ("isolation", "thread", "isolation must be 'in_process' or 'process'"),
        ],
    )
    def test_bad_value_is_a_usage_error_and_changes_nothing(
        self, setting: str, value: object, message: str
    ) -> None:
        """A bad value names its setting; the earlier settings stay."""
        configure_runtime(content_store_nested_capture_enabled=True)
        with pytest.raises(UsageError) as raised:
            configure_runtime(content_store_nested_capture_enabled=False, **{setting: value})
        assert message in str(raised.value)
        assert runtime_config()["content_store_nested_capture_enabled"] is True

    def test_unknown_setting(self) -> None:
        """An unknown setting is refused with the list of known ones."""
        with pytest.raises(UsageError) as raised:
            configure_runtime(promotion_enforcement=True)
        assert "Unknown runtime setting(s): promotion_enforcement" in str(raised.value)
        assert "promotion_enforcement_enabled" in str(raised.value)


class TestEnvironment:
    """Each setting is read from RECURGENT_<NAME> when code did not set it."""

    def test_variables_are_read(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Variables give values; a blank variable counts as unset."""
        monkeypatch.setenv("RECURGENT_PROMOTION_ENFORCEMENT_ENABLED", "yes")
        monkeypatch.setenv("RECURGENT_CONTENT_STORE_MAX_BYTES", "1024")
        monkeypatch.setenv("RECURGENT_CONTENT_STORE_TTL_SECONDS", "  ")
        monkeypatch.setenv("RECURGENT_AUTHORITY_MAINTAINERS", "Ops,dev")
        monkeypatch.setenv("RECURGENT_ISOLATION", "process")
        config = runtime_config()
        assert (
            config["promotion_enforcement_enabled"],
            config["content_store_max_bytes"],
            config["content_store_ttl_seconds"],
            config["authority_maintainers"],
            config["isolation"],
        ) == (True, 1024, None, ("ops", "dev"), "process")

    def test_code_wins_over_the_variable(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """configure_runtime overrides a variable; reset lets the variable apply again."""
        monkeypatch.setenv("RECURGENT_SOLVER_SHAPE_CAPTURE_ENABLED", "off")
        configure_runtime(solver_shape_capture_enabled=True)
        assert runtime_config()["solver_shape_capture_enabled"] is True
        reset_runtime_config()
        assert runtime_config()["solver_shape_capture_enabled"] is False

    def test_bad_variable_names_the_variable(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A variable with a bad value fails fast, naming the variable, when read."""
        monkeypatch.setenv("RECURGENT_CONTENT_STORE_MAX_ENTRIES", "-3")
        with pytest.raises(UsageError) as raised:
            runtime_config()
        assert str(raised.value).startswith(
            "environment variable RECURGENT_CONTENT_STORE_MAX_ENTRIES: content_store_max_entries"
        )
        with pytest.raises(UsageError):
            _agent()


class TestAgentsCaptureSettings:
    """An agent keeps the settings it was built with; its delegates share them."""

    def test_captured_at_construction(self) -> None:
        """A later configure_runtime does not change an agent already built."""
        configure_runtime(content_store_max_entries=5)
        agent = _agent()
        configure_runtime(content_store_max_entries=50)
        assert agent._agent.options.settings.content_store_max_entries == 5
        assert _agent()._agent.options.settings.content_store_max_entries == 50

    def test_delegates_take_the_parents_settings(self) -> None:
        """A child built after the settings changed still has its parent's."""
        configure_runtime(role_profile_enforcement_enabled=True)
        parent = _agent()
        reset_runtime_config()
        child = parent.delegate("helper", purpose="help")
        assert child._agent.options.settings.role_profile_enforcement_enabled is True
        assert _agent()._agent.options.settings.role_profile_enforcement_enabled is False

    def test_isolation_default_follows_the_setting(self) -> None:
        """isolation= on the agent wins; without it the runtime setting decides."""
        configure_runtime(isolation="process")
        assert _agent()._agent.options.isolation == "process"
        assert _agent(isolation="in_process")._agent.options.isolation == "in_process"

    def test_settings_are_a_frozen_record(self) -> None:
        """The captured settings cannot be changed."""
        settings = _agent()._agent.options.settings
        assert isinstance(settings, RuntimeSettings)
        with pytest.raises(AttributeError):
            settings.isolation = "process"  # type: ignore[misc]

    def test_threads_see_one_consistent_table(self) -> None:
        """Concurrent configure calls never leave a half-applied table."""
        errors: list[BaseException] = []

        def flip(value: int) -> None:
            try:
                for _ in range(200):
                    configure_runtime(
                        content_store_max_entries=value, content_store_max_bytes=value
                    )
                    config = runtime_config()
                    assert config["content_store_max_entries"] == config["content_store_max_bytes"]
            except BaseException as error:  # pragma: no cover - reported below
                errors.append(error)

        threads = [threading.Thread(target=flip, args=(n,)) for n in (3, 7)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        # Two threads interleave, so a read may see the other thread's pair; never a mix.
        assert errors == []


def test_the_readme_lists_every_setting_once() -> None:
    """A user reading the README finds every setting (and no retired one) in its table, the
    one after the paragraph naming ``configure_runtime``."""
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text("utf-8")
    table = readme.split("Process-wide runtime settings", 1)[1].split("\n\n", 2)[1]
    rows = [line.split("|")[1].strip().strip("`") for line in table.splitlines()[2:]]
    assert sorted(rows) == sorted(SETTING_NAMES)
