"""Red team R27: the worker boundary's fast paths, ElementTree's counted writers, bubblewrap.

Attacked: the codec's plain-scalar lists (``_codec._plain_scalars``, both directions),
``_protocol.dump_line`` (pydantic-core first, ``json.dumps`` on ``NaN``/``Infinity`` or a lone
surrogate), the worker's report of what a run wrote (``_child._written``, the journal's keys),
``ElementTree.tostring``/``tostringlist`` as served (``_stdlib_text.checked_tostring``), and
bubblewrap's confinement (``_isolation.bwrap_command``, ``_env.host_binds``) with raw Python.

Held: the plain-scalar path takes exact types only (an ``int`` subclass, ``bool`` mixed with
``int``, NaN, an int past 10 000 bits either sign go item by item as before; ``-0.0`` crosses as
``-0.0``); a 400 000-digit integer on a subverted worker's line is refused by the parser;
``dump_line`` refuses NaN and infinities at any depth and both writers agree on big ints, ``-0.0``,
``1e+16`` and escapes (pydantic writes U+2028 raw, which still parses back equal); an envelope
inside a value still crosses in its envelope; DTD entities stop at expat's amplification limit;
``ElementTree.write``/``dump`` are not served and ``Element`` cannot be subclassed; under
bubblewrap the worker has no capabilities (``CapEff`` 0, ``NoNewPrivs`` 1), ``/tmp`` stops at
64 MiB, and only ``recurgent`` and ``.venv`` of the checkout are visible.

Broke, fixed:

* ``_child._written`` encoded the changed keys as one mapping: a run that wrote only
  ``context['__recurgent_bytes__']`` (or a non-string key such as ``context[1]``) made it a
  pairs envelope, and the parent stored ``['__recurgent_bytes__', 'abc']`` under
  ``"__recurgent_dict__"``. Each key is now encoded alone; a non-string key (changed or
  deleted: ``del context[1]`` answered ``memory_deleted=[1]``, a ``ValidationError`` that
  crashed the worker's answer) is refused as ``non_serializable_result``.
* ``checked_tostring`` counted a program's object (or ``str`` subclass) as text as 64
  characters while ElementTree wrote what its ``in``/``replace``/``%s`` returned: six children
  wrote 12 000 049 characters (a thousand would write 2 * 10**9 from one shared two-million
  string). Only an ``Element`` and exact text are written now. ``default_namespace`` was not
  counted (45 000 032 characters from nine million ``&``), and bytes were counted as characters
  (``utf-32``: 32 000 192 bytes for 1.6 million ``&``; ``utf-8``: 12 000 007 bytes for three
  million astral characters): counted now by the codec's widths.
* Raw Python under bubblewrap wrote 83 886 080 bytes (two 40 MiB files, and as many more as it
  liked) into ``/dev/shm``, ``/dev`` and ``/`` (unsized tmpfs: host memory) and into its scratch
  directory (the host's disk). ``/dev`` and ``/`` are read-only now and the scratch directory is
  a 64 MiB tmpfs.

Fixed after the red team (ADR 0155): ``latin-1`` text of ``é`` was counted ten a character (a
reference) though the codec writes one byte, so two million of them were refused within the
cap; text past ASCII under a single-byte codec is measured as the codec writes it.
"""

from __future__ import annotations

from typing import Any

import pytest

from recurgent._worker._codec import _plain_scalars, from_wire, to_wire
from recurgent._worker._executor import ProcessExecutor
from recurgent._worker._isolation import bwrap_path
from recurgent._worker._protocol import (
    RunResult,
    dump_line,
    parse_line,
)
from specs.sandbox.support import Host, error_of, execute, result_in_python, value_of
from specs.worker.support import worker_answer
from specs.worker.test_red_team_r25 import walled, worker_paths  # noqa: F401 (fixtures)

# --- 1. Plain-scalar lists (_codec._plain_scalars) -------------------------------------------


class _Int(int):
    pass


