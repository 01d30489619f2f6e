"""Whole log lines, byte for byte: what a representative set of calls writes (ADR 0125).

Every other log spec checks some fields; these pin the complete line (every key, its order, each
value and its JSON spelling), so a change to how the line is built (ADR 0125 built it in fewer
steps) is shown to write exactly what was written before. Time is frozen, the random ids are
drawn from a counter (``os.urandom``) and the trace id is given, so each line is reproducible.

The expected lines are in ``specs/fixtures/log_lines.json``. A change that adds or changes a log
field on purpose regenerates them with ``.venv/bin/python -m specs.lifecycle.test_log_line``
(which prints the scenarios whose line changed); review the diff before committing it.
"""

from __future__ import annotations

import itertools
import json
import os
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from freezegun import freeze_time

from recurgent import Agent, _ids
from recurgent._call import CallFrame
from recurgent._content_store import ContentReads, ContentWrite
from recurgent._lifecycle._patterns import PatternReport
from recurgent._lifecycle._role_continuity import NO_AGENCY_FIELDS
from recurgent._lifecycle._state import CallState
from recurgent._observability import CallLogger
from recurgent._patterns._extract import Capabilities
from recurgent._patterns._memory import Correction
from recurgent._prompting import PROMPT_VERSION
from recurgent._secret_index import SecretIndex
from recurgent._store import Provenance
from recurgent.errors import ExecutionError
from recurgent.outcome import Outcome
from recurgent.testing import ScriptedProvider

FIXTURE = Path(__file__).resolve().parent.parent / "fixtures" / "log_lines.json"
FROZEN = "2026-12-02T10:11:12.345678+00:00"
# The artifact's prompt version changes whenever a prompt does; the lines name it by this mark.
_PROMPT_MARK = "<PROMPT_VERSION>"

ADD = "context['value'] = context.get('value', 0) + args[0]\nresult = context['value']"
INC_MEMORY = "context['memory'] = context.get('memory', 0) + 1\nresult = context['memory']"
COORDINATION = {"role": "calculator", "version": 1, "constraints": {"accumulator": {}}}
LEAK = (
    "print('token', context['api_token'], 'auth', 'Bearer abcdefghijklmnop')\n"
    "print('key sk-live-0123456789abcdef and password=hunter2hunter2')\n"
    "result = Outcome.error(error_type='denied', error_message='refused tok-1234-abcd-5678',\n"
    "    retriable=False, metadata={'api_key': 'plain', 'detail': 'tok-1234-abcd-5678'})"
)


