"""What a registry entry keeps about how a tool's methods work (ADR 0109).

After a call through a registered tool, the caller records what the tool's program showed for
that method: the memory keys it uses and its primary key (``recurgent._profiles._observe``), its
signature family, its capability tags (``recurgent._patterns._extract``), and the lifecycle
state the promotion policy gave its version. Merged into the entry (in memory at once, on disk
with the batched usage counts, ADR 0055), they give the original's registry fields:

* ``method_state_keys`` ``{method: [key, ...]}`` (methods whose program uses any key),
* ``method_signatures`` ``{method: "args:..|kwargs:.."}``,
* ``method_capabilities`` ``{method: [tag, ...]}`` and ``capabilities``, their union,
* ``method_primary_keys`` ``{method: key}`` and ``state_key_consistency_ratio``: the share of
  methods whose primary key is the most common one (1.0 when none has a key), by the same rule
  as ``recurgent tools namespace-pressure`` (ADR 0084),
* ``lifecycle_state``, ``lifecycle_decision``, ``promotion_policy_version``: the last call's.

Bounded, so an entry stays well inside what agents are shown (``ENTRY_CHARS_SHOWN``): the
:data:`METHODS_OBSERVED` most recently observed methods, :data:`KEYS_SHOWN` keys of at most
:data:`KEY_CHARS` characters each, :data:`TAGS_SHOWN` tags. Pure: no file, no memory touched.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from recurgent._patterns._extract import TAG

__all__ = [
    "KEYS_SHOWN",
    "KEY_CHARS",
    "METHODS_OBSERVED",
    "TAGS_SHOWN",
    "ToolObservation",
    "merge_observations",
    "reflects",
]

METHODS_OBSERVED = 32
KEYS_SHOWN = 8
KEY_CHARS = 64
TAGS_SHOWN = 16
_METHOD_CHARS = 200
_SIGNATURE_CHARS = 300
_STATE_CHARS = 64
_MAPS = (
    "method_state_keys",
    "method_primary_keys",
    "method_signatures",
    "method_capabilities",
)


@dataclass(frozen=True, slots=True)
class ToolObservation:
    """What one call through a tool showed about one of its methods.

    Attributes:
        method: The method called.
        state_keys: The memory keys its program uses, sorted.
        primary_key: The key it is known by (the smallest written key, else the smallest).
        signature: Its signature family.
        capabilities: Its capability tags.
        lifecycle_state, lifecycle_decision, policy_version: What the promotion policy made of
            the version that ran, when the call was evaluated.
    """

    method: str
    state_keys: tuple[str, ...] = ()
    primary_key: str | None = None
    signature: str | None = None
    capabilities: tuple[str, ...] = ()
    lifecycle_state: str | None = None
    lifecycle_decision: str | None = None
    policy_version: str | None = None


def _keys(keys: Iterable[str]) -> list[str]:
    return [key for key in keys if 0 < len(key) <= KEY_CHARS][:KEYS_SHOWN]


def _tags(tags: Iterable[Any]) -> list[str]:
    found: list[str] = []
    for tag in tags:
        if isinstance(tag, str) and TAG.match(tag) and tag not in found:
            found.append(tag)
    return found[:TAGS_SHOWN]


def _map(entry: Mapping[str, Any], name: str) -> dict[str, Any]:
    """A per-method map of the entry, as found (a malformed one, written by a program, starts
    over)."""
    value = entry.get(name)
    return dict(value) if isinstance(value, Mapping) else {}


def _put(mapping: dict[str, Any], method: str, value: Any) -> None:
    mapping.pop(method, None)
    if value is not None:
        mapping[method] = value  # last: the map's order is the order methods were observed


def consistency_ratio(primary_keys: Mapping[str, Any]) -> float:
    """The share of methods whose primary key is the most common one (1.0 without keys)."""
    keys = [key for key in primary_keys.values() if isinstance(key, str) and key]
    if not keys:
        return 1.0
    return round(Counter(keys).most_common(1)[0][1] / len(keys), 4)


def reflects(entry: Mapping[str, Any], seen: ToolObservation) -> bool:
    """Whether ``entry`` already says what ``seen`` would write (a stored program answering
    again shows the same thing every call: nothing to merge)."""
    method = seen.method

    def field(name: str) -> Any:
        mapping = entry.get(name)
        return mapping.get(method) if isinstance(mapping, Mapping) else None

    keys = _keys(seen.state_keys)
    return (
        field("method_signatures") == (seen.signature or None)
        and field("method_state_keys") == (keys or None)
        and field("method_capabilities") == (_tags(seen.capabilities) or None)
        and all(
            value is None or entry.get(name) == value
            for name, value in (
                ("lifecycle_state", seen.lifecycle_state),
                ("lifecycle_decision", seen.lifecycle_decision),
                ("promotion_policy_version", seen.policy_version),
            )
        )
    )


def merge_observations(
    entry: Mapping[str, Any], observations: Iterable[ToolObservation]
) -> dict[str, Any]:
    """The entry with ``observations`` (oldest first) folded in; other fields as they were."""
    merged = dict(entry)
    maps = {name: _map(entry, name) for name in _MAPS}
    recent = list(dict.fromkeys(method for name in _MAPS for method in maps[name]))
    changed = False
    for seen in observations:
        if not seen.method or len(seen.method) > _METHOD_CHARS:
            continue
        changed = True
        if seen.method in recent:
            recent.remove(seen.method)
        recent.append(seen.method)
        keys = _keys(seen.state_keys)
        primary = seen.primary_key if seen.primary_key in keys else (keys[0] if keys else None)
        signature = seen.signature if seen.signature else None
        if signature is not None and len(signature) > _SIGNATURE_CHARS:
            signature = None
        _put(maps["method_state_keys"], seen.method, keys or None)
        _put(maps["method_primary_keys"], seen.method, primary)
        _put(maps["method_signatures"], seen.method, signature)
        _put(maps["method_capabilities"], seen.method, _tags(seen.capabilities) or None)
        for name, value in (
            ("lifecycle_state", seen.lifecycle_state),
            ("lifecycle_decision", seen.lifecycle_decision),
            ("promotion_policy_version", seen.policy_version),
        ):
            if value is not None and len(value) <= _STATE_CHARS:
                merged[name] = value
    if not changed:
        return merged
    dropped = set(recent[:-METHODS_OBSERVED])
    for name in _MAPS:
        merged[name] = {m: v for m, v in maps[name].items() if m not in dropped}
    capabilities: list[str] = []
    for tags in merged["method_capabilities"].values():
        if isinstance(tags, list):
            capabilities.extend(t for t in _tags(tags) if t not in capabilities)
    merged["capabilities"] = capabilities[:TAGS_SHOWN]
    merged["state_key_consistency_ratio"] = consistency_ratio(merged["method_primary_keys"])
    return merged
