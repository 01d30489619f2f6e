"""A REST API explorer: drill into an API like a filesystem, each answer an agent to call next.

No REST client, no JSON classes: the explorer only knows the API's base URL (set in its memory).
``users()`` answers with an agent standing for the ``/users`` collection; ``find(name=...)``
answers with the user's record and an agent for that user; ``posts()``, ``first()`` and
``comments()`` drill further the same way, and every level fetches only its own slice.

At the end it lists what the runtime read in each program it ran (ADR 0107): the capability
tags (``http_fetch``, ``json_parse``, ...) and the signals that gave them, from the call log.
Offline it reads a loopback copy of jsonplaceholder.typicode.com (``acceptance/api_server.py``);
live, the real service. The log is written fresh to
``$XDG_STATE_HOME/recurgent/api_explorer.jsonl``.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

from _offline import is_live, log_path, show, start

from acceptance.api_server import ApiServer
from acceptance.programs.explorer import ROLE
from recurgent import Agent, Outcome

BASE_URL = "https://jsonplaceholder.typicode.com"


@contextlib.contextmanager
def api_base() -> Iterator[str]:
    """The API to explore: the real one live, a loopback copy offline."""
    if is_live():
        yield BASE_URL
        return
    with ApiServer() as server:
        yield server.base_url


def drill(label: str, outcome: Outcome, key: str | None = None) -> Agent | None:
    """Print one step and return the agent it handed back (itself, or under ``key``)."""
    value: Any = outcome.value if outcome.is_ok else None
    if key is not None and isinstance(value, dict):
        shown = {k: v for k, v in value.items() if k not in (key, "provenance")}
        print(f"{label:<36} -> {shown}")
        value = value.get(key)
    else:
        show(label, outcome)
    return value if isinstance(value, Agent) else None


def count(label: str, outcome: Outcome) -> None:
    """Print a counting step: the count, or the error."""
    value: Any = outcome.value if outcome.is_ok else None
    if isinstance(value, dict) and "count" in value:
        print(f"{label:<36} -> {value['count']}")
    else:
        show(label, outcome)


def main() -> None:
    """Drill from the users to one post's comments, then show what the runtime read."""
    log = log_path("api_explorer.jsonl")
    log.unlink(missing_ok=True)
    with api_base() as base:
        provider = start("API explorer")
        print("=== REST API Explorer ===")
        print(f"API: {BASE_URL}" + ("" if is_live() else " (loopback copy)"))
        api = Agent(ROLE, provider=provider, log=log)
        api.base_url = base
        users = drill("api.users()", api.users())
        if users is not None:
            count("users.count()", users.count())
            user = drill(
                "users.find(name='Leanne Graham')", users.find(name="Leanne Graham"), "user"
            )
            posts = drill("user.posts()", user.posts(), "posts") if user else None
            post = drill("posts.first()", posts.first(), "post") if posts else None
            comments = drill("post.comments()", post.comments(), "comments") if post else None
            if comments is not None:
                count("comments.count()", comments.count())
    print("What the runtime read in each program (capability tags and their signals):")
    for line in log.read_text("utf-8").splitlines():
        entry = json.loads(line)
        evidence = entry.get("capability_pattern_evidence") or {}
        tags = ", ".join(f"{tag} ({', '.join(signals)})" for tag, signals in evidence.items())
        if entry.get("program_source") == "persisted":
            tags = "a stored program (read when it was written)"
        print(f"  {entry['role']}.{entry['method']}: {tags or 'none'}")
    print(f"Log: {log}")


if __name__ == "__main__":
    main()
