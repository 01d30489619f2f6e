"""WorkerLane: routing, monotonic manifest, policy before install, commit after success, prepare."""

from __future__ import annotations

import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from recurgent._worker._env import Environment
from recurgent._worker._isolation import IsolationSettings
from recurgent._worker._lane import WorkerLane
from recurgent._worker._manifest import DependencyPolicy, ManifestEntry
from recurgent.errors import (
    DependencyInstallError,
    DependencyManifestIncompatibleError,
    DependencyPolicyViolationError,
    EnvironmentPreparingError,
    InvalidDependencyManifestError,
)


class FakeEnvironments:
    """Records ensure() calls; environment ids name the packages."""

    def __init__(self, tmp_path: Path, fail: BaseException | None = None) -> None:
        self.calls: list[list[str]] = []
        self.tmp_path = tmp_path
        self.fail = fail
        self.gate: threading.Event | None = None

    def ensure(self, manifest: Sequence[ManifestEntry]) -> Environment:
        self.calls.append([entry.requirement() for entry in manifest])
        if self.gate is not None:
            self.gate.wait(30)
        if self.fail is not None:
            raise self.fail
        env_id = "env-" + "-".join(entry.name for entry in manifest)
        return Environment(
            env_id=env_id,
            env_dir=self.tmp_path / env_id,
            python=self.tmp_path / env_id / "venv" / "bin" / "python",
            site_packages=self.tmp_path / env_id / "site",
            manifest=tuple(manifest),
            cache_hit=False,
            prepare_ms=10.5,
            resolve_ms=5.0,
            install_ms=4.5,
        )


class FakeSupervisor:
    """Stands in for a worker: records how it was made and whether it was shut down."""

    made: list[FakeSupervisor] = []

    def __init__(self, **options: Any) -> None:
        self.options = options
        self.shutdowns = 0
        self.backend = "none"
        self.pid = 4321
        self.restarts = 0
        FakeSupervisor.made.append(self)

    def shutdown(self) -> None:
        self.shutdowns += 1


@pytest.fixture(autouse=True)
def _fresh_supervisors() -> None:
    FakeSupervisor.made = []


def _lane(tmp_path: Path, **options: Any) -> tuple[WorkerLane, FakeEnvironments]:
    environments = FakeEnvironments(tmp_path, options.pop("fail", None))
    lane = WorkerLane(environments=environments, supervisor_factory=FakeSupervisor, **options)  # type: ignore[arg-type]
    return lane, environments


def test_no_dependencies_run_in_process(tmp_path: Path) -> None:
    """An agent without dependencies and without process isolation gets no worker."""
    lane, environments = _lane(tmp_path)
    assert lane.select(None, role="r") is None
    assert lane.select([], role="r") is None
    assert (environments.calls, FakeSupervisor.made) == ([], [])


def test_process_isolation_sends_every_program_to_a_worker(tmp_path: Path) -> None:
    """With isolation='process' a program without dependencies runs in a worker on this interpreter."""
    lane, environments = _lane(
        tmp_path, isolation=IsolationSettings(mode="process", use_bwrap=False)
    )
    executor = lane.select(None, role="r")
    assert executor is not None
    assert environments.calls == []
    assert FakeSupervisor.made[0].options["isolation"].mode == "process"
    assert "site_packages" not in FakeSupervisor.made[0].options


def test_manifest_grows_and_empty_declarations_keep_the_worker(tmp_path: Path) -> None:
    """[a] then [a, b] then [] prepare [a] once and [a, b] once; all three go to a worker."""
    lane, environments = _lane(tmp_path)
    first = lane.select([{"name": "a"}], role="r")
    second = lane.select([{"name": "a"}, {"name": "b"}], role="r")
    third = lane.select([], role="r")
    assert None not in (first, second, third)
    assert environments.calls == [["a>=0"], ["a>=0", "b>=0"]]
    assert [entry.name for entry in lane.manifest] == ["a", "b"]
    assert third is not None
    supervisor: object = third.supervisor  # a FakeSupervisor, typed as the real one
    assert supervisor is FakeSupervisor.made[1]


def test_an_environment_change_replaces_the_worker_once(tmp_path: Path) -> None:
    """Growing the manifest shuts the old worker down exactly once and makes a new one."""
    lane, _ = _lane(tmp_path)
    lane.select([{"name": "a"}], role="r")
    lane.select([{"name": "a"}], role="r")
    lane.select([{"name": "a"}, {"name": "b"}], role="r")
    assert [s.shutdowns for s in FakeSupervisor.made] == [1, 0]
    assert FakeSupervisor.made[1].options["env_dir"] == tmp_path / "env-a-b"


