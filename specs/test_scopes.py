"""Scope rules read off a tree (``recurgent._scopes``), shared by the sandbox's main-function
wrapper and the store's input-flow walk.

Pins: the nodes of one scope come in source order, with a nested function's or class's head
(decorators, defaults, bases, class keywords) and never its body; the names bound are exactly
those of assignments, deletions, definitions, imports and captures.
"""

from __future__ import annotations

import ast

from recurgent._scopes import bound_names, scope_nodes

_PROGRAM = """
import os.path as p, json
a = 1
@deco(d1)
def f(x=d2, *, y=d3):
    inner = 1
class K(B, metaclass=M):
    field = 2
g = lambda z=d4: body
del a
try:
    pass
except E as caught:
    pass
match subject:
    case [first, *rest]:
        pass
    case {"k": v, **others}:
        pass
"""


def _names(source: str) -> list[str]:
    return [
        node.id
        for node in scope_nodes(ast.parse(source).body)
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Load)
    ]


class TestScopeNodes:
    def test_heads_run_in_the_scope_and_bodies_do_not(self) -> None:
        """Decorators, defaults, bases and class keywords are read here, in source order;
        the bodies of the function, class and lambda are not."""
        assert _names(_PROGRAM) == ["deco", "d1", "d2", "d3", "B", "M", "d4", "E", "subject"]

    def test_a_nested_scope_node_is_itself_in_the_scope(self) -> None:
        """The def, class and lambda nodes are yielded (they bind or make a value here)."""
        kinds = [type(node).__name__ for node in scope_nodes(ast.parse(_PROGRAM).body)]
        assert (kinds.count("FunctionDef"), kinds.count("ClassDef"), kinds.count("Lambda")) == (
            1,
            1,
            1,
        )


class TestBoundNames:
    def test_every_kind_of_binding(self) -> None:
        """Imports (the first part of a dotted name, or its alias), assignments and deletions,
        definitions, ``except ... as`` and ``match`` captures; never a name of a nested body."""
        assert bound_names(scope_nodes(ast.parse(_PROGRAM).body)) == {
            "p",
            "json",
            "a",
            "f",
            "K",
            "g",
            "caught",
            "first",
            "rest",
            "v",
            "others",
        }

    def test_a_dotted_import_binds_its_first_part(self) -> None:
        assert bound_names(scope_nodes(ast.parse("import os.path").body)) == {"os"}
