"""Which runs retire their worker (ADR 0093): the parent's own decision, from what it knows.

A run that timed out, hit a resource cap, imported a served module with process-wide caches,
or was sent a value whose methods reach one (a ``datetime`` has ``strptime``), leaves a worker
that must not run the next program. Every module the sandbox serves is classified, so a module
added to the catalog needs a decision here before it can be served.
"""

from __future__ import annotations

import pytest

from recurgent._sandbox._catalog import ALLOWED_MODULES
from recurgent._worker._protocol import RunResult, WireError
from recurgent._worker._retire import (
    STATEFUL_MODULES,
    STATELESS_MODULES,
    imported_modules,
    retire_reason,
)

OK = RunResult(call_id="c", status="ok", value=1)


def _failed(error_type: str) -> RunResult:
    return RunResult(
        call_id="c", status="error", error=WireError(error_type=error_type, message="m")
    )


def test_every_served_module_is_classified_once() -> None:
    """The catalog's modules are exactly the stateful and the stateless ones, none in both."""
    assert set(STATEFUL_MODULES) & set(STATELESS_MODULES) == set()
    assert set(STATEFUL_MODULES) | set(STATELESS_MODULES) == set(ALLOWED_MODULES)


@pytest.mark.parametrize(
    ("code", "reason"),
    [
        ("import time\nreturn time.strptime('2024', '%Y')", "module:time"),
        ("from datetime import datetime\nreturn 1", "module:datetime"),
        ("import zoneinfo as z\nreturn 1", "module:zoneinfo"),
        ("import re\nreturn 1", "module:re"),
        ("from typing import Literal\nreturn 1", "module:typing"),
        ("from urllib import parse\nreturn 1", "module:urllib"),
        ("import urllib.request\nreturn 1", "module:urllib"),
        ("import xml.etree.ElementTree as ET\nreturn 1", "module:xml"),
        ("from xml.etree import ElementTree\nreturn 1", "module:xml"),
        ("import html\nreturn html.escape('<')", "module:html"),
        ("import csv\nreturn 1", "module:csv"),
        ("def f():\n    import string\n    return 1\nreturn f()", "module:string"),
        ("import json, re, time\nreturn 1", "module:re"),
    ],
)
def test_a_program_importing_a_stateful_module_retires_its_worker(code: str, reason: str) -> None:
    """Any import that reaches a stateful module, at any depth of the program, by any form."""
    assert retire_reason(code, OK) == reason


@pytest.mark.parametrize(
    "code",
    [
        "return 1",
        "import json, math, collections, decimal, itertools\nreturn 1",
        "from collections import abc\nreturn 1",
        "import os\nreturn 1",  # refused by the sandbox's importer: nothing was loaded
        "text = 'import re'\nreturn text",
        "this is not python (import re",
    ],
)
def test_other_programs_keep_their_worker(code: str) -> None:
    """Stateless imports, refused imports, the word in a string and unparsable code: kept."""
    assert retire_reason(code, OK) is None


@pytest.mark.parametrize("error_type", ["timeout", "resource_limit"])
def test_a_run_stopped_by_a_limit_retires_its_worker(error_type: str) -> None:
    """A run stopped at its deadline or a resource cap may have stopped inside library code."""
    assert retire_reason("return 1", _failed(error_type)) == error_type


def test_an_ordinary_failure_keeps_the_worker() -> None:
    """A program that raised left nothing a fresh namespace does not clear."""
    assert retire_reason("return 1/0", _failed("execution")) is None


def test_values_sent_into_the_run_that_reach_module_state_retire_the_worker() -> None:
    """A datetime's strptime and a ZoneInfo's class reach caches without any import."""
    assert retire_reason("return 1", OK, {"datetime.datetime"}) == "module:datetime"
    assert retire_reason("return 1", OK, {"zoneinfo.ZoneInfo"}) == "module:zoneinfo"
    assert retire_reason("return 1", OK, {"datetime.date"}) is None


def test_imports_are_read_from_the_syntax_tree() -> None:
    """``from a.b import c`` names ``a.b`` and ``a.b.c`` (c may be a module)."""
    assert imported_modules("from xml.etree import ElementTree as E\nimport json") == {
        "xml.etree",
        "xml.etree.ElementTree",
        "json",
    }
