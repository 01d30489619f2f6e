"""Red team R31: ADR 0161's patch levels (``_levels.deep_patch``, ``MemoryShape``, the
rebuild's ``PLACED_AGAIN`` marks, ``Journal.prepare``), attacked as a generated program would.

Broken, and fixed:

- **A call on the agent's own handle placed the container where the walk did not look.** A
  child agent handed its own handle (``c = delegate('worker'); c.outer(c)``) runs a nested
  call while ``outer``'s attempt is open. ``outer`` touched memory's ``z``; the nested call
  committed ``b`` = 60 lists around ``z`` (marking the memory); ``outer`` then appended 62
  levels to ``z``. ``deep_patch`` walked the memory ``outer``'s journal found when it began
  (``Journal._base``), without ``b``: committed, ``b`` held 123 lists. Fixed in
  ``Journal._refuse_deep_patch``: memory is walked as it is at prepare (the nested call's
  commit included). Cost: none (the same walk over the live top level).
- **A handle write placed one part twice past the journal.** ``c.b = [x, y]`` or
  ``c.remember(b=[x, y])``, ``y`` 60 lists around ``x``: the program's value is rebuilt once
  (``x`` stays one object) and the host's setter writes it into the child's memory, no commit
  marking it. The child's next ``context['b'][0].append(<62 lists>)`` (64 levels along its
  path) committed, ``b`` held 124 lists. Fixed: ``_levels.shares_a_part`` tells a value that
  reaches a container twice; a handle's ``set_value`` and ``_remember_from_code`` mark the
  target's memory with it before writing. Cost: one walk of the written value (130 ms for
  100 000 records, whose rebuild takes about 1.2 s).
- **Memory held inside itself put top-level writes deeper.** ``context['w'] = <60 lists
  around context>`` stored memory itself (the view resolved to memory), measured by memory's
  height then; a later ``context['b'] = <62 lists>``, counted from the top, also sat 61 levels
  down through ``w``: a 123-level path (top-level writes are never walked). Fixed in
  ``Journal.original_of``: the view is not memory's object; stored, it is rebuilt as a plain
  dict of memory's values (each memory's own, so the commit marks the memory). Cost: storing
  ``context`` rebuilds memory's top level (it was one reference).
- **An honest pop, sort, insert or removal marked the memory shared for good.** A list patch
  that is not appends only (``queue.pop()``, ``queue.pop(0)``, ``sort``, ``insert``,
  ``remove``, ``del q[i]``) rebuilt every item, and each item the list already held resolved to
  memory's own object: ``PLACED_AGAIN``, so every later commit with a patch writing a
  container walked all of memory. Measured (best of five, an agent with 100 000 records in
  ``items``): appending a record to a two-item ``queue`` cost 0.78-0.86 ms, and 271-307 ms
  after one ``queue.pop()``. Fixed in ``_diff.container_patch``: an item the list held when
  copied, kept once, is mapped back to memory's object (same container, same depth: not
  placed again), not rebuilt; a second occurrence is rebuilt and marks as before. After one
  ``pop`` the append costs 0.89 ms.

Left (strict xfail, proposed fix in ADR 0164):

- **Rounds through cycles grow memory past the cap.** The walk, like ADR 0156's heights,
  leaves out the edge that closes a cycle, so a patched container first reached as a top-level
  key, lying on a cycle with its deeper places, is counted from its top. Top keys ``t33 ...
  t1`` (empty), ``s``, ``c`` (10 lists around ``s``, ``s`` holding ``c``); round ``k`` appends
  to ``t<k-1>`` the back edge ``t<k-2>`` and 31 lists around ``t<k>``: every round commits,
  and after 33 rounds ``c`` starts a simple path of 1 067 lists; the next read of
  ``context['c']`` raised ``RecursionError`` (the program's error), as did ``copy.deepcopy``
  and ``repr`` of memory in the host.

Left (measured, not pinned): honest moves of memory's own records still mark the memory
(``context['latest'] = context['items'][-1]`` shares one; ``context['q2'] =
context.pop('queue')``, ``context['items'] = context['items'][-500:]`` and ``d['b'] =
d.pop('a')`` move one to a new place and drop the old): each later patch writing a container
then walks memory, 271 ms a call with 100 000 records (0.76 ms before), as ADR 0161 says.
Two threads calling one agent can still both prepare before either commits (the checks run at
prepare, outside the memory lock, as ADR 0156's heights do): no program code runs between a
prepare and its commit, so a program cannot time it.

Held (pinned here): every way a program placed memory's own container tried marks the memory
(dict ``setdefault``/``update``/``|=``, ``extend`` with memory's lists, slice assignment,
``+=``, Outcome, exception, deque, defaultdict, OrderedDict, tuple, ``context.items()``,
``dict(context)``, ``context.get``, a program's object's attribute, a generator, a kept item
inserted twice); ``remember()`` and a worker's placement commit copies (memory stays a tree);
a key popped and set again is no write; a refused attempt leaves the shape unmarked.
"""

