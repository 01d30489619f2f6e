"""Shared objects stay unchanged: allowed modules and process-wide settings, before and after.

The fingerprint captures, for every allowed module, every public name and, for each function
(also the functions of its classes), ``__name__``, ``__qualname__``, ``__code__``,
``__dict__``, ``__defaults__`` and ``__kwdefaults__``; for each class its attribute table;
plus process-wide settings generated code must never move (``csv.field_size_limit()``, the
decimal context, the global random state, recursion and int-string limits, json's default
encoder and decoder), plus what the host's own calls of library functions with process-wide
caches return (``strptime``, ``ZoneInfo``, ``re``, ``urlsplit``, ``findall``, ``typing``: a
program object kept in such a cache would answer them, ADR 0091). One spec runs the whole
escape corpus, every side-door payload and the cache payloads of red team R4, and compares
(ADR 0019, 0020).
"""

from __future__ import annotations

import copyreg
import csv
import datetime
import decimal
import functools
import importlib
import json
import os
import random
import re
import string
import sys
import time
import types
import typing
import urllib.parse
import xml.etree.ElementTree as ElementTree
import zoneinfo
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import regex

from recurgent._sandbox import ALLOWED_MODULES, SandboxLimits
from recurgent.errors import InvalidCodeError, ProviderError

from .support import FakeClock, Host, error_of, execute

# Built per attempt from the runtime's own classes: their real namesakes are fingerprinted.
_REAL_MODULES = tuple(sorted(set(ALLOWED_MODULES) | {"urllib.request", "urllib.error"}))


def _function_print(function: types.FunctionType) -> tuple[Any, ...]:
    return (
        function.__name__,
        function.__qualname__,
        function.__code__,
        dict(function.__dict__),
        function.__defaults__,
        dict(function.__kwdefaults__ or {}),
    )


def _value_print(value: Any) -> Any:
    if isinstance(value, types.FunctionType):
        return _function_print(value)
    if isinstance(value, type):
        table: dict[str, Any] = {}
        for name, member in vars(value).items():
            if isinstance(member, types.FunctionType):
                table[name] = _function_print(member)
            elif isinstance(member, dict | list | set):
                table[name] = repr(member)
            else:
                table[name] = id(member)
        return table
    if isinstance(value, dict | list | set | bytearray):
        return repr(value)
    return id(value)


def module_fingerprint() -> dict[str, Any]:
    """Every public name of every allowed module, and what each function and class holds."""
    prints = {}
    for name in _REAL_MODULES:
        module = importlib.import_module(name)
        prints[name] = {
            attribute: _value_print(getattr(module, attribute))
            for attribute in dir(module)
            if not attribute.startswith("_")
        }
    return prints


def _context_print(context: decimal.Context) -> tuple[Any, ...]:
    return (
        context.prec,
        context.rounding,
        context.Emin,
        context.Emax,
        context.capitals,
        context.clamp,
        sorted(signal.__name__ for signal, on in context.traps.items() if on),
    )


def process_fingerprint() -> dict[str, Any]:
    """Process-wide settings an escape could move, captured by value."""
    return {
        "csv_field_size_limit": csv.field_size_limit(),
        "csv_dialects": sorted(csv.list_dialects()),
        "decimal_context": _context_print(decimal.getcontext()),
        "decimal_default_context": _context_print(decimal.DefaultContext),
        "random_state": hash(random.getstate()),
        "recursion_limit": sys.getrecursionlimit(),
        "int_max_str_digits": sys.get_int_max_str_digits(),
        "json_default_encoder": dict(vars(json._default_encoder)),  # type: ignore[attr-defined]
        "json_default_decoder": sorted(vars(json._default_decoder)),  # type: ignore[attr-defined]
        "switch_interval": sys.getswitchinterval(),
        "copyreg_dispatch": sorted(map(repr, copyreg.dispatch_table)),
        "cwd": os.getcwd(),
    }


def _outcome(call: Callable[[], Any]) -> Any:
    try:
        return call()
    except BaseException as error:
        return f"raised {type(error).__name__}"


def _span(match: re.Match[str] | None) -> tuple[int, int]:
    assert match is not None
    return match.span()


