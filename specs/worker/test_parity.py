"""What works in process works under ``isolation="process"``, or is a UsageError (ADR 0094).

The same scripted programs run on an in-process agent and on a process-isolated one: the
results, their exact types, and the memory they leave are the same (tuples, sets, bytes,
dicts with int keys, NaN, Decimals, Fractions, Counters, dates), and so are handles from
``delegate``/``tool`` (called, or refused alike when stored in memory), delegates and typed
deliverables.
A host object that cannot cross to a worker is refused with a UsageError when the host puts it
in such an agent's memory, or, put there behind the agent's back, when the call starts.
"""

from __future__ import annotations

import collections
import datetime
import decimal
import fractions
import math
import random
from collections.abc import Iterator
from typing import Any, Literal

import pytest
from pydantic import BaseModel

from recurgent import Agent
from recurgent.errors import UsageError
from recurgent.testing import ScriptedProvider

pytestmark = pytest.mark.slow

PROGRAMS = {
    "pair": "return (args[0], args[1])",
    "members": "return {3, 1, 2}",
    "raw": "return b'\\x00' + args[0]",
    "lengths": (
        "counts = {}\n"
        "for word in args[0]:\n"
        "    counts[len(word)] = counts.get(len(word), 0) + 1\n"
        "return counts"
    ),
    "money": "import decimal\nreturn decimal.Decimal('1.10') * 3",
    "third": "import fractions\nreturn fractions.Fraction(1, 3) + args[0]",
    "tally": "import collections\nreturn collections.Counter(args[0])",
    "later": "return context['due'] + args[0]",
    "stamp": "context['seen'] = (context['due'], args[0])\nreturn len(context['seen'])",
    "keep": "context['helper'] = delegate('adder')\nreturn 1",
    "ask": "helper = delegate('adder')\nreturn [helper.add(1).value, helper.add(2).value]",
    "build": "return tool('adder').add(3).value",
    "not_a_number": "return [float('nan'), -float('inf')]",
}
CALLS: list[tuple[str, tuple[Any, ...]]] = [
    ("pair", (1, "a")),
    ("members", ()),
    ("raw", (b"\xff",)),
    ("lengths", (["a", "bb", "cc", "ddd"],)),
    ("money", ()),
    ("third", (fractions.Fraction(1, 6),)),
    ("tally", ("abracadabra",)),
    ("later", (datetime.timedelta(days=30),)),
    ("stamp", (decimal.Decimal("2.5"),)),
    ("ask", ()),
    ("build", ()),
]


def _agent(isolation: Literal["in_process", "process"]) -> Agent:
    provider = ScriptedProvider(
        {
            **{("twin", name): code for name, code in PROGRAMS.items()},
            ("adder", "add"): "return args[0] + 40",
        }
    )
    agent = Agent("twin", provider=provider, log=False, toolstore_root=None, isolation=isolation)
    agent.due = datetime.date(2024, 1, 31)
    return agent


@pytest.fixture(scope="module")
def twins() -> Iterator[tuple[Agent, Agent]]:
    """An in-process agent and a process-isolated one, called in the same order.

    Each has delegated to ``adder`` once, so ``build``'s ``tool('adder')`` finds it in the
    registry on whichever pytest worker runs it (xdist may run ``ask`` on the other one: the
    spec failed with "tools: none" when it did).
    """
    in_process, isolated = _agent("in_process"), _agent("process")
    for agent in (in_process, isolated):
        assert agent.ask().value == [41, 42]
    yield in_process, isolated
    isolated._agent.workers.shutdown()  # type: ignore[union-attr]


def _typed(value: Any) -> Any:
    """A value with the exact type of every item, to compare two results strictly."""
    if isinstance(value, dict):
        return (type(value), [(_typed(k), _typed(v)) for k, v in value.items()])
    if isinstance(value, list | tuple):
        return (type(value), [_typed(item) for item in value])
    if isinstance(value, set | frozenset):
        return (type(value), sorted(map(repr, value)))
    return (type(value), value)


@pytest.mark.parametrize(("method", "args"), CALLS, ids=[name for name, _ in CALLS])
def test_the_same_program_returns_the_same_value_of_the_same_type(
    twins: tuple[Agent, Agent], method: str, args: tuple[Any, ...]
) -> None:
    """Status, value and exact types agree; so does the memory the program leaves."""
    in_process, isolated = twins

    here = getattr(in_process, method)(*args)
    there = getattr(isolated, method)(*args)

    assert (there.status, there.error_message) == ("ok", None)
    assert here.status == "ok"
    assert _typed(there.value) == _typed(here.value)
    # The keys programs write (history and the tool registry carry timestamps of their own).
    keys = ("due", "seen")
    mine = {key: isolated.runtime_context.get(key) for key in keys}
    theirs = {key: in_process.runtime_context.get(key) for key in keys}
    assert _typed(mine) == _typed(theirs)


