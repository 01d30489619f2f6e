"""The progress bar of ``Agent.map(..., progress=True)``: tqdm on stderr (ADR 0113).

The only module that imports ``tqdm``, and only when a bar is asked for. It shows items done,
their rate and the failures so far; with ``progress=False`` nothing is built and nothing is
written.
"""

from __future__ import annotations

import sys
from typing import Any, Protocol

__all__ = ["Progress", "open_progress"]


class Progress(Protocol):
    """What the map tells its bar."""

    def advance(self, items: int, failed: int) -> None:
        """``items`` more are done; ``failed`` is the running count of failed items."""

    def close(self) -> None:
        """The map is over."""


class _Quiet:
    def advance(self, items: int, failed: int) -> None:
        return None

    def close(self) -> None:
        return None


class _Bar:
    def __init__(self, total: int, label: str) -> None:
        from tqdm import tqdm

        self._bar: Any = tqdm(
            total=total,
            desc=label,
            unit="item",
            file=sys.stderr,
            dynamic_ncols=True,
            mininterval=0.2,
        )
        self._failed = -1

    def advance(self, items: int, failed: int) -> None:
        if failed != self._failed:
            self._failed = failed
            self._bar.set_postfix(failed=failed, refresh=False)
        self._bar.update(items)

    def close(self) -> None:
        self._bar.close()


_QUIET = _Quiet()


def open_progress(enabled: bool, total: int, label: str) -> Progress:
    """A tqdm bar on stderr when ``enabled``, else one that does nothing."""
    if not enabled:
        return _QUIET
    return _Bar(total, label)
