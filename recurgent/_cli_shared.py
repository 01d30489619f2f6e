"""What the subcommands of ``recurgent tools`` and ``recurgent proposals`` share (ADR 0128): the
options every one takes, accepted before the subcommand too, and how a ``tools`` command refuses.

Issue 20 gives each command ``--json`` and ``--root``; argparse reads them only after the
subcommand's name, so ``recurgent tools --root R list`` was a usage error although
``recurgent tools list --root R`` worked. Both groups now move those two options, when they
come first, to just after the subcommand's name before parsing. Standard library only: the
console script's start-up budget holds (ADR 0114).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Collection, Sequence
from pathlib import Path
from typing import TextIO

__all__ = ["hoist_shared_options", "leading_shared_options", "refuse", "shared_options"]

_FLAGS = frozenset({"--json"})
_VALUED = "--root"


def _root_path(text: str) -> Path:
    # An empty path would be the current directory: a store made, pruned or listed there.
    if not text.strip():
        raise argparse.ArgumentTypeError("an empty path; give the store's directory")
    return Path(text)


def shared_options(store: str) -> argparse.ArgumentParser:
    """The parent parser of every subcommand: ``--json`` and ``--root`` (``store``: what the
    root holds, for the help text)."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--json", action="store_true", help="print one JSON document")
    common.add_argument(
        "--root",
        type=_root_path,
        metavar="PATH",
        help=f"{store} (default: $RECURGENT_TOOLSTORE_ROOT, else "
        "$XDG_STATE_HOME/recurgent/tools, else ~/.local/state/recurgent/tools)",
    )
    return common


def leading_shared_options(arguments: Sequence[str]) -> tuple[list[str], list[str]]:
    """``arguments`` split after their leading run of ``--json``, ``--root PATH`` and
    ``--root=PATH``: ``(that run, the rest)``."""
    index = 0
    while index < len(arguments):
        token = arguments[index]
        if token in _FLAGS or token.startswith(f"{_VALUED}="):
            index += 1
        elif token == _VALUED and index + 1 < len(arguments):
            index += 2
        else:
            break
    return list(arguments[:index]), list(arguments[index:])


def hoist_shared_options(arguments: Sequence[str], commands: Collection[str]) -> list[str]:
    """``arguments`` with a leading run of ``--json``, ``--root PATH`` and ``--root=PATH``
    moved after the subcommand that follows it (when one of ``commands`` does; else left in
    front). Everything else is returned as given, in order."""
    moved, rest = leading_shared_options(arguments)
    if moved and rest and rest[0] in commands:
        return [rest[0], *moved, *rest[1:]]
    return [*moved, *rest]


def refuse(
    command: str, error_type: str, why: str, *, as_json: bool, out: TextIO, err: TextIO
) -> int:
    """Say why a ``recurgent tools`` command refused on stderr and, with ``--json``, as one JSON
    document on stdout too (``command``, ``status``, ``error_type``, ``error_message``: the
    shape of ``recurgent proposals``' errors); exit status 1."""
    err.write(f"recurgent tools: {why}\n")
    if as_json:
        document = {
            "command": command,
            "status": "error",
            "error_type": error_type,
            "error_message": why.removeprefix(f"{error_type}: "),
        }
        out.write(json.dumps(document, indent=2, ensure_ascii=False) + "\n")
    return 1
