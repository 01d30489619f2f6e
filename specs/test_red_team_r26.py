"""Red team R26: ADR 0151's counted encodings and escapes, ADR 0152's in-place nesting and the
worker's lone-surrogate fallback, attacked as a generated program (or an escaped worker) would.

Attacked: every path to ``str.encode``/``bytes.decode`` (bound, unbound, ``getattr``,
``methodcaller``, ``attrgetter``, ``functools.partial``, ``map``, ``type('')``, a program's str
subclass and its ``super().encode``, ``bytes()``, ``bytearray()``, ``str(data, ...)``,
``UserString.encode``) and the library functions that encode for the program; the step path
against one native call for every text codec in ``encodings.aliases``; the escape counting of
``repr``/``ascii``/``!r``/``!a``/``%r``/``%a``/``str.format`` for containers and wrappers; the
nesting cap for values written into memory; ``parse_line``'s surrogate fallback; the
wrapped-stop rule.

Held (pinned here): each encode/decode form above is checked (the ``str.encode`` ones refused
at 11 403 264 items for a million U+FBF9 under ``namereplace``); the step path gives the same
bytes, text and error messages as one call for every text codec and handler sampled; a program
cannot catch the attempt's stop or make its own exception read as one; NaN, duplicate keys and
a surrogate in a key parse alike on ``parse_line``'s fast path and its fallback.

Broken, and fixed:

- **UTF-7 decoded past the cap in one call.** ``checked_decode`` converted the whole-input
  codecs natively, "at most one character per byte"; ``errors="backslashreplace"`` writes four
  for each byte UTF-7 refuses: nine million bytes of ``b"\\x80"`` made 36 000 000 characters
  (1.2 s), as ``bytes.decode``, ``bytearray.decode`` and ``str(data, 'utf-7', ...)``. Fixed in
  ``_encodings.checked_decode``: another handler than a plain one is bounded by four characters
  a byte there (refused at 36 000 000 before it is built).
- **``urllib.parse`` encoded uncounted.** ``quote``/``quote_plus``/``urlencode`` take
  ``encoding`` and ``errors`` and call ``str.encode`` in library code: a million U+FBF9 quoted
  with ``errors='namereplace'`` and ``safe='\\\\{} '`` returned 87 000 000 characters in 0.46 s
  (ADR 0151's 870 MB case for ten million). Fixed: the three are stand-ins
  (``_stdlib_idioms.urllib_parse_overrides``) that encode through ``checked_encode`` and hand
  the bytes to the library (``urlencode``'s default ``quote_via`` is the checked
  ``quote_plus``); results are the library's.
- **``ascii()`` of a container counted non-ASCII text as its length.** ``ascii(['é' * 9e6])``,
  ``f'{[s]!a}'`` and ``'%a' % ([s],)`` wrote 36 000 004 characters (``\\xe9``; six for BMP
  text, ten for astral). Fixed in ``_text_size``: ``estimated_text(ascii_only=True)`` counts a
  non-ASCII string by its widest character (4, 6 or 10 a character); ``%r`` alone is now
  counted as ``repr`` (``_sizes._check_percent``), not by the ascii bound.
- **``UserString``/``UserList``/``UserDict`` text uncounted.** Their ``__repr__`` is
  ``repr(self.data)`` in library code, estimated as a small object: ``repr(UserString('\\x00' *
  9e6))`` wrote 36 000 002 characters, ``str(UserList([s] * 100))`` of a million-character
  ``s`` 100 000 400, ``repr(UserDict(...))`` 100 000 405. Fixed in ``_text_size``: the
  wrappers are walked as a container of their data (``_WRAPPED``, ``_wrapped_data``).
- **Memory's own value nested past the cap.** ``rebuild`` returned an object memory already
  held (``resolve``) without counting its levels: ``context['k'] = [[...60 levels...
  [context['k']]]]`` grew memory by 60 levels a call (180 after three, 360 after six; the
  seventh write and every read of the key then failed with ``RecursionError``, ADR 0152's
  symptom through another door); appending ``context['a']`` at the innermost list of
  ``context['b']`` stored 121 levels, and doing it again stored a cycle. Fixed in ``_boundary._Rebuilder.value`` (``_deeper_than``): placed below the top, memory's
  value is refused when its own levels pass the cap.
- **The surrogate fallback let a deep line through, then the parent recursed.** pydantic's
  parser refuses nesting past 200 (a ``ValueError``: a broken worker). With a ``\\ud`` escape
  in the line, ``json.loads`` accepted 900 levels, and ``from_wire`` of that value raises
  ``RecursionError``, which ``ProcessExecutor``'s answer handling does not catch; at 100 000
  levels ``parse_line`` itself raised ``RecursionError``, which ``WorkerProcess.receive`` does
  not turn into ``WorkerExited``, so the run escaped as a raw exception and the worker was not
  discarded (read from the code; ``worker_crash`` was the answer before). Fixed in
  ``_worker/_protocol.parse_line``: the fallback refuses what the fast path refuses (past 200
  levels, or past ``json``'s recursion limit) with a ``ValueError``.
- **``bytes.hex(sep)`` uncounted** (found on the way, not today's change): three characters a
  byte in one call, 26 999 999 from nine million bytes. Fixed: ``hex`` of bytes and bytearray
  is in the checked-method table (``_checked_methods._bind_hex``) and ``SPECIAL_ATTRIBUTES``.
- **``json`` wrote one string's escapes uncounted** (found on the way): the sandbox's encoder
  counts pieces after they are built, and ``encode_basestring_ascii`` writes a string in one C
  call, twelve characters for an astral one: 108 000 002 written for nine million before the
  refusal (six a character for controls). Fixed: ``_stdlib_text.checked_iterencode`` (used by
  ``json.dumps`` and the sandbox's ``JSONEncoder``) bounds a long string by measuring it in
  steps of 65 536 first.

Nothing left open. Fixed after the red team: ``ElementTree.tostring``'s escapes (45 000 007
characters from nine million ``&``) are counted a node at a time first (ADR 0153); a
``UserString`` subclass whose ``data`` is a property (36 000 002 characters from ``repr``) and
``UserString(x)`` converting a shared list in its ``__init__`` (100 000 400 characters): the
wrappers' text is built from one checked read of ``data``, and ``UserString(seq)`` checks
``seq``'s text first (ADR 0155, ``_user_wrappers``); a part shared inside one fresh value,
counted where first reached (a 1 020-level path stored in one write), now counts its own levels
wherever it is reached again (ADR 0156: each rebuilt part keeps its height; memory's own value
is measured by its longest path; ``TestSharedPartsKeepTheirLevels``).
"""

