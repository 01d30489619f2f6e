"""The smallest assistant: a loop around ``ask``; `quit`, `exit` or end of input stop.

Piped input works too::

    printf "What's the top news items in Google News, Yahoo! News, and NY Times\\n\\
    Again please: the top news in Google News, Yahoo! News and NY Times\\n\\
    Format that answer as markdown\\nquit\\n" | python examples/simple_assistant.py

A session shows what issue 23 added, and the example prints it when the session ends (from its
debug log, ``$XDG_STATE_HOME/recurgent/simple_assistant.jsonl``, written fresh each run):

* a follow-up ("Format that answer as markdown") reads the earlier answer whole through
  ``content(ref)`` (ADRs 0101-0102) instead of its 500-character preview;
* the same question asked again at once is logged as a user correction (``temporal_reask``,
  ADR 0108), and counts against the first answer's program;
* after two one-off answers needing the same capabilities, the next prompt carries
  ``<recent_patterns>`` and ``<promotion_nudge>`` (ADR 0107): the model is told what keeps
  coming back and whether a tool already covers it.

Offline it serves the news feeds from a loopback server, as ``assistant.py`` does.
"""

from __future__ import annotations

import json
from typing import Any

from _offline import log_path, start
from assistant import ROLE, feeds, render

from recurgent import Agent


def _block(prompt: str, tag: str) -> str | None:
    start_at = prompt.find(f"<{tag}>")
    end_at = prompt.find(f"</{tag}>")
    return prompt[start_at : end_at + len(tag) + 3] if 0 <= start_at < end_at else None


def noticed(entries: list[dict[str, Any]]) -> list[str]:
    """What the runtime noticed in a session, one line per finding."""
    turns = [entry for entry in entries if entry.get("depth") == 0]
    number = {entry["call_id"]: index for index, entry in enumerate(turns, start=1)}
    lines = []
    for index, entry in enumerate(turns, start=1):
        if entry.get("user_correction_detected"):
            corrected = number.get(entry.get("user_correction_reference_call_id"), "?")
            lines.append(
                f"turn {index}: asked again at once ({entry['user_correction_signal']}), "
                f"a correction of turn {corrected}"
            )
        if entry.get("content_store_read_hit_count"):
            refs = ", ".join(entry.get("content_store_read_refs") or [])
            lines.append(f"turn {index}: read an earlier answer whole with content({refs})")
    for index, entry in enumerate(turns, start=1):
        patterns = _block(entry.get("user_prompt") or "", "recent_patterns")
        nudge = _block(entry.get("user_prompt") or "", "promotion_nudge")
        if patterns and nudge:
            lines.append(f"turn {index}'s prompt carried the pattern memory:")
            lines += [f"  {line}" for line in f"{patterns}\n{nudge}".splitlines()]
            break
    return lines


def main() -> None:
    """Read questions until quit/exit/EOF, print each answer, then what the runtime noticed."""
    log = log_path("simple_assistant.jsonl")
    log.unlink(missing_ok=True)
    with feeds() as substitutions:
        provider = start("simple assistant", substitutions=substitutions)
        assistant = Agent(ROLE, provider=provider, log=log, debug=True)
        print("=== Personal Assistant ===")
        print("Type 'quit' or 'exit' to stop.")
        while True:
            try:
                question = input("> ").strip()
            except EOFError:
                print()
                break
            if question.lower() in ("quit", "exit"):
                print()
                break
            if question:
                print(render(assistant.ask(question)))
                print()
    entries = (
        [json.loads(line) for line in log.read_text("utf-8").splitlines()] if log.exists() else []
    )
    findings = noticed(entries)
    if findings:
        print("What the runtime noticed:")
        print("\n".join(f"- {line}" if not line.startswith("  ") else line for line in findings))
    print(f"Log: {log}")


if __name__ == "__main__":
    main()
