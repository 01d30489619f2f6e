"""Red team R19: display and log encoding (ADRs 0142, 0143, 0141's follow-up), from a hostile
program.

ADR 0142 bounds the text the host writes implicitly for a program's answer (``repr``/``str`` of
an Outcome, rich's fields, an agent's ``repr``/``dir``, the JSON dumps); ADR 0143 writes log
lines with pydantic-core's encoder, the standard library's taking what it refuses. Tried (the
figures are runs on the shared 2-core machine; docs/security.md has them all):

1. BROKEN, fixed: text longer than the walk counts it. ``outgrows`` counts a character as one,
   but ``repr`` escapes some in up to ten (``chr(0x10FFFF)`` is ``'\\U0010ffff'``), and a kind
   it does not walk is shown by its own ``repr`` whatever its length (a datetime writes its
   timezone's name). ``chr(0x10FFFF) * 999_000`` was 9 990 021 characters of ``repr(outcome)``
   and the same in rich's field; a datetime with a 2-million-character timezone name 2 000 107;
   ``['\\x00' * 1000] * 500`` 2 002 019. ``describe`` measures the text it wrote: 2 125 each.
2. BROKEN, fixed: the preview wrote the whole text first. ``safe_repr`` bounded lists, tuples
   and dicts only; a set, a deque, an exception, an ``OrderedDict`` (or ``defaultdict``,
   ``Counter``), and an exception inside a list were written by their full ``repr`` and cut
   afterwards (reprlib writes any kind it has no rule for in full). An answer of 20 million
   characters of text: 45 MB traced for a 2 125-character preview; of a billion characters
   (``[[s] * 1000] * 100``, one 10 000-character ``s``): 2.5 to 6.5 s per ``repr`` or ``str``
   and 2.0 GB at the peak. ``repr(agent)`` lists a memory key that is not a string by its
   ``safe_repr``: a frozenset key of that size took 7.2 s, an exception key 3.4 s. The bounded
   repr writes them within its limit: 15 KB traced, 0.0 s.
3. BROKEN, fixed: a line still over ``MAX_LINE_BYTES`` once its bulky fields were omitted was
   cut as one value of 64 items, so it kept its first 64 of 134 fields: a delegated child given
   contract fields of control characters (six bytes each in JSON) had a 3 024 517-byte line,
   written as 2 050 bytes without its ``call_id``, ``trace_id``, ``parent_call_id``, ``depth``
   or ``outcome_status``. Each field is cut now, none dropped: 41 089 bytes, all 134 fields.
4. BROKEN, fixed: ``MAX_JSON_DUMP_CHARS`` counted a character as one; JSON writes a control
   character in six. Metadata of ``['\\x00' * 1_000_000] * 60`` (1 MB of memory) passed the
   64-million check: ``model_dump_json`` wrote 360 000 477 characters in 0.82 s, ``to_dict``
   240 million in 0.72 s. The dump's check counts each string's escapes: refused in 13 ms.
   Left: the content store's check has the same gap (``'\\x00' * 2_000_000`` is written, 12
   MB, and refused on every call: 57.5 ms against 12.5 ms), bounded at six times its limit.
5. Held: a lone surrogate beside a secret in a call's arguments and answer (the line goes to
   the standard library's encoder, whole, the secret masked, pinned below); tuple keys, NaN,
   big ints, deep nesting (every field is ``json_safe``'d first, so pydantic-core and the
   standard library see the same JSON types); error outcomes with huge metadata (``repr``,
   ``str``, ``unwrap()``'s exception and its traceback show only the bounded message).
"""

from __future__ import annotations

import json
import tracemalloc
from pathlib import Path

import pytest
from pydantic_core import PydanticSerializationError

from recurgent import Agent
from recurgent._observability import MAX_LINE_BYTES, _fit
from recurgent._repr import safe_repr
from recurgent._values import outgrows
from recurgent.outcome import MAX_JSON_DUMP_CHARS, Outcome
from recurgent.testing import ScriptedProvider

_NOTE = " <not shown in full: its text is over 1,000,000 characters; the value itself is whole>"


def _answer(program: str) -> Outcome:
    agent = Agent("t", provider=ScriptedProvider({"make": program}), log=False)
    return agent.make()