def test_only_exact_plain_scalars_take_the_whole_list_path() -> None:
    """An ``int`` subclass, ``bool`` beside ``int``, NaN and an integer past 10 000 bits (either
    sign; ``min`` sees the negative one) go item by item; ``-0.0`` and a list of ``bool``/``None``
    cross as they are, and the negative giant in its hexadecimal envelope."""
    assert [
        _plain_scalars(items)
        for items in (
            [1, _Int(2)],
            [1, True],
            [1.0, float("nan")],
            [-(2**10_000)],
            [2**10_000],
            [-(2**9_999), 2**9_999],
            [True, None, "a"],
            [-0.0],
        )
    ] == [False, False, False, False, False, True, True, True]
    encoded = to_wire([-(2**10_000), -0.0], "x", lambda _: None)
    assert encoded == [{"__recurgent_int__": hex(-(2**10_000))}, -0.0]
    assert str(from_wire(encoded, lambda *_: None)[1]) == "-0.0"


# --- 2. The line writer (_protocol.dump_line) ------------------------------------------------


def test_a_line_means_the_same_from_either_writer_and_refuses_non_finite_floats() -> None:
    """pydantic-core's line parses back to what was sent (a 10 000-bit integer, ``-0.0``,
    ``1e16``, U+2028, a text holding ``NaN`` that sends it through ``json.dumps``); a NaN or an
    infinity anywhere in a value is refused, and ``to_wire`` gives neither (it envelopes them,
    and a float key with its dict)."""
    values: list[Any] = [2**10_000 - 1, -0.0, 1e16, "\u2028 NaN Infinity", [{"k": [-(2**63)]}]]
    for value in values:
        line = dump_line(RunResult(call_id="c", status="ok", value=value))
        assert parse_line(line).value == value
    for bad in ({"a": [{"b": [float("nan")]}]}, [float("-inf")], {"x": float("inf")}):
        with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
            dump_line(RunResult(call_id="c", status="ok", value=bad))
    assert to_wire({float("inf"): float("nan")}, "x", lambda _: None) == {
        "__recurgent_dict__": [{"__recurgent_float__": "inf"}, {"__recurgent_float__": "nan"}]
    }


# --- 3. What a worker reports a run wrote (_child._written) ----------------------------------


def _in_process(memory: dict[str, Any], source: str) -> dict[str, Any]:
    host = Host(memory=dict(memory))
    result = execute(source, host=host)
    assert result.error is None, result.error
    return host.memory


def test_a_key_shaped_like_an_envelope_comes_back_as_that_key() -> None:
    """A run that wrote only ``context['__recurgent_bytes__']`` came back from a worker as
    ``memory_set == {'__recurgent_dict__': ['__recurgent_bytes__', 'abc']}``: the changed keys
    were encoded as one mapping, whose one envelope-shaped key made it a pairs envelope, and
    the parent stored the pairs under ``"__recurgent_dict__"``. In process the key is written."""
    source = "context['__recurgent_bytes__'] = 'abc'\nreturn 0"
    answer = worker_answer({"x": 1}, source)

    assert (answer.status, answer.memory_set, answer.memory_deleted) == (
        "ok",
        {"__recurgent_bytes__": "abc"},
        [],
    )
    assert _in_process({"x": 1}, source) == {"x": 1, "__recurgent_bytes__": "abc"}


def test_a_value_with_an_envelope_in_it_still_crosses_in_its_envelope() -> None:
    """Each changed key's value is encoded on its own, with its envelopes: a tuple and a dict
    shaped like an envelope come back as themselves once decoded."""
    source = "context['t'] = (1, 2)\ncontext['d'] = {'__recurgent_int__': 'ff'}\nreturn 0"
    answer = worker_answer({"x": 1}, source)

    assert answer.memory_set == {
        "t": {"__recurgent_tuple__": [1, 2]},
        "d": {"__recurgent_dict__": ["__recurgent_int__", "ff"]},
    }
    assert {key: from_wire(value, lambda *_: None) for key, value in answer.memory_set.items()} == {
        "t": (1, 2),
        "d": {"__recurgent_int__": "ff"},
    }


def test_a_key_that_is_not_a_string_is_refused_not_renamed() -> None:
    """``context[1] = 2`` came back as ``{'__recurgent_dict__': [1, 2]}`` (the parent wrote a
    list under ``"__recurgent_dict__"``); ``memory_set`` names keys by strings only, so the run
    is refused as one whose memory cannot cross, and nothing is written."""
    answer = worker_answer({"x": 1}, "context[1] = 2\nreturn 0")

    assert answer.error is not None
    assert (answer.status, answer.memory_set, answer.memory_patches) == ("error", {}, {})
    assert (answer.error.error_type, answer.error.message) == (
        "non_serializable_result",
        "context has a key of type int; memory keys cross the worker boundary as strings only; "
        "only plain data (dicts, lists, strings, numbers, booleans, None, Outcomes) can cross "
        "the worker boundary",
    )


