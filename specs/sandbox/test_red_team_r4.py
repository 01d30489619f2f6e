"""Red team R4: issue 21's classes, each with a member of our own (ADRs 0089 to 0092).

The review behind issue 21 broke the sandbox in four classes; its payloads are not repeated
here. Each class below is attacked with another member, found as an attacker would, and pinned
as a fixed finding:

- **J1, library code past the deadline** (class 1): pure-Python library code never ticks.
- **J2, a second regex engine** (class 2): a pattern of the standard engine matched program text.
- **J3, values into library calls never rebuilt** (class 3): a program's ``str`` subclass went
  into a process-wide cache, and into the runtime's own name checks.
- **J4, the text of a shared structure** (H10's class): an exception's text.

:data:`CACHE_PAYLOADS` are the class 3 payloads the fingerprint spec runs with the escape corpus
before checking the host's own ``strptime``, ``ZoneInfo``, ``re``, ``urlsplit``, ``findall``
and ``typing`` (``test_fingerprint.py``).
"""

from __future__ import annotations

import re
import time
import xml.etree.ElementTree as ElementTree

import pytest

from recurgent._sandbox import SandboxLimits
from specs.sandbox.support import Host, error_of, execute

_COLLIDING_STR = (
    "class S(str):\n"
    "    def __hash__(self):\n"
    "        return hash({key!r})\n"
    "    def __eq__(self, other):\n"
    "        while True:\n"
    "            pass\n"
)

#: Class 3 payloads: each leaves a str subclass colliding with a key the host uses, wherever the
#: library would keep it (name, code, the error type the attempt ends with).
CACHE_PAYLOADS: list[tuple[str, str, str]] = [
    (
        "element path cache",
        "import xml.etree.ElementTree as ET\n"
        + _COLLIDING_STR.format(key=".//item")
        + "result = len(ET.fromstring('<a><item/></a>').findall(S('.//item')))",
        "none",
    ),
    (
        "strptime cache",
        "import datetime\n"
        + _COLLIDING_STR.format(key="%Y-%m-%d")
        + "result = str(datetime.datetime.now().strptime('2026-12-02', S('%Y-%m-%d')))",
        "none",
    ),
    (
        "zoneinfo cache",
        "import zoneinfo\n"
        + _COLLIDING_STR.format(key="UTC")
        + "result = str(zoneinfo.ZoneInfo(S('UTC')))",
        "none",
    ),
    (
        "typing cache",
        "import typing\n"
        + _COLLIDING_STR.format(key="a")
        + "result = repr(typing.Literal[S('a')])",
        "none",
    ),
    (
        "regex cache",
        "import re\n"
        + _COLLIDING_STR.format(key="a+")
        + "result = bool(re.compile(S('a+')).match('aa'))",
        "none",
    ),
]


class TestLibraryCodePastTheDeadline:
    """J1 (class 1, fixed): ``ElementTree.fromstringlist`` of two million pieces feeds its
    parser in a Python loop that never ticks.

    Payload: ``ET.fromstringlist(['<a>'] + ['<b/>'] * 2_000_000 + ['</a>'])`` under a 0.3 s
    deadline ran to its end, seconds later (the review's members: ``parse_qsl``, ``saferepr``,
    ``findall``). The attempt's thread is now stopped at the deadline in any Python frame
    (ADR 0089).
    """

    def test_the_library_loop_stops_at_the_deadline(self) -> None:
        """The attempt ends as ``timeout``, well before the call's own end (about 3 s alone)."""
        source = (
            "import xml.etree.ElementTree as ET\n"
            "root = ET.fromstringlist(['<a>'] + ['<b/>'] * 2_000_000 + ['</a>'])\n"
            "result = len(root)\n"
        )
        started = time.process_time()  # processor time: the machine may be shared
        result = execute(source, limits=SandboxLimits(timeout_seconds=0.3))

        assert result.error is not None and result.error.error_type == "timeout"
        assert time.process_time() - started < 1.5


