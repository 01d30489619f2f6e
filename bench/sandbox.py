"""Times recurgent's sandbox against plain ``exec`` and smolagents on loop-heavy generated programs.

Run it with ``make bench`` (or ``.venv/bin/python bench/sandbox.py`` once the ``bench`` extra is
installed). Each program is module-level code that assigns ``result``, the way a model writes a
top-level program. It runs three ways in one process:

* **plain**: ``exec`` of the same text, compiled once outside the timing (the sandbox's compile
  is cached too, and reported separately);
* **sandbox**: ``compile_program`` once, then a fresh ``ExecutionSandbox`` per run, as the runtime
  builds one per attempt; only ``run`` is timed;
* **smolagents**: a fresh ``LocalPythonExecutor`` per run, called on the same text.

Every timing is the best of several ``time.perf_counter`` runs, and the three results must agree.
The targets (sandbox geometric-mean ratio to plain at most 2.0, worst case at most 4.0) are
reported, never asserted: the exit status is 0 even when a target is missed, and 1 only when a
program fails or the three ways disagree on its result.
"""

from __future__ import annotations

import argparse
import gc
import importlib.metadata
import itertools
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from recurgent._sandbox import (
    CompiledProgram,
    ExecutionSandbox,
    HostBridge,
    SandboxLimits,
    compile_program,
)
from recurgent.errors import RecurgentError

GEOMEAN_TARGET = 2.0
WORST_TARGET = 4.0

# A timed run: returns (elapsed seconds, the program's result).
TimedRun = Callable[[], tuple[float, Any]]


@dataclass(frozen=True, slots=True)
class Program:
    """One benchmark program: module-level code that assigns ``result``."""

    name: str
    source: str


PROGRAMS = (
    Program(
        "arithmetic loop",
        """\
total = 0
for i in range(300_000):
    total += (i * i) % 7 + i % 3
result = total
""",
    ),
    Program(
        "list append loop",
        """\
doubled = []
for i in range(400_000):
    doubled.append(i * 2)
result = sum(doubled)
""",
    ),
    Program(
        "dict counting (get)",
        """\
text = "the quick brown fox jumps over the lazy dog and the cat " * 30_000
counts = {}
for word in text.split():
    counts[word] = counts.get(word, 0) + 1
result = sorted(counts.items())
""",
    ),
    Program(
        "dict counting (+=)",
        """\
text = "the quick brown fox jumps over the lazy dog and the cat " * 30_000
counts = {}
for word in text.split():
    if word not in counts:
        counts[word] = 0
    counts[word] += 1
result = sorted(counts.items())
""",
    ),
    Program(
        "string building",
        """\
parts = []
for i in range(200_000):
    parts.append(str(i))
line = ",".join(parts)
result = len(line)
""",
    ),
    Program(
        "recursion (fib 27)",
        """\
def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)

result = fib(27)
""",
    ),
)

# Common shapes outside the five target programs: module function calls and methods of a
# class the program defines. They used to take the guarded slow path and now have their own
# fast paths; they are reported against plain exec only and are not part of the targets.
SLOW_PATH_PROGRAMS = (
    Program(
        "module function calls",
        """\
import math
total = 0.0
for i in range(200_000):
    total += math.sqrt(i)
result = round(total, 3)
""",
    ),
    Program(
        "own class methods",
        """\
class Counter:
    def __init__(self):
        self.total = 0

    def add(self, value):
        self.total += value

counter = Counter()
for i in range(200_000):
    counter.add(i)
result = counter.total
""",
    ),
)


class ProgramFailed(Exception):
    """A program raised, or one way of running it disagreed with plain ``exec``."""


# ----------------------------------------------------------------------------- the three ways


def plain_run(source: str) -> TimedRun:
    """``exec`` of the program's text in a fresh namespace, compiled once up front."""
    code = compile(source, "<plain>", "exec")

    def run() -> tuple[float, Any]:
        namespace: dict[str, Any] = {}
        start = time.perf_counter()
        exec(code, namespace)
        elapsed = time.perf_counter() - start
        return elapsed, namespace["result"]

    return run


