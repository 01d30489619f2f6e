"""Red team on the idioms of issue 22: each new surface attacked, each attack pinned (ADRs 0104-0106).

The attempt's stop cannot be swallowed for good through ``contextlib`` (``suppress``, a
``contextmanager`` whose generator catches or returns in ``finally``, an ``ExitStack``
callback); a huge graph, a long string of quotes, hostile dates, a recursive encoder, a wide
NamedTuple, huge Counter counts end by the deadline or are refused by the caps; a protocol
check runs no host code and reveals no host object's private names; ``Generic`` keeps the
program's objects out of typing's cache. Processor time, not wall-clock time, is compared
with the deadline: the machine may be shared.
"""

from __future__ import annotations

import time

import pytest

from recurgent._sandbox import SandboxLimits
from specs.sandbox.support import Host, error_of, execute, value_of

DEADLINE = 0.5
SLACK = 0.7


def _ends_in_time(source: str, host: Host | None = None) -> tuple[str, str]:
    """``(error_type, message)`` of a program that must fail, checked to end by the deadline."""
    began = time.process_time()
    result = execute(source, host=host, limits=SandboxLimits(timeout_seconds=DEADLINE))
    assert time.process_time() - began < DEADLINE + SLACK
    assert result.error is not None, f"expected a failure, got {result.value!r}"
    return result.error.error_type, str(result.error)


_TIMEOUT = (
    "timeout",
    f"Execution timeout in tester.run: generated code exceeded execution_timeout_seconds={DEADLINE:g}",
)


class TestTheStopCannotBeSwallowed:
    """Every way ``contextlib`` offers to swallow an exception leaves the attempt stopped."""

    @pytest.mark.parametrize(
        "source",
        [
            "from contextlib import suppress\n"
            "with suppress(BaseException):\n    while True:\n        pass\n",
            "from contextlib import contextmanager\n@contextmanager\ndef g():\n"
            "    try:\n        yield\n    except BaseException:\n        pass\n"
            "with g():\n    while True:\n        pass\n",
            "from contextlib import contextmanager\n@contextmanager\ndef g():\n"
            "    try:\n        yield\n    finally:\n        return\n"
            "with g():\n    while True:\n        pass\n",
            "from contextlib import ExitStack\nwith ExitStack() as s:\n"
            "    s.push(lambda *e: True)\n    while True:\n        pass\n",
        ],
        ids=["suppress", "contextmanager-except", "contextmanager-finally-return", "exit-stack"],
    )
    def test_the_attempt_times_out(self, source: str) -> None:
        """The program's end (``result = 'escaped'``) is never its result."""
        assert _ends_in_time(source + "result = 'escaped'") == _TIMEOUT

    def test_suppress_lets_every_non_exception_through(self) -> None:
        """``suppress(BaseException)`` does not swallow ``GeneratorExit`` (nor, alike, the
        host's ``KeyboardInterrupt``), only exceptions and the program's own classes."""
        source = (
            "from contextlib import suppress\nseen = []\n"
            "for kind in (GeneratorExit, ValueError):\n"
            "    try:\n        with suppress(BaseException):\n            raise kind()\n"
            "        seen.append('swallowed ' + kind.__name__)\n"
            "    except BaseException as e:\n        seen.append('passed ' + type(e).__name__)\n"
            "result = seen"
        )
        assert value_of(source) == ["passed GeneratorExit", "swallowed ValueError"]


