"""recurgent._parsing: every parse and compile of a tree holds one process-wide lock (ADR 0064)."""

from __future__ import annotations

import ast
import threading
import types
from typing import Any, Literal

import pytest

from recurgent import _parsing
from recurgent._parsing import compile_tree, parse_python


class _BlockingAst:
    """Stands in for the ast module: parse() waits until released, so a test can hold the lock."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()
        #: What happened, in order; "parsed" is written while the parse still holds the lock.
        self.order: list[str] = []

    def parse(self, source: str, filename: str, mode: Literal["exec"]) -> ast.Module:
        self.entered.set()
        assert self.release.wait(10)
        tree = ast.parse(source, filename, mode)
        self.order.append("parsed")
        return tree


def test_parse_and_compile_return_what_the_builtins_return() -> None:
    """parse_python gives the tree ast.parse gives; compile_tree the code that runs it."""
    tree = parse_python("x = 6 * 7", "<generated>")

    code = compile_tree(tree, "<generated>")
    namespace: dict[str, Any] = {}
    exec(code, namespace)

    assert ast.dump(tree) == ast.dump(ast.parse("x = 6 * 7"))
    assert isinstance(code, types.CodeType)
    assert code.co_filename == "<generated>"
    assert namespace["x"] == 42


def test_a_compile_waits_while_another_thread_parses(monkeypatch: pytest.MonkeyPatch) -> None:
    """A second thread's compile_tree starts only after the first thread's parse has ended."""
    blocking = _BlockingAst()
    tree = ast.parse("y = 1")
    monkeypatch.setattr(_parsing, "ast", blocking)
    order = blocking.order

    def parse() -> None:
        # "parsed" is recorded inside the parse, under the lock: recorded here, after the lock
        # is released, the compile thread could record first (seen once on a loaded machine).
        parse_python("z = 2", "<generated>")

    def compile_it() -> None:
        compile_tree(tree, "<generated>")
        order.append("compiled")

    first = threading.Thread(target=parse)
    first.start()
    assert blocking.entered.wait(10)
    second = threading.Thread(target=compile_it)
    second.start()
    second.join(0.2)
    assert second.is_alive()  # held back by the lock, not finished
    blocking.release.set()
    first.join(10)
    second.join(10)

    assert order == ["parsed", "compiled"]


def test_errors_pass_through_and_release_the_lock() -> None:
    """A syntax error reaches the caller and the next parse still runs."""
    with pytest.raises(SyntaxError):
        parse_python("def (:", "<generated>")

    assert isinstance(parse_python("pass", "<generated>"), ast.Module)


def test_a_parse_inside_a_parse_on_one_thread_does_not_deadlock(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A parse started while the same thread is parsing (a finalizer's call) completes."""
    inner: list[ast.Module] = []
    started: list[str] = []
    real_parse = ast.parse

    class _Reentrant:
        @staticmethod
        def parse(source: str, filename: str, mode: Literal["exec"]) -> ast.Module:
            started.append(source)
            if len(started) == 1:
                inner.append(parse_python("inner = 1", "<generated>"))
            return real_parse(source, filename, mode)

    monkeypatch.setattr(_parsing, "ast", _Reentrant)

    outer = parse_python("outer = 2", "<generated>")

    assert started == ["outer = 2", "inner = 1"]
    assert [ast.dump(tree) for tree in (*inner, outer)] == [
        ast.dump(real_parse("inner = 1")),
        ast.dump(real_parse("outer = 2")),
    ]


class _SpoiledAst:
    """Stands in for the ast module: parse() fails as a spoiled counter makes it, ``spoiled`` times."""

    def __init__(
        self, spoiled: int, message: str = "AST constructor recursion depth mismatch"
    ) -> None:
        self.spoiled = spoiled
        self.message = message
        self.calls = 0

    def parse(self, source: str, filename: str, mode: Literal["exec"]) -> ast.Module:
        self.calls += 1
        if self.calls <= self.spoiled:
            raise SystemError(f"{self.message} (before=3, after=6)")
        return ast.parse(source, filename, mode)


class TestSpoiledByAParseOutsideTheLock:
    """A parse outside recurgent's lock (traceback formatting, a library) can spoil one of ours:
    it is done again, at most three times in all."""

    def test_a_spoiled_parse_is_done_again(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Two spoiled tries, then the tree."""
        fake = _SpoiledAst(spoiled=2)
        monkeypatch.setattr(_parsing, "ast", fake)

        tree = parse_python("x = 1", "<generated>")

        assert (ast.dump(tree), fake.calls) == (ast.dump(ast.parse("x = 1")), 3)

    def test_three_spoiled_tries_raise(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """The third spoiled try's SystemError reaches the caller."""
        fake = _SpoiledAst(spoiled=5)
        monkeypatch.setattr(_parsing, "ast", fake)

        with pytest.raises(SystemError, match="recursion depth mismatch"):
            parse_python("x = 1", "<generated>")
        assert fake.calls == 3

    def test_another_system_error_is_not_retried(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Only the counter race is tried again."""
        fake = _SpoiledAst(spoiled=1, message="something else")
        monkeypatch.setattr(_parsing, "ast", fake)

        with pytest.raises(SystemError, match="something else"):
            parse_python("x = 1", "<generated>")
        assert fake.calls == 1


def test_format_traceback_holds_the_lock(monkeypatch: pytest.MonkeyPatch) -> None:
    """Formatting a traceback (which parses on Python 3.11) waits for a parse in progress."""
    blocking = _BlockingAst()
    monkeypatch.setattr(_parsing, "ast", blocking)
    try:
        raise ValueError("boom")
    except ValueError as error:
        tb = error.__traceback__
    parser = threading.Thread(target=parse_python, args=("x = 1", "<generated>"))
    parser.start()
    assert blocking.entered.wait(10)
    formatted: list[list[str]] = []
    formatter = threading.Thread(target=lambda: formatted.append(_parsing.format_traceback(tb)))
    formatter.start()
    formatter.join(0.2)
    waited = formatter.is_alive()
    blocking.release.set()
    parser.join(10)
    formatter.join(10)

    assert waited is True
    assert formatted[0][-1].startswith("  File ") and 'raise ValueError("boom")' in formatted[0][-1]
