"""Agent.self_model and the solver_shape_* log fields (recurgent/_self_model.py, ADR 0085)."""

from __future__ import annotations

import getpass
from pathlib import Path
from typing import Any

import pytest

from recurgent import Agent, configure_runtime
from recurgent._runtime_config import RuntimeSettings
from recurgent._self_model import (
    authority,
    solver_shape,
    solver_shape_fields,
    solver_shape_log_fields,
)
from recurgent._store import checksum, contract_fingerprint
from recurgent.errors import UsageError
from recurgent.testing import ScriptedProvider, read_log

ADD = "context['value'] = context.get('value', 0) + args[0]\nresult = context['value']"
PROFILE = {"role": "calculator", "version": 4, "constraints": {"accumulator": {}}}


def _calc(**options: Any) -> tuple[Agent, ScriptedProvider]:
    provider = ScriptedProvider({"add": ADD, "ask": "result = 'hi'", "fail": None})
    options.setdefault("log", False)
    options.setdefault("toolstore_root", None)
    return Agent("calculator", provider=provider, **options), provider


ENACT = {"observe": True, "propose": True, "enact": True}


class TestSelfModel:
    """Awareness levels, versions, authority and snapshot refs."""

    def test_a_new_agent_is_l1(self) -> None:
        """Before any call, with no contract or profile: l1 and no refs."""
        agent, provider = _calc()

        assert agent.self_model == {
            "awareness_level": "l1",
            "authority": ENACT,
            "active_contract_version": None,
            "active_role_profile_version": None,
            "execution_snapshot_ref": None,
            "evolution_snapshot_ref": None,
        }
        assert provider.calls == 0

    def test_a_contract_or_profile_makes_it_l2(self) -> None:
        """A contract (its fingerprint is its version) or an active profile gives l2."""
        contracted, _ = _calc(purpose="add numbers")
        profiled, _ = _calc(role_profile=PROFILE)

        assert contracted.self_model["awareness_level"] == "l2"  # type: ignore[index]
        assert contracted.self_model["active_contract_version"] == contract_fingerprint(  # type: ignore[index]
            {"purpose": "add numbers"}
        )
        assert profiled.self_model["awareness_level"] == "l2"  # type: ignore[index]
        assert profiled.self_model["active_role_profile_version"] == 4  # type: ignore[index]

    def test_after_running_code_it_is_l3_with_refs(self) -> None:
        """A call that ran code names it: <trace>:<call>:<role>.<method> and <role>.<method>@sha."""
        agent, _ = _calc(trace_id="trace-1")

        agent.add(1)

        model = agent.self_model
        assert model is not None
        assert model["awareness_level"] == "l3"
        assert model["execution_snapshot_ref"].startswith("trace-1:")
        assert model["execution_snapshot_ref"].endswith(":calculator.add")
        assert model["evolution_snapshot_ref"] == f"calculator.add@{checksum(ADD)}"

    def test_a_call_without_code_has_no_evolution_ref(self) -> None:
        """A provider failure (no code) leaves l1 with an execution ref only."""
        agent, _ = _calc()

        assert agent.fail().status == "error"

        model = agent.self_model
        assert model is not None
        assert (model["awareness_level"], model["evolution_snapshot_ref"]) == ("l1", None)
        assert model["execution_snapshot_ref"] is not None

    def test_capture_off_is_none(self) -> None:
        """self_model_capture_enabled=False: self_model is None and nothing is captured."""
        configure_runtime(self_model_capture_enabled=False)
        agent, _ = _calc()

        agent.add(1)

        assert agent.self_model is None
        assert agent._agent.self_model.last is None

    def test_self_model_is_reserved(self) -> None:
        """Calling or assigning self_model/role_profile never reaches the provider."""
        agent, provider = _calc()

        with pytest.raises(TypeError):
            agent.self_model()  # type: ignore[misc, operator]  # a property, called on purpose
        with pytest.raises(UsageError, match="'self_model' is reserved by Agent"):
            agent.self_model = 1  # type: ignore[misc, assignment]  # read-only, set on purpose
        with pytest.raises(UsageError, match="'role_profile' is reserved by Agent"):
            agent.role_profile = {}  # type: ignore[misc]
        assert provider.calls == 0


class TestAuthority:
    """enact follows authority enforcement and the maintainers."""

    @pytest.mark.parametrize(
        ("enforced", "maintainers", "enact"),
        [(True, ("ana",), True), (True, ("bob",), False), (True, (), False), (False, (), True)],
    )
    def test_enact(self, enforced: bool, maintainers: tuple[str, ...], enact: bool) -> None:
        """Observe and propose always; enact for a maintainer or without enforcement."""
        settings = RuntimeSettings(
            authority_enforcement_enabled=enforced, authority_maintainers=maintainers
        )

        assert authority(settings, "Ana") == {"observe": True, "propose": True, "enact": enact}


class TestSelfModelLog:
    """The self-model log fields."""

    def test_fields_of_a_call(self, log_path: Path) -> None:
        """awareness_level, refs and the envelope are logged for a call that ran code."""
        agent, _ = _calc(log=log_path)

        agent.add(1)

        entry = read_log(log_path)[-1]
        assert entry["self_model"]["awareness_level"] == entry["awareness_level"] == "l3"
        assert entry["evolution_snapshot_ref"] == f"calculator.add@{checksum(ADD)}"
        assert entry["authority"] == ENACT
        assert entry["execution_snapshot_ref"].endswith(f"{entry['call_id']}:calculator.add")

    def test_capture_off_logs_null(self, log_path: Path) -> None:
        """With capture off every self-model field is null."""
        configure_runtime(self_model_capture_enabled=False)
        agent, _ = _calc(log=log_path)

        agent.add(1)

        entry = read_log(log_path)[-1]
        assert [entry[k] for k in ("self_model", "awareness_level", "evolution_snapshot_ref")] == [
            None,
            None,
            None,
        ]


