"""ProgramRouter: answers provider requests with scripted programs, as a deterministic model would.

A request is routed by what the prompts say, not by the request object, so the same router
serves a :class:`~recurgent.testing.FunctionProvider` and a loopback OpenAI-compatible server
(which only sees the prompts): the role comes from ``called '<role>'`` in the system prompt,
the method from ``<method>NAME</method>`` in the user prompt, and turns that share a method
are told apart by a phrase of the ``<args>`` block. A request nothing answers is recorded in
:attr:`ProgramRouter.unrouted` and raises :class:`UnroutedRequest`.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from acceptance.programs import ProgramKey
from recurgent.providers import ProviderRequest
from recurgent.testing import FunctionProvider

__all__ = ["ProgramRouter", "Route", "UnroutedRequest"]

Reply = str | None
"""A program's source, or ``None`` for a model that answers with no program."""

_ROLE_MARKER = re.compile(r"called '([^']+)'")
_METHOD_MARKER = re.compile(r"<method>(.*?)</method>", re.DOTALL)
_ARGS_MARKER = re.compile(r"<args>(.*?)</args>", re.DOTALL)


class UnroutedRequest(LookupError):
    """No scripted program answers a request."""


@dataclass(frozen=True, slots=True)
class Route:
    """Where a request goes: its role, its method and the rendered arguments.

    ``user_prompt`` is kept whole, so tests can read the retry feedback a model was given.
    """

    role: str
    method: str
    args: str
    user_prompt: str

    @classmethod
    def from_prompts(cls, system_prompt: str, user_prompt: str) -> Route:
        """Read the role, method and arguments markers out of a call's two prompts.

        Raises:
            UnroutedRequest: a marker is missing.
        """
        role = _ROLE_MARKER.search(system_prompt)
        method = _METHOD_MARKER.search(user_prompt)
        if role is None or method is None:
            missing = "called '<role>' in the system prompt" if role is None else "<method>"
            raise UnroutedRequest(f"Unable to route a request: no {missing} marker")
        arguments = _ARGS_MARKER.search(user_prompt)
        return cls(
            role.group(1),
            method.group(1).strip(),
            arguments.group(1) if arguments else "",
            user_prompt,
        )


class ProgramRouter:
    """Scripted replies keyed by ``(role, method)`` or ``(role, method, phrase)``.

    Args:
        programs: Replies per key (see :mod:`acceptance.programs`). A list of replies is used
            in order and its last reply then repeats.
        substitutions: Text replaced in every program, e.g. ``{"{FEED_BASE}": base_url}``.

    Attributes:
        routed: Every routed request, in order.
        unrouted: A message for every request nothing answered.
    """

    def __init__(
        self,
        programs: Mapping[ProgramKey, Reply | Sequence[Reply]],
        *,
        substitutions: Mapping[str, str] | None = None,
    ) -> None:
        self._lock = threading.Lock()
        self._queues: dict[ProgramKey, list[Reply]] = {}
        self._substitutions = dict(substitutions or {})
        self.routed: list[Route] = []
        self.unrouted: list[str] = []
        for key, replies in programs.items():
            self.script(key, replies)

    def script(self, key: ProgramKey, replies: Reply | Sequence[Reply]) -> None:
        """Answer ``key`` with one reply, or with a list used in order whose last reply repeats."""
        queue = [replies] if replies is None or isinstance(replies, str) else list(replies)
        if not queue:
            raise ValueError(f"no replies given for {key!r}")
        with self._lock:
            self._queues[key] = queue

    def reply(self, system_prompt: str, user_prompt: str) -> Reply:
        """The program answering a request with these prompts.

        Raises:
            UnroutedRequest: nothing answers it (the failure is also recorded).
        """
        with self._lock:
            try:
                route = Route.from_prompts(system_prompt, user_prompt)
                queue = self._queues[self._key_for(route)]
            except UnroutedRequest as failure:
                self.unrouted.append(str(failure))
                raise
            self.routed.append(route)
            reply = queue.pop(0) if len(queue) > 1 else queue[0]
        if reply is None:
            return None
        for placeholder, text in self._substitutions.items():
            reply = reply.replace(placeholder, text)
        return reply

    def routes_for(self, role: str, method: str | None = None) -> list[Route]:
        """The routed requests that went to ``role`` (and ``method``, when given), in order."""
        with self._lock:
            return [
                r for r in self.routed if r.role == role and (method is None or r.method == method)
            ]

    def provider(self) -> FunctionProvider:
        """A provider answering from this router (requests are recorded on it too)."""

        def answer(request: ProviderRequest) -> Reply:
            return self.reply(request.system_prompt, request.user_prompt)

        return FunctionProvider(answer)

    def _key_for(self, route: Route) -> ProgramKey:
        arguments = route.args.lower()
        phrases: list[str] = []
        for key in self._queues:
            if len(key) != 3 or key[:2] != (route.role, route.method):
                continue
            phrase = key[2]
            phrases.append(phrase)
            if phrase.lower() in arguments:
                return key
        if (route.role, route.method) in self._queues:
            return (route.role, route.method)
        known = f" (scripted phrases: {', '.join(map(repr, phrases))})" if phrases else ""
        raise UnroutedRequest(
            f"No scripted program for {route.role!r}.{route.method} with arguments "
            f"{route.args[:200]}{known}"
        )
