"""Every served name of every allowed module imports, and the stand-ins work as the real ones do (ADR 0048)."""

from __future__ import annotations

import decimal

import pytest

from recurgent._sandbox import ALLOWED_MODULES
from recurgent._sandbox._catalog import CATALOG
from recurgent.errors import InvalidCodeError

from .support import error_of, value_of

_SERVED = [(module, name) for module in ALLOWED_MODULES for name in sorted(CATALOG[module].served)]
_DENIED = [(module, name) for module in ALLOWED_MODULES for name in sorted(CATALOG[module].denied)]

_ABSTRACT = "class S(ABC):\n    @abstractmethod\n    def f(self):\n        pass\ntry:\n    S()\n    result = 'made'\nexcept TypeError as error:\n    result = str(error)"
_ABSTRACT_REFUSAL = "Can't instantiate abstract class S with abstract method f"

# One use of every name the sandbox serves through a stand-in (replaced and attempt rows),
# with the value the real name gives. Pure names are the real objects themselves.
_USES: dict[tuple[str, str], tuple[str, object]] = {
    ("abc", "ABC"): ("class S(ABC):\n    pass\nresult = type(S()).__name__", "S"),
    ("abc", "abstractmethod"): (_ABSTRACT, _ABSTRACT_REFUSAL),
    ("calendar", "TextCalendar"): (
        "TextCalendar().formatmonth(2026, 2).splitlines()[1]",
        "Mo Tu We Th Fr Sa Su",
    ),
    ("calendar", "calendar"): ("calendar(2026).splitlines()[0].strip()", "2026"),
    ("calendar", "formatstring"): ("formatstring(['a', 'b'], 3, 1)", " a   b "),
    ("calendar", "month"): ("month(2026, 12).splitlines()[0].strip()", "December 2026"),
    ("calendar", "week"): ("week([(1, 0), (2, 1)], 2)", " 1  2"),
    ("calendar", "weekheader"): ("weekheader(2)", "Mo Tu We Th Fr Sa Su"),
    ("copy", "copy"): ("copy([1, [2]])", [1, [2]]),
    ("copy", "deepcopy"): ("deepcopy({'a': [1]})", {"a": [1]}),
    ("dataclasses", "Field"): ("[f for f in fields(P) if isinstance(f, Field)][0].name", "x"),
    ("dataclasses", "asdict"): ("asdict(P(1))", {"x": 1, "y": 2}),
    ("dataclasses", "astuple"): ("astuple(P(1))", (1, 2)),
    ("dataclasses", "dataclass"): ("repr(P(1))", "P(x=1, y=2)"),
    ("dataclasses", "field"): ("field(default=3).default", 3),
    ("dataclasses", "fields"): ("[f.name for f in fields(P)]", ["x", "y"]),
    ("dataclasses", "is_dataclass"): (
        "[is_dataclass(P), is_dataclass(P(1)), is_dataclass(1)]",
        [True, True, False],
    ),
    ("dataclasses", "replace"): ("replace(P(1), y=5).y", 5),
    ("decimal", "Context"): ("str(Context(prec=3).divide(1, 7))", "0.143"),
    ("fractions", "Decimal"): ("str(Decimal('0.5') * 2)", "1.0"),
    ("statistics", "Decimal"): ("str(Decimal(3) / 4)", "0.75"),
    ("statistics", "Fraction"): ("str(Fraction(1, 3) + Fraction(1, 6))", "1/2"),
    ("statistics", "correlation"): ("correlation([1, 2, 3], [2, 4, 6])", 1.0),
    ("statistics", "covariance"): ("covariance([1, 2, 3], [2, 4, 6])", 2.0),
    ("statistics", "fmean"): ("fmean([1, 2, 3, 4])", 2.5),
    ("statistics", "geometric_mean"): ("round(geometric_mean([1, 4]), 6)", 2.0),
    ("statistics", "harmonic_mean"): ("harmonic_mean([1, 1])", 1),
    ("statistics", "linear_regression"): (
        "tuple(linear_regression([1, 2, 3], [2, 4, 6]))",
        (2.0, 0.0),
    ),
    ("statistics", "mean"): ("mean([1, 2, 3, 4])", 2.5),
    ("statistics", "median"): ("median([3, 1, 2])", 2),
    ("statistics", "median_grouped"): ("median_grouped([1, 2, 2, 3])", 2.0),
    ("statistics", "median_high"): ("median_high([1, 2, 3, 4])", 3),
    ("statistics", "median_low"): ("median_low([1, 2, 3, 4])", 2),
    ("statistics", "mode"): ("mode([1, 2, 2, 3])", 2),
    ("statistics", "multimode"): ("multimode([1, 1, 2, 2, 3])", [1, 2]),
    ("statistics", "pstdev"): ("pstdev([2, 4, 4, 4, 5, 5, 7, 9])", 2.0),
    ("statistics", "pvariance"): ("pvariance([2, 4, 4, 4, 5, 5, 7, 9])", 4.0),
    ("statistics", "quantiles"): ("quantiles([1, 2, 3, 4, 5, 6, 7, 8], n=4)", [2.25, 4.5, 6.75]),
    ("statistics", "stdev"): ("stdev([1, 2, 3])", 1.0),
    ("statistics", "variance"): ("variance([1, 2, 3])", 1.0),
    ("re", "Match"): ("type(re_match('a', 'a')).__name__", "Match"),
    ("re", "Pattern"): ("type(re_compile('a')).__name__", "Pattern"),
    ("re", "compile"): ("compile(r'\\d+').findall('a1b22')", ["1", "22"]),
    ("re", "escape"): ("escape('a.b')", "a\\.b"),
    ("re", "error"): ("issubclass(error, Exception)", True),
    ("re", "findall"): ("findall(r'\\d', 'a1b2')", ["1", "2"]),
    ("re", "finditer"): ("[m.group() for m in finditer(r'\\d', 'a1b2')]", ["1", "2"]),
    ("re", "fullmatch"): ("fullmatch(r'a+', 'aaa').group()", "aaa"),
    ("re", "match"): ("match(r'(\\w+) (\\w+)', 'hello world').groups()", ("hello", "world")),
    ("re", "search"): ("search(r'\\d+', 'ab12c').span()", (2, 4)),
    ("re", "split"): ("split(r',\\s*', 'a, b,c')", ["a", "b", "c"]),
    ("xml.etree.ElementTree", "indent"): (
        "e = fromstring('<a><b/></a>')\nindent(e)\nresult = tostring(e).decode()",
        "<a>\n  <b />\n</a>",
    ),
    ("xml.etree.ElementTree", "tostring"): (
        "result = tostring(fromstring('<a k=\"&quot;\">&amp;é</a>'))",
        b'<a k="&quot;">&amp;&#233;</a>',
    ),
    ("xml.etree.ElementTree", "tostringlist"): (
        "result = b''.join(tostringlist(fromstring('<a><b/></a>'), 'utf-8'))",
        b"<a><b /></a>",
    ),
    ("collections", "UserString"): (
        "u = UserString(['a', 1])\n"
        "result = [str(u), type(u) is UserString, isinstance(u, UserString), str(u.upper())]",
        ["['a', 1]", True, True, "['A', 1]"],
    ),
    ("decimal", "Decimal"): ("str(Decimal('1.10') + Decimal('2.20'))", "3.30"),
    ("decimal", "getcontext"): ("getcontext().prec", 28),
    ("decimal", "localcontext"): ("with localcontext(prec=2) as c:\n    result = c.prec", 2),
    ("decimal", "setcontext"): ("setcontext(Context(prec=5))", None),
    ("difflib", "SequenceMatcher"): ("SequenceMatcher(None, 'abcd', 'bcde').ratio()", 0.75),
    ("difflib", "context_diff"): ("len(list(context_diff(['a'], ['b'])))", 7),
    ("difflib", "get_close_matches"): (
        "get_close_matches('appel', ['apple', 'ape'])",
        ["apple", "ape"],
    ),
    ("difflib", "ndiff"): ("list(ndiff(['a'], ['b']))", ["- a", "+ b"]),
    ("difflib", "unified_diff"): ("len(list(unified_diff(['a'], ['b'])))", 5),
    ("enum", "Enum"): ("class C(Enum):\n    A = 1\nresult = C(1).name", "A"),
    ("enum", "IntEnum"): ("class C(IntEnum):\n    A = 1\nresult = C.A + 1", 2),
    ("enum", "StrEnum"): ("class C(StrEnum):\n    A = 'a'\nresult = C.A.upper()", "A"),
    ("enum", "auto"): ("class C(Enum):\n    A = auto()\n    B = auto()\nresult = C.B.value", 2),
    ("enum", "unique"): ("@unique\nclass C(Enum):\n    A = 1\nresult = len(C)", 1),
    ("fractions", "Fraction"): ("str(Fraction(1, 3) + Fraction(1, 6))", "1/2"),
    ("functools", "cache"): ("cache(lambda x: x * 2)(4)", 8),
    ("functools", "lru_cache"): ("lru_cache(maxsize=2)(lambda x: x + 1)(4)", 5),
    ("functools", "total_ordering"): ("total_ordering.__name__", "total_ordering"),
    ("functools", "wraps"): ("wraps.__name__", "wraps"),
    ("hashlib", "new"): ("new('sha256', b'a').hexdigest()[:8]", "ca978112"),
    ("hashlib", "pbkdf2_hmac"): ("len(pbkdf2_hmac('sha256', b'p', b's', 2))", 32),
    ("itertools", "accumulate"): ("list(accumulate([1, 2, 3]))", [1, 3, 6]),
    ("itertools", "chain"): (
        "list(chain.from_iterable([[1], [2, 3]])) + list(chain([4]))",
        [1, 2, 3, 4],
    ),
    ("itertools", "combinations"): ("len(list(combinations('abc', 2)))", 3),
    ("itertools", "combinations_with_replacement"): (
        "len(list(combinations_with_replacement('ab', 2)))",
        3,
    ),
    ("itertools", "compress"): ("list(compress('abc', [1, 0, 1]))", ["a", "c"]),
    ("itertools", "count"): ("next(count(5))", 5),
    ("itertools", "cycle"): ("next(cycle('ab'))", "a"),
    ("itertools", "dropwhile"): ("list(dropwhile(lambda x: x < 2, [1, 2, 1]))", [2, 1]),
    ("itertools", "filterfalse"): ("list(filterfalse(None, [0, 1]))", [0]),
    ("itertools", "groupby"): ("[k for k, _ in groupby('aab')]", ["a", "b"]),
    ("itertools", "islice"): ("list(islice('abcd', 2))", ["a", "b"]),
    ("itertools", "pairwise"): ("list(pairwise([1, 2, 3]))", [(1, 2), (2, 3)]),
    ("itertools", "permutations"): ("len(list(permutations('abc')))", 6),
    ("itertools", "product"): ("len(list(product('ab', repeat=2)))", 4),
    ("itertools", "repeat"): ("list(repeat(1, 2))", [1, 1]),
    ("itertools", "starmap"): ("list(starmap(max, [(1, 2)]))", [2]),
    ("itertools", "takewhile"): ("list(takewhile(lambda x: x < 2, [1, 2]))", [1]),
    ("itertools", "tee"): ("[list(t) for t in tee([1], 2)]", [[1], [1]]),
    ("itertools", "zip_longest"): ("list(zip_longest([1], [], fillvalue=0))", [(1, 0)]),
    ("json", "dump"): ("dump.__name__", "dump"),
    ("json", "dumps"): ("dumps({'a': 1}, indent=1)", '{\n "a": 1\n}'),
    ("math", "comb"): ("comb(5, 2)", 10),
    ("math", "factorial"): ("factorial(5)", 120),
    ("math", "lcm"): ("lcm(4, 6)", 12),
    ("math", "gcd"): ("gcd(12, 18, 30)", 6),
    ("math", "floor"): ("floor(-2.5)", -3),
    ("math", "ceil"): ("ceil(-2.5)", -2),
    ("math", "trunc"): ("trunc(-2.5)", -2),
    ("math", "isqrt"): ("isqrt(99)", 9),
    ("math", "perm"): ("perm(5, 2)", 20),
    ("math", "prod"): ("prod([2, 3, 4])", 24),
    ("operator", "add"): ("add([1], [2])", [1, 2]),
    ("operator", "attrgetter"): ("attrgetter('real', 'imag')(3)", (3, 0)),
    ("operator", "concat"): ("concat('a', 'b')", "ab"),
    ("operator", "floordiv"): ("floordiv(-7, 2)", -4),
    ("operator", "iadd"): ("iadd([1], (2,))", [1, 2]),
    ("operator", "iconcat"): ("iconcat([1], (2,))", [1, 2]),
    ("operator", "ifloordiv"): ("ifloordiv(9, 4)", 2),
    ("operator", "ilshift"): ("ilshift(1, 3)", 8),
    ("operator", "imod"): ("imod(7, 3)", 1),
    ("operator", "imul"): ("imul(3, 4)", 12),
    ("operator", "ipow"): ("ipow(2, 5)", 32),
    ("operator", "lshift"): ("lshift(1, 4)", 16),
    ("operator", "methodcaller"): ("methodcaller('split', ',')('a,b')", ["a", "b"]),
    ("operator", "mod"): ("mod(7, 4)", 3),
    ("operator", "mul"): ("mul('ab', 2)", "abab"),
    ("operator", "pow"): ("pow(3, 3)", 27),
    ("pprint", "pformat"): ("pformat({'b': 1, 'a': 2})", "{'a': 2, 'b': 1}"),
    ("random", "Random"): ("Random(4).randint(1, 1)", 1),
    ("random", "betavariate"): ("0 <= betavariate(1, 1) <= 1", True),
    ("random", "choice"): ("choice([7])", 7),
    ("random", "choices"): ("choices([7], k=2)", [7, 7]),
    ("random", "expovariate"): ("expovariate(1) >= 0", True),
    ("random", "gammavariate"): ("gammavariate(1, 1) >= 0", True),
    ("random", "gauss"): ("type(gauss()).__name__", "float"),
    ("random", "getrandbits"): ("getrandbits(3) < 8", True),
    ("random", "lognormvariate"): ("lognormvariate(0, 1) > 0", True),
    ("random", "normalvariate"): ("type(normalvariate()).__name__", "float"),
    ("random", "paretovariate"): ("paretovariate(1) >= 1", True),
    ("random", "randbytes"): ("len(randbytes(3))", 3),
    ("random", "randint"): ("randint(2, 2)", 2),
    ("random", "random"): ("0 <= random() < 1", True),
    ("random", "randrange"): ("randrange(1)", 0),
    ("random", "sample"): ("sample([5], 1)", [5]),
    ("random", "seed"): ("seed(1)", None),
    ("random", "shuffle"): ("shuffle([1])", None),
    ("random", "triangular"): ("0 <= triangular(0, 1) <= 1", True),
    ("random", "uniform"): ("2 <= uniform(2, 3) <= 3", True),
    ("random", "vonmisesvariate"): ("vonmisesvariate(0, 1) >= 0", True),
    ("random", "weibullvariate"): ("weibullvariate(1, 1) >= 0", True),
    ("re", "sub"): ("sub('a', 'b', 'aa')", "bb"),
    ("re", "subn"): ("subn('a', 'b', 'aa')", ("bb", 2)),
    ("secrets", "randbits"): ("randbits(2) < 4", True),
    ("secrets", "token_bytes"): ("len(token_bytes(4))", 4),
    ("secrets", "token_hex"): ("len(token_hex(4))", 8),
    ("secrets", "token_urlsafe"): ("type(token_urlsafe(4)).__name__", "str"),
    ("string", "Template"): ("Template('$a!').substitute(a='hi')", "hi!"),
    ("textwrap", "fill"): ("fill('a b c', width=3)", "a b\nc"),
    ("textwrap", "indent"): ("indent('a\\nb', '> ')", "> a\n> b"),
    ("textwrap", "wrap"): ("wrap('a b c', width=3)", ["a b", "c"]),
    ("time", "sleep"): ("sleep(0)", None),
    ("time", "strptime"): ("list(strptime('2026-12-02', '%Y-%m-%d'))[:3]", [2026, 12, 2]),
    ("time", "strftime"): ("strftime('%Y-%m-%d', (2026, 12, 5, 0, 0, 0, 5, 339, 0))", "2026-12-05"),
    ("html", "escape"): (
        "escape('<a href=\"x\">&</a>')",
        "&lt;a href=&quot;x&quot;&gt;&amp;&lt;/a&gt;",
    ),
    ("csv", "Sniffer"): ("Sniffer().sniff('a;b;c\\n1;2;3\\n').delimiter", ";"),
    ("html.parser", "HTMLParser"): (
        "p = HTMLParser(convert_charrefs=True)\np.feed('<b>x</b>')\nresult = p.rawdata",
        "",
    ),
    ("typing", "abstractmethod"): (_ABSTRACT, _ABSTRACT_REFUSAL),
    ("unicodedata", "normalize"): ("normalize('NFC', 'e\\u0301')", "\u00e9"),
    ("xml.etree.ElementTree", "QName"): ("str(QName('urn:x', 'tag'))", "{urn:x}tag"),
    ("zoneinfo", "ZoneInfo"): (
        "z = ZoneInfo('UTC')\nresult = [str(z), isinstance(z, ZoneInfo), type(z) is ZoneInfo]",
        ["UTC", True, True],
    ),
    ("urllib.error", "HTTPError"): ("issubclass(HTTPError, URLError)", True),
    ("urllib.error", "URLError"): ("URLError('down').reason", "down"),
    ("urllib.request", "HTTPError"): ("HTTPError.__name__", "HTTPError"),
    ("urllib.request", "Request"): ("Request.__name__", "Request"),
    ("urllib.request", "URLError"): ("URLError.__name__", "URLError"),
    ("urllib.request", "urlopen"): ("urlopen.__name__", "urlopen"),
    ("xml.etree.ElementTree", "ElementTree"): (
        "ElementTree(fromstring('<a/>')).getroot().tag",
        "a",
    ),
    ("xml.etree.ElementTree", "parse"): (
        "parse(io.StringIO('<r><b/></r>')).getroot()[0].tag",
        "b",
    ),
    # ADR 0104, 0105.
    ("contextlib", "suppress"): (
        "with suppress(KeyError):\n    {}['x']\nresult = 'passed'",
        "passed",
    ),
    ("contextlib", "closing"): (
        "s = io.StringIO('x')\nwith closing(s) as held:\n    held.read()\nresult = s.closed",
        True,
    ),
    ("shlex", "split"): ("split('a \"b c\" d')", ["a", "b c", "d"]),
    ("shlex", "quote"): ('quote("it\'s")', "'it'\"'\"'s'"),
    ("shlex", "join"): ("join(['a', 'b c'])", "a 'b c'"),
    ("email.utils", "getaddresses"): (
        "getaddresses(['Ann <ann@x.test>, bob@y.test'])",
        [("Ann", "ann@x.test"), ("", "bob@y.test")],
    ),
    ("email.utils", "formataddr"): ("formataddr(('Ann', 'ann@x.test'))", "Ann <ann@x.test>"),
    ("email.utils", "quote"): ("quote('a\"b')", 'a\\"b'),
    ("urllib.parse", "quote"): ("quote('a b/é')", "a%20b/%C3%A9"),
    ("urllib.parse", "quote_plus"): ("quote_plus('a b/é')", "a+b%2F%C3%A9"),
    ("urllib.parse", "urlencode"): ("urlencode({'q': 'a b', 'n': 1})", "q=a+b&n=1"),
    ("json", "JSONEncoder"): (
        "JSONEncoder(sort_keys=True).encode({'b': 1, 'a': [2]})",
        '{"a": [2], "b": 1}',
    ),
    ("json", "JSONDecoder"): (
        "JSONDecoder().decode('{\"a\": [1, 2.5, null]}')",
        {"a": [1, 2.5, None]},
    ),
    ("typing", "is_typeddict"): (
        "class M(TypedDict):\n    a: int\nresult = [is_typeddict(M), is_typeddict(dict)]",
        [True, False],
    ),
    ("typing", "runtime_checkable"): (
        "@runtime_checkable\nclass Named(Protocol):\n    name: str\n"
        "class P:\n    def __init__(self):\n        self.name = 'p'\n"
        "result = [isinstance(P(), Named), isinstance(1, Named)]",
        [True, False],
    ),
}

