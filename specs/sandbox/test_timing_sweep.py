"""The timing sweep: every served library callable ends by the attempt's deadline (ADR 0092).

Every catalog entry marked ``pure`` or ``replaced`` that is callable is called by a program with
each adversarial input below, alone and twice over (``f(x)``, ``f(x, x)``), under a short
deadline. Each input is large enough that any work more than linear in it (a quadratic regular
expression, a nested walk of a shared structure) runs for minutes: long strings of separators,
a deeply nested list, a structure sharing one row, many small items. A call may raise (most
refuse such arguments at once), finish, or be stopped at the deadline; what it may not do is
run past the deadline: pure-Python library code is stopped there by the attempt's stop
(ADR 0089), and C-level work must be bounded by the caps. An entry that cannot be bounded is
replaced or denied in the catalog (``_catalog_rows``), not listed here.

A program prints the index of each input before calling with it, so when an attempt ends at the
deadline the sweep goes on from the next input in a fresh attempt.
"""

from __future__ import annotations

import importlib
import time
from typing import Any

import pytest

from recurgent._sandbox import SandboxLimits
from recurgent._sandbox._catalog import CATALOG
from specs.sandbox.support import Host, execute

#: The attempt's deadline in the sweep, and how much more processor time than that an attempt
#: may take. Processor time, not wall-clock time: on a shared machine an attempt waits for the
#: processor, and only work that ignores the deadline adds processor time past it. The slack
#: also covers the watchdog's own wait for a processor: until it runs, a stopped attempt still
#: spins (1.29 s in all was seen for a 0.5 s deadline on a loaded two-core machine).
DEADLINE = 0.5
SLACK = 1.0
_N = 100_000


def _nested(depth: int) -> list[Any]:
    value: list[Any] = []
    for _ in range(depth):
        value = [value]
    return value


_ROW = [0] * 1000
INPUTS: tuple[tuple[str, Any], ...] = (
    ("csv separators", ',"' * _N),
    ("query separators", "&=" * _N),
    ("markup", "<&" * _N),
    ("percents", "%" * (2 * _N)),
    ("backslashes", "\\" * (2 * _N)),
    ("blanks", " \t" * _N),
    ("path steps", "/." * _N),
    ("brackets", "{[" * _N),
    ("dashes", "-" * (2 * _N)),
    ("letters", "a" * (2 * _N)),
    ("quotes", "'\"" * _N),
    ("xml path", ".//a" * (_N // 4)),
    ("query pairs", "a=1&" * (10 * _N)),
    ("bytes separators", b',"' * _N),
    ("deep nesting", _nested(50_000)),
    ("shared rows", [_ROW] * 3000),
    ("many ints", list(range(_N))),
    ("many strings", tuple(str(i) for i in range(_N))),
    ("many keys", {str(i): i for i in range(_N // 4)}),
    ("big int", 7**50_000),
)


def _served_callables() -> list[tuple[str, str]]:
    """``(module, name)`` of every pure or replaced catalog entry whose value is callable."""
    found: list[tuple[str, str]] = []
    for module_name, rows in sorted(CATALOG.items()):
        module = importlib.import_module(module_name)
        for name in sorted(rows.pure):
            value = getattr(module, name, None)
            if callable(value) and not isinstance(value, type(importlib)):
                found.append((module_name, name))
        found.extend((module_name, name) for name in sorted(rows.replaced))
    return found


SWEPT = _served_callables()

_PROGRAM = (
    "import {module} as sweep_module\n"
    "function = sweep_module.{name}\n"
    "for index in range({start}, len(args[0])):\n"
    "    print(index)\n"
    "    value = args[0][index]\n"
    "    try:\n"
    "        function(value)\n"
    "    except Exception:\n"
    "        pass\n"
    "    try:\n"
    "        function(value, value)\n"
    "    except Exception:\n"
    "        pass\n"
    "result = 'done'\n"
)


def _last_index(stdout: str) -> int:
    printed = [line for line in stdout.splitlines() if line.isdigit()]
    return int(printed[-1]) if printed else -1


def test_the_sweep_covers_the_catalog() -> None:
    """Hundreds of entries are swept, the known slow ones among them."""
    assert len(SWEPT) > 300
    for entry in [
        ("urllib.parse", "parse_qsl"),
        ("pprint", "saferepr"),
        ("csv", "Sniffer"),
        ("html.parser", "HTMLParser"),
        ("time", "strptime"),
        ("textwrap", "dedent"),
        # Issue 22's idioms (ADR 0105).
        ("email.utils", "parsedate_to_datetime"),
        ("email.utils", "getaddresses"),
        ("email.utils", "parseaddr"),
        ("graphlib", "TopologicalSorter"),
        ("contextlib", "contextmanager"),
        ("contextlib", "suppress"),
        ("shlex", "split"),
        ("shlex", "join"),
        ("json", "JSONEncoder"),
        ("typing", "runtime_checkable"),
    ]:
        assert entry in SWEPT


@pytest.mark.parametrize(("module", "name"), SWEPT, ids=[f"{m}.{n}" for m, n in SWEPT])
def test_every_input_ends_by_the_deadline(module: str, name: str) -> None:
    """Each attempt ends (done, or stopped at the deadline) within the deadline plus slack of
    processor time."""
    host = Host(args=(tuple(value for _, value in INPUTS),))
    start, stopped = 0, []
    while start < len(INPUTS):
        source = _PROGRAM.format(module=module, name=name, start=start)
        began = time.process_time()
        result = execute(source, host=host, limits=SandboxLimits(timeout_seconds=DEADLINE))
        elapsed = time.process_time() - began
        reached = _last_index(result.stdout)
        label = INPUTS[reached][0] if reached >= 0 else "setup"
        assert elapsed < DEADLINE + SLACK, f"{module}.{name} on {label}: {elapsed:.2f} s of CPU"
        if result.error is None:
            assert result.value == "done"
            break
        assert result.error.error_type in ("timeout", "resource_limit"), (
            f"{module}.{name} on {label}: {result.error}"
        )
        stopped.append(label)
        start = max(reached + 1, start + 1)
    assert len(stopped) <= len(INPUTS)
