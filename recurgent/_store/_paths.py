"""Where the tool store lives: root resolution and the hash-suffixed path segments (ADR 0036)."""

from __future__ import annotations

import functools
import hashlib
import os
import re
from collections.abc import Mapping
from pathlib import Path

__all__ = [
    "ROOT_ENV",
    "artifact_path",
    "artifacts_dir",
    "default_root",
    "registry_path",
    "role_dir",
    "safe_segment",
]

#: Environment variable naming the store root; it wins over the XDG default.
ROOT_ENV = "RECURGENT_TOOLSTORE_ROOT"

_OUTSIDE_SEGMENT = re.compile(r"[^a-z0-9]+")
_SEGMENT_CHARS = 48
_HASH_CHARS = 8


def default_root(environ: Mapping[str, str] | None = None) -> Path:
    """The store root: ``$RECURGENT_TOOLSTORE_ROOT``, else ``$XDG_STATE_HOME/recurgent/tools``,
    else ``~/.local/state/recurgent/tools``.

    A variable that is set but blank counts as unset (the XDG spec says so for
    ``XDG_STATE_HOME``; Ruby's fetch-with-default would have produced ``/recurgent/tools``).
    """
    env = os.environ if environ is None else environ
    explicit = env.get(ROOT_ENV, "").strip()
    if explicit:
        return Path(explicit).expanduser()
    state_home = env.get("XDG_STATE_HOME", "").strip()
    base = Path(state_home) if state_home else Path.home() / ".local" / "state"
    return base / "recurgent" / "tools"


def safe_segment(raw: str) -> str:
    """A file-name-safe segment for a role or method name, byte-compatible with the Ruby store.

    Lowercase, runs outside ``[a-z0-9]`` become one ``_``, ``_`` stripped at both ends, ``item``
    when nothing is left, at most 48 characters, then ``-`` and the first 8 hex digits of the
    SHA-256 of the raw UTF-8 bytes. The hash keeps names that collapse alike apart
    (``"Web Fetcher"`` and ``"web_fetcher"``).
    """
    text = _OUTSIDE_SEGMENT.sub("_", raw.lower()).strip("_") or "item"
    # surrogatepass: a name built from undecodable bytes still gets a stable hash instead of
    # crashing the store (Ruby strings cannot hold lone surrogates, so compatibility is moot).
    digest = hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()
    return f"{text[:_SEGMENT_CHARS]}-{digest[:_HASH_CHARS]}"


def artifacts_dir(root: Path) -> Path:
    """``<root>/artifacts``."""
    return root / "artifacts"


def role_dir(root: Path, role: str) -> Path:
    """``<root>/artifacts/<seg(role)>``: every method artifact of one role."""
    return artifacts_dir(root) / safe_segment(role)


@functools.lru_cache(maxsize=1024)
def artifact_path(root: Path, role: str, method: str) -> Path:
    """``<root>/artifacts/<seg(role)>/<seg(method)>.json``.

    Computed once per (root, role, method) in a process: every call asks for it, and the
    hashing and path joins cost more than the rest of a cached lookup.
    """
    return role_dir(root, role) / f"{safe_segment(method)}.json"


def registry_path(root: Path) -> Path:
    """``<root>/registry.json``: the delegated-tool registry."""
    return root / "registry.json"
