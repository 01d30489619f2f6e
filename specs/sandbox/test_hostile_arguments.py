"""Every served callable, called with hostile arguments, ends in a typed Outcome (issue 9).

The sweep enumerates every public name each allowed module's facade serves, plus the sandbox
builtins, and calls each callable with hostile arguments: huge counts, objects whose
``__len__``/``__hash__`` return huge numbers (the policy refuses defining ``__index__``,
``__int__`` and ``__float__``), and objects whose
``__iter__``/``__eq__``/``__str__``/``__repr__``/``__hash__`` never return. One program per
module tries every name under a 1 s deadline, printing each name before trying it; when the
deadline ends a run, the sweep records that name as one that needed the deadline and resumes
after it. Every run must end in a typed result within 4 s (a generous wall-clock bound: four sweeps share the GIL).
"""

from __future__ import annotations

import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from recurgent._sandbox import SandboxLimits
from recurgent._sandbox._builtins import make_builtins
from recurgent._sandbox._catalog import CATALOG
from recurgent._sandbox._modules import ALLOWED_MODULES, ModuleFacade, make_importer
from recurgent.errors import RecurgentError

from .support import execute

ONE_SECOND = SandboxLimits(timeout_seconds=1.0)
MARK = "@@"

HOSTILE_CLASSES = """
class Huge:
    def __len__(self):
        return 2 ** 62
    def __hash__(self):
        return 2 ** 62

class Endless:
    def __iter__(self):
        while True:
            yield 'x'
    def __eq__(self, other):
        while True:
            pass
    def __lt__(self, other):
        while True:
            pass
    def __hash__(self):
        while True:
            pass
    def __str__(self):
        while True:
            pass
    def __repr__(self):
        while True:
            pass
    def __len__(self):
        while True:
            pass
"""

HUGE_ARGUMENTS = "[(), (10 ** 9,), (-10 ** 9,), (2 ** 62,), (Huge(),), ('x', 10 ** 9), ('x', Huge()), (Huge(), Huge()), ('ab', 'ab', 10 ** 9)]"
ENDLESS_ARGUMENTS = "[(Endless(),), ('x', Endless()), (Endless(), Endless())]"


def _served_names() -> dict[str, list[str]]:
    """Module name -> every public callable name its facade serves (host-side enumeration)."""
    importer = make_importer(tick=lambda: False, extra_modules={})
    served: dict[str, list[str]] = {}
    for module_name in ALLOWED_MODULES:
        try:
            facade = importer(module_name, None, None, ("*",), 0)
        except ImportError:  # per-attempt modules (time, urllib.request, urllib.error)
            continue
        callables = []
        for name in sorted(CATALOG[module_name].served):
            if name.startswith("_"):
                continue
            try:
                value = facade._facade_lookup(name)
            except (AttributeError, ImportError):
                continue
            if callable(value) and not isinstance(value, ModuleFacade):
                callables.append(name)
        served[module_name] = callables
    return served


SERVED = _served_names()
BUILTIN_NAMES = sorted(
    name
    for name, value in make_builtins(
        policy=None,  # type: ignore[arg-type]
        importer=lambda *a: None,
        tick=lambda: False,
    ).items()
    if callable(value)
    and not name.startswith("_")
    and not (isinstance(value, type) and issubclass(value, BaseException))
    and name not in {"print", "input", "exit", "quit", "breakpoint", "help", "open"}
)


def _program(module: str | None, names: list[str], arguments: str) -> str:
    target = f"import {module} as target\n" if module else ""
    lookup = "getattr(target, name)" if module else "BUILTINS[name]"
    builtins_table = (
        ""
        if module
        else "BUILTINS = {"
        + ", ".join(f"{name!r}: {name}" for name in names if name not in {"type"})
        + ", 'type': type}\n"
    )
    return (
        target
        + HOSTILE_CLASSES
        + builtins_table
        + f"NAMES = {names!r}\n"
        + "for name in NAMES:\n"
        + f"    print('{MARK}' + name)\n"
        + f"    function = {lookup}\n"
        + f"    for arguments in {arguments}:\n"
        + "        try:\n"
        + "            function(*arguments)\n"
        + "        except Exception:\n"
        + "            pass\n"
        + "result = len(NAMES)\n"
    )


RUN_BOUND_SECONDS = 4.0


def _sweep(module: str | None, names: list[str], arguments: str) -> list[str]:
    """Run every name, resuming after each name that ran into the deadline; return those."""
    needed_deadline: list[str] = []
    remaining = list(names)
    while remaining:
        started = time.process_time()
        result = execute(_program(module, remaining, arguments), limits=ONE_SECOND)
        elapsed = time.process_time() - started
        tried = [line[len(MARK) :] for line in result.stdout.splitlines() if line.startswith(MARK)]
        # Processor time, so a shared machine cannot fail the bound; the bound is generous on
        # purpose: a call that ignored the 1 s deadline would run on for far longer.
        assert elapsed < RUN_BOUND_SECONDS, (
            f"{module}: a run took {elapsed:.1f}s (last name {tried[-1:]})"
        )
        if result.error is None:
            assert result.value == len(remaining)
            return needed_deadline
        assert isinstance(result.error, RecurgentError)
        assert result.error.error_type in {"timeout", "resource_limit", "execution"}, result.error
        if not tried:
            pytest.fail(f"{module}: failed before any name ran: {result.error}")
        last = tried[-1]
        needed_deadline.append(f"{last} ({result.error.error_type})")
        remaining = remaining[remaining.index(last) + 1 :]
    return needed_deadline


def _sweep_all(arguments: str) -> dict[str, list[str]]:
    """Sweep every module, four at a time (each run still has its own 1 s deadline)."""
    with ThreadPoolExecutor(max_workers=4) as pool:
        futures = {
            module: pool.submit(_sweep, module, names, arguments)
            for module, names in SERVED.items()
        }
        return {module: future.result() for module, future in futures.items()}


def test_every_served_function_survives_huge_arguments() -> None:
    """Huge counts and huge ``__len__``/``__hash__`` values end in a typed result within 4 s."""
    needed = _sweep_all(HUGE_ARGUMENTS)
    print(f"needed the deadline or a cap: { {m: n for m, n in needed.items() if n} }")


def test_every_served_function_survives_endless_dunders() -> None:
    """Objects whose dunders never return end in a typed result within 4 s per run."""
    needed = _sweep_all(ENDLESS_ARGUMENTS)
    print(f"needed the deadline: { {m: n for m, n in needed.items() if n} }")


def test_every_builtin_survives_hostile_arguments() -> None:
    """Every sandbox builtin, called with huge and endless arguments, ends in a typed result."""
    needed = _sweep(None, BUILTIN_NAMES, HUGE_ARGUMENTS)
    needed += _sweep(None, BUILTIN_NAMES, ENDLESS_ARGUMENTS)
    print(f"builtins: needed the deadline or a cap: {needed}")


def test_the_sweep_covers_every_allowed_module() -> None:
    """Every allowed module is swept except the two network modules built per attempt."""
    unswept: set[Any] = {module for module in ALLOWED_MODULES if not SERVED.get(module)}
    # The network modules are built per attempt; the packages only serve submodules.
    assert unswept == {"urllib.request", "urllib.error", "urllib", "xml", "xml.etree", "email"}
    assert sum(len(names) for names in SERVED.values()) > 300