class TestTextLongerThanItsWalk:
    """Finding 1: the text ``describe`` writes is measured, not only the walk's lower bound."""

    def test_escaped_characters_are_shown_by_a_preview(self) -> None:
        """``chr(0x10FFFF) * 999_000``: ten characters of ``repr`` each (9 990 021 before)."""
        outcome = _answer("result = chr(0x10ffff) * 999_000")

        text = repr(outcome)

        assert (len(text), text.startswith("Outcome(ok, value='\\U0010ffff"), text[-87:]) == (
            2125,
            True,
            _NOTE + ")",
        )
        assert (len(str(outcome)), len(outcome.value)) == (999_000, 999_000)  # str escapes none

    def test_rich_yields_the_preview_too(self) -> None:
        """rich's field is the description, not the string rich would write in full."""
        outcome = _answer("result = chr(0x10ffff) * 999_000")

        fields = dict(outcome.__rich_repr__())

        assert (fields["status"], len(repr(fields["value"]))) == ("ok", 2106)

    def test_a_datetime_with_a_long_timezone_name(self) -> None:
        """A kind the walk does not look into: 2 000 107 characters before."""
        outcome = _answer(
            "import datetime\nzone = datetime.timezone(datetime.timedelta(0), 'x' * 2_000_000)\n"
            "result = datetime.datetime(2020, 1, 1, tzinfo=zone)"
        )

        text = repr(outcome)

        assert (len(text), text[:60]) == (
            2125,
            "Outcome(ok, value=datetime.datetime(2020, 1, 1, 0, 0, tzinfo",
        )
        assert str(outcome) == "2020-01-01 00:00:00+00:00"

    def test_repeated_control_characters(self) -> None:
        """``['\\x00' * 1000] * 500``: counted 501 500, written 2 002 019 before."""
        outcome = _answer("result = ['\\x00' * 1000] * 500")

        assert (len(repr(outcome)), len(str(outcome))) == (2125, 2106)

    def test_a_value_just_under_the_limit_still_shows_whole(self) -> None:
        """The measure keeps ADR 0142's edge: a ``repr`` of exactly a million is shown."""
        outcome = _answer("result = 'x' * 999_998")

        assert (len(repr(outcome)), repr(outcome).endswith("x')")) == (1_000_019, True)


class TestThePreviewIsWrittenWithinItsLimit:
    """Finding 2: kinds reprlib has no rule for were written in full, then cut."""

    @pytest.mark.parametrize(
        ("program", "head"),
        [
            (
                "s = 'x' * 10_000\nresult = ValueError([[s] * 100] * 20)",
                "Outcome(ok, value=ValueError([['xxxxxxx",
            ),
            (
                "import collections\ns = 'x' * 10_000\n"
                "result = collections.deque([[s] * 100] * 20)",
                "Outcome(ok, value=deque([['xxxxxxxxxxxx",
            ),
            (
                "s = 'x' * 10_000\nt = (s,) * 100\nresult = {(0, t)} | {(i, t) for i in range(20)}",
                "Outcome(ok, value={(",
            ),
            (
                "import collections\ns = 'x' * 10_000\n"
                "result = collections.OrderedDict(a=[[s] * 100] * 20)",
                "Outcome(ok, value=OrderedDict({'a': [['x",
            ),
            (
                "s = 'x' * 10_000\nresult = [ValueError([[s] * 100] * 20)]",
                "Outcome(ok, value=[ValueError([['xxxxxx",
            ),
        ],
        ids=["exception", "deque", "set", "ordered_dict", "exception_in_a_list"],
    )
    def test_twenty_million_characters_are_previewed_in_kilobytes(
        self, program: str, head: str
    ) -> None:
        """20 million characters of text: 45 MB traced for the preview before, now under 1 MB."""
        outcome = _answer(program)

        tracemalloc.start()
        try:
            shown, plain = repr(outcome), str(outcome)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

        assert (len(shown), shown[: len(head)], shown.endswith(_NOTE + ")"), len(plain)) == (
            2125,
            head,
            True,
            2106,
        )
        assert peak < 1_000_000, peak

    @pytest.mark.parametrize(
        ("key", "shown"),
        [
            ("frozenset({(i, (s,) * 20) for i in range(100)})", "frozenset({("),
            ("ValueError([[s] * 20] * 100)", "ValueError([['xxxxxxxxxx"),
        ],
        ids=["frozenset", "exception"],
    )
    def test_an_agents_memory_key_is_listed_within_its_limit(self, key: str, shown: str) -> None:
        """``repr(agent)`` lists a key that is not a string by its bounded ``safe_repr``, which
        wrote a frozenset or an exception key in full first: 45 MB traced for 20 million
        characters before, now under 1 MB."""
        program = f"s = 'x' * 10_000\ncontext[{key}] = 1\nresult = 1"
        agent = Agent("t", provider=ScriptedProvider({"put": program}), log=False)
        agent.put()

        tracemalloc.start()
        try:
            text = repr(agent)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

        prefix = "<Agent(t) context=['conversation_history', \""
        assert (len(text), text.startswith(prefix + shown), text[-23:]) == (
            147,
            True,
            '...<1024 more chars>"]>',
        )
        assert peak < 1_000_000, peak


