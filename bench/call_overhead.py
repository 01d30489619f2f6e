"""Call-overhead benchmark: what the runtime adds to one trivial dynamic call (issue 10).

The provider is a :class:`~recurgent.testing.ScriptedProvider` answering ``result = 1`` at once,
and logging is on (to a file in a temporary directory), so every figure is runtime overhead:
prompting, generation bookkeeping, the sandbox, the memory journal, the history record and the
log line. Three figures, each the median of ``--samples`` calls:

* ``fresh``: a new agent's first calls;
* ``after N calls``: the same kind of agent after ``--session`` earlier calls;
* ``R rows in memory``: a new agent whose memory holds ``--rows`` plain dict rows.

Timings are printed, never asserted; the exit status is 0 either way.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import tempfile
import time
from pathlib import Path
from typing import Any

from recurgent import Agent
from recurgent.testing import ScriptedProvider

FRESH_TARGET_MS = 1.0
RATIO_TARGET = 1.5


def _agent(log: Path) -> Any:
    return Agent.for_("bench", provider=ScriptedProvider({"tick": "result = 1"}), log=log)


def _median_ms(agent: Any, samples: int) -> float:
    timings: list[float] = []
    for _ in range(samples):
        started = time.perf_counter()
        outcome = agent.tick()
        timings.append((time.perf_counter() - started) * 1000)
        if not outcome.ok:
            raise SystemExit(f"WRONG RESULT OR FAILURE: {outcome!r}")
    return statistics.median(timings)


def main() -> None:
    """Run the three measurements and print them with their targets."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--session", type=int, default=2000)
    parser.add_argument("--rows", type=int, default=50_000)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        gc.collect()
        fresh = _median_ms(_agent(root / "fresh.jsonl"), options.samples)

        long_lived = _agent(root / "session.jsonl")
        for _ in range(options.session):
            long_lived.tick()
        gc.collect()
        session = _median_ms(long_lived, options.samples)

        loaded = _agent(root / "rows.jsonl")
        loaded.rows = [{"id": i, "name": f"row {i}", "score": i * 0.5} for i in range(options.rows)]
        gc.collect()
        rows = _median_ms(loaded, options.samples)

    def verdict(ok: bool) -> str:
        return "ok" if ok else "TARGET MISSED"

    print(f"{'measurement':<32} {'median ms':>10} {'ratio':>7}  target")
    print(
        f"{'fresh agent':<32} {fresh:>10.3f} {'':>7}  <= {FRESH_TARGET_MS:g} ms  "
        f"{verdict(fresh <= FRESH_TARGET_MS)}"
    )
    for label, value in (
        (f"after {options.session} calls", session),
        (f"{options.rows} rows in memory", rows),
    ):
        ratio = value / fresh
        print(
            f"{label:<32} {value:>10.3f} {ratio:>7.2f}  ratio <= {RATIO_TARGET:g}  "
            f"{verdict(ratio <= RATIO_TARGET)}"
        )


if __name__ == "__main__":
    main()
