"""``verbose=True`` prints every program a call runs: written now, reused or repaired (ADR 0098)."""

from __future__ import annotations

from pathlib import Path

import pytest

from recurgent import Agent
from recurgent._store import checksum
from recurgent.testing import ScriptedProvider

CODE = "result = args[0] + 1"
RULE = "=" * 50


class TestVerbose:
    """Each program is printed between two rules, under a label naming where it came from."""

    def test_fresh_then_reused(self, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
        """The first agent prints the generated program, the second the stored one it reuses."""
        provider = ScriptedProvider({"add": CODE})
        root = tmp_path / "store"

        Agent("calc", provider=provider, log=False, verbose=True, toolstore_root=root).add(1)
        first = capsys.readouterr().out
        Agent("calc", provider=provider, log=False, verbose=True, toolstore_root=root).add(2)
        second = capsys.readouterr().out

        assert first == f"[AGENT calc.add] Generated code:\n{RULE}\n{CODE}\n{RULE}\n"
        assert second == (
            f"[AGENT calc.add] Reused code (persisted, #{checksum(CODE)[7:15]}):\n"
            f"{RULE}\n{CODE}\n{RULE}\n"
        )
        assert provider.calls == 1

    def test_repaired_program_is_marked(
        self, tmp_path: Path, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """A stored program that fails prints as reused, then its fix as repaired."""
        broken = "result = args[0]['missing']"
        provider = ScriptedProvider({"get": [broken, "result = 0"]})
        root = tmp_path / "store"
        Agent("calc", provider=provider, log=False, toolstore_root=root).get({"missing": 1})

        Agent("calc", provider=provider, log=False, verbose=True, toolstore_root=root).get({})

        out = capsys.readouterr().out
        assert out == (
            f"[AGENT calc.get] Reused code (persisted, #{checksum(broken)[7:15]}):\n"
            f"{RULE}\n{broken}\n{RULE}\n"
            f"[AGENT calc.get] Repaired code (a stored program that failed, fixed):\n"
            f"{RULE}\nresult = 0\n{RULE}\n"
        )
