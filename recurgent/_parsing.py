"""CPython's source -> tree -> code conversions, one thread at a time.

On CPython 3.11 the AST conversions keep their recursion counter in interpreter-wide state, so
two threads parsing or compiling at once (agents called from several threads) can corrupt it
and fail with ``SystemError: AST constructor recursion depth mismatch`` (CPython gh-106905).
Every parse and every compile of a tree in recurgent goes through this module's lock (ADR 0064).
"""

from __future__ import annotations

import ast
import traceback
import types

from recurgent._forksafe import fork_safe_rlock

__all__ = ["compile_tree", "format_traceback", "parse_python"]

# Re-entrant: a finalizer run by garbage collection in the middle of a parse may itself lead to
# a parse on the same thread (an object's __del__ calling an agent), which must not deadlock.
_LOCK = fork_safe_rlock()


#: How many times a conversion the counter race spoiled is tried in all.
_TRIES = 3


def _spoiled(error: SystemError) -> bool:
    return "recursion depth mismatch" in str(error)


def parse_python(source: str, filename: str) -> ast.Module:
    """``ast.parse(source, filename, "exec")`` under the process-wide AST lock.

    Code outside recurgent parses without the lock (Python 3.11's ``traceback`` formatting
    parses each source line it underlines; a library, the host's own code): a parse of ours that
    such a parse spoiled is done again, since each conversion resets the counter it starts from.

    Raises:
        SyntaxError, RecursionError, MemoryError: as ``ast.parse`` does.
    """
    for attempt in range(1, _TRIES + 1):
        try:
            with _LOCK:
                return ast.parse(source, filename, "exec")
        except SystemError as error:
            if attempt == _TRIES or not _spoiled(error):
                raise
    raise AssertionError("unreachable")  # pragma: no cover


def compile_tree(tree: ast.Module, filename: str) -> types.CodeType:
    """``compile(tree, filename, "exec")`` under the process-wide AST lock (tried again, like
    :func:`parse_python`, when a parse outside recurgent spoiled the counter).

    Raises:
        SyntaxError, ValueError, RecursionError: as ``compile`` does.
    """
    for attempt in range(1, _TRIES + 1):
        try:
            with _LOCK:
                return compile(tree, filename, "exec")
        except SystemError as error:
            if attempt == _TRIES or not _spoiled(error):
                raise
    raise AssertionError("unreachable")  # pragma: no cover


def format_traceback(tb: types.TracebackType | None) -> list[str]:
    """``traceback.format_tb(tb)`` under the AST lock: on Python 3.11 it parses each source line
    it underlines, which would otherwise race with the parses above."""
    with _LOCK:
        return traceback.format_tb(tb)
