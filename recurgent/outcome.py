"""Outcome: the typed result of every dynamic call, its constructors, and coercion of raw values.

``Outcome.ok(...)`` and ``Outcome.error(...)`` are constructors when read from the class and real
``bool``s when read from an instance, so ``Outcome.ok(5)``, ``if out.ok:`` and ``out.ok is True``
all work (ADR 0002, 0098). Generated code reads the flags through the sandbox's attribute policy,
which serves an :class:`OutcomeFlag` instead, so ``out.ok()`` keeps working in programs.
``unwrap()`` returns the value or raises the error as its :mod:`recurgent.errors` class; ``code``
and ``call_id`` say which program and which call produced it (ADR 0098).

The bounds of the error fields (:mod:`recurgent._outcome_bounds`) and the context naming the
running call (:mod:`recurgent._outcome_attribution`) have modules of their own (ADR 0059); their
public names are re-exported here.
"""

from __future__ import annotations

from collections.abc import Callable, Generator, Iterator, Mapping
from typing import Any, Generic, Literal, NoReturn, TypeVar, overload

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    field_serializer,
    field_validator,
)
from pydantic_core import PydanticSerializationError

from recurgent._display import ShownAs, describe, display_text
from recurgent._outcome_attribution import (
    UNKNOWN_METHOD as _UNKNOWN_METHOD,
    UNKNOWN_ROLE as _UNKNOWN_ROLE,
    attribution as _attribution,
    outcome_context,
)
from recurgent._outcome_bounds import (
    ERROR_TYPE_RULE as _ERROR_TYPE_RULE,
    MAX_ERROR_MESSAGE_CHARS,
    MAX_ERROR_TYPE_CHARS,
    checked_error_message as _checked_error_message,
    checked_error_type as _checked_error_type,
    cut_error_message as _cut_error_message,
)
from recurgent._values import json_safe, outgrows
from recurgent.errors import InvalidOutcomeError, error_for

__all__ = [
    "MAX_ERROR_MESSAGE_CHARS",
    "MAX_ERROR_TYPE_CHARS",
    "MAX_JSON_DUMP_CHARS",
    "Outcome",
    "OutcomeFlag",
    "coerce_outcome",
    "outcome_context",
]

_OUTCOME_FIELDS = frozenset(
    {
        "status",
        "value",
        "error_type",
        "error_message",
        "retriable",
        "tool_role",
        "method_name",
        "metadata",
        "message",
    }
)
# Keys of a returned mapping the runtime sets itself, never reads (ADR 0059).
_ATTRIBUTION_KEYS = frozenset({"tool_role", "method_name"})
# Keys of an error mapping that are fields, not metadata (``message`` is a common alias).
_ERROR_SPEC_KEYS = (
    "error_type",
    "error_message",
    "message",
    "retriable",
    "tool_role",
    "method_name",
)


class OutcomeFlag:
    """A boolean that can also be called: what generated code reads as ``out.ok``/``out.error``.

    Models write ``if out.ok:`` and ``if out.ok():`` interchangeably; the sandbox serves this
    flag for both (ADR 0098). Host code gets a plain ``bool`` from the instance attribute.
    """

    __slots__ = ("_flag",)

    def __init__(self, flag: bool) -> None:
        self._flag = flag

    def __bool__(self) -> bool:
        return self._flag

    def __call__(self) -> bool:
        return self._flag

    def __eq__(self, other: object) -> bool:
        if isinstance(other, OutcomeFlag):
            return self._flag == other._flag
        if isinstance(other, bool):
            return self._flag == other
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._flag)

    def __repr__(self) -> str:
        return repr(self._flag)


_F = TypeVar("_F", bound=Callable[..., "Outcome"])


class _ConstructorOrFlag(Generic[_F]):
    """Descriptor: the class attribute is a constructor, the instance attribute a ``bool``."""

    def __init__(self, constructor: _F, status: Literal["ok", "error"]) -> None:
        self._constructor = constructor
        self._status = status

    @overload
    def __get__(self, instance: None, owner: type[Any]) -> _F: ...

    @overload
    def __get__(self, instance: Outcome, owner: type[Any]) -> bool: ...

    def __get__(self, instance: Outcome | None, owner: type[Any]) -> _F | bool:
        if instance is None:
            return self._constructor
        return instance.status == self._status


