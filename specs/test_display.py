"""describe: a value's text for people to read, which never raises."""

from __future__ import annotations

from recurgent import Outcome
from recurgent._display import describe


class TestDescribe:
    """describe is total: a value whose plain text fails is still described."""

    def test_describe_never_raises(self) -> None:
        """describe() falls back to JSON text when repr/str raise."""
        assert describe([10**5000], use_repr=True) == '["10000000000000000000...<5001 digits>"]'
        assert describe(10**5000, use_repr=False) == "10000000000000000000...<5001 digits>"
        assert describe({"a": 1}, use_repr=True) == "{'a': 1}"

    def test_describe_of_a_broken_repr(self) -> None:
        """An object whose __repr__ and __str__ raise is described by type and error."""

        class Broken:
            def __repr__(self) -> str:
                raise RuntimeError("no")

            __str__ = __repr__

        assert describe(Broken(), use_repr=True) == "<unrepresentable Broken: RuntimeError>"
        assert str(Outcome.ok(Broken())) == "<unrepresentable Broken: RuntimeError>"
