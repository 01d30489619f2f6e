"""The tool registry in ``context["tools"]``: a mapping of tool name to plain metadata (ADR 0009).

Entries are written by ``delegate``/``tool`` and updated after each call a tool serves. The
registry must stay a mapping of plain data; :func:`integrity_violation` reports the two ways it
can be broken (not a mapping, or an executable object stored inside). :func:`ranked_tools`
orders it for the prompt (ADR 0109), :func:`overlapping_methods` finds methods that look like
one capability under several names.
"""

from __future__ import annotations

import datetime
import math
import re
from collections.abc import Mapping
from typing import Any

from recurgent._repr import safe_repr
from recurgent._tool_telemetry import ToolObservation, merge_observations, reflects
from recurgent._values import utc_timestamp
from recurgent.errors import GuardrailViolationError

__all__ = [
    "TOOLS_KEY",
    "count",
    "integrity_violation",
    "lifecycle_state",
    "overlapping_methods",
    "ranked_tools",
    "record_tool_use",
    "register_tool",
    "utility",
]

TOOLS_KEY = "tools"
_CONTRACT_SUMMARY_FIELDS = ("deliverable", "acceptance", "failure_policy")


def _registry(memory: dict[str, Any]) -> dict[str, Any]:
    tools = memory.get(TOOLS_KEY)
    if not isinstance(tools, dict):
        tools = {}
        memory[TOOLS_KEY] = tools
    return tools


def register_tool(
    memory: dict[str, Any], name: str, contract: Mapping[str, Any] | None
) -> dict[str, Any]:
    """Record (or refresh) a delegated tool and return its entry."""
    tools = _registry(memory)
    contract = contract or {}
    entry = tools.get(name)
    if not isinstance(entry, dict):
        entry = {
            "purpose": contract.get("purpose") or "purpose unavailable",
            "methods": [],
            "usage_count": 0,
            "success_count": 0,
            "failure_count": 0,
            "created_at": utc_timestamp(),
        }
        tools[name] = entry
    elif contract.get("purpose"):
        entry["purpose"] = contract["purpose"]
    for key in _CONTRACT_SUMMARY_FIELDS:
        if contract.get(key) is not None:
            value = contract[key]
            # A typed deliverable is a dict subclass holding a validator: memory keeps its
            # JSON Schema only, as plain data.
            entry[key] = dict(value) if isinstance(value, dict) else value
    signature = contract.get("intent_signature")
    if isinstance(signature, str) and signature.strip():
        entry["intent_signature"] = signature
        signatures = [s for s in entry.get("intent_signatures", []) if s != signature]
        entry["intent_signatures"] = [*signatures, signature][-6:]
    return entry


def count(entry: Mapping[str, Any], key: str) -> int:
    """A usage counter of an entry; a missing or malformed value (generated code may write
    anything into the registry) counts as 0."""
    value = entry.get(key)
    if isinstance(value, bool) or not isinstance(value, int | float):
        return 0
    return max(int(value), 0)


def record_tool_use(
    memory: dict[str, Any],
    name: str,
    method: str,
    ok: bool,
    observation: ToolObservation | None = None,
) -> None:
    """Count one call served by a registered tool (no-op for unregistered names), with what the
    tool's program showed (ADR 0109)."""
    tools = memory.get(TOOLS_KEY)
    entry = tools.get(name) if isinstance(tools, dict) else None
    if not isinstance(entry, dict):
        return
    methods = entry.get("methods")
    if not isinstance(methods, list):
        methods = entry["methods"] = []
    if method not in methods:
        methods.append(method)
    entry["usage_count"] = count(entry, "usage_count") + 1
    counter = "success_count" if ok else "failure_count"
    entry[counter] = count(entry, counter) + 1
    entry["last_used_at"] = utc_timestamp()
    if observation is not None and not reflects(entry, observation):
        entry.update(merge_observations(entry, [observation]))


# Most paths a registry violation names, and characters of each key a path writes.
_MOST_PATHS = 20
_PATH_KEY_CHARS = 80


