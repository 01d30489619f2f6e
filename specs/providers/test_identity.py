"""Who a provider is, as an artifact records it (ADR 0077): the double declaration, the kind,
and the script fingerprints of the package's doubles."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from recurgent.program import Program
from recurgent.providers import ProviderRequest
from recurgent.providers._identity import (
    author_kind,
    is_test_double,
    script_digest,
    script_fingerprint,
)
from recurgent.providers.anthropic import AnthropicProvider
from recurgent.providers.openai import OpenAIProvider
from recurgent.testing import FunctionProvider, ScriptedProvider
from specs.providers.support import isolate_provider_env

CURRENT = "result = 1"


class Custom:
    """A provider of the user's own."""

    def generate_program(self, request: ProviderRequest) -> object:
        return {"code": "result = 1"}


class OwnDouble(Custom):
    """A third party's double: it declares itself one and has no fingerprint."""

    test_double = True


class Liar(Custom):
    """``test_double`` must be exactly True; a truthy string is not a declaration."""

    test_double = "yes"


class Broken(OwnDouble):
    def script_fingerprint(self, role: str, method: str) -> str:
        raise RuntimeError("bug in the double")


class TestDeclaration:
    def test_the_package_doubles_declare_themselves(self) -> None:
        """ScriptedProvider and FunctionProvider are doubles; others only when they say so."""
        assert is_test_double(ScriptedProvider({})) is True
        assert is_test_double(FunctionProvider(lambda request: CURRENT)) is True
        assert is_test_double(OwnDouble()) is True
        assert is_test_double(Custom()) is False
        assert is_test_double(Liar()) is False
        assert is_test_double(None) is False


