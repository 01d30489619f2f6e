"""The stored form of an answer: its compact JSON text, JSON kind, size and digest (ADR 0101).

Plain data is kept as its own JSON, so ``content(ref)`` gives back an equal value; anything
else is kept as a marked, bounded rendering a program can tell from an answer and still read.
The content store (:mod:`recurgent._content_store`) keeps what this module makes; a scalar
answer, most of them, takes :func:`scalar_json` without ``json.dumps`` (ADR 0122).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

from recurgent._values import json_safe

__all__ = [
    "FALLBACK_KEY",
    "KINDS",
    "Serialized",
    "scalar_json",
    "serialize",
    "sha256_of",
]

#: Marks the stored form of an answer that was not plain data (its bounded rendering).
FALLBACK_KEY = "__content_fallback__"
# A rendering of a value that is not plain data keeps at most this many characters per string,
# items per container and characters in all: it describes the answer, it does not replace it.
_FALLBACK_CHARS = 65_536
_FALLBACK_ITEMS = 1_000
_FALLBACK_BUDGET = 1_000_000


@dataclass(frozen=True, slots=True)
class Serialized:
    """A payload as the store keeps it.

    Attributes:
        text: Compact JSON.
        kind: ``object``, ``array``, ``string``, ``number``, ``boolean``, ``null`` (the top-level
            JSON type), or ``fallback`` for the rendering of a value that was not plain data.
        size: UTF-8 bytes of ``text`` (``content_bytes``).
        digest: ``sha256:<hex>`` of those bytes.
        mode: ``json_safe`` (the value's own JSON form) or ``fallback_rendering``.
    """

    text: str
    kind: str
    size: int
    digest: str
    mode: str


#: The JSON type of a payload of exactly these types (subclasses take :func:`_kind`).
KINDS: dict[type, str] = {
    bool: "boolean",
    dict: "object",
    list: "array",
    tuple: "array",
    str: "string",
    int: "number",
    float: "number",
    type(None): "null",
}
#: ``json.dumps`` of a str with ``ensure_ascii=False``: the function the encoder itself calls.
_encode_string = json.encoder.encode_basestring


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "boolean"
    if isinstance(value, dict):
        return "object"
    if isinstance(value, list | tuple):
        return "array"
    if isinstance(value, str):
        return "string"
    if isinstance(value, int | float):
        return "number"
    return "null" if value is None else "scalar"


def _refuse(value: Any) -> Any:
    raise TypeError(f"{type(value).__name__} is not plain data")


def _encoded(text: str, kind: str, mode: str) -> Serialized:
    raw = text.encode("utf-8", "surrogatepass")
    return Serialized(text, kind, len(raw), f"sha256:{hashlib.sha256(raw).hexdigest()}", mode)


def _scalar_text(payload: Any) -> str | None:
    """``json.dumps`` of a payload of exactly one of the scalar types (most answers), by the
    same C functions its encoder calls, or ``None`` for any other payload. Raises as
    ``json.dumps`` would (``ValueError`` for NaN, the infinities and an int too long for
    ``str``)."""
    kind = type(payload)
    if kind is int:
        return int.__repr__(payload)
    if kind is str:
        return _encode_string(payload)
    if kind is bool:
        return "true" if payload else "false"
    if payload is None:
        return "null"
    if kind is float:
        if payload != payload or payload in (_INFINITY, -_INFINITY):
            raise ValueError("Out of range float values are not JSON compliant")
        return float.__repr__(payload)
    return None


_INFINITY = float("inf")
try:
    # CPython's own SHA-256 for the digest of a kept answer: the same digest as OpenSSL's,
    # without OpenSSL's per-hash set-up (a tenth of a cold call's bookkeeping, measured).
    from _sha256 import sha256 as sha256_of  # type: ignore[import-not-found]
except ImportError:  # pragma: no cover - Python 3.12 and later name the module _sha2
    try:
        from _sha2 import sha256 as sha256_of  # type: ignore[import-not-found]
    except ImportError:  # a build without CPython's own hashes
        sha256_of = hashlib.sha256


def scalar_json(payload: Any) -> str | None:
    """:func:`_scalar_text` where it cannot raise (a short exact int, any exact str, bool or
    ``None``), else ``None``: the caller then takes :func:`serialize` (floats included)."""
    kind = type(payload)
    if kind is int:
        return int.__repr__(payload) if -_SHORT_INT < payload < _SHORT_INT else None
    if kind is str:
        return _encode_string(payload)
    if kind is bool:
        return "true" if payload else "false"
    return "null" if payload is None else None


# Far below the 4,300-digit limit on int-to-text conversion that json.dumps obeys.
_SHORT_INT = 10**18


def serialize(payload: Any) -> Serialized:
    """The stored form of ``payload``; never raises.

    Plain data (dicts, lists, tuples, strings, finite numbers, booleans, ``None``; mapping keys
    that are strings, numbers, booleans or ``None``) is kept as its own JSON: ``content(ref)``
    gives back an equal value, tuples as lists and keys as strings, as JSON has them. Anything
    else (a set, a ``Decimal``, a date, a model object, NaN, an int too long for JSON) is kept
    as ``{"__content_fallback__": True, "value_class": ..., "representation": ...}`` whose
    representation is the bounded JSON-safe rendering of ``recurgent._values`` (the original
    kept Ruby's ``inspect`` text): a program can tell it from an answer and still read it.
    """
    try:
        text = _scalar_text(payload)
        if text is None:
            text = json.dumps(
                payload, ensure_ascii=False, allow_nan=False, separators=(",", ":"), default=_refuse
            )
        return _encoded(text, KINDS.get(type(payload)) or _kind(payload), "json_safe")
    except (TypeError, ValueError, RecursionError):
        pass
    rendering = json_safe(
        payload,
        max_chars=_FALLBACK_CHARS,
        max_items=_FALLBACK_ITEMS,
        budget=_FALLBACK_BUDGET,
        secrets=(),
    )
    wrapped = {
        FALLBACK_KEY: True,
        "value_class": type(payload).__name__,
        "representation": rendering,
    }
    text = json.dumps(wrapped, ensure_ascii=False, separators=(",", ":"))
    return _encoded(text, "fallback", "fallback_rendering")