class TestSolverShape:
    """The solver shape of each call, logged unless switched off."""

    def test_a_fresh_call(self, log_path: Path) -> None:
        """A plain method: shape stance, local pattern, generated afresh."""
        agent, _ = _calc(log=log_path)

        agent.add(1, step=2)

        entry = read_log(log_path)[-1]
        shape = {
            "stance": "shape",
            "capability_summary": "calculator.add.args1.kwargs1",
            "reuse_basis": "generated_program_fresh",
            "contract_intent": {
                "purpose": "resolve calculator.add",
                "failure_policy": {"on_error": "return_error"},
            },
            "promotion_intent": "local_pattern",
        }
        assert {k: v for k, v in entry.items() if k.startswith("solver_shape")} == {
            "solver_shape": shape,
            "solver_shape_complete": True,
            "solver_shape_stance": "shape",
            "solver_shape_capability_summary": "calculator.add.args1.kwargs1",
            "solver_shape_reuse_basis": "generated_program_fresh",
            "solver_shape_contract_intent": shape["contract_intent"],
            "solver_shape_promotion_intent": "local_pattern",
        }

    def test_a_persisted_call_reuses(self, tmp_path: Path, log_path: Path) -> None:
        """A stored program answering is persisted_artifact_reuse."""
        agent, provider = _calc(log=log_path, toolstore_root=tmp_path / "store")
        agent.add(1)

        agent.add(2)

        assert provider.calls == 1
        assert read_log(log_path)[-1]["solver_shape_reuse_basis"] == "persisted_artifact_reuse"

    def test_capture_off_logs_null(self, log_path: Path) -> None:
        """solver_shape_capture_enabled=False: every solver_shape field is null."""
        configure_runtime(solver_shape_capture_enabled=False)
        agent, _ = _calc(log=log_path)

        agent.add(1)

        entry = read_log(log_path)[-1]
        assert {entry[k] for k in entry if k.startswith("solver_shape")} == {None}

    def test_rules(self) -> None:
        """Delegated calls do, dynamic-dispatch methods forge, contracts state their intent."""
        base: dict[str, Any] = {
            "role": "Web Fetcher",
            "arg_count": 0,
            "kwarg_count": 0,
            "program_source": "generated",
            "artifact_hit": False,
        }
        child = solver_shape(method="get", depth=1, contract=None, **base)
        asked = solver_shape(method="ask", depth=0, contract=None, **base)
        contracted = solver_shape(
            method="get",
            depth=0,
            contract={"purpose": "fetch", "deliverable": {"type": "string"}},
            **base,
        )
        repaired = solver_shape(
            method="get", depth=0, contract=None, **{**base, "program_source": "repaired"}
        )

        assert (child["stance"], child["promotion_intent"]) == ("do", "none")
        assert (asked["stance"], asked["promotion_intent"]) == ("forge", "durable_tool_candidate")
        assert contracted["stance"] == "do"
        assert contracted["contract_intent"] == {
            "purpose": "fetch",
            "deliverable": {"type": "string"},
            "failure_policy": {},
        }
        assert asked["capability_summary"] == "web_fetcher.ask.args0.kwargs0"
        assert repaired["reuse_basis"] == "repaired_artifact_execution"


class TestRememberedParts:
    """What each logged call reuses (ADR 0125) is read again whenever its inputs change."""

    def test_the_os_user_is_read_again_when_the_environment_or_getuser_changes(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """With enforcement on and 'alice' the maintainer: LOGNAME alice may enact, LOGNAME bob
        may not, and a getuser standing in is asked at once."""
        settings = RuntimeSettings(
            authority_enforcement_enabled=True, authority_maintainers=("alice",)
        )
        monkeypatch.setenv("LOGNAME", "alice")
        as_alice = authority(settings)["enact"]
        monkeypatch.setenv("LOGNAME", "bob")
        as_bob = authority(settings)["enact"]
        monkeypatch.setattr(getpass, "getuser", lambda: "Alice")
        stood_in = authority(settings)["enact"]

        assert (as_alice, as_bob, stood_in) == (True, False, True)

    def test_log_fields_of_a_shape_are_the_shape_fields_and_contracts_are_read_each_time(
        self,
    ) -> None:
        """solver_shape_log_fields is solver_shape_fields(solver_shape(...)); without a contract
        the same fields serve the next call; a contract changed in place shows its change."""
        base: dict[str, Any] = {
            "role": "calculator",
            "method": "add",
            "depth": 0,
            "arg_count": 1,
            "kwarg_count": 0,
            "program_source": "persisted",
            "artifact_hit": True,
        }
        contract: dict[str, Any] = {"purpose": "add"}
        plain = solver_shape_log_fields(contract=None, **base)
        contracted = solver_shape_log_fields(contract=contract, **base)
        contract["purpose"] = "add twice"
        changed = solver_shape_log_fields(contract=contract, **base)

        assert plain == solver_shape_fields(solver_shape(contract=None, **base))
        assert solver_shape_log_fields(contract=None, **base) is plain
        assert contracted["solver_shape_contract_intent"] == {
            "purpose": "add",
            "failure_policy": {},
        }
        assert changed["solver_shape_contract_intent"] == {
            "purpose": "add twice",
            "failure_policy": {},
        }
