"""SecretIndex: the secret values in one agent's memory, walked again only where memory changed.

Every log line masks strings stored under secret-named keys (ADR 0032, ``secret_values``)
wherever they appear, in prompts, code and stdout too. Walking memory for them on every call
made a trivial call's cost grow with memory (issue 22: 50,000 rows cost 1.9x a fresh call).
The index remembers, per top-level key, the value it walked (held, so its identity cannot be
reused), a shallow stamp (its length) and the secrets found. A call whose memory holds the same
key and value objects as the last call's reuses the last answer; otherwise it walks only the
keys whose value is new or resized, or that a commit touched. Every :data:`REWALK_AFTER` calls
it walks everything again: the backstop for host code that changes a nested value in place
behind the runtime's back. See ADR 0120.
"""

from __future__ import annotations

import operator
from collections.abc import Iterable, Mapping
from typing import Any

from recurgent._forksafe import fork_safe_lock
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
    """Secret values under one agent's memory keys, cached per key (thread-safe).

    A call whose memory holds the same key and value objects as the last call's, in the same
    order (checked in C, by identity), and that no commit touched, reuses the last answer: no
    Python loop over memory. Otherwise the keys are examined one by one, walking only values
    that are new or changed.
    """

    __slots__ = ("_calls", "_entries", "_found", "_keys", "_lock", "_values")

    def __init__(self) -> None:
        self._entries: dict[Any, _Entry] = {}
        self._calls = 0
        self._keys: tuple[Any, ...] = ()
        self._values: tuple[Any, ...] = ()
        self._found: set[str] = set()
        self._lock = fork_safe_lock()

    def secrets(self, memory: Mapping[Any, Any], *, skip: Any = None) -> set[str]:
        """Strings stored under secret-named keys anywhere in ``memory`` (but key ``skip``)."""
        try:
            # Two C calls; a dict another thread changes in between is read again next call.
            keys, values = tuple(memory.keys()), tuple(memory.values())
        except Exception:  # noqa: BLE001 - memory another thread is changing is read next call
            return set()
        if len(keys) != len(values):
            return set()
        with self._lock:
            self._calls += 1
            rewalk = self._calls % REWALK_AFTER == 0
            if (
                not rewalk
                and len(keys) == len(self._keys)
                and all(map(operator.is_, keys, self._keys))
                and all(map(operator.is_, values, self._values))
            ):
                return set(self._found)
            found = self._scan(keys, values, skip, rewalk=rewalk)
            self._keys, self._values, self._found = keys, values, found
            return set(found)

    def _scan(
        self, keys: tuple[Any, ...], values: tuple[Any, ...], skip: Any, *, rewalk: bool
    ) -> set[str]:
        entries = self._entries
        if rewalk:
            # Drop entries of keys deleted behind the runtime's back (they hold the value), and
            # walk every value again (host code may change a nested value in place).
            present = set(keys)
            self._entries = entries = {k: e for k, e in entries.items() if k in present}
            for entry in entries.values():
                entry.uses = REWALK_AFTER
        found: set[str] = set()
        for key, value in zip(keys, values, strict=True):
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
            cached = entries.get(key)
            stamp = _stamp(value)
            if (
                cached is None
                or cached.value is not value
                or cached.stamp != stamp
                or cached.uses >= REWALK_AFTER
            ):
                entry = _Entry(value, stamp, secret_values({key: value}))
                entries[key] = entry
            else:
                entry = cached
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
            # The next call examines its keys instead of reusing the last answer.
            self._keys = self._values = ()