class TestLibraryWorkEndsInTime:
    """Inputs at the caps end by the deadline, or are refused at once."""

    def test_a_huge_graph(self) -> None:
        """Two million nodes in a chain: stopped at the deadline."""
        source = (
            "from graphlib import TopologicalSorter\n"
            "g = {i: [i + 1] for i in range(2_000_000)}\n"
            "result = len(list(TopologicalSorter(g).static_order()))"
        )
        assert _ends_in_time(source) == _TIMEOUT

    def test_split_of_a_long_string_of_quotes(self) -> None:
        """Six million characters of quotes: stopped at the deadline."""
        assert _ends_in_time('import shlex\nresult = shlex.split("\'\\"" * 3_000_000)') == _TIMEOUT

    def test_quote_of_many_quotes_is_refused_before_building(self) -> None:
        """Each ``'`` becomes five characters: the size is checked first."""
        assert _ends_in_time('import shlex\nshlex.quote("\'" * 3_000_000)') == (
            "resource_limit",
            "Resource limit in tester.run: shlex.quote() would create 15000002 items; the "
            "sandbox limit is 10000000",
        )

    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("'1' * 10**6", "refused"),
            ("', ' * 10**6", "refused"),
            ("'Tue, ' + '9' * 5000 + ' Dec 2026 10:00:00 +0000'", "refused"),
            # A zone of 100,000 digits is dropped, as the library drops any it cannot read.
            ("'Tue, 01 Dec 2026 10:00:00 +' + '9' * 100000", "2026-12-01T10:00:00"),
            ("'Tue, 01 Dec 2026 ' + ':' * 10**6", "refused"),
        ],
    )
    def test_hostile_dates(self, text: str, expected: str) -> None:
        """``parsedate_to_datetime`` answers each at once, as the library does."""
        source = (
            "from email.utils import parsedate_to_datetime\n"
            f"try:\n    result = parsedate_to_datetime({text}).isoformat()\n"
            "except ValueError as e:\n    result = 'refused'"
        )
        assert value_of(source, limits=SandboxLimits(timeout_seconds=DEADLINE)) == expected

    def test_an_address_list_of_a_shared_row_is_refused(self) -> None:
        """``getaddresses`` joins the text of every value: estimated first (H10)."""
        source = (
            "import email.utils\nrow = ['a@b.c'] * 1000\nemail.utils.getaddresses([row] * 10000)"
        )
        kind, message = _ends_in_time(source)
        assert (kind, message.split(" would create ")[0]) == (
            "resource_limit",
            "Resource limit in tester.run: email.utils.getaddresses()",
        )

    def test_an_address_of_brackets(self) -> None:
        """Three million ``<``: parsed by the deadline or stopped there."""
        source = "import email.utils\nresult = email.utils.parseaddr('<' * 3_000_000)"
        result = execute(source, limits=SandboxLimits(timeout_seconds=DEADLINE))
        assert (result.error is None and result.value == ("", "")) or (
            result.error is not None and result.error.error_type == "timeout"
        )

    def test_an_encoder_default_that_recurses(self) -> None:
        """``default`` returning the object again is a circular reference; returning a new
        object every time ends in ``RecursionError``."""
        again = (
            "import json\nclass E(json.JSONEncoder):\n    def default(self, o):\n"
            "        return [o]\nclass X:\n    pass\njson.dumps(X(), cls=E)"
        )
        fresh = (
            "import json\nclass E(json.JSONEncoder):\n    def default(self, o):\n"
            "        return X()\nclass X:\n    pass\n"
            "json.dumps(X(), cls=E, check_circular=False)"
        )
        assert _ends_in_time(again) == (
            "execution",
            "Execution error in tester.run: ValueError: Circular reference detected",
        )
        assert _ends_in_time(fresh)[1].startswith(
            "Execution error in tester.run: RecursionError: maximum recursion depth exceeded"
        )

    @pytest.mark.parametrize(
        "call",
        ["json.JSONEncoder().encode(big)", "list(json.JSONEncoder().iterencode(big, True))"],
    )
    def test_the_one_shot_encoder_is_never_taken(self, call: str) -> None:
        """A shared row 10**4 times: ``encode`` refuses it at once; ``iterencode(o, True)``
        (the C encoder's switch) yields pieces, stopped at the deadline."""
        kind, _ = _ends_in_time(f"import json\nrow = [0] * 10000\nbig = [row] * 10000\n{call}")
        assert kind in ("resource_limit", "timeout")

    def test_a_wide_named_tuple(self) -> None:
        """A thousand fields in a class body (the program's size cap allows no more), two
        hundred thousand through the functional form: built, or stopped at the deadline."""
        fields = "".join(f"    f{i}: int\n" for i in range(1000))
        wide = (
            "from typing import NamedTuple\nclass P(NamedTuple):\n"
            + fields
            + "result = P._make(range(1000))._asdict()['f999']"
        )
        assert value_of(wide, limits=SandboxLimits(timeout_seconds=DEADLINE)) == 999
        functional = (
            "from typing import NamedTuple\n"
            "P = NamedTuple('P', [(f'f{i}', int) for i in range(200000)])\nresult = 1"
        )
        assert _ends_in_time(functional) == _TIMEOUT

    def test_huge_counts_in_a_counter_subclass(self) -> None:
        """Arithmetic on 140-kilobit counts is exact; ``elements()`` of a billion ends by the
        deadline."""
        source = (
            "from collections import Counter\nclass C(Counter):\n    pass\n"
            "c = C(a=7**50000)\nresult = (c + c - c)['a'] == 7**50000"
        )
        assert value_of(source) is True
        elements = (
            "from collections import Counter\nclass C(Counter):\n    pass\n"
            "result = len(list(C(a=10**9).elements()))"
        )
        assert _ends_in_time(elements) == _TIMEOUT