def test_incompatible_growth_is_refused_and_prepares_nothing(tmp_path: Path) -> None:
    """Changing a present version is dependency_manifest_incompatible; ensure ran only once."""
    lane, environments = _lane(tmp_path)
    lane.select([{"name": "nokogiri", "version": "~=1.16"}], role="parser")
    with pytest.raises(DependencyManifestIncompatibleError):
        lane.select([{"name": "nokogiri", "version": "~=1.17"}], role="parser")
    assert environments.calls == [["nokogiri~=1.16"]]


def test_policy_refusal_prepares_nothing_and_keeps_the_old_manifest(tmp_path: Path) -> None:
    """A refused growth leaves the manifest and the environment as they were (commit after success)."""
    lane, environments = _lane(tmp_path, policy=DependencyPolicy.build(blocked_packages=["evil"]))
    lane.select([{"name": "a"}], role="r")
    with pytest.raises(DependencyPolicyViolationError) as raised:
        lane.select([{"name": "a"}, {"name": "evil"}], role="r")
    assert raised.value.metadata == {"dependency_name": "evil", "policy": "blocked_packages"}
    assert environments.calls == [["a>=0"]]
    assert [entry.name for entry in lane.manifest] == ["a"]
    assert lane.select([], role="r") is not None
    assert environments.calls == [["a>=0"]]


def test_install_failure_does_not_commit_the_manifest(tmp_path: Path) -> None:
    """A failed install raises its typed error and the agent keeps no manifest."""
    lane, _ = _lane(tmp_path, fail=DependencyInstallError("pip install failed in /x: boom"))
    with pytest.raises(DependencyInstallError):
        lane.select([{"name": "a"}], role="r")
    assert lane.manifest == ()
    assert lane.environment is None


def test_a_malformed_declaration_is_refused(tmp_path: Path) -> None:
    """Extras in a name never reach the environment manager."""
    lane, environments = _lane(tmp_path)
    with pytest.raises(InvalidDependencyManifestError):
        lane.select([{"name": "pkg[extra]"}], role="r")
    assert environments.calls == []


def test_prepare_builds_in_the_background_and_later_calls_use_it(tmp_path: Path) -> None:
    """prepare() returns a ticket; once ready, a call declaring nothing runs in that environment."""
    lane, environments = _lane(tmp_path)
    environments.gate = threading.Event()
    ticket = lane.prepare([{"name": "x"}], role="pdf tool")
    assert ticket.wait(timeout=0.01) == "pending"
    with pytest.raises(EnvironmentPreparingError, match="still being prepared"):
        lane.select([], role="pdf tool", wait_seconds=0.01)
    environments.gate.set()
    assert ticket.wait(timeout=30) == "ready"
    assert ticket.value is not None and ticket.value.env_id == "env-x"
    assert FakeSupervisor.made == []
    executor = lane.select([], role="pdf tool")
    assert executor is not None and FakeSupervisor.made[0].options["env_dir"] == tmp_path / "env-x"
    assert environments.calls == [["x>=0"]]


def test_prepare_failure_is_environment_preparing(tmp_path: Path) -> None:
    """A refused or failing preparation rejects the ticket with environment_preparing."""
    lane, _ = _lane(tmp_path, policy=DependencyPolicy.build(allowed_packages=["y"]))
    ticket = lane.prepare([{"name": "x"}], role="pdf tool")
    assert ticket.wait(timeout=30) == "error"
    assert ticket.error is not None
    assert ticket.error.message == (
        "Environment preparation failed for pdf tool: dependency policy violation for x: not in allowed_packages"
    )
    assert ticket.error.metadata["cause"] == "dependency_policy_violation"
    assert lane.manifest == ()


@pytest.mark.slow
def test_a_real_lane_runs_a_dependency_program_from_the_cache(
    demo_env: Environment, offline_policy: DependencyPolicy, env_cache: Path
) -> None:
    """With the real manager and worker: a cache hit, a worker, the package imported; logs say so."""
    from recurgent._worker._env import EnvironmentManager
    from specs.worker.support import DEMO_DISTRIBUTION, run

    manager = EnvironmentManager(offline_policy, cache_root=env_cache, installer="pip")
    lane = WorkerLane(policy=offline_policy, environments=manager)
    try:
        executor = lane.select([{"name": DEMO_DISTRIBUTION}], role="demo")
        assert executor is not None
        result = run(executor, "import recurgent_demo_dep as d\nreturn d.double(8)")
        assert (result.error, result.value) == (None, 16)
        fields = result.log_fields
        assert (
            fields["execution_receiver"],
            fields["env_id"],
            fields["environment_cache_hit"],
        ) == (
            "worker",
            demo_env.env_id,
            True,
        )
        assert (fields["env_resolve_ms"], fields["env_install_ms"], fields["worker_restarts"]) == (
            0.0,
            0.0,
            0,
        )
    finally:
        lane.shutdown()
