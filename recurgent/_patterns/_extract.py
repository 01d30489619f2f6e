"""Capability tags of a generated program, read from its syntax tree (ADR 0107).

The original tagged a program by running regular expressions over its text, so a comment
(``# Net::HTTP``) or a string mentioning a library tagged it too. Here the program's tree is
read: an import, a call, a class base or a delegated tool's name is a signal; comments and
unrelated strings never are. Each tag comes with the names of the signals that gave it (the
log's ``capability_pattern_evidence``).

Tags, the original's five first, then the ones this port adds:

* ``http_fetch``: ``urllib.request`` imported or ``urlopen`` called; an HTTP client library
  imported (``requests``, ``httpx``, ``aiohttp``, ``urllib3``, ``http.client``); a tool or
  delegate whose name says it fetches (``web_fetcher``, ``http_fetcher``, ...);
* ``rss_parse``: ``feedparser`` imported; an XML lookup of RSS/Atom elements (``find``,
  ``findall``, ``iter``, ... of ``item``, ``entry`` or ``channel``); a tool or delegate whose
  name says RSS or feed;
* ``xml_parse``: ``xml.etree``, ``xml.dom``, ``lxml`` or ``defusedxml`` imported;
* ``html_extract``: ``html.parser`` or ``bs4`` imported, a subclass of ``HTMLParser``, a
  regular expression over anchors (``<a ...``) or headings (``<h1``-``<h6``), a scraper tool;
* ``news_headline_extract``: a loop or comprehension together with reads of both a ``title``
  and a ``link`` (keys, ``get``, ``find``/``findtext``, attributes, keyword arguments);
* ``json_parse``: ``json.loads``/``json.load`` called;
* ``csv_parse``: a ``csv`` reader built (``reader``, ``DictReader``, ``Sniffer``).

Bounded: a program over :data:`MAX_SOURCE_CHARS` characters is not read (no tags), and only the
first :data:`MAX_NODES` nodes of a tree are; results are cached by the program's text, so a
program is read once per process.
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from recurgent._forksafe import fork_safe_lock
from recurgent._parsing import parse_python

__all__ = [
    "MAX_NODES",
    "MAX_SOURCE_CHARS",
    "TAG",
    "TAGS",
    "Capabilities",
    "extract_capabilities",
    "text_capabilities",
]

#: A capability tag as read back from any file (patterns.json, the registry): a short
#: snake_case word, so whatever a file holds, a tag that reaches a prompt cannot be a sentence
#: (ADR 0071's rule for registry text).
TAG = re.compile(r"^[a-z][a-z0-9_]{0,63}$")

#: Every tag the extractor gives, in the order a log line lists them.
TAGS = (
    "http_fetch",
    "rss_parse",
    "xml_parse",
    "html_extract",
    "news_headline_extract",
    "json_parse",
    "csv_parse",
)
MAX_SOURCE_CHARS = 200_000
MAX_NODES = 50_000
_CACHED = 512

_HTTP_MODULES = frozenset({"requests", "httpx", "aiohttp", "urllib3", "http.client"})
_XML_MODULES = ("xml.etree", "xml.dom", "lxml", "defusedxml")
_LOOKUPS = frozenset({"find", "findall", "findtext", "iter", "iterfind", "getElementsByTagName"})
_RSS_ELEMENTS = frozenset({"item", "entry", "channel"})
_REGEX_CALLS = frozenset(
    {"findall", "finditer", "search", "match", "fullmatch", "compile", "sub", "subn", "split"}
)
_ANCHOR = re.compile(r"<a(?![a-z0-9_])", re.IGNORECASE)
_HEADING = re.compile(r"<h(?:[1-6]|\[1-6\])", re.IGNORECASE)
_CSV_READERS = frozenset({"reader", "DictReader", "Sniffer"})
#: Words in a delegated tool's name, and the tag a tool so named gives the program using it.
_TOOL_WORDS = (
    ("http_fetch", "fetcher", frozenset({"fetch", "fetcher", "http", "web", "download"})),
    ("rss_parse", "rss", frozenset({"rss", "feed"})),
    ("html_extract", "scraper", frozenset({"scrape", "scraper", "html"})),
    ("xml_parse", "xml", frozenset({"xml"})),
)


@dataclass(frozen=True, slots=True)
class Capabilities:
    """What a program's tree shows.

    Attributes:
        tags: The capability tags, in :data:`TAGS` order.
        evidence: Each tag's signal names, sorted.
        delegates: Whether the program makes child agents (``delegate``/``tool`` calls).
    """

    tags: tuple[str, ...] = ()
    evidence: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    delegates: bool = False

    def evidence_dict(self) -> dict[str, list[str]]:
        """The evidence as plain data (a log field)."""
        return {tag: list(self.evidence[tag]) for tag in self.tags}


_NONE = Capabilities()


def _nodes(tree: ast.AST) -> Iterator[ast.AST]:
    for seen, node in enumerate(ast.walk(tree)):
        if seen >= MAX_NODES:
            return
        yield node


def _called(node: ast.Call) -> tuple[str | None, str | None]:
    """``(name, base)`` of a call: ``("urlopen", "request")`` for ``request.urlopen(...)``."""
    func = node.func
    if isinstance(func, ast.Name):
        return func.id, None
    if isinstance(func, ast.Attribute):
        base = func.value
        if isinstance(base, ast.Name):
            return func.attr, base.id
        if isinstance(base, ast.Attribute):
            return func.attr, base.attr
        return func.attr, None
    return None, None


def _first_text(node: ast.Call) -> str | None:
    if node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str):
        return node.args[0].value
    return None


class _Reader:
    """One walk over a tree, collecting signals per tag."""

    def __init__(self, called: set[int]) -> None:
        self.called = called  # ids of the attributes that are called: methods, not fields
        self.found: dict[str, set[str]] = {}
        self.modules: set[str] = set()
        self.aliases: dict[str, str] = {}  # local name -> module it stands for
        self.delegates = False
        self.iterates = False
        self.fields: set[str] = set()

    def signal(self, tag: str, name: str) -> None:
        self.found.setdefault(tag, set()).add(name)

    def module(self, name: str, local: str) -> None:
        self.modules.add(name)
        self.aliases[local] = name

    def read(self, tree: ast.AST) -> None:
        for node in _nodes(tree):
            if isinstance(node, ast.Import):
                for alias in node.names:
                    self.module(alias.name, alias.asname or alias.name.split(".")[0])
            elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
                for alias in node.names:
                    # from urllib import request: the module urllib.request; from json import
                    # loads: the name loads stands for json.loads.
                    self.module(f"{node.module}.{alias.name}", alias.asname or alias.name)
                    self.modules.add(node.module)
            elif isinstance(node, ast.Call):
                self.call(node)
            elif isinstance(node, ast.ClassDef):
                for base in node.bases:
                    named = base.attr if isinstance(base, ast.Attribute) else None
                    named = base.id if isinstance(base, ast.Name) else named
                    if named == "HTMLParser":
                        self.signal("html_extract", "html_parser_subclass")
            elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
                self.iterates = True
            else:
                self.field(node)
        self.imports()

    def imports(self) -> None:
        modules = self.modules
        if "urllib.request" in modules:
            self.signal("http_fetch", "urllib_request_import")
        if modules & _HTTP_MODULES:
            self.signal("http_fetch", "http_client_import")
        if "feedparser" in modules:
            self.signal("rss_parse", "feedparser_import")
        if any(m == x or m.startswith(x + ".") for m in modules for x in _XML_MODULES):
            self.signal("xml_parse", "xml_library_import")
        if "html.parser" in modules or "html.parser.HTMLParser" in modules:
            self.signal("html_extract", "html_parser_import")
        if "bs4" in modules or any(m.startswith("bs4.") for m in modules):
            self.signal("html_extract", "beautifulsoup_import")

    def call(self, node: ast.Call) -> None:
        name, base = _called(node)
        if name is None:
            return
        origin = self.aliases.get(name, "") if base is None else self.aliases.get(base, base)
        if name == "map" and base is None:
            self.iterates = True
        if name == "urlopen":
            self.signal("http_fetch", "urlopen_call")
        elif name in ("delegate", "tool") and base is None:
            self.delegates = True
            self.tool(name, _first_text(node))
        elif name in _REGEX_CALLS and (origin == "re" or origin.startswith("re.")):
            self.regex(_first_text(node))
        elif name in _LOOKUPS:
            self.lookup(node, name)
        elif name in ("loads", "load") and (origin == "json" or origin.startswith("json.")):
            self.signal("json_parse", f"json_{name}_call")
        elif name in _CSV_READERS and (origin == "csv" or origin.startswith("csv.")):
            self.signal("csv_parse", "csv_reader_call")
        elif name == "get" and base is not None:
            self.note_field(_first_text(node))
        for keyword in node.keywords:
            self.note_field(keyword.arg)

    def tool(self, api: str, named: str | None) -> None:
        if not named:
            return
        words = set(re.split(r"[^a-z0-9]+", named.lower()[:200]))
        for tag, stem, marks in _TOOL_WORDS:
            if words & marks:
                self.signal(tag, f"{stem}_{api}_call")

    def lookup(self, node: ast.Call, name: str) -> None:
        path = _first_text(node)
        if path is None:
            return
        # ".//item", "channel/item", "{http://www.w3.org/2005/Atom}entry": the last step.
        last = re.split(r"[/}:]", path.strip())[-1].lower()
        if last in _RSS_ELEMENTS:
            self.signal("rss_parse", "rss_element_lookup")
        if name in ("find", "findtext", "iterfind", "findall"):
            self.note_field(last)

    def regex(self, pattern: str | None) -> None:
        if pattern is None:
            return
        text = pattern[:2000]
        if _ANCHOR.search(text):
            self.signal("html_extract", "html_anchor_regex")
        if _HEADING.search(text):
            self.signal("html_extract", "html_heading_regex")

    def field(self, node: ast.AST) -> None:
        if isinstance(node, ast.Subscript):
            key = node.slice
            if isinstance(key, ast.Constant) and isinstance(key.value, str):
                self.note_field(key.value)
        elif isinstance(node, ast.Dict):
            for name in node.keys:
                if isinstance(name, ast.Constant) and isinstance(name.value, str):
                    self.note_field(name.value)
        elif (
            isinstance(node, ast.Attribute)
            and isinstance(node.ctx, ast.Load)
            and id(node) not in self.called
        ):
            # item.title, entry.link; item.title() is str.title, a method, not a field.
            self.note_field(node.attr)

    def note_field(self, name: str | None) -> None:
        if name in ("title", "link"):
            self.fields.add(name)

    def result(self) -> Capabilities:
        if self.iterates and self.fields >= {"title", "link"}:
            self.signal("news_headline_extract", "iterates_collection_and_extracts_title_and_link")
        tags = tuple(tag for tag in TAGS if tag in self.found)
        evidence = {tag: tuple(sorted(self.found[tag])) for tag in tags}
        return Capabilities(tags, evidence, self.delegates)


def _method_attributes(tree: ast.AST) -> set[int]:
    """ids of the Attribute nodes that are called (``s.title()``): not field reads."""
    return {
        id(node.func)
        for node in _nodes(tree)
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
    }


_CACHE: dict[str, Capabilities] = {}
_CACHE_LOCK = fork_safe_lock()


def _read(code: str) -> Capabilities:
    if len(code) > MAX_SOURCE_CHARS:
        return _NONE
    try:
        tree = parse_python(code, "<capabilities>")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return _NONE
    reader = _Reader(_method_attributes(tree))
    try:
        reader.read(tree)
    except RecursionError:
        return _NONE
    return reader.result()


def extract_capabilities(code: str | None) -> Capabilities:
    """The capability tags of the program ``code`` (none for blank code or code that does not
    parse). Cached by the code's text."""
    if not code or code.isspace():
        return _NONE
    found = _CACHE.get(code)
    if found is not None:
        return found
    found = _read(code)
    with _CACHE_LOCK:
        if len(_CACHE) >= _CACHED:
            _CACHE.pop(next(iter(_CACHE)), None)
        _CACHE[code] = found
    return found


