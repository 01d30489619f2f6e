"""The name of the user running the process: the original's ``$USER``, read one way everywhere.

Maintainers (ADR 0087), role-profile and lifecycle-override actors and the self model all name
this user. ``getpass.getuser`` reads ``LOGNAME``, ``USER``, ``LNAME`` and ``USERNAME``, then
the password table, so a process under cron, a container or ``sudo -u`` still has a name where
``$USER`` alone is empty.
"""

from __future__ import annotations

import getpass

__all__ = ["os_user_name"]


def os_user_name() -> str:
    """The OS user's name, stripped; ``""`` when the environment and the password table have
    none (each caller says what stands in for it)."""
    try:
        return getpass.getuser().strip()
    except Exception:  # noqa: BLE001 - no user name in the environment or the password table
        return ""
