"""Python the model actually writes runs unchanged in the sandbox, with the exact plain-Python value."""

from __future__ import annotations

from .support import value_of

RSS = """<?xml version="1.0"?>
<rss version="2.0"><channel><title>News</title>
<item><title>First &amp; best</title><link>http://example.test/1</link></item>
<item><title>Second</title><link>http://example.test/2</link></item>
</channel></rss>"""


class TestAugmentedAssignment:
    """Augmented assignment to items and attributes."""

    def test_item_augmented_assignment(self) -> None:
        """``counts[k] += 1`` counts words."""
        source = """
counts = {}
for word in "a b a c a b".split():
    counts[word] = counts.get(word, 0)
    counts[word] += 1
result = counts
"""
        assert value_of(source) == {"a": 3, "b": 2, "c": 1}

    def test_attribute_augmented_assignment(self) -> None:
        """``obj.total += x`` on an instance of a generated class."""
        source = """
class Tally:
    def __init__(self):
        self.total = 0
t = Tally()
for x in [1, 2, 3]:
    t.total += x
result = t.total
"""
        assert value_of(source) == 6

    def test_name_augmented_operators(self) -> None:
        """``+=``, ``*=``, ``**=``, ``//=``, ``%=`` and ``-=`` on names."""
        assert value_of("x = 3\nx += 2\nx *= 4\nx **= 2\nx //= 3\nx %= 7\nx -= 1\nresult = x") == -1


class TestClasses:
    """Classes the model defines, with the dunder methods it uses."""

    def test_init_sets_attributes(self) -> None:
        """``__init__`` setting ``self.x`` and a method reading it."""
        source = """
class Point:
    def __init__(self, x, y):
        self.x = x
        self.y = y
    def norm2(self):
        return self.x ** 2 + self.y ** 2
result = Point(3, 4).norm2()
"""
        assert value_of(source) == 25

    def test_repr_str_eq_len_iter(self) -> None:
        """``__repr__``, ``__str__``, ``__eq__``, ``__len__`` and ``__iter__`` are honoured."""
        source = """
class Bag:
    def __init__(self, *items):
        self.items = list(items)
    def __repr__(self):
        return f"Bag({self.items!r})"
    def __str__(self):
        return "bag of " + str(len(self))
    def __eq__(self, other):
        return isinstance(other, Bag) and self.items == other.items
    def __len__(self):
        return len(self.items)
    def __iter__(self):
        return iter(self.items)
b = Bag(1, 2)
result = [repr(b), str(b), b == Bag(1, 2), len(b), list(b), f"{b}"]
"""
        assert value_of(source) == ["Bag([1, 2])", "bag of 2", True, 2, [1, 2], "bag of 2"]

    def test_custom_exception_with_super_init(self) -> None:
        """A generated exception class calling ``super().__init__``."""
        source = """
class FetchError(Exception):
    def __init__(self, url):
        super().__init__(f"cannot fetch {url}")
        self.url = url
try:
    raise FetchError("http://x")
except FetchError as e:
    result = [str(e), e.url, type(e).__name__]
"""
        assert value_of(source) == ["cannot fetch http://x", "http://x", "FetchError"]

    def test_inheritance_and_super_method(self) -> None:
        """A subclass overriding a method and calling the parent's through ``super()``."""
        source = """
class Base:
    def greet(self):
        return "hi"
class Loud(Base):
    def greet(self):
        return super().greet().upper() + "!"
result = Loud().greet()
"""
        assert value_of(source) == "HI!"

    def test_with_on_a_generated_context_manager(self) -> None:
        """``with`` calls ``__enter__`` and ``__exit__`` of a generated class."""
        source = """
log = []
class Section:
    def __enter__(self):
        log.append("enter")
        return self
    def __exit__(self, *exc):
        log.append("exit")
        return False
with Section() as s:
    log.append("body")
result = log
"""
        assert value_of(source) == ["enter", "body", "exit"]

    def test_properties_and_static_methods(self) -> None:
        """``@property``, ``@staticmethod`` and ``@classmethod`` work."""
        source = """
class Temp:
    def __init__(self, c):
        self.c = c
    @property
    def f(self):
        return self.c * 9 / 5 + 32
    @staticmethod
    def zero():
        return Temp(0)
    @classmethod
    def boiling(cls):
        return cls(100)
result = [Temp(10).f, Temp.zero().f, Temp.boiling().f]
"""
        assert value_of(source) == [50.0, 32.0, 212.0]