_DATACLASS = (
    "from dataclasses import dataclass, fields\n@dataclass\nclass P:\n    x: int\n    y: int = 2\n"
)
_EXTRA_IMPORTS = {
    ("enum", "auto"): "from enum import Enum\n",
    ("enum", "unique"): "from enum import Enum\n",
    **{
        ("dataclasses", name): _DATACLASS
        for name in (
            "Field",
            "asdict",
            "astuple",
            "dataclass",
            "fields",
            "is_dataclass",
            "replace",
        )
    },
    ("abc", "abstractmethod"): "from abc import ABC\n",
    ("typing", "abstractmethod"): "from abc import ABC\n",
    ("contextlib", "closing"): "import io\n",
    ("typing", "is_typeddict"): "from typing import TypedDict\n",
    ("typing", "runtime_checkable"): "from typing import Protocol\n",
    ("decimal", "setcontext"): "from decimal import Context\n",
    ("re", "Match"): "from re import match as re_match\n",
    ("re", "Pattern"): "from re import compile as re_compile\n",
    ("xml.etree.ElementTree", "indent"): "from xml.etree.ElementTree import fromstring, tostring\n",
    ("xml.etree.ElementTree", "tostring"): "from xml.etree.ElementTree import fromstring\n",
    ("xml.etree.ElementTree", "tostringlist"): "from xml.etree.ElementTree import fromstring\n",
    ("urllib.error", "HTTPError"): "from urllib.error import URLError\n",
    ("xml.etree.ElementTree", "ElementTree"): "from xml.etree.ElementTree import fromstring\n",
    ("xml.etree.ElementTree", "parse"): "import io\n",
}


