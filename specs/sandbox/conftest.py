"""Fixtures shared by the sandbox specs."""

from __future__ import annotations

import sys
from collections.abc import Iterator

import pytest


@pytest.fixture
def unlimited_digits() -> Iterator[None]:
    """A host that lifted CPython's digit limit for its own work (the process-wide setting)."""
    before = sys.get_int_max_str_digits()
    sys.set_int_max_str_digits(0)
    yield
    sys.set_int_max_str_digits(before)
