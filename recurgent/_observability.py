"""CallLogger: one JSONL line per dynamic call, written through a private structlog logger (ADR 0007).

The library never configures structlog or the standard ``logging`` module: each logger is built
with ``structlog.wrap_logger`` and explicit processors around a tiny append-only file writer.
Writing never raises into the call; values that are not JSON are rendered with ``repr`` and
secrets are redacted (:mod:`recurgent._values`).
"""

from __future__ import annotations

import json
import os
import sys
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import structlog

from recurgent._values import json_safe, safe_repr

__all__ = ["CallLogger"]

_DIRECTORY_LOCK = threading.Lock()


class _AppendWriter:
    """A structlog "logger" that appends each rendered line to a file with one ``write``.

    ``O_APPEND`` makes each line land whole even when several agents (or processes) share a log.
    """

    def __init__(self, path: Path) -> None:
        self._path = path
        self._directory_ready = False

    def msg(self, message: str) -> None:
        if not self._directory_ready:
            with _DIRECTORY_LOCK:
                self._path.parent.mkdir(parents=True, exist_ok=True)
            self._directory_ready = True
        data = (message + "\n").encode("utf-8", "replace")
        descriptor = os.open(self._path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
        try:
            os.write(descriptor, data)
        finally:
            os.close(descriptor)

    info = msg


def _render(_logger: Any, _method: str, event_dict: Mapping[str, Any]) -> str:
    fields = dict(event_dict)
    fields.pop("event", None)
    return json.dumps(json_safe(fields), ensure_ascii=False, default=safe_repr)


class CallLogger:
    """Writes call entries to a JSONL file.

    Args:
        path: The log file (its directory is created on first write).
        debug: When true, write failures are reported on stderr.
    """

    def __init__(self, path: Path, *, debug: bool = False) -> None:
        self.path = path
        self._debug = debug
        # Every setting is explicit: a host's structlog.configure() (a level filter, its own
        # context class) must neither silence nor reshape these lines.
        self._logger = structlog.wrap_logger(
            _AppendWriter(path),
            processors=[_render],
            wrapper_class=structlog.BoundLogger,
            context_class=dict,
            cache_logger_on_first_use=False,
        )

    def emit(self, entry: Mapping[str, Any]) -> bool:
        """Write one entry; return False (and never raise) when it could not be written."""
        try:
            self._logger.info("call", **entry)
        except Exception as error:  # noqa: BLE001 - logging must never break a call
            if self._debug:
                where = f"{entry.get('role')}.{entry.get('method')}"
                sys.stderr.write(f"[AGENT LOG ERROR {where}] {type(error).__name__}: {error}\n")
            return False
        return True
