"""Red team R14: the R12 bounds and the value paths a program's answer, exception and memory
writes take into the host after the attempt, where the deadline can no longer stop a C call.

Payloads tried, and what happened (BROKEN = failed before the fix of this round; the content
store, history and ``outgrows`` cases are in ``specs/lifecycle/test_red_team_r14.py``):

1. BROKEN, fixed: ``result = {'k' * 1_000_000: [0] * 400_000}``. The rebuild of an answer
   wrote the path of every element as text (``f"{where}[{i}]"``), each a copy of its prefix,
   which held the dict key's whole repr: 400 000 copies of a million characters, 10.3 s after a
   2 s deadline, ``ok``. The same through memory: ``context['k' * 1_000_000] = []`` in one call,
   ``.extend([0] * 400_000)`` on it in the next (the memory journal's patch): 10.9 s. A path is
   now a chain of steps (``recurgent._where.Where``) written out only when a refusal names it,
   each key bounded to 200 characters: 0.3 s and 0.4 s.
2. BROKEN, fixed: ``raise ValueError([n] * 100_000)`` of one 4 299-digit ``n`` (430 million
   characters of repr): 174 s and 1.7 GB after the deadline. ``outgrows`` counted an int as one
   character, so the R12 bound (a million) never saw it; it counts an int's digits now (and a
   float's text: ``[1.2345678901234567e-300] * 490_000`` took 5 s, now 0.6 s): 2.8 s, bounded
   by the copy's budget (``int_text`` of 28 000 ints; see Limits in docs/security.md).
3. BROKEN, fixed: ``delegate('helper').work([n] * 100_000)``: the child's prompt ``repr``-ed
   430 million characters inside the program's call (25.9 s, 869 MB, then ``timeout``); the
   same ``outgrows`` fix shows it from a bounded copy: 0.9 s.
4. BROKEN, fixed: ``delegate('helper', execution_timeout_seconds=[n] * 2300)``: the refusal
   wrote the value's whole ``repr`` (9.9 million characters, under the 10-million bound of
   R12) before cutting it to 500: 0.5 s in one C call inside the program's forwarded call, per
   call. It is shown bounded (``_options._shown``), as the other echoes are: 0.02 s.
5. BROKEN, fixed: ``raise ValueError(1 << 20000)`` (any int past 4 300 digits, which the
   sandbox makes with a shift): ``agent.run()`` *raised* ``ValueError`` (int too long for
   ``str``) to the developer, from ``exception_text``'s fallback ``repr``. Such arguments are
   formatted from the bounded copy: an ``execution`` error naming the int's leading digits.
6. BROKEN, fixed: ``[n] * 1000`` of a 999 999-bit ``n`` (``(1 << 999999) - 1``) as the answer:
   67 s after the deadline (``ok``): the content store's fallback rendering wrote each of 1 000
   references with ``int_text`` (a power of ten and a division, 72 ms each). ``int_text``
   writes leading digits only up to 100 000 bits (2 ms), and ``json_safe``'s budget counts a
   long int's digits: 0.01 s. ``raise ValueError([n] * 1000)``, which raised before, likewise.
7. BROKEN, fixed: under ``isolation="process"``, ``result = {1 << 20000: [0] * 3}`` (a plain
   answer, ``ok`` in process) was ``worker_crash``: the wire codec wrote each value's path with
   ``f"{path}[{key!r}]"``, and ``repr`` of an int past 4 300 digits raised in the worker, which
   exited (code 3). ``{'k' * 1_000_000: [0] * 400_000}`` ended in ``timeout`` (2.75 s: paths
   within the deadline). The codec's paths are ``Where`` chains too: ``ok`` (0.4 s, 1.2 s).
8. Held: ``[n] * 300_000`` (4.3 billion characters) in ``Outcome.error(..., metadata=)``,
   ``Outcome.ok(1, metadata=)``, ``context``, ``remember``, as dict keys, a tuple of three, with
   ``log=`` a file too (0.01 to 0.2 s, log lines of 5 to 107 KB); options holding
   ``[f] * 4_900_000`` floats end in ``timeout`` inside the deadline (the program's own copy).
"""

from __future__ import annotations

from typing import Any

import pytest

from recurgent import Agent
from recurgent._sandbox._boundary import exception_text, rebuild
from recurgent.errors import NonSerializableResultError
from recurgent.outcome import Outcome
from recurgent.testing import ScriptedProvider

