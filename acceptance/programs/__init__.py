"""The scripted programs: what a good model writes for each scenario, keyed by role and method.

A key is ``(role, method)`` or, for turns that share a method (the assistant's ``ask``),
``(role, method, phrase)`` where ``phrase`` must occur in the call's arguments. A reply is
the program's source, or ``None`` for a model that answers with no program at all.
``{FEED_BASE}`` stands for the loopback feed server's base URL (see :func:`feed_substitutions`).
"""

from __future__ import annotations

from acceptance.programs import batch, calculator, data, debate, explorer, news, panel, tools

__all__ = ["FEED_BASE", "PROGRAMS", "ProgramKey", "feed_substitutions"]

ProgramKey = tuple[str, str] | tuple[str, str, str]

FEED_BASE = "{FEED_BASE}"

PROGRAMS: dict[ProgramKey, str | None] = {
    **calculator.PROGRAMS,
    **news.PROGRAMS,
    **debate.PROGRAMS,
    **data.PROGRAMS,
    **tools.PROGRAMS,
    **batch.PROGRAMS,
    **explorer.PROGRAMS,
    **panel.PROGRAMS,
}


def feed_substitutions(base_url: str) -> dict[str, str]:
    """Placeholder replacements pointing the news programs at a feed server."""
    return {FEED_BASE: base_url.rstrip("/")}
