"""Session fixtures of the worker specs: one wheelhouse and one shared environment built from it."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from recurgent._worker._env import Environment, EnvironmentManager
from recurgent._worker._executor import ProcessExecutor
from recurgent._worker._manifest import DependencyPolicy, normalize_manifest
from recurgent._worker._pool import WorkerPool
from recurgent._worker._supervisor import WorkerSupervisor
from specs.worker.support import DEMO_DISTRIBUTION, build_wheel, supervisor


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A directory holding the demo wheel (the only package index the specs use)."""
    directory = tmp_path_factory.mktemp("wheelhouse")
    build_wheel(directory)
    return directory


@pytest.fixture(scope="session")
def offline_policy(wheelhouse: Path) -> DependencyPolicy:
    """Install only from the local wheelhouse."""
    return DependencyPolicy.build(index_urls=[str(wheelhouse)], source_mode="internal_only")


@pytest.fixture(scope="session")
def env_cache(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The cache root of the shared environment."""
    return tmp_path_factory.mktemp("python-envs")


@pytest.fixture(scope="session")
def demo_env(offline_policy: DependencyPolicy, env_cache: Path) -> Environment:
    """The one real environment of the suite: the demo wheel installed offline."""
    manager = EnvironmentManager(offline_policy, cache_root=env_cache, installer="pip")
    return manager.ensure(normalize_manifest([{"name": DEMO_DISTRIBUTION}]))


@pytest.fixture(scope="session")
def demo_executor(demo_env: Environment) -> Iterator[ProcessExecutor]:
    """A worker bound to the demo environment, shared by the specs that only read from it."""
    worker: WorkerSupervisor = supervisor(
        python=str(demo_env.python),
        site_packages=demo_env.site_packages,
        env_dir=demo_env.env_dir,
        pool=_unlimited(),
    )
    yield ProcessExecutor(worker, demo_env)
    worker.shutdown()


@pytest.fixture(scope="module")
def plain_executor() -> Iterator[ProcessExecutor]:
    """A worker on this interpreter without an environment, shared within one module."""
    worker = supervisor(pool=_unlimited())
    yield ProcessExecutor(worker)
    worker.shutdown()


def _unlimited() -> WorkerPool:
    """A pool of its own for a shared worker: no spec's workers evict it, no idle timeout."""
    return WorkerPool(idle_timeout_seconds=None, max_workers=None, reaper=False)
