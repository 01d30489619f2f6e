"""Sandbox-native ``abc`` and checked ``calendar`` text output for generated code.

``abc.ABCMeta`` would make the program's classes outside the sandbox's metaclass, and
``abc.abstractmethod`` writes an attribute on whatever it is given (a host class too), so the
sandbox serves an ``ABC`` base built per attempt by the sandbox's own metaclass, which refuses
to instantiate a class with abstract methods left, and an ``abstractmethod`` that marks only
the program's own functions. ``calendar``'s text functions take widths that build a string of
any size in one call; their stand-ins cap them (ADR 0048).
"""

from __future__ import annotations

import calendar
from collections.abc import Callable
from typing import Any

from recurgent._sandbox._limits import SizeLimitExceeded
from recurgent._sandbox._made import SandboxType, is_sandbox_made

__all__ = ["abstractmethod", "calendar_overrides", "make_abc"]

_MAX_CALENDAR_WIDTH = 100


# ----------------------------------------------------------------------------- abc


def abstractmethod(function: Any) -> Any:
    """``abc.abstractmethod`` for the program's own functions (and their class/static wraps)."""
    inner: Any = function
    if isinstance(function, classmethod | staticmethod):
        inner = function.__func__
    elif isinstance(function, property):
        inner = function.fget
    if not is_sandbox_made(inner):
        raise TypeError("abstractmethod() can only mark functions your code defined")
    if isinstance(function, property):
        # property computes its own flag from fget's.
        inner.__isabstractmethod__ = True
        return function
    function.__isabstractmethod__ = True
    return function


def _abstract_names(cls: type) -> list[str]:
    """Names still abstract on ``cls``: the last definition along the MRO wins, as in ABCMeta."""
    state: dict[str, bool] = {}
    for klass in reversed(cls.__mro__):
        for name, value in vars(klass).items():
            state[name] = getattr(value, "__isabstractmethod__", False) is True
    return sorted(name for name, abstract in state.items() if abstract)


def _abc_new(cls: type, /, *args: Any, **kwargs: Any) -> Any:
    missing = _abstract_names(cls)
    if missing:
        plural = "s" if len(missing) > 1 else ""
        raise TypeError(
            f"Can't instantiate abstract class {cls.__name__} with abstract method{plural} "
            + ", ".join(missing)
        )
    return object.__new__(cls)


def make_abc() -> dict[str, Any]:
    """The ``abc`` names of one attempt: a fresh ``ABC`` (the program may write to its own
    classes, so a shared one would carry state between attempts) and ``abstractmethod``."""
    abc_class = SandboxType(
        "ABC",
        (object,),
        {
            "__new__": _abc_new,
            "__module__": "abc",
            "__qualname__": "ABC",
            "__doc__": "Helper class: derive from it to declare abstract methods.",
        },
    )
    return {"ABC": abc_class}


# ----------------------------------------------------------------------------- calendar


def _check_widths(what: str, *widths: Any) -> None:
    for width in widths:
        if isinstance(width, int) and width > _MAX_CALENDAR_WIDTH:
            raise SizeLimitExceeded(
                f"calendar.{what}() width {width} exceeds the sandbox limit of "
                f"{_MAX_CALENDAR_WIDTH}"
            )


class _CheckedTextCalendar(calendar.TextCalendar):
    """``calendar.TextCalendar`` with column widths and line spacing capped."""

    def formatday(self, day: int, weekday: int, width: int) -> str:
        _check_widths("formatday", width)
        return super().formatday(day, weekday, width)

    def formatweekday(self, day: int, width: int) -> str:
        _check_widths("formatweekday", width)
        return super().formatweekday(day, width)

    def formatmonthname(
        self, theyear: int, themonth: int, width: int, withyear: bool = True
    ) -> str:
        _check_widths("formatmonthname", width)
        return super().formatmonthname(theyear, themonth, width, withyear)

    def formatmonth(self, theyear: int, themonth: int, w: int = 0, l: int = 0) -> str:  # noqa: E741
        _check_widths("formatmonth", w, l)
        return super().formatmonth(theyear, themonth, w, l)

    def formatyear(self, theyear: int, w: int = 2, l: int = 1, c: int = 6, m: int = 3) -> str:  # noqa: E741
        _check_widths("formatyear", w, l, c, m)
        return super().formatyear(theyear, w, l, c, m)


_CheckedTextCalendar.__module__ = "calendar"
_CheckedTextCalendar.__qualname__ = _CheckedTextCalendar.__name__ = "TextCalendar"


def _module_function(name: str) -> Callable[..., Any]:
    def checked(*args: Any, **kwargs: Any) -> Any:
        # A fresh calendar on the module's first weekday, as the real module functions use.
        method = getattr(_CheckedTextCalendar(calendar.firstweekday()), name)
        return method(*args, **kwargs)

    checked.__name__ = name
    return checked


def _formatstring(cols: Any, colwidth: int = 20, spacing: int = 6) -> str:
    _check_widths("formatstring", colwidth, spacing)
    return calendar.formatstring(cols, colwidth, spacing)


def _weekheader(width: int) -> str:
    _check_widths("weekheader", width)
    return calendar.weekheader(width)


def calendar_overrides() -> dict[str, Any]:
    """Checked ``calendar`` text functions and classes."""
    return {
        "TextCalendar": _CheckedTextCalendar,
        "month": _module_function("formatmonth"),
        "calendar": _module_function("formatyear"),
        "week": _module_function("formatweek"),
        "weekheader": _weekheader,
        "formatstring": _formatstring,
    }
