"""A part shared deeper inside one written value, on the worker's path (ADR 0156).

A worker runs the program in the same sandbox as an in-process call and commits its memory
writes with the same rebuild (``_child.run_request``: the run, then ``_commit``, then
``_finish``), so a part reached again deeper counts its own levels there too: the run is refused
with the in-process answer, the memory refusal, rather than later by the pipe's encoder; a value
sharing one part many times within the cap crosses back whole.

The steps of ``run_request`` are taken in this process (as ``specs/test_red_team_r27.py`` does):
a worker process imports the ``recurgent`` its interpreter finds under ``python -I``, which is
the installed checkout, not necessarily the code under test.
"""

from __future__ import annotations

from typing import Any

from recurgent._worker._codec import from_wire
from specs.worker.support import worker_answer

# Thirty rounds of ``x = [x, <33 levels ending in x>]`` (red team R26): a 1 020-level path.
_GROW = """
x = []
for k in range(30):
    c = []
    inner = c
    for _ in range(32):
        n = []
        inner.append(n)
        inner = n
    inner.append(x)
    x = [x, c]
context['k'] = x
"""

# A 40-level part, 100 times at level 2 and once 21 lists further down.
_SHARED = """
p = []
inner = p
for _ in range(40):
    n = []
    inner.append(n)
    inner = n
deep = p
for _ in range(21):
    deep = [deep]
context['k'] = {'many': [p] * 100, 'deep': [deep]}
"""


def test_a_part_shared_deeper_is_refused_by_the_workers_memory_rebuild() -> None:
    """The R26 program on the worker's path: ``non_serializable_result`` with the memory
    rebuild's refusal, nothing written (before: the rebuild committed it to the worker's copy,
    and only the pipe's encoder refused it, as "can cross the worker boundary")."""
    answer = worker_answer({}, _GROW)

    assert answer.error is not None
    assert (answer.status, answer.error.error_type, answer.memory_set) == (
        "error",
        "non_serializable_result",
        {},
    )
    assert "is nested more than 64 levels deep; memory may hold only plain data" in (
        answer.error.message
    )


def test_a_part_shared_many_times_within_the_cap_crosses_back() -> None:
    """The 40-level part 100 times at level 2 and once at level 23 (63 levels below the top,
    the most the pipe's encoder carries): written, the value plain Python gives (the pipe
    carries a tree, so each place holds an equal copy)."""
    answer = worker_answer({}, _SHARED)

    part: list[Any] = []
    for _ in range(40):
        part = [part]
    deep: list[Any] = part
    for _ in range(21):
        deep = [deep]
    assert answer.status == "ok", answer.error
    assert from_wire(answer.memory_set["k"], lambda *_: None) == {
        "many": [part] * 100,
        "deep": [deep],
    }