@contextmanager
def _reproducible(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Frozen time and counted random bytes (call ids, content refs) for one scenario."""
    counters: dict[int, Iterator[int]] = {}
    owner = threading.get_ident()
    real = os.urandom

    def urandom(size: int) -> bytes:
        # Only the scenario's own thread counts (a thread another spec left running in the same
        # pytest worker must not shift the ids), and each size counts apart: a draw made once
        # per process (multiprocessing's 32-byte key, on its first import) must not either.
        if threading.get_ident() != owner:
            return real(size)
        counter = counters.setdefault(size, itertools.count(1))
        return next(counter).to_bytes(size, "big")

    monkeypatch.setattr(os, "urandom", urandom)
    # Call ids and content refs are cut from blocks in batches (ADRs 0126, 0144): counted one id
    # at a time here.
    monkeypatch.setattr(_ids._Pool, "take", lambda pool, size: urandom(size))
    monkeypatch.setattr(_ids, "_POOL", _ids._Pool(per_draw=1))
    monkeypatch.setenv("LOG_LINE_SPEC_API_KEY", "envsecret-4321")
    with freeze_time(FROZEN):
        yield


def _lines(log: Path) -> list[str]:
    return log.read_text("utf-8").splitlines()


def _agent(role: str, replies: dict[Any, Any], log: Path, **options: Any) -> Agent:
    options.setdefault("model", "model-x")
    options.setdefault("trace_id", "trace-0001")
    return Agent(role, provider=ScriptedProvider(replies), log=log, **options)


def _store_calls(tmp: Path) -> dict[str, str]:
    log = tmp / "calls.jsonl"
    agent = _agent("bench", {"tick": "result = 1"}, log, toolstore_root=tmp / "store")
    agent.tick()
    agent.tick()
    generated, persisted = _lines(log)
    return {"generated": generated, "persisted": persisted}


def _secret_call(tmp: Path) -> dict[str, str]:
    log = tmp / "calls.jsonl"
    agent = _agent("vault", {"leak": LEAK}, log, toolstore_root=None)
    agent.api_token = "tok-1234-abcd-5678"
    agent.leak(
        "sk-abcdefghijklmnop",
        "tok-1234-abcd-5678",
        "with envsecret-4321 inside",
        password="hunter2hunter2",
        note="x",
    )
    [line] = _lines(log)
    return {"secrets": line}


def _secrets_in_names(tmp: Path) -> dict[str, str]:
    """Memory secrets that are also parts of names, ids and fixed words of the line: masked
    wherever they appear, nested keys included."""
    log = tmp / "calls.jsonl"
    agent = _agent("bench", {"tick": "result = 1"}, log, toolstore_root=tmp / "store")
    agent.remember(password="snapshot", api_secret="pattern", token="0000")
    agent.tick()
    agent.tick()
    _, persisted = _lines(log)
    return {"secrets_in_names": persisted}


def _repaired_contract_call(tmp: Path) -> dict[str, str]:
    log = tmp / "calls.jsonl"
    replies = {"run": ["items = None\nitems.append(1)", "result = {'body': 'x', 'extra': 1}"]}
    agent = _agent(
        "tester",
        replies,
        log,
        toolstore_root=tmp / "store",
        purpose="answer with a body",
        deliverable={"type": "object", "required": ["body"]},
    )
    agent.run(3, flag=True)
    [line] = _lines(log)
    return {"repaired_contract": line}


def _profile_drift(tmp: Path) -> dict[str, str]:
    log = tmp / "calls.jsonl"
    agent = _agent(
        "calculator",
        {"add": ADD, "increment": INC_MEMORY},
        log,
        toolstore_root=tmp / "store",
        role_profile=COORDINATION,
    )
    agent.add(2)
    agent.increment()
    _, drift = _lines(log)
    return {"profile_drift": drift}


def _delegated(tmp: Path) -> dict[str, str]:
    log = tmp / "calls.jsonl"
    parent_code = "helper = delegate('helper')\nresult = helper.double(4).value"
    replies = {("boss", "work"): parent_code, ("helper", "double"): "result = args[0] * 2"}
    agent = _agent("boss", replies, log, toolstore_root=tmp / "store")
    agent.work()
    child, parent = _lines(log)
    return {"delegated_child": child, "delegating_parent": parent}


def _full_state(tmp: Path) -> dict[str, str]:
    """A call state with every field set, rendered at debug level (no agent)."""
    state = CallState(
        role="ledger",
        model="model-x",
        method="post",
        args=("entry", 12, 3.5, None, ["a", {"b": b"\xff\x00"}]),
        kwargs={"account": "cash", "secret_code": "s3cr3t-value", "amount": 2**70},
        frame=CallFrame("trace-0002", "call-0002", "call-0001", 1),
        contract={
            "purpose": "post an entry",
            "deliverable": {"type": "object"},
            "acceptance": ["balanced"],
            "failure_policy": {"on_error": "return_error"},
        },
        contract_source="caller",
        host_call=True,
        map_id="map-01",
        duration_ms=12.3456,
        generation_attempt=2,
        code="print('posting')\nresult = {'ok': True}",
        program_dependencies=[{"name": "numpy", "version": "1.0"}],
        usage={"prompt_tokens": 120, "completion_tokens": 30},
        program_source="repaired",
        artifact_hit=False,
        artifact_lookup="miss",
        artifact_checksum="sha256:" + "ab" * 32,
        artifact_contract_fingerprint="sha256:" + "cd" * 32,
        artifact_prompt_version="2026-12-02.python.v0",
        artifact_write="written",
        artifact_author="host",
        artifact_selected_checksum="sha256:" + "ef" * 32,
        artifact_selected_lifecycle_state="durable",
        lifecycle_state="probation",
        lifecycle_decision="demote",
        promotion_decision_rationale={"reason": "failures", "window": [1, 2], "rate": 0.25},
        promotion_policy_version="solver_promotion_v1",
        promotion_shadow_mode=False,
        promotion_enforced=True,
        role_profile_compliant=False,
        state_key_consistency_ratio=0.5,
        program_provenance=Provenance(
            provider_kind="openai", model="gpt-served", prompt_version="v", runtime_version="r"
        ),
        cacheable=False,
        cacheability_reason="input_sensitive_method",
        input_sensitive=True,
        repair_attempted=True,
        repair_succeeded=True,
        repaired_failure_class="execution",
        failure_class="execution",
        attempt_id=3,
        attempt_stage="executed",
        validation_failure_type="contract",
        rollback_applied=True,
        retry_feedback_injected=True,
        execution_receiver="worker",
        result_inferred=True,
        worker={
            "isolation_backend": "process",
            "env_id": "env-1",
            "environment_cache_hit": True,
            "env_prepare_ms": 4.5,
            "worker_pid": 4242,
            "worker_restarts": 1,
            "worker_start_ms": 20.25,
            "worker_retired": False,
            "ignored": "not a logged key",
        },
        guardrail_violation_subtype="forbidden_import",
        guardrail_recovery_attempts=1,
        execution_repair_attempts=2,
        outcome_repair_attempts=1,
        outcome_repair_triggered=True,
        guardrail_retry_exhausted=False,
        outcome_repair_retry_exhausted=True,
        contract_validation_applied=True,
        contract_validation_passed=False,
        contract_validation_mismatch="missing key 'total'",
        contract_validation_expected_keys=["total"],
        contract_validation_actual_keys=["ok"],
        agency={
            **NO_AGENCY_FIELDS,
            "role_profile_compliance": {"passed": False, "violation_types": ["drift"]},
            "role_profile_compliant": False,
            "role_profile_violation_count": 1,
            "role_profile_violation_types": ["drift"],
            "role_profile_correction_hint": "use key 'value'",
            "role_profile_shadow_mode": True,
            "role_profile_enforced": False,
            "namespace_key_collision_count": 2,
            "namespace_multi_lifetime_key_count": 0,
            "namespace_continuity_violation_count": 3,
        },
        history_record_appended=True,
        conversation_history_size=7,
        content_write=ContentWrite(
            stored=True,
            ref="content:" + "01" * 12,
            kind="object",
            size=12,
            digest="sha256:" + "02" * 32,
            evicted=1,
            entry_count=3,
            total_bytes=40,
        ),
        content_reads=ContentReads(hits=1, misses=1, refs=["content:" + "03" * 12]),
        history_access_detected=True,
        history_query_patterns=["last_record"],
        patterns=PatternReport(
            capabilities=Capabilities(tags=("fetch",), evidence={"fetch": ("urlopen",)}),
            correction=Correction(signal="temporal_reask", correction_of_call_id="call-0000"),
            recorded=True,
        ),
        stdout="posting with Bearer abcdefghijklmnop\n",
        forwarded_calls=2,
        system_prompt="system text",
        user_prompt="user text with sk-abcdefghijklmnop",
        outcome=Outcome.error(
            error_type="execution", error_message="boom: s3cr3t-value", retriable=True
        ),
        error=ExecutionError("failed with password=hunter2hunter2"),
        memory_key_shadows_method=["post"],
    )
    state.record_failure("execution", "ZeroDivisionError", "division by zero")
    state.record_failure("validation", "GuardrailViolationError", "import os", "forbidden_import")
    state.mark_feedback_injected()
    memory = {"account": "cash", "db_password": "pw-9876-zyxw", "conversation_history": []}
    entry = state.log_entry(debug=True, memory=memory, secrets=SecretIndex())
    log = tmp / "state.jsonl"
    CallLogger(log).emit(entry, prepared=True)
    [line] = _lines(log)
    return {"full_state": line}


SCENARIOS: tuple[Callable[[Path], dict[str, str]], ...] = (
    _store_calls,
    _secret_call,
    _secrets_in_names,
    _repaired_contract_call,
    _profile_drift,
    _delegated,
    _full_state,
)


def _run(scenario: Callable[[Path], dict[str, str]], tmp: Path) -> dict[str, str]:
    lines = scenario(tmp)
    return {name: line.replace(PROMPT_VERSION, _PROMPT_MARK) for name, line in lines.items()}


def _expected() -> dict[str, str]:
    data: dict[str, str] = json.loads(FIXTURE.read_text("utf-8"))
    return data


@pytest.mark.parametrize("scenario", SCENARIOS, ids=lambda s: s.__name__.lstrip("_"))
def test_the_line_is_the_pinned_line(
    scenario: Callable[[Path], dict[str, str]], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each scenario's log lines equal the pinned lines byte for byte."""
    with _reproducible(monkeypatch):
        lines = _run(scenario, tmp_path)

    expected = _expected()
    assert sorted(lines) == sorted(name for name in lines if name in expected)
    for name, line in lines.items():
        written, pinned = json.loads(line), json.loads(expected[name])
        # Field by field first, for a readable difference; then the bytes.
        assert list(written) == list(pinned), name
        differing = [key for key in written if written[key] != pinned[key]]
        assert {key: written[key] for key in differing} == {key: pinned[key] for key in differing}
        assert line == expected[name], name


def test_the_pinned_lines_are_whole_log_lines() -> None:
    """The fixture holds one line per scenario name, each a JSON object of 130+ fields whose
    secret values are masked (so the pin itself never pinned a leak)."""
    expected = _expected()
    names = sorted(expected)
    assert names == [
        "delegated_child",
        "delegating_parent",
        "full_state",
        "generated",
        "persisted",
        "profile_drift",
        "repaired_contract",
        "secrets",
        "secrets_in_names",
    ]
    for line in expected.values():
        assert len(json.loads(line)) >= 130
        for secret in ("tok-1234", "hunter2hunter2", "sk-abcdefghijklmnop", "envsecret-4321"):
            assert secret not in line
        assert "s3cr3t-value" not in line and "pw-9876-zyxw" not in line


def _write_fixture() -> None:
    """Regenerate the fixture from the current code (run as a module, never by pytest)."""
    import tempfile

    lines: dict[str, str] = {}
    for scenario in SCENARIOS:
        with (
            tempfile.TemporaryDirectory() as tmp,
            pytest.MonkeyPatch.context() as patch,
            _reproducible(patch),
        ):
            lines.update(_run(scenario, Path(tmp)))
    old = _expected() if FIXTURE.exists() else {}
    changed = sorted(name for name in lines if old.get(name) != lines[name])
    FIXTURE.write_text(json.dumps(lines, indent=1, sort_keys=True) + "\n", "utf-8")
    sys.stdout.write(f"{FIXTURE}: {len(lines)} lines, changed: {', '.join(changed) or 'none'}\n")


if __name__ == "__main__":
    _write_fixture()
