"""CallLogger: one JSONL line per dynamic call, written through a private structlog logger (ADR 0007).

The library never configures structlog or the standard ``logging`` module: each logger is built
with ``structlog.wrap_logger`` and explicit processors around a tiny append-only file writer.
Writing never raises into the call; values that are not JSON are rendered with ``repr``,
secrets are redacted (:mod:`recurgent._values`), and a line is written whole or not at all
(ADR 0032).
"""

from __future__ import annotations

import json
import os
import sys
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from pydantic_core import PydanticSerializationError, to_json

from recurgent._forksafe import fork_safe_lock
from recurgent._repr import safe_repr
from recurgent._values import json_safe

__all__ = ["MAX_LINE_BYTES", "CallLogger", "LogWriteError"]

MAX_LINE_BYTES = 1_000_000
"""No log line is longer than this (in bytes, newline included)."""

# Fields that carry caller or program data; a line over MAX_LINE_BYTES loses these first.
_BULKY_FIELDS = (
    "args",
    "kwargs",
    "context",
    "outcome_value",
    "outcome_error_metadata",
    "code",
    "system_prompt",
    "user_prompt",
    "stdout",
    "error_backtrace",
    "attempt_failures",
)
_LAST_RESORT_CHARS = 1_024
# The last form of a line: each field a scalar, a string of at most 256 characters (1.5 KB of
# escaped control characters) or a marker, so a few hundred fields still fit.
_LAST_RESORT_TEXT_CHARS = 256
_LAST_RESORT_INT_BITS = 64

_DIRECTORY_LOCK = fork_safe_lock()
_WARNED_LOCK = fork_safe_lock()
_WARNED: set[str] = set()

# The one system call that writes a line; a module attribute so specs can stand in a short write.
_write = os.write


class LogWriteError(OSError):
    """A log line could not be written whole (disk full, a short write, an unwritable target)."""


def _append_whole(descriptor: int, data: bytes) -> None:
    """Append ``data`` with one write; undo a partial write so no half line stays in the file.

    Raises:
        LogWriteError: the write was short (after the partial bytes were removed).
        OSError: the write failed outright (nothing was written).
    """
    written = _write(descriptor, data)
    if written == len(data):
        return
    end = os.lseek(descriptor, 0, os.SEEK_CUR)
    start = end - written
    try:
        if os.fstat(descriptor).st_size == end:
            os.ftruncate(descriptor, start)
        else:
            # Another writer appended after our fragment; cutting would take its line too, so
            # end ours instead and the next line still starts fresh.
            _write(descriptor, b"\n")
    except OSError:
        pass
    raise LogWriteError(f"short write: {written} of {len(data)} bytes")


class _AppendWriter:
    """A structlog "logger" that appends each rendered line to a file with one ``write``.

    ``O_APPEND`` makes each line land whole even when several agents (or processes) share a log.
    """

    def __init__(self, path: Path) -> None:
        self._path = path
        self._directory_ready = False

    def msg(self, message: bytes | str) -> None:
        if not self._directory_ready:
            with _DIRECTORY_LOCK:
                self._path.parent.mkdir(parents=True, exist_ok=True)
            self._directory_ready = True
        if isinstance(message, bytes):
            data = message + b"\n"  # a rendered line (_fit): UTF-8 already
        else:
            data = (message + "\n").encode("utf-8", "replace")
        # O_NONBLOCK: a FIFO put in the log's place later must fail the write, not hang the call.
        flags = os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK
        try:
            # Without O_CREAT first: creating takes the directory's lock, which every writer
            # of a busy log directory would otherwise queue on once per line.
            descriptor = os.open(self._path, flags)
        except FileNotFoundError:
            descriptor = os.open(self._path, flags | os.O_CREAT, 0o644)
        try:
            _append_whole(descriptor, data)
        finally:
            os.close(descriptor)

    info = msg


# The standard library's encoder, for what pydantic-core's refuses (a lone surrogate, which it
# cannot write as UTF-8) and for the cut lines below; compact, as pydantic-core writes.
_ENCODER = json.JSONEncoder(ensure_ascii=False, default=safe_repr, separators=(",", ":"))


def _encoded(fields: Any) -> bytes:
    # pydantic-core's encoder writes a line's 130 fields in about a third of the time the
    # standard library's takes, and as UTF-8 bytes at once (ADR 0143).
    try:
        return to_json(fields, fallback=safe_repr)
    except PydanticSerializationError:
        return _ENCODER.encode(fields).encode("utf-8", "replace")


