"""JSON-safe rendering of arbitrary values for logs and history records, and id/time formats."""

from __future__ import annotations

import datetime
import math
from collections.abc import Mapping
from enum import Enum
from typing import Any

from recurgent._redact import redact

__all__ = ["json_safe", "safe_repr", "utc_timestamp"]

_MAX_DEPTH = 32


def utc_timestamp(moment: datetime.datetime | None = None) -> str:
    """UTC time as ``YYYY-MM-DDTHH:MM:SS.mmmZ``."""
    moment = moment or datetime.datetime.now(datetime.UTC)
    moment = moment.astimezone(datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def safe_repr(value: Any) -> str:
    """``repr`` that never raises and never triggers dynamic dispatch (agents define __repr__)."""
    try:
        return redact(repr(value))
    except Exception as error:  # noqa: BLE001 - a broken __repr__ must not break logging
        return f"<unrepresentable {type(value).__name__}: {type(error).__name__}>"


def json_safe(value: Any, _depth: int = 0) -> Any:
    """A copy of ``value`` made of JSON types only.

    Mappings and sequences recurse; keys become strings; invalid UTF-8 in bytes is replaced;
    non-finite floats and every other object become their ``repr``. Strings are redacted.
    """
    if _depth > _MAX_DEPTH:
        return "<nested too deeply>"
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, str):
        return redact(value.encode("utf-8", "replace").decode("utf-8"))
    if isinstance(value, bytes | bytearray):
        return redact(bytes(value).decode("utf-8", "replace"))
    if isinstance(value, Enum):
        return json_safe(value.value, _depth + 1)
    if isinstance(value, Mapping):
        return {
            str(json_safe(k, _depth + 1)) if not isinstance(k, str) else redact(k): json_safe(
                v, _depth + 1
            )
            for k, v in list(value.items())
        }
    if isinstance(value, list | tuple | set | frozenset):
        return [json_safe(item, _depth + 1) for item in list(value)]
    if isinstance(value, datetime.datetime | datetime.date | datetime.time):
        return value.isoformat()
    model_dump = getattr(type(value), "model_dump", None)
    if callable(model_dump):
        try:
            return json_safe(value.model_dump(), _depth + 1)
        except Exception:  # noqa: BLE001 - fall back to repr
            return safe_repr(value)
    return safe_repr(value)
