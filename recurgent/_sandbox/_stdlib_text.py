"""Checked stand-ins for standard-library functions that write text or compare sequences (ADR 0012).

``json``, ``pprint``, ``textwrap``, ``string.Template``, ``unicodedata``, ``re`` (through the
deadline-bounded engine), ``ElementTree.indent``/``tostring``/``tostringlist`` and ``difflib``: given small arguments each can
build a huge text (an indent of 10**7, a row shared 10**4 times) or run a long loop that never
ticks. They check sizes first and raise :class:`SizeLimitExceeded`; within the caps they behave
exactly like the originals. Their caps are listed in ``_stdlib.SIZE_CAPS`` with the others.
"""

from __future__ import annotations

import codecs
import difflib
import json
import json.encoder
import math
import pprint
import re
import textwrap
import unicodedata
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable, Iterator, Mapping
from typing import Any, NamedTuple

from recurgent._sandbox._gate import exact_name
from recurgent._sandbox._limits import SizeLimitExceeded
from recurgent._sandbox._measure import MAX_ITEMS, check_items, true_length
from recurgent._sandbox._regex import module_names as regex_module_names
from recurgent._sandbox._rehost import TEMPLATE
from recurgent._sandbox._text_size import check_text, estimated_text

__all__ = [
    "DIFFLIB_NAMES",
    "MAX_DIFF_WORK",
    "MAX_INDENT",
    "MAX_WRAP_TEXT",
    "CheckedTemplate",
    "checked_element_indent",
    "checked_iterencode",
    "checked_tostring",
    "checked_tostringlist",
    "difflib_overrides",
    "json_overrides",
    "pprint_overrides",
    "re_overrides",
    "textwrap_overrides",
    "unicodedata_overrides",
]

MAX_INDENT = 100
#: Longest text textwrap.wrap/fill/shorten take: their pure-Python loop never ticks.
MAX_WRAP_TEXT = 200_000
MAX_DIFF_WORK = 10_000_000
_NFKD_EXPANSION = 18  # the longest decomposition of one code point


def _check_indent(indent: Any, what: str) -> None:
    width = len(indent) if isinstance(indent, str) else indent
    if isinstance(width, int) and width > MAX_INDENT:
        raise SizeLimitExceeded(f"{what} indent {width} exceeds the sandbox limit of {MAX_INDENT}")


# Characters of a string encoded per step when its JSON length is measured.
_JSON_STEP = 1 << 16
# Most characters JSON writes for one: "\\ud83d\\ude00" for an astral one under ensure_ascii.
_JSON_MOST_PER_CHARACTER = 12


def _counted_strings(encode: Callable[[str], str]) -> Callable[[str], str]:
    """``encode`` (``json.encoder.encode_basestring(_ascii)``), refusing a string whose text
    passes the item cap before the one C call that writes it (red team R26: nine million
    astral characters wrote 108 000 002 before the pieces' count refused them)."""

    def encoder(text: str) -> str:
        length = str.__len__(text)
        if length * _JSON_MOST_PER_CHARACTER + 2 > MAX_ITEMS:
            exact = str.__str__(text)
            total = 2  # the quotes
            for start in range(0, length, _JSON_STEP):
                total += len(encode(exact[start : start + _JSON_STEP])) - 2
                if total > MAX_ITEMS:
                    check_items(total, "json.dumps()")
        return encode(text)

    return encoder