class TestStrings:
    """f-strings, ``str.format`` and ``type(e).__name__``."""

    def test_fstring_format_specs(self) -> None:
        """``f"{x:.2f}"``, ``f"{n:>5}"``, ``f"{v!r}"`` and nested widths."""
        source = """
x, n, v, w = 3.14159, 42, "hi", 6
result = [f"{x:.2f}", f"{n:>5}", f"{v!r}", f"{n:0{w}d}", f"{x:,.1f}", f"{1234567:,}"]
"""
        assert value_of(source) == ["3.14", "   42", "'hi'", "000042", "3.1", "1,234,567"]

    def test_str_format_positional_and_named(self) -> None:
        """``"{} {}".format(a, b)`` and ``"{name}".format(name=...)``."""
        assert value_of("result = ['{} {}'.format('a', 'b'), '{name}!'.format(name='Ada')]") == [
            "a b",
            "Ada!",
        ]

    def test_format_field_attributes_of_own_objects(self) -> None:
        """``"{0.x}"`` reads a public attribute of an object the code made."""
        source = """
class P:
    def __init__(self):
        self.x = 7
result = "{0.x}".format(P())
"""
        assert value_of(source) == "7"

    def test_percent_formatting(self) -> None:
        """``%``-formatting with tuples and mappings."""
        assert value_of("result = ['%s=%d' % ('a', 1), '%(n)05.1f' % {'n': 2.5}]") == [
            "a=1",
            "002.5",
        ]

    def test_type_name_of_an_exception(self) -> None:
        """``type(e).__name__`` names the exception class."""
        assert value_of(
            "try:\n    {}['x']\nexcept Exception as e:\n    result = type(e).__name__"
        ) == ("KeyError")

    def test_string_methods(self) -> None:
        """Common str methods, including the checked ones, behave as in Python."""
        source = """
s = "  Hello, World  "
result = [s.strip().lower(), s.split(","), "-".join(["a", "b"]), "ab".replace("a", "x"),
          "x".ljust(3, "."), "5".zfill(3), "a\\tb".expandtabs(4), "abc".center(7, "*")]
"""
        assert value_of(source) == [
            "hello, world",
            ["  Hello", " World  "],
            "a-b",
            "xb",
            "x..",
            "005",
            "a   b",
            "**abc**",
        ]