class TestEveryServedNameImports:
    """``from module import name`` works for every name the catalog serves."""

    @pytest.mark.parametrize(("module", "name"), _SERVED, ids=[f"{m}.{n}" for m, n in _SERVED])
    def test_served_name_imports_and_reports_its_type(self, module: str, name: str) -> None:
        """The import binds the name, and asking its type works (a read through the policy)."""
        source = f"from {module} import {name}\nresult = type({name}).__name__ != ''"
        assert value_of(source) is True

    @pytest.mark.parametrize(("module", "name"), _DENIED, ids=[f"{m}.{n}" for m, n in _DENIED])
    def test_denied_name_fails_with_the_reason(self, module: str, name: str) -> None:
        """``from module import denied`` names the module, the name and the reason."""
        if name == "builtins":
            # A reserved name: refused when the program is compiled, before any import.
            with pytest.raises(InvalidCodeError, match='"builtins" is a reserved name'):
                error_of(f"from {module} import {name}")
            return
        assert error_of(f"from {module} import {name}") == (
            "execution",
            f"Execution error in tester.run: ImportError: cannot import name {name!r} from "
            f"{module!r}: {module}.{name} is not available in the sandbox",
        )


class TestStandInsWorkAsTheRealOnes:
    """Each replaced or per-attempt name has one use that returns what the real name returns."""

    def test_every_stand_in_has_a_use(self) -> None:
        """The table below covers exactly the replaced and attempt rows of the catalog."""
        stand_ins = {
            (module, name)
            for module, rows in CATALOG.items()
            for name in set(rows.replaced) | rows.attempt
        }
        assert sorted(stand_ins ^ set(_USES)) == []

    @pytest.mark.parametrize(
        ("module", "name"), sorted(_USES), ids=[f"{m}.{n}" for m, n in sorted(_USES)]
    )
    def test_one_use_works(self, module: str, name: str) -> None:
        """The use gives the value the real standard-library name gives."""
        expression, expected = _USES[(module, name)]
        source = _EXTRA_IMPORTS.get((module, name), "") + f"from {module} import {name}\n"
        # A use with a statement in it sets result itself.
        body = expression if "\n" in expression else f"result = {expression}"
        assert value_of(source + body) == expected


