"""Secret values in the log line: memory beside a long history, and the newest history records."""

from __future__ import annotations

from pathlib import Path

from recurgent import Agent
from recurgent.testing import ScriptedProvider, read_log


def _agent(log_path: Path, code: str) -> Agent:
    return Agent(
        "service",
        provider=ScriptedProvider({"tick": "result = 1", "leak": code}),
        log=log_path,
        toolstore_root=None,
    )


def test_memory_secret_is_masked_after_a_long_history(tmp_path: Path) -> None:
    """With 30 history records, a secret kept in memory is still masked in stdout."""
    log_path = tmp_path / "calls.jsonl"
    agent = _agent(log_path, "print('using', context['db_token'])\nresult = 'ok'")
    for _ in range(30):
        assert agent.tick().value == 1
    agent.db_token = "tok-abc-123-xyz"

    assert agent.leak().value == "ok"

    entry = read_log(log_path)[-1]
    assert entry["stdout"] == "using [REDACTED]\n"
    assert "tok-abc-123-xyz" not in log_path.read_text("utf-8")


def test_secret_written_into_the_newest_history_record_is_masked(tmp_path: Path) -> None:
    """A program that stores a secret under a secret-named key in a recent record and prints it
    has the value masked in its stdout."""
    log_path = tmp_path / "calls.jsonl"
    code = (
        "record = context['conversation_history'][-1]\n"
        "record['api_key'] = 'planted-secret-value'\n"
        "print('key', record['api_key'])\n"
        "result = 'ok'"
    )
    agent = _agent(log_path, code)
    for _ in range(30):
        assert agent.tick().value == 1

    assert agent.leak().value == "ok"

    entry = read_log(log_path)[-1]
    assert entry["stdout"] == "key [REDACTED]\n"
    assert "planted-secret-value" not in log_path.read_text("utf-8")


def test_secret_planted_in_history_and_raised_is_masked(tmp_path: Path) -> None:
    """A secret one call planted in a record and a later call raises with is masked there."""
    log_path = tmp_path / "calls.jsonl"
    agent = Agent(
        "service",
        provider=ScriptedProvider(
            {
                "tick": "result = 1",
                "plant": "context['conversation_history'][-1]['api_key'] = 'planted-secret-value'",
                "leak": "raise ValueError('bad ' + context['conversation_history'][-2]['api_key'])",
            }
        ),
        log=log_path,
        toolstore_root=None,
    )
    assert agent.tick().value == 1
    assert agent.plant().ok

    assert agent.leak().error_type == "execution"

    entry = read_log(log_path)[-1]
    assert entry["error_message"] == "Execution error in service.leak: ValueError: bad [REDACTED]"
    assert "planted-secret-value" not in log_path.read_text("utf-8").splitlines()[-1]


def test_quiet_call_leaves_history_unsearched_and_memory_searched(tmp_path: Path) -> None:
    """A call that prints and raises nothing still masks a memory secret its code quotes."""
    log_path = tmp_path / "calls.jsonl"
    agent = _agent(log_path, "result = 'tok-abc-123-xyz'[:3]")
    agent.db_token = "tok-abc-123-xyz"

    assert agent.leak().value == "tok"

    entry = read_log(log_path)[-1]
    assert entry["code"] == "result = '[REDACTED]'[:3]"


def test_a_value_logged_before_it_became_a_secret_is_masked_after(tmp_path: Path) -> None:
    """The log remembers the copies of strings per set of secrets (ADR 0125): a program text
    written in the clear while its string was no secret is masked on the next line once memory
    holds that string under a secret-named key, and in the clear again once it is gone."""
    log_path = tmp_path / "calls.jsonl"
    agent = Agent(
        "service",
        provider=ScriptedProvider({"tick": "result = 'abcd-efgh-ijkl'"}),
        log=log_path,
        toolstore_root=tmp_path / "store",
    )
    agent.tick()
    agent.api_token = "abcd-efgh-ijkl"
    agent.tick()
    del agent.api_token
    agent.tick()

    assert [entry["code"] for entry in read_log(log_path)] == [
        "result = 'abcd-efgh-ijkl'",
        "result = '[REDACTED]'",
        "result = 'abcd-efgh-ijkl'",
    ]
