"""Provenance of every program, and test doubles kept out of real stores (ADR 0077, issue 20).

Through the public API: agents built with ``ScriptedProvider``/``FunctionProvider`` write nothing
under a temporary ``XDG_STATE_HOME`` unless given an explicit root; a double's program never runs
for an agent with a real provider (here the OpenAI provider on a loopback server); a changed
script is never answered by the old program; the artifact says who wrote the code.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from recurgent import Agent, Program, ProviderRequest
from recurgent._store import Store
from recurgent._store._paths import artifact_path
from recurgent.providers.openai import OpenAIProvider
from recurgent.testing import FunctionProvider, ScriptedProvider, read_log
from specs.providers.fake_openai_server import FakeOpenAIServer, FakeReply
from specs.providers.support import isolate_provider_env

STUB = "return 42 if args[0] != 'never' else args[0]"
"""A test stub that passes for reusable (it reads its input in the answer) and answers 42."""
REAL = "return args[0] + 1"


def _tools(state: Path) -> Path:
    return state / "recurgent" / "tools"


def _artifact(root: Path, role: str = "calculator", method: str = "add") -> dict[str, Any]:
    Store(root).flush()
    return dict(json.loads(artifact_path(root, role, method).read_text("utf-8")))


@pytest.fixture
def state() -> Path:
    """This test's XDG_STATE_HOME (the root conftest points it into tmp_path)."""
    return Path(os.environ["XDG_STATE_HOME"])


@pytest.fixture
def model_server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[FakeOpenAIServer]:
    """A loopback OpenAI-compatible server writing ``REAL`` for every request."""
    isolate_provider_env(monkeypatch, tmp_path / "home")
    with FakeOpenAIServer(lambda body: FakeReply.ok({"code": REAL, "dependencies": []})) as fake:
        yield fake


def _openai(server: FakeOpenAIServer) -> OpenAIProvider:
    return OpenAIProvider(base_url=server.base_url, api_key="sk-test-provenance", max_retries=0)


