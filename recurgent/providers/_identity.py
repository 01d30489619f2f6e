"""Who a provider is, as an artifact's provenance records it (ADR 0077).

* :func:`is_test_double`: the provider declares ``test_double = True``.
* :func:`author_kind`: ``openai``, ``anthropic``, ``custom:<module.Class>`` or
  ``test_double:<Class>``.
* :func:`script_fingerprint`: what a double would answer for a (role, method), as a digest,
  when it says (``script_fingerprint(role, method)``).
* :func:`script_digest`: the digest the package's doubles use: of their replies, and of a
  reply function's code, constants, defaults, closure and the globals it reads. Objects the
  digest cannot read are taken by identity, so they match only within one process.
"""

from __future__ import annotations

import hashlib
import os
import types
from collections.abc import Mapping
from typing import Any

__all__ = [
    "author_kind",
    "double_fingerprint",
    "is_test_double",
    "script_digest",
    "script_fingerprint",
]

_BUILT_IN = {
    "recurgent.providers.openai.OpenAIProvider": "openai",
    "recurgent.providers.anthropic.AnthropicProvider": "anthropic",
}
_DEPTH = 24
_TEXT_CHARS = 1_000_000


def is_test_double(provider: object) -> bool:
    """Whether ``provider`` declares itself a test double (``test_double = True``)."""
    try:
        return getattr(provider, "test_double", False) is True
    except Exception:  # noqa: BLE001 - a property that raises is no declaration
        return False


def author_kind(provider: object) -> str:
    """The provider kind an artifact records for programs ``provider`` wrote."""
    cls = type(provider)
    if is_test_double(provider):
        return f"test_double:{cls.__qualname__}"
    name = f"{cls.__module__}.{cls.__qualname__}"
    return _BUILT_IN.get(name, f"custom:{name}")


def script_fingerprint(provider: object, role: str, method: str) -> str | None:
    """The double's digest of what it would answer for ``role.method``, or ``None`` (not a
    double, no ``script_fingerprint`` method, or it failed or said nothing)."""
    if not is_test_double(provider):
        return None
    return double_fingerprint(provider, role, method)


def double_fingerprint(provider: object, role: str, method: str) -> str | None:
    """:func:`script_fingerprint` of a provider already known to be a test double."""
    method_of = getattr(provider, "script_fingerprint", None)
    if not callable(method_of):
        return None
    try:
        fingerprint = method_of(role, method)
    except Exception:  # noqa: BLE001 - a double's bug costs reuse, never the call
        return None
    return fingerprint if isinstance(fingerprint, str) and fingerprint else None


def script_digest(value: object) -> str:
    """``sha256:<hex>`` of a script entry: replies (text, mappings, programs, exceptions) and
    reply functions, read as deep as 24 levels."""
    digest = hashlib.sha256()
    _feed(digest, value, 0, set())
    return "sha256:" + digest.hexdigest()


def _put(digest: Any, *parts: object) -> None:
    for part in parts:
        text = part if isinstance(part, str) else repr(part)
        digest.update(text[:_TEXT_CHARS].encode("utf-8", "surrogatepass"))
        digest.update(b"\x00")


def _feed(digest: Any, value: object, depth: int, seen: set[int]) -> None:
    try:
        _feed_value(digest, value, depth, seen)
    except Exception:  # noqa: BLE001 - a value that cannot be read is taken by identity
        _identity(digest, value)


def _identity(digest: Any, value: object) -> None:
    kind = type(value)
    _put(digest, "object", kind.__module__, kind.__qualname__, os.getpid(), id(value))


def _feed_value(digest: Any, value: object, depth: int, seen: set[int]) -> None:
    if depth > _DEPTH:
        _put(digest, "deep")
        return
    kind = type(value)
    if value is None or kind in (bool, int, float, complex, str, bytes):
        _put(digest, kind.__name__, value)
    elif isinstance(value, types.FunctionType | types.CodeType | types.MethodType):
        if id(value) in seen:
            _put(digest, "again", getattr(value, "__qualname__", ""))
            return
        seen.add(id(value))
        _feed_code(digest, value, depth, seen)
    elif isinstance(value, Mapping):
        _put(digest, "map", len(value))
        entries = sorted(((script_digest(k), v) for k, v in _items(value)), key=lambda e: e[0])
        for key_digest, item in entries:
            _put(digest, key_digest)
            _feed(digest, item, depth + 1, seen)
    elif isinstance(value, list | tuple):
        _put(digest, kind.__name__, len(value))
        for item in value:
            _feed(digest, item, depth + 1, seen)
    elif isinstance(value, set | frozenset):
        _put(digest, "set", sorted(script_digest(item) for item in value))
    elif isinstance(value, BaseException):
        _put(digest, "raise", kind.__qualname__)
        _feed(digest, value.args, depth + 1, seen)
    elif isinstance(value, type):
        _put(digest, "type", value.__module__, value.__qualname__)
    elif isinstance(value, types.ModuleType):
        _put(digest, "module", value.__name__)
    elif hasattr(value, "model_dump_json") and kind.__module__.startswith("recurgent."):
        _put(digest, kind.__qualname__, value.model_dump_json())  # a Program
    else:
        # Unreadable: this very object, in this process only.
        _identity(digest, value)


def _items(value: Mapping[Any, Any]) -> list[tuple[Any, Any]]:
    return [(key, value[key]) for key in list(value)]


def _feed_code(digest: Any, value: object, depth: int, seen: set[int]) -> None:
    if isinstance(value, types.MethodType):
        _put(digest, "method")
        _feed(digest, value.__func__, depth + 1, seen)
        _feed(digest, value.__self__, depth + 1, seen)
        return
    if isinstance(value, types.CodeType):
        _put(digest, "code", value.co_code, value.co_names, value.co_varnames)
        for constant in value.co_consts:
            _feed(digest, constant, depth + 1, seen)
        return
    assert isinstance(value, types.FunctionType)
    # What it would answer, not where it is written: two functions with the same code, closure
    # and globals agree whatever their names.
    _put(digest, "function")
    _feed(digest, value.__code__, depth + 1, seen)
    _feed(digest, value.__defaults__, depth + 1, seen)
    _feed(digest, value.__kwdefaults__, depth + 1, seen)
    for cell in value.__closure__ or ():
        try:
            content = cell.cell_contents
        except ValueError:  # an empty cell
            content = None
        _feed(digest, content, depth + 1, seen)
    # The globals it reads: a notebook cell that changes a program held in a global changes
    # the function's answers, and so its digest.
    names = _global_names(value.__code__)
    for name in sorted(names):
        if name in value.__globals__:
            _put(digest, "global", name)
            _feed(digest, value.__globals__[name], depth + 1, seen)


def _global_names(code: types.CodeType) -> set[str]:
    names = set(code.co_names)
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            names |= _global_names(constant)
    return names
