"""``typing``'s subscriptable forms behind the gate: exact parameters in (ADR 0091).

``typing.List[...]``, ``Optional[...]``, ``Literal[...]``, ``Annotated[...]`` and the other
subscriptable forms keep their parameters in ``typing``'s process-wide ``lru_cache``: a program's
``str`` subclass with its own ``__hash__`` and ``__eq__`` in ``Literal[...]`` (or as a forward
reference in ``List[...]``) would answer the host's later lookups with program code. The typing
facade serves each such form as a :class:`TypingForm`, whose subscription passes its parameters
through the gate (exact built-in values) and refuses instances of the program's classes (only
the program's classes themselves, compared by identity, may be parameters). What a subscription
returns is ``typing``'s own alias, itself a form when it can be subscribed again.
"""

from __future__ import annotations

import types
import typing
from typing import Any

from recurgent._sandbox._gate import exact
from recurgent._sandbox._made import SandboxType

__all__ = ["TypingForm", "as_form", "unwrap_form"]

# typing's subscriptable forms (private classes of the module, looked up by name).
_FORM_TYPES: tuple[type, ...] = tuple(
    kind
    for kind in (getattr(typing, "_SpecialForm", None), getattr(typing, "_BaseGenericAlias", None))
    if isinstance(kind, type)
)
# Generic and Protocol too: Generic[T] keys typing's cache on its parameters (ADR 0104).
_FORM_CLASSES = frozenset({typing.Annotated, typing.Generic, typing.Protocol})


class TypingForm:
    """A subscriptable ``typing`` form as generated code holds it."""

    __slots__ = ("_form",)

    def __init__(self, form: Any) -> None:
        self._form = form

    # What the gate hands library code (typing.get_args(List[int]) reads the real alias).
    @staticmethod
    def __typing_form__(value: Any) -> Any:
        return unwrap_form(value)

    def __getitem__(self, parameters: Any) -> Any:
        return as_form(self._form[_parameters(parameters)])

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._form(*args, **kwargs)

    def __instancecheck__(self, instance: Any) -> bool:
        return isinstance(instance, self._form)

    def __subclasscheck__(self, subclass: Any) -> bool:
        return issubclass(subclass, self._form)

    def __mro_entries__(self, bases: tuple[Any, ...]) -> tuple[Any, ...]:
        entries = getattr(self._form, "__mro_entries__", None)
        return (self._form,) if entries is None else tuple(entries(bases))

    def __or__(self, other: Any) -> Any:
        return as_form(self._form | unwrap_form(other))

    def __ror__(self, other: Any) -> Any:
        return as_form(unwrap_form(other) | self._form)

    def __eq__(self, other: object) -> bool:
        return bool(self._form == unwrap_form(other))

    def __hash__(self) -> int:
        return hash(self._form)

    def __repr__(self) -> str:
        return repr(self._form)


def as_form(value: Any) -> Any:
    """``value`` as generated code gets it: a subscriptable typing form wrapped, else as is."""
    if isinstance(value, _FORM_TYPES) or any(value is form for form in _FORM_CLASSES):
        return TypingForm(value)
    return value


def unwrap_form(value: Any) -> Any:
    """The typing form a :class:`TypingForm` stands for, or ``value`` itself."""
    return value._form if type(value) is TypingForm else value


def _parameters(parameters: Any) -> Any:
    if type(parameters) is tuple:
        return tuple(_parameter(item) for item in parameters)
    return _parameter(parameters)


def _parameter(value: Any) -> Any:
    value = unwrap_form(exact(value))
    kind = type(value)
    if kind is list:
        return [_parameter(item) for item in value]  # Callable[[int, str], bool]
    if kind is tuple:
        return tuple(_parameter(item) for item in value)
    if isinstance(kind, SandboxType) and not isinstance(value, types.FunctionType):
        raise TypeError(
            "typing parameters in the sandbox are types, strings, numbers, None and typing "
            f"forms, not instances of your classes ({kind.__name__})"
        )
    return value
