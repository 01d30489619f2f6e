"""Pins what the distribution says about itself: the license file matches pyproject's SPDX field."""

from __future__ import annotations

import tomllib
from pathlib import Path

_ROOT = Path(__file__).resolve().parent.parent


def test_license_file_matches_the_spdx_expression() -> None:
    """pyproject says license = "MIT", ships LICENSE, and LICENSE is the MIT license text."""
    project = tomllib.loads((_ROOT / "pyproject.toml").read_text())["project"]
    text = (_ROOT / "LICENSE").read_text()
    assert (project["license"], project["license-files"]) == ("MIT", ["LICENSE"])
    assert text.splitlines()[0] == "MIT License"
    assert "Permission is hereby granted, free of charge" in text


def test_the_package_is_typed() -> None:
    """py.typed ships as package data, so users' mypy reads recurgent's annotations."""
    setuptools = tomllib.loads((_ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]
    assert "py.typed" in setuptools["package-data"]["recurgent"]
    assert (_ROOT / "recurgent" / "py.typed").is_file()
