"""Inline fast paths of the sandbox policy: each pairs a native form with the guarded form it skips.

Every fast path compiles to ``<native> if <test> else <guarded>`` (or the statement form). The
test holds only for values on which the guard would do exactly what the native code does, so
both branches agree; anything else takes the guarded form. A test reads only names the
sandbox binds (``_type_``, ``_OPEN_``, ...): generated code cannot rebind a name starting with
``_``, so shadowing ``type``, ``int`` or ``isinstance`` never switches a test off.
"""

from __future__ import annotations

import ast
import copy
from collections.abc import Iterable
from dataclasses import dataclass

from RestrictedPython.transformer import copy_locations

from recurgent._scopes import SCOPES

__all__ = [
    "COMPACT_INT",
    "MAX_TREE_LEAVES",
    "SPECIAL_ATTRIBUTES",
    "NumericTree",
    "attribute_read",
    "attribute_store",
    "call",
    "choose",
    "has_method_call",
    "item_store",
    "method_call",
    "name",
    "native_augassign",
    "numeric_tree",
    "range_counter",
    "rebinds",
    "text_call",
    "text_value",
    "unhook",
]

#: Bound of the ints a multiplying tree computes natively. A tree of at most
#: :data:`MAX_TREE_LEAVES` such leaves stays below 2**992 in magnitude (about a thousand bits,
#: far under the sandbox's integer cap), so the size hooks could never fire on it.
COMPACT_INT = 2**30 - 1
MAX_TREE_LEAVES = 32

# Attribute names that never take the read fast path because the guard answers them
# differently on plain types: str.format* would walk attributes of its arguments, the rest can
# build huge values in one C call (or, for seek, let the next write pad up to any size).
SPECIAL_ATTRIBUTES = frozenset(
    {
        "format",
        "format_map",
        "ljust",
        "rjust",
        "center",
        "zfill",
        "expandtabs",
        "replace",
        "join",
        "translate",
        "encode",
        "decode",
        "hex",
        "mro",
        "fromkeys",
        "to_bytes",
        "from_bytes",
        "shuffle",
        "sub",
        "subn",
        "expand",
        "elements",
        "seek",
        "getrandbits",
        "randbytes",
        "choices",
        "sample",
        "strptime",
    }
)

_TREE_OPERATORS = (ast.Add, ast.Sub, ast.Mult, ast.Mod, ast.FloorDiv, ast.Div)
_HOOKED_OPERATORS = (ast.Mult, ast.Mod)
# The size hooks a numeric tree may contain once visited, and the operator each stands for.
_HOOK_OPERATOR: dict[str, type[ast.operator]] = {"_mul_": ast.Mult, "_mod_": ast.Mod}


def name(identifier: str) -> ast.Name:
    """A loaded name."""
    return ast.Name(identifier, ast.Load())


def call(function: str, *args: ast.expr) -> ast.Call:
    """``function(*args)`` for a name the sandbox binds."""
    return ast.Call(func=name(function), args=list(args), keywords=[])


def _type_of(value: ast.expr) -> ast.expr:
    return call("_type_", value)


def _type_in(receiver: str, types: str) -> ast.expr:
    return ast.Compare(left=_type_of(name(receiver)), ops=[ast.In()], comparators=[name(types)])


def _readable_test(receiver: str) -> ast.expr:
    # Plain value types, the code's classes and module facades: the attribute guard would
    # return what a native read of a public name returns.
    return _type_in(receiver, "_OPEN_")


def _mutable_test(receiver: str) -> ast.expr:
    # The write guard would hand back x itself.
    return _type_in(receiver, "_MUTABLE_")


def _own_instance_test(receiver: str) -> ast.expr:
    # x is an instance of a class the code made: the attribute guard reads it natively and
    # the write guard hands it back.
    return ast.Compare(
        left=_type_of(_type_of(name(receiver))),
        ops=[ast.Is()],
        comparators=[name("_SANDBOX_TYPE_")],
    )


def choose(test: ast.expr, native: ast.expr, guarded: ast.expr, anchor: ast.AST) -> ast.IfExp:
    """``native if test else guarded``, located at ``anchor``.

    Its new inner nodes get their locations when ``wrap_in_main`` fixes the whole module.
    """
    chosen = ast.IfExp(test=test, body=native, orelse=guarded)
    copy_locations(chosen, anchor)  # type: ignore[arg-type]
    return chosen


def _guarded_call_args(node: ast.expr, hook: str) -> list[ast.expr] | None:
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == hook:
        return node.args
    return None


