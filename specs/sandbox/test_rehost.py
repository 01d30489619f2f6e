"""One regex engine: served library code matches program text on the sandbox's engine (ADR 0090).

The walk below finds every module whose code a served name runs that reads the standard ``re``
(the module, a compiled pattern, or a bound method of one among its globals) and pins how each
is served: re-hosted onto the sandbox's engine, matching only fixed patterns, or not served. A
new module, or a Python version whose module starts using ``re``, fails here until a person
decides. The other specs pin that no standard-engine pattern is handed to a program and that
the re-hosted code behaves as the library's own.
"""

from __future__ import annotations

import csv
import datetime
import html.parser
import importlib
import re
import string
import sys
import time
import types
from typing import Any

import pytest

from recurgent._sandbox import SandboxLimits
from recurgent._sandbox._catalog import CATALOG
from recurgent._sandbox._regex import Pattern
from recurgent._sandbox._rehost import HTML_PARSER, RE, REGEX_VERDICTS, SNIFFER, TEMPLATE
from specs.sandbox.support import Host, execute, value_of

_STANDARD_ENGINE = ("re", "sre_compile", "sre_parse", "_strptime", "xml.etree.ElementPath")
# Modules a served name reaches without naming them among its globals: C code imports them.
_REACHED_BY_C = {
    "time": "_strptime",
    "datetime": "_strptime",
    "xml.etree.ElementTree": "xml.etree.ElementPath",
}


def _reads_the_standard_engine(module: types.ModuleType) -> bool:
    for value in vars(module).values():
        if isinstance(value, types.ModuleType) and value.__name__ in _STANDARD_ENGINE:
            return True
        if isinstance(value, re.Pattern):
            return True
        if callable(value) and getattr(value, "__module__", None) == "re":
            return True
        if isinstance(value, types.BuiltinMethodType) and isinstance(value.__self__, re.Pattern):
            return True
    return False


def _modules_served_code_runs() -> set[str]:
    """Every catalog module, the module of every class and function it serves, and what C
    code of those modules imports."""
    found: set[str] = set()
    for name, rows in CATALOG.items():
        module = importlib.import_module(name)
        found.add(name)
        for attribute in rows.pure:
            owner = getattr(getattr(module, attribute, None), "__module__", None)
            if isinstance(owner, str) and owner in sys.modules:
                found.add(owner)
    for name in list(found):
        reached = _REACHED_BY_C.get(name)
        if reached is not None:
            importlib.import_module(reached)
            found.add(reached)
    return found


def test_every_module_reading_the_standard_engine_is_pinned() -> None:
    """The walk finds exactly the modules of the verdict table (plus ``difflib``'s default
    argument, which the walk of globals cannot see)."""
    reading = {
        name
        for name in _modules_served_code_runs()
        if _reads_the_standard_engine(sys.modules[name])
    }
    assert sorted(reading - set(REGEX_VERDICTS)) == []
    assert sorted(set(REGEX_VERDICTS) - reading - {"difflib", "_strptime"}) == []


@pytest.mark.parametrize(
    ("served", "real", "module"),
    [
        (HTML_PARSER, html.parser.HTMLParser, "html.parser"),
        (SNIFFER, csv.Sniffer, "csv"),
        (TEMPLATE, string.Template, "string"),
    ],
)
def test_re_hosted_classes_run_the_librarys_code_over_the_sandboxs_engine(
    served: type, real: type, module: str
) -> None:
    """Same code objects, globals whose ``re`` is the sandbox's (ADR 0090)."""
    for name, member in vars(real).items():
        if isinstance(member, types.FunctionType):
            copy = vars(served)[name]
            assert copy.__code__ is member.__code__
            engine = copy.__globals__.get("re", copy.__globals__.get("_re"))
            assert engine is RE
    assert (served.__module__, served.__qualname__) == (module, real.__qualname__)


