"""Deliverables and the check of an ok value against one (ADR 0009, 0045).

A deliverable is one of three things: the Ruby-style mapping (``type``, ``required``,
``min_items``, ``constraints``), checked tolerantly by hand; a standard JSON Schema mapping,
checked by :mod:`recurgent._json_schema`; or a Python type a pydantic ``TypeAdapter`` accepts (a
model class, ``list[Headline]``, ``Literal[...]``), held as a :class:`TypedDeliverable` whose
items are its JSON Schema and checked by pydantic in strict JSON mode, so a string where an
integer is declared fails exactly as it would on the wire.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, get_origin

from pydantic import TypeAdapter, ValidationError
from pydantic.errors import PydanticUserError

from recurgent._json_schema import check_json_schema, is_json_schema, location, vet_json_schema
from recurgent._repr import safe_repr
from recurgent.errors import UsageError
from recurgent.outcome import Outcome

__all__ = [
    "ContractCheck",
    "TypedDeliverable",
    "as_deliverable",
    "shape_name",
    "validate_deliverable",
]

_JSON_TYPES = {
    "object": Mapping,
    "array": list | tuple,
    "string": str,
    "boolean": bool,
    "null": type(None),
}


class TypedDeliverable(dict[str, Any]):
    """A deliverable given as a Python type: its items are the type's JSON Schema.

    It is a ``dict`` so prompts, logs and the registry see the schema; ``adapter`` validates
    values and, for a top-level call, builds the typed value the caller gets.
    """

    __slots__ = ("adapter", "type_name")

    def __init__(self, adapter: TypeAdapter[Any], type_name: str) -> None:
        super().__init__(adapter.json_schema())
        self.adapter = adapter
        self.type_name = type_name


_ACCEPTED = (
    "a deliverable is a JSON Schema mapping (the type/required form included, e.g. "
    '{"type": "object", "required": ["items"]}) or a type pydantic can validate (a model class, '
    "list[Model], Literal[...])"
)


def as_deliverable(value: Any) -> Any:
    """A deliverable option as the runtime keeps it, checked now (ADR 0097).

    Every mapping, the type/required form included, must be valid JSON Schema (checked against
    its meta-schema: ``{"type": "objekt"}`` and ``{"required": "a"}`` are refused; the extra
    ``min_items`` and ``constraints`` keys of the type/required form are allowed); a type
    becomes a :class:`TypedDeliverable` once pydantic has built its adapter.

    Raises:
        UsageError: ``value`` is not a valid schema, is plain data that is no schema (``42``,
            a string, a list), or is an object pydantic cannot validate against; the message
            says what is accepted.
    """
    if value is None:
        return None
    if isinstance(value, Mapping):
        vet_json_schema(value)
        return value
    if isinstance(value, str | bytes | list | tuple | int | float | bool):
        raise UsageError(f"deliverable={safe_repr(value, limit=200)} is refused: {_ACCEPTED}")
    try:
        adapter: TypeAdapter[Any] = TypeAdapter(value)
        return TypedDeliverable(adapter, _type_name(value))
    except (PydanticUserError, TypeError, ValueError) as error:
        raise UsageError(
            f"deliverable must be a mapping (a JSON Schema or the type/required form) or a type "
            f"pydantic can validate (a model class, list[Model], Literal[...]), got "
            f"{safe_repr(value, limit=200)}: {error}"
        ) from None


def _type_name(value: Any) -> str:
    """``Headline``, ``list[Headline]``, ``Literal['a', 'b']``: a type as a reader writes it."""
    if get_origin(value) is None and isinstance(getattr(value, "__name__", None), str):
        return str(value.__name__)
    # Generic aliases: their repr without module paths (typing.Literal, pkg.mod.Headline).
    return re.sub(r"\b(?:\w+\.)+(\w+)", r"\1", repr(value))


def shape_name(value: Any) -> str:
    """JSON-style name of a value's shape: object, array, string, integer, number, boolean, null."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, int):
        return "integer"
    if isinstance(value, float):
        return "number"
    if isinstance(value, str):
        return "string"
    if isinstance(value, Mapping):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    return type(value).__name__


def _canonical_key(key: str) -> str:
    """Fold the spellings a model may use for one key.

    ``:pub_date``, ``pubDate``, ``PubDate``, ``pub-date`` and ``pub date`` all become
    ``pub_date``; ``sourceURL`` and ``source_url`` both become ``source_url``.
    """
    key = key.strip().lstrip(":")
    key = re.sub(r"(?<=[a-z0-9])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])", "_", key)
    return re.sub(r"[-\s_]+", "_", key).lower()


def _find_key(value: Mapping[Any, Any], key: str) -> Any:
    """The key of ``value`` that spells ``key`` (exactly, else tolerantly), or ``None``."""
    if key in value:
        return key
    wanted = _canonical_key(key)
    for candidate in value:
        if _canonical_key(str(candidate)) == wanted:
            return candidate
    return None


