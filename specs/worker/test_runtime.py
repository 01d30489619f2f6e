"""The worker lane wired into the runtime, end to end through ``Agent`` (issue 12, ADR 0042).

Every spec installs only from the local wheelhouse (``--no-index --find-links``); all but one
reuse the session's environment cache, so the suite builds one extra environment here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from recurgent import Agent
from recurgent._options import parse_options
from recurgent._worker._env import Environment
from recurgent._worker._isolation import bwrap_path
from recurgent.errors import UsageError
from recurgent.testing import ScriptedProvider, read_log
from specs.worker.support import DEMO_DISTRIBUTION

DOUBLE = {
    "code": (
        "import recurgent_demo_dep\n"
        "context['doubled'] = recurgent_demo_dep.double(args[0])\n"
        "result = context['doubled']"
    ),
    "dependencies": [{"name": DEMO_DISTRIBUTION, "version": None}],
}
FAILING = {
    "code": "context['half_done'] = True\nraise ValueError('boom')",
    "dependencies": [{"name": DEMO_DISTRIBUTION, "version": None}],
}
WORKER_FIELDS = (
    "execution_receiver",
    "isolation_backend",
    "env_id",
    "environment_cache_hit",
    "worker_restarts",
)


def _policy(wheelhouse: Path) -> dict[str, Any]:
    return {"index_urls": [str(wheelhouse)], "source_mode": "internal_only"}


def _agent(
    replies: dict[Any, Any],
    wheelhouse: Path,
    cache: Path,
    log: Path | None = None,
    **options: Any,
) -> tuple[Agent, ScriptedProvider]:
    provider = ScriptedProvider(replies)
    options.setdefault("toolstore_root", None)
    agent = Agent(
        "calculator",
        provider=provider,
        log=log or False,
        dependency_policy=_policy(wheelhouse),
        environment_cache_root=cache,
        **options,
    )
    return agent, provider


def _fields(entry: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(entry[name] for name in WORKER_FIELDS)


@pytest.mark.slow
def test_dependency_program_runs_in_the_worker_builds_once_and_commits(
    tmp_path: Path, wheelhouse: Path
) -> None:
    """First call builds the env (no cache hit), second reuses it and the same worker; both commit."""
    log = tmp_path / "calls.jsonl"
    agent, provider = _agent({"double": DOUBLE}, wheelhouse, tmp_path / "envs", log)

    values = [agent.double(5).value, agent.double(7).value]

    assert (values, provider.calls, agent.runtime_context["doubled"]) == ([10, 14], 2, 14)
    first, second = read_log(log)
    assert _fields(first) == ("worker", "none", first["env_id"], False, 0)
    assert _fields(second) == ("worker", "none", first["env_id"], True, 0)
    assert len(first["env_id"]) == 64
    assert first["env_prepare_ms"] > 0
    assert isinstance(first["worker_pid"], int)
    assert second["worker_pid"] == first["worker_pid"]
    assert first["program_dependencies"] == [{"name": DEMO_DISTRIBUTION, "version": None}]


def test_shared_environment_is_a_cache_hit_for_a_new_agent(
    tmp_path: Path, wheelhouse: Path, env_cache: Path, demo_env: Environment
) -> None:
    """A new agent on the session's cache finds the environment built before: a cache hit."""
    log = tmp_path / "calls.jsonl"
    agent, _ = _agent({"double": DOUBLE}, wheelhouse, env_cache, log)

    assert agent.double(21).value == 42
    (entry,) = read_log(log)
    assert _fields(entry) == ("worker", "none", demo_env.env_id, True, 0)


def test_failed_worker_attempt_leaves_memory_unchanged(
    tmp_path: Path, wheelhouse: Path, env_cache: Path, demo_env: Environment
) -> None:
    """A worker program that writes and then raises commits nothing, on every attempt."""
    log = tmp_path / "calls.jsonl"
    agent, provider = _agent({"double": FAILING}, wheelhouse, env_cache, log)
    agent.total = 1

    outcome = agent.double(5)

    assert (outcome.error_type, provider.calls) == ("execution", 2)
    assert "half_done" not in agent.runtime_context
    assert agent.runtime_context["total"] == 1
    entry = read_log(log)[-1]
    assert (entry["execution_receiver"], entry["rollback_applied"]) == ("worker", True)


