"""An agent's ``map``/``starmap`` handed to the lifecycle: one program over many items (ADR 0110).

:func:`map_items` refuses a map made by generated code, checks the arguments into a request
(``_lifecycle._map_request``) and hands it, with the agent's runtime, to ``_lifecycle._map``,
which obtains the program once and runs the items in batches on an executor (ADRs 0111-0113).
The two public methods, their signatures and docstrings stay on the facade.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from recurgent._agent_names import RESERVED_NAMES
from recurgent._sandbox import generated_code_running
from recurgent.errors import GuardrailViolationError
from recurgent.outcome import Outcome

if TYPE_CHECKING:
    from recurgent._agent import Agent

__all__ = ["map_items"]


def map_items(
    agent: Agent,
    method: str,
    items: Iterable[Any],
    star: bool,
    executor: object,
    batch_size: int | None,
    concurrency: int | None,
    progress: bool,
    timeout_seconds: float | None,
) -> list[Outcome]:
    """One Outcome per item of ``agent.map`` (``star``: ``agent.starmap``), in order."""
    from recurgent._lifecycle._map import run_map
    from recurgent._lifecycle._map_request import map_request

    internals = agent._agent
    if generated_code_running():
        raise GuardrailViolationError(
            f"Generated code called {internals.role}.map directly; agents are reachable "
            "only through tool()/delegate() handles",
            subtype="unforwarded_agent_call",
        )
    request = map_request(
        method,
        items,
        star=star,
        executor=executor,
        batch_size=batch_size,
        concurrency=concurrency,
        progress=progress,
        timeout_seconds=timeout_seconds,
        host_call=not internals.built_by_program,
        reserved=RESERVED_NAMES,
    )
    return run_map(agent._runtime(), request)