# One 4 299-digit int (just under CPython's 4 300-digit int-to-text limit), 4 299 characters of
# repr from one object; a list of a thousand references to it is 4.3 million.
_DIGITS = int("9" * 4299)
_KEY = "k" * 1_000_000


def _agent(**programs: str) -> Agent:
    provider = ScriptedProvider({("tester", name): code for name, code in programs.items()})
    return Agent("tester", provider=provider, guardrail_recovery_budget=0, log=False)


class TestPathsWrittenOutOnlyWhenNamed:
    def test_a_refused_answer_names_a_huge_key_in_two_hundred_characters(self) -> None:
        """``{'k' * 1_000_000: [len]}`` is refused with a message of 350 characters, the key
        cut to 200 (before: the path was a 1 000 132-character string, formatted for every
        element on the way, and the message was cut to 10 000 from it)."""
        outcome = _agent(run="result = {'k' * 1_000_000: [len]}").run()

        assert (outcome.status, outcome.error_type) == ("error", "non_serializable_result")
        assert outcome.error_message is not None
        assert len(outcome.error_message) == 350
        assert outcome.error_message.startswith("the result['" + "k" * 188)
        assert "...<1024 more chars>][0] holds a function;" in outcome.error_message

    def test_a_refused_memory_patch_names_a_huge_key_in_two_hundred_characters(self) -> None:
        """A memory key of a million characters, then an append of a function to the list it
        holds (the journal's patch): refused with 366 characters (before: the 1 000 148-character
        path, written for every appended element, cut to 10 000)."""
        agent = _agent(
            first="context['k' * 1_000_000] = []\nresult = 1",
            second=(
                "for key in list(context.keys()):\n"
                "    if len(key) > 1000:\n"
                "        context[key].append(len)\n"
                "result = 2"
            ),
        )
        assert agent.first().value == 1

        outcome = agent.second()

        assert (outcome.status, outcome.error_type) == ("error", "non_serializable_result")
        assert outcome.error_message is not None
        assert len(outcome.error_message) == 366
        assert outcome.error_message.startswith("context['" + "k" * 188)
        assert agent._agent.memory[_KEY] == []

    def test_a_plain_answer_never_writes_its_paths(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Rebuilding ``{key: [0] * 1000, 'b': {'c': (1, 2)}}`` in an Outcome's value and metadata
        writes no path as text (before: 1 006 of them, each a copy of the million-character key)."""
        import recurgent._where as where

        written: list[str] = []
        real = where.Where.__str__

        def spy(self: Any) -> str:
            written.append(real(self))
            return written[-1]

        monkeypatch.setattr(where.Where, "__str__", spy)
        answer = {_KEY: [0] * 1000, "b": {"c": (1, 2)}}

        made = Outcome.model_construct(status="ok", value=answer, metadata={"m": [answer]})

        built = rebuild(made, "the result")

        assert built.value == answer
        assert built.metadata == {"m": [answer]}
        assert written == []

    def test_a_refusal_deep_in_a_value_names_every_step(self) -> None:
        """The path written out on refusal is the one the text paths gave: keys as their repr,
        indexes in brackets, a key's own refusal as `` key``."""
        with pytest.raises(NonSerializableResultError) as caught:
            rebuild({"a": [1, {"b": ({len},)}]}, "the result")
        assert str(caught.value).startswith("the result['a'][1]['b'][0] member holds a function")

        with pytest.raises(NonSerializableResultError) as caught:
            rebuild({"a": {(1, len): 2}}, "the result")
        assert str(caught.value).startswith("the result['a'] key[1] holds a function")


class TestDigitsCountTowardsTheMessageBound:
    def test_an_exception_of_long_ints_is_formatted_from_a_bounded_copy(self) -> None:
        """``ValueError([n] * 300)`` of a 4 299-digit ``n`` is 1 290 300 characters of repr: past
        the million of R12's bound, it is formatted from a bounded copy whose budget counts each
        int's digits (9 299 characters: 232 ints and ``<68 more items>``; before: all 1 290 300,
        as ``[n] * 100_000`` was 430 million in 174 s)."""
        text = exception_text(ValueError([_DIGITS] * 300))

        assert len(text) == 9_299
        assert text.endswith(", '<68 more items>']")
        assert text.startswith("['99999999999999999999...<4299 digits>', ")

    def test_a_short_exception_of_ints_is_formatted_as_before(self) -> None:
        """Ten such ints (43 000 characters) are formatted in full, as the builtin does."""
        assert exception_text(ValueError([_DIGITS] * 10)) == str([_DIGITS] * 10)

    def test_a_child_is_shown_long_ints_from_a_bounded_copy(self) -> None:
        """``delegate('helper').work([n] * 1000)``: the child's prompt shows the arguments from
        a bounded copy (before: ``repr`` of 4.3 million characters; 430 million took 25.9 s in
        the program's call)."""
        provider = ScriptedProvider(
            {
                (
                    "tester",
                    "run",
                ): "n = int('9' * 4299)\nresult = delegate('helper').work([n] * 1000)",
                ("helper", "work"): "result = 'done'",
            }
        )
        agent = Agent("tester", provider=provider, guardrail_recovery_budget=0, log=False)

        outcome = agent.run()

        assert (outcome.status, outcome.value) == ("ok", "done")
        prompt = provider.requests_for("work", role="helper")[0].user_prompt
        assert "<args>[['99999999999999999999...\\u003c4299 digits\\u003e', " in prompt
        assert "9" * 4299 not in prompt


class TestARefusedOptionIsShownBounded:
    def test_a_refused_limit_of_long_ints_is_shown_from_a_bounded_repr(self) -> None:
        """``execution_timeout_seconds=[n] * 2300`` is refused showing each int as its leading
        digits and count, within 500 characters (before: the repr of all 9.9 million characters
        was written, then cut to its first 497 digits)."""
        agent = Agent("tester", provider=ScriptedProvider({}), log=False)

        (refusal,) = agent._agent.options.narrowing_refusals(
            {"execution_timeout_seconds": [_DIGITS] * 2300}
        )

        assert len(refusal) == 500
        assert refusal.startswith(
            "execution_timeout_seconds=[99999999999999999999...<4299 digits>, "
        )


class TestIntsTooLongForText:
    def test_an_exception_of_an_int_too_long_for_str_is_an_outcome(self) -> None:
        """``raise ValueError(1 << 20000)`` ends in an ``execution`` error naming the int's
        leading digits (before: ``agent.run()`` raised ``ValueError``, "Exceeds the limit (4300
        digits) for integer string conversion")."""
        outcome = _agent(run="raise ValueError(1 << 20000)").run()

        assert (outcome.status, outcome.error_type) == ("error", "execution")
        assert outcome.error_message == (
            "Execution error in tester.run: ValueError: 39802768403379665923...<6021 digits>"
        )

    def test_exception_text_of_a_huge_int_is_its_digit_count(self) -> None:
        """``exception_text`` of ints past the text limit, alone, in a list, and in a builtin
        that wants other arguments (``UnicodeDecodeError``), never raises."""
        huge = (1 << 999_999) - 1

        assert exception_text(ValueError(huge)) == "<int with about 301030 digits>"
        assert exception_text(ValueError([huge] * 1000)) == (
            "['<int with about 301030 digits>', '<int with about 301030 digits>', "
            "'<int with about 301030 digits>', '<int with about 301030 digits>', "
            "'<996 more items>']"
        )
        odd = UnicodeDecodeError.__new__(UnicodeDecodeError)
        odd.args = (huge,)
        assert exception_text(odd) == "('<int with about 301030 digits>',)"


class TestTheWireCodecsPaths:
    def test_a_huge_int_key_crosses_the_pipe(self) -> None:
        """``{1 << 20000: [0, 1]}`` is encoded and decoded whole (before: ``ValueError`` from
        the path's ``repr`` of the key, which ended the worker: ``worker_crash``)."""
        from recurgent._worker._codec import from_wire, to_wire

        value = {1 << 20000: [0, 1]}

        wire = to_wire(value, "the result", lambda agent: None)

        assert from_wire(wire, lambda number, role: None) == value

    def test_a_refusal_names_a_huge_int_key_by_its_leading_digits(self) -> None:
        """A function under such a key is refused naming the key's leading digits."""
        from recurgent._worker._codec import Unencodable, to_wire

        with pytest.raises(Unencodable) as caught:
            to_wire({1 << 20000: len}, "the result", lambda agent: None)

        assert str(caught.value) == (
            "the result[39802768403379665923...<6021 digits>] holds a "
            "builtin_function_or_method, which is not plain data"
        )
