"""Prompts: renders the depth-aware system prompt, the user prompt and retry feedback (ADR 0016).

Templates are package data under ``recurgent/prompts`` rendered with ``string.Template``'s
``substitute``, so a missing variable fails loudly instead of leaking a ``$name`` to the model.
The response schema the provider fills lives in :data:`recurgent.program.PROGRAM_SCHEMA`.

Every variable is caller- or program-supplied text unless it is itself a rendered template, so
:func:`render` makes it inert (ADR 0025): ``<``, ``>`` and ``&`` become ``\\u003c``, ``\\u003e`` and
``\\u0026`` (inside a repr'd string literal that is the same character, so the value still reads
back exactly) and it is cut to a bounded length. No value can open or close a prompt tag.
"""

from __future__ import annotations

import functools
import math
import re
import string
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from typing import Any

from recurgent._history import HISTORY_KEY
from recurgent._patterns._extract import text_capabilities
from recurgent._patterns._prompt import PatternSummary
from recurgent._redact import redact
from recurgent._registry import (
    TOOLS_KEY,
    count,
    lifecycle_state,
    overlapping_methods,
    ranked_tools,
)
from recurgent._repr import SafeRepr
from recurgent._sandbox import ALLOWED_MODULES, SandboxLimits
from recurgent._values import json_safe, outgrows

__all__ = [
    "PROMPT_VERSION",
    "Prompts",
    "Rendered",
    "build_prompts",
    "inert",
    "render",
    "shared_system_prefix",
]

PROMPT_VERSION = "2026-12-02.python.v9"
KNOWN_TOOLS_LIMIT = 12
_MEMORY_CHARS = 6000
_ARGUMENT_CHARS = 4000
#: Each contract field (purpose, deliverable, ...) as the prompt shows it.
_CONTRACT_CHARS = 2000
#: Role, method and tool names as the prompt shows them.
_NAME_CHARS = 200
#: Backstop for any other variable (retry feedback quoting an exception, for instance).
_VALUE_CHARS = 8000
_INERT = str.maketrans({"<": "\\u003c", ">": "\\u003e", "&": "\\u0026"})


class PromptTemplateError(LookupError):
    """A template referenced a variable the renderer did not supply (a bug in the runtime)."""


@functools.cache
def _template(name: str) -> string.Template:
    text = resources.files("recurgent").joinpath("prompts", f"{name}.md").read_text("utf-8")
    return string.Template(text)


class Rendered(str):
    """Text made by :func:`render`: its tags are the template's own, so it nests as is."""

    __slots__ = ()


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[: limit - 3] + "..."


def inert(value: Any, limit: int = _VALUE_CHARS) -> str:
    """``value`` as text that cannot open or close a prompt tag, at most ``limit`` characters."""
    return _clip(str(value), limit).translate(_INERT)


def render(name: str, **variables: Any) -> Rendered:
    """Render ``prompts/<name>.md``; every ``$variable`` must be supplied.

    Variables are made :func:`inert` unless they are :class:`Rendered` blocks.
    """
    values = {
        key: value if isinstance(value, Rendered) else inert(value)
        for key, value in variables.items()
    }
    try:
        return Rendered(_template(name).substitute(values))
    except KeyError as missing:
        raise PromptTemplateError(
            f"prompt template {name!r} needs variable {missing.args[0]!r}"
        ) from None


@dataclass(frozen=True, slots=True)
class Prompts:
    """The two prompts of one dynamic call (retry feedback is appended per attempt)."""

    system: str
    user: str


# A value whose repr surely outgrows this is shown from a bounded copy.
_REPR_CAP = 1_000_000


def _short(value: Any, limit: int) -> str:
    """A redacted repr of at most ``limit`` characters.

    Redaction runs on the cut text only: redacting a 5 MB contract field in full for every
    prompt took seconds. The margin makes a secret straddling the cut masked, not shown in part.
    """
    try:
        if outgrows(value, _REPR_CAP):
            # Shared parts (``[[s] * 1000] * 1000`` from a program's delegate call) make a
            # repr of billions of characters: shown from a bounded copy (red team R12).
            value = json_safe(value, budget=limit + 256)
        text = repr(value)
    except Exception as error:  # noqa: BLE001 - a broken __repr__ must not break a prompt
        return f"<unrepresentable {type(value).__name__}: {type(error).__name__}>"
    return _clip(redact(text[: limit + 256]), limit)