def _executable_paths(value: Any, path: str) -> list[str]:
    """Where agents or callables sit in ``value``: each container visited once, each key
    written (bounded) only for a path found. Writing every key's ``repr`` on the way down made
    a program's tuple key of 30 000 shared 6 000-character strings 180 million characters per
    check, and a shared list was walked once per reference (red team R17)."""
    found: list[str] = []
    seen: set[int] = set()
    stack: list[tuple[Any, tuple[Any, ...]]] = [(value, ())]
    while stack and len(found) < _MOST_PATHS:
        item, steps = stack.pop()
        if len(steps) > 32 or item is None or isinstance(item, str | int | float | bool):
            continue
        # Agents and handles are not callable themselves; they carry a class-level marker.
        if callable(item) or getattr(type(item), "__recurgent_agent__", False):
            found.append(path + "".join(_step_text(step) for step in steps))
            continue
        if id(item) in seen:
            continue
        seen.add(id(item))
        if isinstance(item, Mapping):
            children = [(child, (*steps, (key,))) for key, child in item.items()]
        elif isinstance(item, list | tuple | set | frozenset):
            children = [(child, (*steps, index)) for index, child in enumerate(item)]
        else:
            continue
        stack.extend(reversed(children))
    return found


def _step_text(step: Any) -> str:
    if isinstance(step, tuple):  # a mapping's key
        return f"[{safe_repr(step[0], (), limit=_PATH_KEY_CHARS)}]"
    return f"[{step}]"


def integrity_violation(
    memory: Mapping[str, Any], *, phase: str, role: str, method: str
) -> GuardrailViolationError | None:
    """Check ``context["tools"]`` is a mapping of plain metadata."""
    if TOOLS_KEY not in memory or memory[TOOLS_KEY] is None:
        return None
    tools = memory[TOOLS_KEY]
    if not isinstance(tools, Mapping):
        return GuardrailViolationError(
            f"context['tools'] must be a dict keyed by tool name, got {type(tools).__name__} "
            f"({phase} {role}.{method})",
            subtype="tool_registry_shape",
            correction="keep context['tools'] a dict of tool name -> metadata dict; never "
            "replace it with a list or another value",
        )
    paths = _executable_paths(tools, "context['tools']")
    if paths:
        return GuardrailViolationError(
            "Tool registry metadata cannot store executable objects "
            f"({phase} {role}.{method}): {', '.join(paths)}",
            subtype="executable_registry_metadata",
            correction="store only plain metadata in context['tools']; get a callable tool "
            "with tool('name') or delegate('name', ...) when you need one",
        )
    return None


#: Lifecycle states in the order the prompt prefers them, and the boost each adds to a tool's
#: utility (the original's known-tool ranking, parity 8.21); an unknown state ranks as candidate.
_LIFECYCLE_RANK = {"durable": 3, "probation": 2, "candidate": 1, "degraded": 0}
_LIFECYCLE_BOOST = {"durable": 0.2, "probation": 0.05, "degraded": -0.25}
#: Days over which an unused tool's success counts for 1/e of itself.
RECENCY_DAYS = 30.0
_NO_RECENCY = 0.25
_STAMP_CHARS = 40


def lifecycle_state(entry: Mapping[str, Any]) -> str | None:
    """The lifecycle state an entry reports: its ``lifecycle_state``, else the best state among
    an original-style ``version_scorecards`` map (durable, probation, candidate, degraded)."""
    explicit = entry.get("lifecycle_state")
    if isinstance(explicit, str) and explicit.strip() and len(explicit) <= _STAMP_CHARS:
        return explicit.strip()
    cards = entry.get("version_scorecards")
    if not isinstance(cards, Mapping):
        return None
    states = {
        card.get("lifecycle_state")
        for card in list(cards.values())[:64]
        if isinstance(card, Mapping)
    }
    return next((s for s in ("durable", "probation", "candidate", "degraded") if s in states), None)


