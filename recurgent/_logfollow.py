"""LogFollower: reads the JSONL call log incrementally, like ``tail -f``, for ``recurgent watch``."""

from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = ["LogFollower", "follow"]


class LogFollower:
    """Reads the entries appended to a JSONL log since the previous poll, like ``tail -f``.

    An incomplete last line stays buffered until its newline arrives. When the file shrinks or
    is replaced (truncation, rotation) reading restarts from its beginning. A missing file reads
    as empty. Blank lines are skipped; lines that are not a JSON object are counted in
    :attr:`skipped`.

    Args:
        path: The JSONL log file.
    """

    def __init__(self, path: Path) -> None:
        self.path = path
        self.skipped = 0
        self._position = 0
        self._identity: tuple[int, int] | None = None
        self._pending = b""

    def poll(self, *, final: bool = False) -> list[dict[str, Any]]:
        """The entries completed since the last poll.

        Args:
            final: Also parse a last line that has no newline yet (for a one-shot read).

        Raises:
            OSError: The file exists but cannot be read.
        """
        try:
            with self.path.open("rb") as file:
                status = os.fstat(file.fileno())
                identity = (status.st_dev, status.st_ino)
                if identity != self._identity or status.st_size < self._position:
                    self._identity = identity
                    self._position = 0
                    self._pending = b""
                file.seek(self._position)
                data = file.read()
        except FileNotFoundError:
            return []
        self._position += len(data)
        lines = (self._pending + data).split(b"\n")
        self._pending = b"" if final else lines.pop()
        return [entry for entry in map(self._parse, lines) if entry is not None]

    def _parse(self, raw: bytes) -> dict[str, Any] | None:
        text = raw.decode("utf-8", "replace").strip()
        if not text:
            return None
        try:
            entry = json.loads(text)
        except (ValueError, RecursionError):  # RecursionError: absurdly deep nesting
            entry = None
        if not isinstance(entry, dict):
            self.skipped += 1
            return None
        return entry


def follow(
    follower: LogFollower,
    on_entries: Callable[[list[dict[str, Any]]], None],
    *,
    poll_seconds: float,
    stop: Callable[[], bool] = lambda: False,
    sleep: Callable[[float], None] = time.sleep,
    max_polls: int | None = None,
) -> int:
    """Poll ``follower`` and hand every non-empty batch to ``on_entries`` until told to stop.

    Args:
        follower: Where new entries come from.
        on_entries: Receives each batch of new entries, in file order.
        poll_seconds: Pause before each poll.
        stop: Checked before each pause; returning true ends the loop.
        sleep: The pause (tests pass a fake or a short real one).
        max_polls: End after this many polls (``None``: only ``stop`` or Ctrl-C end it).

    Returns:
        How many polls were made.
    """
    polls = 0
    while (max_polls is None or polls < max_polls) and not stop():
        sleep(poll_seconds)
        batch = follower.poll()
        polls += 1
        if batch:
            on_entries(batch)
    return polls