from __future__ import annotations

import codecs
import collections
import encodings.aliases
import json.encoder as json_encoder
import random
from collections.abc import Callable
from typing import Any

import pytest

from recurgent import _levels
from recurgent._journal import Journal
from recurgent._sandbox import SandboxLimits, _encodings, _measure, rebuild
from recurgent._sandbox._encodings import checked_decode, checked_encode
from recurgent._sandbox._inbound import inbound
from recurgent._worker._protocol import parse_line
from recurgent.errors import NonSerializableResultError
from specs.sandbox.support import (
    error_of,
    execute,
    nested_lists,
    probe_agent,
    result_in_python,
    value_of,
)

_LIMIT = "the sandbox limit is 10000000"


def _refusal(what: str, items: int) -> tuple[str, str]:
    return (
        "resource_limit",
        f"Resource limit in tester.run: {what} would create {items} items; {_LIMIT}",
    )


# --- Encodings --------------------------------------------------------------------------------

_NAMED = "s = chr(0xFBF9) * 10**6\n"  # 87 bytes each under namereplace


class TestEveryEncodePathIsChecked:
    """Held: each way a program reaches ``str.encode`` is refused past the cap."""

    @pytest.mark.parametrize(
        "call",
        [
            "list(map(str.encode, [s], ['ascii'], ['namereplace']))[0]",
            "functools.partial(str.encode, encoding='ascii', errors='namereplace')(s)",
            "type('').encode(s, 'ascii', 'namereplace')",
            "operator.attrgetter('encode')(s)('ascii', 'namereplace')",
            "getattr(str, 'encode')(s, 'ascii', 'namereplace')",
            "S(s).encode('ascii', 'namereplace')",
            "T(s).encode('ascii', 'namereplace')",
        ],
    )
    def test_refused(self, call: str) -> None:
        """Refused at the first step past the cap: 11 403 264 bytes counted."""
        source = (
            "import functools, operator\n"
            "class S(str):\n    pass\n"
            "class T(str):\n    def encode(self, *a):\n        return super().encode(*a)\n"
            + _NAMED
            + f"result = {call}"
        )
        assert error_of(source) == _refusal("str.encode", 11403264)


class TestUtf7Decoding:
    """Fixed: UTF-7 (a whole-input codec) decoded under an expanding handler is bounded."""

    @pytest.mark.parametrize(
        ("call", "what"),
        [
            ("b.decode('utf-7', 'backslashreplace')", "bytes.decode"),
            ("bytearray(b).decode('utf_7', errors='backslashreplace')", "bytes.decode"),
            ("str(b, 'U7', 'backslashreplace')", "str()"),
        ],
    )
    def test_refused_before_it_is_built(self, call: str, what: str) -> None:
        """Nine million refused bytes, four characters each: refused at 36 000 000 (the call
        returned 36 000 000 characters before)."""
        source = f"b = b'\\x80' * 9 * 10**6\nresult = len({call})"
        assert error_of(source) == _refusal(what, 36000000)

    def test_what_fits_is_pythons(self) -> None:
        """A plain handler still decodes natively (one character a byte), and a short input
        under backslashreplace is Python's own text."""
        assert value_of(
            "b = b'\\x80' * 2 * 10**6\n"
            "result = [len(b.decode('utf-7', 'replace')), b'+AOk-\\x80'.decode('utf-7', "
            "'backslashreplace')]"
        ) == [2_000_000, "é\\x80"]


def _text_codecs() -> list[str]:
    names = set(encodings.aliases.aliases.values()) | {"utf_8_sig", "raw_unicode_escape"}
    kept = []
    for name in sorted(names):
        try:
            info = codecs.lookup(name)
        except LookupError:
            continue
        if getattr(info, "_is_text_encoding", True):
            kept.append(name)
    return kept


def _outcome(call: Callable[..., Any], *args: Any) -> tuple[str, Any]:
    try:
        return ("ok", call(*args))
    except Exception as error:
        return (type(error).__name__, str(error))


