"""Map one method over a CSV of 100,000 tickets: one program, written once, run for every row.

``agent.map("triage", rows)`` asks the model for a program once (the first row's call), then
runs that program for every other row in batches, each row its own sandboxed attempt with its
own deadline; a row the program fails on is that row's error Outcome. With ``--ray`` the same
map runs again on Ray (``pip install 'recurgent[ray]'``): one actor per CPU holds the program and
runs batches. The sandbox reads no files, so this script reads the CSV and hands over the rows.

    python examples/batch.py                  # 100,000 generated rows, in process
    python examples/batch.py --ray            # ... and on a local Ray cluster (or RAY_ADDRESS)
    python examples/batch.py --csv my.csv     # your own file (columns: id, subject, amount)
"""

from __future__ import annotations

import argparse
import collections
import csv
import random
import tempfile
import time
from pathlib import Path
from typing import Any

from _offline import log_path, start

from acceptance.programs.batch import TRIAGE_ROLE
from recurgent import Agent
from recurgent.testing import read_log

SUBJECTS = (
    "Refund for order {n}",
    "I was charged twice ({n})",
    "App crash when exporting report {n}",
    "Error 500 on checkout page {n}",
    "Forgot my password again",
    "Cannot login from my phone",
    "Question about the {n} plan",
    "Feature idea: dark mode",
)


def write_tickets(path: Path, rows: int) -> None:
    """A reproducible CSV of tickets; one row in a thousand has no subject."""
    draw = random.Random(24)
    with path.open("w", newline="", encoding="utf-8") as file:
        writer = csv.writer(file)
        writer.writerow(["id", "subject", "amount"])
        for number in range(rows):
            subject = "" if number % 1000 == 999 else draw.choice(SUBJECTS).format(n=number)
            writer.writerow([number, subject, f"{draw.uniform(0, 250):.2f}"])


def read_rows(path: Path) -> list[dict[str, str]]:
    """The CSV's rows as dicts (the sandbox has no file system: the host reads the file)."""
    with path.open(newline="", encoding="utf-8") as file:
        return list(csv.DictReader(file))


def report(label: str, rows: list[dict[str, str]], outcomes: list[Any]) -> None:
    """Counts per queue, the failures, and what the map's summary log line says."""
    queues = collections.Counter(o.value for o in outcomes if o.ok)
    failed = [(row, o) for row, o in zip(rows, outcomes, strict=True) if not o.ok]
    summary = [e for e in read_log(log_path()) if e.get("entry_kind") == "map"][-1]
    print(f"{label}: {len(outcomes)} rows, {len(outcomes) - len(failed)} ok, {len(failed)} failed")
    print(f"  queues: {', '.join(f'{name}={count}' for name, count in sorted(queues.items()))}")
    if failed:
        row, outcome = failed[0]
        print(f"  first failure: row {row['id']} -> [{outcome.error_type}] {outcome.error_message}")
    print(
        f"  program: {summary['map_program_source']}; {summary['map_batches']} batches on "
        f"{summary['map_workers']} {summary['map_executor']} worker(s)"
    )


def main() -> None:
    """Generate (or read) the CSV, map ``triage`` over it, and print what came back."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", type=int, default=100_000, help="rows to generate")
    parser.add_argument("--csv", type=Path, help="a CSV file of your own instead")
    parser.add_argument("--ray", action="store_true", help="map on Ray as well")
    parser.add_argument("--progress", action="store_true", help="show a progress bar on stderr")
    options = parser.parse_args()
    provider = start("batch")
    with tempfile.TemporaryDirectory() as scratch:
        path = options.csv or Path(scratch) / "tickets.csv"
        if options.csv is None:
            write_tickets(path, options.rows)
        rows = read_rows(path)
    print(f"rows: {len(rows)} from {'your file' if options.csv else 'a generated tickets.csv'}")
    triage = Agent(TRIAGE_ROLE, provider=provider, log=log_path())
    started = time.perf_counter()
    outcomes = triage.map("triage", rows, progress=options.progress)
    seconds = time.perf_counter() - started
    report("in process", rows, outcomes)
    print(f"  time: {seconds:.1f}s")
    if options.ray:
        started = time.perf_counter()
        outcomes = triage.map("triage", rows, executor="ray", progress=options.progress)
        seconds = time.perf_counter() - started
        report("ray", rows, outcomes)
        print(f"  time: {seconds:.1f}s (Ray's start-up included)")
    print(f"Log: {log_path()}")


if __name__ == "__main__":
    main()
