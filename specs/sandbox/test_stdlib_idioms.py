"""The stdlib idioms of generated programs: contextlib, graphlib, shlex, email.utils, JSON classes
(ADR 0105). Each works as the library does, with exact values, minus the one thing taken away.
"""

from __future__ import annotations

import datetime

import pytest

from .support import error_of, value_of


class TestContextlib:
    """``suppress``, ``contextmanager``, ``closing``, ``nullcontext``, ``ExitStack``."""

    def test_suppress_swallows_the_named_exceptions(self) -> None:
        """Only those: another exception passes."""
        source = (
            "from contextlib import suppress\nseen = []\n"
            "with suppress(KeyError, IndexError):\n    [][1]\nseen.append('after')\n"
            "try:\n    with suppress(KeyError):\n        1 / 0\nexcept ZeroDivisionError:\n"
            "    seen.append('passed')\nresult = seen"
        )
        assert value_of(source) == ["after", "passed"]

    def test_suppress_takes_the_programs_exception_classes(self) -> None:
        """A class the program derived from ``BaseException`` is the program's to swallow."""
        source = (
            "from contextlib import suppress\nclass Stop(BaseException):\n    pass\n"
            "with suppress(Stop):\n    raise Stop()\nresult = 'swallowed'"
        )
        assert value_of(source) == "swallowed"

    def test_suppress_refuses_a_non_class(self) -> None:
        """Refused at once, with the form to use."""
        assert error_of("from contextlib import suppress\nsuppress('KeyError')")[1].endswith(
            "TypeError: suppress() takes exception classes, e.g. suppress(KeyError)"
        )

    def test_contextmanager_on_the_programs_generator(self) -> None:
        """Enter, exit, and an exception thrown back into the generator's ``except``."""
        source = (
            "from contextlib import contextmanager\nlog = []\n"
            "@contextmanager\ndef tag(name):\n    log.append('<' + name + '>')\n"
            "    try:\n        yield name.upper()\n    except ValueError as e:\n"
            "        log.append('caught ' + str(e))\n    finally:\n        log.append('</' + name + '>')\n"
            "with tag('b') as t:\n    log.append(t)\n"
            "with tag('i'):\n    raise ValueError('bad')\n"
            "result = log"
        )
        assert value_of(source) == ["<b>", "B", "</b>", "<i>", "caught bad", "</i>"]

    def test_closing_nullcontext_and_exit_stack(self) -> None:
        """``closing`` calls ``close``; ``nullcontext`` yields its value; ExitStack unwinds."""
        source = (
            "from contextlib import closing, nullcontext, ExitStack\nlog = []\n"
            "class Res:\n    def __init__(self, n):\n        self.n = n\n"
            "    def close(self):\n        log.append('closed ' + str(self.n))\n"
            "with closing(Res(1)) as r:\n    log.append(r.n)\n"
            "with nullcontext(5) as v:\n    log.append(v)\n"
            "with ExitStack() as stack:\n"
            "    for n in (2, 3):\n        stack.enter_context(closing(Res(n)))\n"
            "    stack.callback(log.append, 'callback')\n"
            "result = log"
        )
        assert value_of(source) == [
            1,
            "closed 1",
            5,
            "callback",
            "closed 3",
            "closed 2",
        ]

    def test_closing_reads_close_through_the_policy(self) -> None:
        """An object whose ``close`` the program may not read is refused at the ``with``."""
        source = (
            "from contextlib import closing\nimport json\n"
            "with closing(json.JSONDecoder()):\n    pass\n"
        )
        assert error_of(source)[1].endswith(
            "AttributeError: 'JSONDecoder' object has no attribute 'close'"
        )


class TestGraphlib:
    """``TopologicalSorter`` and ``CycleError``."""

    def test_static_order(self) -> None:
        """Dependencies first; ``add`` with several predecessors."""
        source = (
            "from graphlib import TopologicalSorter\n"
            "ts = TopologicalSorter({'app': ['lib', 'db'], 'lib': ['core']})\n"
            "ts.add('db', 'core')\nresult = list(ts.static_order())"
        )
        assert value_of(source) == ["core", "lib", "db", "app"]

    def test_the_incremental_api(self) -> None:
        """``prepare``, ``get_ready``, ``done`` and ``is_active``."""
        source = (
            "from graphlib import TopologicalSorter\n"
            "ts = TopologicalSorter({'b': {'a'}, 'c': {'a'}})\nts.prepare()\nwaves = []\n"
            "while ts.is_active():\n    ready = sorted(ts.get_ready())\n    waves.append(ready)\n"
            "    ts.done(*ready)\nresult = waves"
        )
        assert value_of(source) == [["a"], ["b", "c"]]

    def test_a_cycle(self) -> None:
        """``CycleError`` carries the cycle, catchable by its class."""
        source = (
            "from graphlib import TopologicalSorter, CycleError\n"
            "try:\n    list(TopologicalSorter({'a': ['b'], 'b': ['a']}).static_order())\n"
            "except CycleError as e:\n    result = [e.args[0], sorted(set(e.args[1]))]"
        )
        assert value_of(source) == ["nodes are in a cycle", ["a", "b"]]


