"""SandboxPolicy: the RestrictedPython transformer recurgent compiles generated code with (ADR 0011).

It keeps RestrictedPython's refusals (underscore names, ``exec``/``eval``, frame and code
internals) and extends the policy in three directions:

* **Python the model writes**: augmented assignment to items and attributes, ``match``,
  annotated assignment, ``nonlocal``, ``type(e).__name__`` and the common dunder methods in
  class bodies, all compiled to guarded forms instead of being refused.
* **Hard limits**: deadline ticks at every loop body, function and lambda body, comprehension
  step and ``except`` handler; the multiplicative operators and format specs go through
  size-checking hooks.
* **Speed**: attribute reads and method calls on a name, item and attribute writes and
  ``op=``, and arithmetic on names holding plain numbers take inline fast paths
  (``_fastpaths``) whose run-time test selects native code only where the guard would do the
  same; loops unpack natively. Only the slow path calls a guard.

Every name this module emits starts with ``_`` so generated code can neither read nor rebind it.
"""

from __future__ import annotations

import ast
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from RestrictedPython.transformer import (
    IOPERATOR_TO_STR,
    RestrictingNodeTransformer,
    copy_locations,
)

from recurgent._sandbox._fastpaths import (
    attribute_read,
    attribute_store,
    call as _call,
    choose,
    has_method_call,
    item_store,
    method_call,
    name as _name,
    native_augassign,
    numeric_tree,
    range_counter,
    rebinds,
    text_call,
    text_value,
    unhook,
)
from recurgent._sandbox._generators import close_quietly, is_generator
from recurgent._sandbox._names import (
    ALLOWED_DUNDER_METHODS,
    NAMEDTUPLE_ATTRIBUTES,
    READABLE_DUNDER_ATTRIBUTES,
    is_private_name,
)

__all__ = ["MAIN_FUNCTION", "SandboxPolicy", "tick_statement"]

MAIN_FUNCTION = "__recurgent_main__"

_SIZE_HOOKS: dict[type[ast.operator], str] = {
    ast.Mult: "_mul_",
    ast.Pow: "_pow_",
    ast.LShift: "_lshift_",
    ast.Mod: "_mod_",
}


# Scopes whose code may run after the statement that defines them: a function, a lambda, a
# class body's methods, a generator expression.
_LATER_SCOPES = (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef, ast.GeneratorExp)


def tick_statement() -> ast.stmt:
    """A statement that ticks the attempt's deadline."""
    return ast.Expr(_tick_expression())


def _tick_expression() -> ast.expr:
    # _next_(_ticker_, False) or _tick_(): True, or raises once the attempt is stopped. The
    # builtin is reached as _next_ because generated code may bind the name `next` itself
    # (a parameter called next would otherwise switch every tick in its function off).
    return ast.BoolOp(
        op=ast.Or(),
        values=[_call("_next_", _name("_ticker_"), ast.Constant(False)), _call("_tick_")],
    )


def _is_super_call(node: ast.expr) -> bool:
    return (
        isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "super"
    )


def _with_tick(body: list[ast.stmt], anchor: ast.AST) -> list[ast.stmt]:
    tick = tick_statement()
    copy_locations(tick, anchor)  # type: ignore[arg-type]
    return [tick, *body]


# f-string conversions that write a value's repr: !r and !a.
_REPR_CONVERSIONS = frozenset({ord("r"), ord("a")})


