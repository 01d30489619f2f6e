"""recurgent._parsing: every parse and compile of a tree holds one process-wide lock (ADR 0064)."""

from __future__ import annotations

import ast
import threading
import types
from typing import Any

import pytest

from recurgent import _parsing
from recurgent._parsing import compile_tree, parse_python


class _BlockingAst:
    """Stands in for the ast module: parse() waits until released, so a test can hold the lock."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.release = threading.Event()

    def parse(self, source: str, filename: str, mode: str) -> ast.Module:
        self.entered.set()
        assert self.release.wait(10)
        return ast.parse(source, filename, mode)


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
    order: list[str] = []

    def parse() -> None:
        parse_python("z = 2", "<generated>")
        order.append("parsed")

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
        def parse(source: str, filename: str, mode: str) -> ast.Module:
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
