"""What the prompt says about recent patterns: the repeated capabilities of a method's last
one-off programs, and whether a tool already covers each (ADR 0107).

Only a depth-0 call of a dynamic-dispatch method (``ask``, ``chat``, ``discuss``, ``host``)
gets the block: those are the calls whose programs are never reused, so repeated work there is
what a tool should absorb. The rules are the original's: the method's last
:data:`PROMPT_WINDOW` events; each distinct tag counted once per event; tags seen at least
:data:`MIN_REPEAT` times; most frequent first, then most recently seen, then by name; at most
:data:`PROMPT_LIMIT`. A tool "covers" a capability when its name or purpose holds one of the
capability's signal words (the best-scoring tool, ties to the greater name).

This module returns data; :mod:`recurgent._prompting` renders it (bounded and inert).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from recurgent._patterns._memory import PatternEvent
from recurgent._store._cacheability import DYNAMIC_DISPATCH_METHODS

__all__ = [
    "MIN_REPEAT",
    "PROMPT_LIMIT",
    "PROMPT_WINDOW",
    "TOOL_SIGNALS",
    "PatternSummary",
    "pattern_prompt_applies",
    "summarize_patterns",
    "tool_for_capability",
]

PROMPT_WINDOW = 5
PROMPT_LIMIT = 4
MIN_REPEAT = 2
#: Words that say a tool covers a capability (the original's five, then this port's two).
TOOL_SIGNALS: Mapping[str, tuple[str, ...]] = {
    "http_fetch": ("http", "fetch", "web", "url", "request"),
    "rss_parse": ("rss", "feed", "parse", "parser", "xml"),
    "xml_parse": ("xml", "parse", "parser"),
    "html_extract": ("html", "extract", "scrape", "scraper", "parse"),
    "news_headline_extract": ("headline", "news", "title", "link", "feed", "rss"),
    "json_parse": ("json", "api"),
    "csv_parse": ("csv", "table", "spreadsheet"),
}
_NAME_CHARS = 200
_PURPOSE_CHARS = 2000
_TOOLS_SEARCHED = 256


@dataclass(frozen=True, slots=True)
class PatternSummary:
    """One repeated capability.

    Attributes:
        capability: The tag.
        count: Events of the window that showed it.
        window: Events considered (at most :data:`PROMPT_WINDOW`).
        last_seen: The timestamp of the newest event that showed it.
        tool: The registered tool that covers it, if one does.
    """

    capability: str
    count: int
    window: int
    last_seen: str
    tool: str | None = None


def pattern_prompt_applies(method: str, depth: int) -> bool:
    """Whether a call's prompt gets the recent-patterns block."""
    return depth == 0 and method.lower() in DYNAMIC_DISPATCH_METHODS


def tool_for_capability(capability: str, tools: Any) -> str | None:
    """The registered tool whose name and purpose best match the capability's signal words."""
    signals = TOOL_SIGNALS.get(capability)
    if not signals or not isinstance(tools, Mapping):
        return None
    best: tuple[int, str] | None = None
    for index, (name, entry) in enumerate(tools.items()):
        if index >= _TOOLS_SEARCHED:
            break
        named = str(name)[:_NAME_CHARS]
        purpose = entry.get("purpose") if isinstance(entry, Mapping) else None
        text = f"{named} {str(purpose or '')[:_PURPOSE_CHARS]}".lower()
        score = sum(1 for signal in signals if signal in text)
        if score and (best is None or (score, named) > best):
            best = (score, named)
    return best[1] if best is not None else None


def summarize_patterns(events: Sequence[PatternEvent], tools: Any) -> list[PatternSummary]:
    """The repeated capabilities of ``events`` (a method's window, oldest first)."""
    counts: dict[str, int] = {}
    seen: dict[str, str] = {}
    for event in events:
        for tag in dict.fromkeys(event.capability_patterns):
            counts[tag] = counts.get(tag, 0) + 1
            seen[tag] = event.timestamp
    repeated = [tag for tag, count in counts.items() if count >= MIN_REPEAT]
    # Most frequent, then most recently seen (timestamps sort as text), then by name.
    repeated.sort(key=lambda tag: tag)
    repeated.sort(key=lambda tag: (counts[tag], seen[tag]), reverse=True)
    return [
        PatternSummary(tag, counts[tag], len(events), seen[tag], tool_for_capability(tag, tools))
        for tag in repeated[:PROMPT_LIMIT]
    ]