class TestASecondRegexEngine:
    """J2 (class 2, fixed): a host's compiled pattern in memory matched on the standard engine.

    Payload: memory holds a validator the host compiled, ``re.compile(r'^(\\w+\\s?)*$')``;
    ``context['validator'].match('a' * 26 + '!')`` backtracked about ten seconds in one C call
    (thirty characters: hours). ``string.Template.pattern`` handed out the standard engine's
    pattern too. A standard pattern now matches on the sandbox's engine under the deadline,
    and ``Template`` is re-hosted (ADR 0090).
    """

    def test_a_hosts_validator_ends_on_time(self) -> None:
        """The match answers (``regex`` finds no match at once) or times out, in time."""
        host = Host(memory={"validator": re.compile(r"^(\w+\s?)*$")})
        started = time.monotonic()
        result = execute(
            "result = context['validator'].match('a' * 26 + '!')",
            host=host,
            limits=SandboxLimits(timeout_seconds=0.5),
        )

        assert time.monotonic() - started < 3.0
        assert (result.error, result.value) == (None, None) or (
            result.error is not None and result.error.error_type == "timeout"
        )

    def test_templates_pattern_is_the_sandboxs(self) -> None:
        """``string.Template.pattern`` is a sandbox pattern, not the standard engine's."""
        source = "import string, re\nresult = [isinstance(string.Template.pattern, re.Pattern)]"
        assert execute(source).value == [True]


class TestValuesIntoLibraryCallsAreExact:
    """J3 (class 3, fixed): a program's ``str`` subclass reached code that trusted it.

    Payloads: ``root.findall(S('.//item'))`` kept ``S`` in ``ElementPath``'s process-wide cache,
    so the host's own ``findall('.//item')`` ran the program's ``__eq__`` (and raised its stop)
    on every call after the attempt. Worse, the runtime's attribute policy asked the name
    itself whether it was private: ``getattr(f, S('__globals__'))`` with ``S.startswith``
    answering ``False`` handed out the attempt's globals (the policy's hooks, the ticker), a way
    to the host. Library code and the runtime's checks now receive exact built-in values
    (ADR 0091).
    """

    def test_the_hosts_findall_after_the_payload(self) -> None:
        """The program's search works; the host's own search afterwards is unchanged."""
        result = execute(CACHE_PAYLOADS[0][1], limits=SandboxLimits(timeout_seconds=1.0))

        assert (result.error, result.value) == (None, 1)
        assert len(ElementTree.fromstring("<a><item/><item/></a>").findall(".//item")) == 2

    @pytest.mark.parametrize(
        "read",
        [
            "getattr(f, S('__globals__'))",
            "getattr(f, S('__code__'))",
            "setattr(f, S('__defaults__'), (2,))",
        ],
    )
    def test_a_private_name_cannot_talk_its_way_past_the_policy(self, read: str) -> None:
        """The name is read as exact text: refused as private, whatever its methods say."""
        source = (
            "class S(str):\n"
            "    def startswith(self, *args):\n"
            "        return False\n"
            "    def __hash__(self):\n"
            "        return 7\n"
            "    def __eq__(self, other):\n"
            "        return False\n"
            "def f():\n"
            "    return 1\n"
            f"result = {read}\n"
        )
        error_type, message = error_of(source)
        assert error_type == "execution"
        assert "private" in message or "not accessible" in message, message


class TestTheTextOfAnException:
    """J4 (H10's class, fixed): an exception prints its ``args``, a shared structure's too.

    Payload: ``e = ValueError([[0] * 10**4] * 2000)``, then ``str(e)`` or ``'%s' % e``: 60
    million characters in one C call, past the item cap (the review's member: ``str`` of the
    structure itself). The text estimate reads an exception's ``args`` (ADR 0092).
    """

    @pytest.mark.parametrize("convert", ["str(e)", "'%s' % (e,)", "f'{e!r}'", "format(e)"])
    def test_the_text_is_refused(self, convert: str) -> None:
        """The conversion fails as ``resource_limit`` before building the text."""
        result = execute(f"e = ValueError([[0] * 10**4] * 2000)\nresult = len({convert})")

        assert result.error is not None and result.error.error_type == "resource_limit"