def _fit(fields: dict[str, Any]) -> bytes:
    """The line of ``fields`` as UTF-8 bytes, shorter than :data:`MAX_LINE_BYTES` (which counts
    the newline)."""
    line = _encoded(fields)
    if len(line) < MAX_LINE_BYTES:
        return line
    for name in _BULKY_FIELDS:
        if fields.get(name) is not None:
            fields[name] = "<omitted: line too long>"
    line = _encoded(fields)
    if len(line) < MAX_LINE_BYTES:
        return line
    # Only a pathological entry gets here: every field is cut to a short copy, and none is
    # dropped. Cut as one value (64 items), the line kept its first 64 fields: a delegated
    # child's contract fields of control characters (six bytes each) made its line 3 MB, and
    # it was written without its call_id, trace_id or outcome_status (red team R19).
    line = _encoded(
        {
            name: json_safe(
                value, max_chars=_LAST_RESORT_CHARS, max_items=16, budget=_LAST_RESORT_CHARS
            )
            for name, value in fields.items()
        }
    )
    if len(line) < MAX_LINE_BYTES:
        return line
    # Each field's own bound times the number of fields is still a bound: the scalars stay,
    # strings are cut to a few hundred characters, the rest is omitted.
    return _encoded({name: _shortest(value) for name, value in fields.items()})


def _shortest(value: Any) -> Any:
    if value is None or type(value) is bool or type(value) is float:
        return value
    if type(value) is int:
        return value if value.bit_length() <= _LAST_RESORT_INT_BITS else "<omitted: line too long>"
    if type(value) is str:
        return json_safe(value, max_chars=_LAST_RESORT_TEXT_CHARS)
    return "<omitted: line too long>"


def _render(_logger: Any, _method: str, event_dict: Mapping[str, Any]) -> bytes:
    fields = dict(event_dict)
    fields.pop("event", None)
    safe = json_safe(fields)
    return _fit(safe if isinstance(safe, dict) else {"entry": safe})


def _render_prepared(_logger: Any, _method: str, event_dict: Mapping[str, Any]) -> bytes:
    # The entry's values are already bounded, redacted JSON types (CallState.log_entry); a
    # second walk over them doubled the cost of a line (ADR 0063). _fit still bounds the line.
    fields = dict(event_dict)
    fields.pop("event", None)
    return _fit(fields)


def _warn_once(path: Path, error: BaseException) -> None:
    key = str(path)
    with _WARNED_LOCK:
        if key in _WARNED:
            return
        _WARNED.add(key)
    try:
        warnings.warn(
            f"recurgent could not write to its call log {key} ({type(error).__name__}: {error}); "
            "calls keep running, lines that fail are dropped (warned once per log file)",
            RuntimeWarning,
            stacklevel=2,
        )
    except Exception:  # noqa: BLE001 - a host turning warnings into errors must not fail the call
        sys.stderr.write(f"[recurgent] call log {key} is not writable: {error}\n")


class CallLogger:
    """Writes call entries to a JSONL file.

    Args:
        path: The log file (its directory is created on first write).
        debug: When true, every write failure is also reported on stderr.
    """

    def __init__(self, path: Path, *, debug: bool = False) -> None:
        self.path = path
        self._debug = debug
        # Every setting is explicit: a host's structlog.configure() (a level filter, its own
        # context class) must neither silence nor reshape these lines.
        # Imported here, not at module level: structlog costs about 55 ms to import, which a
        # script that never builds an agent with a log should not pay (ADR 0114).
        import structlog

        writer = _AppendWriter(path)
        # Bound loggers built directly, not through wrap_logger's lazy proxy: with every setting
        # given, the proxy built the same logger again on every line (ADR 0125).
        self._logger, self._prepared_logger = (
            structlog.BoundLogger(writer, processors=[render], context={})
            for render in (_render, _render_prepared)
        )

    def emit(self, entry: Mapping[str, Any], *, prepared: bool = False) -> bool:
        """Write one entry; return False (and never raise) when it could not be written.

        The first failure for a log file is reported with a ``RuntimeWarning`` (or on stderr
        when warnings are errors); later ones stay quiet unless ``debug`` is on.

        Args:
            entry: The line's fields, any values (made JSON-safe, bounded and redacted here).
            prepared: The values already are (``CallState.log_entry`` makes them so); only the
                line's size is checked.
        """
        logger = self._prepared_logger if prepared else self._logger
        try:
            logger.info("call", **entry)
        except Exception as error:  # noqa: BLE001 - logging must never break a call
            if self._debug:
                where = f"{entry.get('role')}.{entry.get('method')}"
                sys.stderr.write(f"[AGENT LOG ERROR {where}] {type(error).__name__}: {error}\n")
            _warn_once(self.path, error)
            return False
        return True
