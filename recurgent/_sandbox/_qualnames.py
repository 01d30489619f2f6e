"""A program's functions and classes are named as in a module (ADR 0145).

A program runs as the body of ``def __recurgent_main__()`` (ADR 0043), so CPython names what it
defines ``__recurgent_main__.<locals>.f``, and its own messages repeat that name
(``__recurgent_main__.<locals>.f() missing 1 required positional argument``), which the model
never wrote. Once, after compiling, the prefix is taken off every qualified name the code
objects carry: a function's comes from its code's ``co_qualname`` when it is made, a class's
from the constant its body stores to ``__qualname__`` first. Only the names change: no
instruction, guard or other constant does.
"""

from __future__ import annotations

import dis
import inspect
import types

from recurgent._sandbox._policy import MAIN_FUNCTION

__all__ = ["module_qualnames"]

_PREFIX = f"{MAIN_FUNCTION}.<locals>."


def _short(qualname: str) -> str:
    return qualname[len(_PREFIX) :] if qualname.startswith(_PREFIX) else qualname


def _class_qualname_index(code: types.CodeType) -> int | None:
    """The index in ``co_consts`` of the name a class body stores to ``__qualname__``.

    ``None`` for any other code: a function's (optimized) body, a body whose first
    ``__qualname__`` store is not of a constant equal to its own ``co_qualname``, or one that
    loads that constant again. CPython merges equal constants of one code object, so a string
    the body itself holds with that very text (``x = '__recurgent_main__.<locals>.A'``, or a
    docstring) is the same entry: renaming it would change the program's string, so the class
    keeps its name (red-team R22).
    """
    if code.co_flags & inspect.CO_OPTIMIZED:
        return None
    previous = None
    stored = None
    for instruction in dis.get_instructions(code):
        if stored is not None:
            if instruction.opname == "LOAD_CONST" and instruction.arg == stored:
                return None
        elif instruction.opname == "STORE_NAME" and instruction.argval == "__qualname__":
            if (
                previous is None
                or previous.opname != "LOAD_CONST"
                or previous.argval != code.co_qualname
                or not isinstance(previous.arg, int)
            ):
                return None
            stored = previous.arg
        previous = instruction
    return stored


def module_qualnames(code: types.CodeType) -> types.CodeType:
    """``code`` with ``__recurgent_main__.<locals>.`` taken off the start of every qualified
    name in it, through every nested code object: a top-level ``def f`` is ``f``, a nested one
    ``f.<locals>.g``, a class ``A`` and its method ``A.m``, as in a module.

    Returns ``code`` itself when nothing in it changes.
    """
    constants = list(code.co_consts)
    changed = False
    for index, constant in enumerate(constants):
        if isinstance(constant, types.CodeType):
            renamed = module_qualnames(constant)
            if renamed is not constant:
                constants[index] = renamed
                changed = True
    stored = _class_qualname_index(code)
    if stored is not None:
        name = constants[stored]
        assert isinstance(name, str)
        if _short(name) != name:
            constants[stored] = _short(name)
            changed = True
    qualname = _short(code.co_qualname)
    if not changed and qualname == code.co_qualname:
        return code
    return code.replace(co_qualname=qualname, co_consts=tuple(constants))
