"""Red team R15: what changed in the session of ADRs 0136 and 0137, from a hostile program.

Tried, and what happened (BROKEN = failed before the fix of this round; the figures are one run
on the shared 2-core machine, a 2 s deadline):

1. BROKEN, fixed: a kept child's key (``_agent_children._child_key``, now the SHA-256 of the
   options' ``repr``) still writes that ``repr`` first, and the ten-million-character bound on
   ``delegate``/``tool`` options (``outgrows``, red team R12) counted bytes, sets, deques,
   dict subclasses, ``Decimal``, ``Fraction``, builtin exceptions and ``Outcome`` as one
   character each, though ``rebuild`` lets all of them out of the sandbox.
   ``delegate('helper', junk=[bytes(2_000_000)] * 100)`` (an unknown option, ignored but
   keyed) took 12.3 s and 2.8 GB after the deadline in the host's section, where the watchdog
   never interrupts, and answered ``ok``; 30 references took 2.7 s and 855 MB, so a thousand
   would have been two minutes and 28 GB. The same ``deque(['x' * 5_000_000] * 100)`` as
   ``acceptance`` took 6.9 s and 1.5 GB (the child prompt's ``_short`` uses the same bound).
   ``outgrows`` counts each of those kinds and their parts: refused in 0.01 to 0.1 s.
2. BROKEN, fixed: an agent in the options. A child's program wrote ``context['k' *
   2_000_000] = 1``; ``delegate('helper', junk=[h] * 100)`` of its handle took 1.7 s and 622 MB
   in the key's ``repr`` (an agent's ``repr`` lists its memory's keys), linear in the
   references. Any other kind counts its ``repr``, written once per object: refused in 0.02 s.
3. BROKEN, fixed: the registry's contract fields. ``tool(name)`` adds the contract fields of
   the name's registry entry to the options after the sandbox's bound, and a program writes
   the registry (``context['tools']``): one call stored ``{'x': {'purpose': 'p', 'acceptance':
   [bytes(2_000_000)] * 30}}``, the next call's ``tool('x')`` took 2.7 s and 855 MB in the
   key's ``repr`` (linear in the references). ``tool()`` refuses contract fields from the
   registry whose text outgrows a million characters (the child's prompt shows no more of
   one): 0.0 s. The key itself walks nothing: a second walk of a program's options, which the
   sandbox bounds already, cost more than the ``repr`` (``[0] * 4_900_000``: 1 to 3 s).
4. BROKEN, fixed: ``delegate('helper', junk=1 << 20000)``: the key's ``repr`` raised
   ``ValueError`` (CPython's int-to-text limit) after the child was made and registered, and
   the program saw ``RuntimeError: delegate failed: Exceeds the limit...``. The key is made
   first: a ``UsageError`` saying so, and no child.
5. BROKEN, fixed: a retention policy applied through a proposal did not drop what it no
   longer allows. Five answers kept, ``content_retention_policy_update`` of ``max_entries=2``
   applied: the store still held five, and the next program read all five refs (a read
   applies only the age limit; ``ContentStore.enforce``, written for this, was never called).
   Installing the policy enforces it on the agent's store: two held, three refs read ``None``.
"""

from __future__ import annotations

import collections
import datetime
import decimal
import fractions

import pytest

from recurgent import Agent
from recurgent._runtime_config import configure_runtime
from recurgent._values import outgrows
from recurgent.outcome import Outcome
from recurgent.testing import ScriptedProvider

_BLOB = bytes(2_000_000)
_TEXT = "x" * 2_000_000


def _agent(**programs: str) -> Agent:
    provider = ScriptedProvider(
        {("tester", name): code for name, code in programs.items()}
        | {("helper", "work"): "result = 2"}
    )
    return Agent("tester", provider=provider, guardrail_recovery_budget=0, log=False)


