"""Redaction of secrets: in text (API keys, bearer tokens, secret environment values) and by key name."""

from __future__ import annotations

import functools
import os
import re
from collections.abc import Mapping, Sequence
from typing import Any

__all__ = ["MASK", "environment_fingerprint", "environment_secrets", "is_secret_key", "redact"]

_API_KEY = re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}")
_BEARER = re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._\-~+/=]{8,}")
# The scheme word of an Authorization value (Basic, Bearer, ...) stays readable; what follows goes.
_AUTHORIZATION = re.compile(
    r"(?i)\b(authorization['\"]?\s*[:=]\s*['\"]?)((?:basic|bearer|digest|token)\s+)?"
    r"[^\s'\",;}]{6,}"
)
_ASSIGNED_SECRET = re.compile(
    r"(?i)(api[_-]?key|token|secret|password)(['\"]?\s*[:=]\s*['\"]?)[^\s'\",;}]{6,}"
)
_SECRET_NAME = re.compile(r"(?i)(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH)")
_MIN_SECRET_LENGTH = 8
# The fewest characters any pattern above matches: ``sk-`` and 8 more (the others need 12+).
_SHORTEST_PATTERN_MATCH = 11
_MASK = "[REDACTED]"
MASK = _MASK
"""What a redacted value or secret is replaced with."""

# Key names whose values are secrets (ADR 0032). A key is split into words at separators and
# camelCase boundaries; it is secret when its separator-free spelling contains one of the
# unambiguous stems, or one of its words is ``token``. ``token`` is matched as a whole word so
# counters such as ``max_tokens`` or ``prompt_tokens`` stay readable.
_SECRET_KEY_STEMS = (
    "password",
    "passwd",
    "passphrase",
    "secret",
    "apikey",
    "authorization",
    "cookie",
    "privatekey",
)
_SECRET_KEY_WORDS = frozenset({"token"})
_KEY_WORD = re.compile(r"[A-Z]+(?![a-z])|[A-Z]?[a-z]+|[0-9]+")


@functools.lru_cache(maxsize=1024)
def _is_secret_name(name: str) -> bool:
    return _SECRET_NAME.search(name) is not None


@functools.lru_cache(maxsize=4096)
def is_secret_key(name: str) -> bool:
    """Whether a mapping key or keyword name names a secret (``db_password``, ``X-Api-Key``, ``token``).

    Case-insensitive; ``max_tokens``, ``key`` and ``author`` are not secret names.
    """
    words = [word.lower() for word in _KEY_WORD.findall(name)]
    joined = "".join(words)
    return any(stem in joined for stem in _SECRET_KEY_STEMS) or not _SECRET_KEY_WORDS.isdisjoint(
        words
    )


def environment_fingerprint() -> tuple[tuple[Any, ...], tuple[Any, ...]]:
    """A value equal to an earlier one exactly when the environment holds the same names and
    values in the same order (a cache key for anything read from the environment)."""
    # os.environ mirrors every change made through it in its ``_data`` dict (encoded names and
    # values). Equal names and values in the same order give the same secrets, so this pair is
    # an exact cache key; building and comparing it costs ~1 us, decoding every variable ~30 us.
    data: Mapping[Any, Any] = getattr(os.environ, "_data", os.environ)
    return tuple(data), tuple(data.values())


_environment_cache: tuple[tuple[tuple[Any, ...], tuple[Any, ...]], tuple[str, ...]] | None = None


def environment_secrets() -> tuple[str, ...]:
    """Values of secret-named environment variables (8+ characters), longest first.

    Current on each call, so a key set (through ``os.environ``) after import is still masked:
    the scan is cached against an exact fingerprint of the environment and redone whenever a
    variable was added, removed or changed. Callers redacting many strings at once read it once
    and pass it to :func:`redact`.
    """
    global _environment_cache  # a process-wide cache of a process-wide table
    fingerprint = environment_fingerprint()
    cached = _environment_cache
    if cached is not None and cached[0] == fingerprint:
        return cached[1]
    values = {
        value
        for name, value in os.environ.items()
        if len(value) >= _MIN_SECRET_LENGTH and _is_secret_name(name)
    }
    found = tuple(sorted(values, key=len, reverse=True))
    # One assignment, so a thread reading the cache sees an old or a new pair, never half.
    _environment_cache = (fingerprint, found)
    return found


def redact(text: str, secrets: Sequence[str] | None = None) -> str:
    """Mask API keys, bearer tokens and values of secret-named environment variables.

    Args:
        text: The text to clean.
        secrets: Values to mask, from :func:`environment_secrets`; read now when omitted.
    """
    for secret in environment_secrets() if secrets is None else secrets:
        if secret in text:
            text = text.replace(secret, _MASK)
    if len(text) < _SHORTEST_PATTERN_MATCH:
        # No pattern below can match so few characters; a log line holds dozens of short
        # strings (field values, keys), and this spares each one the casefold and the scans.
        return text
    # Each pattern runs only when its key word is present: scanning long text with the
    # case-insensitive patterns costs ~1 us per character, a substring test almost nothing.
    # casefold() maps every character those patterns accept (K, long s) to the ASCII letter.
    if "sk-" in text:
        text = _API_KEY.sub(_MASK, text)
    folded = text.casefold()
    if "bearer" in folded:
        text = _BEARER.sub("Bearer " + _MASK, text)
    if "authorization" in folded:
        text = _AUTHORIZATION.sub(lambda m: m.group(1) + (m.group(2) or "") + _MASK, text)
    # The words _ASSIGNED_SECRET starts with (``api_key`` contains ``key``), tested one by one:
    # a generator over them cost five calls per string.
    if "key" in folded or "token" in folded or "secret" in folded or "password" in folded:
        text = _ASSIGNED_SECRET.sub(lambda m: m.group(1) + m.group(2) + _MASK, text)
    return text
