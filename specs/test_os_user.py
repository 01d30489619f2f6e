"""The OS user's name, read one way for maintainers, actors and the self model (recurgent/_os_user.py)."""

from __future__ import annotations

import getpass

import pytest

from recurgent._os_user import os_user_name


def test_the_name_is_getusers_stripped(monkeypatch: pytest.MonkeyPatch) -> None:
    """Surrounding blanks (an environment variable set by hand) are not part of the name; case
    is kept, each caller decides on it."""
    monkeypatch.setattr(getpass, "getuser", lambda: "  Alice \n")

    assert os_user_name() == "Alice"


def test_no_name_anywhere_is_empty(monkeypatch: pytest.MonkeyPatch) -> None:
    """getuser() raising (no variable and no password entry) gives "", never the error."""

    def no_user() -> str:
        raise OSError("No username set in the environment")

    monkeypatch.setattr(getpass, "getuser", no_user)

    assert os_user_name() == ""
