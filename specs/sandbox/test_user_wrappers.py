"""The served ``collections.UserString`` stand-in answers class questions as the real class does
(``_sandbox/_user_wrappers.py``, ADR 0155)."""

from __future__ import annotations

from .support import value_of


def test_the_stand_in_is_a_sequence_like_the_real_class() -> None:
    """``issubclass(UserString, collections.abc.Sequence)`` is True, as in Python (it was False
    in the sandbox: the stand-in's own bases are ``object``); its ``count`` is still str's
    substring count, not Sequence's item count."""
    source = (
        "import collections, collections.abc\n"
        "U = collections.UserString\n"
        "result = [issubclass(U, collections.abc.Sequence), issubclass(U, collections.abc.Sized),"
        " isinstance(U('ab'), collections.abc.Sequence), U.count(U('abab'), 'ab')]"
    )
    assert value_of(source) == [True, True, True, 2]
