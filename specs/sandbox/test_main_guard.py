"""A program runs as a script would: ``__name__`` is ``"__main__"`` (ADR 0106).

The guarded block runs; a closing guard's last expression is the result, as the top level's
is; ``__name__`` is read-only. A refusal raised while a class is made names the ``class``
statement's own line.
"""

from __future__ import annotations

import pytest

from recurgent.errors import ExecutionError, InvalidCodeError

from .support import execute, value_of

_MAIN = "def main():\n    return 5\n"


class TestMainGuard:
    """``if __name__ == "__main__":``."""

    def test_name_is_main(self) -> None:
        """Read at the top level and in a function."""
        assert value_of("def f():\n    return __name__\nresult = [__name__, f()]") == [
            "__main__",
            "__main__",
        ]

    @pytest.mark.parametrize(
        "guard",
        ["if __name__ == '__main__':", "if '__main__' == __name__:", 'if __name__ == "__main__":'],
    )
    def test_the_guarded_block_runs(self, guard: str) -> None:
        """``result = main()`` under the guard, either way round."""
        assert value_of(_MAIN + guard + "\n    result = main()") == 5

    def test_a_closing_guards_last_expression_is_the_result(self) -> None:
        """``main()`` alone under the guard, as at the top level."""
        assert value_of(_MAIN + "if __name__ == '__main__':\n    main()") == 5

    def test_print_under_the_guard_prints(self) -> None:
        """``print(main())`` is an expression whose value is ``None``; the text is printed."""
        result = execute(_MAIN + "if __name__ == '__main__':\n    print(main())")
        assert (result.value, result.stdout) == (None, "5\n")

    def test_a_guard_with_an_else_is_not_the_tail(self) -> None:
        """Only a plain closing guard counts as the top level."""
        assert value_of(_MAIN + "if __name__ == '__main__':\n    main()\nelse:\n    pass") is None

    def test_name_cannot_be_rebound(self) -> None:
        """A store is refused when compiled."""
        with pytest.raises(InvalidCodeError, match='"__name__" is an invalid variable name'):
            execute("__name__ = 'x'\nresult = 1")


class TestRefusalLines:
    """A refusal while a class is made names the real line."""

    @pytest.mark.parametrize(
        "statement",
        ["class Rows(csv.DictReader):", "class Rows(csv.DictReader, total=False):"],
    )
    def test_the_class_statements_line(self, statement: str) -> None:
        """Line 5, not the line 1 of RestrictedPython's template."""
        source = f"import csv\n\n\nx = 1\n{statement}\n    pass\n"
        result = execute(source)
        assert isinstance(result.error, ExecutionError)
        assert result.error.line == 5
