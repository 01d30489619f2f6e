"""Import-time benchmark: ``import recurgent`` against ``import openai``, side by side (issue 22).

Each sample is a fresh interpreter (``sys.executable -c``) timing one import statement with
``time.perf_counter`` around it, so interpreter start-up is left out and nothing is cached in
the process. The statements alternate within each round (recurgent, openai, ``from recurgent
import Agent``), so a busy machine slows them alike; each figure is the best of ``--rounds``.
The ratio that counts is ``import recurgent`` / ``import openai``, target <= 0.4 (ADR 0114).
``from recurgent import Agent`` (the whole runtime, loaded on first use) is printed for
information. ``--culprits`` adds the modules with the largest self time under
``python -X importtime`` for the Agent import, to find what to defer next.
Timings are printed, never asserted; the exit status is 0 either way.
"""

from __future__ import annotations

import argparse
import subprocess
import sys

RATIO_TARGET = 0.4
STATEMENTS = {
    "import recurgent": "import recurgent",
    "import openai": "import openai",
    "from recurgent import Agent": "from recurgent import Agent",
}
_TIMER = (
    "import time\n_start = time.perf_counter()\n{statement}\nprint(time.perf_counter() - _start)\n"
)


def time_import(statement: str) -> float:
    """Seconds one fresh interpreter spends on ``statement``."""
    done = subprocess.run(
        [sys.executable, "-c", _TIMER.format(statement=statement)],
        capture_output=True,
        text=True,
        check=True,
    )
    return float(done.stdout.strip())


def culprits(statement: str, count: int) -> list[tuple[int, str]]:
    """The ``count`` modules with the largest self time (microseconds) under -X importtime."""
    done = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", statement],
        capture_output=True,
        text=True,
        check=True,
    )
    rows = []
    for line in done.stderr.splitlines():
        if not line.startswith("import time:") or "self [us]" in line:
            continue
        self_us, _cumulative, name = line.removeprefix("import time:").split("|", 2)
        rows.append((int(self_us), name.strip()))
    return sorted(rows, reverse=True)[:count]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7, help="fresh processes per statement")
    parser.add_argument("--culprits", type=int, default=0, metavar="N", help="top N modules")
    args = parser.parse_args(argv)
    best = {label: float("inf") for label in STATEMENTS}
    for _ in range(args.rounds):
        for label, statement in STATEMENTS.items():
            best[label] = min(best[label], time_import(statement))
    print(f"best of {args.rounds} fresh processes each:")
    for label, seconds in best.items():
        print(f"  {label:<28} {seconds * 1000:8.1f} ms")
    ratio = best["import recurgent"] / best["import openai"]
    verdict = "ok" if ratio <= RATIO_TARGET else "TARGET MISSED"
    print(f"import recurgent / import openai = {ratio:.3f} (target <= {RATIO_TARGET}): {verdict}")
    agent_ratio = best["from recurgent import Agent"] / best["import openai"]
    print(f"from recurgent import Agent / import openai = {agent_ratio:.3f} (for information)")
    if args.culprits:
        print("largest self times, python -X importtime -c 'from recurgent import Agent':")
        for self_us, name in culprits("from recurgent import Agent", args.culprits):
            print(f"  {self_us / 1000:8.1f} ms  {name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
