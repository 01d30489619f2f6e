"""State-key telemetry and namespace pressure of one role (ADR 0084).

``<root>/namespaces/<seg(role)>.json`` records, per method of the role, the families its
current code version shows (state keys with their lifetimes, primary key, signature, return
shape; see :mod:`._observe`) and the continuity problems seen, each code version counted once.
The original kept the same figures on the role's tool-registry entry (so only for delegated
tools, and shown to every later prompt through memory); here every role with a store has them,
in a file of its own that prompts never read.

:func:`pressure` derives the namespace figures from a record:

* ``namespace_key_collision_count``: unordered pairs of methods whose primary keys differ;
* ``namespace_multi_lifetime_key_count``: keys used with more than one lifetime;
* ``namespace_continuity_violation_count``: code versions that diverged from the role's
  dominant key when recorded, or failed the role profile's continuity guard (each version and
  kind counted once, so the figure measures drift, not traffic);
* ``state_key_consistency_ratio``: the share of methods whose primary key is the dominant one.

Each method's entry names the author of the code version it holds (``host`` or ``program``,
ADR 0074). What goes on the host's evidence reads the host's methods only (``hosts_only``:
the siblings the role-profile guard compares a host call with, the consistency ratio a host
version is given): a program's agent of the host's role must not decide them, and its version
of a method never replaces the host's entry (ADR 0133).

The record is written only when a method's code version is new to it (or a new problem is
seen), which happens on calls that write their artifact at once anyway: a stored program that
answers again writes nothing here (ADR 0055's budget).
"""

from __future__ import annotations

import datetime
import functools
from collections import Counter
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from recurgent._forksafe import fork_safe_lock
from recurgent._profiles._observe import KEY_CHARS, KEYS_KEPT, ProgramShape
from recurgent._store._cache import IdentityCache
from recurgent._store._files import (
    SCHEMA_VERSION,
    Loaded,
    locked,
    note_change,
    read_json,
    update_json,
)
from recurgent._store._paths import safe_segment
from recurgent._values import utc_timestamp

__all__ = [
    "COUNTED_FIGURES",
    "EVENTS_KEPT",
    "METHODS_KEPT",
    "Violation",
    "forget_namespace",
    "load_namespace",
    "namespace_path",
    "pressure",
    "pressure_counts",
    "record_namespace",
    "seen_values",
]

#: Methods recorded per role (the most recently updated), and problems listed (the newest).
METHODS_KEPT = 256
EVENTS_KEPT = 50
_LIFETIME_KEYS_KEPT = 512
_COUNTED_KEPT = 16
_RUNTIME_TAG = "python"
_HOST, _PROGRAM = "host", "program"

#: A continuity problem of one code version: ``(kind, detail, code checksum)``.
Violation = tuple[str, str, str]

_DOCS: IdentityCache[dict[str, Any]] = IdentityCache(limit=256)
_EMPTY: dict[str, Any] = {}


@functools.lru_cache(maxsize=256)
def namespace_path(root: Path, role: str) -> Path:
    """``<root>/namespaces/<seg(role)>.json`` (remembered: every logged call of a role with a
    store looks its record up)."""
    return Path(root) / "namespaces" / f"{safe_segment(role)}.json"


def _own(data: Mapping[str, Any] | None, role: str) -> dict[str, Any] | None:
    """The record when it is this runtime's record of ``role`` (a colliding segment or a copied
    file answers no other role, ADR 0070)."""
    if not isinstance(data, Mapping):
        return None
    if data.get("runtime") != _RUNTIME_TAG or data.get("role") != role:
        return None
    return dict(data)


def load_namespace(root: Path, role: str, *, quarantine_corrupt: bool = True) -> dict[str, Any]:
    """The telemetry record of ``role`` (empty when there is none or it is unusable).

    Cached while the file is unchanged; a corrupt file is moved aside. The record returned is
    shared: read it, never change it.
    """
    path = namespace_path(root, role)
    cached = _DOCS.get(path)
    if cached is not None:
        return cached
    loaded = read_json(path, root=Path(root), quarantine_corrupt=quarantine_corrupt)
    record = _own(loaded.data, role) if loaded.state == "ok" else None
    if record is None:
        return _EMPTY
    _DOCS.put(path, loaded.identity, record)
    return record


def _methods(record: Mapping[str, Any], hosts_only: bool = False) -> dict[str, dict[str, Any]]:
    methods = record.get("methods")
    if not isinstance(methods, Mapping):
        return {}
    return {
        str(k): dict(v)
        for k, v in methods.items()
        # An entry of unknown author (written before authors were kept) stays, as in the store.
        if isinstance(v, Mapping) and not (hosts_only and v.get("author") == _PROGRAM)
    }