class TestALineCutToTheCapKeepsEveryField:
    """Finding 3: the last resort cuts each field, so the fields naming the call stay."""

    def test_a_delegated_childs_contract_of_control_characters(self, tmp_path: Path) -> None:
        """The child's line: 3 024 517 bytes as made; written before as 65 fields (its first
        64 and a ``...`` marker) without ``call_id``; now all 134, under the cap."""
        log = tmp_path / "calls.jsonl"
        parent = (
            "c = '\\x01' * 4000\nL = [c] * 100\n"
            "P = {'p' + str(i): {'description': c} for i in range(100)}\n"
            "h = delegate('helper', purpose=c, acceptance=L, failure_policy=L,"
            " deliverable={'type': 'object', 'properties': P})\n"
            "out = h.work()\nresult = 1"
        )
        provider = ScriptedProvider({("tester", "go"): parent, ("helper", "work"): "result = {}"})
        agent = Agent("tester", provider=provider, guardrail_recovery_budget=0, log=log)

        outcome = agent.go()

        lines = log.read_bytes().splitlines()
        child, parent_line = (json.loads(line) for line in lines)
        assert (outcome.value, [len(line) < MAX_LINE_BYTES for line in lines]) == (
            1,
            [True, True],
        )
        assert (
            child["role"],
            len(child),
            "..." in child,
            child["parent_call_id"] == parent_line["call_id"],
            child["depth"],
            child["outcome_status"],
            len(child["call_id"]),
        ) == ("helper", 134, False, True, 1, "ok", 16)

    def test_the_last_form_bounds_any_number_of_fields(self) -> None:
        """300 fields of 4 096 control characters: cut each to 1 024 they are still 1.8 MB;
        the last form keeps every field's name, its scalars and 256 characters of its text."""
        fields = {f"field_{i}": "\x01" * 4096 for i in range(300)} | {"call_id": "abc", "n": 7}

        line = _fit(fields)

        parsed = json.loads(line)
        assert (len(line) < MAX_LINE_BYTES, len(parsed), parsed["call_id"], parsed["n"]) == (
            True,
            302,
            "abc",
            7,
        )
        assert parsed["field_0"] == "\x01" * 256 + "...<3840 more chars>"


class TestJsonDumpCountsEscapes:
    """Finding 4: the dump's check counts what JSON adds to escape a string."""

    def test_eleven_references_to_a_million_nul_characters_are_refused(self) -> None:
        """66 000 034 characters of JSON (11 x 6 000 002, 10 commas, 2 brackets), counted as
        11 000 034 before: ``model_dump_json`` wrote them all."""
        outcome = _answer("result = ['\\x00' * 1_000_000] * 11")

        with pytest.raises(PydanticSerializationError, match="over 64,000,000 characters"):
            outcome.model_dump_json()
        assert outgrows(outcome.value, MAX_JSON_DUMP_CHARS, escapes=True)

    def test_the_count_is_exact_for_each_kind_of_escape(self) -> None:
        """A quote, a backslash and ``\\n`` add one; ``\\x00`` adds five; ``\\x7f`` and a
        line separator none: the six characters below are 17 of JSON, counted exactly."""
        text = '\x00\n"\\x\x7f\u2028'
        written = len(json.dumps(text, ensure_ascii=False))

        assert (written, outgrows(text, written - 1, escapes=True)) == (17, True)
        assert outgrows(text, written, escapes=True) is False

    def test_a_value_that_fits_still_dumps(self) -> None:
        """A million lines of text (three million characters of JSON) dump as before."""
        outcome = _answer("result = 'a\\n' * 1_000_000")

        assert json.loads(outcome.model_dump_json())["value"] == "a\n" * 1_000_000


class TestHeld:
    def test_a_surrogate_beside_a_secret_is_written_whole_and_masked(self, tmp_path: Path) -> None:
        """pydantic-core refuses the lone surrogate; the standard library's line is whole, the
        surrogate a ``?`` and the secret masked in the arguments and the answer."""
        log = tmp_path / "calls.jsonl"
        secret = "sk-ant-api03-abcdefghijklmnopqrstuvwxyz0123456789ABCD"
        agent = Agent(
            "t",
            provider=ScriptedProvider(
                {"echo": "result = [args[0], args[1], chr(0xdfff) + args[1]]"}
            ),
            log=log,
            debug=True,
        )

        outcome = agent.echo("\ud800x", secret)

        raw = log.read_bytes()
        line = json.loads(raw)
        assert (outcome.ok, secret.encode() in raw, line["args"], line["outcome_value"]) == (
            True,
            False,
            ["?x", "[REDACTED]"],
            ["?x", "[REDACTED]", "?[REDACTED]"],
        )

    def test_an_errors_huge_metadata_stays_out_of_its_text(self) -> None:
        """``metadata`` of ten billion characters: ``repr``, ``str`` and ``unwrap()``'s
        exception show the message only; the dump is refused."""
        outcome = _answer(
            "s = 'x' * 10000\nresult = Outcome.error(error_type='bad', error_message='m',"
            " metadata={'k': [[s] * 1000] * 1000})"
        )

        with pytest.raises(Exception) as raised:
            outcome.unwrap()

        assert (repr(outcome), str(outcome), str(raised.value)) == (
            "Outcome(error, error_type='bad', error_message='m', retriable=False)",
            "[bad] m",
            "m",
        )

    def test_an_exception_chain_is_cut_at_the_bounded_reprs_depth(self) -> None:
        """The new rule for exceptions keeps reprlib's depth: a chain 100 000 deep (a host's
        value; the sandbox refuses such nesting in an answer) is written to its eighth level."""
        chain: object = 1
        for _ in range(100_000):
            chain = ValueError(chain)

        assert safe_repr(chain, limit=300) == "ValueError(" * 9 + "..." + ")" * 9
