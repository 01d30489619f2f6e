"""CPython's source -> tree -> code conversions, one thread at a time.

On CPython 3.11 the AST conversions keep their recursion counter in interpreter-wide state, so
two threads parsing or compiling at once (agents called from several threads) can corrupt it
and fail with ``SystemError: AST constructor recursion depth mismatch`` (CPython gh-106905).
Every parse and every compile of a tree in recurgent goes through this module's lock (ADR 0064).
"""

from __future__ import annotations

import ast
import threading
import types

__all__ = ["compile_tree", "parse_python"]

# Re-entrant: a finalizer run by garbage collection in the middle of a parse may itself lead to
# a parse on the same thread (an object's __del__ calling an agent), which must not deadlock.
_LOCK = threading.RLock()


def parse_python(source: str, filename: str) -> ast.Module:
    """``ast.parse(source, filename, "exec")`` under the process-wide AST lock.

    Raises:
        SyntaxError, RecursionError, MemoryError: as ``ast.parse`` does.
    """
    with _LOCK:
        return ast.parse(source, filename, "exec")


def compile_tree(tree: ast.Module, filename: str) -> types.CodeType:
    """``compile(tree, filename, "exec")`` under the process-wide AST lock.

    Raises:
        SyntaxError, ValueError, RecursionError: as ``compile`` does.
    """
    with _LOCK:
        return compile(tree, filename, "exec")