def _build_ok(
    *args: Any,
    value: Any = None,
    tool_role: str | None = None,
    method_name: str | None = None,
    **extra: Any,
) -> Outcome:
    """Build a success Outcome.

    ``ok(5)`` and ``ok(value=5)`` carry 5. Extra keywords join a mapping value
    (``ok({"items": x}, provenance=p)``) or become the value when none was given
    (``ok(items=x, provenance=p)``); next to a non-mapping value they are ignored.
    """
    if len(args) > 1:
        raise TypeError(f"Outcome.ok() takes at most one positional value, got {len(args)}")
    if args and value is None:
        value = args[0]
    if extra:
        if value is None:
            value = dict(extra)
        elif isinstance(value, Mapping):
            value = {**value, **extra}
    role, method = _attribution(tool_role, method_name)
    return Outcome(status="ok", value=value, tool_role=role, method_name=method)


def _as_metadata(value: Any) -> dict[str, Any]:
    """Metadata as a dict: a mapping is copied, any other non-None value is kept as ``detail``."""
    if value is None:
        return {}
    if isinstance(value, Mapping):
        return {str(key): item for key, item in value.items()}
    return {"detail": value}


def _build_error(
    *args: Any,
    error_type: str | None = None,
    error_message: str | None = None,
    retriable: bool | None = None,
    metadata: Mapping[str, Any] | None = None,
    tool_role: str | None = None,
    method_name: str | None = None,
    **extra: Any,
) -> Outcome:
    """Build an error Outcome.

    Accepts keywords, positionals ``error(type, message, retriable)`` or one mapping with those
    keys. Unknown keywords join ``metadata``. ``retriable`` is true only when it is exactly
    ``True``. Missing type and message default to ``execution`` / ``Execution failed``.

    Raises:
        InvalidOutcomeError: ``error_type`` is not a short identifier, or ``error_message`` is
            longer than :data:`MAX_ERROR_MESSAGE_CHARS` (ADR 0059).
    """
    positional: list[Any] = list(args)
    if positional and isinstance(positional[0], Mapping):
        spec = dict(positional.pop(0))
        spec.pop("status", None)
        named = {key: spec.pop(key, None) for key in _ERROR_SPEC_KEYS}
        error_type = error_type or named["error_type"]
        error_message = error_message or named["error_message"] or named["message"]
        retriable = named["retriable"] if retriable is None else retriable
        tool_role = tool_role or named["tool_role"]
        method_name = method_name or named["method_name"]
        metadata = {**_as_metadata(spec.pop("metadata", None)), **spec, **_as_metadata(metadata)}
    if len(positional) > 3:
        raise TypeError("Outcome.error() takes at most (error_type, error_message, retriable)")
    if positional:
        error_type = error_type or positional[0]
    if len(positional) > 1:
        error_message = error_message or positional[1]
    if len(positional) > 2 and retriable is None:
        retriable = positional[2]
    merged = {**_as_metadata(metadata), **extra}
    role, method = _attribution(tool_role, method_name)
    return Outcome(
        status="error",
        error_type=str(error_type) if error_type else "execution",
        error_message=_checked_error_message(str(error_message))
        if error_message
        else "Execution failed",
        retriable=retriable is True,
        tool_role=role,
        method_name=method,
        metadata=merged,
    )


#: The longest JSON text :meth:`Outcome.model_dump_json` writes of a value or metadata (ADR 0142).
MAX_JSON_DUMP_CHARS = 64_000_000


