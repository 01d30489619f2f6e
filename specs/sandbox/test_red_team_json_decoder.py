"""Red team R5's open finding: a program's ``json.JSONDecoder`` subclass reads its decoder's parts natively.

A program's class is one of its own, so ``self.x`` on its instance is a native read (the fast
path and the attribute guard both), and ``JSONDecoder.__init__`` (library code) stores the
library's own objects on that instance. Assessed attribute by attribute (ADR 0129):

- **``parse_int`` was a real hole (fixed).** The library's default is the builtin ``int``, the
  class ADR 0123 replaced with a checked stand-in: ``self.parse_int('f' * 300_000, 16)`` built a
  1 200 000-bit int, past the cap, and ``'f' * 9_000_000`` a 36-million-bit one, on which
  ``%``/``//`` run superlinear C calls for minutes (issue 21). The sandbox's ``JSONDecoder`` now
  passes the checked ``int`` as the default, so the instance (and its C scanner) hold that.
- **Harmless, pinned below.** ``parse_object``/``parse_array`` (the library's ``JSONObject`` and
  ``JSONArray``, Python functions): a function has no public attribute and every private one is
  refused (``__globals__``, ``__code__``, ``__defaults__``...); calling one parses the text given
  to it with the callables given to it (``scan_once``, hooks, ``memo``, ``_w``), all the
  program's own or the decoder's, and hands them only new plain values (str, int, list, dict);
  nothing module-level is changed; their frames are library frames the deadline stops (ADR
  0089). ``scan_once`` (the C ``Scanner``): its attributes are refused, calling it parses like
  ``json.loads`` (ints through the decoder's ``parse_int``, now checked). ``parse_string`` (C
  ``scanstring``): linear. ``parse_constant`` (``dict.__getitem__`` bound to the library's table
  of three floats): reads only; ``__self__`` is private. ``parse_float``: ``float``, served as is
  anyway. ``memo``: the instance's own dict.
"""

from __future__ import annotations

import pytest

from specs.sandbox.support import error_of, value_of

_DECODER = (
    "import json\n"
    "class D(json.JSONDecoder):\n"
    "    def part(self, name):\n"
    "        return getattr(self, name)\n"
    "d = D()\n"
)


class TestParseInt:
    """The fixed hole: the subclass's ``parse_int`` is the checked ``int``."""

    def test_hex_text_past_the_cap_is_refused(self) -> None:
        """``self.parse_int('f' * 300_000, 16)`` built 1 200 000 bits before the fix."""
        source = (
            "import json\n"
            "class D(json.JSONDecoder):\n"
            "    def go(self):\n"
            "        return self.parse_int('f' * 300_000, 16).bit_length()\n"
            "result = D().go()"
        )
        assert error_of(source) == (
            "resource_limit",
            "Resource limit in tester.run: int() of text would create a number of about "
            "1199997 bits; the sandbox limit is 1000000 bits",
        )

    def test_it_is_the_programs_int(self) -> None:
        """``parse_int`` is ``int`` as the program sees it, read natively or through getattr."""
        assert value_of(_DECODER + "result = [d.parse_int is int, d.part('parse_int') is int]") == [
            True,
            True,
        ]

    def test_a_given_parse_int_is_kept(self) -> None:
        """A ``parse_int`` the program passes is the one used (and read back)."""
        assert value_of(
            "import json\n"
            "class D(json.JSONDecoder):\n"
            "    pass\n"
            "def twice(text):\n"
            "    return int(text) * 2\n"
            "d = D(parse_int=twice)\n"
            "result = [d.parse_int is twice, d.decode('[1, 21]')]"
        ) == [True, [2, 42]]

    def test_decoding_answers_as_the_library_does(self) -> None:
        """Ints, floats, constants, objects and strings decode as plain ``json`` decodes them."""
        assert value_of(
            _DECODER
            + 'text = \'{"a": [1, -20, 3.5, 1e3, true, null, "x\\\\u00e9"], "b": NaN}\'\n'
            + "v = json.loads(text, cls=D)\n"
            + "result = [v['a'], type(v['a'][0]) is int, str(v['b']), d.raw_decode('[7] x')]"
        ) == [[1, -20, 3.5, 1000.0, True, None, "xé"], True, "nan", ([7], 3)]

    def test_a_json_int_past_the_digit_limit_is_still_a_value_error(self) -> None:
        """Digits past CPython's 4 300 are refused as the builtin refuses them."""
        kind, message = error_of(_DECODER + "result = d.decode('9' * 5000)")
        assert kind == "execution"
        assert (
            "ValueError: Exceeds the limit (4300 digits) for integer string conversion" in message
        )


class TestTheOtherPartsAreHarmless:
    """What a subclass reads besides ``parse_int`` reaches nothing a program could not."""

    @pytest.mark.parametrize(
        "name", ["__globals__", "__code__", "__defaults__", "__closure__", "__module__"]
    )
    def test_a_library_functions_private_attributes_are_refused(self, name: str) -> None:
        """``parse_object``'s private attributes (its module's globals first) are refused."""
        kind, message = error_of(_DECODER + f"result = getattr(d.parse_object, {name!r})")
        assert kind == "execution"
        assert f"AttributeError: {name!r} is not accessible" in message

    @pytest.mark.parametrize("name", ["parse_int", "parse_float", "object_hook", "strict", "memo"])
    def test_the_scanners_attributes_are_refused(self, name: str) -> None:
        """The C scanner's members (which name the decoder's callables) are not readable."""
        kind, message = error_of(_DECODER + f"s = d.scan_once\nresult = getattr(s, {name!r})")
        assert kind == "execution"
        assert f"attribute {name!r} of Scanner objects is not accessible" in message

    def test_calling_the_parts_parses_the_programs_own_text(self) -> None:
        """``parse_object``, ``parse_array``, ``scan_once``, ``parse_string`` and
        ``parse_constant`` answer plain values parsed from the text they are given."""
        assert value_of(
            _DECODER
            + "memo = {}\n"
            + "result = [\n"
            + "    d.parse_object(('{\"a\": 1}', 1), True, d.scan_once, None, None, memo),\n"
            + "    memo,\n"
            + "    d.parse_array(('[1, [2]]', 1), d.scan_once),\n"
            + "    d.scan_once('[1, 2.5]', 0),\n"
            + "    d.parse_string('\"ab\" ', 1, True),\n"
            + "    str(d.parse_constant('-Infinity')),\n"
            + "]"
        ) == [({"a": 1}, 8), {"a": "a"}, ([1, [2]], 8), ([1, 2.5], 8), ("ab", 4), "-inf"]

    def test_the_scanner_converts_ints_with_the_checked_int(self, unlimited_digits: None) -> None:
        """With the host's digit limit lifted, ``scan_once`` of 310 000 digits is refused by the
        sandbox's own count (the builtin would convert them, superlinearly, in C)."""
        assert error_of(_DECODER + "result = d.scan_once('9' * 310_000, 0)") == (
            "resource_limit",
            "Resource limit in tester.run: int() of text would create a number of about "
            "1029795 bits; the sandbox limit is 1000000 bits",
        )