def test_a_handle_stored_in_memory_is_refused_the_same_way(twins: tuple[Agent, Agent]) -> None:
    """A handle is the attempt's; memory keeps plain data: both refuse, with the same words."""
    here, there = (agent.keep() for agent in twins)
    assert (there.error_type, there.error_message) == (here.error_type, here.error_message)
    assert here.error_type == "non_serializable_result"
    assert "context['helper'] holds an agent handle" in (here.error_message or "")


def test_nan_and_infinities_cross(twins: tuple[Agent, Agent]) -> None:
    """NaN is not equal to itself: pinned apart, as a float NaN and a float -inf."""
    value = twins[1].not_a_number().value
    assert math.isnan(value[0]) and value[1] == -math.inf


class Headline(BaseModel):
    """A typed deliverable (ADR 0045)."""

    title: str
    score: int


@pytest.mark.parametrize("isolation", ["in_process", "process"])
def test_typed_deliverables_give_the_caller_model_instances(
    isolation: Literal["in_process", "process"],
) -> None:
    """``deliverable=list[Headline]``: the caller gets model instances either way."""
    agent = Agent(
        "news",
        provider=ScriptedProvider({"top": "return [{'title': 'a', 'score': 3}]"}),
        log=False,
        toolstore_root=None,
        isolation=isolation,
        deliverable=list[Headline],
    )

    outcome = agent.top()

    assert outcome.value == [Headline(title="a", score=3)]
    assert type(outcome.value[0]) is Headline


@pytest.fixture(scope="class")
def isolated() -> Iterator[Agent]:
    """One process-isolated agent for the refusals (each agent starts a worker when built)."""
    # No call is made: a provider is named only so the fail-fast check (ADR 0097) passes.
    agent = Agent(
        "x", provider=ScriptedProvider({}), log=False, toolstore_root=None, isolation="process"
    )
    yield agent
    agent._agent.workers.shutdown()  # type: ignore[union-attr]


class TestHostObjectsThatCannotCross:
    """A worker holds data and agents, never the host's objects: refused where they enter."""

    def test_the_setter_refuses_a_function(self, isolated: Agent) -> None:
        """``agent.fn = len`` names the key, the kind and the way out."""
        agent = isolated
        with pytest.raises(UsageError) as refused:
            agent.fn = len
        message = refused.value.message
        assert "context['fn'] holds a builtin_function_or_method" in message
        assert "isolation='in_process'" in message
        assert "fn" not in agent.runtime_context

    def test_remember_refuses_a_random_generator_and_writes_nothing(self, isolated: Agent) -> None:
        """``remember`` checks every entry before it writes any."""
        agent = isolated
        with pytest.raises(UsageError, match=r"context\['rng'\] holds a Random"):
            agent.remember(ok=1, rng=random.Random(1))
        assert "ok" not in agent.runtime_context

    def test_data_and_agents_are_accepted(self, isolated: Agent) -> None:
        """Plain values of every kept kind, nested, and another agent pass the check."""
        agent = isolated
        other = Agent("y", provider=ScriptedProvider({}), log=False, toolstore_root=None)
        agent.remember(
            data={1: (b"x", {2.5}), "when": datetime.datetime(2024, 1, 1)},
            counts=collections.Counter("aab"),
            friend=other,
        )
        assert agent.runtime_context["friend"] is other

    def test_in_process_agents_keep_host_objects(self) -> None:
        """The check is only for isolation='process'."""
        agent = Agent("x", provider=ScriptedProvider({}), log=False, toolstore_root=None)
        agent.fn = len
        assert agent.runtime_context["fn"] is len

    def test_a_host_object_slipped_into_memory_stops_the_call_with_a_usage_error(
        self,
    ) -> None:
        """Written through ``runtime_context``, past the setter: the call raises UsageError
        (a developer's mistake, not the program's), and memory is as it was."""
        agent = Agent(
            "x",
            provider=ScriptedProvider({"one": "return 1"}),
            log=False,
            toolstore_root=None,
            isolation="process",
        )
        thing = object()
        agent.runtime_context["thing"] = thing
        with pytest.raises(UsageError, match=r"context\['thing'\] holds a object"):
            agent.one()
        assert agent.runtime_context["thing"] is thing
