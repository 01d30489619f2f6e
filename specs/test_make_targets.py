"""What ``make demo`` and ``make test`` install (ADR 0116), read from ``make -n`` (a dry run).

``make demo`` installs the runtime only (``pip install -e .``, no extras) behind a stamp of its
own; ``make test`` installs ``.[dev]`` behind the other. The stamps are separate files, so
either target run first leaves the other one working (a dev install is a superset, and the
runtime install never removes the dev tools).
"""

from __future__ import annotations

import subprocess
from pathlib import Path

_ROOT = Path(__file__).resolve().parent.parent


def _dry_run(target: str, venv: Path) -> list[str]:
    done = subprocess.run(
        ["make", "-n", "-C", str(_ROOT), f"VENV={venv}", target],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return [line for line in done.stdout.splitlines() if not line.startswith("make")]


def _installs(lines: list[str]) -> list[str]:
    return [line.split("install --quiet ", 1)[1] for line in lines if "pip install" in line]


class TestDemoInstallsTheRuntimeOnly:
    """On a fresh venv, ``make demo`` installs ``-e .`` and runs the calculator."""

    def test_fresh_demo(self, tmp_path: Path) -> None:
        """One install, without extras, then the example."""
        lines = _dry_run("demo", tmp_path / "venv")

        assert _installs(lines) == ["--config-settings editable_mode=compat -e ."]
        assert lines[-2:] == [
            f"touch {tmp_path / 'venv'}/.installed-runtime",
            f"{tmp_path / 'venv'}/bin/python examples/calculator.py",
        ]

    def test_fresh_test_installs_the_dev_extra(self, tmp_path: Path) -> None:
        """``make test`` installs ``-e '.[dev]'`` behind its own stamp."""
        lines = _dry_run("test", tmp_path / "venv")

        assert _installs(lines) == ["--config-settings editable_mode=compat -e '.[dev]'"]
        assert f"touch {tmp_path / 'venv'}/.installed" in lines


class TestStampsCoexist:
    """Each target's stamp is its own: one target run first does not stand in for the other."""

    def test_demo_after_test_installs_the_runtime_once(self, tmp_path: Path) -> None:
        """With only the dev stamp present, demo still makes its own (a quick no-op install)."""
        venv = tmp_path / "venv"
        venv.mkdir()
        (venv / ".installed").touch()

        assert _installs(_dry_run("demo", venv)) == ["--config-settings editable_mode=compat -e ."]

    def test_test_after_demo_installs_the_dev_extra(self, tmp_path: Path) -> None:
        """With only the runtime stamp present, test installs the dev toolchain."""
        venv = tmp_path / "venv"
        venv.mkdir()
        (venv / ".installed-runtime").touch()

        assert _installs(_dry_run("test", venv)) == [
            "--config-settings editable_mode=compat -e '.[dev]'"
        ]

    def test_both_stamps_fresh_install_nothing(self, tmp_path: Path) -> None:
        """With both stamps newer than pyproject.toml, neither target installs anything."""
        venv = tmp_path / "venv"
        venv.mkdir()
        (venv / ".installed").touch()
        (venv / ".installed-runtime").touch()

        assert _installs(_dry_run("demo", venv)) == []
        assert _installs(_dry_run("test", venv)) == []