class TestProtocolChecksRunNoHostCode:
    """``isinstance`` against a runtime-checkable protocol looks members up statically."""

    PROTOCOL = (
        "from typing import Protocol, runtime_checkable\n"
        "@runtime_checkable\nclass Fetcher(Protocol):\n    def fetch(self, url): ...\n"
        "@runtime_checkable\nclass Sealed(Protocol):\n    def _sealed_call(self): ...\n"
    )

    def test_a_handle_is_not_asked(self) -> None:
        """A handle answers any method name by calling its agent: the check calls nothing."""
        host = Host()
        source = self.PROTOCOL + "h = delegate('helper')\nresult = isinstance(h, Fetcher)"
        assert value_of(source, host=host) is False
        assert host.child("helper").calls == []

    def test_a_host_objects_private_names_are_not_revealed(self) -> None:
        """``type`` is a sealed runtime callable with a ``_sealed_call`` slot: not seen; the
        program's own object with that name is."""
        source = self.PROTOCOL + (
            "class Mine:\n    def _sealed_call(self):\n        return 1\n"
            "result = [isinstance(type, Sealed), isinstance(Mine(), Sealed)]"
        )
        assert value_of(source) == [False, True]


class TestGenericKeepsTypingsCacheExact:
    """``Generic[...]`` parameters go through the gate; a generic class's subscription touches
    no cache at all."""

    EVIL = (
        "log = []\nclass Evil:\n    def __hash__(self):\n        log.append('hash')\n"
        "        return 1\n    def __eq__(self, other):\n        log.append('eq')\n"
        "        return True\n"
    )

    def test_an_instance_parameter_to_generic_is_refused(self) -> None:
        """As for every typing form (ADR 0091)."""
        source = self.EVIL + "from typing import Generic\nGeneric[Evil()]"
        assert error_of(source)[1].endswith(
            "TypeError: typing parameters in the sandbox are types, strings, numbers, None and "
            "typing forms, not instances of your classes (Evil)"
        )

    def test_subscribing_the_programs_generic_class_hashes_nothing(self) -> None:
        """``Box[Evil()]`` is ``Box``; the parameter's ``__hash__`` never runs."""
        source = self.EVIL + (
            "from typing import Generic, TypeVar\nT = TypeVar('T')\n"
            "class Box(Generic[T]):\n    pass\nresult = [Box[Evil()] is Box, log]"
        )
        assert value_of(source) == [True, []]
