"""Redaction of secrets (API keys, bearer tokens, secret-looking environment values) from text."""

from __future__ import annotations

import os
import re

__all__ = ["redact"]

_PATTERNS = (
    re.compile(r"\bsk-[A-Za-z0-9_\-]{8,}"),
    re.compile(r"(?i)\bbearer\s+[A-Za-z0-9._\-~+/=]{8,}"),
    re.compile(
        r"(?i)(api[_-]?key|authorization|token|secret|password)(['\"]?\s*[:=]\s*['\"]?)"
        r"[^\s'\",;}]{6,}"
    ),
)
_SECRET_NAME = re.compile(r"(?i)(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL|AUTH)")
_MASK = "[REDACTED]"


def _environment_secrets() -> list[str]:
    values = [
        value for name, value in os.environ.items() if _SECRET_NAME.search(name) and len(value) >= 8
    ]
    return sorted(set(values), key=len, reverse=True)


def redact(text: str) -> str:
    """Mask API keys, bearer tokens and values of secret-named environment variables."""
    for secret in _environment_secrets():
        if secret in text:
            text = text.replace(secret, _MASK)
    text = _PATTERNS[0].sub(_MASK, text)
    text = _PATTERNS[1].sub("Bearer " + _MASK, text)
    return _PATTERNS[2].sub(lambda m: m.group(1) + m.group(2) + _MASK, text)
