"""The main-function wrapper: how a transformed program becomes one call with a result (ADR 0043).

Generated code is written like a module, but runs as the body of ``def __recurgent_main__()``:

* a top-level ``return`` ends the program with its value, and ``result`` starts as ``None`` and
  is returned when the program does not return;
* every ``def`` is a local of one call, so it dies with the attempt (ADR 0010);
* a name a helper declares ``global`` is global in the main function too, so ``global counter``
  in a helper reaches the top-level ``counter`` as it would in a module (the globals are the
  attempt's own namespace, so nothing outlives the attempt);
* a top-level name a class body both binds and reads (``size = size * 2`` in a class) is global
  in the main function too, since a class body reads such a name from the globals, never from
  the enclosing function's locals;
* a program that never assigns ``result`` and never returns, and whose last statement is an
  expression, has that expression's value as its result, as a notebook cell does
  (``result_inferred``); a closing ``if __name__ == "__main__":`` block counts as the top
  level, since the program runs as a script would (ADR 0106);
* a program made only of definitions (functions, classes, imports) that never calls them, never
  assigns ``result`` and never returns is refused as ``invalid_code``: it plainly forgot to
  produce its answer. Any other program without a result is an ok ``None`` as before, because
  from its text alone it may have meant just that (a program that only writes memory).
"""

from __future__ import annotations

import ast
from dataclasses import dataclass

from recurgent._sandbox._fastpaths import name as _name
from recurgent._sandbox._policy import MAIN_FUNCTION, tick_statement
from recurgent._scopes import bound_names, scope_nodes

__all__ = ["WrappedProgram", "forgotten_result", "wrap_in_main"]

_RESULT = "result"
_DEFINITIONS = (
    ast.FunctionDef,
    ast.AsyncFunctionDef,
    ast.ClassDef,
    ast.Import,
    ast.ImportFrom,
    ast.Pass,
    ast.Global,
    ast.Nonlocal,
)


@dataclass(frozen=True, slots=True)
class WrappedProgram:
    """The module holding the main function, and whether its result is the last expression."""

    module: ast.Module
    result_inferred: bool


def _declared_global(statements: list[ast.stmt]) -> set[str]:
    """Names any scope of the program declares ``global``."""
    names: set[str] = set()
    for statement in statements:
        for node in ast.walk(statement):
            if isinstance(node, ast.Global):
                names.update(node.names)
    return names


def _read_through_globals(statements: list[ast.stmt]) -> set[str]:
    """Names a class body in the main scope both binds and reads, as ``size = size * 2``.

    A class body reads a name it binds from its own namespace, then the globals, never from
    the enclosing function's locals: in the main function such a read of a top-level name
    failed with ``NameError`` (or found a builtin of that name), where a script reads the
    module's global. Classes nested in those class bodies read the same way.
    """
    names: set[str] = set()
    pending = [node for node in scope_nodes(statements) if isinstance(node, ast.ClassDef)]
    while pending:
        # The body's own scope, with the headers of the scopes nested in it.
        scope = list(scope_nodes(pending.pop().body))
        loaded = {
            node.id
            for node in scope
            if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
        } | {
            node.target.id
            for node in scope
            if isinstance(node, ast.AugAssign) and isinstance(node.target, ast.Name)
        }
        names |= loaded & bound_names(scope)
        pending.extend(node for node in scope if isinstance(node, ast.ClassDef))
    return names


def _binds_result(scope: list[ast.AST]) -> bool:
    for node in scope:
        if isinstance(node, ast.Name) and node.id == _RESULT and not isinstance(node.ctx, ast.Load):
            return True
        if isinstance(node, ast.alias) and (node.asname or node.name) == _RESULT:
            return True
        definition = isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
        if definition and node.name == _RESULT:  # type: ignore[attr-defined]
            return True
    return False