def _no_forwarding(*args: Any, **kwargs: Any) -> Any:
    raise RuntimeError("the bench programs make no forwarded calls")


def _bench_bridge() -> HostBridge:
    return HostBridge(
        role="bench",
        method_name="run",
        memory={},
        args=(),
        kwargs={},
        delegate=_no_forwarding,
        tool=_no_forwarding,
        remember=_no_forwarding,
        handle_for_agent=lambda obj: None,
    )


def sandbox_run(program: CompiledProgram) -> TimedRun:
    """A fresh sandbox per run, as the runtime builds one per attempt; only ``run`` is timed."""
    limits = SandboxLimits()

    def run() -> tuple[float, Any]:
        sandbox = ExecutionSandbox(_bench_bridge(), limits=limits)
        start = time.perf_counter()
        outcome = sandbox.run(program)
        elapsed = time.perf_counter() - start
        if outcome.error is not None:
            raise ProgramFailed(f"sandbox: {outcome.error}")
        return elapsed, outcome.value

    return run


def load_smolagents() -> tuple[type | None, str]:
    """smolagents' ``LocalPythonExecutor`` and its version, or ``None`` and why not."""
    try:
        from smolagents.local_python_executor import LocalPythonExecutor
    except ImportError as error:
        return None, f"unavailable ({error}; pip install 'smolagents>=1.20')"
    return LocalPythonExecutor, importlib.metadata.version("smolagents")


def smolagents_run(executor_class: type, source: str) -> TimedRun:
    """A fresh ``LocalPythonExecutor`` per run; the result is read back from its state."""

    def run() -> tuple[float, Any]:
        executor = executor_class(additional_authorized_imports=[])
        executor.send_tools({})  # installs the base Python tools (range, len, sorted, ...)
        start = time.perf_counter()
        executor(source)
        elapsed = time.perf_counter() - start
        return elapsed, executor.state["result"]

    return run


# ----------------------------------------------------------------------------- measuring


@dataclass(frozen=True, slots=True)
class Timing:
    """The best of ``runs`` timed runs, in milliseconds, and the result they produced."""

    best_ms: float
    runs: int
    result: Any


def best_of(run: TimedRun, *, repeats: int, budget_seconds: float = float("inf")) -> Timing:
    """Best wall time of ``repeats`` runs; stops early once ``budget_seconds`` are spent.

    A collection before each run keeps one run's garbage out of the next run's timing.
    """
    best = float("inf")
    spent = 0.0
    runs = 0
    result: Any = None
    while runs < repeats and (runs == 0 or spent < budget_seconds):
        gc.collect()
        elapsed, result = run()
        best = min(best, elapsed)
        spent += elapsed
        runs += 1
    return Timing(best * 1000, runs, result)


@dataclass(frozen=True, slots=True)
class CompileCost:
    """One-off compile costs of a program, in milliseconds."""

    sandbox_cold_ms: float
    plain_ms: float
    cached_us: float
    cache_hit: bool


def measure_compile(source: str, *, repeats: int) -> CompileCost:
    """Cold sandbox compile, plain ``compile`` and a cached lookup of the same source.

    A cold compile gets a source the cache has not seen: the program plus a unique comment line.
    """
    cold = min(
        _seconds(lambda: compile_program(f"{source}# cold compile {next(_COLD_SOURCES)}\n"))
        for _ in range(repeats)
    )
    plain = min(_seconds(lambda: compile(source, "<plain>", "exec")) for _ in range(repeats))
    first = compile_program(source)
    cache_hit = compile_program(source) is first
    lookups = 1000
    start = time.perf_counter()
    for _ in range(lookups):
        compile_program(source)
    cached = (time.perf_counter() - start) / lookups
    return CompileCost(cold * 1000, plain * 1000, cached * 1e6, cache_hit)


