"""A stored program's steady state (ADR 0130): what a persisted run reads from its cached record
is worked out once per record, and what it reports to the store is exactly what the general
recording step would report."""

from __future__ import annotations

import dataclasses
import gc
from pathlib import Path
from typing import Any

import pytest

from recurgent import Agent, configure_runtime
from recurgent._lifecycle import _persistence, _recording, call_state
from recurgent._store import AnsweredRun, ArtifactRecord, CallRecord, Store, WriteResult
from recurgent.testing import ScriptedProvider
from specs.store.support import ScriptedModel

PROGRAM = "context['total'] = context.get('total', 0) + args[0]\nresult = context['total']"
_RUN_FACTS = {
    "trace_id": "trace_id",
    "duration_ms": "duration_ms",
    "contract_passed": "contract_passed",
    "role_profile_compliant": "profile_compliant",
    "state_key_consistency_ratio": "state_key_ratio",
}


def _agent(tmp_path: Path, *, double: bool = True, **options: Any) -> Agent:
    # ScriptedModel stands for a real model (its programs carry the model's name).
    kind = ScriptedProvider if double else ScriptedModel
    provider = kind({("adder", "add"): PROGRAM})
    return Agent(
        "adder", provider=provider, log=False, toolstore_root=tmp_path / "s", model="m-1", **options
    )


def _spy_answered(monkeypatch: pytest.MonkeyPatch) -> list[tuple[CallRecord, AnsweredRun]]:
    seen: list[tuple[CallRecord, AnsweredRun]] = []

    def answered(
        self: Store, program: CallRecord, run: AnsweredRun, at: str | None = None
    ) -> WriteResult:
        seen.append((program, run))
        return WriteResult(False, "deferred")

    monkeypatch.setattr(Store, "record_answered", answered)
    return seen


class TestTheSteadyRecord:
    """A persisted run that answered reports the general step's call record."""

    @pytest.mark.parametrize(
        "options",
        [{}, {"double": False}, {"purpose": "add", "deliverable": {"type": "integer"}}],
        ids=["double", "model", "contracted"],
    )
    def test_it_equals_the_general_record_field_by_field(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, options: dict[str, Any]
    ) -> None:
        """The program record and run facts of the steady step, put together, are the call
        record the general step builds for the same call state (every field compared)."""
        agent = _agent(tmp_path, **options)
        assert [agent.add(1).value, agent.add(2).value] == [1, 3]
        steady = _spy_answered(monkeypatch)
        state = call_state(agent._runtime(), "add", (4,), {}, host_call=True)
        general: list[CallRecord] = []

        def record_call(self: Store, call: CallRecord) -> WriteResult:
            general.append(call)
            return WriteResult(True)

        monkeypatch.setattr(Store, "record_call", record_call)
        state.stored_program = None  # the general step, for the same state
        _recording.record(agent._runtime(), state)

        [(program, run)] = steady
        [expected] = general
        combined = dataclasses.replace(
            program, **{field: getattr(run, name) for field, name in _RUN_FACTS.items()}
        )
        assert (state.program_source, state.outcome and state.outcome.value) == ("persisted", 7)
        assert dataclasses.asdict(combined) == dataclasses.asdict(expected)
        assert (run.result, run.error_type, run.trace_id) == ("ok", None, state.frame.trace_id)

    def test_the_program_record_is_built_once_per_record_and_switches(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Runs of the same cached record share one program record; another promotion switch
        builds another."""
        agent = _agent(tmp_path)
        agent.add(1)
        agent.add(2)
        steady = _spy_answered(monkeypatch)
        agent.add(3)
        agent.add(4)
        state = call_state(agent._runtime(), "add", (5,), {}, host_call=True)
        runtime = agent._runtime()
        settings = dataclasses.replace(
            runtime.options.settings, promotion_shadow_mode_enabled=False
        )
        options = dataclasses.replace(runtime.options, settings=settings)
        _recording.record(dataclasses.replace(runtime, options=options), state)

        programs = [program for program, _ in steady]
        assert (len(programs), programs[0] is programs[1], programs[1] is programs[2]) == (
            4,
            True,
            True,
        )
        assert (programs[3] is programs[2], programs[3].promotion.shadow) == (False, False)


class TestOneReadyRecordPerMethod:
    """What a stored program's runs read once per record is kept per agent's store and
    method: a record read again after a write replaces its predecessor (ADR 0130)."""

    def test_a_long_session_keeps_one_record_per_method(self, tmp_path: Path) -> None:
        """Five writes of the artifact, five records read: one entry left, the latest."""
        agent = _agent(tmp_path)
        agent.add(1)
        store = agent._runtime().store
        assert store is not None
        seen: list[object] = []
        for number in range(2, 7):
            agent.add(number)
            entry = _persistence._READY[(id(store), "add")]
            seen.append(entry.record)
            store.flush()  # the batched runs are written: the next lookup reads a new record

        entries = [key for key in _persistence._READY if key[0] == id(store)]
        assert (len({id(record) for record in seen}), entries) == (5, [(id(store), "add")])
        assert agent.add(7).value == 28

    @pytest.mark.parametrize("enforced", [False, True], ids=["shadow", "enforced"])
    def test_a_busy_method_keeps_one_record_alive(self, tmp_path: Path, enforced: bool) -> None:
        """Ten batched writes of one artifact leave one of its records alive in the process,
        with promotion enforcement on or off (the tables before kept one per write, up to
        256)."""
        configure_runtime(promotion_enforcement_enabled=enforced)
        role = f"retainer-{enforced}"  # its own role: other specs' records stay cached too
        provider = ScriptedProvider({(role, "add"): PROGRAM})
        agent = Agent(role, provider=provider, log=False, toolstore_root=tmp_path / "s")
        store = agent._runtime().store
        assert store is not None
        for number in range(10):
            agent.add(number)
            agent.add(number)
            store.flush()
        gc.collect()

        alive = [
            obj for obj in gc.get_objects() if type(obj) is ArtifactRecord and obj.role == role
        ]
        assert len(alive) == 1
