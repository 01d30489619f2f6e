"""LogView: the bounded, redacted copies of one call's values that its log line carries (ADRs
0032, 0063, 0125).

Every string of a log line is redacted against the secrets of its call (secret-named
environment variables, the call's arguments, the agent's memory); containers are copied with
caps per string, per container and per field (:func:`~recurgent._values.json_safe`).

What a string becomes depends only on the string and on those secrets, and most strings of a
line (names, fixed words, checksums, the same program text) are the same call after call: the
copies of short strings (and of long texts, within a size budget) are kept per set of secrets
and reused while the set is unchanged (ADR 0125). Small containers of plain values (the solver
shape, the self model, a few arguments) are copied by a direct walk that gives what
``json_safe`` gives when its total budget cannot bind, and that hands anything else (other
types, deep or long containers, a copy near the budget) to ``json_safe`` itself.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from recurgent._history import HISTORY_KEY
from recurgent._redact import MASK, environment_secrets, is_secret_key, redact
from recurgent._secret_index import SecretIndex
from recurgent._values import json_safe, secret_values

__all__ = [
    "LOG_FIELD_BUDGET",
    "LOG_HISTORY_RECORDS",
    "LOG_ITEMS",
    "LOG_STRING_CHARS",
    "LOG_TEXT_CHARS",
    "LogView",
]

# Log copies of values are bounded so one line stays well under 1 MB whatever the call carried
# (ADR 0032): each string, each container and each value field has a cap.
LOG_STRING_CHARS = 4_096
LOG_ITEMS = 100
LOG_FIELD_BUDGET = 100_000
LOG_TEXT_CHARS = 65_536
# Debug lines copy memory; only the newest history records go with it, so lines stay flat over
# a long session instead of growing with every call.
LOG_HISTORY_RECORDS = 10

# Strings up to this length are remembered with their copy. Redaction makes a string at most
# 2.5 times longer (a 4-character secret becomes the 10-character mask), so the copy of such a
# string is never cut by any cap here: it is the same copy for a field, a value and a text.
_SHORT = 256
_SHORT_KEPT = 4_096
# Longer texts (a program, its output, prompts) are remembered by the text-field rule only,
# up to this many characters in all: a stored program answering again is redacted once.
_LONG_CHARS_KEPT = 1_000_000
# The direct walk hands deeper containers to json_safe (which caps depth at 32).
_DIRECT_DEPTH = 16
# The walk's copy is json_safe's while the budget left stays above one string's cap: then no
# string is cut for the budget and no container is emptied.
_DIRECT_SPEND = LOG_FIELD_BUDGET - LOG_STRING_CHARS
_SMALL_INT = 2**53


class _Indirect(Exception):
    """Raised inside the direct walk: the value needs json_safe's own walk."""


class _Copies:
    """Copies made under one set of secrets: never emptied in place (another thread may be
    reading it), replaced by a new one when the set changes or it is full."""

    __slots__ = ("long", "long_chars", "names", "secrets", "short")

    def __init__(self, secrets: tuple[str, ...]) -> None:
        self.secrets = secrets
        # string -> (copy, len(copy))
        self.short: dict[str, tuple[str, int]] = {}
        # mapping key -> (copy, len(copy), whether the copy names a secret)
        self.names: dict[str, tuple[str, int, bool]] = {}
        self.long: dict[str, str] = {}
        self.long_chars = 0


_copies = _Copies(())


def _current(secrets: tuple[str, ...]) -> _Copies:
    global _copies  # one process-wide slot, replaced in one assignment
    copies = _copies
    if copies.secrets != secrets:
        copies = _copies = _Copies(secrets)
    return copies


def _without_history(memory: dict[str, Any]) -> Mapping[Any, Any]:
    if HISTORY_KEY not in memory:
        return memory
    return {key: value for key, value in memory.items() if key != HISTORY_KEY}


