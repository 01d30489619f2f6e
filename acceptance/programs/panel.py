"""Debate-show programs: a host moderating five panelists through three rounds, then formatting
the whole debate as markdown from its earlier answer, read back through ``content(ref)``."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from acceptance.programs import ProgramKey

ROLE = "debate_show_host"
PANELIST_ROLES = tuple(f"panelist_{index}" for index in range(5))

TOPIC = "Should programming languages have garbage collection?"
PANELISTS = [
    "systems programmer who values performance above all",
    "web developer who prizes productivity and safety",
    "security engineer focused on memory safety vulnerabilities",
    "Dennis Ritchie, creator of C, speaking from the beyond",
    "philosopher questioning the nature of ownership and responsibility",
]
GUIDANCE = {
    "purpose": "Each panelist should provide a perspective tied to their role in this round",
    "deliverable": {"type": "object", "required": ["stance", "rationale", "rebuttal"]},
    "acceptance": [
        {"assert": "includes clear stance"},
        {"assert": "includes rationale grounded in the panelist perspective"},
    ],
    "failure_policy": {"on_error": "continue_with_partial_panel", "retry_budget": 1},
}
"""The ``tool_contract_guidance`` the example passes to ``moderate``."""

MODERATE = """\
topic = kwargs.get("topic") or (args[0] if args else "")
panelists = kwargs.get("panelists") or []
rounds = int(kwargs.get("rounds", 3))
guidance = kwargs.get("tool_contract_guidance") or {}
if not topic or not panelists:
    return Outcome.error(
        error_type="missing_input",
        error_message="moderate needs a topic and panelists",
        retriable=False,
    )

panel = []
for index, persona in enumerate(panelists):
    speaker = delegate(
        f"panelist_{index}",
        purpose=guidance.get("purpose", "argue one perspective in a panel debate"),
        deliverable=guidance.get(
            "deliverable", {"type": "object", "required": ["stance", "rationale", "rebuttal"]}
        ),
        acceptance=guidance.get("acceptance"),
        failure_policy=guidance.get("failure_policy"),
    )
    panel.append((persona, speaker))

transcript = []
failures = []
for round_number in range(1, rounds + 1):
    for persona, speaker in panel:
        reply = speaker.argue(
            {
                "topic": topic,
                "round": round_number,
                "panelist": persona,
                "prior_statements": transcript[-8:],
            }
        )
        if reply.ok:
            transcript.append({"round": round_number, "panelist": persona, **reply.value})
        else:
            failures.append(
                {"round": round_number, "panelist": persona, "error_type": reply.error_type}
            )

stances = {}
for statement in transcript:
    stances[statement["stance"]] = stances.get(statement["stance"], 0) + 1
result = {
    "topic": topic,
    "panelists": panelists,
    "rounds_completed": rounds,
    "transcript": transcript,
    "failures": failures,
    "summary": {"statements": len(transcript), "failed": len(failures), "stances": stances},
}
"""

ARGUE = """\
prompt = args[0] if args else kwargs
persona = prompt.get("panelist", "a panelist")
round_number = prompt.get("round", 1)
lowered = persona.lower()
if "performance" in lowered or "ritchie" in lowered:
    stance = "against"
    rationale = "Manual control keeps costs visible; a collector hides pauses you cannot budget."
elif "productivity" in lowered or "security" in lowered:
    stance = "for"
    rationale = "Collected memory removes whole classes of bugs: use-after-free, double free."
else:
    stance = "it depends"
    rationale = "The question is who answers for a value's lifetime: the program or its author."
others = [s for s in prompt.get("prior_statements") or [] if s.get("stance") != stance]
if others:
    answered = others[-1]["panelist"].split(",")[0]
    rebuttal = f"Round {round_number}, replying to {answered}: " + (
        "that safety is paid for on every allocation." if stance == "against"
        else "those costs are smaller than the bugs they prevent." if stance == "for"
        else "you both assume ownership must be automatic or manual; it can be explicit."
    )
else:
    rebuttal = f"Round {round_number}: opening statement, nobody to answer yet."
result = {"stance": stance, "rationale": rationale, "rebuttal": rebuttal}
"""

# The follow-up protocol (ADR 0102): the debate is the newest `moderate` answer, read whole.
OVERVIEW = """\
wanted = kwargs.get("format") or (args[0] if args else "markdown")
if wanted != "markdown":
    return Outcome.error(
        error_type="unsupported_format",
        error_message=f"Only markdown is supported, not {wanted}",
        retriable=False,
    )
ref = None
for record in reversed(context.get("conversation_history", [])):
    summary = record.get("outcome_summary") or {}
    if record.get("method_name") == "moderate" and summary.get("content_ref"):
        ref = summary["content_ref"]
        break
if ref is None:
    return Outcome.error(
        error_type="content_ref_not_found",
        error_message="No debate has been moderated in this conversation yet",
        retriable=False,
    )
debate = content(ref)
if debate is None:
    return Outcome.error(
        error_type="content_ref_not_found",
        error_message="The debate is no longer kept (evicted)",
        retriable=False,
    )
summary = debate["summary"]
lines = [
    f"# {debate['topic']}",
    "",
    f"{len(debate['panelists'])} panelists, {debate['rounds_completed']} rounds, "
    f"{summary['statements']} statements ({summary['failed']} failed).",
]
for round_number in range(1, debate["rounds_completed"] + 1):
    lines += ["", f"## Round {round_number}"]
    for statement in debate["transcript"]:
        if statement["round"] == round_number:
            lines.append(
                f"- **{statement['panelist']}** ({statement['stance']}): {statement['rebuttal']}"
            )
lines += ["", "## Where they stand"]
for stance, count in sorted(summary["stances"].items()):
    lines.append(f"- {stance}: {count}")
return "\\n".join(lines)
"""

PROGRAMS: dict[ProgramKey, str | None] = {
    (ROLE, "moderate"): MODERATE,
    (ROLE, "moderation_overview"): OVERVIEW,
    **{(role, "argue"): ARGUE for role in PANELIST_ROLES},
}