class TestControlFlow:
    """Exceptions, generators, comprehensions and closures."""

    def test_try_except_finally(self) -> None:
        """``try``/``except``/``else``/``finally`` run in order."""
        source = """
steps = []
for d in [1, 0]:
    try:
        steps.append(10 // d)
    except ZeroDivisionError:
        steps.append("zero")
    else:
        steps.append("ok")
    finally:
        steps.append("done")
result = steps
"""
        assert value_of(source) == [10, "ok", "done", "zero", "done"]

    def test_generators(self) -> None:
        """Generator functions with ``yield`` and ``yield from``."""
        source = """
def evens(limit):
    for n in range(limit):
        if n % 2 == 0:
            yield n
def both():
    yield from evens(5)
    yield "end"
result = list(both())
"""
        assert value_of(source) == [0, 2, 4, "end"]

    def test_comprehensions(self) -> None:
        """List, dict, set and generator comprehensions, nested and filtered."""
        source = """
pairs = [(x, y) for x in range(3) for y in range(x) if y % 2 == 0]
squares = {n: n * n for n in range(4)}
letters = {c for c in "banana"}
total = sum(n for n in range(5))
result = [pairs, squares, sorted(letters), total, [[c * 2 for c in row] for row in ["ab", "c"]]]
"""
        assert value_of(source) == [
            [(1, 0), (2, 0)],
            {0: 0, 1: 1, 2: 4, 3: 9},
            ["a", "b", "n"],
            10,
            [["aa", "bb"], ["cc"]],
        ]

    def test_closures_with_nonlocal(self) -> None:
        """A counter closure updating an enclosing variable with ``nonlocal``."""
        source = """
def make_counter():
    count = 0
    def bump():
        nonlocal count
        count += 1
        return count
    return bump
c = make_counter()
c()
c()
result = c()
"""
        assert value_of(source) == 3

    def test_lambdas_and_sorting_keys(self) -> None:
        """``sorted`` with a key lambda and ``reverse``."""
        assert value_of(
            "result = sorted(['bb', 'a', 'ccc'], key=lambda s: len(s), reverse=True)"
        ) == [
            "ccc",
            "bb",
            "a",
        ]

    def test_builtins(self) -> None:
        """``sorted``, ``zip``, ``enumerate``, ``min``, ``max``, ``sum``, ``reversed``, ``any``, ``all``."""
        source = """
xs = [3, 1, 2]
result = [sorted(xs), list(zip(xs, "abc")), list(enumerate(xs, 1)), min(xs), max(xs),
          sum(xs), list(reversed(xs)), any(x > 2 for x in xs), all(x > 0 for x in xs),
          max(["aa", "b"], key=len), divmod(7, 2), round(2.675, 2), abs(-3)]
"""
        assert value_of(source) == [
            [1, 2, 3],
            [(3, "a"), (1, "b"), (2, "c")],
            [(1, 3), (2, 1), (3, 2)],
            1,
            3,
            6,
            [2, 1, 3],
            True,
            True,
            "aa",
            (3, 1),
            2.67,
            3,
        ]

    def test_match_statements(self) -> None:
        """``match`` with literals, sequences, mappings, class patterns and guards."""
        source = """
def describe(value):
    match value:
        case 0:
            return "zero"
        case [first, *rest]:
            return f"list starting {first} (+{len(rest)})"
        case {"kind": "user", "name": name}:
            return f"user {name}"
        case int(n) if n < 0:
            return "negative"
        case str():
            return "text"
        case _:
            return "other"
result = [describe(v) for v in [0, [1, 2, 3], {"kind": "user", "name": "ada"}, -4, "s", 2.5]]
"""
        assert value_of(source) == [
            "zero",
            "list starting 1 (+2)",
            "user ada",
            "negative",
            "text",
            "other",
        ]

    def test_annotated_assignments(self) -> None:
        """``x: int = 1`` assigns; a bare annotation declares nothing; function annotations work."""
        source = """
total: int = 1
name: str
def add(a: int, b: int = 2) -> int:
    return a + b
items: list[int] = [add(total)]
result = items
"""
        assert value_of(source) == [3]

    def test_tuple_unpacking(self) -> None:
        """Unpacking in loops, starred assignment and swaps."""
        source = """
d = {"a": 1, "b": 2}
pairs = []
for k, v in d.items():
    pairs.append(k + str(v))
first, *rest = [1, 2, 3]
a, b = 1, 2
a, b = b, a
(x, y), z = (1, 2), 3
result = [pairs, first, rest, a, b, x + y + z]
"""
        assert value_of(source) == [["a1", "b2"], 1, [2, 3], 2, 1, 6]

    def test_while_with_break_and_else(self) -> None:
        """``while`` with ``break`` and ``for``/``else``."""
        source = """
n = 0
while True:
    n += 1
    if n == 5:
        break
for i in range(3):
    pass
else:
    n += 100
result = n
"""
        assert value_of(source) == 105