#: The original's text heuristics for a tool known only by its registry entry (no program
#: read yet), in its order, with this port's xml, csv and feed words added. ``parse`` alone no
#: longer means HTML (a feed parser is not a scraper); web pages and websites do.
_TEXT_TAGS = (
    ("http_fetch", re.compile(r"\b(?:https?|url|fetch|net::http)\b")),
    ("rss_parse", re.compile(r"\b(?:rss|atom|feeds?)\b")),
    ("xml_parse", re.compile(r"\bxml\b")),
    ("html_extract", re.compile(r"\b(?:html|scrape|scraper|extract|web ?pages?|websites?)\b")),
    ("news_headline_extract", re.compile(r"\b(?:news|headlines?)\b")),
    ("movie_listings", re.compile(r"\b(?:movies?|theaters?|showtimes?|listings?)\b")),
    ("json_parse", re.compile(r"\bjson\b")),
    ("csv_parse", re.compile(r"\bcsv\b")),
    ("text_summarization", re.compile(r"\b(?:summary|summarize|synthesis)\b")),
)
_TEXT_CHARS = 2000


def text_capabilities(purpose: Any, methods: Any, deliverable: Any) -> tuple[str, ...]:
    """Tags guessed from a registry entry's words (purpose, method names, deliverable): for a
    tool none of whose programs has been read. Bounded: only the first characters count."""
    parts = [str(purpose or "")[:_TEXT_CHARS]]
    if isinstance(methods, list):
        parts.extend(str(m)[:200] for m in methods[:64])
    if deliverable is not None:
        parts.append(repr(deliverable)[:_TEXT_CHARS])
    text = " ".join(parts).lower().replace("_", " ")
    return tuple(tag for tag, pattern in _TEXT_TAGS if pattern.search(text))
