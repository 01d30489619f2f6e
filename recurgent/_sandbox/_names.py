"""The names generated code may use beyond RestrictedPython's defaults (ADR 0011, 0044).

Dunder methods a generated class may define, dunder attributes it may read (through the guard),
the underscore API of namedtuples, and the single-underscore private names of its own objects.
The compile policy (``_policy``) lets these through; the attribute policy (``_guards``) decides
per object at run time.
"""

from __future__ import annotations

import re

__all__ = [
    "ALLOWED_DUNDER_METHODS",
    "NAMEDTUPLE_ATTRIBUTES",
    "READABLE_DUNDER_ATTRIBUTES",
    "is_private_name",
]

# Dunder methods generated classes may define. Excluded on purpose: attribute hooks
# (__getattr__, __getattribute__, __setattr__, __delattr__), descriptors (__get__, __set__),
# class-creation hooks (__init_subclass__, __class_getitem__, __set_name__), __del__ (would run
# outside the deadline) and pickling hooks.
ALLOWED_DUNDER_METHODS = frozenset(
    {
        "__init__",
        "__post_init__",  # called by the sandbox's dataclass __init__ (ADR 0049)
        "__repr__",
        "__str__",
        "__eq__",
        "__ne__",
        "__lt__",
        "__le__",
        "__gt__",
        "__ge__",
        "__hash__",
        "__len__",
        "__bool__",
        "__contains__",
        "__iter__",
        "__next__",
        "__getitem__",
        "__setitem__",
        "__delitem__",
        "__add__",
        "__radd__",
        "__sub__",
        "__rsub__",
        "__mul__",
        "__rmul__",
        "__truediv__",
        "__floordiv__",
        "__mod__",
        "__neg__",
        "__abs__",
        "__enter__",
        "__exit__",
        "__call__",
        "__iadd__",
    }
)

# Dunder attributes generated code may read (through the guard, never natively). The guard
# decides per object: names of classes, functions, methods and generators (ADR 0147), the class
# of anything (sealed for host classes), docstrings, and a copy of the attribute dict of objects
# the program made.
READABLE_DUNDER_ATTRIBUTES = frozenset(
    {"__name__", "__qualname__", "__class__", "__doc__", "__dict__"}
)

# A single-underscore name (`_items`, `_helper`) that is neither a dunder nor ends with `_`.
# Every name the policy and RestrictedPython emit either ends with `_` (`_getattr_`, `_OPEN_`)
# or is one of the reserved ones below, so allowing these cannot rebind a guard.
_PRIVATE_NAME = re.compile(r"_[A-Za-z0-9](?:[A-Za-z0-9_]*[A-Za-z0-9])?\Z")
_RESERVED_PRIVATE = re.compile(r"_tmp[0-9]+\Z|_print\Z")


def is_private_name(name: str) -> bool:
    """True for a single-underscore name generated code may use on its own objects (ADR 0044)."""
    return bool(_PRIVATE_NAME.match(name)) and not _RESERVED_PRIVATE.match(name)


# The underscore API of namedtuples; the guard allows these on namedtuples only.
NAMEDTUPLE_ATTRIBUTES = frozenset({"_asdict", "_replace", "_fields", "_make", "_field_defaults"})