from __future__ import annotations

import functools
from typing import Any

import pytest

from recurgent._journal import Journal
from recurgent._levels import MemoryShape
from recurgent._sandbox import rebuild
from recurgent._sandbox._forwarding import MEMORY_SUFFIX
from recurgent.errors import NonSerializableResultError
from specs.sandbox.support import longest_list_path, probe_agent
from specs.test_red_team_r30 import _through_a_workers_parent

# Ten seconds: some rounds build a hundred thousand records.
_agent = functools.partial(probe_agent, timeout_seconds=10.0)


def _longest_simple(value: Any) -> int:
    """The longest simple path of lists from ``value`` (every simple path: small graphs)."""
    deepest, stack = 0, [(value, 1, frozenset([id(value)]))]
    while stack:
        node, level, seen = stack.pop()
        deepest = max(deepest, level)
        stack.extend(
            (part, level + 1, seen | {id(part)})
            for part in node
            if isinstance(part, list) and id(part) not in seen
        )
    return deepest


class TestANestedCallOnTheSameMemoryIsWalked:
    """Fixed: ``Journal._refuse_deep_patch`` walks memory as it is when the attempt prepares,
    with what a nested call on the same agent committed meanwhile."""

    PROGRAMS = {
        "top": "c = delegate('worker')\nc.setup()\nr = c.outer(c)\n"
        "return [r.status, r.error_message, c]",
        "setup": "context['z'] = []\nreturn 1",
        "outer": "z = context['z']\nargs[0].place()\ny = []\nfor _ in range(61):\n"
        "    y = [y]\nz.append(y)\nreturn 1",
        "place": "y = context['z']\nfor _ in range(60):\n    y = [y]\ncontext['b'] = y\nreturn 1",
    }

    def test_a_child_calling_itself_places_the_container_meanwhile(self) -> None:
        """Payload: a child agent handed its own handle; ``outer`` touches ``z``, calls
        ``place`` on itself (``b`` = 60 lists around ``z``, committed), then appends 62
        levels to ``z``. Before: ``ok``, ``b`` held 123 lists. Now: ``outer`` refused (``z``
        sits 60 levels down in ``b``), ``b`` keeps 61 lists and ``z`` stays empty."""
        answer = _agent(self.PROGRAMS).top()
        status, message, child = answer.value
        memory = child.runtime_context
        assert (status, message, longest_list_path(memory["b"]), memory["z"]) == (
            "error",
            "context['z'] with its new items, held 60 levels below memory's top, is nested "
            f"more than 64 levels deep; {MEMORY_SUFFIX}",
            61,
            [],
        )

    def test_a_journal_over_memory_a_nested_commit_changed(self) -> None:
        """The same through ``Journal``: memory gains ``b`` (60 lists around ``z``) after the
        journal began and before it prepares an append of 62 levels to ``z``. Refused,
        memory unchanged."""
        z: list[Any] = []
        memory: dict[str, Any] = {"z": z}
        shape = MemoryShape()
        journal = Journal(memory, shape=shape)
        journal.view["z"].append(_wrapped([], 61))
        memory["b"] = _wrapped(z, 60)
        shape.shared = True
        with pytest.raises(NonSerializableResultError):
            journal.prepare(rebuild).apply(memory)
        assert (longest_list_path(memory["b"]), z) == (61, [])


def _wrapped(part: Any, levels: int) -> list[Any]:
    """``part`` at the bottom of ``levels`` lists."""
    top: list[Any] = [part]
    for _ in range(levels - 1):
        top = [top]
    return top