def test_process_isolation_runs_a_plain_program_in_a_worker(tmp_path: Path) -> None:
    """isolation='process' sends a program without dependencies to a confined worker."""
    log = tmp_path / "calls.jsonl"
    provider = ScriptedProvider(
        {"bump": "context['n'] = context.get('n', 0) + args[0]\nresult = context['n']"}
    )
    agent = Agent("counter", provider=provider, log=log, toolstore_root=None, isolation="process")

    assert (agent.bump(2).value, agent.bump(3).value) == (2, 5)
    assert agent.runtime_context["n"] == 5
    backend = "bwrap" if bwrap_path() is not None else "rlimits"
    first, second = read_log(log)
    assert _fields(first) == ("worker", backend, None, None, 0)
    assert (first["env_prepare_ms"], second["worker_pid"]) == (None, first["worker_pid"])


def test_in_process_calls_log_null_worker_fields(tmp_path: Path) -> None:
    """A program without dependencies runs in the sandbox; the worker fields are present, null."""
    log = tmp_path / "calls.jsonl"
    agent = Agent(
        "calc", provider=ScriptedProvider({"one": "result = 1"}), log=log, toolstore_root=None
    )

    assert agent.one().value == 1
    (entry,) = read_log(log)
    assert _fields(entry) == ("sandbox", None, None, None, None)
    assert (entry["worker_pid"], entry["env_prepare_ms"]) == (None, None)


def test_persisted_program_keeps_its_dependencies(
    tmp_path: Path, wheelhouse: Path, env_cache: Path, demo_env: Environment
) -> None:
    """A stored program with dependencies answers a new agent (of the same scripted double,
    ADR 0077) with no request, in the worker."""
    root = tmp_path / "store"
    _agent({"double": DOUBLE}, wheelhouse, env_cache, toolstore_root=root)[0].double(2)
    log = tmp_path / "calls.jsonl"
    warm, provider = _agent({"double": DOUBLE}, wheelhouse, env_cache, log, toolstore_root=root)

    assert (warm.double(4).value, provider.calls) == (8, 0)
    (entry,) = read_log(log)
    assert (entry["program_source"], entry["execution_receiver"], entry["env_id"]) == (
        "persisted",
        "worker",
        demo_env.env_id,
    )


def test_blocked_package_ends_the_call_before_any_install(tmp_path: Path, wheelhouse: Path) -> None:
    """A policy-blocked dependency is dependency_policy_violation; no environment is made."""
    provider = ScriptedProvider({"double": DOUBLE})
    agent = Agent(
        "calc",
        provider=provider,
        log=False,
        toolstore_root=None,
        environment_cache_root=tmp_path / "envs",
        dependency_policy={**_policy(wheelhouse), "blocked_packages": [DEMO_DISTRIBUTION]},
    )

    outcome = agent.double(1)

    assert (outcome.error_type, outcome.retriable) == ("dependency_policy_violation", False)
    assert not (tmp_path / "envs").exists()
    assert "doubled" not in agent.runtime_context


def test_prepare_builds_the_environment_before_the_first_call(
    tmp_path: Path, wheelhouse: Path, env_cache: Path, demo_env: Environment
) -> None:
    """Agent.prepare returns the agent and a ticket that becomes ready with the env's id."""
    log = tmp_path / "calls.jsonl"
    prepared = Agent.prepare(
        "calculator",
        dependencies=[{"name": DEMO_DISTRIBUTION}],
        provider=ScriptedProvider({"double": DOUBLE}),
        log=log,
        toolstore_root=None,
        dependency_policy=_policy(wheelhouse),
        environment_cache_root=env_cache,
    )

    assert (prepared.wait(120), prepared.env_id, prepared.error) == (
        "ready",
        demo_env.env_id,
        None,
    )
    assert prepared.agent.double(3).value == 6
    (entry,) = read_log(log)
    assert (entry["env_id"], entry["environment_cache_hit"]) == (demo_env.env_id, True)


