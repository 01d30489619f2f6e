"""Start-up shared by the examples: live with a configured model, otherwise scripted programs.

Offline (the default), an example's methods are answered by the scripted programs of the
acceptance suite (``acceptance/programs``), written as a good model would write them, so every
example runs without a network or an API key. Set ``OPENAI_API_KEY``, or ``OPENAI_BASE_URL`` for
an OpenAI-compatible local server, to have a real model write the programs instead.

Examples import this module before anything from ``acceptance``: it puts the repository root on
``sys.path``. Logs go where recurgent's default log goes, ``$XDG_STATE_HOME/recurgent/`` (else
``~/.local/state/recurgent/``), never into the repository.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from acceptance.programs import PROGRAMS  # noqa: E402 - needs the repository root on sys.path
from acceptance.scripted import ProgramRouter  # noqa: E402
from recurgent import Outcome, Provider  # noqa: E402

__all__ = ["REPO_ROOT", "call_text", "is_live", "log_path", "show", "start"]


def is_live() -> bool:
    """Whether a real model is configured (``OPENAI_API_KEY`` or ``OPENAI_BASE_URL``)."""
    return bool(os.environ.get("OPENAI_API_KEY") or os.environ.get("OPENAI_BASE_URL"))


def start(example: str, *, substitutions: Mapping[str, str] | None = None) -> Provider | None:
    """Print the example's first line, saying how it runs, and return the provider to use.

    Args:
        example: The example's name, for the first line.
        substitutions: Placeholders to fill in the scripted programs (offline only), such as
            the feed server's URL.

    Returns:
        ``None`` when live (agents then build the OpenAI provider from the environment),
        otherwise a provider answering from the scripted programs.
    """
    if is_live():
        model = os.environ.get("RECURGENT_MODEL") or "the default model"
        endpoint = os.environ.get("OPENAI_BASE_URL") or "api.openai.com"
        print(f"recurgent {example} — live: {model} at {endpoint}")
        return None
    print(
        f"recurgent {example} — offline: scripted programs "
        "(set OPENAI_API_KEY or OPENAI_BASE_URL to run live)"
    )
    return ProgramRouter(PROGRAMS, substitutions=substitutions).provider()


def log_path(name: str = "recurgent.jsonl") -> Path:
    """A log file in recurgent's state directory, honouring ``XDG_STATE_HOME``."""
    state_home = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state_home) / "recurgent" / name


def call_text(method: str, args: Any = (), kwargs: Any = None) -> str:
    """A call as Python source, e.g. ``convert(100, from='celsius', to='fahrenheit')``."""
    parts = [repr(arg) for arg in args or ()]
    parts += [f"{key}={value!r}" for key, value in dict(kwargs or {}).items()]
    return f"{method}({', '.join(parts)})"


def show(label: str, outcome: Outcome | Any) -> None:
    """Print one call's label and its Outcome (the value, or ``[error_type] message``)."""
    print(f"{label:<36} -> {outcome}")