class TestKind:
    def test_each_kind(self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
        """openai, anthropic, custom:<module.Class>, test_double:<Class>."""
        isolate_provider_env(monkeypatch, tmp_path / "home")
        openai = OpenAIProvider(api_key="sk-test-identity", base_url="http://127.0.0.1:9/v1")
        anthropic = AnthropicProvider(api_key="sk-ant-test-identity")

        assert [
            author_kind(provider)
            for provider in (openai, anthropic, Custom(), ScriptedProvider({}), OwnDouble())
        ] == [
            "openai",
            "anthropic",
            "custom:specs.providers.test_identity.Custom",
            "test_double:ScriptedProvider",
            "test_double:OwnDouble",
        ]

    def test_a_subclass_of_a_built_in_provider_is_custom(
        self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
    ) -> None:
        """Only the built-in classes themselves are ``openai``/``anthropic``."""
        isolate_provider_env(monkeypatch, tmp_path / "home")

        class Wrapped(OpenAIProvider):
            pass

        provider = Wrapped(api_key="sk-test-identity", base_url="http://127.0.0.1:9/v1")
        assert author_kind(provider) == (
            "custom:specs.providers.test_identity.TestKind."
            "test_a_subclass_of_a_built_in_provider_is_custom.<locals>.Wrapped"
        )


class TestScriptedFingerprint:
    def test_the_same_script_gives_the_same_fingerprint(self) -> None:
        """Two providers built from equal scripts agree, key by key."""
        first = ScriptedProvider({"add": "return args[0] + 1", ("calc", "mul"): ["a", "b"]})
        second = ScriptedProvider({"add": "return args[0] + 1", ("calc", "mul"): ["a", "b"]})

        assert first.script_fingerprint("calc", "add") == second.script_fingerprint("calc", "add")
        assert first.script_fingerprint("calc", "mul") == second.script_fingerprint("calc", "mul")
        assert first.script_fingerprint("calc", "add") != first.script_fingerprint("calc", "mul")

    def test_a_changed_reply_changes_only_its_key(self) -> None:
        """Editing add's program changes add's fingerprint, not mul's."""
        before = ScriptedProvider({"add": "return args[0] + 1", "mul": "return args[0] * 2"})
        after = ScriptedProvider({"add": "return args[0] + 2", "mul": "return args[0] * 2"})

        assert before.script_fingerprint("r", "add") != after.script_fingerprint("r", "add")
        assert before.script_fingerprint("r", "mul") == after.script_fingerprint("r", "mul")

    def test_a_role_key_wins_and_a_missing_key_has_none(self) -> None:
        """(role, method) before method, as replies are looked up; nothing for an unknown key."""
        provider = ScriptedProvider({"run": "result = 1", ("child", "run"): "result = 2"})

        assert provider.script_fingerprint("child", "run") == script_digest("result = 2")
        assert provider.script_fingerprint("other", "run") == script_digest("result = 1")
        assert provider.script_fingerprint("other", "walk") is None

    def test_consuming_a_queue_does_not_change_it(self) -> None:
        """The fingerprint is of the script as given, not of what is left of it."""
        provider = ScriptedProvider({"run": ["result = 1", "result = 2"]})
        before = provider.script_fingerprint("r", "run")
        provider.generate_program(_request("run"))

        assert provider.script_fingerprint("r", "run") == before


def _request(method: str) -> ProviderRequest:
    return ProviderRequest(
        role="r",
        method_name=method,
        args=(),
        kwargs={},
        depth=0,
        model="m",
        system_prompt="s",
        user_prompt="u",
        attempt=1,
        timeout_seconds=None,
    )


def _answer_current(request: ProviderRequest) -> str:
    return CURRENT


def _lambda_answering_one() -> Callable[[ProviderRequest], str]:
    return lambda request: "result = 1"


class TestFunctionFingerprint:
    def test_the_functions_code_and_constants_count(self) -> None:
        """Two lambdas differing in one constant differ; the same function agrees, and so do
        two functions of the same code written in different places (names do not answer)."""
        one = FunctionProvider(lambda request: "result = 1")
        two = FunctionProvider(lambda request: "result = 2")
        again = FunctionProvider(_answer_current)
        elsewhere = FunctionProvider(_lambda_answering_one())

        assert one.script_fingerprint("r", "m") != two.script_fingerprint("r", "m")
        assert one.script_fingerprint("r", "m") == elsewhere.script_fingerprint("r", "m")
        assert again.script_fingerprint("r", "m") == FunctionProvider(
            _answer_current
        ).script_fingerprint("x", "y")

    def test_a_global_the_function_reads_counts(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A notebook cell that changes the program held in a global makes a new fingerprint."""
        before = FunctionProvider(_answer_current).script_fingerprint("r", "m")
        monkeypatch.setattr(f"{__name__}.CURRENT", "result = 99")

        after = FunctionProvider(_answer_current).script_fingerprint("r", "m")

        assert before != after

    def test_closures_count(self) -> None:
        """A closure over different programs differs; one over equal programs agrees."""

        def answering(code: str) -> FunctionProvider:
            return FunctionProvider(lambda request: code)

        assert answering("result = 1").script_fingerprint("r", "m") == answering(
            "result = 1"
        ).script_fingerprint("r", "m")
        assert answering("result = 1").script_fingerprint("r", "m") != answering(
            "result = 2"
        ).script_fingerprint("r", "m")

    def test_an_unreadable_object_counts_by_identity(self) -> None:
        """An object the digest cannot read matches only itself, in this process."""
        marker, other = object(), object()

        assert script_digest([marker]) == script_digest([marker])
        assert script_digest([marker]) != script_digest([other])

    def test_programs_mappings_and_exceptions_are_read(self) -> None:
        """Replies of every form a script holds have content digests."""
        assert script_digest(Program(code="result = 1")) == script_digest(
            Program(code="result = 1")
        )
        assert script_digest({"code": "a", "dependencies": None}) == script_digest(
            {"dependencies": None, "code": "a"}
        )
        assert script_digest(ValueError("x")) != script_digest(ValueError("y"))
        assert script_digest(ValueError) != script_digest(KeyError)


class TestScriptFingerprint:
    def test_read_only_from_a_double(self) -> None:
        """Not a double, no method, or a method that fails: no fingerprint (no reuse)."""
        assert script_fingerprint(Custom(), "r", "m") is None
        assert script_fingerprint(OwnDouble(), "r", "m") is None
        assert script_fingerprint(Broken(), "r", "m") is None
        scripted = ScriptedProvider({"m": "result = 1"})
        assert script_fingerprint(scripted, "r", "m") == script_digest("result = 1")