def _memory_view(memory: Mapping[str, Any]) -> str:
    view: dict[str, Any] = {}
    for key, value in memory.items():
        if key == TOOLS_KEY:
            view[key] = {"count": len(value) if isinstance(value, Mapping) else 0}
        elif key == HISTORY_KEY:
            view[key] = {"count": len(value) if isinstance(value, list) else 0}
        else:
            view[key] = value
    view.setdefault(TOOLS_KEY, {"count": 0})
    view.setdefault(HISTORY_KEY, {"count": 0})
    shortened = SafeRepr()
    shortened.maxstring = 400
    shortened.maxother = 400
    shortened.maxlist = shortened.maxdict = 20
    text = redact(shortened.repr(view))
    return text if len(text) <= _MEMORY_CHARS else text[: _MEMORY_CHARS - 3] + "..."


def _plain(text: str, limit: int) -> str:
    """Registry text on one line: whitespace runs become one space, and every other control,
    format (bidi override, zero-width) or unassigned character is shown as its escape, so text a
    program stored in the registry cannot hide or reorder what later prompts show (ADR 0071)."""
    text = " ".join(_clip(text, limit * 2).split())
    if not text.isprintable():
        text = "".join(char if char.isprintable() else repr(char)[1:-1] for char in text)
    return _clip(text, limit)


def _known_tools(memory: Mapping[str, Any]) -> str:
    lines: list[str] = []
    for name, entry in ranked_tools(memory, KNOWN_TOOLS_LIMIT):
        purpose = _plain(str(entry.get("purpose") or "purpose unavailable"), 300)
        lines.append(f"- {_plain(str(name), _NAME_CHARS)}: {purpose}\n")
        methods = entry.get("methods")
        methods = (
            [m for m in methods[:64] if isinstance(m, str) and m.strip()]
            if isinstance(methods, list)
            else []
        )
        if methods:
            shown = _clip(", ".join(_plain(m, _NAME_CHARS) for m in methods), 600)
            lines.append(f"  methods: [{shown}]\n")
        if entry.get("deliverable") is not None:
            lines.append(f"  deliverable: {_short(entry['deliverable'], 300)}\n")
        lines.extend(_tool_telemetry_lines(entry, methods))
    return render("known_tools", entries=redact("".join(lines)) or "none registered yet\n")


_TAG = re.compile(r"^[a-z][a-z0-9_]{0,63}$")


def _listed(value: Any, limit: int) -> list[str]:
    items = value if isinstance(value, list) else []
    return [item.strip() for item in items[:limit] if isinstance(item, str) and item.strip()]


def _tool_telemetry_lines(entry: Mapping[str, Any], methods: list[str]) -> list[str]:
    """A known tool's capability, intent, lifecycle, reliability and caution lines (the
    original's entry format, ADR 0109); each only when it has content."""
    lines: list[str] = []
    tags = [t for t in _listed(entry.get("capabilities"), 16) if _TAG.match(t)]
    if not tags:
        tags = list(text_capabilities(entry.get("purpose"), methods, entry.get("deliverable")))
    if tags:
        lines.append(f"  capabilities: [{', '.join(dict.fromkeys(tags))}]\n")
    intents = _listed(entry.get("intent_signatures"), 6)
    single = entry.get("intent_signature")
    if isinstance(single, str) and single.strip():
        intents.append(single.strip())
    if intents:
        shown = ", ".join(_plain(i, 200) for i in dict.fromkeys(intents))
        lines.append(f"  intent_signatures: [{_clip(shown, 800)}]\n")
    state = lifecycle_state(entry)
    if state:
        policy = entry.get("promotion_policy_version")
        named = f" (policy: {_plain(policy, 64)})" if isinstance(policy, str) and policy else ""
        lines.append(f"  lifecycle: {_plain(state, 40)}{named}\n")
    successes = count(entry, "success_count")
    calls = successes + count(entry, "failure_count")
    if calls:
        lines.append(f"  reliability: calls={calls}, success_rate={successes / calls:.2f}\n")
    if state == "degraded":
        decision = entry.get("lifecycle_decision")
        last = _plain(decision, 64) if isinstance(decision, str) and decision else "unknown"
        lines.append(
            f"  caution: degraded under the promotion policy (last_decision={last}); "
            "prefer another tool or expect it to fail\n"
        )
    return lines


