"""The public API as a user's type checker sees it (ADR 0099).

``user_script.py`` pins the inferred types with ``assert_type`` and must pass ``mypy --strict``;
``bad_option.py`` passes a string where a number is declared and must fail with mypy's
message. Both are checked in one mypy run, in a subprocess, with the venv's mypy.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from recurgent._option_types import AgentOptionsDict
from recurgent._options import KNOWN_OPTIONS

HERE = Path(__file__).parent
ROOT = HERE.parent.parent


def test_the_typed_options_are_the_known_options() -> None:
    """Every option the runtime accepts is typed, and nothing else: an option added to
    ``_options.KNOWN_OPTIONS`` without its type in ``AgentOptionsDict`` fails here."""
    typed = AgentOptionsDict.__required_keys__ | AgentOptionsDict.__optional_keys__

    assert (sorted(typed - KNOWN_OPTIONS), sorted(KNOWN_OPTIONS - typed)) == ([], [])
    assert AgentOptionsDict.__required_keys__ == frozenset()


@pytest.mark.slow
def test_mypy_strict_on_a_users_scripts(tmp_path: Path) -> None:
    """The user's script type-checks clean; the bad option and the unknown map executor are
    the two errors, named exactly."""
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "mypy",
            "--strict",
            "--no-error-summary",
            "--cache-dir",
            str(tmp_path / "mypy-cache"),
            str(HERE / "user_script.py"),
            str(HERE / "bad_option.py"),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )

    lines = [line for line in run.stdout.splitlines() if line.strip()]
    assert lines == [
        f"{Path('specs', 'typing', 'bad_option.py')}:8: error: Argument "
        '"execution_timeout_seconds" to "for_" of "Agent" has incompatible type "str"; '
        'expected "float"  [arg-type]',
        f"{Path('specs', 'typing', 'bad_option.py')}:9: error: Argument "
        '"executor" to "map" of "Agent" has incompatible type "Literal[\'gpu\']"; '
        "expected \"Literal['in_process', 'process', 'ray'] | None\"  [arg-type]",
    ], run.stdout + run.stderr
    assert run.returncode == 1