def _key_list(raw: Any) -> list[str]:
    """``required`` as a list of key names (a single string names one key)."""
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list | tuple):
        return []
    return list(dict.fromkeys(str(k).strip() for k in raw if str(k).strip()))


@dataclass(frozen=True, slots=True)
class ContractCheck:
    """Result of validating an ok value against a deliverable.

    ``canonical_value`` is set when required keys were found under another spelling; it is the
    value with the required spelling added, so the caller can read the key it asked for.
    """

    applied: bool
    canonical_value: Any = None
    typed_value: Any = None
    passed: bool | None = None
    mismatch: str | None = None
    expected_keys: list[str] = field(default_factory=list)
    actual_keys: list[str] = field(default_factory=list)
    details: dict[str, Any] = field(default_factory=dict)

    def describe(self) -> str:
        """The mismatch in words for the outcome's message: where, what, expected and actual.

        E.g. ``type_mismatch: expected object, got array`` or ``schema_violation: n: 'x' is
        not of type 'integer' (expected integer, got string)`` (ADR 0097).
        """
        details = self.details
        path = details.get("validator_path") or _property_of(details.get("constraint_path"))
        where = f"{path}: " if path and path != "(root)" else ""
        expected, actual = details.get("expected_shape"), details.get("actual_shape")
        problem = details.get("validator_message")
        if self.mismatch == "missing_required_key":
            missing = ", ".join(map(repr, details.get("missing_keys", [])))
            got = ", ".join(map(repr, self.actual_keys)) or "none"
            text = f"missing required key(s) {missing}; got keys {got}"
        elif self.mismatch == "min_items_violation":
            text = (
                f"{where}expected at least {details.get('expected_min_items')} items, got "
                f"{details.get('actual_items')}"
            )
        elif problem:
            typed = details.get("expected_type")
            text = (f"expected {typed}; " if typed else "") + f"{where}{problem}"
            if expected and actual:
                text += f" (expected {expected}, got {actual})"
            elif actual:
                text += f" (got {actual})"
        elif expected and actual:
            text = f"{where}expected {expected}, got {actual}"
        else:
            text = ""
        return f"{self.mismatch}: {text}" if text else str(self.mismatch)

    def metadata(self) -> dict[str, Any]:
        """Metadata for a ``contract_violation`` outcome."""
        return {
            "mismatch": self.mismatch,
            "expected_keys": self.expected_keys,
            "actual_keys": self.actual_keys,
            **self.details,
        }

    def checked_outcome(self, outcome: Outcome, *, role: str, method: str, typed: bool) -> Outcome:
        """``outcome`` as its caller gets it after this check: with the typed value when
        ``typed`` (only the caller outside the runtime gets one: generated code keeps seeing
        plain data, ADR 0045), with the canonical spelling of its keys, or a
        ``contract_violation`` error when the value failed the deliverable."""
        if not self.applied or self.passed:
            if typed and self.typed_value is not None:
                return outcome.model_copy(update={"value": self.typed_value})
            if self.canonical_value is not None:
                return outcome.model_copy(update={"value": self.canonical_value})
            return outcome
        return Outcome(
            status="error",
            error_type="contract_violation",
            error_message=(
                f"Delegated outcome does not satisfy deliverable contract ({self.describe()})"
            ),
            retriable=False,
            tool_role=role,
            method_name=method,
            metadata=self.metadata(),
        )


def _property_of(constraint_path: Any) -> str | None:
    """``count`` from ``deliverable.constraints.properties.count.type``."""
    if not isinstance(constraint_path, str):
        return None
    marker = ".properties."
    if marker not in constraint_path:
        return None
    return constraint_path.split(marker, 1)[1].rsplit(".", 1)[0]


def _min_items(raw: Any) -> int | None:
    if isinstance(raw, bool):
        return None
    if isinstance(raw, int):
        return raw if raw >= 0 else None
    if isinstance(raw, str) and raw.strip().isdigit():
        return int(raw.strip())
    return None


def _type_matches(declared: str, value: Any) -> bool:
    if declared == "integer":
        return isinstance(value, int) and not isinstance(value, bool)
    if declared == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    expected = _JSON_TYPES.get(declared)
    return True if expected is None else isinstance(value, expected)


def _fail(mismatch: str, expected: list[str], value: Any, **details: Any) -> ContractCheck:
    actual = [str(k) for k in value] if isinstance(value, Mapping) else []
    return ContractCheck(
        applied=True,
        passed=False,
        mismatch=mismatch,
        expected_keys=expected,
        actual_keys=actual,
        details=details,
    )