class TestStepsAreOneCall:
    """Held: by steps of seven, every text codec in ``encodings.aliases`` gives one native
    call's bytes, text and error messages."""

    def test_every_text_codec(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Random text (lone surrogates included) and random bytes, several handlers: no
        difference in any codec (108 codecs on Python 3.11)."""
        monkeypatch.setattr(_encodings, "_STEP", 7)
        monkeypatch.setattr(_encodings, "MAX_ITEMS", 10**6)
        monkeypatch.setattr(_measure, "MAX_ITEMS", 10**6)
        monkeypatch.setattr(_encodings, "_MOST_BYTES_PER_CHARACTER", 10**4)
        monkeypatch.setattr(_encodings, "_MOST_CHARACTERS_PER_BYTE", 10**4)
        monkeypatch.setattr(_encodings, "_PLAIN_CODECS", frozenset())
        rng = random.Random(26)
        pool = ["a", "é", "あ", "\U0001f600", "\n", "'", "+", "-", "\\", "€", "\x00", "\ud800"]
        differ = []
        for name in _text_codecs():
            for _ in range(3):
                text = "".join(rng.choice(pool) for _ in range(rng.randint(0, 40)))
                data = bytes(rng.randrange(256) for _ in range(rng.randint(0, 40)))
                for errors in ("strict", "backslashreplace", "xmlcharrefreplace"):
                    native = _outcome(str.encode, text, name, errors)
                    if native != _outcome(checked_encode, text, name, errors):
                        differ.append(("encode", name, errors))
                for errors in ("strict", "replace", "backslashreplace"):
                    native = _outcome(bytes.decode, data, name, errors)
                    if native != _outcome(checked_decode, data, name, errors):
                        differ.append(("decode", name, errors))
        assert differ == []


class TestUrlQuoting:
    """Fixed: ``urllib.parse`` encodes a program's text through the checked ``str.encode``."""

    @pytest.mark.parametrize(
        ("call", "what"),
        [
            ("quote(s, safe='\\\\{} ', encoding='ascii', errors='namereplace')", "quote()"),
            (
                "quote_plus(s, safe='\\\\{}', encoding='ascii', errors='namereplace')",
                "quote_plus()",
            ),
            (
                "urlencode({'a': s}, safe='\\\\{} ', encoding='ascii', errors='namereplace')",
                "quote_plus()",
            ),
        ],
    )
    def test_refused(self, call: str, what: str) -> None:
        """A million U+FBF9 under namereplace: refused at 11 403 264 bytes (87 000 000
        characters were returned before)."""
        source = "from urllib.parse import quote, quote_plus, urlencode\n" + _NAMED
        assert error_of(source + f"result = len({call})") == _refusal(
            f"urllib.parse.{what}", 11403264
        )

    def test_results_are_the_librarys(self) -> None:
        """The stand-ins answer as the library does, its errors included."""
        assert value_of(
            "from urllib.parse import quote, quote_plus, urlencode\n"
            "result = [quote('a b/é€'), quote_plus('a b/é', safe='/'), quote(b'a b'), quote(''),\n"
            "    urlencode({'k': 'a b&é', 'n': 3}), urlencode([('a', ['x y', 'z'])], doseq=True),\n"
            "    quote('é', encoding='latin-1'), urlencode({'a': 'é b'}, quote_via=quote),\n"
            "    quote_plus(b'a b+'), urlencode({b'k': b'v w'}, encoding='ascii')]"
        ) == [
            "a%20b/%C3%A9%E2%82%AC",
            "a+b/%C3%A9",
            "a%20b",
            "",
            "k=a+b%26%C3%A9&n=3",
            "a=x+y&a=z",
            "%E9",
            "a=%C3%A9%20b",
            "a+b%2B",
            "k=v+w",
        ]
        assert error_of(
            "import urllib.parse\nresult = urllib.parse.quote(b'a', encoding='utf-8')"
        ) == (
            "execution",
            "Execution error in tester.run: TypeError: quote() doesn't support 'encoding' for bytes",
        )


# --- Escapes --------------------------------------------------------------------------------


class TestAsciiOfContainers:
    """Fixed: ``ascii`` of a container counts non-ASCII text by its escapes."""

    @pytest.mark.parametrize(
        ("source", "what", "items"),
        [
            ("s = 'é' * 9 * 10**6\nresult = len(ascii([s]))", "ascii()", 36000012),
            ("s = '中' * 2 * 10**6\nresult = len(f'{[s]!a}')", "an f-string", 12000016),
            ("s = 'é' * 9 * 10**6\nresult = len('%a' % ([s],))", "%-formatting", 36000014),
            ("s = 'é' * 9 * 10**6\nresult = len('{!a}'.format([s]))", "str.format", 36000012),
        ],
    )
    def test_refused(self, source: str, what: str, items: int) -> None:
        """Refused before the text is written (36 000 004 characters were written before)."""
        assert error_of(source) == _refusal(what, items)

    def test_what_fits_is_pythons(self) -> None:
        """Two million 'é' fit (8 000 004 characters), and ``%r`` alone counts as ``repr``: nine
        million 'é' in a list, 9 000 004 characters."""
        assert value_of(
            "s = 'é' * 2 * 10**6\nt = 'é' * 9 * 10**6\n"
            "result = [len(ascii([s])), len(ascii((s,))), len(ascii({s: 1})), len('%r' % ([t],)),\n"
            "          ascii(['é', '中', '\\U0001f600'])]"
        ) == [8000004, 8000005, 8000007, 9000004, "['\\xe9', '\\u4e2d', '\\U0001f600']"]


class TestLibraryWrappers:
    """Fixed: ``UserString``/``UserList``/``UserDict`` print their data, counted first."""

    @pytest.mark.parametrize(
        ("source", "what", "items"),
        [
            ("u = UserString('\\x00' * 9 * 10**6)\nresult = len(repr(u))", "repr()", 10223618),
            (
                "u = UserString('\\x00' * 9 * 10**6)\nresult = len(f'{u!r}')",
                "an f-string",
                10223618,
            ),
            ("u = UserString('é' * 3 * 10**6)\nresult = len(ascii(u))", "ascii()", 10223618),
            ("u = UserString('\\x00' * 9 * 10**6)\nresult = len(repr([u]))", "repr()", 90000106),
            ("u = UserList(['a' * 10**6] * 100)\nresult = len(str(u))", "str()", 100000484),
            ("u = UserDict({1: ['a' * 10**6] * 100})\nresult = len(repr(u))", "repr()", 100000410),
            (
                "u = UserList(['a' * 10**6] * 100)\nresult = len(f'{u}')",
                "converting a container to text",
                100000484,
            ),
        ],
    )
    def test_refused(self, source: str, what: str, items: int) -> None:
        """Refused before the text is written (36 million to 100 million characters before)."""
        prefix = "from collections import UserString, UserList, UserDict\n"
        assert error_of(prefix + source) == _refusal(what, items)

    def test_what_fits_is_pythons(self) -> None:
        """Nested and cyclic wrappers print as Python prints them."""
        assert value_of(
            "from collections import UserString, UserList, UserDict\n"
            "v = UserString(UserString('x'))\n"
            "l = UserList([1, 'a', v])\nl.append(l)\nd = UserDict(a=l)\n"
            "result = [repr(v), ascii([v]), str(v), f'{v!a}', '%r' % v, str(l), repr(d),\n"
            "          len(repr(UserString('\\x00' * 10**6)))]"
        ) == [
            "'x'",
            "['x']",
            "x",
            "'x'",
            "'x'",
            "[1, 'a', 'x', [...]]",
            "{'a': [1, 'a', 'x', [...]]}",
            4000002,
        ]

    def test_a_data_property(self) -> None:
        """Nine million NULs behind a property: 36 000 002 characters written before; refused
        now, from the one read of ``data`` the checked ``repr`` makes."""
        error_type, _ = error_of(
            "import collections\nBIG = '\\x00' * 9 * 10**6\n"
            "class U(collections.UserString):\n"
            "    def __init__(self):\n        pass\n"
            "    @property\n    def data(self):\n        return BIG\n"
            "result = len(repr(U()))"
        )
        assert error_type == "resource_limit"

    def test_construction_from_a_shared_list(self) -> None:
        """``UserString(['a' * 10**6] * 100)``: 100 000 400 characters built before; refused
        now, as ``str()`` of the list is."""
        assert error_of(
            "import collections\nresult = len(collections.UserString(['a' * 10**6] * 100))"
        ) == _refusal("UserString()", 100000402)

    def test_the_served_class_is_seen_as_the_real_one(self) -> None:
        """``collections.UserString`` is a checked stand-in; a class pattern, a tuple of classes,
        comparison, hashing, sorting and a program's subclass's own methods see it and its
        instances as plain Python does."""
        source = (
            "from collections import UserString\n"
            "def m(x):\n    match x:\n        case UserString():\n            return 'matched'\n"
            "        case _:\n            return 'no'\n"
            "class U(UserString):\n    def shout(self):\n        return self.upper() + '!'\n"
            "u = U('hi')\n"
            "result = [m(u), m(UserString('b')), m('c'), isinstance(u, (UserString, int)),\n"
            "          str(u.shout()), type(u.shout()).__name__, UserString.__name__,\n"
            "          repr(UserString), sorted([UserString('b'), UserString('a')])[0] == 'a',\n"
            "          hash(UserString('x')) == hash('x'), U('a') < U('b')]\n"
        )
        plain = result_in_python(source)
        assert value_of(source) == plain
        assert plain == [
            "matched",
            "matched",
            "no",
            True,
            "HI!",
            "U",
            "UserString",
            "<class 'collections.UserString'>",
            True,
            True,
            True,
        ]

    @pytest.mark.parametrize(
        "kind",
        [
            "type(collections.UserString('a'))",
            "collections.UserString('a').__class__",
            "collections.UserString.mro()[0]",
            "U.mro()[2]",
        ],
    )
    def test_every_way_to_the_class_constructs_checked(self, kind: str) -> None:
        """``type()``, ``__class__`` and ``mro()`` (of the class or of a program's subclass,
        whose ``mro()`` held the library's class) hand out the checked class."""
        assert error_of(
            "import collections\nclass U(collections.UserString):\n    pass\n"
            f"kind = {kind}\nresult = len(kind(['a' * 10**6] * 100))"
        ) == _refusal("UserString()", 100000402)


_DATA_PROPERTY = (
    "import collections\n"
    "class {name}(collections.{base}):\n"
    "    def __init__(self, *args):\n        self.reads = 0\n"
    "    @property\n    def data(self):\n        self.reads += 1\n"
    "        return {small} if self.reads == 1 else {large}\n"
)


class TestWrapperDataReadOnce:
    """Fixed after the red team (ADR 0155): a wrapper whose ``data`` is the program's code is
    read once by each method that builds text or a repetition from it, and what it builds is
    checked from that read. Before, ``repr``/``str`` of such a wrapper wrote what the data
    held unestimated, and ``*`` and ``%`` were checked on one read and built from another."""

    @pytest.mark.parametrize(
        ("source", "what", "items"),
        [
            (
                _DATA_PROPERTY.format(name="L", base="UserList", small="BIG", large="BIG")
                + "BIG = ['a' * 10**6] * 100\nresult = len(repr(L()))",
                "repr()",
                100000402,
            ),
            (
                _DATA_PROPERTY.format(name="D", base="UserDict", small="BIG", large="BIG")
                + "BIG = {1: ['a' * 10**6] * 100}\nresult = len(repr(D()))",
                "repr()",
                100000410,
            ),
            (
                _DATA_PROPERTY.format(name="U", base="UserString", small="BIG", large="BIG")
                + "BIG = ['a' * 10**6] * 100\nresult = len(str(U()))",
                "str()",
                100000402,
            ),
            (
                # Checked on the first read ('a', a thousand of it), built from the second.
                _DATA_PROPERTY.format(name="U", base="UserString", small="'a'", large="'a' * 10**6")
                + "result = len(U() * 1000)",
                "sequence repetition",
                1000000000,
            ),
            (
                _DATA_PROPERTY.format(
                    name="U", base="UserString", small="'%(a)s'", large="'%(a)s' * 10**5"
                )
                + "result = len(U() % {'a': 'x' * 10**4})",
                "%-formatting",
                1000500000,
            ),
            (
                _DATA_PROPERTY.format(name="L", base="UserList", small="[0]", large="[0] * 10**6")
                + "l = L()\nl *= 1000\nresult = 0",
                "sequence repetition",
                1000000000,
            ),
            (
                "import collections\nclass U(collections.UserString):\n"
                "    data = '\\x00' * 9 * 10**6\n    def __init__(self):\n        pass\n"
                "result = len(repr([U()]))",
                "repr()",
                10223618,
            ),
        ],
        ids=[
            "UserList-repr",
            "UserDict-repr",
            "UserString-str",
            "mul",
            "mod",
            "imul",
            "class-data",
        ],
    )
    def test_refused_from_the_one_read(self, source: str, what: str, items: int) -> None:
        """A property answering large (``repr``/``str``: estimated as a small object before),
        one answering small to the check and large to the library (``*``, ``%``, ``*=``), and a
        class attribute ``data`` inside a list: refused as what the one read would build (from
        10 223 618 to a billion items)."""
        assert error_of(source) == _refusal(what, items)

    def test_a_programs_override_reaches_the_checked_method(self) -> None:
        """``super().__repr__()`` and ``super().__init__(seq)`` in the program's own methods
        reach the checked ones: the checked class sits between the program's and the
        library's."""
        base = (
            "import collections\nBIG = ['a' * 10**6] * 100\n"
            "class U(collections.UserString):\n"
            "    def __init__(self, seq):\n        super().__init__(seq)\n"
            "    def __repr__(self):\n        return super().__repr__()\n"
        )
        assert error_of(base + "result = len(U(BIG))") == _refusal("UserString()", 100000402)
        assert error_of(base + "u = U('a')\nu.data = BIG\nresult = len(repr(u))") == _refusal(
            "repr()", 100000402
        )

    @pytest.mark.parametrize(
        ("source", "what"),
        [
            (
                "class U(collections.UserString):\n    pass\n"
                "result = len(U('a') + ['a' * 10**6] * 100)",
                "UserString concatenation",
            ),
            (
                "class U(collections.UserString):\n    pass\n"
                "result = len(['a' * 10**6] * 100 + U('a'))",
                "UserString concatenation",
            ),
            ("result = len(['a' * 10**6] * 100 % collections.UserString('x'))", "%-formatting"),
        ],
        ids=["add", "radd", "rmod"],
    )
    def test_an_operand_converted_to_text_is_checked_first(self, source: str, what: str) -> None:
        """``UserString``'s ``+`` and ``%`` (the sandbox's stand-in for ``__rmod__``) ran
        ``str()`` of a shared list, 100 000 400 characters built before the refusal (``+`` of a
        program's subclass: never refused). Its text is estimated first now."""
        assert error_of("import collections\n" + source) == _refusal(what, 100000402)

    def test_what_fits_is_pythons(self) -> None:
        """Within the cap, the wrappers answer as in plain Python: a small data property's
        ``repr``/``str``/``ascii``/``*``/``%`` (each read once), the program's class kept by
        ``*``, ``%``, ``*=`` and ``+`` (of text, a list and a tuple), ``%`` of a list,
        ``UserString`` of a small list, a tuple and a ``UserString``, and a ``UserString`` as
        ``type()``, ``isinstance`` and a class-level method see it."""
        source = (
            "import collections\n"
            "class P(collections.UserString):\n"
            "    def __init__(self):\n        self.reads = 0\n"
            "    @property\n    def data(self):\n        self.reads += 1\n"
            "        return 'é%s'\n"
            "class U(collections.UserString):\n    pass\n"
            "class L(collections.UserList):\n    pass\n"
            "class D(collections.UserDict):\n    pass\n"
            "p = P()\n"
            "shown = [repr(p), str(p), ascii(p), f'{p!r}', repr([p]), p.reads]\n"
            "u = U('a%s')\nl = L([1, 'b'])\nl *= 2\n"
            "built = [repr(u * 2), type(u * 2).__name__, repr(2 * u), str(u % 'z'),\n"
            "         type(u % 'z').__name__, repr(l), type(l).__name__, repr(l * 2),\n"
            "         type(2 * l).__name__, repr(D(a=[1])), str(D(a=1)), str(u + [1]),\n"
            "         str((1,) + u), type(u + 'b').__name__, str(['%s'] % U('x'))]\n"
            "s = collections.UserString(['a', 1])\n"
            "made = [str(s), repr(s), str(collections.UserString((1, 2))),\n"
            "        str(collections.UserString(s)), str(U(['x'])), type(s).__name__,\n"
            "        type(s) is collections.UserString, isinstance(u, collections.UserString),\n"
            "        issubclass(U, collections.UserString), str(type(s)(3)),\n"
            "        str(collections.UserString.upper(s))]\n"
            "result = [shown, built, made]\n"
        )
        plain = result_in_python(source)
        assert value_of(source) == plain
        assert plain == [
            ["'é%s'", "é%s", "'\\xe9%s'", "'é%s'", "['é%s']", 5],
            [
                "'a%sa%s'",
                "U",
                "'a%sa%s'",
                "az",
                "U",
                "[1, 'b', 1, 'b']",
                "L",
                "[1, 'b', 1, 'b', 1, 'b', 1, 'b']",
                "L",
                "{'a': [1]}",
                "{'a': 1}",
                "a%s[1]",
                "(1,)a%s",
                "U",
                "['x']",
            ],
            [
                "['a', 1]",
                "\"['a', 1]\"",
                "(1, 2)",
                "['a', 1]",
                "['x']",
                "UserString",
                True,
                True,
                True,
                "3",
                "['A', 1]",
            ],
        ]


# --- Nesting ----------------------------------------------------------------------------------


def _depth(value: Any) -> int:
    depth = 0
    while isinstance(value, list) and value:
        value, depth = value[-1], depth + 1
    return depth


class TestMemorysOwnValueKeepsItsLevels:
    """Fixed: a value memory holds, placed below the top, counts its own levels."""

    def test_appended_at_the_innermost_list(self) -> None:
        """Memory's 60-level ``a`` appended at the innermost of 60-level ``b``: refused (121
        levels were stored, and the same write a second time made a cycle)."""
        journal = Journal({"a": nested_lists(60), "b": nested_lists(60)})
        view = journal.view
        innermost = view["b"]
        for _ in range(60):
            innermost = innermost[0]
        innermost.append(view["a"])
        with pytest.raises(NonSerializableResultError, match="nested more than 64 levels deep"):
            journal.prepare(rebuild)

    def test_within_the_cap_commits(self) -> None:
        """Memory's 2-level list appended at level 60 (63 below the top): committed, shared."""
        memory: dict[str, Any] = {"a": nested_lists(2), "b": nested_lists(60)}
        journal = Journal(memory)
        view = journal.view
        innermost = view["b"]
        for _ in range(60):
            innermost = innermost[0]
        innermost.append(view["a"])
        journal.prepare(rebuild).apply(memory)
        innermost = memory["b"]
        for _ in range(60):
            innermost = innermost[0]
        assert (_depth(memory["b"]), innermost[-1] is memory["a"]) == (63, True)

    def test_a_cyclic_value_still_commits(self) -> None:
        """Memory's cyclic list placed two levels down: committed as memory's own object (the
        count walks each part once)."""
        cyclic: list[Any] = [1]
        cyclic.append(cyclic)
        memory: dict[str, Any] = {"a": cyclic}
        journal = Journal(memory)
        view = journal.view
        view["b"] = [[view["a"]]]
        journal.prepare(rebuild).apply(memory)
        assert memory["b"][0][0] is cyclic

    def test_wrapping_memorys_value_each_call(self) -> None:
        """``context['k'] = [[...[context['k']]...]]``: the first call stores 60 levels, the
        second is refused and memory keeps 60 (after six calls the key was unreadable before)."""
        agent = probe_agent(
            {
                "grow": "y = context.get('k', [])\nfor _ in range(60):\n    y = [y]\n"
                "context['k'] = y\nreturn 1",
            }
        )
        first, second = agent.grow(), agent.grow()
        assert (first.status, second.error_type) == ("ok", "non_serializable_result")
        assert "is nested more than 64 levels deep" in (second.error_message or "")
        assert _depth(agent.runtime_context["k"]) == 60

    def test_a_part_shared_deeper_in_one_value(self) -> None:
        """Thirty rounds of ``x = [x, <33 levels ending in x>]``: refused (a path 1 020 levels
        long was stored when a shared part counted where it was first reached)."""
        agent = probe_agent(
            {
                "grow": "x = []\nfor k in range(30):\n    c = []\n    inner = c\n"
                "    for _ in range(32):\n        n = []\n        inner.append(n)\n"
                "        inner = n\n    inner.append(x)\n    x = [x, c]\n"
                "context['k'] = x\nreturn 1",
            }
        )
        assert agent.grow().error_type == "non_serializable_result"


def _wrapped(part: Any, levels: int) -> list[Any]:
    """``part`` at the bottom of ``levels`` lists, each holding the next: ``[[...[part]...]]``."""
    top: list[Any] = [part]
    for _ in range(levels - 1):
        top = [top]
    return top


def _unwrapped(value: Any, levels: int) -> Any:
    """What ``_wrapped`` put ``levels`` lists down."""
    for _ in range(levels):
        value = value[0]
    return value


def _placed(part: Any, levels: int) -> Any:
    """``[part, <levels lists ending in part>]`` rebuilt: the rebuilt value, or "refused" when the
    nesting cap refuses it."""
    try:
        return rebuild([part, _wrapped(part, levels)], "the value")
    except NonSerializableResultError as error:
        assert "is nested more than 64 levels deep" in str(error)
        return "refused"


_DEEP_TWICE = (
    "p = []\ninner = p\nfor _ in range(40):\n    n = []\n    inner.append(n)\n    inner = n\n"
)


class TestSharedPartsKeepTheirLevels:
    """Fixed after the red team: a part reached again deeper counts its own levels from there
    (each rebuilt part keeps its height), in every path that rebuilds a written value."""

    def test_the_boundary_counts_a_part_again_where_it_sits_deeper(self) -> None:
        """A 40-level part reached at level 1 and again at level 31 (71 levels below the top):
        refused, naming the deeper place (stored before: the part counted at level 1)."""
        part = nested_lists(40)
        with pytest.raises(
            NonSerializableResultError,
            match=r"the value\[1\](\[0\]){30} is nested more than 64 levels deep",
        ):
            rebuild([part, _wrapped(part, 30)], "the value")

    def test_a_part_reached_again_at_the_cap_is_kept_once_past_it_refused(self) -> None:
        """The 40-level part again at level 24 ends at level 64: rebuilt, one object in both
        places; at level 25 it would end at 65: refused."""
        part = nested_lists(40)
        fits = _placed(part, 23)
        assert (_unwrapped(fits[1], 23) is fits[0], fits[0] == part, _placed(part, 24)) == (
            True,
            True,
            "refused",
        )

    @pytest.mark.timeout(30)
    def test_a_dag_of_tuples_is_rebuilt_once_a_part(self) -> None:
        """Sixty levels of ``t = (t, t)`` over a list: rebuilt in one visit a tuple, each level
        one tuple shared by both halves as in the original (each path was copied: 2**24 copies
        took 54 s after a one-second deadline, and 2**60 would never end)."""
        value: Any = ["leaf"]
        for _ in range(60):
            value = (value, value)
        built = rebuild(value, "the result")
        shared = []
        for _ in range(60):
            shared.append(type(built) is tuple and built[0] is built[1] and built is not value)
            built, value = built[0], value[0]
        assert (shared, built, built is value) == ([True] * 60, ["leaf"], False)

    @pytest.mark.timeout(30)
    def test_a_dag_of_tuples_from_another_agent_is_copied_once_a_part(self) -> None:
        """The same sixty levels as a value from another agent (a child's answer), copied for
        the program by ``_inbound``: one visit a tuple, each level shared by both halves, the
        list at the bottom a copy (each path was copied: the attempt's deadline ended the copy,
        so a value the boundary now keeps could not be received)."""
        value: Any = ["leaf"]
        for _ in range(60):
            value = (value, value)
        copied = inbound(value, lambda _: None)
        shared = []
        for _ in range(60):
            shared.append(type(copied) is tuple and copied[0] is copied[1])
            copied, value = copied[0], value[0]
        assert (shared, copied, copied is value) == ([True] * 60, ["leaf"], False)

    @pytest.mark.timeout(30)
    def test_a_big_tuple_placed_many_times_is_rebuilt_once(self) -> None:
        """A 100 000-int tuple placed 10 000 times: rebuilt once, one object in every place
        (each place copied it again: 10**9 items, minutes outside the deadline)."""
        value = tuple(range(100_000))
        built = rebuild([value] * 10_000, "the result")
        assert (built[0] == value, all(item is built[0] for item in built)) == (True, True)

    def test_a_program_sharing_one_part_many_times_within_the_cap_commits(self) -> None:
        """A 40-level part written 1 000 times at level 2 and once at level 23, and a tuple
        written twice: committed, plain Python's value, each shared part one object in memory
        (the tuple was two copies)."""
        source = (
            _DEEP_TWICE + "pair = (p, 'x')\n"
            "x = {'many': [p] * 1000, 'deep': [[[[[[[[[[[[[[[[[[[[[[p]]]]]]]]]]]]]]]]]]]]]],"
            " 'pairs': [pair, pair]}\n"
        )
        agent = probe_agent({"grow": source + "context['k'] = x\nreturn 1"})
        assert agent.grow().status == "ok"
        stored = agent.runtime_context["k"]
        part = stored["many"][0]
        assert (
            stored == result_in_python(source + "result = x"),
            all(item is part for item in stored["many"]),
            _unwrapped(stored["deep"], 22) is part,
            stored["pairs"][0] is stored["pairs"][1],
            stored["pairs"][0][0] is part,
        ) == (True, True, True, True, True)

    def test_the_journals_in_place_append_counts_from_memorys_top(self) -> None:
        """Appended at the innermost list of memory's 10-level ``b`` (level 11): the 40-level
        part again 20 lists down is refused (72 levels); 10 lists down (62) commits, shared."""

        def append(levels: int) -> Any:
            memory: dict[str, Any] = {"b": nested_lists(10)}
            journal = Journal(memory)
            part = nested_lists(40)
            _unwrapped(journal.view["b"], 10).append([part, _wrapped(part, levels)])
            try:
                journal.prepare(rebuild).apply(memory)
            except NonSerializableResultError as error:
                return str(error).split(";")[0]
            written = _unwrapped(memory["b"], 10)[-1]
            return _unwrapped(written[1], levels) is written[0]

        assert (append(20), append(10)) == (
            "context['b']" + "[0]" * 11 + "[1]" + "[0]" * 20 + " is nested more than 64 "
            "levels deep",
            True,
        )

    def test_a_host_objects_new_attribute_counts_from_memorys_top(self) -> None:
        """A ``UserList`` memory holds, its ``data`` set to the 40-level part at level 2 and
        again 30 lists down (72 levels): refused through the host kind's patch
        (``_journal._core._fresh``); 20 lists down (62) commits, shared."""

        def set_data(levels: int) -> Any:
            memory: dict[str, Any] = {"u": collections.UserList([1])}
            journal = Journal(memory)
            part = nested_lists(40)
            journal.view["u"].data = [part, _wrapped(part, levels)]
            try:
                journal.prepare(rebuild).apply(memory)
            except NonSerializableResultError as error:
                return str(error).split(";")[0]
            data = memory["u"].data
            return _unwrapped(data[1], levels) is data[0]

        assert (set_data(30), set_data(20)) == (
            "context['u'].data[1]" + "[0]" * 30 + " is nested more than 64 levels deep",
            True,
        )

    def test_memorys_value_placed_in_many_patched_items_is_measured_once(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Memory's list appended 500 times to another list memory holds: each appended item is
        rebuilt by a call of its own, and the list's levels are measured once for the commit
        (each call walked it again: a thousand appends of a 100 000-item list took 6 s past a
        one-second deadline); every item is memory's own object."""
        walked: list[int] = []
        parts = _levels.parts  # what _boundary names _parts

        def counted(node: Any) -> Any:
            walked.append(id(node))
            return parts(node)

        monkeypatch.setattr("recurgent._sandbox._boundary._parts", counted)
        held = [[i] for i in range(100)]
        memory: dict[str, Any] = {"big": held, "items": []}
        journal = Journal(memory)
        view = journal.view
        view["items"].extend([view["big"]] * 500)
        journal.prepare(rebuild).apply(memory)
        assert (walked.count(id(held)), len(memory["items"])) == (1, 500)
        assert all(item is held for item in memory["items"])

    def test_memorys_own_value_counts_its_longest_path(self) -> None:
        """Memory's ``a`` holds a 30-level part at level 1 and again 20 lists down: 51 levels
        below it, though every part is first reached within 31. Placed at level 21 (72):
        refused; at level 13 (64): committed as memory's own object (counted before by the
        shortest way to each part, so 52 at level 21)."""

        def place(levels: int) -> Any:
            part = nested_lists(30)
            held = [part, _wrapped(part, 20)]
            memory: dict[str, Any] = {"a": held, "b": nested_lists(levels - 1)}
            journal = Journal(memory)
            view = journal.view
            _unwrapped(view["b"], levels - 1).append(view["a"])
            try:
                journal.prepare(rebuild).apply(memory)
            except NonSerializableResultError as error:
                return str(error).split(";")[0]
            return _unwrapped(memory["b"], levels - 1)[-1] is held

        assert (place(21), place(13)) == (
            "context['b']" + "[0]" * 20 + "[0] is nested more than 64 levels deep",
            True,
        )


# --- The worker's surrogate fallback ----------------------------------------------------------


def _result_line(value: bytes, stdout: bytes = b"x") -> bytes:
    return (
        b'{"kind":"result","call_id":"c","status":"ok","value":'
        + value
        + b',"stdout":"'
        + stdout
        + b'"}'
    )


def _nested(levels: int) -> Any:
    value: Any = "v"
    for _ in range(levels):
        value = [value]
    return value


def _parsed(line: bytes) -> str:
    """What ``parse_line`` makes of ``line``: the status and value it read, or how it failed."""
    try:
        message = parse_line(line)
    except ValueError:
        return "refused"
    except RecursionError:
        return "RecursionError"
    return repr((message.status, message.value))


class TestSurrogateFallback:
    """The fallback validates as the fast path does."""

    @pytest.mark.parametrize("levels", [199, 200, 900, 100_000])
    def test_nesting_is_refused_alike(self, levels: int) -> None:
        """Fixed: 199 levels (200 with the message) parse on both paths; deeper is a
        ``ValueError`` on both (the fallback took 900 levels, and raised ``RecursionError`` at
        100 000)."""
        value = b"[" * levels + b'"v"' + b"]" * levels
        plain = _parsed(_result_line(value))
        surrogate = _parsed(_result_line(value, b"\\udce9"))
        expected = "refused" if levels >= 200 else repr(("ok", _nested(levels)))
        assert (plain, surrogate) == (expected, expected)

    @pytest.mark.parametrize(
        ("value", "expected"),
        [
            (b"NaN", "('ok', nan)"),
            (b"1e400", "('ok', inf)"),
            (b'{"k":1,"k":2}', "('ok', {'k': 2})"),
            (b'{"\\udce9":1}', "('ok', {'\\udce9': 1})"),
        ],
    )
    def test_odd_json_reads_alike(self, value: bytes, expected: str) -> None:
        """Held: NaN, an overflowing float, a duplicate key (the last wins) and a surrogate key
        read the same on either path (the stdout differs only by its escape)."""
        plain = _parsed(_result_line(value))
        surrogate = _parsed(_result_line(value, b"\\udce9"))
        assert (plain, surrogate) == (expected, expected)


# --- The wrapped-stop rule --------------------------------------------------------------------


class TestStopsCannotBeForged:
    """Held: only a stop reads as a stop."""

    def test_the_stop_cannot_be_caught(self) -> None:
        """``except BaseException`` around a loop still ends the attempt at its deadline."""
        result = execute(
            "try:\n    while True:\n        pass\nexcept BaseException as e:\n"
            "    result = repr(type(e))",
            limits=SandboxLimits(timeout_seconds=0.3),
        )
        assert (result.error is not None and result.error.error_type, result.value) == (
            "timeout",
            None,
        )

    def test_a_programs_cause_is_its_own_error(self) -> None:
        """An exception raised from a ``TimeoutError`` or a ``MemoryError`` is an execution
        error with the program's own text."""
        assert error_of("raise ValueError('x') from TimeoutError('y')") == (
            "execution",
            "Execution error in tester.run: ValueError: x",
        )
        assert error_of("raise MemoryError('m') from MemoryError('n')") == (
            "execution",
            "Execution error in tester.run: MemoryError: m",
        )


# --- Left: library C calls bounded only by the memory cap -------------------------------------


class TestElementTreeWritesCounted:
    """Fixed after the red team (ADR 0153): ``ElementTree.tostring``/``tostringlist`` escape in
    one C call per text (``&amp;`` for ``&``) and write what the encoding cannot hold as a
    character reference (``us-ascii`` by default): counted a node at a time first."""

    @pytest.mark.parametrize(
        ("source", "what"),
        [
            (
                "e.text = '&' * 9 * 10**6\nresult = len(ET.tostring(e, encoding='unicode'))",
                "ElementTree.tostring()",
            ),
            (
                "e.set('k', '\"' * 2 * 10**6)\nresult = len(ET.tostringlist(e, 'unicode'))",
                "ElementTree.tostringlist()",
            ),
            ("e.text = 'é' * 2 * 10**6\nresult = len(ET.tostring(e))", "ElementTree.tostring()"),
            (
                "for i in range(1000):\n    ET.SubElement(e, 'b').text = '<' * 3000\n"
                "result = len(ET.tostring(ET.ElementTree(e), 'unicode'))",
                "ElementTree.tostring()",
            ),
        ],
    )
    def test_refused_before_written(self, source: str, what: str) -> None:
        """Nine million ``&`` (45 million characters written before), two million quotes in an
        attribute, two million ``é`` under the default ``us-ascii`` (``&#233;``), a thousand
        children of escaped text: refused as the operation that would write them."""
        error_type, message = error_of(
            "import xml.etree.ElementTree as ET\ne = ET.Element('a')\n" + source
        )
        assert (error_type, message.startswith(f"Resource limit in tester.run: {what} would")) == (
            "resource_limit",
            True,
        )

    def test_what_fits_is_the_librarys(self) -> None:
        """Within the cap, the text and bytes are ElementTree's own (the same calls outside
        the sandbox); the ``text`` method writes text unescaped, counted so (nine million
        ``&`` fit)."""
        build = (
            "e = ET.Element('a', k='\"x\"')\ne.text = 'é & <b>'\nET.SubElement(e, 'c').tail = 'z'\n"
            "big = ET.Element('t')\nbig.text = '&' * 9 * 10**6\n"
            "plain = len(ET.tostring(big, 'unicode', method='text'))\n"
            "result = [plain, ET.tostring(e, 'unicode'), ET.tostring(e).decode(),\n"
            "          ET.tostring(e, 'unicode', xml_declaration=True), len(ET.tostringlist(e))]\n"
        )
        source = "import xml.etree.ElementTree as ET\n" + build
        plain = result_in_python(source)
        assert value_of(source) == plain
        assert plain[:2] == [9_000_000, '<a k="&quot;x&quot;">é &amp; &lt;b&gt;<c />z</a>']


class TestHexWithASeparator:
    """Fixed: ``bytes.hex`` is served checked (two characters a byte, three with a separator)."""

    @pytest.mark.parametrize(
        ("source", "items"),
        [
            ("b = b'\\x00' * 9 * 10**6\nresult = len(b.hex(':'))", 27000000),
            ("b = bytearray(b'\\x00' * 4 * 10**6)\nresult = len(b.hex(':', 2))", 12000000),
            ("b = b'\\x00' * 6 * 10**6\nresult = len(getattr(b, 'hex')())", 12000000),
        ],
    )
    def test_refused(self, source: str, items: int) -> None:
        """Refused before it is written (26 999 999 characters from nine million bytes before)."""
        assert error_of(source) == _refusal("bytes.hex", items)

    def test_what_fits_is_pythons(self) -> None:
        """Separators, groups from either end and float's own ``hex`` answer as Python's."""
        assert value_of(
            "result = [b'ab'.hex(), b'abc'.hex('-'), bytearray(b'abcd').hex(':', 2),\n"
            "          b'abcd'.hex(sep='_', bytes_per_sep=-3), (1.5).hex()]"
        ) == ["6162", "61-62-63", "6162:6364", "616263_64", "0x1.8000000000000p+0"]


class TestJsonStrings:
    """Fixed: each string is bounded before ``encode_basestring(_ascii)`` writes it."""

    @pytest.mark.parametrize(
        "call",
        [
            "json.dumps([chr(0x1F600) * 9 * 10**6])",
            "json.JSONEncoder().encode({'k': chr(0x1F600) * 9 * 10**6})",
            "json.dumps('\\x00' * 9 * 10**6, ensure_ascii=False)",
        ],
    )
    def test_refused_before_it_is_written(self, call: str, monkeypatch: pytest.MonkeyPatch) -> None:
        """Refused at 10 223 618 (13 steps of 786 432 characters), no piece past the cap written
        (108 000 002 characters were written for one string before)."""
        written: list[int] = []
        for name in ("encode_basestring_ascii", "encode_basestring"):
            real = getattr(json_encoder, name)

            def recording(text: str, real: Callable[[str], str] = real) -> str:
                piece = real(text)
                written.append(len(piece))
                return piece

            monkeypatch.setattr(json_encoder, name, recording)
        refusal = error_of(f"import json\nresult = len({call})")
        assert (refusal, max(written) <= 10**6) == (_refusal("json.dumps()", 10223618), True)

    def test_what_fits_is_pythons(self) -> None:
        """Floats, NaN, escapes, keys and ``ensure_ascii=False`` as Python writes them."""
        assert value_of(
            "import json\ns = chr(0x1F600) * 8 * 10**5\n"
            "result = [len(json.dumps([s])), len(json.JSONEncoder().encode({s: s[:10]})),\n"
            "    json.dumps({'a': [1.5, float('nan'), 'é\\n\"', None, True]}),\n"
            "    json.dumps('é', ensure_ascii=False)]"
        ) == [9600004, 9600128, '{"a": [1.5, NaN, "\\u00e9\\n\\"", null, true]}', '"é"']
        assert error_of("import json\nresult = json.dumps(float('inf'), allow_nan=False)") == (
            "execution",
            "Execution error in tester.run: ValueError: Out of range float values are not JSON "
            "compliant: inf",
        )