# ----------------------------------------------------------------------------- attributes and items


def attribute_read(guarded: ast.expr, anchor: ast.Attribute) -> ast.expr:
    """``x.a``: ``(x.a if _type_(x) in _OPEN_ else _getattr_(x, 'a'))``.

    ``guarded`` is the visited read, ``_getattr_(x, 'a')``. Reads of other receivers than a
    name, of private names and of :data:`SPECIAL_ATTRIBUTES` stay guarded.
    """
    args = _guarded_call_args(guarded, "_getattr_")
    if (
        args is None
        or not isinstance(args[0], ast.Name)
        or anchor.attr.startswith("_")
        or anchor.attr in SPECIAL_ATTRIBUTES
    ):
        return guarded
    receiver = args[0].id
    native = ast.Attribute(value=name(receiver), attr=anchor.attr, ctx=ast.Load())
    return choose(_readable_test(receiver), native, guarded, anchor)


def _fast_read(node: ast.expr) -> tuple[ast.expr, ast.Attribute, ast.expr] | None:
    if (
        isinstance(node, ast.IfExp)
        and isinstance(node.body, ast.Attribute)
        and _guarded_call_args(node.orelse, "_getattr_") is not None
    ):
        return node.test, node.body, node.orelse
    return None


def has_method_call(node: ast.Call) -> bool:
    """True when the arguments of ``node`` (before visiting) contain a ``something.m(...)``."""
    return any(
        isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute)
        for argument in (*node.args, *node.keywords)
        for inner in ast.walk(argument)
    )


def method_call(visited: ast.expr, anchor: ast.Call) -> ast.expr:
    """``x.m(args)`` on the read fast path keeps its native method call (no bound method).

    ``(x.m(args) if <x readable> else _getattr_(x, 'm')(args))``: the arguments appear in both
    branches, so the policy calls this only for calls whose arguments hold no further method
    call (:func:`has_method_call`), and the code grows at most twofold.
    """
    if not isinstance(visited, ast.Call):
        return visited
    read = _fast_read(visited.func)
    if read is None:
        return visited
    test, native_read, guarded_read = read
    native = ast.Call(func=native_read, args=visited.args, keywords=visited.keywords)
    guarded = ast.Call(
        func=guarded_read,
        args=copy.deepcopy(visited.args),
        keywords=copy.deepcopy(visited.keywords),
    )
    return choose(test, native, guarded, anchor)


def rebinds(tree: ast.AST, identifier: str) -> bool:
    """Whether the program binds ``identifier`` anywhere (assignment, definition, parameter,
    import, ``global``/``nonlocal``, deletion)."""
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Name)
            and node.id == identifier
            and not isinstance(node.ctx, ast.Load)
        ):
            return True
        if (
            isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef)
            and node.name == identifier
        ):
            return True
        if isinstance(node, ast.arg) and node.arg == identifier:
            return True
        if isinstance(node, ast.alias) and (node.asname or node.name) == identifier:
            return True
        if isinstance(node, ast.Global | ast.Nonlocal) and identifier in node.names:
            return True
        if (
            isinstance(node, ast.ExceptHandler | ast.MatchAs | ast.MatchStar)
            and getattr(node, "name", None) == identifier
        ):
            return True
    return False


def range_counter(loop: ast.For) -> str | None:
    """The name of ``for i in range(...)`` when nothing else in the loop's body binds it (in
    the same scope): while the body runs, it holds an int."""
    target, source = loop.target, loop.iter
    if not (
        isinstance(target, ast.Name)
        and isinstance(source, ast.Call)
        and isinstance(source.func, ast.Name)
        and source.func.id == "range"
    ):
        return None
    pending: list[ast.AST] = [*loop.body]
    while pending:
        node = pending.pop()
        if isinstance(node, SCOPES):
            continue  # a nested scope binds its own names
        if rebinds(node, target.id) and not isinstance(
            node, ast.For | ast.While | ast.If | ast.With | ast.Try
        ):
            return None
        if (
            isinstance(node, ast.For)
            and isinstance(node.target, ast.AST)
            and rebinds(node.target, target.id)
        ):
            return None
        pending.extend(ast.iter_child_nodes(node))
    return target.id