class Outcome(BaseModel):
    """The typed result of a dynamic call: ``ok`` with a value, or ``error`` with a type.

    Attributes:
        status: ``"ok"`` or ``"error"``.
        value: The domain value of an ok outcome (``None`` for errors).
        error_type: A short identifier from the error taxonomy (``docs/outcomes.md``), ``None``
            when ok; any other string raises :class:`InvalidOutcomeError` (ADR 0059).
        error_message: Human-readable reason, ``None`` when ok; one longer than
            :data:`MAX_ERROR_MESSAGE_CHARS` is cut to it with a marker.
        retriable: Whether calling again may succeed.
        tool_role: Role of the agent that produced it.
        method_name: Method that produced it.
        metadata: Extra plain data (guardrail details, contract mismatches, ...).
        code: The source of the program behind the outcome of a dynamic call: the call's last
            attempt, as the log's ``code`` shows it, fresh or reused from the store; ``None``
            when no program was written (the provider failed) and for outcomes built by hand.
        call_id: The id of the dynamic call that returned it (the log line's ``call_id``);
            ``None`` for outcomes built by hand or by generated code.

    ``code`` and ``call_id`` say where an outcome came from, not what it is: equality and the
    hash ignore them (ADR 0098).
    """

    model_config = ConfigDict(
        frozen=True,
        extra="forbid",
        arbitrary_types_allowed=True,
        ignored_types=(_ConstructorOrFlag,),
    )

    status: Literal["ok", "error"]
    value: Any = None
    error_type: str | None = None
    error_message: str | None = None
    retriable: bool = False
    tool_role: str = _UNKNOWN_ROLE
    method_name: str = _UNKNOWN_METHOD
    metadata: dict[str, Any] = Field(default_factory=dict)
    code: str | None = None
    call_id: str | None = None

    ok = _ConstructorOrFlag(_build_ok, "ok")  # type: ignore[pydantic-field]
    error = _ConstructorOrFlag(_build_error, "error")  # type: ignore[pydantic-field]

    @field_validator("error_type")
    @classmethod
    def _short_error_type(cls, error_type: str | None) -> str | None:
        # InvalidOutcomeError is not a ValueError, so pydantic lets it through unwrapped.
        return None if error_type is None else _checked_error_type(error_type)

    @field_validator("error_message")
    @classmethod
    def _bounded_error_message(cls, error_message: str | None) -> str | None:
        return None if error_message is None else _cut_error_message(error_message)

    @field_serializer("value", "metadata", mode="wrap", when_used="json")
    def _dump_json_safely(self, data: Any, handler: SerializerFunctionWrapHandler) -> Any:
        # A value whose parts repeat (a program's answer may be ten megabytes of memory and ten
        # gigabytes of JSON) is refused before a character is written (ADR 0142).
        if outgrows(data, MAX_JSON_DUMP_CHARS, escapes=True):
            raise ValueError(
                f"this outcome's JSON text would be over {MAX_JSON_DUMP_CHARS:,} characters "
                "(a large value, or one whose parts repeat); serialize what you need of outcome.value"
            )
        # A value may be any object (an Agent, bytes that are not UTF-8); a JSON dump renders
        # what pydantic cannot serialize the way the call log does instead of failing.
        try:
            return handler(data)
        except (PydanticSerializationError, ValueError):
            return json_safe(data)

    def __hash__(self) -> int:
        # Equal outcomes agree on these fields; the value and metadata may be unhashable.
        return hash((self.status, self.error_type, self.tool_role, self.method_name))

    def __eq__(self, other: object) -> bool:
        # Two calls that answered the same thing are equal whichever program and call made
        # them: the provenance fields are left out.
        if not isinstance(other, Outcome):
            return NotImplemented
        return all(getattr(self, name) == getattr(other, name) for name in _COMPARED_FIELDS)

    def __await__(self) -> Generator[Any, None, NoReturn]:
        # An Outcome is a finished result: the call already ran (and blocked) when it was made.
        # Awaiting it says where the awaitable form is instead of CPython's bare TypeError.
        raise TypeError(
            f"an Outcome is not awaitable: {self.tool_role}.{self.method_name}(...) already "
            "ran and returned it. To await a call without blocking the event loop, use the "
            "agent's async view: `await agent.aio.method(...)`"
        )

    def unwrap(self) -> Any:
        """The value of an ok outcome; for an error, raise it as an exception.

        The exception is the :mod:`recurgent.errors` class of the ``error_type`` (``timeout``:
        :class:`~recurgent.errors.ExecutionTimeoutError`, ``provider``:
        :class:`~recurgent.errors.ProviderError`, ...), or an
        :class:`~recurgent.errors.OutcomeError` carrying any other type (a domain error such
        as ``division_by_zero``, ``contract_violation``); its ``error_type``, ``retriable``,
        message and ``metadata`` are the outcome's.

        Raises:
            RecurgentError: the outcome is an error.
        """
        if self.status == "ok":
            return self.value
        raise error_for(
            self.error_type or "execution",
            self.error_message or "Execution failed",
            retriable=self.retriable,
            metadata=self.metadata,
        )

    def to_dict(self) -> dict[str, Any]:
        """The outcome as JSON-ready data: ``json.dumps(out.to_dict())`` works.

        It is ``model_dump(mode="json")``: a value JSON cannot hold (a set, bytes, an object)
        is rendered the way the call log renders it. ``json.dumps(out)`` itself is refused, as
        for any object: an Outcome is not a dict. A value or metadata whose JSON text would be
        over :data:`MAX_JSON_DUMP_CHARS` characters is refused with pydantic's
        ``PydanticSerializationError`` before any of it is written (ADR 0142).
        """
        return self.model_dump(mode="json")

    @classmethod
    def call(cls, value: Any = None, **extra: Any) -> Outcome:
        """Tolerant success alias: ``Outcome.call(x)`` is ``Outcome.ok(x)``."""
        return _build_ok(value, **extra) if value is not None else _build_ok(**extra)

    @property
    def is_ok(self) -> bool:
        """True for an ok outcome."""
        return self.status == "ok"

    @property
    def is_error(self) -> bool:
        """True for an error outcome."""
        return self.status == "error"

    def value_or(self, default: Any) -> Any:
        """Return the value when ok, ``default`` otherwise."""
        return self.value if self.status == "ok" else default

    def __getitem__(self, key: Any) -> Any:
        """Index into an ok outcome's value, so ``out["items"]`` works on a mapping value."""
        if self.status != "ok":
            raise TypeError(
                f"cannot index an error Outcome ({self.error_type}: {self.error_message}); "
                "check .ok before reading .value"
            )
        return self.value[key]

    def get(self, key: Any, default: Any = None) -> Any:
        """``dict.get`` on an ok outcome's mapping value; ``default`` for errors."""
        if self.status != "ok" or not isinstance(self.value, Mapping):
            return default
        return self.value.get(key, default)

    def __str__(self) -> str:
        if self.status == "ok":
            return describe(self.value, use_repr=False)  # never raises, e.g. on 10 ** 5000
        return f"[{self.error_type}] {self.error_message}"

    def __repr__(self) -> str:
        if self.status == "ok":
            return f"Outcome(ok, value={describe(self.value, use_repr=True)})"
        return (
            f"Outcome(error, error_type={self.error_type!r}, "
            f"error_message={self.error_message!r}, retriable={self.retriable!r})"
        )

    def __rich_repr__(self) -> Iterator[Any]:
        # rich renders what this yields in full: a value too long to show is yielded as its
        # bounded description (ADR 0142).
        yield "status", self.status
        if self.status == "ok":
            # Its text is written here to be measured (a value whose text is long for its size,
            # escaped characters or a datetime's timezone name, red team R19), once more by rich.
            text, whole = display_text(self.value, use_repr=True)
            yield "value", self.value if whole else ShownAs(text)
        else:
            yield "error_type", self.error_type
            yield "error_message", self.error_message


