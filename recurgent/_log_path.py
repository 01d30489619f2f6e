"""Where the call log lives by default; the standard library only, so ``recurgent watch`` can
find it without loading the runtime (ADR 0115)."""

from __future__ import annotations

import os
from pathlib import Path

__all__ = ["default_log_path"]


def default_log_path() -> Path:
    """``$XDG_STATE_HOME/recurgent/recurgent.jsonl``, falling back to ``~/.local/state``."""
    state_home = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(state_home) / "recurgent" / "recurgent.jsonl"