_COLD_SOURCES = itertools.count()


def _seconds(action: Callable[[], object]) -> float:
    start = time.perf_counter()
    action()
    return time.perf_counter() - start


def measure_construction(*, repeats: int) -> float:
    """Milliseconds to build one sandbox (namespace, builtins, facades), best of ``repeats``."""
    limits = SandboxLimits()
    return 1000 * min(
        _seconds(lambda: ExecutionSandbox(_bench_bridge(), limits=limits)) for _ in range(repeats)
    )


@dataclass(frozen=True, slots=True)
class Row:
    """Everything measured for one program."""

    program: Program
    compile_cost: CompileCost
    plain: Timing
    sandbox: Timing
    smolagents: Timing | str | None  # str: why it failed; None: not installed or not run

    @property
    def sandbox_ratio(self) -> float:
        return self.sandbox.best_ms / self.plain.best_ms

    @property
    def smolagents_ratio(self) -> float | None:
        if isinstance(self.smolagents, Timing):
            return self.smolagents.best_ms / self.plain.best_ms
        return None


def measure(
    program: Program,
    *,
    repeats: int,
    executor_class: type | None,
    smolagents_budget: float,
) -> Row:
    """Time one program three ways (two without ``executor_class``); check the results agree.

    Raises:
        ProgramFailed: the sandbox failed, or the sandbox or smolagents disagree with plain.
        InvalidCodeError: the sandbox policy refused the program.
    """
    compile_cost = measure_compile(program.source, repeats=repeats)
    plain = best_of(plain_run(program.source), repeats=repeats)
    sandbox = best_of(sandbox_run(compile_program(program.source)), repeats=repeats)
    if sandbox.result != plain.result:
        raise ProgramFailed(f"sandbox returned {sandbox.result!r}, plain {plain.result!r}")
    smolagents: Timing | str | None = None
    if executor_class is not None:
        try:
            smolagents = best_of(
                smolagents_run(executor_class, program.source),
                repeats=repeats,
                budget_seconds=smolagents_budget,
            )
        except Exception as error:  # its interpreter has its own limits (operations, timeout)
            smolagents = f"failed: {type(error).__name__}"
        if isinstance(smolagents, Timing) and smolagents.result != plain.result:
            raise ProgramFailed(
                f"smolagents returned {smolagents.result!r}, plain {plain.result!r}"
            )
    return Row(program, compile_cost, plain, sandbox, smolagents)


# ----------------------------------------------------------------------------- reporting


def _smolagents_cells(row: Row) -> tuple[str, str]:
    if row.smolagents is None:
        return "unavailable", ""
    if isinstance(row.smolagents, str):
        return row.smolagents, ""
    return f"{row.smolagents.best_ms:.1f} ({row.smolagents.runs})", f"{row.smolagents_ratio:.1f}x"


def print_table(rows: list[Row]) -> None:
    """One line per program: compile, plain, sandbox and smolagents timings and ratios."""
    header = (
        f"{'program':<22}{'compile ms':>11}{'plain ms':>10}{'sandbox ms':>12}{'ratio':>8}"
        f"{'smolagents ms (runs)':>23}{'ratio':>9}"
    )
    print(header)
    print("-" * len(header))
    for row in rows:
        smol_ms, smol_ratio = _smolagents_cells(row)
        print(
            f"{row.program.name:<22}{row.compile_cost.sandbox_cold_ms:>11.2f}"
            f"{row.plain.best_ms:>10.1f}{row.sandbox.best_ms:>12.1f}"
            f"{row.sandbox_ratio:>7.2f}x{smol_ms:>23}{smol_ratio:>9}"
        )
    print("-" * len(header))


