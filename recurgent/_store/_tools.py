"""The tool registry of :class:`~recurgent._store.Store`: registered tools as read (cached per
process while ``registry.json`` is unchanged, ADR 0054), registrations written at once and tool
uses counted in batches (ADR 0055). The merge rules are :mod:`~recurgent._store._registry`'s.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any

from recurgent._store import _pending
from recurgent._store._batch import UsesDelta, apply_uses
from recurgent._store._cache import IdentityCache
from recurgent._store._paths import registry_path
from recurgent._store._registry import (
    load_tools,
    merge_known_tools,
    merge_registration,
    update_tools,
)
from recurgent._store._results import DEFERRED, WriteResult
from recurgent._tool_telemetry import ToolObservation, reflects

__all__ = ["ToolRegistry"]

#: Registry tools of this process, valid while their file is unchanged.
_REGISTRIES: IdentityCache[dict[str, dict[str, Any]]] = IdentityCache()


def _clone(value: Any) -> Any:
    # Registry entries are JSON: a copy per reader, so memory never shares the cached lists.
    if type(value) is dict:
        return {key: _clone(item) for key, item in value.items()}
    if type(value) is list:
        return [_clone(item) for item in value]
    return value


class ToolRegistry:
    """The registry methods of :class:`~recurgent._store.Store` (a base class of it)."""

    # Set by Store.__init__.
    root: Path

    if TYPE_CHECKING:

        def _now(self) -> str: ...

    def _tools(self) -> dict[str, dict[str, Any]]:
        """The registered tools as read (cached; shared: never hand these out)."""
        path = registry_path(self.root)
        tools = _REGISTRIES.get(path)
        if tools is None:
            tools, loaded = load_tools(self.root)
            _REGISTRIES.put(path, loaded.identity if loaded.state == "ok" else None, tools)
        return tools

    def registry_entries(self) -> dict[str, dict[str, Any]]:
        """Every registered tool's entry (empty when the registry is missing or unusable); a
        fresh copy the caller may change."""
        return {name: _clone(entry) for name, entry in self._tools().items()}

    def known_tools(self, in_memory: Mapping[str, Any] | None) -> dict[str, Any]:
        """The registry an agent should see: persisted tools merged with ``in_memory`` (its
        ``context["tools"]``), memory winning for scalars, lists unioned."""
        return merge_known_tools(self.registry_entries(), in_memory)

    def register_tool(self, name: str, contract: Mapping[str, Any] | None) -> WriteResult:
        """Record (or refresh) a delegated tool with its contract, at once (carrying the tool
        uses waiting for the registry)."""
        path = registry_path(self.root)
        waiting = _pending.USES.take(path)
        now = self._now()

        def edit(tools: dict[str, Any]) -> bool:
            if waiting is not None:
                for tool, delta in waiting.items():
                    current = tools.get(tool)
                    if isinstance(current, dict):
                        tools[tool] = apply_uses(current, delta)
            current = tools.get(name)
            tools[name] = merge_registration(
                current if isinstance(current, dict) else None, contract, now=now
            )
            return True

        result = self._write(lambda: update_tools(self.root, edit))
        if result.reason is not None and result.reason.startswith("error:") and waiting:
            _pending.USES.put_back(path, self.root, waiting)
        return result

    def touch_tool(
        self, name: str, method: str, *, ok: bool, observation: ToolObservation | None = None
    ) -> WriteResult:
        """Count one call a registered tool served (``deferred``: written in a batch, ADR
        0055), with what its program showed (ADR 0109); ``not_registered`` for other names,
        which are never counted.

        An observation the registry on disk does not reflect yet (a new program, a lifecycle
        change) is written at once, with every use waiting for the registry: a stored program
        answering again adds nothing new and waits for the batch.
        """
        tools = self._tools()
        if name not in tools:
            return WriteResult(False, "not_registered")
        now = self._now()

        def add(deltas: dict[str, UsesDelta]) -> dict[str, UsesDelta]:
            deltas.setdefault(name, UsesDelta()).add(method, ok, now, observation)
            return deltas

        path = registry_path(self.root)
        due = _pending.USES.fold(path, self.root, dict, add)
        if observation is not None and not reflects(tools[name], observation):
            waiting = _pending.USES.take(path)
            if waiting is not None:
                try:
                    _pending.write_uses(path, self.root, waiting)
                except (OSError, ValueError) as error:
                    _pending.USES.put_back(path, self.root, waiting)
                    return WriteResult(False, f"error: {type(error).__name__}: {error}")
                return WriteResult(True)
        if due:
            _pending.flush_due()
        return DEFERRED

    def _write(self, action: Callable[[], Any]) -> WriteResult:
        try:
            updated = action()
        except (OSError, ValueError) as error:
            return WriteResult(False, f"error: {type(error).__name__}: {error}")
        return WriteResult(updated.written, updated.skipped, updated.quarantined_to)
