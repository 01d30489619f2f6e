"""Red team R12: a program's values whose text is billions of characters from a few megabytes
of memory (shared parts: ``big = [[s] * 1000] * 1000`` with ``s = 'x' * 10000``), formatted by
the host in one C call where the deadline cannot stop it.

Payloads tried, and what happened (BROKEN = failed before the fix of this round; the history
record, prompt and content-store cases are in ``specs/lifecycle/test_red_team_r12.py``):

1. BROKEN, fixed: ``raise ValueError(big)`` (also ``KeyError``): the sandbox formatted the
   exception's arguments in full after the deadline (26.2 s, 3.5 GB) and the call *raised*
   ``MemoryError`` to the developer instead of answering an Outcome. Arguments whose text surely
   outgrows a million characters are formatted from a bounded copy (``exception_text``): 0.4 s,
   ``execution`` error.
2. BROKEN, fixed: ``delegate(big)``, ``tool(big)``, ``delegate('helper', network=big)`` (also
   ``execution_timeout_seconds``, ``forwarded_call_budget``, ``purpose``,
   ``delegation_contract={'purpose': big}``): the host's refusal echoed the value with ``!r``
   (20 to 26 s, 3.5 GB, ``delegate failed:`` with an empty message). A role, tool name or the
   options of one call holding more than 10 million characters are refused in the program before
   the host sees them (0.05 s); ``compose_contract``'s echo is ``safe_repr`` (bounded).
3. Held: the same ``big`` as ``Outcome.ok(big)``, ``Outcome.ok(1, metadata={'b': big})``,
   ``Outcome.error('x', .., metadata={'a': big, 'b': big})``, ``(big, big)``, ``context``
   holding it twice, ``remember(big=big)``, a handle's setter, a keyword argument of a child's
   call, ``deliverable=big`` (the deliverable's own bounded message): 0.01 to 0.34 s. The
   single C calls of the brief's item 4 (``format(1, '>100000000')``, ``'%100000000d'``,
   ``'{:>N}'.format``, ``bytes(10**9)``, ``'x' * 10**9``, ``zfill``/``center``/``ljust``/
   ``expandtabs``/``replace``/``join`` past 10**9, ``[0] * 10**9``, ``range``, ``math.comb``/
   ``perm``/``factorial(10**6)``, ``json.dumps(indent=10**8)``, ``json.loads`` 100 000 deep,
   Decimal ``sqrt``/``exp``/``ln``/``**``/``/`` at precision 99 999, ``quantize`` to
   ``1e-99999``, ``int('1' * 100000)``): refused before the call or bounded (all under 0.01 s).
"""

from __future__ import annotations

from typing import Any

import pytest

from recurgent import Agent
from recurgent._sandbox._boundary import exception_text
from recurgent.testing import ScriptedProvider

_SHARED = "s = 'x' * 1000\nbig = [[s] * 1000] * 100\n"


def _answer(program: str) -> Any:
    provider = ScriptedProvider(
        {("tester", "run"): _SHARED + program, ("helper", "work"): "result = 'done'"}
    )
    return Agent("tester", provider=provider, guardrail_recovery_budget=0, log=False).run()


class TestSharedPartsFormattedByTheHost:
    def test_an_exception_of_shared_parts_is_formatted_from_a_bounded_copy(self) -> None:
        """``ValueError(big)`` whose repr is 2 million characters gives a message of
        1 040 045 (a million characters of text, then what was cut is counted); a short one is
        formatted as before."""
        big = [["x" * 100] * 1000] * 20

        text = exception_text(ValueError(big))

        assert len(text) == 1_040_045
        assert text.endswith("x...<12 more chars>'], '<10 more items>']")
        assert exception_text(KeyError("a")) == "'a'"
        assert exception_text(ValueError([["ab"] * 2] * 2)) == "[['ab', 'ab'], ['ab', 'ab']]"

    def test_a_program_raising_shared_parts_gets_an_execution_error(self) -> None:
        """End to end: the call answers an ``execution`` error (it raised ``MemoryError`` to the
        caller with the full-size payload)."""
        outcome = _answer("raise ValueError(big)")

        assert (outcome.status, outcome.error_type) == ("error", "execution")
        assert outcome.error_message.startswith("Execution error in tester.run: ValueError: [['xxx")

    @pytest.mark.parametrize(
        ("call", "where"),
        [
            ("delegate(big)", "delegate role"),
            ("tool(big)", "tool name"),
            ("delegate('helper', network=big)", "delegate options"),
            ("delegate('helper', purpose=big)", "delegate options"),
            ("delegate('helper', delegation_contract={'purpose': big})", "delegate options"),
            ("tool('helper', purpose=big)", "tool options"),
        ],
    )
    def test_names_and_options_past_the_bound_are_refused_in_the_program(
        self, call: str, where: str
    ) -> None:
        """A role, tool name or one call's options holding more than 10 million characters are a
        ``UsageError`` in the program, before the host echoes them."""
        outcome = _answer(f"result = {call}.work().value")

        assert outcome.error_type == "execution"
        assert outcome.error_message == (
            f"Execution error in tester.run: UsageError: {where}: more than 10000000 characters"
        )

    def test_options_under_the_bound_still_reach_the_child(self) -> None:
        """Held: a purpose of 99 000 characters is an option like any other."""
        outcome = _answer("result = delegate('helper', purpose='p' * 99000).work().value")

        assert (outcome.status, outcome.value) == ("ok", "done")
