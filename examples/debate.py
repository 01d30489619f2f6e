"""A debate show: one ``moderate(...)`` call runs five panelists through three rounds, then
``moderation_overview(format="markdown")`` formats the whole debate.

The host's program creates a delegated panelist per persona (with a deliverable contract:
stance, rationale, rebuttal), so one call makes fifteen panelist calls. The overview is a
follow-up: its program finds the debate in the conversation history and reads the whole earlier
answer back with ``content(ref)`` (ADRs 0101-0102), instead of holding it in memory or asking
for it again. (The original's ``debate.rb``; ``philosophy_debate.py`` is the same shape with
three thinkers and takeaways kept in memory.)
"""

from __future__ import annotations

from _offline import log_path, show, start

from acceptance.programs.panel import GUIDANCE, PANELISTS, ROLE, TOPIC
from recurgent import Agent


def main() -> None:
    """Moderate the debate, print its tally, then the markdown overview."""
    debate = Agent(ROLE, provider=start("debate"), log=log_path())
    moderated = debate.moderate(
        topic=TOPIC, tool_contract_guidance=GUIDANCE, panelists=PANELISTS, rounds=3
    )
    if moderated.is_error or not isinstance(moderated.value, dict):
        show("moderate(...)", moderated)
    else:
        summary = moderated.value.get("summary", {})
        print(f"Topic: {moderated.value.get('topic')}")
        print(
            f"Rounds: {moderated.value.get('rounds_completed')}; statements: "
            f"{summary.get('statements')}; failed: {summary.get('failed')}"
        )
    overview = debate.moderation_overview(format="markdown")
    if overview.is_ok and isinstance(overview.value, str):
        print(overview.value)
    else:
        show("moderation_overview(format='markdown')", overview)
    print(f"Log: {log_path()}")


if __name__ == "__main__":
    main()