def host_behaviour() -> dict[str, Any]:
    """What the host's own calls of library functions with process-wide caches return."""
    return {
        "datetime.strptime": _outcome(lambda: datetime.datetime.strptime("2026-12-02", "%Y-%m-%d")),
        "time.strptime": _outcome(lambda: tuple(time.strptime("2026-12-02", "%Y-%m-%d"))),
        "ZoneInfo": _outcome(lambda: (str(zoneinfo.ZoneInfo("UTC")), zoneinfo.ZoneInfo("UTC"))),
        "re.compile": _outcome(lambda: _span(re.compile("a+").match("caab", 1))),
        "re.sub": _outcome(lambda: re.sub("a+", "-", "baab")),
        "regex.compile": _outcome(lambda: regex.compile("a+").match("aa").span()),
        "urlsplit": _outcome(lambda: tuple(urllib.parse.urlsplit("http://example.com/x"))),
        "findall": _outcome(
            lambda: len(ElementTree.fromstring("<a><item/></a>").findall(".//item"))
        ),
        "Literal": _outcome(lambda: repr(typing.Literal["a"])),
        "Template": _outcome(lambda: string.Template("$a").substitute(a=1)),
    }


def _run_all(payloads: list[tuple[str, str, str]], host: Host) -> list[str]:
    """Run every payload; return the ids of those that did not end in their error type."""
    wrong = []
    for name, code, error_type in payloads:
        try:
            result = execute(
                code,
                host=host,
                limits=SandboxLimits(
                    timeout_seconds=2.0, max_forwarded_calls=50, max_memory_bytes=256 * 2**20
                ),
                clock=FakeClock(step=0.01),
            )
        except InvalidCodeError as error:
            observed = error.error_type
        else:
            observed = result.error.error_type if result.error else "none"
        if observed != error_type:
            wrong.append(f"{name}: {observed}")
    return wrong


class TestSharedObjectsStayUnchanged:
    """Running every known attack leaves modules and settings exactly as they were."""

    def test_whole_corpus_leaves_modules_and_settings_unchanged(
        self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
    ) -> None:
        """Escape corpus + side doors + cache payloads in one run: the fingerprints and the
        host's own library calls are equal before and after."""
        from .test_escapes import PAYLOADS
        from .test_red_team_r4 import CACHE_PAYLOADS
        from .test_side_doors import SIDE_DOORS

        monkeypatch.chdir(tmp_path)
        host = Host(
            memory={"note": "kept", "formatter": functools.partial(os.getenv, "HOME")},
            delegate_errors={"broken": ProviderError("401 Unauthorized")},
        )
        # The host's calls first: they warm the caches (ZoneInfo's is a class attribute).
        behaviour = host_behaviour()
        before = (module_fingerprint(), process_fingerprint())
        wrong = _run_all(list(PAYLOADS) + list(SIDE_DOORS) + CACHE_PAYLOADS, host)
        assert (wrong, host_behaviour()) == ([], behaviour)
        after = (module_fingerprint(), process_fingerprint())
        changed = [name for name in before[0] if before[0][name] != after[0][name]]
        assert (changed, after[1] == before[1]) == ([], True)

    def test_the_fingerprint_notices_a_renamed_function(self) -> None:
        """The module fingerprint is not vacuous: renaming ``json.loads`` changes it."""
        before = module_fingerprint()
        original = json.loads.__name__
        try:
            json.loads.__name__ = "renamed"
            changed = module_fingerprint() != before
        finally:
            json.loads.__name__ = original
        assert changed is True

    def test_the_fingerprint_notices_a_moved_setting(self) -> None:
        """The process fingerprint is not vacuous: moving the csv limit changes it."""
        before = process_fingerprint()
        original = csv.field_size_limit(12345)
        try:
            changed = process_fingerprint() != before
        finally:
            csv.field_size_limit(original)
        assert changed is True


class TestProcessWideSettingsAreRefused:
    """Settings that belong to the whole process are refused, not shared."""

    def test_csv_field_size_limit_stays_refused(self) -> None:
        """``csv.field_size_limit`` is not served, and the host's limit is untouched."""
        before = csv.field_size_limit()
        outcome = error_of("import csv\nresult = csv.field_size_limit(10)")
        assert (outcome, csv.field_size_limit()) == (
            (
                "execution",
                "Execution error in tester.run: AttributeError: csv.field_size_limit is not "
                "available in the sandbox",
            ),
            before,
        )

    @pytest.mark.parametrize(
        "source",
        [
            "import decimal\nresult = decimal.BasicContext",
            "import decimal\nresult = decimal.ExtendedContext",
            "import decimal\nresult = decimal.DefaultContext",
            "import random\nresult = random.getstate",
            "import random\nresult = random.setstate",
            "import csv\nresult = csv.register_dialect",
        ],
    )
    def test_shared_state_handles_are_refused(self, source: str) -> None:
        """Each handle on process-wide state is refused with the sandbox's message."""
        error_type, message = error_of(source)
        assert (error_type, message.endswith("is not available in the sandbox")) == (
            "execution",
            True,
        )