class TestAWriteThroughAHandleMarksTheAgent:
    """Fixed: a value a program writes into another agent's memory through its handle
    (``handle.x = v``, ``handle.remember(x=v)``) reaches that memory past its journal, as a host
    setter; one that reaches a part twice marks that agent's memory (``_levels.shares_a_part``,
    in ``_agent_children`` and ``_agent_wiring``)."""

    @pytest.mark.parametrize("write", ["c.b = [x, y]", "c.remember(b=[x, y])"])
    def test_a_shared_part_written_into_a_child(self, write: str) -> None:
        """Payload: ``x = []``, ``y`` 60 lists around ``x``, ``b = [x, y]`` written into a
        child's memory through its handle, then the child's ``grow`` appends 62 levels to
        ``context['b'][0]``. Before: the child's memory unmarked, the append counted from
        ``b[0]`` (64 levels) committed, ``b`` held 124 lists. Now: the write marks the child's
        memory, ``grow`` is refused, ``b`` keeps 62 lists."""
        agent = _agent(
            {
                "top": "c = delegate('worker')\nx = []\ny = x\nfor _ in range(60):\n"
                f"    y = [y]\n{write}\nr = c.grow()\nreturn [r.status, r.error_message, c]",
                "grow": "y = []\nfor _ in range(61):\n    y = [y]\n"
                "context['b'][0].append(y)\nreturn 1",
            }
        )
        status, message, child = agent.top().value
        memory = child.runtime_context
        assert (status, message, longest_list_path(memory["b"]), memory["b"][0]) == (
            "error",
            "context['b'][0] with its new items, held 61 levels below memory's top, is nested "
            f"more than 64 levels deep; {MEMORY_SUFFIX}",
            62,
            [],
        )

    def test_a_tree_written_through_a_handle_leaves_the_memory_a_tree(self) -> None:
        """``c.b = [[1], [[2]]]`` and ``c.remember(d={'k': [3]})``: no part twice, so the
        child's memory stays unmarked."""
        agent = _agent(
            {
                "top": "c = delegate('worker')\nc.b = [[1], [[2]]]\nc.remember(d={'k': [3]})\n"
                "return c",
            }
        )
        child = agent.top().value
        assert (child.runtime_context["b"], child._runtime().memory_shape.shared) == (
            [[1], [[2]]],
            False,
        )


class TestMemoryIsNotPlacedInsideItself:
    """Fixed: the view stored in memory is rebuilt as a plain dict of memory's values, not
    resolved to memory itself (``Journal.original_of``)."""

    def test_a_top_level_write_below_memory_held_deep(self) -> None:
        """Payload: ``context['w'] = <60 lists around context>``, then ``context['b'] = <62
        lists>`` (fits at the top). Before: ``w`` held memory itself 60 lists down, so ``b``
        sat 61 levels below the top as well: a 123-level path, no walk (a top-level write
        counts from the top). Now: ``w`` holds a dict of memory's values as they were, not
        memory, and ``b`` is only at the top."""
        agent = _agent(
            {
                "w": "y = context\nfor _ in range(60):\n    y = [y]\ncontext['w'] = y\nreturn 1",
                "b": "y = []\nfor _ in range(61):\n    y = [y]\ncontext['b'] = y\nreturn 1",
            }
        )
        assert (agent.w().is_ok, agent.b().is_ok) == (True, True)
        memory = agent.runtime_context
        inner, lists = memory["w"], 0
        while isinstance(inner, list):
            inner, lists = inner[0], lists + 1
        assert (
            lists,
            type(inner),
            inner is memory,
            "b" in inner,
            longest_list_path(memory["b"]),
        ) == (
            60,
            dict,
            False,
            False,
            62,
        )


