"""Times the per-call overhead of a large string argument (issue 14, ADR 0032).

Run it with ``.venv/bin/python bench/large_argument.py``. One agent (a ``FunctionProvider`` whose
program returns ``len(args[0])``, logging to a temporary file) is called with a small argument
and with arguments of 1, 10 and 50 MB. Each row is the best of ``--repeats`` calls; the overhead
is that time minus the small-argument time. The target (overhead of a 50 MB argument under
300 ms) is reported, never asserted: the exit status is 1 only when a call fails or a log line
reaches 1 MB.
"""

from __future__ import annotations

import argparse
import gc
import sys
import tempfile
import time
from pathlib import Path

from recurgent import Agent
from recurgent._observability import MAX_LINE_BYTES
from recurgent.testing import FunctionProvider

TARGET_MS = 300.0


def _best(agent: Agent, argument: str, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        gc.collect()
        started = time.perf_counter()
        outcome = agent.measure(argument)
        elapsed = (time.perf_counter() - started) * 1000
        if not outcome.is_ok or outcome.value != len(argument):
            raise SystemExit(f"call failed: {outcome!r}")
        best = min(best, elapsed)
    return best


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as directory:
        log = Path(directory) / "calls.jsonl"
        agent = Agent(
            "meter",
            provider=FunctionProvider(lambda request: "result = len(args[0])"),
            log=log,
            toolstore_root=None,  # the argument's cost, not the store's, is measured
        )
        baseline = _best(agent, "small", options.repeats)
        print(f"{'argument':>10}  {'best ms':>9}  {'overhead ms':>11}")
        print(f"{'5 B':>10}  {baseline:9.1f}  {0.0:11.1f}")
        overhead = 0.0
        for megabytes in (1, 10, 50):
            elapsed = _best(agent, "x" * (megabytes * 1024 * 1024), options.repeats)
            overhead = elapsed - baseline
            print(f"{f'{megabytes} MB':>10}  {elapsed:9.1f}  {overhead:11.1f}")
        longest = max(len(line) for line in log.read_bytes().split(b"\n"))
    verdict = "met" if overhead < TARGET_MS else "MISSED"
    print(f"target: 50 MB overhead < {TARGET_MS:.0f} ms: {verdict}")
    print(f"longest log line: {longest} bytes (limit {MAX_LINE_BYTES})")
    return 0 if longest < MAX_LINE_BYTES else 1


if __name__ == "__main__":
    sys.exit(main())