def text_value(value: ast.expr, anchor: ast.AST, counters: Iterable[str] = ()) -> ast.expr:
    """The value an f-string converts: ``x`` if its text cannot expand, else ``_text_(x)``,
    which refuses a structure whose text passes the item cap (red-team H10)."""
    if isinstance(value, ast.Constant):
        return value
    if isinstance(value, ast.Name) and value.id in counters:
        return value
    if isinstance(value, ast.Name):
        return choose(
            _type_in(value.id, "_PLAIN_TEXT_"), name(value.id), call("_text_", value), anchor
        )
    return call("_text_", value)


def text_call(visited: ast.Call, anchor: ast.AST, counters: Iterable[str] = ()) -> ast.expr:
    """``str(x)``: native when ``x`` is a plain scalar, else ``_str_(str, x)``, which caps the
    builtin's text of a structure (red-team H10) and calls whatever ``str`` names otherwise.
    A ``range()`` counter (``counters``) is an int: its call stays native, unchecked. Any
    other form with arguments (``str(*parts)``, ``str(object=x)``) is ``_str_spread_(str,
    ...)``, capped the same way once its arguments are known."""
    func, args = visited.func, visited.args
    if not isinstance(func, ast.Name) or func.id != "str" or not (args or visited.keywords):
        return visited
    if len(args) != 1 or visited.keywords or isinstance(args[0], ast.Starred):
        # ``str(*parts)``, ``str(object=x)``, ``str(data, "utf-8")``: the same cap, checked once
        # the arguments are known (red team R22; ``f = str; f(x)`` is ADR 0092's gap).
        spread = ast.Call(
            func=name("_str_spread_"), args=[name("str"), *args], keywords=visited.keywords
        )
        copy_locations(spread, anchor)  # type: ignore[arg-type]
        return spread
    if isinstance(args[0], ast.Name) and args[0].id in counters:
        return visited
    checked = call("_str_", name("str"), args[0])
    # Placed where the call was: a lambda's tick takes its body's location (red team R20:
    # ``lambda: str(12)`` failed to compile, reported as a provider error).
    copy_locations(checked, anchor)  # type: ignore[arg-type]
    if not isinstance(args[0], ast.Name):
        return checked
    return choose(_type_in(args[0].id, "_PLAIN_TEXT_"), visited, checked, anchor)


def item_store(container: ast.expr, anchor: ast.AST) -> ast.expr:
    """The object of ``c[k] = v``: ``(c if _type_(c) in _MUTABLE_ else _write_(c))``."""
    guarded = call("_write_", container)
    copy_locations(guarded, anchor)  # type: ignore[arg-type]
    if not isinstance(container, ast.Name):
        return guarded
    return choose(_mutable_test(container.id), name(container.id), guarded, anchor)


def attribute_store(target: ast.Attribute) -> ast.Attribute:
    """``x.a = v``: ``(x if <x is an instance of a class the code made> else _write_(x)).a = v``.

    ``target`` is the visited store target, ``_write_(x).a``.
    """
    args = _guarded_call_args(target.value, "_write_")
    if args is not None and isinstance(args[0], ast.Name):
        receiver = args[0].id
        target.value = choose(_own_instance_test(receiver), name(receiver), target.value, target)
    return target


def native_augassign(node: ast.AugAssign, holder: str) -> tuple[ast.expr, ast.stmt] | None:
    """``(test, holder[key] op= v)`` or ``(test, holder.attr op= v)``; ``None`` if guarded only.

    ``node`` is the visited statement, its operator one without a size hook; ``holder`` names
    the object of its target. Items: the write guard hands back the exact containers of
    ``_MUTABLE_``, and item reads are native. Attributes: both guards pass instances of classes
    the code made through, except for :data:`SPECIAL_ATTRIBUTES` (a str subclass's ``join``).
    """
    target = node.target
    if isinstance(target, ast.Subscript):
        test = _mutable_test(holder)
        store: ast.Subscript | ast.Attribute = ast.Subscript(
            value=name(holder), slice=copy.deepcopy(target.slice), ctx=ast.Store()
        )
    elif isinstance(target, ast.Attribute) and target.attr not in SPECIAL_ATTRIBUTES:
        test = _own_instance_test(holder)
        store = ast.Attribute(value=name(holder), attr=target.attr, ctx=ast.Store())
    else:
        return None
    return test, ast.AugAssign(target=store, op=node.op, value=copy.deepcopy(node.value))


# ----------------------------------------------------------------------------- numeric trees