def _check_properties(
    deliverable: Mapping[str, Any], value: Mapping[str, Any]
) -> ContractCheck | None:
    constraints = deliverable.get("constraints")
    properties = constraints.get("properties") if isinstance(constraints, Mapping) else None
    if not isinstance(properties, Mapping):
        return None
    for key, rule in properties.items():
        found = _find_key(value, str(key))
        if found is None or not isinstance(rule, Mapping):
            continue
        item = value[found]
        declared = rule.get("type")
        path = f"deliverable.constraints.properties.{key}"
        if isinstance(declared, str) and not _type_matches(declared.strip().lower(), item):
            return _fail(
                "property_type_mismatch",
                [str(key)],
                value,
                constraint_path=f"{path}.type",
                expected_shape=declared.strip().lower(),
                actual_shape=shape_name(item),
            )
        minimum = _min_items(rule.get("min_items"))
        if minimum is not None and (not isinstance(item, list | tuple) or len(item) < minimum):
            return _fail(
                "min_items_violation",
                [str(key)],
                value,
                constraint_path=f"{path}.min_items",
                expected_shape="array",
                actual_shape=shape_name(item),
                expected_min_items=minimum,
                actual_items=len(item) if isinstance(item, list | tuple) else None,
            )
    return None


def _check_typed(deliverable: TypedDeliverable, value: Any) -> ContractCheck:
    try:
        encoded = json.dumps(value, allow_nan=False)
        typed = deliverable.adapter.validate_json(encoded, strict=True)
    except (TypeError, ValueError) as error:
        if not isinstance(error, ValidationError):
            return _fail("schema_violation", [], value, validator_message=str(error)[:400])
        first = error.errors(include_url=False)[0]
        return _fail(
            "schema_violation",
            [],
            value,
            validator_path=location(first.get("loc", ())),
            validator_message=str(first.get("msg", ""))[:400],
            expected_type=deliverable.type_name,
            actual_shape=shape_name(first.get("input")),
        )
    return ContractCheck(applied=True, passed=True, typed_value=typed)


def validate_deliverable(
    deliverable: Any, value: Any, args: Sequence[Any], kwargs: Mapping[str, Any]
) -> ContractCheck:
    """Check an ok value against a contract's ``deliverable``.

    A :class:`TypedDeliverable` is validated by pydantic (strict, as JSON); a JSON Schema mapping
    by ``jsonschema`` after the tolerant key checks below. The Ruby-style form supports ``type``
    (every JSON type), ``required`` keys of objects, ``min_items`` of arrays and
    ``constraints.properties.<key>.{type,min_items}``. A deliverable that is not a mapping, or
    has no recognised ``type``, is not enforced.
    """
    if deliverable is None:
        return ContractCheck(applied=False)
    if isinstance(deliverable, TypedDeliverable):
        return _check_typed(deliverable, value)
    if not isinstance(deliverable, Mapping):
        return ContractCheck(applied=False)
    check = _check_shape(deliverable, value, args, kwargs)
    if check.passed and is_json_schema(deliverable):
        checked = check.canonical_value if check.canonical_value is not None else value
        problem = check_json_schema(deliverable, checked, shape=shape_name)
        if problem is not None:
            mismatch, details = problem
            return _fail(mismatch, [], checked, **details)
    return check


def _check_shape(
    deliverable: Mapping[str, Any], value: Any, args: Sequence[Any], kwargs: Mapping[str, Any]
) -> ContractCheck:
    if args and args[0] is None and not kwargs and isinstance(value, Mapping | list) and not value:
        return _fail(
            "nil_required_input", [], value, expected_shape="non_null_input", actual_shape="null"
        )
    declared = deliverable.get("type")
    kind = declared.strip().lower() if isinstance(declared, str) else None
    required = _key_list(deliverable.get("required"))
    if kind is None and required:
        kind = "object"
    if kind is None or kind not in (*_JSON_TYPES, "integer", "number"):
        return ContractCheck(applied=True, passed=True)
    if not _type_matches(kind, value):
        return _fail(
            "type_mismatch", required, value, expected_shape=kind, actual_shape=shape_name(value)
        )
    if kind == "object":
        aliases = {key: _find_key(value, key) for key in required if key not in value}
        missing = [key for key, found in aliases.items() if found is None]
        if missing:
            return _fail(
                "missing_required_key",
                required,
                value,
                expected_shape="object",
                actual_shape="object",
                missing_keys=missing,
            )
        canonical = {**value, **{key: value[found] for key, found in aliases.items()}}
        problem = _check_properties(deliverable, canonical)
        if problem is not None:
            return problem
        return ContractCheck(
            applied=True,
            passed=True,
            expected_keys=required,
            actual_keys=[str(k) for k in value],
            canonical_value=canonical if aliases else None,
        )
    if kind == "array":
        constraints = deliverable.get("constraints")
        minimum = _min_items(deliverable.get("min_items"))
        if minimum is None and isinstance(constraints, Mapping):
            minimum = _min_items(constraints.get("min_items"))
        if minimum is not None and len(value) < minimum:
            return _fail(
                "min_items_violation",
                [],
                value,
                constraint_path="deliverable.min_items",
                expected_shape="array",
                actual_shape="array",
                expected_min_items=minimum,
                actual_items=len(value),
            )
    return ContractCheck(applied=True, passed=True)
