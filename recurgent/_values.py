"""JSON-safe rendering of arbitrary values for logs and history records, and id/time formats."""

from __future__ import annotations

import datetime
import math
from collections.abc import Mapping, Sequence
from enum import Enum
from typing import Any

from recurgent._redact import environment_secrets, redact

__all__ = ["json_safe", "safe_repr", "utc_timestamp"]

_MAX_DEPTH = 32


def utc_timestamp(moment: datetime.datetime | None = None) -> str:
    """UTC time as ``YYYY-MM-DDTHH:MM:SS.mmmZ``."""
    moment = moment or datetime.datetime.now(datetime.UTC)
    moment = moment.astimezone(datetime.UTC)
    return moment.strftime("%Y-%m-%dT%H:%M:%S.") + f"{moment.microsecond // 1000:03d}Z"


def safe_repr(value: Any, secrets: Sequence[str] | None = None) -> str:
    """``repr`` that never raises and never triggers dynamic dispatch (agents define __repr__).

    Args:
        value: Any object.
        secrets: Passed to :func:`~recurgent._redact.redact`.
    """
    try:
        return redact(repr(value), secrets)
    except Exception as error:  # noqa: BLE001 - a broken __repr__ must not break logging
        return f"<unrepresentable {type(value).__name__}: {type(error).__name__}>"


def json_safe(value: Any) -> Any:
    """A copy of ``value`` made of JSON types only.

    Mappings and sequences recurse; keys become strings; invalid UTF-8 in bytes is replaced;
    non-finite floats and every other object become their ``repr``. Strings are redacted.
    """
    secrets = environment_secrets()

    def text(raw: str) -> str:
        return redact(raw.encode("utf-8", "replace").decode("utf-8"), secrets)

    def convert(item: Any, depth: int) -> Any:
        if depth > _MAX_DEPTH:
            return "<nested too deeply>"
        if item is None or isinstance(item, bool | int):
            return item
        if isinstance(item, float):
            return item if math.isfinite(item) else repr(item)
        if isinstance(item, str):
            return text(item)
        if isinstance(item, bytes | bytearray):
            return text(bytes(item).decode("utf-8", "replace"))
        if isinstance(item, Enum):
            return convert(item.value, depth + 1)
        if isinstance(item, Mapping):
            return {
                str(convert(key, depth + 1)): convert(child, depth + 1)
                for key, child in list(item.items())
            }
        if isinstance(item, list | tuple | set | frozenset):
            return [convert(child, depth + 1) for child in list(item)]
        if isinstance(item, datetime.datetime | datetime.date | datetime.time):
            return item.isoformat()
        if callable(getattr(type(item), "model_dump", None)):
            try:
                return convert(item.model_dump(), depth + 1)
            except Exception:  # noqa: BLE001 - fall back to repr
                return safe_repr(item, secrets)
        return safe_repr(item, secrets)

    return convert(value, 0)