def _strings(value: Any, limit: int = KEYS_KEPT) -> list[str]:
    if not isinstance(value, list):
        return []
    return [item for item in value if isinstance(item, str) and 0 < len(item) <= KEY_CHARS][:limit]


def _primary(entry: Mapping[str, Any]) -> str | None:
    key = entry.get("primary_key")
    return key if isinstance(key, str) and key else None


def _dominant(primaries: Mapping[str, str]) -> str | None:
    tally = Counter(primaries.values()).most_common(1)
    return tally[0][0] if tally else None


def _lifetimes(record: Mapping[str, Any]) -> dict[str, list[str]]:
    raw = record.get("state_key_lifetimes")
    if not isinstance(raw, Mapping):
        return {}
    return {str(k): _strings(v, 8) for k, v in raw.items() if isinstance(k, str)}


def _count(value: Any) -> int:
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else 0


def record_namespace(
    root: Path,
    role: str,
    method: str,
    *,
    shape: ProgramShape,
    checksum: str,
    return_shape: str | None,
    violations: list[Violation],
    now: datetime.datetime | None = None,
    author: str | None = None,
) -> dict[str, Any] | None:
    """Record one method's code version (and the problems seen with it) in the role's record.

    A version already recorded adds only what is new (its return shape if it had none, a
    problem of a kind not counted for it yet). Whether the version diverges from the role's
    dominant key is decided here, against the record as it is on disk. ``author``: who wrote
    the version (``host`` or ``program``; ``None`` when not known).

    Returns:
        The record as written, or ``None`` when nothing changed or it could not be written
        (never raises: telemetry never breaks a call).
    """
    path = namespace_path(root, role)
    stamp = utc_timestamp(now)

    def change(loaded: Loaded) -> dict[str, Any] | None:
        record = _own(loaded.data, role) if loaded.data is not None else {}
        if record is None:
            return None  # another runtime's or role's file: left as it is
        methods = _methods(record)
        entry = methods.pop(method, {})
        same_version = entry.get("code_checksum") == checksum
        if not same_version and author == _PROGRAM and entry.get("author") == _HOST:
            # A program may run the host's method, never replace it (ADR 0074): its own
            # version of it is not stored either (ADR 0133).
            return None
        counted = _strings(entry.get("counted_violations"), _COUNTED_KEPT) if same_version else []
        changed = not same_version
        if not same_version:
            entry = {
                "code_checksum": checksum,
                "state_keys": list(shape.state_keys),
                "written_keys": list(shape.written_keys),
                "primary_key": shape.primary_key,
                "lifetimes": {key: list(found) for key, found in shape.lifetimes},
                "signature": shape.signature,
                "return_shape": None,
            }
            if author is not None:
                entry["author"] = author
        if return_shape is not None and entry.get("return_shape") is None:
            entry["return_shape"] = return_shape
            changed = True
        methods[method] = entry
        problems = list(violations)
        primaries = {m: key for m, e in methods.items() if (key := _primary(e)) is not None}
        dominant = _dominant(primaries)
        own = primaries.get(method)
        diverged = own is not None and own != dominant and len(set(primaries.values())) > 1
        if not same_version and diverged:
            detail = f"{method} uses {own!r}; most use {dominant!r}"
            problems.append(("divergent_key", detail, checksum))
        events = [e for e in record.get("continuity_violations", []) if isinstance(e, Mapping)]
        total = _count(record.get("namespace_continuity_violation_count"))
        for kind, detail, digest in problems:
            mark = f"{kind}@{digest}"
            if mark in counted:
                continue
            counted.append(mark)
            total += 1
            changed = True
            events.append(
                {
                    "method": method,
                    "code_checksum": digest,
                    "kind": kind,
                    "detail": detail[:400],
                    "at": stamp,
                }
            )
        if not changed:
            return None
        entry["counted_violations"] = counted[-_COUNTED_KEPT:]
        entry["updated_at"] = stamp
        while len(methods) > METHODS_KEPT:
            del methods[next(iter(methods))]
        lifetimes = _lifetimes(record)
        for key, found in shape.lifetimes:
            if key in lifetimes or len(lifetimes) < _LIFETIME_KEYS_KEPT:
                lifetimes[key] = sorted({*lifetimes.get(key, []), *found})
        return {
            "schema_version": SCHEMA_VERSION,
            "runtime": _RUNTIME_TAG,
            "role": role,
            "methods": methods,
            "state_key_lifetimes": lifetimes,
            "namespace_continuity_violation_count": total,
            "continuity_violations": events[-EVENTS_KEPT:],
            "updated_at": stamp,
        }

    try:
        updated = update_json(path, change, root=Path(root), now=now, durable=False)
    except (OSError, ValueError):
        return None
    if not updated.written or updated.data is None:
        return None
    _DOCS.drop(path)
    return updated.data


