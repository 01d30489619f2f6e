"""A philosophy symposium: one host call delegates three philosophers through three rounds.

``host`` writes an orchestration that creates a delegated tool per thinker (with a deliverable
contract: position, engagement, synthesis), collects their contributions round by round, keeps
going if one fails, and stores the symposium in its memory for ``debate_takeaways``.
"""

from __future__ import annotations

from _offline import log_path, show, start

from acceptance.programs.debate import GUIDANCE, QUESTION, THINKERS
from recurgent import Agent


def main() -> None:
    """Hold the symposium and print its transcript and takeaways."""
    host = Agent("philosophy_symposium_host", provider=start("philosophy debate"), log=log_path())
    symposium = host.host(
        question=QUESTION, tool_contract_guidance=GUIDANCE, thinkers=THINKERS, rounds=3
    )
    if symposium.is_error or not isinstance(symposium.value, dict):
        show("host(...)", symposium)
    else:
        value = symposium.value
        summary = value.get("summary", {})
        print(f"Question: {value.get('question')}")
        print(
            f"Rounds completed: {value.get('rounds_completed')}; contributions: "
            f"{summary.get('total_contributions')}; failed: {summary.get('failed_contributions')}"
        )
        for entry in value.get("transcript", []):
            if isinstance(entry, dict):
                print(f"  [round {entry.get('round')}] {entry.get('position')}")
                print(f"             {entry.get('engagement')}")
    takeaways = host.debate_takeaways(10)
    if takeaways.is_ok and isinstance(takeaways.value, dict):
        print("Takeaways:")
        for number, takeaway in enumerate(takeaways.value.get("takeaways", []), start=1):
            print(f"  {number}. {takeaway}")
    else:
        show("debate_takeaways(10)", takeaways)
    print(f"Log: {log_path()}")


if __name__ == "__main__":
    main()