def checked_iterencode(encoder: json.JSONEncoder, o: Any) -> Iterator[str]:
    """``encoder.iterencode(o)`` as ``json.JSONEncoder`` writes it without the one-shot C
    encoder, each string bounded before it is written."""
    markers: dict[int, Any] | None = {} if encoder.check_circular else None
    encode = (
        json.encoder.encode_basestring_ascii
        if encoder.ensure_ascii
        else json.encoder.encode_basestring
    )

    def floatstr(value: float) -> str:
        if value != value:
            text = "NaN"
        elif value == math.inf:
            text = "Infinity"
        elif value == -math.inf:
            text = "-Infinity"
        else:
            return float.__repr__(value)
        if not encoder.allow_nan:
            raise ValueError("Out of range float values are not JSON compliant: " + repr(value))
        return text

    make: Any = json.encoder._make_iterencode  # type: ignore[attr-defined]
    iterencode: Callable[[Any, int], Iterator[str]] = make(
        markers,
        encoder.default,
        _counted_strings(encode),
        encoder.indent,
        floatstr,
        encoder.key_separator,
        encoder.item_separator,
        encoder.sort_keys,
        encoder.skipkeys,
        False,
    )
    return iterencode(o, 0)


def _checked_dumps(obj: Any, *, indent: Any = None, separators: Any = None, **kwargs: Any) -> str:
    _check_indent(indent, "json.dumps()")
    # Always encoded in pieces and counted: the same row shared 10**4 times
    # (`[[0] * 10**4] * 10**4`) is a small object whose output is 2 * 10**8 characters, and
    # indents and long separators multiply the output too (red-team finding F6).
    # The estimate refuses a shared structure at once, before encoding a piece (H10).
    check_text(obj, "json.dumps()")
    encoder_class = kwargs.pop("cls", None) or json.JSONEncoder
    encoder = encoder_class(indent=indent, separators=separators, **kwargs)
    produced = 0
    pieces: list[str] = []
    # The library's encoder (the default): its strings bounded as the sandbox's encoder's are.
    real = type(encoder).iterencode is json.JSONEncoder.iterencode
    for piece in checked_iterencode(encoder, obj) if real else encoder.iterencode(obj):
        produced += len(piece)
        if produced > MAX_ITEMS:
            check_items(produced, "json.dumps()")
        pieces.append(piece)
    return "".join(pieces)


def _checked_dump(obj: Any, fp: Any, **kwargs: Any) -> None:
    fp.write(_checked_dumps(obj, **kwargs))


def json_overrides() -> dict[str, Any]:
    """Checked ``json`` functions."""
    return {"dumps": _checked_dumps, "dump": _checked_dump}


def _checked_pformat(obj: Any, indent: int = 1, width: int = 80, **kwargs: Any) -> str:
    _check_indent(indent, "pprint.pformat()")
    check_text(obj, "pprint.pformat()")  # a shared structure's text (H10, ADR 0092)
    return pprint.pformat(obj, indent=indent, width=width, **kwargs)


def pprint_overrides() -> dict[str, Any]:
    """Checked ``pprint`` functions."""
    return {"pformat": _checked_pformat}


def _checked_indent(text: str, prefix: str, predicate: Any = None) -> str:
    lines = str.count(text, "\n") + 1 if isinstance(text, str) else 1
    check_items(true_length(text) + lines * true_length(prefix), "textwrap.indent()")
    return textwrap.indent(text, prefix, predicate)


def _wrapping(function: Callable[..., Any]) -> Callable[..., Any]:
    def checked(text: str, width: int = 70, **kwargs: Any) -> Any:
        parts = [
            kwargs.get(name, "") for name in ("initial_indent", "subsequent_indent", "placeholder")
        ]
        indents = sum(true_length(p) if isinstance(p, str) else len(str(p)) for p in parts)
        check_items(true_length(text) * (1 + indents), f"textwrap.{function.__name__}()")
        length = true_length(text)
        if length > MAX_WRAP_TEXT:
            # textwrap is pure Python that never ticks: about 2 us a character (F7).
            raise SizeLimitExceeded(
                f"textwrap.{function.__name__}() of {length} characters exceeds the sandbox "
                f"limit of {MAX_WRAP_TEXT}"
            )
        return function(text, width, **kwargs)

    checked.__name__ = function.__name__
    return checked