def pressure(record: Mapping[str, Any], role: str, *, hosts_only: bool = False) -> dict[str, Any]:
    """The namespace figures of a role's record (see the module docstring); ``hosts_only``:
    of the host's methods alone."""
    methods = _methods(record, hosts_only)
    primaries = {m: key for m, e in methods.items() if (key := _primary(e)) is not None}
    keys = list(primaries.values())
    tally = Counter(keys)
    pairs = len(keys) * (len(keys) - 1) // 2
    same = sum(count * (count - 1) // 2 for count in tally.values())
    lifetimes = _lifetimes(record)
    dominant = _dominant(primaries)
    return {
        "role": role,
        "namespace_key_collision_count": pairs - same,
        "namespace_multi_lifetime_key_count": sum(1 for v in lifetimes.values() if len(v) > 1),
        "namespace_continuity_violation_count": _count(
            record.get("namespace_continuity_violation_count")
        ),
        "state_key_consistency_ratio": round(tally[dominant] / len(keys), 4)
        if keys and dominant is not None
        else 1.0,
        "dominant_key": dominant,
        "method_state_keys": {m: _strings(e.get("state_keys")) for m, e in methods.items()},
        "method_primary_keys": primaries,
        "method_signatures": {
            m: e["signature"] for m, e in methods.items() if isinstance(e.get("signature"), str)
        },
        "method_return_shapes": {
            m: e["return_shape"]
            for m, e in methods.items()
            if isinstance(e.get("return_shape"), str)
        },
        "state_key_lifetimes": lifetimes,
        "continuity_violations": [
            dict(e) for e in record.get("continuity_violations", []) if isinstance(e, Mapping)
        ][-EVENTS_KEPT:],
    }


#: The figures of :func:`pressure` each logged call carries, in log order.
COUNTED_FIGURES = (
    "namespace_key_collision_count",
    "namespace_multi_lifetime_key_count",
    "namespace_continuity_violation_count",
)
# id(record) -> (record, its counted figures); the record is held so its id is not reused.
_COUNTS: dict[int, tuple[Mapping[str, Any], tuple[int, ...]]] = {}
_COUNTS_KEPT = 64
_COUNTS_LOCK = fork_safe_lock()


def pressure_counts(record: Mapping[str, Any]) -> tuple[int, ...]:
    """:data:`COUNTED_FIGURES` of a record :func:`load_namespace` returned, derived once per
    record object (such a record is shared and never changed; a changed file is a new record).
    """
    known = _COUNTS.get(id(record))
    if known is not None and known[0] is record:
        return known[1]
    figures = pressure(record, "")
    counts = tuple(figures[name] for name in COUNTED_FIGURES)
    with _COUNTS_LOCK:
        if len(_COUNTS) >= _COUNTS_KEPT:
            _COUNTS.clear()
        _COUNTS[id(record)] = (record, counts)
    return counts


def seen_values(
    record: Mapping[str, Any], *, hosts_only: bool = False
) -> dict[str, dict[str, str]]:
    """Each recorded method's value per profile kind (what the guard compares siblings by);
    ``hosts_only``: of the host's methods alone."""
    seen: dict[str, dict[str, str]] = {
        "shared_state_slot": {},
        "return_shape_family": {},
        "signature_family": {},
    }
    for method, entry in _methods(record, hosts_only).items():
        primary = _primary(entry)
        if primary is not None:
            seen["shared_state_slot"][method] = primary
        for kind, field in (
            ("return_shape_family", "return_shape"),
            ("signature_family", "signature"),
        ):
            value = entry.get(field)
            if isinstance(value, str) and value:
                seen[kind][method] = value[: KEY_CHARS * 2]
    return seen


def forget_namespace(root: Path, role: str, method: str | None = None) -> bool:
    """Drop a role's record, or one method from it; whether anything was removed."""
    path = namespace_path(root, role)
    if not path.is_file():
        return False  # nothing to forget: no directory or lock file is made for it
    if method is None:
        with locked(path, root=Path(root)):
            try:
                path.unlink()
            except FileNotFoundError:
                return False
            finally:
                # Counted even when nothing was removed, or an exception landed after the call.
                note_change()
        _DOCS.drop(path)
        return True

    def change(loaded: Loaded) -> dict[str, Any] | None:
        record = _own(loaded.data, role)
        if record is None:
            return None
        methods = _methods(record)
        if methods.pop(method, None) is None:
            return None
        return {**record, "methods": methods}

    updated = update_json(path, change, root=Path(root))
    _DOCS.drop(path)
    return updated.written
