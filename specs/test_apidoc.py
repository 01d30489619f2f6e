"""``docs/api.md`` is current: regenerated from the docstrings, it equals the committed file
(ADR 0116). When this fails, run ``make docs`` (``python -m recurgent._apidoc``) and commit."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import recurgent
import recurgent.errors
import recurgent.testing
from recurgent._apidoc import main, render

API_MD = Path(__file__).resolve().parent.parent / "docs" / "api.md"


class TestTheReferenceIsCurrent:
    """The committed reference is what the generator writes today."""

    def test_docs_api_md_is_not_stale(self) -> None:
        """Regenerated text == docs/api.md (else: run `make docs`)."""
        assert API_MD.read_text("utf-8") == render(), (
            "docs/api.md is stale: run `make docs` (python -m recurgent._apidoc) and commit it"
        )

    def test_every_public_name_has_a_heading(self) -> None:
        """Each name of the three modules' __all__ is a heading (the errors once, in errors)."""
        text = render()
        names = {
            *recurgent.__all__,
            *recurgent.testing.__all__,
            *recurgent.errors.__all__,
        }

        missing = sorted(name for name in names if f"\n### `{name}`\n" not in text)
        assert missing == []
        assert text.count("\n### `UsageError`\n") == 1

    def test_methods_and_docstrings_are_shown(self) -> None:
        """Methods carry their signature and docstring's first line."""
        text = render()

        assert "#### `Outcome.unwrap() -> Any`\n\nThe value of an ok outcome;" in text
        assert "#### `Agent.delegate(role: str, **options: Unpack[AgentOptionsDict]) -> Agent`" in (
            text
        )


class TestTheGenerator:
    """``python -m recurgent._apidoc``: write, and ``--check``."""

    def test_check_reports_a_stale_file(self, tmp_path: Path) -> None:
        """--check exits 1 and says how to regenerate when the file differs."""
        stale = tmp_path / "api.md"
        stale.write_text("# old\n", "utf-8")

        done = subprocess.run(
            [sys.executable, "-m", "recurgent._apidoc", "--check", "--output", str(stale)],
            capture_output=True,
            text=True,
            timeout=120,
        )

        assert done.returncode == 1
        assert done.stderr == (f"{stale} is stale: run `make docs` (python -m recurgent._apidoc)\n")

    def test_writes_then_checks_clean(self, tmp_path: Path) -> None:
        """Writing then checking the same path exits 0 both times."""
        target = tmp_path / "api.md"

        assert main(["--output", str(target)]) == 0
        assert target.read_text("utf-8") == render()
        assert main(["--check", "--output", str(target)]) == 0