class SandboxPolicy(RestrictingNodeTransformer):
    """RestrictedPython's transformer, extended for recurgent (see the module docstring)."""

    def __init__(
        self,
        errors: list[str] | None = None,
        warnings: list[str] | None = None,
        used_names: dict[str, bool] | None = None,
    ) -> None:
        super().__init__(errors, warnings, used_names)
        self._class_body_depth = 0
        self._function_depth = 0
        self._in_numeric_tree = False
        # Names that hold a range()'s counter where they are read: their text cannot expand,
        # so str()/f-strings of them need no text estimate (H10). None: the program binds
        # the name range itself, so no loop over range() is known to count.
        self._counters: list[str] | None = []
        self._escaping: set[str] = set()

    def visit_Module(self, node: ast.Module) -> Any:
        if rebinds(node, "range"):
            self._counters = None
        # A name some function declares global or nonlocal can change during any call.
        self._escaping = {
            name
            for inner in ast.walk(node)
            if isinstance(inner, ast.Global | ast.Nonlocal)
            for name in inner.names
        }
        return super().visit_Module(node)

    def visit(self, node: ast.AST) -> Any:
        if self._counters and isinstance(node, _LATER_SCOPES):
            # Code that may run after the loop moved on: its counters are unknown.
            saved, self._counters = self._counters, []
            try:
                return super().visit(node)
            finally:
                self._counters = saved
        return super().visit(node)

    # ----------------------------------------------------------------- names and definitions

    def check_name(self, node: Any, name: str | None, allow_magic_methods: bool = False) -> None:
        if allow_magic_methods and name in ALLOWED_DUNDER_METHODS and self._class_body_depth:
            return
        if name is not None and is_private_name(name) and not name.endswith("__roles__"):
            return
        super().check_name(node, name)

    def visit_Name(self, node: ast.Name) -> Any:
        if node.id == "__name__" and isinstance(node.ctx, ast.Load):
            # The program's module name, "__main__" (ADR 0106); it cannot be rebound.
            return node
        return super().visit_Name(node)

    def visit_ClassDef(self, node: ast.ClassDef) -> Any:
        self._class_body_depth += 1
        saved, self._function_depth = self._function_depth, 0
        try:
            rebuilt = super().visit_ClassDef(node)
        finally:
            self._class_body_depth -= 1
            self._function_depth = saved
        # RestrictedPython rebuilds the statement from a template parsed at line 1: without
        # the real location, an error raised while the class is made names line 1 (ADR 0106).
        if isinstance(rebuilt, ast.ClassDef):
            # The template also drops the statement's keywords (TypedDict's total=False).
            rebuilt.keywords.extend(k for k in node.keywords if k.arg != "metaclass")
            copy_locations(rebuilt, node)
            for keyword in rebuilt.keywords:
                copy_locations(keyword, node)
                copy_locations(keyword.value, node)
        return rebuilt

    def visit_FunctionDef(self, node: ast.FunctionDef) -> Any:
        in_class = self._class_body_depth > 0 and self._function_depth == 0
        self.check_name(node, node.name, allow_magic_methods=in_class)
        self.check_function_argument_names(node)
        # Decorators and defaults run in the enclosing scope when the def runs:
        # visited there, a print in them uses that scope's collector, not the function's
        # (which does not exist yet). RestrictedPython visits them in the function's print
        # scope: `def g(p=print(1))` ran to a NameError on `_print`.
        header = self._visit_header(node)
        saved_class, self._class_body_depth = self._class_body_depth, 0
        self._function_depth += 1
        try:
            with self.print_info.new_print_scope():
                node = self.node_contents_visit(node)
                self.inject_print_collector(node)
        finally:
            self._function_depth -= 1
            self._class_body_depth = saved_class
            header.attach(node)
        if is_generator(node):
            node.body = close_quietly(node.body)
        node.body = _with_tick(node.body, node)
        return node

    def _visit_header(self, node: ast.FunctionDef) -> _Header:
        """Visit the decorators and defaults of ``def`` (run in the enclosing scope) and take
        them off ``node`` until :meth:`_Header.attach` puts them back, so the body's visit
        leaves them alone. Annotations stay: the program is compiled with postponed
        annotations, so they never run."""
        arguments = node.args
        header = _Header(
            decorators=[self.visit(d) for d in node.decorator_list],
            defaults=[self.visit(d) for d in arguments.defaults],
            kw_defaults=[None if d is None else self.visit(d) for d in arguments.kw_defaults],
        )
        node.decorator_list, arguments.defaults, arguments.kw_defaults = [], [], []
        return header

    def visit_Lambda(self, node: ast.Lambda) -> Any:
        # A lambda ticks when called, like a def: lambdas alone can recurse exponentially
        # without ever reaching the recursion limit.
        visited = super().visit_Lambda(node)
        assert isinstance(visited, ast.Lambda)
        node = visited
        tick = _tick_expression()
        copy_locations(tick, node.body)
        guarded = ast.BoolOp(op=ast.And(), values=[tick, node.body])
        copy_locations(guarded, node.body)
        node.body = guarded
        return node

    def visit_Nonlocal(self, node: ast.Nonlocal) -> Any:
        for name in node.names:
            self.check_name(node, name)
        return node

    def visit_Global(self, node: ast.Global) -> Any:
        for name in node.names:
            self.check_name(node, name)
        return node

    def visit_Yield(self, node: ast.Yield) -> Any:
        if self._function_depth == 0:
            self.error(node, "yield is only allowed inside a function; return or assign result")
        return self.node_contents_visit(node)

    def visit_YieldFrom(self, node: ast.YieldFrom) -> Any:
        if self._function_depth == 0:
            self.error(node, "yield is only allowed inside a function; return or assign result")
        return self.node_contents_visit(node)

    # ----------------------------------------------------------------- attribute access

    def visit_Attribute(self, node: ast.Attribute) -> Any:
        if is_private_name(node.attr):
            # Private attributes of the program's own objects: reads always go through the
            # guard (which allows them on objects the program made), writes through _write_.
            value = self.visit(node.value)
            if isinstance(node.ctx, ast.Load):
                read = _call("_getattr_", value, ast.Constant(node.attr))
                copy_locations(read, node)
                return read
            target = _call("_write_", value)
            copy_locations(target, node.value)
            node.value = target
            return node
        through_guard = isinstance(node.ctx, ast.Load) and (
            node.attr in READABLE_DUNDER_ATTRIBUTES
            or node.attr in NAMEDTUPLE_ATTRIBUTES
            # super().__init__(...) and friends in generated classes.
            or (node.attr in ALLOWED_DUNDER_METHODS and _is_super_call(node.value))
        )
        if through_guard:
            value = self.visit(node.value)
            new_node = _call("_getattr_", value, ast.Constant(node.attr))
            copy_locations(new_node, node)
            return new_node
        guarded = super().visit_Attribute(node)
        if isinstance(node.ctx, ast.Store) and isinstance(guarded, ast.Attribute):
            return attribute_store(guarded)
        if isinstance(node.ctx, ast.Load) and isinstance(guarded, ast.expr):
            return attribute_read(guarded, node)
        return guarded

    def visit_Call(self, node: ast.Call) -> Any:
        duplicable = not has_method_call(node)
        visited = super().visit_Call(node)
        if (
            isinstance(visited, ast.Call)
            and isinstance(visited.func, ast.Name)
            and visited.func.id == "_apply_"
        ):
            # RestrictedPython routes a call with `*` or `**` through `_apply_(f, ...)`, which
            # guards nothing here; called natively, Python's messages name the program's
            # function (`f() got multiple values for keyword argument 'a'`), not the
            # trampoline's host name (red-team R22).
            visited.func = visited.args.pop(0)
        if duplicable and isinstance(visited, ast.expr):
            visited = method_call(visited, node)
        if isinstance(visited, ast.Call):
            return text_call(visited, node, self._counters or ())
        return visited

    def visit_Starred(self, node: ast.Starred) -> Any:
        visited = super().visit_Starred(node)
        if isinstance(visited, ast.Starred) and isinstance(visited.ctx, ast.Load):
            # `*x` in a call or display unpacks through `_star_(x)`, which ticks unless `x` is
            # a short list or tuple: `[*r, *r, ...]` of ten-million ranges built a hundred
            # million items in one C call (red team R24).
            star = ast.Call(func=ast.Name("_star_", ast.Load()), args=[visited.value], keywords=[])
            visited.value = ast.copy_location(star, visited.value)
        return visited

    # ----------------------------------------------------------------- subscripts

    def visit_Subscript(self, node: ast.Subscript) -> Any:
        if isinstance(node.ctx, ast.Load):
            # Reading an item is native: every object reachable from generated code is either
            # plain data or defines __getitem__ under the sandbox's own rules.
            return self.node_contents_visit(node)
        node = self.node_contents_visit(node)
        node.value = item_store(node.value, node)
        return node

    # ----------------------------------------------------------------- iteration and unpacking

    def guard_iter(self, node: Any) -> Any:
        node = self.node_contents_visit(node)
        new_iter = _call("_getiter_", node.iter)
        copy_locations(new_iter, node.iter)
        node.iter = new_iter
        return node

    def protect_unpack_sequence(self, target: ast.Tuple, value: ast.expr) -> Any:
        # Unpacking plain values needs no guard here; iteration itself is ticked by _getiter_.
        return value

    def visit_Assign(self, node: ast.Assign) -> Any:
        return self.node_contents_visit(node)

    def visit_comprehension(self, node: ast.comprehension) -> Any:
        # Every step of a comprehension ticks, so one over a long iterable doing slow C work
        # per item still stops at the deadline.
        node = self.guard_iter(node)
        tick = _tick_expression()
        copy_locations(tick, node.iter)
        node.ifs = [tick, *node.ifs]
        return node

    def visit_For(self, node: ast.For) -> Any:
        counter = range_counter(node) if self._counters is not None else None
        if counter in self._escaping:
            counter = None
        if counter is not None and self._counters is not None:
            self._counters.append(counter)
        try:
            node = self.guard_iter(node)
        finally:
            if counter is not None and self._counters is not None:
                self._counters.pop()
        node.body = _with_tick(node.body, node)
        return node

    def visit_While(self, node: ast.While) -> Any:
        node = self.node_contents_visit(node)
        node.body = _with_tick(node.body, node)
        return node

    def visit_ExceptHandler(self, node: ast.ExceptHandler) -> Any:
        handler = super().visit_ExceptHandler(node)
        assert isinstance(handler, ast.ExceptHandler)
        handler.body = _with_tick(handler.body, handler)
        return handler

    # ----------------------------------------------------------------- operators with size caps

    def visit_BinOp(self, node: ast.BinOp) -> Any:
        # An arithmetic tree of names and small numbers runs natively when its names hold
        # plain numbers at run time (see _fastpaths.numeric_tree); its sub-trees are hooked
        # only in the guarded branch.
        tree = None if self._in_numeric_tree else numeric_tree(node)
        if tree is None:
            return self._hooked_binop(node)
        self._in_numeric_tree = True
        try:
            guarded = self._hooked_binop(node)
        finally:
            self._in_numeric_tree = False
        native = unhook(guarded)
        if native is None:
            return guarded
        return choose(tree.test(), native, guarded, node)

    def _hooked_binop(self, node: ast.BinOp) -> Any:
        node = self.node_contents_visit(node)
        hook = _SIZE_HOOKS.get(type(node.op))
        if hook is None:
            return node
        # Both sides literal and small, e.g. "=" * 60: the hook would only slow down a constant.
        literals = isinstance(node.left, ast.Constant) and isinstance(node.right, ast.Constant)
        if literals and _constant_result_is_small(node):
            return node
        new_node = _call(hook, node.left, node.right)
        copy_locations(new_node, node)
        return new_node

    def visit_AugAssign(self, node: ast.AugAssign) -> Any:
        node = self.node_contents_visit(node)
        operator = IOPERATOR_TO_STR[type(node.op)]
        hook_needed = type(node.op) in _SIZE_HOOKS
        if isinstance(node.target, ast.Name):
            if not hook_needed:
                return node
            load = _name(node.target.id)
            value = _call("_inplace_", ast.Constant(operator), load, node.value)
            new_node = ast.Assign(targets=[ast.Name(node.target.id, ast.Store())], value=value)
            copy_locations(new_node, node)
            return new_node
        statements = list(self._augassign_container(node, operator))
        for statement in statements:
            copy_locations(statement, node)
        return statements

    def _augassign_container(self, node: ast.AugAssign, operator: str) -> Iterator[ast.stmt]:
        # obj[key] += v  ->  _t0 = obj; _t1 = key; _write_(_t0)[_t1] = _inplace_('+=', _t0[_t1], v)
        # obj.attr += v  ->  _t0 = obj; _write_(_t0).attr = _inplace_('+=', _getattr_(_t0, 'attr'), v)
        # An operator without a size hook keeps a native form, taken when the write guard
        # would hand _t0 back and the read is native anyway (see _fastpaths.native_augassign).
        target = node.target
        holder = self.gen_tmp_name()
        yield ast.Assign(targets=[ast.Name(holder, ast.Store())], value=_strip_write(target))
        native = None if type(node.op) in _SIZE_HOOKS else native_augassign(node, holder)
        if isinstance(target, ast.Subscript):
            key = self.gen_tmp_name()
            guarded: list[ast.stmt] = [
                ast.Assign(targets=[ast.Name(key, ast.Store())], value=target.slice)
            ]
            current: ast.expr = ast.Subscript(value=_name(holder), slice=_name(key), ctx=ast.Load())
            store: ast.expr = ast.Subscript(
                value=_call("_write_", _name(holder)), slice=_name(key), ctx=ast.Store()
            )
        else:
            assert isinstance(target, ast.Attribute)
            guarded = []
            current = _call("_getattr_", _name(holder), ast.Constant(target.attr))
            store = ast.Attribute(
                value=_call("_write_", _name(holder)), attr=target.attr, ctx=ast.Store()
            )
        value = _call("_inplace_", ast.Constant(operator), current, node.value)
        guarded.append(ast.Assign(targets=[store], value=value))
        if native is None:
            yield from guarded
        else:
            test, statement = native
            yield ast.If(test=test, body=[statement], orelse=guarded)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> Any:
        if (
            self._class_body_depth
            and not self._function_depth
            and isinstance(node.target, ast.Name)
        ):
            # In a class body the annotation is kept: the sandbox's dataclass reads the field
            # names and their order from the class's own __annotations__ (ADR 0049), which
            # generated code itself cannot read (a private name).
            return self.node_contents_visit(node)
        # `x: int = 1` is `x = 1`; a bare `x: int` declares nothing at runtime.
        if node.value is None:
            replacement: ast.stmt = ast.Pass()
            copy_locations(replacement, node)
            return replacement
        assign = ast.Assign(targets=[node.target], value=node.value)
        copy_locations(assign, node)
        return self.visit(assign)

    def visit_FormattedValue(self, node: ast.FormattedValue) -> Any:
        node = self.node_contents_visit(node)
        if node.format_spec is None and node.conversion not in _REPR_CONVERSIONS:
            # f"{x}" of a shared structure builds its text in one C call: estimated first (H10).
            node.value = text_value(node.value, node, self._counters or ())
            return node
        # f"{x:>{width}}" -> f"{_format_(x, conversion, f'>{width}')}" so widths are capped;
        # f"{x!r}" too, so a string's escapes are counted (ADR 0151).
        spec = node.format_spec if node.format_spec is not None else ast.Constant("")
        checked = _call("_format_", node.value, ast.Constant(node.conversion), spec)
        copy_locations(checked, node)
        return ast.FormattedValue(value=checked, conversion=-1, format_spec=None)

    # ----------------------------------------------------------------- match statements

    def visit_Match(self, node: ast.Match) -> Any:
        return self.node_contents_visit(node)

    def visit_match_case(self, node: ast.match_case) -> Any:
        return self.node_contents_visit(node)

    def visit_MatchValue(self, node: ast.MatchValue) -> Any:
        return self.node_contents_visit(node)

    def visit_MatchSingleton(self, node: ast.MatchSingleton) -> Any:
        return self.node_contents_visit(node)

    def visit_MatchSequence(self, node: ast.MatchSequence) -> Any:
        return self.node_contents_visit(node)

    def visit_MatchStar(self, node: ast.MatchStar) -> Any:
        self.check_name(node, node.name)
        return self.node_contents_visit(node)

    def visit_MatchMapping(self, node: ast.MatchMapping) -> Any:
        self.check_name(node, node.rest)
        return self.node_contents_visit(node)

    def visit_MatchAs(self, node: ast.MatchAs) -> Any:
        self.check_name(node, node.name)
        return self.node_contents_visit(node)

    def visit_MatchOr(self, node: ast.MatchOr) -> Any:
        return self.node_contents_visit(node)

    def visit_MatchClass(self, node: ast.MatchClass) -> Any:
        # Keyword sub-patterns read attributes in C, outside _getattr_; refuse them.
        if node.kwd_attrs:
            self.error(
                node,
                "class patterns with keyword attributes are not allowed; match a dict "
                "pattern or use isinstance()",
            )
        return self.node_contents_visit(node)