def test_prepare_with_a_timeout_returns_once_the_environment_is_ready(
    tmp_path: Path, wheelhouse: Path, env_cache: Path, demo_env: Environment
) -> None:
    """``timeout_seconds`` waits for the preparation: it is ready on return, and ``on_ready``
    calls back at once with the agent (ADR 0158)."""
    prepared = Agent.prepare(
        "calculator",
        dependencies=[{"name": DEMO_DISTRIBUTION}],
        timeout_seconds=120,
        provider=ScriptedProvider({"double": DOUBLE}),
        log=False,
        toolstore_root=None,
        dependency_policy=_policy(wheelhouse),
        environment_cache_root=env_cache,
    )
    agents: list[Agent] = []

    assert (prepared.status, prepared.env_id) == ("ready", demo_env.env_id)
    prepared.on_ready(agents.append)
    assert agents == [prepared.agent]
    assert agents[0].double(5).value == 10


def test_prepare_refuses_a_malformed_manifest() -> None:
    """Agent.prepare checks the dependency list at once: a non-list is a UsageError."""
    with pytest.raises(UsageError, match="dependencies"):
        Agent.prepare("x", dependencies="numpy", log=False, toolstore_root=None)  # type: ignore[arg-type]


class TestOptions:
    """The worker options: validated at construction, host-only, inherited by delegates."""

    def test_invalid_isolation_is_refused(self) -> None:
        """isolation accepts only 'in_process' and 'process'."""
        with pytest.raises(UsageError, match="isolation must be 'in_process' or 'process'"):
            Agent("x", isolation="container", log=False)  # type: ignore[arg-type]  # on purpose

    def test_unknown_policy_key_is_refused(self) -> None:
        """dependency_policy names its known keys when given another."""
        with pytest.raises(UsageError, match=r"unknown key\(s\) \['mirror'\]"):
            Agent("x", dependency_policy={"mirror": "x"}, log=False)

    def test_generated_code_cannot_set_worker_options(self) -> None:
        """delegate() from generated code may not choose isolation, policy or the env cache."""
        options = parse_options({"log": False, "isolation": "process"})

        refusals = options.narrowing_refusals(
            {"isolation": "in_process", "dependency_policy": {}, "environment_cache_root": "/"}
        )

        assert refusals == [
            "dependency_policy is set by the host, never by generated code",
            "environment_cache_root is set by the host, never by generated code",
            "isolation is set by the host, never by generated code",
        ]

    def test_delegates_inherit_the_worker_options(self, tmp_path: Path) -> None:
        """A child gets its parent's isolation, policy and cache root, and cannot override them."""
        options = parse_options(
            {
                "log": False,
                "isolation": "process",
                "dependency_policy": {"blocked_packages": ["evil"]},
                "environment_cache_root": tmp_path,
            }
        )

        child = parse_options(options.for_delegate({"isolation": "in_process"}))

        assert (child.isolation, child.environment_cache_root) == ("process", tmp_path)
        assert child.dependency_policy.blocked_packages == frozenset({"evil"})


def test_process_isolation_forwards_delegation_and_commits(tmp_path: Path) -> None:
    """A worker program delegates over the pipe; the delegate runs in its own worker."""
    log = tmp_path / "calls.jsonl"
    provider = ScriptedProvider(
        {
            ("boss", "total"): (
                "out = delegate('adder').add(2)\ncontext['got'] = out.value\nresult = out.value"
            ),
            ("adder", "add"): "result = args[0] + 40",
        }
    )
    agent = Agent("boss", provider=provider, log=log, toolstore_root=None, isolation="process")

    outcome = agent.total()

    assert (outcome.value, agent.runtime_context["got"]) == (42, 42)
    entries = {entry["role"]: entry for entry in read_log(log)}
    assert (entries["adder"]["execution_receiver"], entries["boss"]["forwarded_calls"]) == (
        "worker",
        2,
    )
    assert entries["adder"]["worker_pid"] != entries["boss"]["worker_pid"]


def test_process_isolation_timeout_commits_nothing_and_the_agent_goes_on(tmp_path: Path) -> None:
    """A program that never ends is a timeout with no writes; the next call runs normally."""
    provider = ScriptedProvider(
        {
            "spin": "context['x'] = 1\nwhile True:\n    pass",
            "one": "result = 1",
        }
    )
    agent = Agent(
        "spinner",
        provider=provider,
        log=False,
        toolstore_root=None,
        isolation="process",
        execution_timeout_seconds=1,
    )

    outcome = agent.spin()

    assert (outcome.error_type, "x" in agent.runtime_context) == ("timeout", False)
    assert agent.one().value == 1