def checked_element_indent(tree: Any, space: Any = "  ", level: Any = 0) -> None:
    """``ElementTree.indent`` with its ``level * space`` indentation capped."""
    if isinstance(level, int) and isinstance(space, str):
        check_items(true_length(space) * (int.__index__(level) + 1), "ElementTree.indent()")
    ElementTree.indent(tree, space, level)


# Characters ElementTree writes for one it escapes at most (``&quot;``; ``&#10;`` for a newline
# in an attribute), and for one it writes as a character reference under an encoding that
# cannot hold it (``&#1114111;``).
_ESCAPED = 6
_REFERENCE = 10
_XML_SPECIAL = ("&", "<", ">", '"', "\n", "\r", "\t")


class _XmlCodec(NamedTuple):
    """How ``tostring`` writes text under one encoding: the most bytes an ASCII character and
    any other become, and for a single-byte codec its name, under which text past ASCII is
    measured as the codec writes it rather than bounded by ``other``."""

    ascii: int
    other: int
    measured: str | None = None


# Bytes an encoding writes for an ASCII character and for any other (red team R27: counted in
# characters, ``utf-32`` wrote four bytes for each, ``utf-8`` four for an astral one). By the
# codec's own name; any other codec (``utf-7`` writes ``~`` as ``+AH4-``) five and ten.
_WIDTHS: dict[str, _XmlCodec] = {
    "utf-8": _XmlCodec(1, 4),
    "utf-16": _XmlCodec(2, 4),
    "utf-32": _XmlCodec(4, 4),
}
_UTF_WIDTHS = frozenset(_WIDTHS.values())
_OTHER_CODEC = _XmlCodec(5, _REFERENCE)
_TEXT = _XmlCodec(1, 1)  # encoding="unicode": characters


def _single_byte(name: str) -> _XmlCodec:
    """A single-byte codec: one byte an ASCII character; other text measured under it (a
    character it holds is one byte, one it cannot a reference of up to ten)."""
    return _XmlCodec(1, _REFERENCE, name)


def _xml_widths(encoding: Any, what: str) -> _XmlCodec | None:
    """How what ``tostring`` returns is counted under ``encoding``: characters for
    ``unicode`` (text), ``None`` for a name no codec has."""
    if encoding is None:
        return _single_byte("ascii")  # tostring's default, us-ascii
    if type(encoding) is not str:
        raise TypeError(f"{what} takes an encoding name (str) in the sandbox")
    if encoding.lower() == "unicode":
        return _TEXT
    try:
        name = codecs.lookup(encoding).name
    except LookupError:
        return None  # the library words its own error
    for prefix, widths in _WIDTHS.items():
        if name.startswith(prefix):
            return widths
    try:
        # A character such a codec cannot hold is dropped here (a reference when written).
        single = all(len(codecs.encode(char, name, "ignore")) <= 1 for char in "\u00e9\u4e2d")
        plain = codecs.encode("~+&<ab", name) == b"~+&<ab"
    except (LookupError, UnicodeError, TypeError, ValueError):
        return _OTHER_CODEC
    return _single_byte(name) if single and plain else _OTHER_CODEC


# A lone surrogate, which no UTF codec holds, and the reference ElementTree writes for it
# (``&#55296;`` to ``&#57343;``).
_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_REFERENCE = 8

# Characters of a text encoded per step when its written length is measured.
_XML_STEP = 1 << 16


def _encoded_length(text: str, codec: str) -> int:
    """``len(text.encode(codec, "xmlcharrefreplace"))``, what ElementTree's writer makes of
    ``text`` (after its escapes), or more: encoded a step at a time, so a step's bytes (ten
    a character at most) are all that is built, and stopped once past the item cap (red team
    R27: counted as a reference a character, two million ``é`` in ``latin-1`` were refused
    though they are two million bytes). A step ends in the codec's initial state, so steps
    add up to at least the whole."""
    total = 0
    for start in range(0, str.__len__(text), _XML_STEP):
        step = str.__getitem__(text, slice(start, start + _XML_STEP))
        total += len(str.encode(step, codec, "xmlcharrefreplace"))
        if total > MAX_ITEMS:
            break
    return total


