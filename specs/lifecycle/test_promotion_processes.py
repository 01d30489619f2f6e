"""The promotion lifecycle across real OS processes: two sessions promote a version, a
maintainer overrides it with the ``recurgent tools`` command, and enforcement in a third
process follows the override (ADRs 0080, 0081)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from recurgent._store import checksum
from recurgent._store._paths import artifact_path

DOUBLE = "return args[0] * 2"
TRIPLE = "return args[0] * 3"

SESSION = """
import json, sys
from recurgent import Agent
from recurgent.testing import FunctionProvider

root, code, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
provider = FunctionProvider(lambda request: code)
agent = Agent("calculator", provider=provider, toolstore_root=root, log=False)
values = [agent.run(number).value for number in range(count)]
print(json.dumps({"values": values, "requests": provider.calls, "trace": agent._agent.options.trace_id}))
"""


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RECURGENT_")}
    env["XDG_STATE_HOME"] = str(tmp_path / "xdg")
    env.update(extra)
    return env


def _session(tmp_path: Path, root: Path, code: str, count: int, **env: str) -> dict[str, Any]:
    script = tmp_path / "session.py"
    script.write_text(SESSION, "utf-8")
    finished = subprocess.run(
        [sys.executable, str(script), str(root), code, str(count)],
        capture_output=True,
        text=True,
        env=_env(tmp_path, **env),
        timeout=110,
        check=False,
    )
    assert (finished.returncode, finished.stderr) == (0, "")
    return dict(json.loads(finished.stdout))


def _tools(tmp_path: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "recurgent._cli", "tools", *args],
        capture_output=True,
        text=True,
        env=_env(tmp_path, **env),
        timeout=110,
        check=False,
    )


class TestTwoSessionsPromote:
    """Two processes, one session each, drive a version from probation to durable."""

    def test_probation_after_one_process_durable_after_two(self, tmp_path: Path) -> None:
        """The first process generates and answers 5 calls (probation: one session); the
        second answers 5 more with no request, and the version is durable, with the promotion
        in the ledger citing 10 calls over 2 sessions."""
        root = tmp_path / "store"
        args = ("--root", str(root), "--json")

        first = _session(tmp_path, root, DOUBLE, 5)
        after_first = json.loads(_tools(tmp_path, "scorecards", "calculator", "run", *args).stdout)
        second = _session(tmp_path, root, DOUBLE, 5)
        after_second = json.loads(_tools(tmp_path, "scorecards", "calculator", "run", *args).stdout)
        decisions = json.loads(_tools(tmp_path, "decisions", "calculator", "run", *args).stdout)

        assert (first["values"], first["requests"]) == ([0, 2, 4, 6, 8], 1)
        assert (second["values"], second["requests"]) == ([0, 2, 4, 6, 8], 0)
        assert first["trace"] != second["trace"]
        [before] = after_first["versions"]
        [after] = after_second["versions"]
        assert (before["lifecycle_state"], before["calls"], before["sessions"]) == (
            "probation",
            5,
            1,
        )
        assert (after["lifecycle_state"], after["calls"], after["sessions"]) == ("durable", 10, 2)
        assert after_second["incumbent_durable_checksum"] == checksum(DOUBLE)
        promote = decisions["decisions"][-1]
        assert (promote["decision"], promote["from_state"], promote["to_state"]) == (
            "promote",
            "probation",
            "durable",
        )
        assert (promote["rationale"]["calls"], promote["rationale"]["session_count"]) == (10, 2)


class TestOverrideAcrossProcesses:
    """A maintainer's override from the command line governs the next process."""

    def test_set_lifecycle_then_enforcement_follows_it(self, tmp_path: Path) -> None:
        """The version degraded with ``recurgent tools set-lifecycle`` (by prefix): a process
        with enforcement on regenerates instead of running it; a non-maintainer's override is
        refused and changes nothing."""
        root = tmp_path / "store"
        _session(tmp_path, root, DOUBLE, 2)
        prefix = checksum(DOUBLE)[7:17]

        refused = _tools(
            tmp_path,
            "set-lifecycle",
            "calculator",
            "run",
            prefix,
            "degraded",
            "--actor",
            "mallory",
            "--root",
            str(root),
            RECURGENT_AUTHORITY_MAINTAINERS="alice",
        )
        done = _tools(
            tmp_path,
            "set-lifecycle",
            "calculator",
            "run",
            prefix,
            "degraded",
            "--actor",
            "alice",
            "--reason",
            "wrong for negatives",
            "--root",
            str(root),
            "--json",
            RECURGENT_AUTHORITY_MAINTAINERS="alice,bob",
        )
        enforced = _session(
            tmp_path, root, TRIPLE, 2, RECURGENT_PROMOTION_ENFORCEMENT_ENABLED="true"
        )

        assert refused.returncode == 1
        assert "authority_denied: mallory is not a maintainer (maintainers: alice" in refused.stderr
        assert done.returncode == 0, done.stderr
        report = json.loads(done.stdout)
        assert (report["previous_state"], report["state"], report["actor"]) == (
            "probation",
            "degraded",
            "alice",
        )
        assert (enforced["values"], enforced["requests"]) == ([0, 3], 1)
        stored = json.loads(
            _tools(
                tmp_path, "scorecards", "calculator", "run", "--root", str(root), "--json"
            ).stdout
        )
        states = {row["checksum"]: row["lifecycle_state"] for row in stored["versions"]}
        assert states == {checksum(DOUBLE): "degraded", checksum(TRIPLE): "probation"}
        artifact = json.loads(artifact_path(root, "calculator", "run").read_text("utf-8"))
        [override] = artifact["lifecycle"]["manual_overrides"]
        assert stored["lifecycle"]["manual_overrides"] == [override]  # the CLI shows the records
        assert (override["actor"], override["reason"]) == ("alice", "wrong for negatives")
