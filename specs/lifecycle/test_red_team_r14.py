"""Red team R14: the R12 bound ``outgrows`` and the budget of ``json_safe``, which the content
store, the history record, the child's prompt and exception messages rely on.

Payloads tried, and what happened (BROKEN = failed before the fix of this round; the
rebuild's paths and exception cases are in ``specs/sandbox/test_red_team_r14.py``):

1. BROKEN, fixed: ``n = int('9' * 4299); result = [n] * 400_000`` (1.7 billion characters of
   JSON from 3 MB of program memory): ``ok`` under a 2 s deadline, then the content store's
   ``json.dumps`` took 112 s and 3.3 GB, because ``outgrows`` counted each int as one character
   (800 001 in all, under the 2 MiB ``max_bytes``). It counts an int's digits now (a lower
   bound, ``bit_length * 3 // 10``) and a float's text: 0.1 s, skipped
   ``entry_exceeds_max_bytes``.
2. BROKEN, fixed: ``outgrows`` stacked a container's items before comparing the count: a flat
   list of ten million ints cost an 80 MB copy (0.06 s) to learn it was too long. It compares
   first: no copy.
3. BROKEN, fixed: ``json_safe``'s budget counted 8 characters for an int of up to 3 010 digits:
   a history record's arguments (a million characters of budget) kept 125 000 of them (376
   million characters of JSON). It counts the int's digits.
4. BROKEN, fixed: ``n = (1 << 999999) - 1; result = [n] * 1000``: 67 s after the deadline,
   ``ok``: ``json.dumps`` refuses the int at once, and the store's fallback rendering wrote its
   1 000 references with ``int_text``, whose leading digits cost a power of ten and a division
   (72 ms at a million bits). Leading digits are written up to 100 000 bits (2 ms) and
   ``json_safe``'s budget counts a long int's digits: the rendering holds four: 0.01 s.
5. BROKEN, fixed: ``safe_repr`` (the options' and contracts' echoes of a program's value)
   judged a container short by counting 4 per int: ``[n] * 300`` of 4 299 digits was written
   in full (1.3 million characters), and ``[1 << 20000]`` made the repr raise
   (``<unrepresentable list: ValueError>``). It counts an int's digits and writes an int past
   10 000 bits as its leading digits.
6. Held: the history preview (budget 2 000) and a log file's lines (5 KB) for the same answer.
"""

from __future__ import annotations

import tracemalloc
from typing import Any

import pytest

from recurgent import Agent
from recurgent._content_serialization import serialize
from recurgent._content_store import ContentRetention, ContentStore
from recurgent._history import HISTORY_KEY
from recurgent._values import json_safe, outgrows
from recurgent.outcome import Outcome
from recurgent.testing import ScriptedProvider

_DIGITS = int("9" * 4299)


class TestOutgrowsCountsWhatTheTextHolds:
    def test_an_int_counts_its_digits(self) -> None:
        """``[n] * 1000`` of a 4 299-digit ``n`` is 4.3 million characters of JSON: it outgrows
        a million (before: counted 2 001, so it did not)."""
        assert outgrows([_DIGITS] * 1000, 1_000_000) is True
        assert outgrows([_DIGITS] * 100, 1_000_000) is False
        assert outgrows({"a": _DIGITS}, 1_000) is True

    def test_the_digit_count_is_a_lower_bound(self) -> None:
        """``10 ** 99`` (100 digits) counts 98 (``bit_length`` 329 times 0.3, rounded down); an
        int of fewer than 16 counted digits counts one, as any other atom."""
        assert outgrows(10**99, 97) is True
        assert outgrows(10**99, 98) is False
        assert outgrows([10**15] * 3, 7) is False

    def test_an_int_past_the_text_limit_counts_one(self) -> None:
        """An int of more than 4 300 digits has no ``str`` (it raises before any work): it is
        rendered bounded, so it counts one, as before."""
        assert outgrows(_DIGITS * _DIGITS, 1) is False

    def test_a_float_counts_its_text(self) -> None:
        """``[1.2345678901234567e-300] * 100_000`` is 2.6 million characters of ``repr``: it
        outgrows a million (before: counted 200 001)."""
        assert outgrows([1.2345678901234567e-300] * 100_000, 1_000_000) is True
        assert outgrows([0.5], 5) is False
        assert outgrows([0.5], 4) is True

    def test_a_long_flat_list_is_refused_without_a_copy(self) -> None:
        """Ten million ints against a limit of two million: refused after reading the length,
        peak allocation under 64 KiB (before: an 80 000 176-byte copy on the walk's stack).

        tracemalloc counts every thread's allocations, and a watchdog or flush thread left by
        an earlier spec in the same worker may allocate a few kilobytes meanwhile (2 533 bytes
        seen once under load): the bound is far above that and far below a copy."""
        flat = [0] * 10_000_000
        tracemalloc.start()
        try:
            refused = outgrows(flat, 2_000_000)
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()

        assert refused is True
        assert peak < 65_536


