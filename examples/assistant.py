"""An interactive personal assistant: type questions, get Outcomes; `quit`, `exit` or EOF stop.

Works with piped input too::

    printf "What's the top news items in Google News, Yahoo! News, and NY Times\\nquit\\n" \\
        | python examples/assistant.py

Offline it serves the news feeds itself from a loopback server (``acceptance/feed_server.py``)
and answers three kinds of question from scripted programs: the top news, where that news came
from, and which movies are playing (an honest "capability unavailable").
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator
from typing import Any

from _offline import is_live, log_path, start

from acceptance.feed_server import FeedServer
from acceptance.programs import feed_substitutions
from recurgent import Agent, Outcome

ROLE = "personal assistant that remembers conversation history"


@contextlib.contextmanager
def feeds() -> Iterator[dict[str, str]]:
    """Offline: a running feed server and the substitutions pointing programs at it."""
    if is_live():
        yield {}
        return
    with FeedServer() as server:
        yield feed_substitutions(server.base_url)


def render(outcome: Outcome) -> str:
    """An answer for the terminal: headlines as a list, other values as indented JSON."""
    if outcome.is_error:
        return f"[{outcome.error_type}] {outcome.error_message}"
    value: Any = outcome.value
    if not isinstance(value, dict):
        return str(value)
    lines = [str(value[key]) for key in ("summary", "answer") if key in value]
    items = value.get("items")
    if isinstance(items, list) and items and all(isinstance(i, dict) for i in items):
        lines += [f"- [{item.get('source', '?')}] {item.get('title', item)}" for item in items]
        sources = value.get("provenance", {}).get("sources", [])
        lines += [
            f"  source: {source.get('uri')}" for source in sources if isinstance(source, dict)
        ]
        return "\n".join(lines)
    rest = {key: item for key, item in value.items() if key not in ("summary", "answer")}
    return "\n".join([*lines, json.dumps(rest, indent=2, ensure_ascii=False, default=str)])


def main() -> None:
    """Read questions until quit/exit/EOF and print each answer."""
    with feeds() as substitutions:
        provider = start("assistant", substitutions=substitutions)
        assistant = Agent(ROLE, provider=provider, log=log_path())
        print("=== Personal Assistant ===")
        print("Type 'quit' or 'exit' to stop.")
        while True:
            try:
                line = input("> ")
            except EOFError:
                print()
                break
            question = line.strip()
            if not question:
                continue
            if question.lower() in ("quit", "exit"):
                break
            print(render(assistant.ask(question)))
            print()
    print(f"Log: {log_path()}")


if __name__ == "__main__":
    main()