def _xml_text_length(value: Any, widths: _XmlCodec, what: str, escaped: bool = True) -> int:
    """At least how long ``value`` (a tag, text, tail or attribute) is once ElementTree wrote it
    (``escaped``: as markup; the ``text`` method writes text as it is).

    Only exact types are written: ElementTree tests and escapes a value with its own ``in``,
    ``replace`` and ``%s``, so a program's object (or ``str`` subclass) returned a text it
    already held, a million characters for one counted (red team R27); it is refused.
    """
    if isinstance(value, ElementTree.QName):
        value = value.text
    kind = type(value)
    if value is None:
        return 0
    if kind is int or kind is bool:
        return int.bit_length(value) // 3 + 2  # decimal digits, in a comment's "%s"
    if kind is float:
        return _OTHER_XML
    if kind is not str:
        raise TypeError(f"{what} writes text (str) in the sandbox, not {kind.__name__}")
    length = str.__len__(value)
    # An escape replaces an ASCII character by ASCII ones: at most five more, ascii-wide each.
    specials = sum(str.count(value, char) for char in _XML_SPECIAL) if escaped else 0
    extra = (_ESCAPED - 1) * specials * widths.ascii
    if str.isascii(value):
        return length * widths.ascii + extra
    if widths.measured is not None:
        return _encoded_length(value, widths.measured) + extra
    if widths in _UTF_WIDTHS and _LONE_SURROGATE.search(value) is not None:
        # A UTF codec cannot hold a lone surrogate: ElementTree writes "&#55296;", eight ASCII
        # characters, four times what ``other`` bounds (red team R29: two million ``\ud800``
        # wrote 64 000 192 bytes in ``utf-32``, counted as 8 million).
        return length * max(widths.other, _SURROGATE_REFERENCE * widths.ascii) + extra
    return length * widths.other + extra  # as if every character were other


_OTHER_XML = 64  # a float: ElementTree refuses it or writes a short form
_PER_ELEMENT = 16  # "<", ">", "</", ">", and an attribute's "=" and quotes
_DECLARATION = 64  # "<?xml version='1.0' encoding='...'?>" but the encoding's name


def _checked_xml_text(
    element: Any, encoding: Any, method: Any, default_namespace: Any, what: str
) -> None:
    """Refuse writing ``element`` (or an ElementTree) when its text would pass the item cap:
    ElementTree escapes in one C call per text (``&amp;`` for ``&``, six times) and writes what
    the encoding cannot hold as ``&#1114111;`` (ten times; ``us-ascii`` by default). Counted a
    node at a time, in Python (the deadline's stop lands between them; red team R26), through
    ``Element``'s own methods; only an ``Element`` and exact text are written (red team R27)."""
    root = element.getroot() if isinstance(element, ElementTree.ElementTree) else element
    if not ElementTree.iselement(root):
        return  # the library words its own error
    if type(root) is not ElementTree.Element:
        raise TypeError(f"{what} writes an Element in the sandbox, not {type(root).__name__}")
    if method is not None and type(method) is not str:
        raise TypeError(f"{what} takes a method name (str) in the sandbox")
    widths = _xml_widths(encoding, what)
    if widths is None:
        return
    markup = method != "text"
    total = _DECLARATION + (str.__len__(encoding) if type(encoding) is str else 0)
    total += _PER_ELEMENT + _xml_text_length(default_namespace, widths, what)
    total *= widths.ascii
    # Checked after every text: measuring one costs up to its length, and a node may hold a
    # text thousands of times (one attribute value under many names).
    for node in ElementTree.Element.iter(root):
        tag: Any = node.tag
        if tag is not ElementTree.Comment and tag is not ElementTree.PI:
            total += _PER_ELEMENT * widths.ascii + 2 * _xml_text_length(tag, widths, what)
        total += _xml_text_length(node.text, widths, what, markup)
        check_items(total, what)
        total += _xml_text_length(node.tail, widths, what, markup)
        check_items(total, what)
        for name, value in ElementTree.Element.items(node):
            total += _PER_ELEMENT * widths.ascii
            total += _xml_text_length(name, widths, what)
            total += _xml_text_length(value, widths, what)
            check_items(total, what)


