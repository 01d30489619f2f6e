"""Call-overhead benchmark: what the runtime adds to one trivial dynamic call (issue 10).

The provider is a :class:`~recurgent.testing.ScriptedProvider` answering ``result = 1`` at once,
and logging is on (to a file in a temporary directory), so every figure is runtime overhead:
prompting, generation bookkeeping, the sandbox, the memory journal, the history record, the log
line and, in the ``store on`` column, the tool store's artifact lookup (a ``stat`` while the
parsed file is cached, ADR 0054) and its counters, batched and written about once a second
(ADR 0055), in a temporary store root. Three rows, each the median of
``--samples`` calls, measured with the store on and off:

* ``fresh``: a new agent's first calls;
* ``after N calls``: the same kind of agent after ``--session`` earlier calls;
* ``R rows in memory``: a new agent whose memory holds ``--rows`` plain dict rows;
* ``R top-level keys``: the same rows, each under its own memory key (no target: each attempt
  still copies memory's top level in C, about 0.4 us a key; ADR 0120).

``--clock cpu`` measures the process's CPU time instead of elapsed time (steadier when other
work shares the machine; waits on the disk are then left out). Timings are printed, never asserted; the exit status is 0 either way.
"""

from __future__ import annotations

import argparse
import gc
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from recurgent import Agent
from recurgent.testing import ScriptedProvider

FRESH_TARGET_MS = 1.0
_CLOCKS: dict[str, Callable[[], float]] = {"wall": time.perf_counter, "cpu": time.process_time}
RATIO_TARGET = 1.5


def _agent(log: Path, store: Path | None) -> Any:
    return Agent.for_(
        "bench",
        provider=ScriptedProvider({"tick": "result = 1"}),
        log=log,
        toolstore_root=store,
    )


def _median_ms(agent: Any, samples: int, clock: Callable[[], float]) -> float:
    timings: list[float] = []
    for _ in range(samples):
        started = clock()
        outcome = agent.tick()
        timings.append((clock() - started) * 1000)
        if not outcome.ok:
            raise SystemExit(f"WRONG RESULT OR FAILURE: {outcome!r}")
    return statistics.median(timings)


def _measure(root: Path, store: Path | None, options: argparse.Namespace) -> list[float]:
    gc.collect()
    fresh = _median_ms(_agent(root / "fresh.jsonl", store), options.samples, options.clock)

    long_lived = _agent(root / "session.jsonl", store)
    for _ in range(options.session):
        long_lived.tick()
    gc.collect()
    session = _median_ms(long_lived, options.samples, options.clock)

    loaded = _agent(root / "rows.jsonl", store)
    loaded.rows = [{"id": i, "name": f"row {i}", "score": i * 0.5} for i in range(options.rows)]
    gc.collect()
    rows = _median_ms(loaded, options.samples, options.clock)

    keyed = _agent(root / "keys.jsonl", store)
    for i in range(options.rows):
        keyed.runtime_context[f"row{i}"] = {"id": i, "name": f"row {i}"}
    gc.collect()
    keys = _median_ms(keyed, options.samples, options.clock)
    return [fresh, session, rows, keys]


def main() -> None:
    """Run the three measurements with the store on and off and print them with their targets."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--session", type=int, default=2000)
    parser.add_argument("--rows", type=int, default=50_000)
    parser.add_argument(
        "--clock",
        choices=sorted(_CLOCKS),
        default="wall",
        help="wall: elapsed time; cpu: CPU time of the whole process (all its threads), "
        "steadier on a machine busy with other work",
    )
    options = parser.parse_args()
    options.clock = _CLOCKS[options.clock]
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "on").mkdir()
        (root / "off").mkdir()
        on = _measure(root / "on", root / "store", options)
        off = _measure(root / "off", None, options)

    def verdict(ok: bool) -> str:
        return "ok" if ok else "TARGET MISSED"

    print(
        f"{'measurement':<28} {'store on ms':>11} {'ratio':>6} {'store off ms':>12} {'ratio':>6}"
        "  target"
    )
    print(
        f"{'fresh agent':<28} {on[0]:>11.3f} {'':>6} {off[0]:>12.3f} {'':>6}  "
        f"<= {FRESH_TARGET_MS:g} ms  on: {verdict(on[0] <= FRESH_TARGET_MS)}, "
        f"off: {verdict(off[0] <= FRESH_TARGET_MS)}"
    )
    labels = (f"after {options.session} calls", f"{options.rows} rows in memory")
    for index, label in enumerate(labels, start=1):
        ratio_on = on[index] / on[0]
        ratio_off = off[index] / off[0]
        print(
            f"{label:<28} {on[index]:>11.3f} {ratio_on:>6.2f} {off[index]:>12.3f} "
            f"{ratio_off:>6.2f}  ratio <= {RATIO_TARGET:g}  "
            f"on: {verdict(ratio_on <= RATIO_TARGET)}, off: {verdict(ratio_off <= RATIO_TARGET)}"
        )
    label = f"{options.rows} top-level keys"
    print(
        f"{label:<28} {on[3]:>11.3f} {on[3] / on[0]:>6.2f} {off[3]:>12.3f} "
        f"{off[3] / off[0]:>6.2f}  no target (copies of the top level in C; ADR 0120)"
    )


if __name__ == "__main__":
    main()