def print_summary(rows: list[Row], *, construction_ms: float) -> None:
    """Ratios against the targets, the compile cache and the one-off costs."""
    geomean = statistics.geometric_mean(row.sandbox_ratio for row in rows)
    worst = max(rows, key=lambda row: row.sandbox_ratio)
    geomean_met = geomean <= GEOMEAN_TARGET
    worst_met = worst.sandbox_ratio <= WORST_TARGET
    print(
        f"sandbox geometric-mean ratio: {geomean:.2f}x (target <= {GEOMEAN_TARGET}): "
        f"{'met' if geomean_met else 'TARGET MISSED'}"
    )
    print(
        f"sandbox worst-case ratio:     {worst.sandbox_ratio:.2f}x, {worst.program.name} "
        f"(target <= {WORST_TARGET}): {'met' if worst_met else 'TARGET MISSED'}"
    )
    smol_ratios = [ratio for row in rows if (ratio := row.smolagents_ratio) is not None]
    if len(smol_ratios) == len(rows):
        print(f"smolagents geometric-mean ratio: {statistics.geometric_mean(smol_ratios):.1f}x")
    costs = [row.compile_cost for row in rows]
    print(
        f"compile cache: {'hit' if all(cost.cache_hit for cost in costs) else 'MISS'} "
        "(mean per program: cold sandbox compile "
        f"{statistics.mean(cost.sandbox_cold_ms for cost in costs):.2f} ms, plain compile() "
        f"{statistics.mean(cost.plain_ms for cost in costs):.2f} ms, cached lookup "
        f"{statistics.mean(cost.cached_us for cost in costs):.2f} us)"
    )
    print(f"sandbox construction per attempt (not in the timings): {construction_ms:.2f} ms")
    if not (geomean_met and worst_met):
        print("TARGET MISSED: the sandbox is slower than its targets (see the ratios above)")


def print_slow_paths(rows: list[Row]) -> None:
    """Plain and sandbox timings of the guarded slow-path shapes (outside the targets)."""
    if not rows:
        return
    print()
    print("Slow-path shapes (plain exec vs sandbox only; not part of the targets):")
    for row in rows:
        print(
            f"  {row.program.name:<22}plain {row.plain.best_ms:6.1f} ms   "
            f"sandbox {row.sandbox.best_ms:6.1f} ms   ratio {row.sandbox_ratio:5.2f}x"
        )


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its tables; 1 only if a program fails or results disagree."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--repeats", type=int, default=7, help="timed runs per program and way (best counts)"
    )
    parser.add_argument(
        "--smolagents-budget",
        type=float,
        default=8.0,
        help="seconds of smolagents runs per program before it stops repeating (at least one run)",
    )
    options = parser.parse_args(argv)
    executor_class, smol_version = load_smolagents()
    print(
        f"Python {platform.python_version()} on {platform.machine()}; best of {options.repeats} "
        f"runs; smolagents: {smol_version}",
        flush=True,
    )
    rows: list[Row] = []
    slow_rows: list[Row] = []
    plan = [(program, executor_class, rows) for program in PROGRAMS]
    plan += [(program, None, slow_rows) for program in SLOW_PATH_PROGRAMS]
    for program, executor, into in plan:
        print(f"  timing {program.name} ...", file=sys.stderr, flush=True)
        try:
            into.append(
                measure(
                    program,
                    repeats=options.repeats,
                    executor_class=executor,
                    smolagents_budget=options.smolagents_budget,
                )
            )
        except (ProgramFailed, RecurgentError) as failure:  # e.g. the policy refused the program
            print(f"{program.name}: WRONG RESULT OR FAILURE: {failure}")
            return 1
    print()
    print_table(rows)
    print_summary(rows, construction_ms=measure_construction(repeats=options.repeats))
    if executor_class is not None:
        print(
            f"smolagents runs stop once {options.smolagents_budget:g} s are spent on a program "
            "(the run count is in parentheses)"
        )
    print_slow_paths(slow_rows)
    return 0


if __name__ == "__main__":
    sys.exit(main())
