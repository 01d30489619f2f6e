"""Generators the program defines close quietly: the policy's rewrite of generator functions (ADR 0060).

A generator left suspended inside a ``try``/``finally`` or ``with`` block runs that cleanup when
it is closed, and a generator the attempt leaked (kept alive by a reference cycle) is closed by
whichever garbage collection reaches it, long after the attempt ended. CPython reports an
exception escaping that close to ``sys.unraisablehook``: the host's stderr, at a moment unrelated
to the attempt, with text the program chose. The late cleanup cannot reach agents or memory (its
forwarded calls and loops raise the attempt's stop), but the exception still surfaced.

The host's hook is global and not ours to change, so the generator itself is made unable to
fail its close. Every generator function is rewritten so that:

* each statement holding a ``yield`` of the function marks the frame as closing when
  ``GeneratorExit`` arrives there, and ends the generator instead of running when the frame is
  already closing (a ``yield`` after ``GeneratorExit`` is what makes ``close()`` raise
  ``RuntimeError``); a ``while`` whose test yields stops looping once the frame is closing;
* once the frame is closing, any exception leaving the body ends the generator instead.

A closing generator therefore always finishes cleanly, whoever closes it; an explicit
``close()`` or ``throw(GeneratorExit)`` in generated code no longer raises what the cleanup
raised. Lambdas and generator expressions run no code of the program when closed and are left
as they are.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator

from RestrictedPython.transformer import copy_locations

from recurgent._scopes import SCOPES

__all__ = ["CLOSING", "GENERATOR_EXIT", "close_quietly", "is_generator"]

#: The frame-local flag a rewritten generator keeps (generated code cannot name it).
CLOSING = "_closing_"
#: The global the rewrite catches ``GeneratorExit`` by: generated code may rebind the builtin
#: name, never one ending in ``_``.
GENERATOR_EXIT = "_GeneratorExit_"

# Nested scopes: a yield inside one belongs to that scope, not to the function being rewritten.
# Statement lists of compound statements (and of their handlers and match cases).
_BODIES = ("body", "orelse", "finalbody", "handlers", "cases")


def is_generator(function: ast.FunctionDef) -> bool:
    """True when ``function`` yields: its own body holds a ``yield`` or ``yield from``."""
    return any(_yields(statement, include_bodies=True) for statement in function.body)


def close_quietly(body: list[ast.stmt]) -> list[ast.stmt]:
    """The body of a generator function, rewritten so closing it never raises."""
    anchor = body[0]
    stop = _if_closing(ast.Return(value=None), anchor)
    quiet = ast.Try(
        body=_marked(body),
        handlers=[
            ast.ExceptHandler(type=None, name=None, body=[stop, ast.Raise(exc=None, cause=None)])
        ],
        orelse=[],
        finalbody=[],
    )
    start = ast.Assign(targets=[ast.Name(CLOSING, ast.Store())], value=ast.Constant(False))
    for node in (start, quiet):
        copy_locations(node, anchor)
    return [start, quiet]


def _marked(statements: list[ast.stmt]) -> list[ast.stmt]:
    out: list[ast.stmt] = []
    for statement in statements:
        if not isinstance(statement, SCOPES):
            _mark_bodies(statement)
        if _yields(statement, include_bodies=False):
            out.extend(_guarded(statement))
        else:
            out.append(statement)
    return out


def _mark_bodies(node: ast.AST) -> None:
    for name in _BODIES:
        children = getattr(node, name, None)
        if not isinstance(children, list):
            continue
        if children and isinstance(children[0], ast.stmt):
            setattr(node, name, _marked(children))
        else:  # except handlers and match cases hold the statement lists
            for child in children:
                _mark_bodies(child)


def _guarded(statement: ast.stmt) -> list[ast.stmt]:
    # if _closing_: return
    # try: <statement>
    # except _GeneratorExit_: _closing_ = True; raise
    mark = ast.Assign(targets=[ast.Name(CLOSING, ast.Store())], value=ast.Constant(True))
    caught = ast.ExceptHandler(
        type=ast.Name(GENERATOR_EXIT, ast.Load()),
        name=None,
        body=[mark, ast.Raise(exc=None, cause=None)],
    )
    if isinstance(statement, ast.While) and _yields(statement.test, include_bodies=False):
        # The test runs again on every turn, past the check below: a closing frame ends the
        # loop instead (its statements after it pass their own checks).
        statement.test = ast.BoolOp(
            op=ast.And(),
            values=[
                ast.UnaryOp(op=ast.Not(), operand=ast.Name(CLOSING, ast.Load())),
                statement.test,
            ],
        )
        copy_locations(statement.test, statement)
    watched = ast.Try(body=[statement], handlers=[caught], orelse=[], finalbody=[])
    copy_locations(watched, statement)
    return [_if_closing(ast.Return(value=None), statement), watched]


def _if_closing(action: ast.stmt, anchor: ast.stmt) -> ast.stmt:
    check = ast.If(test=ast.Name(CLOSING, ast.Load()), body=[action], orelse=[])
    copy_locations(check, anchor)
    return check


def _yields(node: ast.AST, *, include_bodies: bool) -> bool:
    """A ``yield`` of the current scope in ``node`` (in its own expressions only, or anywhere)."""
    if isinstance(node, ast.Yield | ast.YieldFrom):
        return True
    nodes = _header(node) if isinstance(node, SCOPES) else _walk(node, include_bodies)
    return any(isinstance(child, ast.Yield | ast.YieldFrom) for child in nodes)


def _walk(node: ast.AST, include_bodies: bool) -> Iterator[ast.AST]:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.stmt) and not include_bodies:
            continue
        yield child
        if isinstance(child, SCOPES):
            yield from _header(child)
        else:
            yield from _walk(child, include_bodies)


def _header(scope: ast.AST) -> Iterator[ast.AST]:
    """What a nested scope evaluates in the enclosing one: decorators, defaults, bases."""
    for name, value in ast.iter_fields(scope):
        if name == "body":
            continue
        for child in value if isinstance(value, list) else [value]:
            if isinstance(child, ast.AST):
                yield child
                yield from _walk(child, include_bodies=False)