def checked_tostring(element: Any, encoding: Any = None, *args: Any, **kwargs: Any) -> Any:
    """``ElementTree.tostring`` with what it writes counted first (red team R26)."""
    method = args[0] if args else kwargs.get("method")
    namespace = kwargs.get("default_namespace")
    _checked_xml_text(element, encoding, method, namespace, "ElementTree.tostring()")
    return ElementTree.tostring(element, encoding, *args, **kwargs)


def checked_tostringlist(element: Any, encoding: Any = None, *args: Any, **kwargs: Any) -> Any:
    """``ElementTree.tostringlist`` with what it writes counted first (red team R26)."""
    method = args[0] if args else kwargs.get("method")
    namespace = kwargs.get("default_namespace")
    _checked_xml_text(element, encoding, method, namespace, "ElementTree.tostringlist()")
    return ElementTree.tostringlist(element, encoding, *args, **kwargs)


def textwrap_overrides() -> dict[str, Any]:
    """Checked ``textwrap`` functions."""
    return {
        "indent": _checked_indent,
        "wrap": _wrapping(textwrap.wrap),
        "fill": _wrapping(textwrap.fill),
    }


def _text_length(value: Any) -> int:
    if isinstance(value, str):
        return true_length(value)
    return estimated_text(value)


class CheckedTemplate(TEMPLATE):  # type: ignore[misc, valid-type]
    """``string.Template`` whose substitution checks the result's size first."""

    def _check(self, mapping: Any, kwargs: Mapping[str, Any]) -> None:
        values = {**(mapping or {}), **kwargs} if isinstance(mapping, Mapping) else dict(kwargs)
        fields = len(self.pattern.findall(self.template))
        # The values' text estimated, not built: str() of a shared structure is one C call.
        longest = max((_text_length(value) for value in values.values()), default=0)
        check_items(len(self.template) + fields * longest, "Template.substitute()")

    def substitute(self, mapping: Any = None, /, **kwargs: Any) -> str:
        """``Template.substitute`` with the result's size checked."""
        self._check(mapping, kwargs)
        return str(super().substitute(mapping or {}, **kwargs))

    def safe_substitute(self, mapping: Any = None, /, **kwargs: Any) -> str:
        """``Template.safe_substitute`` with the result's size checked."""
        self._check(mapping, kwargs)
        return str(super().safe_substitute(mapping or {}, **kwargs))


CheckedTemplate.__module__ = "string"
CheckedTemplate.__qualname__ = CheckedTemplate.__name__ = "Template"