def _interface_overlap(memory: Mapping[str, Any]) -> str:
    """``<interface_overlap_observations>``: registered tools whose methods look like one
    capability under several names (ADR 0109); empty when there are none."""
    groups = overlapping_methods(memory, KNOWN_TOOLS_LIMIT)
    if not groups:
        return ""
    lines = [
        f"- {_plain(name, _NAME_CHARS)}: [{_clip(', '.join(_plain(m, _NAME_CHARS) for m in methods), 600)}]"
        for name, methods in groups
    ]
    return render("interface_overlap", lines=redact("\n".join(lines)))


_FORGE_NUDGE = (
    "- A capability above keeps coming back and no tool covers it: forge one now, a general "
    "parameterized tool (delegate(name, purpose=..., deliverable=...)) that this answer calls, "
    "so the next request reuses it instead of writing the same code again."
)
_REUSE_NUDGE = (
    '- A tool already covers a capability above: materialize it with tool("name") and call it '
    "rather than redoing its work."
)


def _recent_patterns(patterns: Sequence[PatternSummary], method: str) -> str:
    """The ``<recent_patterns>`` and ``<promotion_nudge>`` blocks (ADR 0107): one line per
    repeated capability, in the original's words; tags are snake_case words by construction
    and tool names are registry text, made plain and inert (ADR 0071)."""
    if not patterns:
        return ""
    shown = inert(_plain(method, _NAME_CHARS))
    lines = []
    for summary in patterns:
        present = f"true({inert(_plain(summary.tool, _NAME_CHARS))})" if summary.tool else "false"
        lines.append(
            f"- {inert(summary.capability, 64)}: seen {summary.count} of last {summary.window} "
            f"{shown} calls, tool_present={present}"
        )
    nudges = []
    if any(summary.tool is None for summary in patterns):
        nudges.append(_FORGE_NUDGE)
    if any(summary.tool is not None for summary in patterns):
        nudges.append(_REUSE_NUDGE)
    return render(
        "recent_patterns", lines=Rendered("\n".join(lines)), nudges=Rendered("\n".join(nudges))
    )


def _contract_blocks(contract: Mapping[str, Any] | None) -> tuple[Rendered, Rendered]:
    if not contract:
        return render("contract_none"), render("active_contract_none")
    # Contract fields come from generated code (delegate(purpose=...)): each is bounded, so a
    # 5 MB purpose cannot become a 10 MB child prompt.
    fields = {
        key: _short(contract.get(key), _CONTRACT_CHARS)
        for key in ("purpose", "deliverable", "acceptance", "failure_policy")
    }
    signature = contract.get("intent_signature")
    shown = inert(signature, _CONTRACT_CHARS) if signature else ""
    system = render(
        "contract_active",
        **fields,
        intent_line=Rendered(f"- intent_signature: {inert(_short(signature, _CONTRACT_CHARS))}")
        if signature
        else "",
    )
    user = render(
        "active_contract",
        **fields,
        intent_tag=Rendered(f"<intent_signature>{shown}</intent_signature>\n") if signature else "",
    )
    return system, user


def _network_text(network: Any) -> str:
    if network == "allow":
        return "any http/https host is reachable."
    if network == "deny":
        return "disabled for this agent; do not attempt HTTP, return a typed error instead."
    return f"only these hosts are reachable: {', '.join(network)}."


_STANCE_GUIDANCE = {
    0: "Forge general, parameterized capabilities; Do for one-off bounded work.",
    1: "Default to Do; Forge only when the contract implies a reusable interface.",
    2: "Use Do or Shape only; stay direct and bounded.",
}
_STANCE_CHECK = {
    0: "Did you separate the trigger from the capability and reuse existing tools before forging?",
    1: "Did you execute the contract directly, delegating only when it required it?",
    2: "Did you stay direct, without new tools or delegations?",
}


@functools.cache
def shared_system_prefix() -> str:
    """The system prompt's first part: identical for every agent, role, method and call.

    Providers cache identical prompt prefixes (OpenAI from 1,024 tokens), so everything that does
    not change comes first and everything particular to the agent or the call last (ADR 0026).
    """
    return "\n".join(
        [
            render("identity"),
            render("environment", allowed_imports=", ".join(ALLOWED_MODULES)),
            render("thinking"),
            render("known_tools_system", limit=KNOWN_TOOLS_LIMIT),
            render("constraints"),
            render("request_guide", tool_limit=KNOWN_TOOLS_LIMIT),
        ]
    )


