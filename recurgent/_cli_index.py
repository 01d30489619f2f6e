"""Every command of the ``recurgent`` console script, as data, for the top-level help (ADR 0115).

``recurgent --help`` lists the subcommands of ``tools`` and ``proposals`` too, but their parsers
live in rooms that load the tool store and pydantic. The top-level help reads this table
instead, so it starts with the standard library only; ``specs/test_cli_entry.py`` compares the
table with the rooms' real parsers (names, order and help text), so it cannot drift.
"""

from __future__ import annotations

import textwrap

__all__ = ["PROPOSALS_COMMANDS", "TOOLS_COMMANDS", "index_text"]

TOOLS_COMMANDS: tuple[tuple[str, str], ...] = (
    ("list", "every persisted method and registered tool"),
    ("show", "the code and metadata of a role (or one method)"),
    ("prune", "remove what was not used for DAYS (dry run unless --yes)"),
    ("forget", "remove a role's artifacts and registry entry, or one method's artifact"),
    (
        "scorecards",
        "each code version of a method: lifecycle state, calls, successes, contract rate",
    ),
    ("decisions", "the promotion ledger of a method, with rationale"),
    (
        "set-lifecycle",
        "set a code version's lifecycle state by hand (a maintainer override, recorded)",
    ),
    (
        "namespace-pressure",
        "a role's memory keys across its methods: collisions, lifetimes, drift (ADR 0084)",
    ),
)
"""``recurgent tools COMMAND``: the commands of ``recurgent/_store/_cli.py``, in its order."""

PROPOSALS_COMMANDS: tuple[tuple[str, str], ...] = (
    ("list", "the proposals, oldest first"),
    ("show", "one proposal in full"),
    ("approve", "approve a proposed proposal"),
    ("reject", "reject a proposed or approved one"),
    ("apply", "apply an approved proposal (runs its mutation)"),
)
"""``recurgent proposals COMMAND``: the commands of ``recurgent/_governance/_cli.py``."""

_NAME_WIDTH = 20
_LINE_WIDTH = 79


def index_text() -> str:
    """The help's closing section: every ``tools`` and ``proposals`` command, one per line."""
    lines = []
    for group, commands in (("tools", TOOLS_COMMANDS), ("proposals", PROPOSALS_COMMANDS)):
        lines.append(f"recurgent {group} COMMAND:")
        lines.extend(
            textwrap.fill(
                f"  {name:<{_NAME_WIDTH}}{text}",
                width=_LINE_WIDTH,
                subsequent_indent=" " * (_NAME_WIDTH + 2),
            )
            for name, text in commands
        )
    lines.append("Every command has its own --help, e.g. recurgent tools show --help.")
    return "\n".join(lines)