class TestIdiomsFromTheIssue:
    """The programs issue 13 measured as failing now run as they do outside the sandbox."""

    def test_chain_from_iterable_flattens(self) -> None:
        """``list(chain.from_iterable(lists))`` flattens, and the helper is sealed."""
        source = (
            "from itertools import chain\n"
            "lists = [[1, 2], [], [3]]\n"
            "result = [list(chain.from_iterable(lists)), type(chain.from_iterable).__name__]"
        )
        assert value_of(source) == [[1, 2, 3], "function"]

    def test_attrgetter_reads_the_programs_objects(self) -> None:
        """``attrgetter`` follows dotted paths on the program's own objects."""
        source = (
            "from operator import attrgetter\n"
            "class P:\n"
            "    def __init__(self, name, inner=None):\n"
            "        self.name = name\n"
            "        self.inner = inner\n"
            "people = [P('b', P('x')), P('a', P('y'))]\n"
            "result = [p.name for p in sorted(people, key=attrgetter('name'))] + "
            "[attrgetter('inner.name')(people[0])]"
        )
        assert value_of(source) == ["a", "b", "x"]

    @pytest.mark.parametrize(
        "source",
        [
            "from operator import attrgetter\nresult = attrgetter('__globals__')(len)",
            "from operator import attrgetter\nresult = attrgetter('_sealed_call')(len)",
            "from operator import methodcaller\nresult = methodcaller('__reduce_ex__', 2)(len)",
            "from operator import attrgetter\nresult = attrgetter('__self__')(print)",
        ],
    )
    def test_attrgetter_reads_nothing_generated_code_cannot(self, source: str) -> None:
        """Private names stay private through ``attrgetter`` and ``methodcaller``."""
        error_type, message = error_of(source)
        assert (error_type, "is not accessible" in message) == ("execution", True)

    def test_decimal_context_changes_apply_inside_the_attempt(self) -> None:
        """``getcontext().prec`` and ``localcontext`` change arithmetic in the program."""
        source = (
            "from decimal import Decimal, getcontext, localcontext\n"
            "getcontext().prec = 6\n"
            "a = str(Decimal(1) / Decimal(7))\n"
            "with localcontext() as ctx:\n"
            "    ctx.prec = 3\n"
            "    b = str(Decimal(1) / Decimal(7))\n"
            "result = [a, b, str(Decimal(1) / Decimal(7))]"
        )
        assert value_of(source) == ["0.142857", "0.143", "0.142857"]

    def test_decimal_context_never_leaks(self) -> None:
        """A change to the context is gone for the host and for the next attempt."""
        before = decimal.getcontext().prec
        value_of("from decimal import getcontext\ngetcontext().prec = 5")
        following = value_of("from decimal import getcontext\nresult = getcontext().prec")
        assert (decimal.getcontext().prec, following) == (before, 28)

    def test_a_suspended_localcontext_does_not_leak(self) -> None:
        """A generator left inside ``localcontext`` does not change the host's context."""
        before = decimal.getcontext().prec
        source = (
            "from decimal import localcontext\n"
            "def g():\n"
            "    with localcontext(prec=4):\n"
            "        yield 1\n"
            "it = g()\n"
            "next(it)\n"
            "keep = [it]"
        )
        value_of(source)
        assert decimal.getcontext().prec == before

    def test_a_local_context_cannot_be_built_around_another_context(self) -> None:
        """``type()`` of the ``localcontext()`` manager is sealed: it constructs nothing."""
        assert error_of("from decimal import localcontext\nresult = type(localcontext())(5)") == (
            "execution",
            "Execution error in tester.run: TypeError: _LocalContext objects cannot be created "
            "by generated code",
        )

    def test_decimal_precision_is_capped(self) -> None:
        """A precision whose arithmetic would run for minutes in C is refused."""
        assert error_of("from decimal import getcontext\ngetcontext().prec = 10**5") == (
            "resource_limit",
            "Resource limit in tester.run: decimal precision 100000 exceeds the sandbox "
            "limit of 1000",
        )
