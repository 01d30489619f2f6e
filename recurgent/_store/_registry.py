"""``<root>/registry.json``: the delegated tools every agent of the user knows (ADR 0036).

The file is ``{"schema_version": 1, "tools": {name: entry}, ...}``. Every change is a
merge-on-write under the file's lock, so concurrent processes never lose a registration or a
usage count, and top-level keys this port does not know (``archived_tools``) are written back
as found. The merge functions are pure; the file functions return what they did.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from recurgent._store._files import (
    SCHEMA_VERSION,
    Loaded,
    Updated,
    quarantine,
    read_json,
    update_json,
)
from recurgent._store._paths import registry_path

__all__ = [
    "ENTRY_CHARS_SHOWN",
    "FIELD_CHARS_RECORDED",
    "INTENT_SIGNATURES_KEPT",
    "METHODS_KEPT",
    "METHOD_CHARS_RECORDED",
    "PURPOSE_UNAVAILABLE",
    "TOOLS_SHOWN",
    "load_tools",
    "merge_known_tools",
    "merge_registration",
    "merge_usage",
    "merge_uses",
    "register",
    "remove_tools",
    "touch",
    "update_tools",
]

INTENT_SIGNATURES_KEPT = 6
#: Persisted tools an agent sees (the most recently used): each is merged into its memory, and
#: every call walks the registry, so 100k planted tools cost seconds on every call (ADR 0071).
TOOLS_SHOWN = 64
#: A persisted tool entry bigger than this (its compact JSON) is not shown to agents at all:
#: a 10 MB purpose would otherwise be hashed and copied on every call through the tool.
ENTRY_CHARS_SHOWN = 64 * 1024
#: A contract field (purpose, deliverable, ...) larger than this is not written to the registry.
FIELD_CHARS_RECORDED = 8 * 1024
#: Method names kept per tool (the latest added), and the longest name recorded.
METHODS_KEPT = 64
METHOD_CHARS_RECORDED = 200
_CONTRACT_SUMMARY_FIELDS = ("deliverable", "acceptance", "failure_policy")
#: The purpose recorded for a tool delegated without one: a placeholder, never a contract.
PURPOSE_UNAVAILABLE = "purpose unavailable"
_UNAVAILABLE = PURPOSE_UNAVAILABLE
_BOUNDED_FIELDS = frozenset(
    {"purpose", *_CONTRACT_SUMMARY_FIELDS, "intent_signature", "intent_signatures", "aliases"}
)


def _count(entry: Mapping[str, Any], key: str) -> int:
    value = entry.get(key)
    if isinstance(value, bool) or not isinstance(value, int):
        return 0
    return max(value, 0)


def _union(first: Any, second: Any) -> list[Any]:
    merged: list[Any] = []
    for source in (first, second):
        if isinstance(source, list):
            merged.extend(item for item in source if item not in merged)
    return merged


def merge_registration(
    entry: Mapping[str, Any] | None, contract: Mapping[str, Any] | None, *, now: str
) -> dict[str, Any]:
    """The entry after (re-)registering a tool with ``contract`` (persistence.md 3.2).

    A registration without a purpose keeps the recorded one (Ruby overwrote it with
    ``purpose unavailable``). Contract summary fields present in ``contract`` win; methods,
    aliases, counts and ``created_at`` are kept; intent signatures are a union, last six.
    Registering is not using: ``usage_count`` does not change, ``registration_count`` does.
    """
    # A field too large to show later agents is not recorded at all (ADR 0071): a 40 MB
    # purpose would otherwise push registry.json over the file cap, and the next read would
    # quarantine every tool with it. One already recorded (by an older version, or planted)
    # is dropped here, so registering the tool again makes it visible again.
    merged: dict[str, Any] = {
        key: value
        for key, value in (entry or {}).items()
        if key not in _BOUNDED_FIELDS or _encoded_chars(value) <= FIELD_CHARS_RECORDED
    }
    contract = {
        key: value
        for key, value in (contract or {}).items()
        if _encoded_chars(value) <= FIELD_CHARS_RECORDED
    }
    purpose = contract.get("purpose")
    if isinstance(purpose, str) and purpose.strip():
        merged["purpose"] = purpose
    elif not merged.get("purpose"):
        merged["purpose"] = _UNAVAILABLE
    for key in _CONTRACT_SUMMARY_FIELDS:
        if contract.get(key) is not None:
            merged[key] = contract[key]
    merged["methods"] = _union(merged.get("methods"), [])
    merged["aliases"] = _union(merged.get("aliases"), [])
    signature = contract.get("intent_signature")
    signatures = [s for s in _union(merged.get("intent_signatures"), []) if isinstance(s, str)]
    if isinstance(signature, str) and signature.strip():
        signature = signature.strip()
        signatures = [*(s for s in signatures if s != signature), signature]
    if signatures:
        merged["intent_signatures"] = signatures[-INTENT_SIGNATURES_KEPT:]
        merged["intent_signature"] = merged["intent_signatures"][-1]
    merged.setdefault("created_at", now)
    merged["last_used_at"] = now
    merged["registration_count"] = _count(merged, "registration_count") + 1
    for key in ("usage_count", "success_count", "failure_count"):
        merged[key] = _count(merged, key)
    return merged


def merge_known_tools(
    persisted: Mapping[str, Mapping[str, Any]], memory: Mapping[str, Any] | None
) -> dict[str, dict[str, Any]]:
    """The registry an agent works with: the persisted tools merged with those in memory.

    Per tool, scalars from memory win (this process's view is newer); ``methods``, ``aliases``
    and ``intent_signatures`` are unions, persisted first; ``intent_signature`` is the last of
    the union. Tools only in memory or only on disk are kept as they are. Non-mapping entries in
    memory are kept untouched (the registry integrity check reports them).
    """
    merged: dict[str, Any] = {name: dict(entry) for name, entry in persisted.items()}
    for name, entry in (memory or {}).items():
        stored = merged.get(name)
        if not isinstance(entry, Mapping) or not isinstance(stored, dict):
            merged[name] = dict(entry) if isinstance(entry, Mapping) else entry
            continue
        combined = {**stored, **entry}
        for key in ("methods", "aliases", "intent_signatures"):
            if key in stored or key in entry:
                combined[key] = _union(stored.get(key), entry.get(key))
        signatures = combined.get("intent_signatures")
        if isinstance(signatures, list) and signatures:
            combined["intent_signatures"] = signatures[-INTENT_SIGNATURES_KEPT:]
            combined["intent_signature"] = combined["intent_signatures"][-1]
        merged[name] = combined
    return merged


def merge_usage(entry: Mapping[str, Any], method: str, ok: bool, *, now: str) -> dict[str, Any]:
    """The entry after one call the tool served: counts +1, and the method recorded when it
    answered (a failed call does not advertise a method)."""
    if ok:
        return merge_uses(entry, successes=1, failures=0, methods=[method], now=now)
    return merge_uses(entry, successes=0, failures=1, methods=[], now=now)


def merge_uses(
    entry: Mapping[str, Any], *, successes: int, failures: int, methods: list[str], now: str
) -> dict[str, Any]:
    """The entry after several calls the tool served (``methods``: those that answered)."""
    merged = dict(entry)
    merged["usage_count"] = _count(merged, "usage_count") + successes + failures
    # Only the counters these calls move are rewritten (a malformed other one stays as found).
    if successes:
        merged["success_count"] = _count(merged, "success_count") + successes
    if failures:
        merged["failure_count"] = _count(merged, "failure_count") + failures
    # A program can call any method name on a tool: the list stays small enough that the
    # entry stays under ENTRY_CHARS_SHOWN, instead of a flood of names hiding the tool.
    named = [m for m in methods if isinstance(m, str) and len(m) <= METHOD_CHARS_RECORDED]
    merged["methods"] = _union(merged.get("methods"), named)[-METHODS_KEPT:]
    merged["last_used_at"] = now
    return merged


def _tools_of(loaded: Loaded, path: Path) -> tuple[dict[str, Any], dict[str, Any]]:
    """(whole object, tools) to change."""
    data = dict(loaded.data or {})
    tools = data.get("tools", {})
    if not isinstance(tools, dict):
        # A registry whose tools are not a mapping is damaged: keep a copy, start over.
        quarantine(path, expected=loaded.raw)
        data, tools = {}, {}
    return data, dict(tools)


def update_tools(root: Path, edit: Callable[[dict[str, Any]], bool]) -> Updated:
    """Change the registered tools under the registry's lock; ``edit`` changes ``tools`` in
    place and says whether it changed anything (nothing is written otherwise)."""
    path = registry_path(root)

    def change(loaded: Loaded) -> dict[str, Any] | None:
        data, tools = _tools_of(loaded, path)
        if not edit(tools):
            return None
        # schema_version and tools first, other keys after, in their order.
        return {
            "schema_version": SCHEMA_VERSION,
            "tools": tools,
            **{k: v for k, v in data.items() if k not in ("schema_version", "tools")},
        }

    return update_json(path, change, root=root)


def _encoded_chars(value: Any) -> int:
    """Characters of ``value`` as compact JSON (unencodable values count as too large)."""
    if isinstance(value, str):
        return len(value) + 2
    try:
        return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")))
    except (TypeError, ValueError, RecursionError):
        return ENTRY_CHARS_SHOWN + 1


def _recency(item: tuple[str, Mapping[str, Any]]) -> tuple[str, str]:
    stamp = item[1].get("last_used_at")
    return (stamp if isinstance(stamp, str) else "", item[0])


def load_tools(root: Path) -> tuple[dict[str, dict[str, Any]], Loaded]:
    """The registered tools agents see, and what was read.

    Entries that are not objects are skipped. Every later call of every agent carries these
    tools in its memory (and each call's checks walk them), so what an agent sees is bounded
    (ADR 0071): at most :data:`TOOLS_SHOWN` tools, the most recently used, each at most
    :data:`ENTRY_CHARS_SHOWN` characters of JSON. The file itself keeps everything, for the CLI
    and for ``prune``. A corrupt file is quarantined; an unsupported schema version reads as no
    tools.
    """
    loaded = read_json(registry_path(root), root=root)
    tools = (loaded.data or {}).get("tools") if loaded.state == "ok" else None
    if not isinstance(tools, dict):
        return {}, loaded
    entries = [(str(k), v) for k, v in tools.items() if isinstance(v, dict)]
    if len(entries) > TOOLS_SHOWN:
        entries = sorted(entries, key=_recency, reverse=True)[:TOOLS_SHOWN]
    return {
        name: dict(entry) for name, entry in entries if _encoded_chars(entry) <= ENTRY_CHARS_SHOWN
    }, loaded


def register(root: Path, name: str, contract: Mapping[str, Any] | None, *, now: str) -> Updated:
    """Record (or refresh) a delegated tool."""

    def edit(tools: dict[str, Any]) -> bool:
        current = tools.get(name)
        tools[name] = merge_registration(
            current if isinstance(current, dict) else None, contract, now=now
        )
        return True

    return update_tools(root, edit)


def touch(root: Path, name: str, method: str, ok: bool, *, now: str) -> Updated:
    """Count one call served by a registered tool; writes nothing for an unregistered name."""

    def edit(tools: dict[str, Any]) -> bool:
        current = tools.get(name)
        if not isinstance(current, dict):
            return False
        tools[name] = merge_usage(current, method, ok, now=now)
        return True

    return update_tools(root, edit)


def remove_tools(root: Path, names: list[str]) -> Updated:
    """Drop the named tools from the registry (other keys and tools are kept)."""

    def edit(tools: dict[str, Any]) -> bool:
        removed = [name for name in names if tools.pop(name, None) is not None]
        return bool(removed)

    return update_tools(root, edit)
