"""What one map did, and its log lines: one summary, one per failed item up to a cap (ADR 0113).

Never a line per item: the summary counts the items, their errors by type and the failed items
it did not log one by one. The calls that obtained and repaired the program write their own
ordinary lines, marked with the map's id.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from recurgent._lifecycle._map_items import Tally
from recurgent._lifecycle._map_request import MapRequest
from recurgent._values import utc_timestamp
from recurgent.outcome import Outcome

if TYPE_CHECKING:
    from recurgent._lifecycle import AgentRuntime
    from recurgent._lifecycle._map_program import Program

__all__ = ["MAX_FAILED_ITEM_LINES", "MapRun", "log_summary"]

#: Failed items logged one line each per map; the summary counts the rest (ADR 0113).
MAX_FAILED_ITEM_LINES = 20


@dataclass(slots=True)
class MapRun:
    """What one map did, for its summary line."""

    map_id: str
    request: MapRequest
    started: float = field(default_factory=time.monotonic)
    program_ms: float = 0.0
    program: Program | None = None
    first_call_id: str | None = None
    repair_call_id: str | None = None
    repair_attempted: bool = False
    repaired: bool = False
    shared: bool = False
    mode: str = "batches"
    executor: str | None = None
    workers: int = 0
    batches: int = 0
    batch_size: int = 0
    trace_id: str | None = None
    failed: dict[int, Outcome] = field(default_factory=dict)


def log_summary(runtime: AgentRuntime, run: MapRun, tally: Tally, total: int) -> None:
    logger = runtime.logger
    if logger is None:
        return
    request = run.request
    duration_ms = (time.monotonic() - run.started) * 1000
    items_ms = max(duration_ms - run.program_ms, 1e-6)
    program = run.program
    base = {
        "timestamp": utc_timestamp(),
        "runtime": "python",
        "role": runtime.role,
        "method": request.method,
        "map_id": run.map_id,
        "trace_id": run.trace_id or runtime.options.trace_id,
    }
    failed = sorted(run.failed.items())
    logged = failed[:MAX_FAILED_ITEM_LINES]
    for index, outcome in logged:
        logger.emit(
            {
                **base,
                "entry_kind": "map_item_failed",
                "item_index": index,
                "args": list(request.calls[index][0]),
                "outcome_error_type": outcome.error_type,
                "outcome_error_message": outcome.error_message,
            }
        )
    logger.emit(
        {
            **base,
            "entry_kind": "map",
            "map_kind": "starmap" if request.star else "map",
            "map_mode": run.mode,
            "map_items": total,
            "map_ok": tally.ok,
            "map_errors": tally.errors,
            "map_timeouts": tally.timeouts,
            "map_error_types": dict(sorted(tally.by_type.items())),
            "map_failed_items_logged": len(logged),
            "map_failed_items_omitted": len(failed) - len(logged),
            "map_executor": run.executor,
            "map_workers": run.workers,
            "map_batches": run.batches,
            "map_batch_size": run.batch_size,
            "map_program_source": "shared" if run.shared else (program.source if program else None),
            "map_program_checksum": program.checksum if program else None,
            "map_first_call_id": run.first_call_id,
            "map_repair_attempted": run.repair_attempted,
            "map_repaired": run.repaired,
            "map_repair_call_id": run.repair_call_id,
            "duration_ms": round(duration_ms, 1),
            "map_program_ms": round(run.program_ms, 1),
            "map_items_per_second": round(total / (items_ms / 1000), 1) if total else 0.0,
        }
    )
