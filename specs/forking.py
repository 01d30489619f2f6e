"""Spec helper: run code in a child forked while a thread of the parent holds some locks."""

from __future__ import annotations

import contextlib
import os
import select
import threading
from collections.abc import Callable

CHILD_BLOCKED = "child blocked"


def report_of_a_child_forked_while_held(
    held: Callable[[], contextlib.AbstractContextManager[object]],
    child: Callable[[], str],
    *,
    wait: float = 20,
) -> str:
    """What ``child()`` returned in a child forked while a thread of the parent was inside
    ``held()`` (released only after the child reported or was killed), or
    :data:`CHILD_BLOCKED` when it did not report within ``wait`` seconds."""
    entered, release = threading.Event(), threading.Event()

    def hold() -> None:
        with held():
            entered.set()
            release.wait(wait + 10)

    holder = threading.Thread(target=hold, daemon=True)
    holder.start()
    assert entered.wait(5)
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: report, then leave at once (no atexit, no pytest)
        try:
            os.write(write_end, child().encode())
        finally:
            os._exit(0)
    os.close(write_end)
    ready: list[int] = []
    try:
        ready, _, _ = select.select([read_end], [], [], wait)
        return os.read(read_end, 4096).decode() if ready else CHILD_BLOCKED
    finally:
        release.set()
        holder.join(5)
        os.close(read_end)
        if not ready:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, 9)
        os.waitpid(pid, 0)