def test_deleting_a_key_that_is_not_a_string_is_refused_not_a_crash() -> None:
    """Host memory may hold ``1`` as a key (it crosses in a pairs envelope); ``del context[1]``
    in a worker answered ``memory_deleted=[1]``, which the protocol's ``list[str]`` refused as
    a ``ValidationError`` outside the worker's error handling. Refused as memory that cannot
    cross."""
    answer = worker_answer({1: "a", "x": 1}, "del context[1]\nreturn 0")

    assert answer.error is not None
    assert (answer.status, answer.memory_deleted, answer.error.error_type) == (
        "error",
        [],
        "non_serializable_result",
    )


def test_only_the_touched_keys_come_back_and_a_deleted_key_is_reported() -> None:
    """The journal's keys, each encoded alone: an in-place change nested two levels deep, a
    ``setdefault`` and a delete come back; the untouched key does not."""
    source = """
    context['a']['b'].append(3)
    context.setdefault('n', []).append(1)
    del context['gone']
    return 0
    """
    memory = {"a": {"b": [1, 2]}, "left": [0] * 10, "gone": 1}
    answer = worker_answer(memory, source)

    assert (answer.memory_set, answer.memory_deleted) == (
        {"a": {"b": [1, 2, 3]}, "n": [1]},
        ["gone"],
    )
    assert _in_process(memory, source) == {"a": {"b": [1, 2, 3]}, "left": [0] * 10, "n": [1]}


# --- 4. ElementTree.tostring/tostringlist counted (_stdlib_text.checked_tostring) -------------

ET_HEAD = "import xml.etree.ElementTree as ET\nBIG = 'x' * 2_000_000\n"


class TestElementTreeWritesWhatItCounted:
    """What ``tostring`` writes is what was counted: a program's object (or ``str`` subclass) as
    text answered ElementTree's ``in``/``replace``/``%s`` with a text it already held (six
    children wrote 12 000 049 characters, counted as a few hundred); ``default_namespace`` was
    not counted (45 000 032 characters from nine million ``&``); bytes were counted as
    characters (``utf-32`` wrote 32 000 192 bytes for 1.6 million ``&``)."""

    @pytest.mark.parametrize(
        ("build", "kind"),
        [
            (
                "class T:\n    def __contains__(self, c):\n        return True\n"
                "    def replace(self, a, b):\n        return BIG\n"
                "root = ET.Element('r')\nfor i in range(6):\n    ET.SubElement(root, 'c').text = T()\n",
                "T",
            ),
            (
                "class C:\n    def __str__(self):\n        return BIG\n"
                "root = ET.Element('r')\nfor i in range(6):\n    root.append(ET.Comment(C()))\n",
                "C",
            ),
        ],
    )
    def test_a_programs_object_as_text_is_refused(self, build: str, kind: str) -> None:
        """Text and a comment's text of a program's class: refused before anything is written
        (in plain Python each wrote 12 000 049 characters). An attribute value held: the
        sandbox's ``SubElement`` keeps exact text."""
        error_type, message = error_of(
            ET_HEAD + build + "result = len(ET.tostring(root, encoding='unicode'))"
        )
        assert (error_type, message) == (
            "execution",
            "Execution error in tester.run: TypeError: ElementTree.tostring() writes text (str) "
            f"in the sandbox, not {kind}",
        )

    def test_an_object_that_only_looks_like_an_element_is_refused(self) -> None:
        """An object with an element's attributes, counted by its own ``iter``, wrote by its
        ``__iter__`` and ``text``: only an ``Element`` is written."""
        build = (
            "class D:\n    tag = 'd'\n    text = BIG\n    tail = None\n    attrib = {}\n"
            "    def iter(self):\n        return iter([])\n"
            "    def items(self):\n        return []\n"
            "    def __iter__(self):\n        return iter([])\n"
            "    def __len__(self):\n        return 0\n"
            "result = len(ET.tostringlist(D(), 'unicode'))"
        )
        assert error_of(ET_HEAD + build) == (
            "execution",
            "Execution error in tester.run: TypeError: ElementTree.tostringlist() writes an "
            "Element in the sandbox, not D",
        )

    @pytest.mark.parametrize(
        ("call", "items"),
        [
            (
                "e = ET.Element('{u}a')\nET.tostring(e, 'unicode', default_namespace='&' * 9 * 10**6)",
                54_000_111,
            ),
            ("e = ET.Element('a')\ne.text = '&' * 1_600_000\nET.tostring(e, 'utf-32')", 38_400_416),
            (
                "e = ET.Element('a')\ne.text = '\\U0001f600' * 3 * 10**6\nET.tostring(e, 'utf-8')",
                12_000_103,
            ),
        ],
    )
    def test_what_the_count_missed_is_refused(self, call: str, items: int) -> None:
        """``default_namespace`` (45 000 032 written), ``utf-32`` (four bytes a character:
        32 000 192 written) and ``utf-8`` of astral text (four bytes a character: 12 000 007
        written, counted three million): refused as what they would write."""
        assert error_of("import xml.etree.ElementTree as ET\n" + call) == (
            "resource_limit",
            f"Resource limit in tester.run: ElementTree.tostring() would create {items} items; "
            "the sandbox limit is 10000000",
        )

    def test_within_the_cap_the_text_is_what_plain_python_writes(self) -> None:
        """Nine million ASCII characters under the default ``us-ascii`` and a named one, two million ``é`` in
        ``utf-8``, 900 000 in ``latin-1`` (counted ten a character: ``&#233;`` where a codec cannot hold it), a namespaced tree with a default namespace and a comment:
        the same bytes and text as plain Python."""
        build = (
            "big = ET.Element('a')\nbig.text = 'x' * 9 * 10**6\n"
            "e = ET.Element('b')\ne.text = 'é' * 2 * 10**6\n"
            "n = ET.Element('{urn:x}r', {'{urn:y}k': 'v&'})\nn.append(ET.Comment('c'))\n"
            "ET.SubElement(n, '{urn:x}s').text = '<'\n"
            "l = ET.Element('c')\nl.text = 'é' * 900_000\n"
            "result = [len(ET.tostring(big)), len(ET.tostring(big, 'US-ASCII')),\n"
            "          len(ET.tostring(e, 'utf-8')),\n"
            "          len(ET.tostring(l, 'latin-1')),\n"
            "          ET.tostring(n, 'unicode', default_namespace='urn:x')]\n"
        )
        source = "import xml.etree.ElementTree as ET\n" + build
        plain = result_in_python(source)
        assert value_of(source) == plain
        assert plain == [
            9_000_007,
            9_000_007,
            4_000_007,
            900_048,
            '<r xmlns="urn:x" xmlns:ns1="urn:y" ns1:k="v&amp;"><!--c--><s>&lt;</s></r>',
        ]


