"""SecretIndex: the secret values in one agent's memory, walked again only where memory changed.

Every log line masks strings stored under secret-named keys (ADR 0032, ``secret_values``)
wherever they appear, in prompts, code and stdout too. Walking memory for them on every call
made a trivial call's cost grow with memory (issue 22: 50,000 rows cost 1.9x a fresh call).
The index remembers, per top-level key, the value it walked (held, so its identity cannot be
reused), a shallow stamp (its length) and the secrets found; a call walks only keys whose value
is new, whose length changed, that a commit touched, or whose entry has served
:data:`REWALK_AFTER` calls (the backstop for host code that changes a nested value in place
behind the runtime's back). See ADR 0120.
"""

from __future__ import annotations

import threading
from collections.abc import Iterable, Mapping
from typing import Any

from recurgent._redact import MASK, is_secret_key
from recurgent._values import secret_values

__all__ = ["REWALK_AFTER", "SecretIndex"]

#: Calls an entry serves before its value is walked again.
REWALK_AFTER = 32
_PLAIN = (str, int, float, bool, type(None), bytes)
_MIN_CHARS = 4
_MAX_SECRETS = 64


class _Entry:
    __slots__ = ("secrets", "stamp", "uses", "value")

    def __init__(self, value: Any, stamp: int, secrets: tuple[str, ...]) -> None:
        self.value, self.stamp, self.secrets, self.uses = value, stamp, secrets, 0


def _stamp(value: Any) -> int:
    try:
        return len(value)
    except Exception:  # noqa: BLE001 - an object without a length is stamped by identity alone
        return -1


class SecretIndex:
    """Secret values under one agent's memory keys, cached per key (thread-safe)."""

    __slots__ = ("_calls", "_entries", "_lock")

    def __init__(self) -> None:
        self._entries: dict[Any, _Entry] = {}
        self._calls = 0
        self._lock = threading.Lock()

    def secrets(self, memory: Mapping[Any, Any], *, skip: Any = None) -> set[str]:
        """Strings stored under secret-named keys anywhere in ``memory`` (but key ``skip``)."""
        try:
            items = list(memory.items())
        except Exception:  # noqa: BLE001 - memory another thread is changing is read next call
            return set()
        found: set[str] = set()
        with self._lock:
            self._calls += 1
            if self._calls % REWALK_AFTER == 0:
                # Drop entries of keys deleted behind the runtime's back (they hold the value).
                present = {key for key, _ in items}
                self._entries = {k: e for k, e in self._entries.items() if k in present}
            entries = self._entries
            for key, value in items:
                if key == skip:
                    continue
                if type(value) in _PLAIN:
                    if (
                        type(value) is str
                        and len(value) >= _MIN_CHARS
                        and value != MASK
                        and isinstance(key, str)
                        and is_secret_key(key)
                    ):
                        found.add(value)
                    continue
                entry = entries.get(key)
                stamp = _stamp(value)
                if (
                    entry is None
                    or entry.value is not value
                    or entry.stamp != stamp
                    or entry.uses >= REWALK_AFTER
                ):
                    entry = _Entry(value, stamp, secret_values({key: value}))
                    entries[key] = entry
                entry.uses += 1
                found.update(entry.secrets)
                if len(found) >= _MAX_SECRETS:
                    break
        return found

    def forget(self, keys: Iterable[Any]) -> None:
        """Walk these keys again at the next call (a commit changed what is under them)."""
        with self._lock:
            for key in keys:
                self._entries.pop(key, None)