class TestTheStoreAndTheRecordCountDigits:
    def test_the_store_skips_long_ints_without_writing_their_json(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A program's answer ``[n] * 1000`` (4.3 million characters) is skipped with
        ``entry_exceeds_max_bytes`` and ``serialize`` never runs on it (before: it wrote all
        of it, then skipped; ``[n] * 400_000`` took 112 s)."""
        serialized: list[Any] = []

        def spy(payload: Any) -> Any:
            serialized.append(payload)
            return serialize(payload)

        monkeypatch.setattr("recurgent._content_store.serialize", spy)
        provider = ScriptedProvider({("tester", "run"): "result = [int('9' * 4299)] * 1000"})
        agent = Agent("tester", provider=provider, guardrail_recovery_budget=0, log=False)

        outcome = agent.run()

        assert outcome.status == "ok"
        assert outcome.value == [_DIGITS] * 1000
        assert serialized == []
        summary = agent._agent.memory[HISTORY_KEY][-1]["outcome_summary"]
        assert "content_ref" not in summary
        assert summary["value_preview"].startswith('["99999999999999999999...<4299 digits>", ')

    def test_a_short_list_of_long_ints_is_still_kept(self) -> None:
        """``[n] * 100`` (430 100 characters) fits the default 2 MiB and is kept whole."""
        write = ContentStore().write(
            Outcome.ok([_DIGITS] * 100),
            retention=ContentRetention(),
            depth=0,
        )

        assert (write.stored, write.skipped_reason) == (True, None)

    def test_the_copy_budget_counts_an_ints_digits(self) -> None:
        """``json_safe([m] * 1000, budget=100_000)`` of a 3 000-digit ``m`` keeps 34 ints and
        counts the rest (before: all 1 000, three million characters, at 8 each)."""
        number = int("9" * 3000)

        copy = json_safe([number] * 1000, budget=100_000)

        assert len(copy) == 35
        assert copy[:34] == [number] * 34
        assert copy[34] == "<966 more items>"


class TestLongIntsRenderCheaply:
    def test_leading_digits_stop_at_a_hundred_thousand_bits(self) -> None:
        """An int of 99 999 bits keeps its leading digits; one of 100 001 bits is its digit
        count (before: leading digits up to a million bits, 72 ms each there)."""
        from recurgent._repr import int_text

        assert int_text((1 << 99_999) - 1) == "49950104650719225397...<30103 digits>"
        assert int_text((1 << 100_001) - 1) == "<int with about 30104 digits>"

    def test_the_stores_rendering_of_long_ints_counts_their_digits(self) -> None:
        """``[n] * 1000`` of a 999 999-bit ``n`` is kept as a rendering of four ints and a count
        (before: all 1 000, each written with a power of ten: 67 s)."""
        stored = serialize([(1 << 999_999) - 1] * 1000)

        assert stored.text == (
            '{"__content_fallback__":true,"value_class":"list","representation":['
            + '"<int with about 301030 digits>",' * 4
            + '"<996 more items>"]}'
        )

    def test_a_preview_shows_the_first_long_int(self) -> None:
        """The history preview's copy (budget 2 000) shows the first long int and counts the
        rest (before: 55 of them)."""
        copy = json_safe([(1 << 99_999) - 1] * 1000, budget=2_000)

        assert copy == ["49950104650719225397...<30103 digits>", "<999 more items>"]


class TestSafeReprCountsDigits:
    def test_a_list_of_long_ints_is_shown_from_the_bounded_repr(self) -> None:
        """``safe_repr([n] * 300)`` of a 4 299-digit ``n`` is 3 805 characters, each int as its
        leading digits (before: 65 556, the first 65 536 characters of its 1.3 million)."""
        from recurgent._repr import safe_repr

        text = safe_repr([_DIGITS] * 300)

        assert len(text) == 3_805
        assert text.startswith("[99999999999999999999...<4299 digits>, ")

    def test_an_int_past_the_text_limit_is_shown(self) -> None:
        """``safe_repr([1 << 20000])`` names the int's leading digits (before: "<unrepresentable
        list: ValueError>"); short ints are shown as ``repr`` shows them."""
        from recurgent._repr import safe_repr

        assert safe_repr([1 << 20000]) == "[39802768403379665923...<6021 digits>]"
        assert safe_repr([1, 2, 10**30]) == "[1, 2, 1000000000000000000000000000000]"