class TestKeptItemsAreNotPlacedAgain:
    """Fixed: a list patch that reorders or removes items maps each item the list already held
    back to memory's object without marking the memory (``_diff.container_patch``)."""

    FILL = (
        "context['items'] = [{'id': i, 'tags': [i]} for i in range(100)]\n"
        "context['queue'] = [{'id': i} for i in range(10)]\nreturn 1"
    )

    @pytest.mark.parametrize(
        "step",
        [
            "context['queue'].pop()",
            "context['queue'].pop(0)",
            "context['queue'].sort(key=lambda r: -r['id'])",
            "context['queue'].insert(0, {'id': -1})",
            "q = context['queue']\nq.remove(q[3])",
            "del context['queue'][2]",
            "context['queue'].reverse()",
        ],
    )
    def test_an_honest_reorder_leaves_the_memory_a_tree(self, step: str) -> None:
        """Before: each of these marked the memory shared (every later patch writing a
        container walked all of it). Now: still a tree, and the queue holds memory's own
        records (the survivors keep their identity)."""
        agent = _agent({"fill": self.FILL, "step": step + "\nreturn 1"})
        agent.fill()
        queue = agent.runtime_context["queue"]
        records = {id(record) for record in queue}
        assert agent.step().is_ok
        kept = [record for record in agent.runtime_context["queue"] if record["id"] >= 0]
        assert (
            agent._runtime().memory_shape.shared,
            agent.runtime_context["queue"] is queue,
            all(id(record) in records for record in kept),
        ) == (False, True, True)

    def test_a_kept_item_placed_twice_still_marks(self) -> None:
        """``q.insert(0, q[-1])``: the second occurrence is memory's record at a second place,
        rebuilt and marked as before."""
        agent = _agent({"fill": self.FILL, "step": "q = context['queue']\nq.insert(0, q[-1])"})
        agent.fill()
        assert agent.step().is_ok
        queue = agent.runtime_context["queue"]
        assert (agent._runtime().memory_shape.shared, queue[0] is queue[-1], len(queue)) == (
            True,
            True,
            11,
        )

    def test_a_reorder_then_a_deep_patch_through_a_shared_place_is_refused(self) -> None:
        """Memory: ``z`` an empty list, ``q`` holding ``z`` and ``[1]``, ``b`` 60 lists around
        ``z`` (shared, marked). Payload, one call: ``q.reverse()`` and an append of 62 levels
        to ``z`` through ``q``. The kept ``z`` is not rebuilt, yet the walk still counts it at
        ``b``'s depth: refused, memory unchanged."""
        z: list[Any] = []
        q: list[Any] = [z, [1]]
        memory: dict[str, Any] = {"q": q, "b": _wrapped(z, 60)}
        shape = MemoryShape()
        shape.shared = True
        journal = Journal(memory, shape=shape)
        view_q = journal.view["q"]
        view_q.reverse()
        view_q[1].append(_wrapped([], 61))
        with pytest.raises(NonSerializableResultError):
            journal.prepare(rebuild).apply(memory)
        assert (q[0] is z, longest_list_path(memory["b"]), z) == (True, 61, [])


class TestRoundsThroughCyclesLeft:
    """Left: the walk leaves out the edge that closes a cycle (ADR 0156), so a patched
    container reached first as a top-level key, on a cycle with its deeper places, is counted
    from the top (ADR 0161's open question)."""

    @pytest.mark.xfail(
        strict=True,
        reason="a cycle's closing edge is left out of the walk, DFS order decides the depth "
        "(proposed: count a strongly connected part as its size, ADR 0164)",
    )
    def test_rounds_through_cycles_grow_a_simple_path(self) -> None:
        """Memory keys in order ``t3 t2 t1`` (empty lists), ``s`` (a list), ``c`` (10 lists
        around ``s``), and ``s`` holding ``c`` (a cycle). Round 1 appends 31 lists around
        ``t1`` to ``s``; round ``k`` appends to ``t<k-1>`` the back edge (``s`` or
        ``t<k-2>``) and 31 lists around ``t<k>``. Each patch fits where the walk first
        reaches its container. Now: both rounds commit and ``c`` starts a simple path of 107
        lists, 32 more a round (33 rounds: 1 067, and reading ``context['c']`` raised
        ``RecursionError``). Fixed: round 2 (75 lists) refused, the simple path stays at 43."""
        agent = _agent(
            {
                "setup": "for k in (3, 2, 1):\n    context['t' + str(k)] = []\n"
                "context['s'] = []\nreturn 1",
                "place": "y = context['s']\nfor _ in range(10):\n    y = [y]\n"
                "context['c'] = y\nreturn 1",
                "close": "context['s'].append(context['c'])\nreturn 1",
                "first": "y = context['t1']\nfor _ in range(31):\n    y = [y]\n"
                "context['s'].append(y)\nreturn 1",
                "round": "k = args[0]\nprev = context['t' + str(k - 1)]\n"
                "prev.append(context['s'] if k == 2 else context['t' + str(k - 2)])\n"
                "y = context['t' + str(k)]\nfor _ in range(31):\n    y = [y]\n"
                "prev.append(y)\nreturn 1",
            }
        )
        for step in ("setup", "place", "close", "first"):
            assert getattr(agent, step)().is_ok
        committed = [agent.round(k).is_ok for k in (2, 3)]
        # Round 3 may commit once round 2 is refused (its container then lies on no cycle).
        assert (committed[0], _longest_simple(agent.runtime_context["c"])) == (False, 43)