class TestOutgrowsCountsEveryKindARebuiltValueHolds:
    @pytest.mark.parametrize(
        ("name", "payload"),
        [
            ("bytes", [_BLOB] * 6),
            ("bytearray", [bytearray(2_000_000)] * 6),
            ("set", [{_TEXT}] * 6),
            ("frozenset", [frozenset({_TEXT})] * 6),
            ("deque", collections.deque([_TEXT] * 6)),
            ("OrderedDict", collections.OrderedDict(a=[_TEXT] * 6)),
            ("Counter", [collections.Counter({_TEXT: 1})] * 6),
            ("defaultdict", collections.defaultdict(list, a=[_TEXT] * 6)),
            ("Decimal", [decimal.Decimal("0." + "9" * 99_000)] * 120),
            ("Fraction", [fractions.Fraction(10**4000, 3)] * 10_000),
            ("exception", [ValueError([_TEXT] * 6)]),
            ("Outcome", [Outcome.ok([_TEXT] * 6)]),
        ],
    )
    def test_a_shared_part_of_each_kind_outgrows_ten_million(
        self, name: str, payload: object
    ) -> None:
        """Each payload's ``repr`` is more than ten million characters (12 million for six 2
        MB parts; 11.9 million for 120 references to a Decimal of 99 002 characters; 12
        million for 10 000 Fractions of 1 203 digits); before, each of those kinds counted as
        one character, so every one of them was judged short."""
        assert outgrows(payload, 10_000_000) is True

    def test_short_values_of_those_kinds_stay_under_the_limit(self) -> None:
        """The counts are lower bounds: a few small values of each kind never outgrow 1 000."""
        payload = [
            b"abc",
            bytearray(b"abc"),
            {1, 2},
            frozenset({"a"}),
            collections.deque([1]),
            collections.OrderedDict(a=1),
            decimal.Decimal("1.25"),
            fractions.Fraction(1, 3),
            ValueError("bad"),
            Outcome.ok([1, 2]),
        ]
        assert outgrows(payload, 1_000) is False

    def test_a_short_decimal_counts_its_shortest_text_without_writing_it(self) -> None:
        """A Decimal of up to 76 digits counts 12 characters (``Decimal('1')``), a lower bound
        of its ``repr``: 500 000 references are 500 001 for the list and 6 million for the
        Decimals."""
        shared = decimal.Decimal("3.1416")
        assert outgrows([shared] * 500_000, 6_500_000) is True
        assert outgrows([shared] * 500_000, 6_500_001) is False

    def test_a_long_decimal_counts_its_whole_text(self) -> None:
        """``Decimal('1.' + '1' * 999)`` counts its ``repr``, 1 012 characters: ten
        references and the list are 10 131."""
        long = decimal.Decimal("1." + "1" * 999)
        assert len(repr(long)) == 1012
        assert outgrows([long] * 10, 10_130) is True
        assert outgrows([long] * 10, 10_131) is False

    def test_fixed_size_atoms_still_count_one(self) -> None:
        """Dates and complex numbers count one character each, as before (their text is a few
        dozen characters at most): two million are under seven million. (Ranges counted one
        here too until red team R17 found ``range(10 ** 4000)``: they count their text's lower
        bound now, pinned in ``test_red_team_r17.py``.)"""
        assert outgrows([0j, datetime.date(2026, 12, 3)] * 1_000_000, 7_000_000) is False


class TestDelegateOptionsOfEveryKindAreBounded:
    @pytest.mark.parametrize(
        "options",
        [
            "junk=[bytes(2_000_000)] * 6",
            "junk=[{'x' * 2_000_000}] * 6",
            "acceptance=deque(['x' * 2_000_000] * 6)",
        ],
    )
    def test_a_program_cannot_hand_over_options_whose_text_is_billions(self, options: str) -> None:
        """``delegate('helper', junk=[bytes(2_000_000)] * 100)`` answered ``ok`` 12.3 s after a
        2 s deadline (the kept child's key wrote the options' 800-million-character ``repr``);
        options whose text outgrows ten million characters are refused inside the program's
        call, as other kinds already were."""
        code = f"from collections import deque\nh = delegate('helper', {options})\nresult = 1"
        outcome = _agent(run=code).run()

        assert (outcome.status, outcome.error_type) == ("error", "execution")
        assert outcome.error_message == (
            "Execution error in tester.run: UsageError: delegate options: more than 10000000 "
            "characters"
        )

    def test_an_agent_counts_its_text_once_per_reference(self) -> None:
        """A hundred references to a child whose memory holds a 200 000-character key were 20
        million characters of ``repr`` (counted as 100 characters before R15, then 0.2 s of
        ``repr`` per 20 million in the key; 1.7 s for a 2-million-character key), refused. Since
        ADR 0142 an agent's ``repr`` shows a key's first 80 characters: the options are about
        15 000 characters, and the call makes its one kept child."""
        provider = ScriptedProvider(
            {
                ("tester", "run"): "h = delegate('store')\nh.fill(1)\n"
                "d = delegate('helper', junk=[h] * 100)\nresult = 1",
                ("store", "fill"): "context['k' * 200_000] = 1\nresult = 1",
            }
        )
        outcome = Agent("tester", provider=provider, guardrail_recovery_budget=0, log=False).run()

        assert (outcome.status, outcome.value) == ("ok", 1)

    def test_options_under_the_bound_still_make_one_kept_child(self) -> None:
        """Bytes options under the bound are keyed as before: the same options twice give the
        same child (a value set through the first handle is read through the second), whose answer
        comes back."""
        code = (
            "b = bytes(1000)\n"
            "first = delegate('helper', junk=[b] * 3)\n"
            "second = delegate('helper', junk=[b] * 3)\n"
            "first.mark = 7\n"
            "result = [second.mark, second.work(1).value]"
        )
        outcome = _agent(run=code).run()

        assert (outcome.status, outcome.value) == ("ok", [7, 2])


