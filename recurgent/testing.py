"""Deterministic test doubles shipped with the package, and a reader for the JSONL call log.

``FunctionProvider`` computes each reply with your function; ``ScriptedProvider`` replays fixed
replies per method and records every request. Neither touches the network.

Both declare themselves test doubles (``test_double = True``, ADR 0077): an agent built with one
persists nothing unless it is given an explicit ``toolstore_root``, and writes no call log
unless given ``log=`` (ADR 0127); their programs are never run by an agent with a real
provider; and on an explicit root a double reuses only programs written by a double with the
same script (``script_fingerprint``), so changing a script is never answered by the old one.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from os import PathLike
from pathlib import Path
from typing import Any

from recurgent._forksafe import fork_safe_lock
from recurgent.program import Program, reply_from_text
from recurgent.providers import ProviderRequest
from recurgent.providers._identity import script_digest

__all__ = ["FunctionProvider", "ScriptedProvider", "read_log"]

Reply = Any
"""A reply: code as ``str``, a mapping, a :class:`Program`, ``None``, an exception to raise, or a
callable taking the request and returning one of those."""


def _materialize(reply: Reply, request: ProviderRequest) -> object:
    if isinstance(reply, BaseException):
        raise reply
    if isinstance(reply, type) and issubclass(reply, BaseException):
        raise reply(f"scripted failure for {request.role}.{request.method_name}")
    if callable(reply) and not isinstance(reply, Program):
        return _materialize(reply(request), request)
    if isinstance(reply, str):
        # A JSON string of the reply schema is a reply, as a model would send it; anything
        # else is code (fences are removed when the reply is parsed).
        decoded = reply_from_text(reply)
        return decoded if decoded is not reply else {"code": reply}
    return reply


class FunctionProvider:
    """A provider whose replies come from ``fn(request)``.

    ``fn`` may return code as a string, a mapping ``{"code": ..., "dependencies": [...]}``, a
    :class:`~recurgent.program.Program` or ``None``, or raise. Every request is recorded in
    :attr:`requests`.
    """

    __test__ = False
    test_double = True

    def __init__(self, fn: Callable[[ProviderRequest], Reply]) -> None:
        self._fn = fn
        self._lock = fork_safe_lock()
        self.requests: list[ProviderRequest] = []
        # Taken now: the function's code, constants, defaults, closure and the globals it reads.
        self._fingerprint = script_digest(fn)

    def script_fingerprint(self, role: str, method: str) -> str:
        """The digest of ``fn`` as it was when this provider was built (the same for every
        method): a stored program written by another function is never reused."""
        return self._fingerprint

    @property
    def calls(self) -> int:
        """How many requests were made."""
        return len(self.requests)

    def generate_program(self, request: ProviderRequest) -> object:
        with self._lock:
            self.requests.append(request)
        return _materialize(self._fn(request), request)


class ScriptedProvider:
    """A provider that replays fixed replies, keyed by method name or ``(role, method)``.

    A key maps to one reply, reused for every request, or to a list of replies consumed in
    order. A request with no matching key, or whose list is used up, raises ``LookupError``,
    which the runtime reports as a ``provider`` error.

    Example::

        provider = ScriptedProvider({
            "add": "context['value'] = context.get('value', 0) + args[0]\\nresult = context['value']",
            ("child", "run"): [None, "result = 42"],
        })
    """

    __test__ = False
    test_double = True

    def __init__(self, replies: Mapping[Any, Reply | Sequence[Reply]] | None = None) -> None:
        self._lock = fork_safe_lock()
        self._replies: dict[Any, Reply] = {}
        self._queues: dict[Any, list[Reply]] = {}
        self._fingerprints: dict[Any, str] = {}
        for key, reply in (replies or {}).items():
            if isinstance(reply, list | tuple):
                self._queues[key] = list(reply)
            else:
                self._replies[key] = reply
            self._fingerprints[key] = script_digest(reply)
        self.requests: list[ProviderRequest] = []

    def script_fingerprint(self, role: str, method: str) -> str | None:
        """The digest of the reply (or list of replies, as given) that answers ``role.method``;
        ``None`` when none does. A stored program is reused only by a double whose entry for
        the key is the same."""
        for key in ((role, method), method):
            fingerprint = self._fingerprints.get(key)
            if fingerprint is not None:
                return fingerprint
        return None

    @property
    def calls(self) -> int:
        """How many requests were made."""
        return len(self.requests)

    def requests_for(self, method_name: str, role: str | None = None) -> list[ProviderRequest]:
        """The recorded requests for one method (and role, when given)."""
        return [
            r
            for r in self.requests
            if r.method_name == method_name and (role is None or r.role == role)
        ]

    def generate_program(self, request: ProviderRequest) -> object:
        with self._lock:
            self.requests.append(request)
            reply = self._next_reply(request)
        return _materialize(reply, request)

    def _next_reply(self, request: ProviderRequest) -> Reply:
        for key in ((request.role, request.method_name), request.method_name):
            if key in self._queues:
                queue = self._queues[key]
                if not queue:
                    raise LookupError(
                        f"ScriptedProvider has no replies left for "
                        f"{request.role}.{request.method_name}"
                    )
                return queue.pop(0)
            if key in self._replies:
                return self._replies[key]
        raise LookupError(f"ScriptedProvider has no reply for {request.role}.{request.method_name}")


def read_log(path: str | PathLike[str]) -> list[dict[str, Any]]:
    """Read a recurgent JSONL log into a list of entries (an absent file gives ``[]``).

    Lines end at ``\n`` only: JSON strings may hold ``\u2028`` and other characters that
    ``str.splitlines`` would split on.
    """
    file = Path(path)
    if not file.exists():
        return []
    text = file.read_bytes().decode("utf-8")
    return [json.loads(line) for line in text.split("\n") if line.strip()]
