"""JSON Schema deliverables checked in the host: bounded size, timed patterns, no remote references.

A deliverable given as a standard JSON Schema mapping is checked by ``jsonschema`` (this module
is its only importer). The schema may come from generated code (a child's deliverable) and is
checked in the host, so its size is bounded when the contract is made, its ``pattern`` and
``patternProperties`` run on the ``regex`` engine with a timeout (red-team finding F4:
``^(a+)+$`` held the host for 15 s), and a remote ``$ref`` is never fetched (ADR 0050).
"""

from __future__ import annotations

import functools
import importlib
from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import Any

import regex

from recurgent.errors import UsageError

__all__ = [
    "MAX_SCHEMA_DEPTH",
    "MAX_SCHEMA_NODES",
    "SchemaProblem",
    "check_json_schema",
    "is_json_schema",
    "location",
    "vet_json_schema",
]

MAX_SCHEMA_NODES = 5_000
MAX_SCHEMA_DEPTH = 40
_PATTERN_SECONDS = 0.5

#: ``(mismatch, details)`` of a value a schema refuses, as the contract check reports it.
SchemaProblem = tuple[str, dict[str, Any]]

# Keywords that make a deliverable mapping a JSON Schema (the Ruby-style keys are `type`,
# `required`, `min_items` and `constraints`).
_JSON_SCHEMA_KEYWORDS = frozenset(
    {
        "$schema",
        "$ref",
        "$defs",
        "properties",
        "items",
        "prefixItems",
        "enum",
        "const",
        "minimum",
        "maximum",
        "exclusiveMinimum",
        "exclusiveMaximum",
        "multipleOf",
        "pattern",
        "minLength",
        "maxLength",
        "minItems",
        "maxItems",
        "uniqueItems",
        "additionalProperties",
        "patternProperties",
        "minProperties",
        "maxProperties",
        "oneOf",
        "anyOf",
        "allOf",
        "not",
        "format",
    }
)


def is_json_schema(deliverable: Mapping[str, Any]) -> bool:
    """True when a deliverable mapping uses any JSON Schema keyword."""
    return any(key in _JSON_SCHEMA_KEYWORDS for key in deliverable)


@functools.cache
def _jsonschema() -> ModuleType:
    """``jsonschema``, imported on first use: it costs about 65 ms, and most agents never
    declare a JSON Schema deliverable (ADR 0114)."""
    return importlib.import_module("jsonschema")


@functools.cache
def _referencing_errors() -> ModuleType:
    return importlib.import_module("referencing.exceptions")


def vet_json_schema(schema: Mapping[str, Any]) -> None:
    """Refuse a schema too big to check safely, or one that is not valid JSON Schema.

    Raises:
        UsageError: the schema is too big or invalid (the message says which).
    """
    too_big = _schema_size_problem(schema)
    if too_big is not None:
        raise UsageError(f"deliverable JSON Schema is refused: {too_big}")
    jsonschema = _jsonschema()
    try:
        jsonschema.validators.validator_for(schema).check_schema(schema)
    except jsonschema.SchemaError as error:
        raise UsageError(f"deliverable is not a valid JSON Schema: {error.message}") from None


def location(path: Sequence[Any]) -> str:
    """A validator path as dotted text, ``(root)`` for the value itself."""
    return ".".join(str(part) for part in path) or "(root)"


def check_json_schema(
    schema: Mapping[str, Any], value: Any, *, shape: Callable[[Any], str] | None = None
) -> SchemaProblem | None:
    """Why ``value`` does not satisfy ``schema``, or ``None`` when it does.

    ``shape`` names the JSON type of the failing part (its ``actual_shape``); a ``type``
    keyword that failed is its ``expected_shape``.
    """
    jsonschema = _jsonschema()
    validator_class = _bounded(jsonschema.validators.validator_for(schema))
    validator = validator_class(schema, registry=_offline_references())
    try:
        error = jsonschema.exceptions.best_match(validator.iter_errors(value))
    except _referencing_errors().Unresolvable as unresolvable:
        return "unresolvable_reference", {
            "validator_message": "$ref cannot be resolved (remote references are never fetched): "
            f"{str(getattr(unresolvable, 'ref', ''))[:200]}"
        }
    if error is None:
        return None
    details: dict[str, Any] = {
        "validator_path": location(error.absolute_path),
        "validator_message": error.message[:400],
        "schema_path": location(error.absolute_schema_path),
    }
    if shape is not None:
        if error.validator == "type":
            declared = error.validator_value
            details["expected_shape"] = (
                " or ".join(map(str, declared)) if isinstance(declared, list) else str(declared)
            )
        details["actual_shape"] = shape(error.instance)
    return "schema_violation", details


def _refuse_retrieval(uri: str) -> Any:
    raise _referencing_errors().NoSuchResource(ref=uri)


@functools.cache
def _offline_references() -> Any:
    """A registry that never retrieves: jsonschema's default one fetches a remote "$ref" over
    HTTP from the host, outside the sandbox's network policy, and a deliverable may come from
    generated code (delegate options)."""
    referencing = importlib.import_module("referencing")
    return referencing.Registry(retrieve=_refuse_retrieval)


def _schema_size_problem(schema: Any) -> str | None:
    """Why a schema is too big to check safely (shared parts count once per use), or ``None``."""
    budget = MAX_SCHEMA_NODES
    stack: list[tuple[Any, int]] = [(schema, 0)]
    while stack:
        node, depth = stack.pop()
        budget -= 1
        if budget < 0:
            return f"it has more than {MAX_SCHEMA_NODES} nodes (shared parts counted per use)"
        if depth > MAX_SCHEMA_DEPTH:
            return f"it is nested more than {MAX_SCHEMA_DEPTH} levels deep"
        if isinstance(node, Mapping):
            stack.extend((child, depth + 1) for child in node.values())
        elif isinstance(node, list | tuple):
            stack.extend((child, depth + 1) for child in node)
    return None


def _search(pattern: str, text: str) -> bool:
    try:
        return regex.search(pattern, text, timeout=_PATTERN_SECONDS) is not None
    except regex.error as error:
        raise _jsonschema().ValidationError(
            f"pattern {pattern[:80]!r} is invalid: {error}"
        ) from None
    except TimeoutError:
        raise _jsonschema().ValidationError(
            f"pattern {pattern[:80]!r} took longer than {_PATTERN_SECONDS:g}s on this value"
        ) from None


def _pattern(validator: Any, pattern: Any, instance: Any, schema: Any) -> Any:
    if not validator.is_type(instance, "string") or not isinstance(pattern, str):
        return
    try:
        matched = _search(pattern, instance)
    except _jsonschema().ValidationError as error:
        yield error
        return
    if not matched:
        yield _jsonschema().ValidationError(f"{instance[:80]!r} does not match {pattern[:80]!r}")


def _pattern_properties(validator: Any, patterns: Any, instance: Any, schema: Any) -> Any:
    if not validator.is_type(instance, "object") or not isinstance(patterns, Mapping):
        return
    for pattern, subschema in patterns.items():
        for key, item in instance.items():
            try:
                matched = _search(str(pattern), str(key))
            except _jsonschema().ValidationError as error:
                yield error
                return
            if matched:
                yield from validator.descend(item, subschema, path=key, schema_path=pattern)


@functools.cache
def _bounded(validator_class: Any) -> Any:
    return _jsonschema().validators.extend(
        validator_class, {"pattern": _pattern, "patternProperties": _pattern_properties}
    )