def _checked_normalize(form: Any, text: str) -> str:
    check_items(len(text) * _NFKD_EXPANSION // 4, "unicodedata.normalize()")
    return unicodedata.normalize(form, text)


def unicodedata_overrides() -> dict[str, Any]:
    """Checked ``unicodedata`` functions."""
    return {"normalize": _checked_normalize}


def re_overrides() -> dict[str, Any]:
    """``re`` served through the deadline-bounded ``regex`` engine (see ``_regex``)."""
    return {**regex_module_names(), "escape": _re_escape}


#: The characters ``re.escape`` writes with a backslash before them.
_RE_SPECIAL = "()[]{}?*+-|^$\\.&~# \t\n\r\v\f"


def _re_escape(pattern: Any) -> Any:
    """``re.escape``, its text counted first: each special character writes two (red team
    R33: ``escape('.' * 9000000)`` wrote 18 000 000, ADR 0167)."""
    if type(pattern) in (str, bytes):
        text = pattern if type(pattern) is str else str(pattern, "latin-1")
        special = sum(str.count(text, character) for character in _RE_SPECIAL)
        check_items(len(text) + special, "re.escape()")
    return re.escape(pattern)


_re_escape.__module__ = "re"
_re_escape.__qualname__ = _re_escape.__name__ = "escape"


# ----------------------------------------------------------------------------- difflib


def _check_diff(a: Any, b: Any, what: str) -> None:
    work = max(len(a), 1) * max(len(b), 1)
    if work > MAX_DIFF_WORK:
        raise SizeLimitExceeded(
            f"{what} on inputs of {len(a)} and {len(b)} items exceeds the sandbox limit "
            f"({MAX_DIFF_WORK} item pairs)"
        )


class _CheckedSequenceMatcher(difflib.SequenceMatcher):  # type: ignore[type-arg]
    """``difflib.SequenceMatcher`` refusing inputs whose comparison would take too long."""

    def set_seq1(self, a: Any) -> None:
        _check_diff(a, getattr(self, "b", None) or (), "SequenceMatcher")
        super().set_seq1(a)

    def set_seq2(self, b: Any) -> None:
        _check_diff(getattr(self, "a", None) or (), b, "SequenceMatcher")
        super().set_seq2(b)


_CheckedSequenceMatcher.__module__ = "difflib"
_CheckedSequenceMatcher.__qualname__ = _CheckedSequenceMatcher.__name__ = "SequenceMatcher"


def _diffing(function: Callable[..., Any]) -> Callable[..., Any]:
    def checked(a: Any, b: Any, *args: Any, **kwargs: Any) -> Any:
        _check_diff(a, b, f"difflib.{function.__name__}()")
        return function(a, b, *args, **kwargs)

    checked.__name__ = function.__name__
    return checked


def _checked_close_matches(word: Any, possibilities: Any, *args: Any, **kwargs: Any) -> Any:
    possibilities = list(possibilities)
    longest = max((len(p) for p in possibilities), default=0)
    _check_diff(possibilities, range(max(len(word), 1) * max(longest, 1)), "get_close_matches()")
    return difflib.get_close_matches(word, possibilities, *args, **kwargs)


#: The ``difflib`` names exposed (Differ and HtmlDiff are left out: their cost is quadratic in
#: both lines and characters).
DIFFLIB_NAMES = frozenset(
    {
        "SequenceMatcher",
        "unified_diff",
        "context_diff",
        "ndiff",
        "get_close_matches",
        "IS_LINE_JUNK",
        "IS_CHARACTER_JUNK",
    }
)


def difflib_overrides() -> dict[str, Any]:
    """Checked ``difflib`` functions."""
    return {
        "SequenceMatcher": _CheckedSequenceMatcher,
        "unified_diff": _diffing(difflib.unified_diff),
        "context_diff": _diffing(difflib.context_diff),
        "ndiff": _diffing(difflib.ndiff),
        "get_close_matches": _checked_close_matches,
    }


class CheckedQName(ElementTree.QName):
    """``ElementTree.QName`` of text only: the real one formats any object it is given with
    ``%s`` and ``%r`` in one C call (a shared structure's text, red-team H10), and hashes it."""

    def __init__(self, text_or_uri: Any, tag: Any = None) -> None:
        for part in (text_or_uri, tag):
            if part is not None and not isinstance(part, str):
                raise TypeError(f"QName takes text in the sandbox, not {type(part).__name__}")
        super().__init__(exact_name(text_or_uri), None if tag is None else exact_name(tag))


CheckedQName.__module__ = "xml.etree.ElementTree"
CheckedQName.__qualname__ = CheckedQName.__name__ = "QName"
