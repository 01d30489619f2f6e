"""Helpers shared by the lifecycle specs: reading tagged prompt fields and building agents."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from recurgent import Agent
from recurgent.testing import ScriptedProvider, read_log

FIXED = "context['after'] = 'clean'\nresult = 'fixed'"
"""A valid program that ends a lane retry with ok 'fixed' and one memory write."""

ALWAYS_RETRIABLE = (
    "context['dirty'] = True\n"
    "result = Outcome.error(error_type='fetch_failed', error_message='try again', retriable=True)"
)
"""A program returning a retriable intrinsic error after writing memory."""


def tag(prompt: str, name: str) -> str:
    """Text of the last ``<name>...</name>`` element in a prompt (raises when absent)."""
    found = re.findall(rf"<{name}>(.*?)</{name}>", prompt, re.DOTALL)
    if not found:
        raise AssertionError(f"<{name}> not found in prompt")
    return str(found[-1])


def scripted(
    replies: Any, *, role: str = "tester", method: str = "run", **options: Any
) -> tuple[Agent, ScriptedProvider]:
    """An agent whose ``method`` replies are ``replies`` (a list is consumed in order)."""
    provider = ScriptedProvider({(role, method): replies})
    options.setdefault("log", False)
    return Agent(role, provider=provider, **options), provider


def last_entry(log_path: Path) -> dict[str, Any]:
    """The last JSONL entry of a log."""
    entries = read_log(log_path)
    assert entries, "the call wrote no log line"
    return entries[-1]
