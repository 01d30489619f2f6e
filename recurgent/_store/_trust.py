"""Whether a store path may be trusted: private directories and files of this user (ADR 0070).

A stored program runs with no provider request, so whoever can write the store chooses code
the user's agents run. Only paths no one else could have written are read or written: real
directories (no symbolic links) below the root, owned by this user, writable by no one else.
"""

from __future__ import annotations

import os
import stat
from pathlib import Path

__all__ = ["UntrustedStoreError", "status_problem", "untrusted_levels"]


class UntrustedStoreError(PermissionError):
    """A store path someone else could have written (ADR 0070): a symbolic link or a
    non-directory below the root, or a level (or file) not owned by this user or writable by
    group or others. The store neither reads through it nor writes into it."""


def _euid() -> int | None:
    geteuid = getattr(os, "geteuid", None)
    return None if geteuid is None else int(geteuid())


def status_problem(status: os.stat_result, what: str, *, strict: bool) -> str | None:
    """Why a file or directory (``status``, named ``what`` in the message) is not private, or
    ``None``: another owner, or a write bit for group or others (``strict``) / for others
    without the sticky bit (not ``strict``: the root)."""
    uid = _euid()
    if uid is None:
        return None
    if status.st_uid != uid:
        return f"{what} is owned by uid {status.st_uid}, not {uid}"
    mode = stat.S_IMODE(status.st_mode)
    # The root may be the user's own group-shared directory; below it every level is one the
    # store made 0700 (or 0600), so any write bit for others means someone changed it.
    loose = mode & 0o022 if strict else mode & 0o002 and not mode & stat.S_ISVTX
    if loose:
        return f"{what} is writable by others (mode {mode:04o})"
    return None


def untrusted_levels(directory: Path, root: Path) -> str | None:
    """Why ``directory`` (``root`` or below it) must not be trusted, or ``None``.

    Every existing level below ``root`` must be a real directory (not a symbolic link: it
    could lead outside the root), owned by this user and writable by no one else; ``root``
    itself (a link to it is the user's choice) must be this user's and not world-writable.
    Missing levels are fine: the store creates them private.
    """
    try:
        status = os.stat(root)
    except FileNotFoundError:
        return None
    except OSError as error:
        return f"store root {root}: {error}"
    problem = status_problem(status, f"store root {root}", strict=False)
    if problem is not None:
        return problem
    try:
        relative = directory.relative_to(root)
    except ValueError:
        return f"{directory} is outside the store root {root}"
    level = root
    for part in relative.parts:
        level = level / part
        try:
            status = os.lstat(level)
        except FileNotFoundError:
            return None
        except OSError as error:
            return f"{level}: {error}"
        if stat.S_ISLNK(status.st_mode):
            return f"{level} is a symbolic link"
        if not stat.S_ISDIR(status.st_mode):
            return f"{level} is not a directory"
        problem = status_problem(status, str(level), strict=True)
        if problem is not None:
            return problem
    return None
