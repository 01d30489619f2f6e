"""Sandbox-native versions of standard-library helpers that need the attempt: decimal contexts, attribute getters.

``operator.attrgetter`` and ``operator.methodcaller`` read attributes natively by names the
caller picks, so the sandbox serves versions that read through the attempt's attribute policy
(they can reach nothing generated code could not reach itself). ``decimal`` keeps its current
context in a context variable shared with the host thread, so each run installs a fresh
:class:`SandboxContext` and restores the host's on the way out; its precision and exponent
range are capped because one C call at a large precision runs for minutes (ADR 0048).
"""

from __future__ import annotations

import decimal
from collections.abc import Callable
from typing import Any

from recurgent._sandbox._decimal_operands import checked_context_method
from recurgent._sandbox._limits import SizeLimitExceeded
from recurgent._sandbox._numbers import MAX_EXPONENT
from recurgent._sandbox._reflection import SealedCallable

__all__ = [
    "MAX_DECIMAL_PRECISION",
    "SandboxContext",
    "decimal_overrides",
    "fresh_sandbox_context",
    "make_attrgetter",
    "make_methodcaller",
    "sandbox_decimal_context",
]

#: ``ln``/``exp`` at precision 1,000 take about 0.1 s; at 5,000 several seconds, in one C call.
MAX_DECIMAL_PRECISION = 1000
# The attempt's exponent range (ADR 0022): a program may narrow it, never widen it.
_MAX_EXPONENT = MAX_EXPONENT


def _check_settings(prec: Any, emax: Any, emin: Any) -> None:
    if isinstance(prec, int) and prec > MAX_DECIMAL_PRECISION:
        raise SizeLimitExceeded(
            f"decimal precision {prec} exceeds the sandbox limit of {MAX_DECIMAL_PRECISION}"
        )
    if isinstance(emax, int) and emax > _MAX_EXPONENT:
        raise SizeLimitExceeded(f"decimal Emax {emax} exceeds the sandbox limit of {_MAX_EXPONENT}")
    if isinstance(emin, int) and emin < -_MAX_EXPONENT:
        raise SizeLimitExceeded(
            f"decimal Emin {emin} exceeds the sandbox limit of {-_MAX_EXPONENT}"
        )


class SandboxContext(decimal.Context):
    """``decimal.Context`` with precision and exponent range capped, writable by the program."""

    def __init__(
        self,
        prec: Any = None,
        rounding: Any = None,
        Emin: Any = None,
        Emax: Any = None,
        capitals: Any = None,
        clamp: Any = None,
        flags: Any = None,
        traps: Any = None,
    ) -> None:
        _check_settings(prec, Emax, Emin)
        # Unset bounds are the attempt's range, not the (wider) process default.
        Emin = -_MAX_EXPONENT if Emin is None else Emin
        Emax = _MAX_EXPONENT if Emax is None else Emax
        super().__init__(prec, rounding, Emin, Emax, capitals, clamp, flags, traps)
        # Defaults come from decimal.DefaultContext, which the host may have widened.
        _check_settings(self.prec, self.Emax, self.Emin)

    def __setattr__(self, name: str, value: Any) -> None:
        _check_settings(
            value if name == "prec" else None,
            value if name == "Emax" else None,
            value if name == "Emin" else None,
        )
        super().__setattr__(name, value)

    def copy(self) -> SandboxContext:
        """A capped copy (``decimal.Context.copy`` would return an uncapped base context)."""
        return _capped(self)

    def __reduce__(self) -> Any:
        raise TypeError("decimal contexts cannot be copied or pickled in the sandbox; use .copy()")


# Every operation of the context converts int operands and builds plain Decimals: each is
# checked and answers checked Decimals (ADR 0129).
_CONTEXT_BOOKKEEPING = frozenset({"copy", "clear_flags", "clear_traps", "Etiny", "Etop"})
for _name, _attribute in vars(decimal.Context).items():
    if not _name.startswith("_") and callable(_attribute) and _name not in _CONTEXT_BOOKKEEPING:
        setattr(SandboxContext, _name, checked_context_method(_name))

SandboxContext.__module__ = "decimal"
SandboxContext.__qualname__ = SandboxContext.__name__ = "Context"


def _capped(context: decimal.Context) -> SandboxContext:
    return SandboxContext(
        prec=context.prec,
        rounding=context.rounding,
        Emin=context.Emin,
        Emax=context.Emax,
        capitals=context.capitals,
        clamp=context.clamp,
        flags=[signal for signal, on in context.flags.items() if on],
        traps=[signal for signal, on in context.traps.items() if on],
    )


_TRAPPED = (decimal.InvalidOperation, decimal.DivisionByZero, decimal.Overflow)


