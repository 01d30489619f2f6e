"""Philosophy-symposium programs: a host fanning out to three delegated philosophers per round."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from acceptance.programs import ProgramKey

ROLE = "philosophy_symposium_host"
PHILOSOPHERS = ("philosopher_0", "philosopher_1", "philosopher_2")

QUESTION = "What is the good life?"
THINKERS = [
    {
        "name": "Marcus Aurelius",
        "school": "Stoicism",
        "thesis": "living by reason and virtue, untroubled by what lies outside our control",
    },
    {
        "name": "Epicurus",
        "school": "Epicureanism",
        "thesis": "tranquil pleasure: friendship, simple needs and freedom from fear",
    },
    {
        "name": "Simone de Beauvoir",
        "school": "Existentialism",
        "thesis": "freely chosen projects that also will the freedom of others",
    },
]
GUIDANCE = {
    "purpose": "contribute one philosopher's voice to a round of the symposium",
    "deliverable": {"type": "object", "required": ["position", "engagement", "synthesis"]},
    "acceptance": [
        {"assert": "position states the thinker's answer to the question"},
        {"assert": "engagement answers a prior speaker when there is one"},
    ],
    "failure_policy": {"on_error": "continue_with_partial_symposium", "retry_budget": 1},
}
"""The ``tool_contract_guidance`` the example and the scenario pass to ``host``."""

# `persona=` is not a delegate option: the runtime ignores it (a warning in debug mode).
HOST = """\
question = kwargs.get("question") or (args[0] if args else "What is the good life?")
thinkers = kwargs.get("thinkers") or []
rounds = int(kwargs.get("rounds", 3))
guidance = kwargs.get("tool_contract_guidance") or {}

panel = []
for index, thinker in enumerate(thinkers):
    philosopher = delegate(
        f"philosopher_{index}",
        purpose=guidance.get("purpose", "argue one philosophical position"),
        deliverable=guidance.get(
            "deliverable", {"type": "object", "required": ["position", "engagement", "synthesis"]}
        ),
        acceptance=guidance.get("acceptance"),
        failure_policy=guidance.get("failure_policy"),
        persona=thinker,
    )
    panel.append((thinker, philosopher))

transcript = []
failures = []
symposium_rounds = []
for round_number in range(1, rounds + 1):
    contributions = []
    for thinker, philosopher in panel:
        reply = philosopher.respond(
            {
                "question": question,
                "round": round_number,
                "your_persona": thinker,
                "prior_discussion": transcript[-10:],
                "task": "State your position, engage the previous speakers, then synthesize.",
            }
        )
        if reply.ok:
            entry = {
                "round": round_number,
                "thinker": thinker["name"],
                "position": reply.value["position"],
                "engagement": reply.value["engagement"],
                "synthesis": reply.value["synthesis"],
            }
            transcript.append(entry)
            contributions.append(entry)
        else:
            failures.append(
                {
                    "round": round_number,
                    "thinker": thinker["name"],
                    "error_type": reply.error_type,
                    "error_message": reply.error_message,
                }
            )
    symposium_rounds.append({"round": round_number, "contributions": contributions})

names = [thinker["name"] for thinker in thinkers]
context["symposium"] = {
    "question": question,
    "thinkers": names,
    "rounds": symposium_rounds,
    "failures": failures,
}
result = {
    "question": question,
    "thinkers": names,
    "rounds_completed": len(symposium_rounds),
    "transcript": transcript,
    "summary": {
        "total_contributions": len(transcript),
        "failed_contributions": len(failures),
    },
}
"""

RESPOND = """\
prompt = args[0] if args else kwargs
persona = prompt.get("your_persona") or {}
name = persona.get("name", "The philosopher")
thesis = persona.get("thesis", "a life examined")
round_number = prompt.get("round", 1)
earlier = [entry for entry in prompt.get("prior_discussion") or [] if entry.get("thinker") != name]
if earlier:
    other = earlier[-1]["thinker"]
    engagement = f"Answering {other}: granted, yet the good life is above all {thesis}."
    synthesis = f"Round {round_number}: {name} and {other} agree it must be examined and chosen."
else:
    engagement = "Opening the symposium: no earlier speaker to answer yet."
    synthesis = f"Round {round_number}: {name} sets the bar at {thesis}."
result = {
    "position": f"{name}: the good life is {thesis}.",
    "engagement": engagement,
    "synthesis": synthesis,
}
"""

RESPOND_RAISES = """\
raise RuntimeError("lost the thread of the argument")
"""

# An answer without the required engagement and synthesis keys breaks the deliverable contract.
RESPOND_BREAKS_CONTRACT = """\
persona = (args[0] if args else kwargs).get("your_persona") or {}
result = {"position": f"{persona.get('name', 'I')} would rather not say."}
"""

TAKEAWAYS = """\
limit = int(args[0]) if args else int(kwargs.get("limit", 10))
symposium = context.get("symposium")
if not symposium:
    return Outcome.error(
        error_type="missing_input",
        error_message="No symposium has been held yet; call host(...) first",
        retriable=False,
    )
takeaways = []
for symposium_round in symposium["rounds"]:
    for contribution in symposium_round["contributions"]:
        takeaways.append(contribution["synthesis"])
result = {
    "question": symposium["question"],
    "takeaways": takeaways[:limit],
    "failed_contributions": len(symposium.get("failures", [])),
}
"""

PROGRAMS: dict[ProgramKey, str | None] = {
    (ROLE, "host"): HOST,
    (ROLE, "debate_takeaways"): TAKEAWAYS,
    **{(philosopher, "respond"): RESPOND for philosopher in PHILOSOPHERS},
}