class TestTheChildKeyIsBoundedWhereverItsOptionsComeFrom:
    def test_a_registry_entry_a_program_wrote_cannot_make_the_key_billions(self) -> None:
        """``tool('x')`` of a registry entry whose ``acceptance`` is six references to 2 MB of
        bytes (48 million characters of ``repr``, added after the sandbox's bound on the
        program's own options) is refused before the key is written; the first call, which
        wrote the entry, is ``ok`` (before: 2.7 s and 855 MB for 30 references, then ``ok``)."""
        provider = ScriptedProvider(
            {
                ("tester", "setup"): "b = bytes(2_000_000)\n"
                "context['tools'] = {'x': {'purpose': 'p', 'acceptance': [b] * 6}}\nresult = 1",
                ("tester", "use"): "h = tool('x')\nresult = 2",
            }
        )
        agent = Agent("tester", provider=provider, guardrail_recovery_budget=0, log=False)

        assert agent.setup().status == "ok"
        outcome = agent.use()

        assert (outcome.status, outcome.error_type) == ("error", "execution")
        assert outcome.error_message == (
            "Execution error in tester.use: UsageError: tool 'x': its registry entry's contract "
            "fields print to more than 1000000 characters"
        )
        assert agent._agent.children == {}

    def test_an_option_that_cannot_be_written_is_refused_before_the_child_is_made(self) -> None:
        """``junk=1 << 20000`` (past CPython's 4 300-digit text limit): a ``UsageError`` naming
        the limit, and no child kept or registered (before: ``RuntimeError: delegate failed``
        after the child was made and registered in the agent's tools)."""
        code = (
            "try:\n"
            "    delegate('helper', junk=1 << 20000)\n"
            "    said = 'made'\n"
            "except Exception as error:\n"
            "    said = type(error).__name__ + ': ' + str(error)[:60]\n"
            "result = [said, sorted(context.get('tools') or {})]"
        )
        agent = _agent(run=code)
        outcome = agent.run()

        assert outcome.status == "ok"
        assert outcome.value == [
            "UsageError: a child's options cannot be written out: Exceeds the limit (",
            [],
        ]
        assert agent._agent.children == {}


class TestAnAppliedRetentionPolicyTakesEffectAtOnce:
    def test_a_lowered_entry_bound_drops_the_oldest_answers_before_the_next_read(self) -> None:
        """Five answers kept, then ``max_entries=2`` applied: the store holds the two newest
        and a program reading all five refs gets ``[None, None, None, 'a3', 'a4']`` (before:
        five held and all five read back, until the next call's write)."""
        configure_runtime(authority_maintainers=["maintainer"])
        provider = ScriptedProvider(
            {
                ("tester", "answer"): "result = 'a' + str(args[0])",
                ("tester", "peek"): "result = [content(ref) for ref in context['refs']]",
            }
        )
        agent = Agent("tester", provider=provider, guardrail_recovery_budget=0, log=False)
        refs = []
        for n in range(5):
            assert agent.answer(n).value == f"a{n}"
            record = agent.runtime_context["conversation_history"][-1]
            refs.append(record["outcome_summary"]["content_ref"])
        proposal = agent.propose(
            "content_retention_policy_update",
            metadata={"content_retention_policy": {"max_entries": 2}},
        )
        assert agent.approve_proposal(proposal.value["id"], actor="maintainer").status == "ok"
        assert agent.apply_proposal(proposal.value["id"], actor="maintainer").status == "ok"

        assert len(agent._agent.content) == 2
        agent.refs = refs
        assert agent.peek().value == [None, None, None, "a3", "a4"]
