"""The map specs' Ray cluster: started once per session, local, and shut down at its end.

Ray runs here with two CPUs, no dashboard, no usage statistics and its files under the
session's temporary directory; it is started only if a spec asks for it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest


@pytest.fixture(scope="session")
def ray_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """A local Ray cluster for the whole session (about 5 s to start)."""
    ray = pytest.importorskip("ray")
    previous = os.environ.get("RAY_USAGE_STATS_ENABLED")
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    ray.init(
        num_cpus=2,
        include_dashboard=False,
        configure_logging=False,
        log_to_driver=False,
        _temp_dir=str(tmp_path_factory.mktemp("ray")),
    )
    try:
        yield ray
    finally:
        ray.shutdown()
        if previous is None:
            os.environ.pop("RAY_USAGE_STATS_ENABLED", None)
        else:
            os.environ["RAY_USAGE_STATS_ENABLED"] = previous