@dataclass(slots=True)
class _Header:
    """The visited parts of a ``def`` that run in the enclosing scope (see ``_visit_header``)."""

    decorators: list[ast.expr]
    defaults: list[ast.expr]
    kw_defaults: list[ast.expr | None]

    def attach(self, node: ast.FunctionDef) -> None:
        """Put the visited parts back on the (visited) ``def``."""
        node.decorator_list = self.decorators
        node.args.defaults = self.defaults
        node.args.kw_defaults = self.kw_defaults


def _strip_write(target: ast.expr) -> ast.expr:
    """The object part of an already-visited store target, without the _write_ wrapper."""
    assert isinstance(target, ast.Subscript | ast.Attribute)
    value = target.value
    if isinstance(value, ast.IfExp):  # inline fast path of _writable
        value = value.orelse
    if (
        isinstance(value, ast.Call)
        and isinstance(value.func, ast.Name)
        and value.func.id == "_write_"
    ):
        return value.args[0]
    return value


def _constant_result_is_small(node: ast.BinOp) -> bool:
    left, right = node.left, node.right
    assert isinstance(left, ast.Constant) and isinstance(right, ast.Constant)
    if isinstance(node.op, ast.Mult):
        for seq, count in ((left.value, right.value), (right.value, left.value)):
            if isinstance(seq, str | bytes | tuple) and isinstance(count, int):
                return len(seq) * count <= 100_000
        return (
            isinstance(left.value, int | float)
            and isinstance(right.value, int | float)
            and (not isinstance(left.value, int) or abs(left.value) < 2**64)
            and (not isinstance(right.value, int) or abs(right.value) < 2**64)
        )
    if isinstance(node.op, ast.Pow):
        return (
            isinstance(left.value, int | float)
            and isinstance(right.value, int | float)
            and abs(right.value) <= 64
        )
    return False