class TestStandardLibrary:
    """The allowed modules do what they do in plain Python."""

    def test_json(self) -> None:
        """``json.loads`` and ``json.dumps`` with indent and sort_keys."""
        source = """
import json
data = json.loads('{"b": 1, "a": [true, null]}')
result = [data, json.dumps(data, sort_keys=True), json.dumps({"x": 1}, indent=2)]
"""
        assert value_of(source) == [
            {"b": 1, "a": [True, None]},
            '{"a": [true, null], "b": 1}',
            '{\n  "x": 1\n}',
        ]

    def test_re(self) -> None:
        """``re.findall``, ``re.sub`` with groups, compiled patterns and match groups."""
        source = """
import re
pattern = re.compile(r"(\\w+)@(\\w+)\\.com")
m = pattern.search("mail ada@example.com now")
result = [re.findall(r"\\d+", "a1b22c333"), re.sub(r"(\\d+)", r"<\\1>", "a1b22"),
          m.group(1), m.groups(), pattern.sub(lambda m: m.group(2), "x@y.com"),
          re.split(r"\\s+", "a  b c")]
"""
        assert value_of(source) == [
            ["1", "22", "333"],
            "a<1>b<22>",
            "ada",
            ("ada", "example"),
            "y",
            ["a", "b", "c"],
        ]

    def test_math(self) -> None:
        """``math`` functions and constants."""
        source = """
import math
result = [math.sqrt(16), math.floor(2.7), math.ceil(2.1), round(math.pi, 4), math.factorial(5),
          math.gcd(12, 18), math.isclose(0.1 + 0.2, 0.3), math.prod([2, 3, 4]), math.comb(5, 2)]
"""
        assert value_of(source) == [4.0, 2, 3, 3.1416, 120, 6, True, 24, 10]

    def test_datetime(self) -> None:
        """``datetime`` arithmetic, parsing and formatting."""
        source = """
from datetime import date, datetime, timedelta
d = date(2024, 2, 28) + timedelta(days=2)
t = datetime.strptime("2024-03-01 10:30", "%Y-%m-%d %H:%M")
result = [d.isoformat(), t.strftime("%d/%m %H:%M"), (t - datetime(2024, 3, 1)).seconds,
          d.weekday()]
"""
        assert value_of(source) == ["2024-03-01", "01/03 10:30", 37800, 4]

    def test_collections(self) -> None:
        """``Counter``, ``defaultdict``, ``deque`` and ``namedtuple``."""
        source = """
from collections import Counter, defaultdict, deque, namedtuple
counts = Counter("abracadabra")
groups = defaultdict(list)
for word in ["apple", "avocado", "banana"]:
    groups[word[0]].append(word)
q = deque([1, 2, 3], maxlen=3)
q.append(4)
Point = namedtuple("Point", "x y")
p = Point(1, y=2)
result = [counts.most_common(2), dict(groups), list(q), p.x + p.y, p._asdict(), p._replace(x=9)]
"""
        assert value_of(source) == [
            [("a", 5), ("b", 2)],
            {"a": ["apple", "avocado"], "b": ["banana"]},
            [2, 3, 4],
            3,
            {"x": 1, "y": 2},
            (9, 2),
        ]

    def test_statistics(self) -> None:
        """``statistics`` mean, median, mode and stdev."""
        source = """
import statistics
data = [2, 4, 4, 4, 5, 5, 7, 9]
result = [statistics.mean(data), statistics.median(data), statistics.mode(data),
          round(statistics.pstdev(data), 3)]
"""
        assert value_of(source) == [5, 4.5, 4, 2.0]

    def test_itertools(self) -> None:
        """``islice`` over ``count``, ``groupby`` and ``product`` of small ranges."""
        source = """
import itertools
firsts = list(itertools.islice(itertools.count(10, 5), 3))
groups = [(k, len(list(g))) for k, g in itertools.groupby("aaabbc")]
grid = list(itertools.product(range(2), repeat=2))
result = [firsts, groups, grid, list(itertools.chain([1], [2])), list(itertools.accumulate([1, 2, 3]))]
"""
        assert value_of(source) == [
            [10, 15, 20],
            [("a", 3), ("b", 2), ("c", 1)],
            [(0, 0), (0, 1), (1, 0), (1, 1)],
            [1, 2],
            [1, 3, 6],
        ]

    def test_functools(self) -> None:
        """``functools.reduce`` and ``functools.lru_cache``."""
        source = """
import functools
@functools.lru_cache(maxsize=None)
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)
result = [functools.reduce(lambda a, b: a * b, [1, 2, 3, 4]), fib(60)]
"""
        assert value_of(source) == [24, 1548008755920]

    def test_element_tree_rss(self) -> None:
        """``xml.etree.ElementTree`` parses an RSS feed and finds ``.//item``."""
        source = f"""
import xml.etree.ElementTree as ET
root = ET.fromstring({RSS!r})
result = [(item.find("title").text, item.findtext("link")) for item in root.findall(".//item")]
"""
        assert value_of(source) == [
            ("First & best", "http://example.test/1"),
            ("Second", "http://example.test/2"),
        ]

    def test_csv_over_string_io(self) -> None:
        """``csv.DictReader`` and ``csv.writer`` over ``io.StringIO``."""
        source = """
import csv, io
rows = list(csv.DictReader(io.StringIO("name,age\\nada,36\\nbob,41\\n")))
out = io.StringIO()
csv.writer(out).writerow(["a", "b,c"])
result = [rows, out.getvalue()]
"""
        assert value_of(source) == [
            [{"name": "ada", "age": "36"}, {"name": "bob", "age": "41"}],
            'a,"b,c"\r\n',
        ]

    def test_html_unescape(self) -> None:
        """``html.unescape`` and ``html.escape``."""
        assert value_of(
            "import html\nresult = [html.unescape('&lt;b&gt; &amp; &#39;'), html.escape('<a>')]"
        ) == [
            "<b> & '",
            "&lt;a&gt;",
        ]

    def test_urllib_parse(self) -> None:
        """``urllib.parse`` splitting, joining, quoting and query parsing."""
        source = """
from urllib.parse import urlparse, urljoin, quote, urlencode, parse_qs
u = urlparse("https://example.test/a/b?x=1&y=two#frag")
result = [u.netloc, u.path, parse_qs(u.query), urljoin("https://example.test/a/", "c"),
          quote("a b/c"), urlencode({"q": "x y", "n": 2})]
"""
        assert value_of(source) == [
            "example.test",
            "/a/b",
            {"x": ["1"], "y": ["two"]},
            "https://example.test/a/c",
            "a%20b/c",
            "q=x+y&n=2",
        ]

    def test_decimal_and_fractions(self) -> None:
        """``Decimal`` and ``Fraction`` construct, compute and pass ``isinstance``."""
        source = """
from decimal import Decimal
from fractions import Fraction
total = Decimal("0.10") + Decimal("0.20")
half = Fraction(1, 2) + Fraction("1/4")
result = [str(total), isinstance(total, Decimal), str(half), isinstance(half, Fraction)]
"""
        assert value_of(source) == ["0.30", True, "3/4", True]

    def test_string_template_and_textwrap(self) -> None:
        """``string.Template`` substitution and ``textwrap`` helpers."""
        source = """
import string, textwrap
result = [string.Template("$who likes $what").substitute(who="Ada", what="tea"),
          textwrap.wrap("aaa bbb ccc", width=7), textwrap.dedent("  x\\n  y"),
          textwrap.indent("a\\nb", "> ")]
"""
        assert value_of(source) == ["Ada likes tea", ["aaa bbb", "ccc"], "x\ny", "> a\n> b"]

    def test_random_with_a_seed(self) -> None:
        """A seeded ``random.Random`` is reproducible and ``random.choice`` picks a member."""
        source = """
import random
a = random.Random(7)
b = random.Random(7)
result = [[a.randint(1, 100) for _ in range(3)] == [b.randint(1, 100) for _ in range(3)],
          random.choice(["x"]), len(random.sample(range(10), 3))]
"""
        assert value_of(source) == [True, "x", 3]