class TestSingleByteCodecsMeasured:
    """Fixed after the red team (ADR 0155): under a single-byte codec every character past
    ASCII was counted as a reference (ten bytes), also one the codec holds (``latin-1``'s ``é``
    is one byte), so two million of them were refused within the cap. Such text is measured
    now as the codec writes it (a step at a time, references included)."""

    def test_latin_1_text_within_the_cap_is_written(self) -> None:
        """Two million ``é`` under ``latin-1`` are two million bytes, as plain Python writes
        them; the count said twenty million and refused them."""
        source = (
            "import xml.etree.ElementTree as ET\ne = ET.Element('a')\ne.text = 'é' * 2 * 10**6\n"
            "result = len(ET.tostring(e, 'latin-1'))"
        )
        assert value_of(source) == 2_000_048

    def test_what_a_codec_holds_and_what_it_cannot_are_as_plain_python_writes(self) -> None:
        """Within the cap, the bytes are plain Python's: ``é`` and ``中`` alternating under
        ``latin-1`` (one byte, then ``&#20013;``), ``cp1252``'s euro sign, ``koi8_r`` holding
        Cyrillic but not ``é`` (``&#233;``), escapes and a newline in a non-ASCII attribute,
        a lone surrogate, and a default namespace past ASCII."""
        build = (
            "a = ET.Element('a')\na.text = 'é中' * 10**6\n"
            "b = ET.Element('b', k='é\\n\"&中')\nb.text = '€ é ж <\\ud800>'\n"
            "n = ET.Element('{urn:é}r')\nn.text = 'ж'\n"
            "result = [len(ET.tostring(a, 'latin-1')), ET.tostring(b, 'latin-1'),\n"
            "          ET.tostring(b, 'cp1252'), ET.tostring(b, 'koi8_r'), ET.tostring(b),\n"
            "          ET.tostring(n, 'latin-1', default_namespace='urn:é')]\n"
        )
        source = "import xml.etree.ElementTree as ET\n" + build
        plain = result_in_python(source)
        assert value_of(source) == plain
        assert plain[0] == 9_000_048
        assert (
            plain[4]
            == b'<b k="&#233;&#10;&quot;&amp;&#20013;">&#8364; &#233; &#1078; &lt;&#55296;&gt;</b>'
        )

    def test_one_text_under_many_attribute_names_is_refused_at_the_second(self) -> None:
        """Three hundred attributes holding one nine-million-character text: each is measured
        (up to its length) and the count is checked after each, so the second refuses it
        (checked once a node, the count scanned every value first: the five-second deadline
        stopped it)."""
        source = (
            "import xml.etree.ElementTree as ET\nBIG = 'é' * 9 * 10**6\ne = ET.Element('a')\n"
            "for i in range(300):\n    e.set('k%d' % i, BIG)\n"
            "result = len(ET.tostring(e, 'latin-1'))"
        )
        assert error_of(source) == (
            "resource_limit",
            "Resource limit in tester.run: ElementTree.tostring() would create 18000141 items; "
            "the sandbox limit is 10000000",
        )

    @pytest.mark.parametrize(
        ("text", "encoding"),
        [
            # "&#1114111;" for each: ten bytes a character, as counted before.
            ("'\\U0010ffff' * 10**6", "'latin-1'"),
            ("'\\U0010ffff' * 10**6", "None"),
            # Held (one byte) and not (eight) alternating: 10 800 048 bytes.
            ("'é中' * 12 * 10**5", "'latin-1'"),
            # koi8_r holds ж, not é (a reference of six): 10 500 047 bytes.
            ("'жé' * 15 * 10**5", "'koi8_r'"),
        ],
    )
    def test_what_passes_the_cap_is_refused(self, text: str, encoding: str) -> None:
        """Measured as the codec writes it, references included, the count still refuses text
        that would pass the cap (measuring stops a step past it, so the figure is where it
        stopped)."""
        source = (
            f"import xml.etree.ElementTree as ET\ne = ET.Element('a')\ne.text = {text}\n"
            f"result = len(ET.tostring(e, {encoding}))"
        )
        error_type, message = error_of(source)
        prefix = "Resource limit in tester.run: ElementTree.tostring() would create "
        assert (error_type, message.startswith(prefix)) == ("resource_limit", True)
        items = int(message[len(prefix) :].split()[0])
        assert 10_000_000 < items <= 10_000_000 + 10 * 2**16 + 200