class TestDoublesStayOutOfTheUsersStore:
    """With no explicit ``toolstore_root``, a test double persists nothing."""

    def test_scripted_and_function_providers_write_nothing(
        self, state: Path, log_path: Path
    ) -> None:
        """Nothing under ``<XDG_STATE_HOME>/recurgent/tools``; each call asks again
        (``persistence_off``), as a notebook cell re-run should."""
        scripted = ScriptedProvider({"add": REAL})
        function = FunctionProvider(lambda request: REAL)
        for provider in (scripted, function):
            agent = Agent("calculator", provider=provider, log=log_path)
            assert [agent.add(1).value, agent.add(2).value] == [2, 3]

        assert _tools(state).exists() is False
        assert (scripted.calls, function.calls) == (2, 2)
        assert {e["artifact_lookup"] for e in read_log(log_path)} == {"persistence_off"}

    def test_nothing_at_all_under_xdg_state_home(self, state: Path) -> None:
        """Issue 20's measure, literally: a double's agent built with no options but its
        provider writes nothing under a temporary ``XDG_STATE_HOME``, neither programs nor the
        call log (ADR 0127); ``log=True`` asks for the default log."""
        provider = ScriptedProvider({"add": REAL})
        agent = Agent.for_("calculator", provider=provider)
        assert [agent.add(1).value, agent.add(2).value] == [2, 3]
        Agent.for_("doubler", provider=FunctionProvider(lambda request: REAL)).twice(1)

        assert sorted(state.rglob("*")) == []

        Agent.for_("calculator", provider=provider, log=True).add(3)
        [entry] = read_log(state / "recurgent" / "recurgent.jsonl")
        assert (entry["method"], entry["artifact_lookup"]) == ("add", "persistence_off")

    def test_the_root_variable_is_the_users_store_too(
        self, state: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """``RECURGENT_TOOLSTORE_ROOT`` moves the user's store; a double still writes nothing."""
        monkeypatch.setenv("RECURGENT_TOOLSTORE_ROOT", str(tmp_path / "users-store"))

        Agent("calculator", provider=ScriptedProvider({"add": REAL}), log=False).add(1)

        assert (tmp_path / "users-store").exists() is False

    def test_delegates_of_a_double_write_nothing(self, state: Path) -> None:
        """A child delegated by a double's agent inherits the double and writes nothing, nor
        does the registry of tools."""
        provider = ScriptedProvider(
            {
                ("builder", "run"): "return delegate('doubler').double(args[0]).value",
                ("doubler", "double"): "return args[0] * 2",
            }
        )

        assert Agent("builder", provider=provider, log=False).run(4).value == 8
        assert _tools(state).exists() is False

    def test_a_double_given_to_a_child_of_a_real_agent_writes_nothing(
        self, state: Path, model_server: FakeOpenAIServer
    ) -> None:
        """The parent stores under the default root; the host hands its child a double: the
        child does not inherit the default root as if it were explicit."""
        parent = Agent("builder", provider=_openai(model_server), log=False)
        child = parent.delegate("doubler", provider=ScriptedProvider({"double": REAL}))

        assert child.double(1).value == 2
        assert (_tools(state) / "artifacts").exists() is False

    def test_an_explicit_root_is_honoured(self, tmp_path: Path) -> None:
        """A test that asks for persistence gets it: a second agent of the same script reuses."""
        root = tmp_path / "store"
        Agent(
            "calculator", provider=ScriptedProvider({"add": REAL}), log=False, toolstore_root=root
        ).add(1)
        provider = ScriptedProvider({"add": REAL})

        again = Agent("calculator", provider=provider, log=False, toolstore_root=root).add(5)

        assert (again.value, provider.calls) == (6, 0)


class TestDoubleProgramsNeverRunForARealProvider:
    def test_a_stub_on_a_shared_root_is_replaced_not_run(
        self, tmp_path: Path, log_path: Path, model_server: FakeOpenAIServer
    ) -> None:
        """A scripted stub stored on an explicit root; an agent with the OpenAI provider on the
        same root asks its model (``test_double_written``), answers 2, and its program takes the
        key over."""
        root = tmp_path / "store"
        Agent(
            "calculator", provider=ScriptedProvider({"add": STUB}), log=False, toolstore_root=root
        ).add(1)

        outcome = Agent(
            "calculator", provider=_openai(model_server), log=log_path, toolstore_root=root
        ).add(1)

        assert (outcome.value, len(model_server.requests)) == (2, 1)
        entry = read_log(log_path)[0]
        assert (entry["artifact_lookup"], entry["program_source"], entry["artifact_write"]) == (
            "test_double_written",
            "generated",
            "written",
        )
        stored = _artifact(root)
        assert (stored["code"], stored["provenance"]["provider_kind"]) == (REAL, "openai")

    def test_a_double_never_runs_nor_replaces_a_models_program(
        self, tmp_path: Path, log_path: Path, model_server: FakeOpenAIServer
    ) -> None:
        """The reverse: a double on the model's root asks its script (``model_written``) and
        its program is not stored over the model's."""
        root = tmp_path / "store"
        Agent("calculator", provider=_openai(model_server), log=False, toolstore_root=root).add(1)
        provider = ScriptedProvider({"add": STUB})

        outcome = Agent("calculator", provider=provider, log=log_path, toolstore_root=root).add(1)

        assert (outcome.value, provider.calls) == (42, 1)
        entry = read_log(log_path)[0]
        assert (entry["artifact_lookup"], entry["artifact_write"]) == (
            "model_written",
            "model_written",
        )
        assert _artifact(root)["code"] == REAL


class TestChangedScripts:
    def test_a_changed_script_is_never_answered_by_the_old_program(
        self, tmp_path: Path, log_path: Path
    ) -> None:
        """A notebook cell re-run with an edited program on an explicit root: the new program
        answers (``script_changed``) and replaces the old one."""
        root = tmp_path / "store"
        Agent(
            "calculator", provider=ScriptedProvider({"add": REAL}), log=False, toolstore_root=root
        ).add(1)
        edited = ScriptedProvider({"add": "return args[0] + 100"})

        outcome = Agent("calculator", provider=edited, log=log_path, toolstore_root=root).add(1)

        assert (outcome.value, edited.calls) == (101, 1)
        assert read_log(log_path)[0]["artifact_lookup"] == "script_changed"
        assert _artifact(root)["code"] == "return args[0] + 100"

    def test_a_changed_reply_function_is_never_answered_by_the_old_program(
        self, tmp_path: Path
    ) -> None:
        """The same for a FunctionProvider whose function changed."""
        root = tmp_path / "store"
        first = FunctionProvider(lambda request: REAL)
        Agent("calculator", provider=first, log=False, toolstore_root=root).add(1)
        second = FunctionProvider(lambda request: "return args[0] * 10")

        value = Agent("calculator", provider=second, log=False, toolstore_root=root).add(3).value

        assert (value, second.calls) == (30, 1)


class TestTheArtifactSaysWhoWroteIt:
    def test_a_model_program(
        self, tmp_path: Path, log_path: Path, model_server: FakeOpenAIServer
    ) -> None:
        """The OpenAI provider's program: kind ``openai``, the model the server named, prompt
        and runtime versions; the log names them for the generated and the persisted run."""
        root = tmp_path / "store"
        agent = Agent(
            "calculator",
            provider=_openai(model_server),
            model="gpt-test",
            log=log_path,
            toolstore_root=root,
        )
        agent.add(1)
        agent.add(2)

        stored = _artifact(root)
        provenance = stored["provenance"]
        assert (provenance["provider_kind"], provenance["model"], stored["model"]) == (
            "openai",
            "gpt-test",
            "gpt-test",
        )
        assert provenance["prompt_version"] == stored["prompt_version"]
        assert provenance["runtime_version"] == stored["runtime_version"]
        assert stored["history"][0]["provenance"] == provenance
        assert [
            (e["program_source"], e["program_provider_kind"], e["program_model"])
            for e in read_log(log_path)
        ] == [("generated", "openai", "gpt-test"), ("persisted", "openai", "gpt-test")]

    def test_a_double_program_names_no_model(self, tmp_path: Path, log_path: Path) -> None:
        """A scripted program: kind ``test_double:ScriptedProvider``, model none (never the
        agent's default ``gpt-4.1-mini``), the script's fingerprint."""
        root = tmp_path / "store"
        provider = ScriptedProvider({"add": REAL})
        Agent("calculator", provider=provider, log=log_path, toolstore_root=root).add(1)

        stored = _artifact(root)
        assert (stored["model"], stored["provenance"]["model"]) == (None, None)
        assert stored["provenance"]["provider_kind"] == "test_double:ScriptedProvider"
        assert stored["provenance"]["double_fingerprint"] == provider.script_fingerprint(
            "calculator", "add"
        )
        entry = read_log(log_path)[0]
        assert (entry["model"], entry["program_provider_kind"], entry["program_model"]) == (
            "gpt-4.1-mini",
            "test_double:ScriptedProvider",
            None,
        )

    def test_a_custom_provider_and_the_model_it_declares(self, tmp_path: Path) -> None:
        """A provider of the user's own is ``custom:<module.Class>``; a ``Program`` it returns
        may name its model."""

        class LocalModel:
            def generate_program(self, request: ProviderRequest) -> object:
                return Program(code=REAL, model="my-llama-3")

        root = tmp_path / "store"
        Agent("calculator", provider=LocalModel(), log=False, toolstore_root=root).add(1)

        provenance = _artifact(root)["provenance"]
        assert provenance["provider_kind"] == (
            "custom:specs.lifecycle.test_provenance.TestTheArtifactSaysWhoWroteIt."
            "test_a_custom_provider_and_the_model_it_declares.<locals>.LocalModel"
        )
        assert provenance["model"] == "my-llama-3"

    def test_a_legacy_artifact_still_runs_for_a_real_provider(
        self, tmp_path: Path, log_path: Path, model_server: FakeOpenAIServer
    ) -> None:
        """A record written before provenance existed (no block) answers a real provider's
        agent as before, with no request; the log calls its author ``unknown``."""
        root = tmp_path / "store"
        agent = Agent("calculator", provider=_openai(model_server), log=False, toolstore_root=root)
        agent.add(1)
        path = artifact_path(root, "calculator", "add")
        data = _artifact(root)
        del data["provenance"]
        for entry in data["history"]:
            del entry["provenance"]
        path.write_text(json.dumps(data), "utf-8")

        fresh = Agent(
            "calculator", provider=_openai(model_server), log=log_path, toolstore_root=root
        )

        assert (fresh.add(5).value, len(model_server.requests)) == (6, 1)
        entry = read_log(log_path)[0]
        assert (entry["artifact_lookup"], entry["program_provider_kind"]) == ("hit", "unknown")
