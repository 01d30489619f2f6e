"""Committing an accepted attempt: all of its memory writes or none, under the agent's memory lock.

An attempt's writes reach memory only when its Outcome is ok (ADR 0100): an error Outcome the
program returned rolls back exactly like an exception it raised, so a failed batch never leaves
half its changes behind. The writes are applied under the agent's memory lock, so two calls
committing at once never interleave their changes, and a worker's snapshot or a history append
never sees half a commit.

A top-level key written by a program that names one of the agent's methods would hide that
method (``acct.balance`` reads memory before it becomes a call): the call's log line lists such
keys in ``memory_key_shadows_method``. "The agent's methods" are the dynamic methods called on
this agent object so far, the current one included.
"""

from __future__ import annotations

import sys
from typing import TYPE_CHECKING

from recurgent._cancellation import raise_if_cancelled
from recurgent._journal import Writes
from recurgent._lifecycle._state import CallState

if TYPE_CHECKING:
    from recurgent._lifecycle import AgentRuntime

__all__ = ["commit", "note_shadowing", "shadowed_methods"]


def shadowed_methods(writes: Writes, methods: set[str]) -> list[str]:
    """The top-level keys ``writes`` sets that name one of ``methods``, sorted."""
    if methods.isdisjoint(writes.set):
        return []  # the usual case, answered by one C call
    return sorted(key for key in writes.set if isinstance(key, str) and key in methods)


def commit(runtime: AgentRuntime, writes: Writes | None) -> list[str]:
    """Apply an accepted (ok) attempt's writes to memory, in place, under the memory lock.

    Returns:
        The top-level keys written that name one of the agent's methods (usually none).
    """
    if writes is None or writes.empty:
        return []
    # A call whose awaiting task was cancelled commits nothing (ADR 0096).
    raise_if_cancelled()
    with runtime.lock:
        writes.apply(runtime.memory)
    # The log's secret index walks what this commit changed again (ADR 0120).
    touched = writes.touched_keys()
    runtime.secrets.forget(runtime.memory if touched is None else touched)
    methods = runtime.methods
    if not writes.set or methods.isdisjoint(writes.set):
        return []  # the usual case
    return shadowed_methods(writes, methods)


def note_shadowing(state: CallState, keys: list[str], *, debug: bool) -> None:
    """Record keys that hide a method on the call's log line (and say so in debug mode)."""
    if not keys:
        return
    state.memory_key_shadows_method = keys
    if debug:
        sys.stderr.write(
            f"[AGENT MEMORY KEY SHADOWS METHOD {state.role}.{state.method}] {', '.join(keys)}: "
            "agent.<name> now reads the stored value instead of calling the method; read it "
            "with agent.runtime_context[name]\n"
        )