class TestShlex:
    """``split``, ``quote`` and ``join``."""

    def test_split_quote_join(self) -> None:
        """The library's results."""
        source = (
            "import shlex\n"
            "result = [shlex.split('cp \"my file.txt\" dest # c', comments=True),\n"
            "          shlex.quote('a b'), shlex.quote('safe'), shlex.join(['echo', \"it's\"]),\n"
            "          shlex.split('a\\\\ b c', posix=True)]"
        )
        assert value_of(source) == [
            ["cp", "my file.txt", "dest"],
            "'a b'",
            "safe",
            "echo 'it'\"'\"'s'",
            ["a b", "c"],
        ]

    @pytest.mark.parametrize("argument", ["None", "b'a b'"])
    def test_split_takes_text_only(self, argument: str) -> None:
        """``split(None)`` would read the host's standard input: refused, as bytes are."""
        kind = "NoneType" if argument == "None" else "bytes"
        assert error_of(f"import shlex\nshlex.split({argument})")[1].endswith(
            f"TypeError: shlex.split() takes a str, not {kind}"
        )

    def test_the_shlex_class_is_denied(self) -> None:
        """It follows ``source`` lines into files."""
        assert error_of("import shlex\nshlex.shlex('a')")[1].endswith(
            "AttributeError: shlex.shlex is not available in the sandbox"
        )


class TestEmailUtils:
    """RFC 2822 dates and addresses."""

    def test_dates(self) -> None:
        """Parsing an RSS pubDate, with and without a zone, and formatting back."""
        source = (
            "from email.utils import parsedate_to_datetime, parsedate_tz, format_datetime, "
            "formatdate\n"
            "d = parsedate_to_datetime('Tue, 01 Dec 2026 10:30:00 +0200')\n"
            "result = [d, parsedate_tz('Tue, 01 Dec 2026 10:30:00 GMT'), format_datetime(d),\n"
            "          formatdate(0, usegmt=True)]"
        )
        zone = datetime.timezone(datetime.timedelta(hours=2))
        assert value_of(source) == [
            datetime.datetime(2026, 12, 1, 10, 30, tzinfo=zone),
            (2026, 12, 1, 10, 30, 0, 0, 1, -1, 0),
            "Tue, 01 Dec 2026 10:30:00 +0200",
            "Thu, 01 Jan 1970 00:00:00 GMT",
        ]

    def test_addresses(self) -> None:
        """``parseaddr``, ``getaddresses`` and ``formataddr``."""
        source = (
            "import email.utils\n"
            "result = [email.utils.parseaddr('Ann Lee <ann@x.test>'),\n"
            "          email.utils.getaddresses(['a@x.test, Bob <b@y.test>', 'c@z.test']),\n"
            "          email.utils.formataddr(('Zoë', 'z@x.test'))]"
        )
        assert value_of(source) == [
            ("Ann Lee", "ann@x.test"),
            [("", "a@x.test"), ("Bob", "b@y.test"), ("", "c@z.test")],
            "=?utf-8?q?Zo=C3=AB?= <z@x.test>",
        ]

    def test_make_msgid_is_denied(self) -> None:
        """It asks the resolver for the host's name."""
        assert error_of("import email.utils\nemail.utils.make_msgid()")[1].endswith(
            "AttributeError: email.utils.make_msgid is not available in the sandbox"
        )

    def test_formataddr_encodes_with_utf8_only(self) -> None:
        """Another charset name would look codecs up."""
        source = "import email.utils\nemail.utils.formataddr(('Zoë', 'z@x.test'), 'latin-1')"
        assert error_of(source)[1].endswith(
            "ValueError: email.utils.formataddr() encodes names with UTF-8 only in the sandbox"
        )


class TestJsonClasses:
    """``JSONEncoder`` and ``JSONDecoder`` subclasses."""

    def test_an_encoder_for_dates_passed_as_cls(self) -> None:
        """``default`` is called for what JSON lacks; ``super().default`` refuses the rest."""
        source = (
            "import json, datetime\n"
            "class DateEncoder(json.JSONEncoder):\n"
            "    def default(self, o):\n"
            "        if isinstance(o, (datetime.date, datetime.datetime)):\n"
            "            return o.isoformat()\n"
            "        return super().default(o)\n"
            "text = json.dumps({'at': datetime.date(2026, 12, 2), 'n': [1]}, cls=DateEncoder)\n"
            "try:\n    json.dumps({1, 2}, cls=DateEncoder)\nexcept TypeError as e:\n"
            "    refused = str(e)\n"
            "result = [text, DateEncoder(indent=1).encode([1]), refused]"
        )
        assert value_of(source) == [
            '{"at": "2026-12-02", "n": [1]}',
            "[\n 1\n]",
            "Object of type set is not JSON serializable",
        ]

    def test_a_decoder_subclass_with_an_object_hook(self) -> None:
        """``json.loads(text, cls=...)`` and ``decode`` on the program's decoder."""
        source = (
            "import json\n"
            "class Pairs(json.JSONDecoder):\n"
            "    def __init__(self, **kw):\n"
            "        super().__init__(object_hook=self.hook, **kw)\n"
            "    def hook(self, d):\n        return sorted(d.items())\n"
            'result = [json.loads(\'{"b": 1, "a": 2}\', cls=Pairs), Pairs().decode(\'{"x": []}\')]'
        )
        assert value_of(source) == [[("a", 2), ("b", 1)], [("x", [])]]

    def test_the_encoders_indent_is_capped(self) -> None:
        """It is repeated at every level, as ``json.dumps``'s is."""
        assert error_of("import json\njson.JSONEncoder(indent=1000)") == (
            "resource_limit",
            "Resource limit in tester.run: json.JSONEncoder() indent 1000 exceeds the sandbox "
            "limit of 100",
        )