def _recent(memory: dict[str, Any]) -> dict[Any, Any]:
    """A shallow view of ``memory`` whose history holds only the newest records."""
    history = memory.get(HISTORY_KEY)
    if not isinstance(history, list) or len(history) <= LOG_HISTORY_RECORDS:
        return memory
    view: dict[Any, Any] = dict(memory)
    omitted = len(history) - LOG_HISTORY_RECORDS
    view[HISTORY_KEY] = [f"<{omitted} earlier records omitted>", *history[-LOG_HISTORY_RECORDS:]]
    return view


class LogView:
    """Bounded, redacted log copies of one call's values (ADR 0032).

    Besides the usual redaction, every string stored under a secret-named key in the call's
    arguments or the agent's memory is masked wherever it appears: in prompts, code, stdout and
    messages too, where no key marks it.

    Attributes:
        secrets: The strings masked, longest first.
        short: Copies of short strings under these secrets (``string -> (copy, length)``);
            :meth:`field` of a string found here is its first item.
    """

    __slots__ = ("_copies", "_spent", "secrets", "short")

    def __init__(
        self,
        args: Any,
        kwargs: Any,
        memory: dict[str, Any],
        *,
        with_history: bool,
        index: SecretIndex | None = None,
    ) -> None:
        # History records are written by the runtime with secret-named values already masked,
        # and no prompt shows them, so only text a program printed or raised (or a debug line,
        # which copies the newest records) can carry a value a program planted there: other
        # lines search memory without them (ADR 0063, amending 0053). The rest of memory is
        # searched through the agent's index, which walks only what changed (ADR 0120).
        found = {*environment_secrets(), *secret_values(args, kwargs)}
        if index is None:
            found.update(
                secret_values(_recent(memory) if with_history else _without_history(memory))
            )
        else:
            found.update(index.secrets(memory, skip=HISTORY_KEY))
            history = memory.get(HISTORY_KEY)
            if with_history and isinstance(history, list):
                found.update(secret_values(history[-LOG_HISTORY_RECORDS:]))
        self.secrets = tuple(sorted(found, key=len, reverse=True))
        self._copies = copies = _current(self.secrets)
        self.short = copies.short
        self._spent = 0

    def value(self, value: Any) -> Any:
        """A value field's copy: json_safe with the log's caps and this call's secrets."""
        kind = type(value)
        if kind is str and value in self.short:
            return self.short[value][0]
        if kind is dict or kind is list or kind is tuple:
            if not value:
                return {} if kind is dict else []
            self._spent = 0
            try:
                copy = self._direct(value, 0)
            except _Indirect:
                pass
            else:
                # Spending only grows: under the limit at the end, it was under it throughout.
                if self._spent <= _DIRECT_SPEND:
                    return copy
        return json_safe(
            value,
            max_chars=LOG_STRING_CHARS,
            max_items=LOG_ITEMS,
            budget=LOG_FIELD_BUDGET,
            secrets=self.secrets,
        )

    def text(self, text: str | None) -> str | None:
        """A free-text field's copy (code, output, messages, prompts): cut at 64 KiB."""
        if text is None:
            return None
        if type(text) is not str:  # a subclass is copied as it is, never remembered
            return json_safe(text, max_chars=LOG_TEXT_CHARS, secrets=self.secrets)  # type: ignore[no-any-return]
        if text in self.short:
            return self.short[text][0]
        if len(text) <= _SHORT:
            return self._short(text)[0]
        copies = self._copies
        if text in copies.long:
            return copies.long[text]
        copy: str = json_safe(text, max_chars=LOG_TEXT_CHARS, secrets=self.secrets)
        if copies.long_chars + len(text) <= _LONG_CHARS_KEPT:
            copies.long_chars += len(text)
            copies.long[text] = copy
        return copy

    def memory(self, memory: dict[str, Any]) -> Any:
        """The debug line's copy of memory (the newest history records only)."""
        return self.value(_recent(memory))

    def field(self, value: Any) -> Any:
        """A short field (a name, a count, a flag, a reason) made safe like any other value."""
        kind = type(value)
        if value is None or kind is bool or (kind is int and -_SMALL_INT < value < _SMALL_INT):
            return value
        if kind is float and value - value == 0.0:  # finite (inf - inf and nan are nan)
            return value
        if kind is str:
            if value in self.short:
                return self.short[value][0]
            if len(value) <= _SHORT:
                return self._short(value)[0]
            if len(value) <= LOG_STRING_CHARS and value.isascii():
                return redact(value, self.secrets)
            return json_safe(value, max_chars=LOG_STRING_CHARS, secrets=self.secrets)
        return self.value(value)

    def _short(self, raw: str) -> tuple[str, int]:
        """The copy of a string of at most ``_SHORT`` characters, remembered."""
        # Lone surrogates become "?" as json_safe replaces them; ASCII needs no pass.
        clean = raw if raw.isascii() else raw.encode("utf-8", "replace").decode("utf-8")
        copy = redact(clean, self.secrets)
        entry = (copy, len(copy))
        if len(self.short) >= _SHORT_KEPT:
            self._renew()
        self.short[raw] = entry
        return entry

    def _name(self, key: str) -> tuple[str, int, bool]:
        """The copy of a mapping key, and whether the copy names a secret, remembered."""
        if len(key) > _SHORT:
            raise _Indirect
        copy, size = self.short[key] if key in self.short else self._short(key)
        entry = (copy, size, is_secret_key(copy))
        names = self._copies.names
        if len(names) >= _SHORT_KEPT:
            self._renew()
            names = self._copies.names
        names[key] = entry
        return entry

    def _renew(self) -> None:
        # Full (ids and times differ every call): this view and later ones start a fresh set.
        global _copies  # the slot _current reads; one assignment
        _copies = self._copies = _Copies(self.secrets)
        self.short = _copies.short

    def _direct(self, item: Any, depth: int) -> Any:
        """json_safe's copy of a dict, list or tuple of plain values, or :class:`_Indirect`.

        Spends as json_safe's walk spends (each string its copy's length, each number 8, each
        container 1, each masked value 10); gives up at a container reached once the budget
        could bind (the caller checks the total too).
        """
        if depth >= _DIRECT_DEPTH or len(item) > LOG_ITEMS or self._spent > _DIRECT_SPEND:
            raise _Indirect
        self._spent += 1
        kind = type(item)
        if kind is dict:
            mapped: dict[str, Any] = {}
            names, short = self._copies.names, self.short
            for key, child in [*item.items()]:  # a snapshot, as json_safe takes
                if type(key) is not str:
                    raise _Indirect
                name, size, secret = names[key] if key in names else self._name(key)
                self._spent += size
                kind = type(child)
                if child is None:
                    mapped[name] = None
                elif secret:  # any value under a secret-named key, a flag or a number too
                    mapped[name] = MASK
                    self._spent += len(MASK)
                elif kind is bool:
                    mapped[name] = child
                elif kind is str and child in short:
                    copy, size = short[child]
                    self._spent += size
                    mapped[name] = copy
                else:
                    mapped[name] = self._leaf(child, depth)
            return mapped
        if kind is list or kind is tuple:
            return [self._leaf(child, depth) for child in [*item]]
        raise _Indirect

    def _leaf(self, child: Any, depth: int) -> Any:
        kind = type(child)
        if child is None or kind is bool:
            return child
        if kind is str:
            if child in self.short:
                copy, size = self.short[child]
            elif len(child) <= _SHORT:
                copy, size = self._short(child)
            else:
                raise _Indirect
            self._spent += size
            return copy
        if (kind is int and -_SMALL_INT < child < _SMALL_INT) or (
            kind is float and child - child == 0.0
        ):
            self._spent += 8
            return child
        if kind is dict or kind is list or kind is tuple:
            return self._direct(child, depth + 1)
        raise _Indirect
