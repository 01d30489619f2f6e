"""Prompt size per call and the prefix shared across calls, roles and methods (issue 13, ADR 0026).

Runs four calls through real agents with a scripted provider (no network), five prompts in
all: two roles, two methods each, plus the delegated child one of them creates. For each it
prints the size of the system and user prompts (characters, and tokens estimated as
characters / 4). Then, for pairs of calls, the length of the prefix their prompts share, as providers' prompt caches see
it: the system prompt followed by the user prompt. OpenAI serves a cached prefix from 1,024
tokens on, so ``shared tokens`` at or above that is what caching can reuse.

Usage: ``.venv/bin/python bench/prompt_size.py``
"""

from __future__ import annotations

import os
from typing import Any

from recurgent import Agent
from recurgent.testing import ScriptedProvider


def _calls() -> dict[str, Any]:
    provider = ScriptedProvider(
        {
            ("news assistant", "latest"): "return delegate('feed_fetcher', "
            "purpose='fetch and parse RSS feeds', deliverable={'type': 'array'}).fetch(args[0])",
            ("feed_fetcher", "fetch"): "return ['headline']",
            ("news assistant", "summarize"): "return 'summary'",
            ("calculator", "add"): "context['value'] = context.get('value', 0) + args[0]\n"
            "return context['value']",
            ("calculator", "multiply"): "return args[0] * args[1]",
        }
    )
    # No store: a program stored by an earlier run would answer without a prompt (ADR 0047).
    news = Agent("news assistant", provider=provider, log=False, toolstore_root=None)
    calc = Agent("calculator", provider=provider, log=False, toolstore_root=None)
    news.latest("https://example.com/feed.xml")
    news.summarize(topic="ai", length=3)
    calc.add(5)
    calc.multiply(6, 7)
    return {f"{r.role}.{r.method_name}": r for r in provider.requests}


def _shared(left: str, right: str) -> int:
    size = 0
    for a, b in zip(left, right, strict=False):
        if a != b:
            break
        size += 1
    return size


def main() -> None:
    """Print the table."""
    os.environ.pop("RECURGENT_MODEL", None)
    calls = _calls()
    print(f"{'call':<30} {'system chars':>12} {'user chars':>10} {'total':>7} {'~tokens':>8}")
    for name, request in calls.items():
        total = len(request.system_prompt) + len(request.user_prompt)
        print(
            f"{name:<30} {len(request.system_prompt):>12} {len(request.user_prompt):>10} "
            f"{total:>7} {total // 4:>8}"
        )
    pairs = [
        ("news assistant.latest", "news assistant.summarize"),
        ("calculator.add", "calculator.multiply"),
        ("news assistant.latest", "calculator.add"),
        ("news assistant.summarize", "feed_fetcher.fetch"),
    ]
    print()
    print(f"{'pair (system + user)':<58} {'shared chars':>12} {'~shared tokens':>14}")
    for left, right in pairs:
        a, b = calls[left], calls[right]
        shared = _shared(a.system_prompt + a.user_prompt, b.system_prompt + b.user_prompt)
        print(f"{left + ' / ' + right:<58} {shared:>12} {shared // 4:>14}")


if __name__ == "__main__":
    main()
