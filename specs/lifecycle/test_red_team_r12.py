"""Red team R12: values a hostile program returns, reaching the host's bookkeeping after its
deadline (the history record's preview, the content store's kept answer).

Payloads tried, and what happened (BROKEN = failed before the fix of this round):

1. BROKEN, fixed: ``s = 'x' * 10000; row = [s] * 1000; result = [row] * 1000`` (about ten
   million characters of program memory: one string, shared) is ten billion characters of JSON.
   The call answered ``ok`` under a 2 s deadline, then the host spent 73.5 s and 3.4 GB after
   it (``{str(i): s for i in range(1000)}`` rows: 78.9 s, 3.7 GB): the history record's
   preview ``json.dumps``-ed an unbudgeted copy (500 characters kept of it) and the content
   store ``json.dumps``-ed the whole answer before comparing its size with ``max_bytes``. The
   preview's copy now has a budget (``_history._PREVIEW_BUDGET``), and the store skips an answer
   whose JSON surely outgrows ``max_bytes`` by a walk that stops there
   (``_values.outgrows``): 0.01 s, 47 MB.
2. Held: the same answer under ``isolation="process"`` ends in ``timeout`` (the crossing from
   the worker counts against the deadline); written to memory (``context['big']``) it is not
   serialized at the call's end; a list nested 100 000 deep is ``non_serializable_result``.
"""

from __future__ import annotations

import builtins
from typing import Any

import pytest

from recurgent import Agent
from recurgent._content_serialization import serialize
from recurgent._content_store import ContentRetention, ContentStore
from recurgent._history import HISTORY_KEY, append_record
from recurgent._values import json_safe
from recurgent.outcome import Outcome
from recurgent.testing import ScriptedProvider

# One 1 000-character string shared 10 000 times: 10 MB of JSON from 11 000 references.
_SHARED = "s = 'x' * 1000\nrow = [s] * 100\nresult = [row] * 100"


def _run(program: str) -> tuple[Outcome, dict[str, Any]]:
    provider = ScriptedProvider({("tester", "run"): program})
    agent = Agent("tester", provider=provider, guardrail_recovery_budget=0, log=False)
    outcome = agent.run()
    return outcome, agent._agent.memory[HISTORY_KEY][-1]


class TestSharedPartsReachingTheHost:
    def test_the_store_skips_an_outgrown_answer_without_writing_its_json(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """An answer whose JSON outgrows ``max_bytes`` (2 MiB by default) is skipped with
        ``entry_exceeds_max_bytes`` and ``serialize`` never runs on it (before: it wrote all
        ten million characters, then skipped)."""
        serialized: list[Any] = []

        def spy(payload: Any) -> Any:
            serialized.append(payload)
            return serialize(payload)

        monkeypatch.setattr("recurgent._content_store.serialize", spy)
        row = ["x" * 1000] * 100
        store = ContentStore()

        write = store.write(
            Outcome.ok([row] * 100),
            retention=ContentRetention(),
            depth=0,
        )

        assert (write.stored, write.skipped_reason, write.entry_count) == (
            False,
            "entry_exceeds_max_bytes",
            0,
        )
        assert serialized == []

    def test_outgrows_counts_a_lower_bound_of_the_json(self) -> None:
        """``outgrows`` is true only past the limit, counting no more than the JSON holds:
        ``["ab","c"]`` (10 characters: strings with quotes, brackets and a separator per item)
        and ``{"a":1}`` (7) are counted exactly; a float counts its text (``3.5``: 3, since red
        team R14), a long int its digits, a set its items as a list does (since red team R15:
        ``[{1, 2}, 3.5, None]`` counts 13, its repr is 19), anything else 1."""
        from recurgent._values import outgrows  # new in R12

        assert outgrows(["ab", "c"], 9) is True
        assert outgrows(["ab", "c"], 10) is False
        assert outgrows({"a": 1}, 6) is True
        assert outgrows({"a": 1}, 7) is False
        assert outgrows([{1, 2}, 3.5, None], 13) is False
        assert outgrows([{1, 2}, 3.5, None], 12) is True

    def test_a_shared_answer_is_answered_and_its_preview_is_bounded(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The program's answer reaches the caller whole; the history record's preview is the
        first 500 characters of its JSON and ``...``; the copy the preview is cut from spends
        2 000 characters of text, then counts the rest (before: 10 000 strings of 1 000)."""
        import recurgent._history as history

        copies: list[Any] = []
        real = json_safe

        def spy(value: Any, **options: Any) -> Any:
            copies.append(real(value, **options))
            return copies[-1]

        monkeypatch.setattr(history, "json_safe", spy)

        outcome, record = _run(_SHARED)

        assert outcome.status == "ok"
        assert outcome.value == [["x" * 1000] * 100] * 100
        summary = record["outcome_summary"]
        assert summary["value_preview"] == '[["' + "x" * 497 + "..."
        assert "content_ref" not in summary
        assert copies[0] == [
            ["x" * 1000, "x" * 998 + "...<2 more chars>", "<98 more items>"],
            "<99 more items>",
        ]


class TestSharedPartsPassedToAChild:
    """``delegate('helper').work(big)`` with ``big = [[s] * 1000] * 1000`` (``s`` 10 000
    characters) took 49.2 s and 3.5 GB in the host inside the program's call (the child's
    prompt ``repr``-ed the arguments in full before cutting them to 4 000 characters, its
    history record copied every string), 0.34 s after the fix."""

    _BIG: Any = [["x" * 1000] * 1000] * 100

    def test_the_prompt_shows_shared_parts_from_a_bounded_copy(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """``_short`` of a value whose repr outgrows a million characters ``repr``-s a copy
        budgeted to the cut plus its margin (the first 200 characters are the same text); before,
        ``repr`` made all 100 million characters."""
        import recurgent._prompting as prompting

        made: list[int] = []

        def spy(value: Any) -> str:
            text = builtins.repr(value)
            made.append(len(text))
            return text

        monkeypatch.setattr(prompting, "repr", spy, raising=False)

        shown = prompting._short([self._BIG], 200)

        assert shown == "[[['" + "x" * 193 + "..."
        assert made == [519]

    def test_the_history_record_copies_a_million_characters_of_arguments(self) -> None:
        """The record's ``args`` keep text up to a budget of 1 000 000 characters, then count
        what they cut: the first row whole but its last string, then ``<99 more items>``
        (before: 100 000 strings of 1 000 characters, a copy per reference)."""
        memory: dict[str, Any] = {}

        append_record(
            memory,
            call_id="c",
            method_name="work",
            args=(self._BIG,),
            kwargs={},
            outcome=None,
            trace_id="t",
            parent_call_id=None,
            depth=1,
            duration_ms=1.0,
        )

        [kept] = memory[HISTORY_KEY][-1]["args"]
        assert len(kept) == 2
        assert kept[0][:999] == ["x" * 1000] * 999
        assert kept[0][999] == "x" * 997 + "...<3 more chars>"
        assert kept[1] == "<99 more items>"

    def test_a_program_passing_shared_parts_to_a_child_gets_its_answer(self) -> None:
        """Held end to end: the child runs and answers ``done``; the parent answers it."""
        program = (
            "s = 'x' * 1000\nbig = [[s] * 1000] * 100\nresult = delegate('helper').work(big).value"
        )
        provider = ScriptedProvider(
            {("tester", "run"): program, ("helper", "work"): "result = 'done'"}
        )
        agent = Agent("tester", provider=provider, guardrail_recovery_budget=0, log=False)

        outcome = agent.run()

        assert (outcome.status, outcome.value) == ("ok", "done")
