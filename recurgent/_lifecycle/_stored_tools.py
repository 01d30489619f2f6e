"""The tool registry on disk as an agent sees it (ADRs 0047, 0056).

The persisted registry is merged into an agent's ``context["tools"]``; a tool's registration
and the calls made through it reach ``registry.json`` only when the attempt that made them
commits (at once outside an attempt), so a rolled-back attempt leaves nothing on disk.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from recurgent._journal import after_commit, writable
from recurgent._registry import TOOLS_KEY
from recurgent._store import Store
from recurgent._tool_telemetry import ToolObservation

__all__ = ["hydrate_tools", "register_stored_tool", "touch_stored_tool"]


def hydrate_tools(store: Store | None, memory: dict[str, Any]) -> bool:
    """Merge the persisted registry into ``memory``'s ``tools`` (memory wins for scalars);
    False when there is nothing persisted to merge."""
    if store is None:
        return False
    persisted = store.registry_entries()
    if not persisted:
        return False
    # Inside this agent's attempt the merge lands in the attempt's view (ADR 0027).
    target = writable(memory)
    current = target.get(TOOLS_KEY)
    if current is not None and not isinstance(current, Mapping):
        return False  # a broken registry is the integrity guard's to report
    merged = store.known_tools(current)
    if isinstance(current, dict):
        # In place: a running program may hold this very dict as context["tools"].
        current.update(merged)
    else:
        target[TOOLS_KEY] = merged
    return True


def touch_stored_tool(
    store: Store | None,
    memory: dict[str, Any],
    name: str,
    method: str,
    *,
    ok: bool,
    observation: ToolObservation | None = None,
) -> None:
    """Count a call through a registered tool on disk once the attempt that made it commits,
    as its count in memory does (with what the tool's program showed, ADR 0109)."""
    if store is None:
        return

    def touch() -> None:
        store.touch_tool(name, method, ok=ok, observation=observation)

    if not after_commit(memory, touch):
        touch()


def register_stored_tool(
    store: Store | None,
    memory: dict[str, Any],
    registered: set[str],
    name: str,
    contract: Mapping[str, Any] | None,
    *,
    refresh: bool,
) -> None:
    """Register ``name`` in registry.json when the current attempt commits (at once outside an
    attempt). ``registered`` holds the names this agent has written; without ``refresh`` one of
    them is not written again."""
    if store is None or (not refresh and name in registered):
        return

    def register() -> None:
        if store.register_tool(name, contract).written:
            registered.add(name)

    if not after_commit(memory, register):
        register()
