"""Helpers of the map specs: agents over counting providers, and reading a map's log lines."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from recurgent import Agent
from recurgent.providers import ProviderRequest
from recurgent.testing import FunctionProvider, read_log

DOUBLE = "result = args[0] * 2"
"""A program that answers every item: twice the item."""


def counting_agent(
    tmp_path: Path,
    replies: list[str] | str,
    *,
    role: str = "mapper",
    delay: float = 0.0,
    **options: Any,
) -> tuple[Agent, FunctionProvider]:
    """An agent logging into ``tmp_path`` whose provider answers with ``replies`` in order
    (the last one again when they run out), after ``delay`` seconds each."""
    queue = [replies] if isinstance(replies, str) else list(replies)
    lock = threading.Lock()

    def reply(request: ProviderRequest) -> str:
        if delay:
            time.sleep(delay)
        with lock:
            return queue.pop(0) if len(queue) > 1 else queue[0]

    provider = FunctionProvider(reply)
    options.setdefault("log", tmp_path / "calls.jsonl")
    return Agent(role, provider=provider, **options), provider


def map_lines(log: Path) -> list[dict[str, Any]]:
    """The summary lines of maps in a log."""
    return [entry for entry in read_log(log) if entry.get("entry_kind") == "map"]


def lines_of(log: Path, kind: str) -> list[dict[str, Any]]:
    """Log lines of one ``entry_kind`` (``None``: the ordinary call lines)."""
    return [entry for entry in read_log(log) if entry.get("entry_kind") == kind]


def values(outcomes: list[Any]) -> list[Any]:
    """Each Outcome's value, or ``(error_type,)`` for an error."""
    return [o.value if o.ok else (o.error_type,) for o in outcomes]


def pick(entry: Mapping[str, Any], *names: str) -> dict[str, Any]:
    """The named fields of a log entry."""
    return {name: entry.get(name) for name in names}


def in_threads(count: int, work: Callable[[int], Any]) -> list[Any]:
    """Run ``work(i)`` on ``count`` threads started together; their results in order."""
    results: list[Any] = [None] * count
    barrier = threading.Barrier(count)

    def run(index: int) -> None:
        barrier.wait()
        results[index] = work(index)

    threads = [threading.Thread(target=run, args=(i,)) for i in range(count)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return results