def fresh_sandbox_context() -> SandboxContext:
    """The decimal context every attempt starts with (a batch's items too, ADR 0124).

    The same start as the attempt's checked context (_numbers): Python's defaults with the
    exponent range capped and overflow trapped. Built as ``SandboxContext(prec=28,
    Emin=-MAX_EXPONENT, Emax=MAX_EXPONENT, traps=...)`` would build it, without re-checking
    settings that are within the caps by construction (the other fields are the default
    context's, as the constructor's are).
    """
    context = SandboxContext.__new__(SandboxContext)
    decimal.Context.__init__(
        context, 28, None, -MAX_EXPONENT, MAX_EXPONENT, None, None, None, list(_TRAPPED)
    )
    return context


class sandbox_decimal_context:
    """Run a program under a fresh :class:`SandboxContext`; restore the host's context after.

    Restoring sets the saved context back explicitly, so a program that switched contexts in
    a generator it never finished leaves nothing behind.
    """

    __slots__ = ("_saved",)

    def __enter__(self) -> SandboxContext:
        self._saved = decimal.getcontext()
        context = fresh_sandbox_context()
        decimal.setcontext(context)
        return context

    def __exit__(self, *exc: object) -> None:
        decimal.setcontext(self._saved)


def _current() -> SandboxContext:
    context = decimal.getcontext()
    if type(context) is not SandboxContext:
        # Generated code called outside a run (a function kept by the host): the current
        # context is the host's, which the program must not change.
        raise RuntimeError("the decimal context is only available while the program runs")
    return context


def _getcontext() -> SandboxContext:
    return _current()


def _setcontext(context: Any) -> None:
    _current()
    if not isinstance(context, decimal.Context):
        raise TypeError("setcontext() argument must be a decimal.Context")
    decimal.setcontext(context if type(context) is SandboxContext else _capped(context))


class _LocalContext:
    """``decimal.localcontext()`` on sandbox contexts."""

    # No _sandbox_public_: type() of it is sealed, so the program cannot build one around
    # a context of its own choosing.
    __slots__ = ("_context", "_saved")

    def __init__(self, context: SandboxContext) -> None:
        self._context = context

    def __enter__(self) -> SandboxContext:
        self._saved = _current()
        decimal.setcontext(self._context)
        return self._context

    def __exit__(self, *exc: object) -> None:
        decimal.setcontext(self._saved)


def _localcontext(ctx: Any = None, **kwargs: Any) -> _LocalContext:
    base = _current() if ctx is None else ctx
    if not isinstance(base, decimal.Context):
        raise TypeError("localcontext() argument must be a decimal.Context")
    local = _capped(base)
    for name, value in kwargs.items():
        if name not in ("prec", "rounding", "Emin", "Emax", "capitals", "clamp", "flags", "traps"):
            raise TypeError(f"'{name}' is an invalid keyword argument for this function")
        setattr(local, name, value)
    return _LocalContext(local)


def decimal_overrides() -> dict[str, Any]:
    """The ``decimal`` context API on the attempt's own context."""
    return {
        "Context": SandboxContext,
        "getcontext": _getcontext,
        "setcontext": _setcontext,
        "localcontext": _localcontext,
    }


# ----------------------------------------------------------------------------- operator


def _names_of(function: str, names: tuple[Any, ...]) -> list[tuple[str, ...]]:
    for name in names:
        if not isinstance(name, str):
            raise TypeError(f"{function}() attribute name must be a string")
    return [tuple(name.split(".")) for name in names]


def make_attrgetter(read: Callable[[Any, str], Any]) -> Callable[..., Any]:
    """``operator.attrgetter`` whose reads go through ``read`` (the attempt's policy)."""

    def follow(obj: Any, path: tuple[str, ...]) -> Any:
        for part in path:
            obj = read(obj, part)
        return obj

    def attrgetter(attr: Any, /, *attrs: Any) -> SealedCallable:
        paths = _names_of("attrgetter", (attr, *attrs))
        if len(paths) == 1:
            path = paths[0]

            def get_one(obj: Any, /) -> Any:
                return follow(obj, path)

            return SealedCallable(get_one, "attrgetter")

        def get_all(obj: Any, /) -> tuple[Any, ...]:
            return tuple(follow(obj, path) for path in paths)

        return SealedCallable(get_all, "attrgetter")

    return attrgetter


def make_methodcaller(read: Callable[[Any, str], Any]) -> Callable[..., Any]:
    """``operator.methodcaller`` whose method lookup goes through ``read``."""

    def methodcaller(name: Any, /, *args: Any, **kwargs: Any) -> SealedCallable:
        if not isinstance(name, str):
            raise TypeError("method name must be a string")

        def call(obj: Any, /) -> Any:
            return read(obj, name)(*args, **kwargs)

        return SealedCallable(call, "methodcaller")

    return methodcaller
