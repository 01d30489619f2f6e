"""Persistence across real processes: programs and tools outlive the process that made them.

The sessions use a test double on an explicit root (a double persists nothing without one, ADR
0077): its script fingerprint (the reply function's code and the programs it reads) is the same
in both processes, so the second reuses what the first stored.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

SESSION = """
import json, sys
from recurgent import Agent
from recurgent.testing import FunctionProvider

PROGRAMS = {
    ("calculator", "add"): "context['value'] = context.get('value', 0) + args[0]\\n"
    "return context['value']",
    ("builder", "setup"): "h = delegate('converter', purpose='convert units')\\n"
    "return h.convert(args[0])",
    ("converter", "convert"): "return args[0] * 2",
}
provider = FunctionProvider(lambda request: PROGRAMS[(request.role, request.method_name)])
step, root = sys.argv[1], sys.argv[2]
if step == "first":
    values = [Agent("calculator", provider=provider, log=False, toolstore_root=root).add(5).value,
              Agent("builder", provider=provider, log=False, toolstore_root=root).setup(3).value]
else:
    builder = Agent("other", provider=provider, log=False, toolstore_root=root)
    calculator = Agent("calculator", provider=provider, log=False, toolstore_root=root)
    values = [calculator.add(37).value,
              builder.tool("converter").convert(21).value,
              builder.runtime_context["tools"]["converter"]["purpose"]]
print(json.dumps({"values": values, "requests": provider.calls}))
"""


def _session(step: str, root: Path, tmp_path: Path) -> dict[str, Any]:
    script = tmp_path / "session.py"
    script.write_text(SESSION, "utf-8")
    env = {**os.environ, "XDG_STATE_HOME": str(tmp_path / "xdg")}
    finished = subprocess.run(
        [sys.executable, str(script), step, str(root)],
        capture_output=True,
        text=True,
        env=env,
        timeout=110,
        check=False,
    )
    assert (finished.returncode, finished.stderr) == (0, "")
    return dict(json.loads(finished.stdout))


class TestTwoProcesses:
    """The second process answers from what the first stored."""

    def test_second_process_makes_no_request(self, tmp_path: Path) -> None:
        """add and a delegated tool generated in one process run in the next with 0 requests."""
        root = tmp_path / "store"

        first = _session("first", root, tmp_path)
        second = _session("second", root, tmp_path)

        assert first == {"values": [5, 6], "requests": 3}
        assert second == {"values": [37, 42, "convert units"], "requests": 0}


class TestToolsCommand:
    """``recurgent tools`` through the console entry, on a store a real call wrote."""

    def test_list_and_forget(self, tmp_path: Path) -> None:
        """list --json shows the stored add program; forget removes it."""
        root = tmp_path / "store"
        _session("first", root, tmp_path)

        def tools(*args: str) -> subprocess.CompletedProcess[str]:
            return subprocess.run(
                [sys.executable, "-m", "recurgent._cli", "tools", *args, "--root", str(root)],
                capture_output=True,
                text=True,
                timeout=110,
                check=False,
            )

        listed = tools("list", "--json")
        forgot = tools("forget", "calculator", "add")
        after = tools("list", "--json")

        assert (listed.returncode, forgot.returncode, after.returncode) == (0, 0, 0)
        before_rows = {(r["role"], r["method"]) for r in json.loads(listed.stdout)["artifacts"]}
        after_rows = {(r["role"], r["method"]) for r in json.loads(after.stdout)["artifacts"]}
        assert before_rows == {
            ("calculator", "add"),
            ("builder", "setup"),
            ("converter", "convert"),
        }
        assert after_rows == before_rows - {("calculator", "add")}
