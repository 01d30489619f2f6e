"""Authority: who acts on a proposal, and whether they may enact it (ADR 0087).

Observing and proposing are open to everyone. Enacting (approving, rejecting, applying) is
open to the maintainers named by ``authority_maintainers`` while
``authority_enforcement_enabled`` is on (the defaults: on, the OS user). The settings are the
ones the agent captured when it was built, never the process table.
"""

from __future__ import annotations

from typing import Any, Literal

from recurgent._os_user import os_user_name
from recurgent._runtime_config import RuntimeSettings
from recurgent.errors import UsageError
from recurgent.outcome import Outcome

__all__ = [
    "ACTOR_CHARS",
    "ENACT_VERBS",
    "UNKNOWN_ACTOR",
    "Verb",
    "denied",
    "may_enact",
    "os_user",
    "resolve_actor",
]

Verb = Literal["approve", "reject", "apply"]
ENACT_VERBS: tuple[Verb, ...] = ("approve", "reject", "apply")
#: Longest actor name accepted: a user name, not a document.
ACTOR_CHARS = 200
#: The actor recorded when no name is given and the OS has none either (the original's).
UNKNOWN_ACTOR = "unknown"


def os_user() -> str:
    """The OS user name, lower-cased (the original's ``$USER``), or ``unknown``."""
    return os_user_name().lower() or UNKNOWN_ACTOR


def resolve_actor(actor: Any) -> str:
    """The actor named (stripped), or the OS user when none is.

    Raises:
        UsageError: ``actor`` is not a str, or longer than :data:`ACTOR_CHARS`.
    """
    if actor is None:
        return os_user()
    if not isinstance(actor, str):
        raise UsageError(f"actor must be a user name (str) or None, got {type(actor).__name__}")
    name = actor.strip()
    if len(name) > ACTOR_CHARS:
        raise UsageError(f"actor must be at most {ACTOR_CHARS} characters, got {len(name)}")
    return name or os_user()


def may_enact(settings: RuntimeSettings, actor: str) -> bool:
    """Whether ``actor`` may approve, reject or apply proposals under ``settings``.

    Names compare case-insensitively; an empty maintainer list allows no one (as the original).
    """
    if not settings.authority_enforcement_enabled:
        return True
    return actor.strip().lower() in settings.authority_maintainers


def denied(actor: str, verb: Verb, settings: RuntimeSettings, *, role: str) -> Outcome:
    """The ``authority_denied`` Outcome for ``actor`` trying to ``verb`` a proposal.

    Metadata has the original's shape (``actor``, ``action``, ``authority`` with ``observe``,
    ``propose`` and ``enact``); the message says where maintainers come from.
    """
    why = (
        "no maintainers are configured"
        if not settings.authority_maintainers
        else "they are not a maintainer"
    )
    message = (
        f"Actor {actor!r} may not {verb} proposals: {why}. Maintainers come from "
        "RECURGENT_AUTHORITY_MAINTAINERS (a comma-separated list; default: the OS user) or "
        "configure_runtime(authority_maintainers=[...]) before the agent is built."
    )
    return Outcome.error(
        error_type="authority_denied",
        error_message=message,
        retriable=False,
        tool_role=role,
        method_name=f"{verb}_proposal",
        metadata={
            "actor": actor,
            "action": verb,
            "authority": {"observe": True, "propose": True, "enact": False},
        },
    )
