"""Prompts: renders the depth-aware system prompt, the user prompt and retry feedback (ADR 0016).

Templates are package data under ``recurgent/prompts`` rendered with ``string.Template``'s
``substitute``, so a missing variable fails loudly instead of leaking a ``$name`` to the model.
The response schema the provider fills lives in :data:`recurgent.program.PROGRAM_SCHEMA`.
"""

from __future__ import annotations

import functools
import string
from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from typing import Any

from recurgent._history import HISTORY_KEY
from recurgent._redact import redact
from recurgent._registry import TOOLS_KEY, count, ranked_tools
from recurgent._sandbox import ALLOWED_MODULES, SandboxLimits
from recurgent._values import SafeRepr, safe_repr

__all__ = ["PROMPT_VERSION", "Prompts", "build_prompts", "render"]

PROMPT_VERSION = "2026-11-29.python.v2"
KNOWN_TOOLS_LIMIT = 12
_MEMORY_CHARS = 6000
_ARGUMENT_CHARS = 4000


class PromptTemplateError(LookupError):
    """A template referenced a variable the renderer did not supply (a bug in the runtime)."""


@functools.cache
def _template(name: str) -> string.Template:
    text = resources.files("recurgent").joinpath("prompts", f"{name}.md").read_text("utf-8")
    return string.Template(text)


def render(name: str, **variables: Any) -> str:
    """Render ``prompts/<name>.md``; every ``$variable`` must be supplied."""
    try:
        return _template(name).substitute({k: str(v) for k, v in variables.items()})
    except KeyError as missing:
        raise PromptTemplateError(
            f"prompt template {name!r} needs variable {missing.args[0]!r}"
        ) from None


@dataclass(frozen=True, slots=True)
class Prompts:
    """The two prompts of one dynamic call (retry feedback is appended per attempt)."""

    system: str
    user: str


def _short(value: Any, limit: int) -> str:
    text = safe_repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


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


def _known_tools(memory: Mapping[str, Any]) -> str:
    lines: list[str] = []
    for name, entry in ranked_tools(memory, KNOWN_TOOLS_LIMIT):
        purpose = " ".join(str(entry.get("purpose") or "purpose unavailable").split())
        if len(purpose) > 300:
            purpose = purpose[:297] + "..."
        lines.append(f"- {name}: {purpose}\n")
        methods = entry.get("methods")
        methods = (
            [m for m in methods if isinstance(m, str) and m.strip()]
            if isinstance(methods, list)
            else []
        )
        if methods:
            lines.append(f"  methods: [{', '.join(methods)}]\n")
        if entry.get("deliverable") is not None:
            lines.append(f"  deliverable: {_short(entry['deliverable'], 300)}\n")
        successes = count(entry, "success_count")
        calls = successes + count(entry, "failure_count")
        if calls:
            lines.append(f"  reliability: calls={calls}, success_rate={successes / calls:.2f}\n")
    return render("known_tools", entries=redact("".join(lines)) or "none registered yet\n")


def _contract_blocks(contract: Mapping[str, Any] | None) -> tuple[str, str]:
    if not contract:
        return render("contract_none"), render("active_contract_none")
    fields = {
        key: safe_repr(contract.get(key))
        for key in ("purpose", "deliverable", "acceptance", "failure_policy")
    }
    signature = contract.get("intent_signature")
    system = render(
        "contract_active",
        **fields,
        intent_line=f"- intent_signature: {safe_repr(signature)}" if signature else "",
    )
    user = render(
        "active_contract",
        **fields,
        intent_tag=f"<intent_signature>{signature}</intent_signature>\n" if signature else "",
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
) -> Prompts:
    """Render both prompts of one dynamic call.

    The system prompt depends only on the agent (role, depth band, contract, network policy and
    limits), so providers can cache it across calls; everything that changes from call to call
    (invocation, memory, known tools, history count) is in the user prompt.
    """
    band = min(depth, 2)
    identity = ("identity_builder", "identity_tool", "identity_worker")[band]
    contract_system, contract_user = _contract_blocks(contract)
    system = "\n".join(
        [
            render(identity, role=role, depth=depth),
            render(
                "environment",
                allowed_imports=", ".join(ALLOWED_MODULES),
                network_policy=_network_text(network),
                max_response_kb=limits.max_response_bytes // 1024,
                timeout_seconds=f"{limits.timeout_seconds:g}",
                max_items=f"{limits.max_sequence_items:,}",
                max_forwarded_calls=limits.max_forwarded_calls,
            ),
            render("thinking", stance_guidance=_STANCE_GUIDANCE[band]),
            render("known_tools_system", limit=KNOWN_TOOLS_LIMIT),
            contract_system,
            render("constraints"),
        ]
    )
    history = memory.get(HISTORY_KEY)
    tools = memory.get(TOOLS_KEY)
    user = render(
        "user",
        role=role,
        method=method_name,
        args=_short(list(args), _ARGUMENT_CHARS),
        kwargs=_short(dict(kwargs), _ARGUMENT_CHARS),
        depth=depth,
        memory=_memory_view(memory),
        history_count=len(history) if isinstance(history, list) else 0,
        tool_count=len(tools) if isinstance(tools, Mapping) else 0,
        tool_limit=KNOWN_TOOLS_LIMIT,
        known_tools=_known_tools(memory),
        active_contract=contract_user,
        stance_check=_STANCE_CHECK[band],
    )
    return Prompts(system=system, user=user)
