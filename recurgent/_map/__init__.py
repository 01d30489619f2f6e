"""The map room: where ``Agent.map``'s items run (ADRs 0111, 0112).

The lifecycle (``recurgent._lifecycle._map``) obtains the one program, decides repairs and writes
the log; this room only runs items and returns values. Its executors implement the execution
port's :class:`~recurgent._execution.BatchExecutor`:

* ``"in_process"``: a fresh sandbox per item on the calling thread (:mod:`._inprocess`);
* ``"process"``: the worker room's processes under the agent's isolation (:mod:`._process`);
* ``"ray"``: one Ray actor per worker holding the program (:mod:`._ray`, the extra
  ``recurgent[ray]``).

Nothing here is imported by ``import recurgent`` beyond this module's names; Ray and tqdm are
imported when a map asks for them.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from recurgent._execution import BatchExecutor, ItemCall
from recurgent._worker._codec import Unencodable, to_wire
from recurgent.errors import UsageError

__all__ = ["EXECUTOR_NAMES", "check_choice", "check_items", "make_executor"]

EXECUTOR_NAMES = ("in_process", "process", "ray")


def check_choice(choice: object, *, confined: bool) -> None:
    """Refuse an executor choice before anything runs.

    Raises:
        UsageError: an unknown name; ``"ray"`` without Ray installed; an executor that would
            leave an ``isolation="process"`` agent's programs unconfined.
    """
    if choice is None or isinstance(choice, BatchExecutor):
        return
    if choice not in EXECUTOR_NAMES:
        raise UsageError(
            f"executor must be one of {', '.join(map(repr, EXECUTOR_NAMES))}, None or a "
            f"BatchExecutor; got {choice!r}"
        )
    if confined and choice in ("in_process", "ray"):
        raise UsageError(
            f"executor={choice!r} would run the programs of an isolation='process' agent "
            "outside its confined workers; map with executor='process' (or None)"
        )
    if choice == "ray":
        from recurgent._map._ray import ray_module

        ray_module()


def _any_agent(value: object) -> tuple[int, str] | None:
    # Agents in arguments cross to a local worker as references the parent answers.
    from recurgent._agent import Agent

    return (0, "agent") if isinstance(value, Agent) else None


def _no_agent(value: object) -> tuple[int, str] | None:
    return None


def check_items(choice: object, items: Sequence[ItemCall]) -> None:
    """Refuse, before anything runs, items that cannot cross to the chosen executor's workers.

    Raises:
        UsageError: an item's arguments hold a value that is not data (a Ray worker also
            takes no agent).
    """
    if choice not in ("process", "ray"):
        return
    reference = _no_agent if choice == "ray" else _any_agent
    for index, (args, kwargs) in enumerate(items):
        try:
            to_wire([list(args), dict(kwargs)], f"item {index}", reference)
        except Unencodable as problem:
            raise UsageError(
                f"executor={choice!r} sends every item to another process as data, and "
                f"{problem}; map such items with executor='in_process'"
            ) from None


def make_executor(
    choice: object,
    *,
    dependencies: bool,
    confined: bool,
    process_executor: Callable[[], BatchExecutor],
) -> BatchExecutor:
    """The executor of a map whose program is known.

    ``None`` chooses as an ordinary call would: worker processes for a program with
    dependencies or an ``isolation="process"`` agent, else this process.
    """
    if isinstance(choice, BatchExecutor):
        return choice
    name: Any = choice
    if name is None:
        name = "process" if dependencies or confined else "in_process"
    if name == "process":
        return process_executor()
    if name == "ray":
        from recurgent._map._ray import RayBatches

        return RayBatches()
    from recurgent._map._inprocess import InProcessBatches

    return InProcessBatches()