def forgotten_result(module: ast.Module) -> str | None:
    """Explain why a program produces no result it plainly meant to produce, or ``None``.

    Called on the program as written, before the policy transforms it.
    """
    body = module.body
    scope = list(scope_nodes(body))
    if _binds_result(scope) or _RESULT in _declared_global(body):
        return None
    if any(isinstance(node, ast.Return) for node in scope):
        return None
    if not all(isinstance(statement, _DEFINITIONS) for statement in body):
        return None
    defined = [s.name for s in body if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef)]
    if not defined:
        return None
    last = body[-1]
    end = getattr(last, "end_lineno", None) or last.lineno
    return (
        f"the program defines {', '.join(defined)} but never calls it and never sets "
        f"result (it ends at line {end}); end with `result = {defined[-1]}(...)`"
    )


def _is_main_guard(statement: ast.stmt) -> bool:
    """``if __name__ == "__main__":`` (either way round) with no ``else``."""
    if not isinstance(statement, ast.If) or statement.orelse:
        return False
    test = statement.test
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1):
        return False
    sides = [test.left, test.comparators[0]]
    return (
        isinstance(test.ops[0], ast.Eq)
        and any(isinstance(side, ast.Name) and side.id == "__name__" for side in sides)
        and any(isinstance(side, ast.Constant) and side.value == "__main__" for side in sides)
    )


def _tail(body: list[ast.stmt]) -> list[ast.stmt]:
    """The statements whose last one is the program's last: the top level, or the body of a
    closing ``if __name__ == "__main__":`` block, which runs as the script's end (ADR 0106)."""
    if body and _is_main_guard(body[-1]):
        guarded = body[-1]
        assert isinstance(guarded, ast.If)
        return guarded.body
    return body


def wrap_in_main(module: ast.Module, original: ast.Module) -> WrappedProgram:
    """Put the transformed module body inside ``def __recurgent_main__()``.

    Args:
        module: The program after the sandbox policy transformed it.
        original: The program as written, which decides hoisted globals and the inferred result.
    """
    scope = list(scope_nodes(original.body))
    declared = _declared_global(original.body)
    # A top-level name a class body reads through the globals is a global of the main
    # function, as it is of a script (a name some scope declares nonlocal stays local).
    nonlocal_names = {
        name for node in ast.walk(original) if isinstance(node, ast.Nonlocal) for name in node.names
    }
    read_through = _read_through_globals(original.body) & bound_names(scope)
    hoisted = sorted(declared | (read_through - nonlocal_names))
    body = list(module.body)
    tail = _tail(body)
    written = _tail(original.body)
    infer = (
        bool(tail)
        and isinstance(tail[-1], ast.Expr)
        and bool(written)
        and isinstance(written[-1], ast.Expr)
        and not _binds_result(scope)
        and _RESULT not in declared
        and not any(isinstance(node, ast.Return) for node in scope)
    )
    if infer:
        last = tail[-1]
        assert isinstance(last, ast.Expr)
        assign = ast.Assign(targets=[ast.Name(_RESULT, ast.Store())], value=last.value)
        ast.copy_location(assign, last)
        tail[-1] = assign
    init = ast.Assign(targets=[ast.Name(_RESULT, ast.Store())], value=ast.Constant(None))
    final = ast.Return(value=_name(_RESULT))
    head: list[ast.stmt] = [ast.Global(names=hoisted)] if hoisted else []
    tick = tick_statement()
    statements: list[ast.stmt] = [*head, tick, init, *body, final]
    function = ast.FunctionDef(
        name=MAIN_FUNCTION,
        args=ast.arguments(posonlyargs=[], args=[], kwonlyargs=[], kw_defaults=[], defaults=[]),
        body=statements,
        decorator_list=[],
        returns=None,
    )
    if "type_params" in ast.FunctionDef._fields:  # Python 3.12+
        function.type_params = []  # type: ignore[attr-defined,unused-ignore]
    for synthetic in (*head, init, final, function, tick):
        synthetic.lineno = synthetic.end_lineno = 1
        synthetic.col_offset = synthetic.end_col_offset = 0
    wrapped = ast.Module(body=[function], type_ignores=[])
    return WrappedProgram(ast.fix_missing_locations(wrapped), result_inferred=infer)