#: The fields equality compares: all but the provenance (``code``, ``call_id``).
_COMPARED_FIELDS = tuple(name for name in Outcome.model_fields if name not in ("code", "call_id"))

_PLAIN_VALUES = frozenset({int, float, str, bool, type(None), list, tuple, bytes})


def coerce_outcome(
    value: Any,
    *,
    tool_role: str,
    method_name: str,
    call_id: str | None = None,
    code: str | None = None,
) -> Outcome:
    """Turn whatever generated code produced into the Outcome of the call that ran.

    ``call_id``/``code``: the call's origin (ADR 0098). A plain answer's Outcome, made here, is
    built already stamped with them, as :func:`with_origin` would stamp it (which then keeps
    it as it is); every other Outcome is stamped by :func:`with_origin` alone.

    Rules (ADR 0002; attribution and bounds ADR 0059):

    1. An ``Outcome`` is returned as it is, its error fields checked again. Its ``tool_role``
       and ``method_name`` were settled at the sandbox boundary: an Outcome the program made
       names the call that ran, a child's answer passed on keeps the child's (ADR 0059).
    2. A mapping whose ``status`` is the string ``"error"`` (compared after stripping, in any
       case) becomes an error outcome: ``error_type`` (default ``execution``), ``error_message``
       or ``message`` (default ``Execution failed``), ``retriable`` (true only when exactly
       ``True``) and ``metadata`` are read; ``tool_role`` and ``method_name`` keys are dropped
       and any other keys join the metadata.
    3. A mapping whose ``status`` is ``"ok"`` and whose other keys are all outcome fields is
       unwrapped to its ``value``; with any other key present the whole mapping is the value,
       so no data is dropped. A non-string status (``{"status": 200}``) is plain data.
    4. Anything else is the value of an ok outcome.

    Raises:
        InvalidOutcomeError: The error type is not a short identifier, or an error mapping's
            message is longer than :data:`MAX_ERROR_MESSAGE_CHARS`.
    """
    if type(value) in _PLAIN_VALUES:
        # Neither an Outcome nor a mapping: skip the (abstract) mapping check, and pydantic's
        # validation, which has nothing to check (``value`` is ``Any``, the rest is ours).
        if call_id is None:
            return _direct_ok(value, tool_role, method_name, None, _CALL_OK_FIELDS)
        return _direct_ok(value, tool_role, method_name, code, _STAMPED_OK_FIELDS, call_id)
    if isinstance(value, Outcome):
        return _checked(value)
    if isinstance(value, Mapping):
        status = value.get("status")
        if isinstance(status, str) and status.strip().lower() == "error":
            spec = {key: item for key, item in value.items() if key not in _ATTRIBUTION_KEYS}
            return _build_error(spec, tool_role=tool_role, method_name=method_name)
        if (
            isinstance(status, str)
            and status.strip().lower() == "ok"
            and set(value).issubset(_OUTCOME_FIELDS)
        ):
            return Outcome(
                status="ok", value=value.get("value"), tool_role=tool_role, method_name=method_name
            )
    return Outcome(status="ok", value=value, tool_role=tool_role, method_name=method_name)