# --- 5. What an escaped program may write under bubblewrap (_isolation.bwrap_command) ---------

_FILL = r"""
import os
chunk = b'x' * (40 << 20)
out = []
for folder in ['/dev/shm', '/dev', '/', os.getcwd(), '/tmp']:
    total, names = 0, []
    try:
        for i in range(2):
            names.append(os.path.join(folder, 'fill%d' % i))
            with open(names[-1], 'wb') as handle:
                handle.write(chunk)
            total += os.path.getsize(names[-1])
        out.append([total, None])
    except OSError as error:
        out.append([total, error.strerror])
    for name in names:
        try:
            os.remove(name)
        except OSError:
            pass
with open('/dev/null', 'w') as handle:
    handle.write('still a device')
result = out
"""


@pytest.mark.slow
@pytest.mark.skipif(bwrap_path() is None, reason="bwrap (bubblewrap) cannot run here")
def test_an_escaped_program_writes_at_most_64_mib_a_folder(
    walled: ProcessExecutor,  # noqa: F811 (the fixture of red team R25)
) -> None:
    """Raw Python in the worker wrote two 40 MiB files (83 886 080 bytes, and as many more as
    it liked: ``RLIMIT_FSIZE`` bounds a file, not their number) into ``/dev/shm``, ``/dev`` and
    ``/`` (tmpfs bubblewrap makes without a size: host memory) and into its scratch directory
    (bound from the host's disk); only ``/tmp`` stopped at 64 MiB. Now ``/dev`` and ``/`` are
    read-only and the scratch directory is a 64 MiB tmpfs of its own."""
    raw = walled.run_raw(_FILL)

    assert raw.error is None, raw.error
    assert raw.value == [
        [0, "Read-only file system"],
        [0, "Read-only file system"],
        [0, "Read-only file system"],
        [41_943_040, "No space left on device"],
        [41_943_040, "No space left on device"],
    ]