@dataclass(frozen=True, slots=True)
class NumericTree:
    """An arithmetic tree of names and small numbers that may run natively.

    Attributes:
        names: The names it reads, in evaluation order, each once.
        multiplies: Whether it contains ``*`` (then ints must be compact, see
            :data:`COMPACT_INT`).
    """

    names: tuple[str, ...]
    multiplies: bool

    def test(self) -> ast.expr:
        """True when every name holds a value on which the hooks return the native result.

        With ``*``: an exact ``int`` within :data:`COMPACT_INT`, or an exact ``float``. Without:
        any exact ``int`` or ``float``, since the only hook left is ``%``, which computes
        natively when its left operand is one.
        """
        tests = [self._name_test(identifier) for identifier in self.names]
        return tests[0] if len(tests) == 1 else ast.BoolOp(op=ast.And(), values=tests)

    def _name_test(self, identifier: str) -> ast.expr:
        if not self.multiplies:
            return _type_in(identifier, "_NUMERIC_")
        is_int = ast.Compare(
            left=_type_of(name(identifier)), ops=[ast.Is()], comparators=[name("_INT_")]
        )
        compact = ast.Compare(
            left=ast.Constant(-COMPACT_INT),
            ops=[ast.LtE(), ast.LtE()],
            comparators=[name(identifier), ast.Constant(COMPACT_INT)],
        )
        is_float = ast.Compare(
            left=_type_of(name(identifier)), ops=[ast.Is()], comparators=[name("_FLOAT_")]
        )
        small_int = ast.BoolOp(op=ast.And(), values=[is_int, compact])
        return ast.BoolOp(op=ast.Or(), values=[small_int, is_float])


def numeric_tree(node: ast.BinOp) -> NumericTree | None:
    """The tree rooted at ``node`` if it qualifies for a native fast path, else ``None``.

    It qualifies when it uses only ``+ - * / // %`` and unary ``+``/``-``, contains a hooked
    operator (``*`` or ``%``), reads at least one name, and its at most
    :data:`MAX_TREE_LEAVES` leaves are loaded names, exact ints within :data:`COMPACT_INT` or
    exact floats.
    """
    names: list[str] = []
    leaves = 0
    hooked = multiplies = False
    pending: list[ast.expr] = [node]
    while pending:
        current = pending.pop()
        if isinstance(current, ast.BinOp):
            if not isinstance(current.op, _TREE_OPERATORS):
                return None
            hooked = hooked or isinstance(current.op, _HOOKED_OPERATORS)
            multiplies = multiplies or isinstance(current.op, ast.Mult)
            pending += (current.right, current.left)  # left is evaluated (and popped) first
            continue
        if isinstance(current, ast.UnaryOp) and isinstance(current.op, ast.USub | ast.UAdd):
            pending.append(current.operand)
            continue
        leaves += 1
        if leaves > MAX_TREE_LEAVES:
            return None
        if isinstance(current, ast.Name) and isinstance(current.ctx, ast.Load):
            if current.id not in names:
                names.append(current.id)
        elif not (isinstance(current, ast.Constant) and _small_number(current.value)):
            return None
    if not (hooked and names):
        return None
    return NumericTree(tuple(names), multiplies)


def _small_number(value: object) -> bool:
    if type(value) is float:
        return True
    return type(value) is int and -COMPACT_INT <= value <= COMPACT_INT


def unhook(guarded: ast.expr) -> ast.expr | None:
    """The native form of a visited numeric tree: every size hook back to its operator.

    Returns ``None`` when the visited tree holds anything besides operators, names and numbers
    (RestrictedPython rewrites a few names, ``print`` among them).
    """
    if isinstance(guarded, ast.Call):
        function = guarded.func
        if not (
            isinstance(function, ast.Name)
            and function.id in _HOOK_OPERATOR
            and len(guarded.args) == 2
            and not guarded.keywords
        ):
            return None
        left, right = unhook(guarded.args[0]), unhook(guarded.args[1])
        if left is None or right is None:
            return None
        return ast.BinOp(left=left, op=_HOOK_OPERATOR[function.id](), right=right)
    if isinstance(guarded, ast.BinOp):
        left, right = unhook(guarded.left), unhook(guarded.right)
        if left is None or right is None:
            return None
        return ast.BinOp(left=left, op=copy.copy(guarded.op), right=right)
    if isinstance(guarded, ast.UnaryOp):
        operand = unhook(guarded.operand)
        return None if operand is None else ast.UnaryOp(op=copy.copy(guarded.op), operand=operand)
    if isinstance(guarded, ast.Name | ast.Constant):
        return copy.copy(guarded)
    return None
