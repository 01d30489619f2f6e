"""What a program does with the role's shared names, read from its syntax tree (ADRs 0083-0084).

The continuity guard and the namespace telemetry compare sibling methods by three families:

* **state keys**: the memory keys a program reads and writes (``context["k"]``,
  ``memory["k"]``, ``context.get("k")``, ``setdefault``/``pop``/``update``, ``remember(k=...)``,
  ``"k" in context``), each with the lifetimes its use suggests (``session`` when appended to,
  ``role`` when read, changed and written back, ``attempt`` for scratch names, ``durable`` for
  the original's durable names). The runtime's own keys (``tools``, ``conversation_history``)
  are not the role's state and are left out. A method's **primary key** is the smallest key it
  writes, else the smallest it reads;
* **signature family**: ``args:<indices>|kwargs:<names>`` from ``args[N]``, unpacking
  ``a, b = args``, ``kwargs["k"]`` and ``kwargs.get("k")`` (``none`` for an empty side);
* **return shape family**: ``hash:<sorted keys>``, ``array``, ``numeric``, ``string``,
  ``boolean``, ``nil`` or a class name, in the original's words, so a profile written for
  either runtime reads the same.

Reading the tree is static: the same code always gives the same shape, so a stored program's
shape is computed once per process (cached by its text) and recorded once per code version.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import dataclass
from decimal import Decimal
from fractions import Fraction
from typing import Any

from recurgent._forksafe import fork_safe_lock
from recurgent._history import HISTORY_KEY
from recurgent._parsing import parse_python
from recurgent._registry import TOOLS_KEY

__all__ = ["KEYS_KEPT", "KEY_CHARS", "ProgramShape", "observe_program", "return_shape"]

_MEMORY_NAMES = frozenset({"context", "memory"})
_RUNTIME_KEYS = frozenset({TOOLS_KEY, HISTORY_KEY})
_DURABLE_KEYS = frozenset({"patterns", "role_profile", "proposals"})
_SCRATCH = re.compile(r"^(tmp|temp|scratch|attempt|working)(_|$)")
_APPENDERS = frozenset({"append", "extend", "insert", "add", "appendleft", "extendleft"})
_WRITERS = frozenset({"setdefault", "pop", "update", "popitem", "clear"})
#: Keys recorded per program, and the longest key recorded.
KEYS_KEPT = 64
KEY_CHARS = 200
_SHAPE_KEYS = 32
_SHAPE_CHARS = 400
_SHAPES_CACHED = 512


@dataclass(frozen=True, slots=True)
class ProgramShape:
    """The families one program's code belongs to.

    Attributes:
        state_keys: Every memory key it uses, sorted.
        written_keys: The keys among them it writes, sorted.
        lifetimes: Each key's lifetimes, as ``(key, (lifetime, ...))`` pairs sorted by key.
        signature: Its signature family.
    """

    state_keys: tuple[str, ...] = ()
    written_keys: tuple[str, ...] = ()
    lifetimes: tuple[tuple[str, tuple[str, ...]], ...] = ()
    signature: str = "args:none|kwargs:none"

    @property
    def primary_key(self) -> str | None:
        """The key the method is known by: its smallest written key, else its smallest key."""
        if self.written_keys:
            return self.written_keys[0]
        return self.state_keys[0] if self.state_keys else None


def _memory_key(node: ast.AST) -> str | None:
    """``k`` for ``context["k"]`` / ``memory["k"]``, else ``None``."""
    if (
        isinstance(node, ast.Subscript)
        and isinstance(node.value, ast.Name)
        and node.value.id in _MEMORY_NAMES
        and isinstance(node.slice, ast.Constant)
        and isinstance(node.slice.value, str)
    ):
        return node.slice.value
    return None


def _memory_method(node: ast.AST) -> tuple[str, str | None] | None:
    """``(method, first str argument)`` for ``context.<method>(...)``."""
    if not (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id in _MEMORY_NAMES
    ):
        return None
    first = node.args[0] if node.args else None
    key = first.value if isinstance(first, ast.Constant) and isinstance(first.value, str) else None
    return node.func.attr, key


class _Keys:
    def __init__(self) -> None:
        self.used: dict[str, set[str]] = {}
        self.written: set[str] = set()

    def use(self, key: str | None, *, written: bool = False, lifetime: str | None = None) -> None:
        if key is None or key in _RUNTIME_KEYS or not key or len(key) > KEY_CHARS:
            return
        if key not in self.used and len(self.used) >= KEYS_KEPT:
            return
        lifetimes = self.used.setdefault(key, set())
        if lifetime is not None:
            lifetimes.add(lifetime)
        if written:
            self.written.add(key)

    def shape(self, signature: str) -> ProgramShape:
        pairs = []
        for key in sorted(self.used):
            found = set(self.used[key])
            if key in _DURABLE_KEYS:
                found.add("durable")
            if _SCRATCH.match(key):
                found.add("attempt")
            pairs.append((key, tuple(sorted(found or {"role"}))))
        return ProgramShape(
            tuple(sorted(self.used)), tuple(sorted(self.written)), tuple(pairs), signature
        )


def _reads(node: ast.AST, key: str) -> bool:
    """Whether the expression ``node`` reads memory key ``key``."""
    for inner in ast.walk(node):
        if _memory_key(inner) == key:
            return True
        found = _memory_method(inner)
        if found is not None and found[1] == key:
            return True
    return False


def _keys_of_update(call: ast.Call) -> Iterable[str | None]:
    for keyword in call.keywords:
        yield keyword.arg
    for argument in call.args:
        if isinstance(argument, ast.Dict):
            for key in argument.keys:
                if isinstance(key, ast.Constant) and isinstance(key.value, str):
                    yield key.value


def _state_keys(tree: ast.AST) -> _Keys:
    keys = _Keys()
    for node in ast.walk(tree):
        key = _memory_key(node)
        if key is not None:
            assert isinstance(node, ast.Subscript)
            keys.use(key, written=not isinstance(node.ctx, ast.Load))
            continue
        if isinstance(node, ast.AugAssign):
            keys.use(_memory_key(node.target), written=True, lifetime="role")
        elif isinstance(node, ast.Assign):
            for target in node.targets:
                written = _memory_key(target)
                if written is not None and _reads(node.value, written):
                    keys.use(written, written=True, lifetime="role")
                # context["k"][i] = v changes the value under k.
                if isinstance(target, ast.Subscript):
                    keys.use(_memory_key(target.value), written=True)
        elif isinstance(node, ast.Call):
            _call_keys(node, keys)
        elif isinstance(node, ast.Compare) and _membership_key(node) is not None:
            keys.use(_membership_key(node))
    return keys


def _membership_key(node: ast.Compare) -> str | None:
    """``k`` for ``"k" in context`` / ``"k" not in memory``."""
    if not any(isinstance(op, ast.In | ast.NotIn) for op in node.ops):
        return None
    if not (isinstance(node.left, ast.Constant) and isinstance(node.left.value, str)):
        return None
    names = (c for c in node.comparators if isinstance(c, ast.Name))
    return node.left.value if any(c.id in _MEMORY_NAMES for c in names) else None


def _call_keys(node: ast.Call, keys: _Keys) -> None:
    found = _memory_method(node)
    if found is not None:
        method, key = found
        if method == "update":
            for name in _keys_of_update(node):
                keys.use(name, written=True)
        else:
            keys.use(key, written=method in _WRITERS)
        return
    if isinstance(node.func, ast.Name) and node.func.id == "remember":
        for name in _keys_of_update(node):
            keys.use(name, written=True)
        return
    if isinstance(node.func, ast.Attribute) and node.func.attr in _APPENDERS:
        holder = node.func.value
        key = _memory_key(holder)
        if key is None:
            inner = _memory_method(holder)
            key = inner[1] if inner is not None and inner[0] in ("setdefault", "get") else None
        keys.use(key, written=True, lifetime="session")


def _signature(tree: ast.AST) -> str:
    indices: set[int] = set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Subscript) and isinstance(node.value, ast.Name):
            index = node.slice
            if not isinstance(index, ast.Constant):
                continue
            if node.value.id == "args" and type(index.value) is int and 0 <= index.value < 64:
                indices.add(index.value)
            elif node.value.id == "kwargs" and isinstance(index.value, str):
                names.add(index.value)
        elif (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "kwargs"
            and node.func.attr in ("get", "pop", "setdefault")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            names.add(node.args[0].value)
        elif (
            isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Name)
            and node.value.id == "args"
        ):
            for target in node.targets:
                if isinstance(target, ast.Tuple | ast.List):
                    for position, element in enumerate(target.elts):
                        if isinstance(element, ast.Starred) or position >= 64:
                            break
                        indices.add(position)
    kept = sorted(name for name in names if 0 < len(name) <= 100)[:32]
    arg_part = ",".join(map(str, sorted(indices))) or "none"
    return f"args:{arg_part}|kwargs:{','.join(kept) or 'none'}"


_SHAPES: dict[str, ProgramShape] = {}
_SHAPES_LOCK = fork_safe_lock()


def observe_program(code: str, tree: ast.AST | None = None) -> ProgramShape:
    """The shape of the program ``code`` (``tree``: its parsed tree, when at hand).

    Cached by the code's text (the same text always has the same shape). Code that does not
    parse has the empty shape.
    """
    shape = _SHAPES.get(code)
    if shape is not None:
        return shape
    if tree is None:
        try:
            tree = parse_python(code, "<observed>")
        except (SyntaxError, ValueError, RecursionError, MemoryError):
            return ProgramShape()
    try:
        shape = _state_keys(tree).shape(_signature(tree))
    except RecursionError:
        return ProgramShape()
    with _SHAPES_LOCK:
        if len(_SHAPES) >= _SHAPES_CACHED:
            _SHAPES.pop(next(iter(_SHAPES)))
        _SHAPES[code] = shape
    return shape


def return_shape(value: Any) -> str:
    """The return shape family of an answer, in the original's words.

    A mapping is ``hash:`` and its sorted keys (``hash:*`` past 32 keys or 400 characters,
    so an answer keyed by data does not make a new family per call).
    """
    kind = type(value)
    if value is None:
        return "nil"
    if kind is bool:
        return "boolean"
    if kind in (int, float, Decimal, Fraction, complex) or isinstance(value, int | float):
        return "numeric"
    if isinstance(value, str):
        return "string"
    if isinstance(value, dict):
        if len(value) > _SHAPE_KEYS:
            return "hash:*"
        text = "hash:" + ",".join(sorted(str(key)[:KEY_CHARS] for key in value))
        return text if len(text) <= _SHAPE_CHARS else "hash:*"
    if isinstance(value, list | tuple):
        return "array"
    return kind.__name__[:KEY_CHARS]