_PROFILE_RULES = {
    ("shared_state_slot", "prescriptive"): "keep the role's state in memory key {value}",
    ("shared_state_slot", "coordination"): "use the memory key the sibling methods use{value}",
    ("return_shape_family", "prescriptive"): "answer with a value of shape {value}",
    ("return_shape_family", "coordination"): "answer in the shape the sibling methods use{value}",
    ("signature_family", "prescriptive"): "read the arguments as {value}",
    ("signature_family", "coordination"): "read the arguments as the sibling methods do{value}",
}


def _role_profile_block(profile: Mapping[str, Any] | None) -> str:
    """The active role profile as the system prompt states it (ADR 0083): one line per
    constraint covering the method, with the value to use; bounded and inert like registry
    text (ADR 0071)."""
    if not profile:
        return ""
    lines: list[str] = []
    for row in list(profile.get("constraints") or [])[:32]:
        value = row.get("value")
        shown = repr(_plain(str(value), _NAME_CHARS)) if value is not None else None
        rule = _PROFILE_RULES.get((row.get("kind"), row.get("mode")))
        if rule is None:
            continue
        if row.get("mode") == "coordination":
            text = rule.format(value=f" ({shown})" if shown else "")
        else:
            text = rule.format(value=shown)
        lines.append(f"- {inert(_plain(str(row.get('name')), _NAME_CHARS))}: {inert(text)}")
    if not lines:
        return ""
    return render(
        "role_profile", version=profile.get("version"), constraints=Rendered("\n".join(lines))
    )


def build_prompts(
    *,
    role: str,
    method_name: str,
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any],
    depth: int,
    memory: Mapping[str, Any],
    contract: Mapping[str, Any] | None,
    network: Any,
    limits: SandboxLimits,
    role_profile: Mapping[str, Any] | None = None,
    time_left: float | None = None,
    patterns: Sequence[PatternSummary] = (),
) -> Prompts:
    """Render both prompts of one dynamic call.

    The system prompt is :func:`shared_system_prefix` followed by what is particular to the
    agent (role, depth band, network policy, limits, contract, active role profile), so it is
    byte-identical for every call of an agent at one depth while its profile stays; everything
    that changes from call to call (invocation, memory, known tools, history count, recent
    patterns) is in the user prompt. ``limits`` are the agent's own; ``time_left``, the seconds a calling program's
    deadline leaves this call when that is less than the agent's timeout, goes to the user
    prompt in whole seconds (ADR 0026, amended by 0100).
    """
    band = min(depth, 2)
    identity = ("identity_builder", "identity_tool", "identity_worker")[band]
    contract_system, contract_user = _contract_blocks(contract)
    agent = render(
        "agent",
        identity=render(identity, role=_clip(role, _NAME_CHARS), depth=depth),
        depth=depth,
        stance_guidance=_STANCE_GUIDANCE[band],
        stance_check=_STANCE_CHECK[band],
        network_policy=_network_text(network),
        max_response_kb=limits.max_response_bytes // 1024,
        timeout_seconds=f"{limits.timeout_seconds:g}",
        max_items=f"{limits.max_sequence_items:,}",
        max_forwarded_calls=limits.max_forwarded_calls,
    )
    system = "\n".join([shared_system_prefix(), agent, contract_system])
    profile_block = _role_profile_block(role_profile)
    if profile_block:
        system += "\n" + profile_block
    history = memory.get(HISTORY_KEY)
    tools = memory.get(TOOLS_KEY)
    user = render(
        "user",
        role=_clip(role, _NAME_CHARS),
        method=_clip(method_name, _NAME_CHARS),
        args=_short(list(args), _ARGUMENT_CHARS),
        kwargs=_short(dict(kwargs), _ARGUMENT_CHARS),
        depth=depth,
        time_left=Rendered(
            f"<time_left>{math.floor(time_left)} seconds: the calling program's deadline stops "
            f"this call sooner than the limit above</time_left>\n"
        )
        if time_left is not None
        else "",
        memory=_memory_view(memory),
        history_count=len(history) if isinstance(history, list) else 0,
        tool_count=len(tools) if isinstance(tools, Mapping) else 0,
        tool_limit=KNOWN_TOOLS_LIMIT,
        known_tools=_known_tools(memory),
        interface_overlap=Rendered(_interface_overlap(memory)),
        recent_patterns=Rendered(_recent_patterns(patterns, method_name)),
        active_contract=contract_user,
    )
    return Prompts(system=system, user=user)
