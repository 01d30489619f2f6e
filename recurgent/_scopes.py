"""Python's scope rules read off a syntax tree: the nodes that run in one scope, and the names
they bind there.

A function's or class's decorators, default values, bases and class keywords run in the scope
that defines it; its body runs in a scope of its own. The sandbox's main-function wrapper
(``_sandbox/_wrap.py``) and the store's input-flow walk (``_store/_flow_syntax.py``) both ask
these questions of generated programs, and answer them the same way here.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable, Iterator

__all__ = ["SCOPES", "bound_names", "scope_nodes"]

#: The nodes whose body is a scope of its own (comprehensions aside).
SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)


def scope_nodes(body: Iterable[ast.AST]) -> Iterator[ast.AST]:
    """Every node that runs in the scope ``body`` belongs to, in source order: a nested scope's
    node and its head (decorators, defaults, bases, class keywords), never its body."""
    stack: list[ast.AST] = list(body)
    stack.reverse()
    while stack:
        node = stack.pop()
        yield node
        if isinstance(node, SCOPES):
            outer: list[ast.AST] = []
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                outer.extend(node.decorator_list)
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda):
                outer.extend(node.args.defaults)
                outer.extend(d for d in node.args.kw_defaults if d is not None)
            if isinstance(node, ast.ClassDef):
                outer.extend(node.bases)
                outer.extend(k.value for k in node.keywords)
            outer.reverse()
            stack.extend(outer)
            continue
        children = list(ast.iter_child_nodes(node))
        children.reverse()
        stack.extend(children)


def bound_names(nodes: Iterable[ast.AST]) -> set[str]:
    """The names ``nodes`` (of one scope, as :func:`scope_nodes` gives them) bind in it:
    assignment and deletion targets, functions and classes defined, imports, ``except ... as``
    and ``match`` captures."""
    names: set[str] = set()
    for node in nodes:
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            names.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.alias):
            names.add((node.asname or node.name).partition(".")[0])
        elif isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar) and node.name:
            names.add(node.name)
        elif isinstance(node, ast.MatchMapping) and node.rest:
            names.add(node.rest)
    return names