class TestPlacingMemorysOwnContainerHeld:
    """Held: every way a program placed memory's own container at a new place marks the
    memory, and the ways that commit copies leave it a tree."""

    FILL = (
        "context['z'] = []\ncontext['a'] = [[1], [2]]\ncontext['d'] = {'k': [1]}\n"
        "context['q'] = [[1], [2], [3]]\nreturn 1"
    )

    @staticmethod
    def _shared_after(fill: str, step: str) -> tuple[bool, bool]:
        agent = _agent({"fill": fill, "step": step + "\nreturn 1"})
        agent.fill()
        answer = agent.step()
        return answer.is_ok, agent._runtime().memory_shape.shared

    @pytest.mark.parametrize(
        "step",
        [
            "context['d'].setdefault('x', context['z'])",
            "context['d'].update({'x': context['z']})",
            "d = context['d']\nd |= {'x': context['z']}",
            "context['z'].extend(context['a'])",
            "context['q'][1:1] = [context['z']]",
            "q = context['q']\nq += [context['z']]",
            "context['o'] = Outcome.ok(context['z'])",
            "context['e'] = ValueError(context['z'])",
            "import collections\ncontext['dq'] = collections.deque([context['z']])",
            "import collections\ndd = collections.defaultdict(list)\ndd['x'] = context['z']\n"
            "context['dd'] = dd",
            "import collections\ncontext['od'] = collections.OrderedDict(x=context['z'])",
            "context['t'] = (context['z'],)",
            "context['iv'] = [v for k, v in context.items() if k == 'z']",
            "context['dc'] = dict(context)['z']",
            "context['g'] = [context.get('z')]",
            "q = context['q']\nq.append(q[0])",
            "z = context['z']\nz.append(z)",
            "q = context['q']\nq[0].append(q.pop())",
            "class C:\n    pass\nc = C()\nc.v = context['z']\ncontext['cv'] = c.v",
            "def g():\n    yield context['z']\ncontext['gv'] = list(g())",
        ],
    )
    def test_a_placement_marks_the_memory(self, step: str) -> None:
        """Each commits and marks the memory shared."""
        assert self._shared_after(self.FILL, step) == (True, True)

    def test_remember_commits_a_copy(self) -> None:
        """``remember(b=[context['z']])``: memory's ``b`` holds a copy of ``z``, not ``z``; the
        memory stays a tree."""
        agent = _agent({"fill": self.FILL, "step": "remember(b=[context['z']])\nreturn 1"})
        agent.fill()
        assert agent.step().is_ok
        memory = agent.runtime_context
        assert (
            memory["b"],
            memory["b"][0] is memory["z"],
            agent._runtime().memory_shape.shared,
        ) == (
            [[]],
            False,
            False,
        )

    def test_a_key_popped_and_set_again_is_no_write(self) -> None:
        """``x = context.pop('z'); context['z'] = x``: memory's own object at its own key."""
        assert self._shared_after(self.FILL, "x = context.pop('z')\ncontext['z'] = x") == (
            True,
            False,
        )

    def test_a_refused_attempt_leaves_the_shape_unmarked(self) -> None:
        """``context['b'] = [context['z']]`` in an attempt whose result cannot leave: nothing
        commits and the memory is not marked."""
        assert self._shared_after(self.FILL, "context['b'] = [context['z']]\nreturn len") == (
            False,
            False,
        )

    def test_a_workers_placement_commits_a_copy(self) -> None:
        """Through a worker's parent: ``context['b'] = [context['z']]`` commits a copy of
        ``z`` (the pipe carries data), so the host's memory stays a tree."""
        memory: dict[str, Any] = {"z": []}
        result = _through_a_workers_parent(memory, "context['b'] = [context['z']]\nreturn 1")
        assert (result.error, memory["b"], memory["b"][0] is memory["z"]) == (None, [[]], False)
