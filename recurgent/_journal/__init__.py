"""Journaled memory: one attempt's private view of an agent's memory, committed in place or dropped.

An attempt never writes an agent's memory directly (ADR 0027). It works on a :class:`MemoryView`,
a ``dict`` subclass whose storage starts as a shallow copy of memory's top level (cost: the
number of keys, never the size of the values). The first time generated code reaches a value
through the view, a mutable value (dict, list, set, deque, bytearray, or a tuple or Outcome
holding one) is deep-copied into the view; the journal keeps each copy's original and a shallow
record of the copy's contents at copy time. Other host objects (ADR 0057) are copied the same
way when the journal can restore them exactly (``random.Random``, ``StringIO``, XML elements,
``UserDict``...), shared when nothing can change them (dates, host functions, agents), and
otherwise withheld: the attempt gets an inert stand-in.

* **discard** (rollback) drops the view: nothing the attempt did ever reached memory, so a write
  made meanwhile by the host, another thread or another agent always survives. Cost: O(1).
* **prepare** turns what the attempt changed into :class:`Writes`: top-level keys set or deleted,
  and a :class:`Patch` for each copied container whose contents changed. New values are rebuilt
  by the boundary (plain data only); copies map back to their originals, so commit keeps the
  identity of every container a caller holds. Cost: O(what was touched); a commit whose patches
  write a container also walks memory once, to count them at the deepest place memory holds
  their container (ADR 0161).
* **commit** applies the writes in place, under the agent's memory lock.

Usage::

    journal = Journal(memory)          # begin
    view = journal.view                # hand to generated code
    writes = journal.prepare(rebuild)  # raises NonSerializableResultError for code objects
    writes.apply(memory)               # commit (or journal.discard(): rollback)

``Writes.as_plain()`` renders the writes as plain data (top-level sets and deletes, and container
patches addressed by their path from the memory root), for a worker that ships them over a pipe;
:func:`apply_plain` commits such plain writes on the host side.

Modules (ADR 0058): ``_view`` (the view generated code holds), ``_core`` (the journal: copy on
touch, prepare), ``_diff`` (what changed in one copied container), ``_kinds`` (host objects
other than containers it copies), ``_shared`` (what it shares, guards or withholds instead,
ADR 0068), ``_running`` (the running attempt's journal and its guard), ``_writes`` (patches and
their commit).
"""

from __future__ import annotations

from recurgent._journal._core import Journal
from recurgent._journal._view import (
    REDIRECTED_DICT_METHODS,
    MemoryView,
    after_commit,
    redirect_unbound,
    writable,
)
from recurgent._journal._writes import Patch, Rebuild, Writes, apply_plain

__all__ = [
    "REDIRECTED_DICT_METHODS",
    "Journal",
    "MemoryView",
    "Patch",
    "Rebuild",
    "Writes",
    "after_commit",
    "apply_plain",
    "redirect_unbound",
    "writable",
]