def _recency(entry: Mapping[str, Any], now: datetime.datetime) -> float:
    stamp = entry.get("last_used_at")
    if not isinstance(stamp, str) or not stamp.strip() or len(stamp) > _STAMP_CHARS:
        return _NO_RECENCY
    try:
        used = datetime.datetime.fromisoformat(stamp.strip())
    except ValueError:
        return _NO_RECENCY
    if used.tzinfo is None:
        used = used.replace(tzinfo=datetime.UTC)
    days = max((now - used).total_seconds() / 86_400, 0.0)
    return math.exp(-days / RECENCY_DAYS)


def utility(entry: Mapping[str, Any], now: datetime.datetime) -> float:
    """success rate x recency decay + ln(1 + uses)/10 + lifecycle boost (the original's score;
    a tool never used has a success rate of 0.5, one with no usable stamp a decay of 0.25)."""
    successes = count(entry, "success_count")
    failures = count(entry, "failure_count")
    rate = successes / (successes + failures) if successes + failures else 0.5
    boost = _LIFECYCLE_BOOST.get(lifecycle_state(entry) or "", 0.0)
    return rate * _recency(entry, now) + math.log1p(count(entry, "usage_count")) / 10 + boost


def ranked_tools(
    memory: Mapping[str, Any], limit: int = 12, now: datetime.datetime | None = None
) -> list[tuple[str, dict[str, Any]]]:
    """Registered tools, most useful first (the original's ranking, ADR 0109): lifecycle state
    (durable, probation, candidate or unknown, degraded), then :func:`utility`, then usage,
    then name."""
    tools = memory.get(TOOLS_KEY)
    if not isinstance(tools, Mapping):
        return []
    moment = now or datetime.datetime.now(datetime.UTC)
    entries = [(str(name), entry) for name, entry in tools.items() if isinstance(entry, dict)]

    def usefulness(item: tuple[str, dict[str, Any]]) -> tuple[int, float, int, str]:
        entry = item[1]
        rank = _LIFECYCLE_RANK.get(lifecycle_state(entry) or "", 1)
        return (-rank, -utility(entry, moment), -count(entry, "usage_count"), item[0])

    return sorted(entries, key=usefulness)[:limit]


_WORDS = re.compile(r"[A-Z]?[a-z0-9]+|[A-Z]+(?![a-z])")
#: Words too general to say two methods do the same thing.
_GENERAL = frozenset({"get", "set", "the", "and", "for", "with", "from", "all", "new", "one"})


def _words(method: str) -> set[str]:
    return {w.lower() for w in _WORDS.findall(method[:200]) if len(w) >= 3} - _GENERAL


def overlapping_methods(memory: Mapping[str, Any], limit: int = 12) -> list[tuple[str, list[str]]]:
    """Tools (the first ``limit`` in registry order) with methods that share a name word
    (``fetch`` and ``fetch_url``): each such group, sorted, as ``(tool, methods)``.

    The original listed every tool with two methods or more; a calculator's ``add`` and
    ``subtract`` are not one capability, so here only methods whose names share a word are.
    """
    tools = memory.get(TOOLS_KEY)
    if not isinstance(tools, Mapping):
        return []
    found: list[tuple[str, list[str]]] = []
    for name, entry in list(tools.items())[:limit]:
        methods = entry.get("methods") if isinstance(entry, Mapping) else None
        if not isinstance(methods, list):
            continue
        named = list(dict.fromkeys(m for m in methods[:64] if isinstance(m, str) and m.strip()))
        groups: list[tuple[set[str], set[str]]] = []  # (words, methods)
        for method in named:
            words = _words(method)
            joined = [g for g in groups if g[0] & words]
            merged = (set(words), {method})
            for group in joined:
                groups.remove(group)
                merged[0].update(group[0])
                merged[1].update(group[1])
            groups.append(merged)
        found.extend((str(name), sorted(g[1])) for g in groups if len(g[1]) > 1)
    return found