def _checked(outcome: Outcome) -> Outcome:
    """``outcome`` with its error fields checked again.

    The check repeats the model's because an Outcome may have been rebuilt without validation
    on its way out of the sandbox or a worker.
    """
    update: dict[str, Any] = {}
    error_type, message = outcome.error_type, outcome.error_message
    if error_type is not None:
        if not isinstance(error_type, str):
            raise InvalidOutcomeError(f"{_ERROR_TYPE_RULE}; got a {type(error_type).__name__}")
        _checked_error_type(error_type)
    if message is not None:
        text = message if isinstance(message, str) else str(message)
        cut = _cut_error_message(text)
        if cut is not message:
            update["error_message"] = cut
    return outcome.model_copy(update=update) if update else outcome


_ORIGIN_FIELDS = frozenset({"call_id", "code"})
_set_slot = object.__setattr__


_PLAIN_OK_FIELDS = frozenset({"status", "value", "tool_role", "method_name", "code"})
_CALL_OK_FIELDS = frozenset({"status", "value", "tool_role", "method_name"})
_STAMPED_OK_FIELDS = _CALL_OK_FIELDS | _ORIGIN_FIELDS


def plain_ok(value: Any, *, tool_role: str, method_name: str, code: str | None) -> Outcome:
    """``Outcome.model_construct(status="ok", value=value, tool_role=..., method_name=...,
    code=...)``, built directly: a mapped item's scalar answer (ADR 0122).

    ``value`` must need no validation (an exact str, number, bool or None the sandbox rebuilt);
    the Outcome is the one ``model_construct`` makes of those five fields, defaults and
    explicitly-set fields included, without pydantic resolving each default per item.
    """
    return _direct_ok(value, tool_role, method_name, code, _PLAIN_OK_FIELDS)


def _direct_ok(
    value: Any,
    tool_role: str,
    method_name: str,
    code: str | None,
    fields_set: frozenset[str],
    call_id: str | None = None,
) -> Outcome:
    # What ``Outcome(status="ok", ...)`` stores for fields that need no validation: the field
    # dict with every default, and the set of fields given (specs compare the two ways).
    built = Outcome.__new__(Outcome)
    _set_slot(
        built,
        "__dict__",
        {
            "status": "ok",
            "value": value,
            "error_type": None,
            "error_message": None,
            "retriable": False,
            "tool_role": tool_role,
            "method_name": method_name,
            "metadata": {},
            "code": code,
            "call_id": call_id,
        },
    )
    _set_slot(built, "__pydantic_extra__", None)
    _set_slot(built, "__pydantic_fields_set__", set(fields_set))
    _set_slot(built, "__pydantic_private__", None)
    return built


def with_origin(outcome: Outcome, *, call_id: str | None, code: str | None) -> Outcome:
    """``outcome.model_copy(update={"call_id": call_id, "code": code})``, built directly.

    Every dynamic call stamps its Outcome this way (ADR 0098), and pydantic's generic copy
    costs a dozen Python calls. An Outcome has no private attributes and forbids extras, so a
    copy is its field dict with the two fields replaced, and its set of explicitly set fields
    with the two added: exactly what ``model_copy`` makes of it. A subclass takes
    ``model_copy`` itself.
    """
    if type(outcome) is not Outcome:
        return outcome.model_copy(update={"call_id": call_id, "code": code})
    current = outcome.__dict__
    if (
        current["call_id"] == call_id
        and current["code"] == code
        and outcome.__pydantic_fields_set__ >= _ORIGIN_FIELDS
    ):
        # Stamped as it was made (coerce_outcome): the copy would equal it in every respect.
        return outcome
    copied = Outcome.__new__(Outcome)
    fields = outcome.__dict__.copy()
    fields["call_id"] = call_id
    fields["code"] = code
    _set_slot(copied, "__dict__", fields)
    _set_slot(copied, "__pydantic_extra__", None)
    _set_slot(copied, "__pydantic_fields_set__", outcome.__pydantic_fields_set__ | _ORIGIN_FIELDS)
    _set_slot(copied, "__pydantic_private__", None)
    return copied