class TestNoStandardPatternReachesAProgram:
    """Every compiled pattern a program can hold is the sandbox's."""

    @pytest.mark.parametrize(
        "read",
        [
            "string.Template.pattern",
            "string.Template('$a').pattern",
            "html.parser.HTMLParser().interesting",
        ],
    )
    def test_patterns_the_library_hands_out(self, read: str) -> None:
        """Class and instance patterns are the sandbox's ``Pattern``."""
        source = f"import string, html.parser, re\nresult = isinstance({read}, re.Pattern)"
        assert value_of(source) is True

    def test_set_cdata_mode_compiles_on_the_sandboxs_engine(self) -> None:
        """The program's text becomes a sandbox pattern: backtracking ends at the deadline."""
        source = (
            "import html.parser\n"
            "p = html.parser.HTMLParser()\n"
            "p.set_cdata_mode('(a|aa)+$')\n"
            "result = p.interesting.search('</' + 'a' * 60 + 'b')\n"
        )
        started = time.monotonic()
        result = execute(source, limits=SandboxLimits(timeout_seconds=0.5))
        assert result.error is not None and result.error.error_type == "timeout"
        assert time.monotonic() - started < 5.0

    @pytest.mark.parametrize(
        "call",
        [
            "p.match(TEXT)",
            "p.search(TEXT)",
            "p.fullmatch(TEXT)",
            "p.findall(TEXT)",
            "p.sub('x', TEXT)",
        ],
    )
    def test_a_hosts_standard_pattern_matches_on_the_sandboxs_engine(self, call: str) -> None:
        """A standard pattern in memory backtracks under the deadline instead of for hours."""
        host = Host(memory={"p": re.compile(r"(a|aa)+$")})
        source = f"p = context['p']\nTEXT = 'a' * 60 + 'b'\nresult = {call}"
        result = execute(source, host=host, limits=SandboxLimits(timeout_seconds=0.5))
        assert result.error is not None and result.error.error_type == "timeout"

    @pytest.mark.parametrize(
        ("read", "refusal"),
        [
            ("p.scanner('aaa').match()", "of SRE_Scanner objects is not accessible"),
            ("type(p).scanner(p, 'aaa')", "Pattern.scanner is not available in the sandbox"),
        ],
    )
    def test_a_hosts_standard_patterns_scanner_cannot_match(self, read: str, refusal: str) -> None:
        """``scanner`` (which matches on the standard engine) cannot be used."""
        host = Host(memory={"p": re.compile("a")})
        result = execute(f"p = context['p']\nresult = {read}", host=host)
        assert result.error is not None
        assert refusal in str(result.error)

    def test_a_hosts_standard_pattern_gives_the_usual_results(self) -> None:
        """Small inputs match as on the standard engine; matches are the sandbox's."""
        host = Host(memory={"p": re.compile(r"(\w+)@(\w+)")})
        source = (
            "import re\n"
            "p = context['p']\n"
            "m = p.search('mail bob@host now')\n"
            "result = [m.group(1, 2), p.findall('a@b c@d'), p.sub('X', 'a@b!'),\n"
            "          isinstance(m, re.Match), p.pattern]\n"
        )
        assert value_of(source, host=host) == [
            ("bob", "host"),
            [("a", "b"), ("c", "d")],
            "X!",
            True,
            r"(\w+)@(\w+)",
        ]


class TestReHostedCodeBehavesAsTheLibrarys:
    """The copies give the standard library's answers."""

    def test_html_parser_subclass(self) -> None:
        """A program's parser sees tags, attributes, data and script text as the real one."""
        source = (
            "from html.parser import HTMLParser\n"
            "class P(HTMLParser):\n"
            "    def __init__(self):\n"
            "        super().__init__()\n"
            "        self.seen = []\n"
            "    def handle_starttag(self, tag, attrs):\n"
            "        self.seen.append([tag, attrs])\n"
            "    def handle_data(self, data):\n"
            "        self.seen.append(data)\n"
            "p = P()\n"
            "p.feed('<p class=\"a\" id=3>Hi &amp; bye</p><script>if (a<b) x;</script>')\n"
            "result = p.seen\n"
        )
        assert value_of(source) == [
            ["p", [("class", "a"), ("id", "3")]],
            "Hi & bye",
            ["script", []],
            "if (a<b) x;",
        ]

    def test_sniffer(self) -> None:
        """The delimiter and header guesses are the library's."""
        source = (
            "import csv\n"
            "s = csv.Sniffer()\n"
            "sample = 'name;age\\nann;3\\nbob;4\\n'\n"
            "result = [s.sniff(sample).delimiter, s.has_header(sample)]\n"
        )
        assert value_of(source) == [";", True]
        assert csv.Sniffer().sniff("name;age\nann;3\nbob;4\n").delimiter == ";"

    def test_strptime(self) -> None:
        """``time.strptime`` and ``datetime.strptime`` parse as the library does."""
        source = (
            "import time, datetime\n"
            "result = [list(time.strptime('02 Dec 2026 10:11', '%d %b %Y %H:%M'))[:5],\n"
            "          str(datetime.datetime.strptime('2026-12-02T10:11:12', '%Y-%m-%dT%H:%M:%S'))]\n"
        )
        assert value_of(source) == [
            list(time.strptime("02 Dec 2026 10:11", "%d %b %Y %H:%M"))[:5],
            str(datetime.datetime.strptime("2026-12-02T10:11:12", "%Y-%m-%dT%H:%M:%S")),
        ]

    def test_template_with_a_hostile_pattern(self) -> None:
        """Substitution works; a sandbox pattern is what ``Template`` matches with."""
        assert (
            value_of("import string\nresult = string.Template('$a-${b}').substitute(a=1, b=2)")
            == "1-2"
        )
        template: Any = TEMPLATE  # a class copied at import: mypy knows it only as a type
        assert isinstance(template.pattern, Pattern)

    def test_the_sniffer_stops_at_the_deadline(self) -> None:
        """``Sniffer().sniff(',\"' * 60000)`` (quadratic in the standard engine) ends on time."""
        started = time.monotonic()
        result = execute(
            "import csv\nresult = csv.Sniffer().sniff(',\"' * 60000)",
            limits=SandboxLimits(timeout_seconds=0.5),
        )
        assert result.error is not None and result.error.error_type == "timeout"
        assert time.monotonic() - started < 5.0
