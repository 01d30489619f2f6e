"""Red team R30: ADR 0156's heights (``_boundary._Rebuilder``, ``_height``, the journal's shared
heights table) and ADR 0157's worker-parent checks, attacked as a generated program (or a
subverted worker) would.

Broken, and fixed:

- **Printed surrogate pairs cut by the parent.** A program printing ``(chr(0xD83D) +
  chr(0xDE00)) * 32767`` keeps its whole output in process: the collector counts each lone
  surrogate as one byte (``?``), 65 535 bytes. The worker's JSON line joins each pair into one
  four-byte character, and the parent's stdout cut (ADR 0157) measured 131 071 bytes: the
  honest output was cut to 16 384 characters and the truncation marker. Fixed in
  ``_executor._bounded_output``: a character past U+FFFF counts the two bytes its surrogates
  cost the worker's collector (a subverted worker's astral text is kept up to twice the cap's
  bytes, then cut as before).

- **A dict view placed many times was copied once a place.** ADR 0156 memoized tuples and
  sets, not the views a rebuild turns into lists: ``v = d.keys()`` of a 100 000-key dict,
  returned as ``[v] * 300``, took 8.6 s past a one-second deadline (``[v] * 10**7`` would not
  end). Fixed in ``_boundary._Rebuilder.value``: a view is memoized once built, with its
  height; placed twice it is one list in the copy (it was two equal lists).
- **A frozenset DAG copied once a path on the way in.** ``_inbound`` memoized tuples and
  Outcomes, not sets: a child's answer of ``f = frozenset([f, frozenset([f, k])])`` 18 times
  took 1.3 s to reach the reading program, twice that a level more (30 times, 60 levels the
  boundary keeps shared, ran to the reading attempt's deadline). Fixed: sets and frozensets are
  memoized there by the tuples' rule.

- **An in-place patch counted only the path it was made through.** A container memory holds
  at several places (memory's value placed in another key by an earlier call, which commits
  memory's own object) was patched in place through its shallow place: the patch's items were
  counted from there, not from the deepest place memory reaches the container. Twenty rounds
  of "append a 62-level chain ending in memory's next ``z`` to memory's ``z``" stored 1 321
  levels under a key that holds ``z0`` 60 levels down; reading it then raised
  ``RecursionError`` (ADR 0152's symptom through another door). The same within one commit:
  memory's 41-level value placed 20 lists down in a new key and patched at its innermost list;
  and a worker's parent patched the host's shared container the same way (the worker's copy
  of memory is a tree). Fixed (ADR 0161): ``_levels.deep_patch``, called by
  ``Journal.prepare`` and by the worker's parent when a commit patches memory, walks memory as
  the commit leaves it once and refuses a patch whose new items pass the cap at the deepest
  place its container sits (a worker's parent at the encoder's 63 levels); a commit without
  a patch that writes a non-scalar walks nothing (counted here).

Held (pinned here): a DAG of tuples, frozensets, Outcomes and exceptions is rebuilt once a part
(ended within a generous bound) and its shared part stays one object; a deep tuple, frozenset,
Outcome and exception path is refused at 64 levels when reached again deeper; a list cycle
through a tuple still commits.
"""

from __future__ import annotations

import time
from typing import Any, cast

import pytest

from recurgent import _levels as levels
from recurgent._execution import ExecutionInputs
from recurgent._journal import Journal, _core as core
from recurgent._sandbox import SandboxLimits, rebuild
from recurgent._sandbox._boundary import PLAIN_SUFFIX
from recurgent._sandbox._forwarding import MEMORY_SUFFIX
from recurgent._sandbox._inbound import inbound
from recurgent._worker._executor import ProcessExecutor
from recurgent._worker._protocol import dump_line, parse_line
from recurgent._worker._supervisor import WorkerSupervisor
from recurgent.errors import NonSerializableResultError
from recurgent.outcome import Outcome
from recurgent.program import Program
from specs.sandbox.support import Host, execute, longest_list_path, nested_lists, probe_agent
from specs.worker.support import ReplyingSupervisor, worker_answer


def _wrapped(part: Any, levels: int) -> list[Any]:
    """``part`` at the bottom of ``levels`` lists: ``[[...[part]...]]``."""
    top: list[Any] = [part]
    for _ in range(levels - 1):
        top = [top]
    return top


class TestAPatchCountsEveryPlaceOfItsContainer:
    """Fixed: a patched container is counted at the deepest place memory holds it after the
    commit (``_levels.deep_patch``, ADR 0161)."""

    def test_a_shared_container_patched_through_its_shallow_place(self) -> None:
        """Memory: ``z`` an empty list, ``b`` 60 lists above ``z`` (the same object, as an
        earlier ``context['b'] = [[...[context['z']]...]]`` commits it). Payload:
        ``context['z'].append(<62 lists>)``. Before: committed (counted from ``z``'s place at
        the top), ``b`` then held 123 lists. Now: refused (``z`` sits 60 levels down in ``b``),
        ``b`` unchanged at 61 lists."""
        shared: list[Any] = []
        memory: dict[str, Any] = {"z": shared, "b": _wrapped(shared, 60)}
        journal = Journal(memory)
        journal.view["z"].append(nested_lists(61))
        with pytest.raises(NonSerializableResultError) as refused:
            journal.prepare(rebuild).apply(memory)
        assert (str(refused.value), longest_list_path(memory["b"]), memory["z"]) == (
            "context['z'] with its new items, held 60 levels below memory's top, is nested more "
            f"than 64 levels deep; {PLAIN_SUFFIX}",
            61,
            [],
        )

    def test_placed_and_patched_in_one_commit(self) -> None:
        """Memory: ``a`` 41 levels. Payload, one call: ``context['b'] = <20 lists around
        context['a']>`` and an append of 20 levels at ``a``'s innermost list. Before: both fit
        where they were made (61 and 62 levels), ``b`` held 82. Now: refused, the placement
        counted with the commit's patch; memory unchanged."""
        memory: dict[str, Any] = {"a": nested_lists(40)}
        journal = Journal(memory)
        view = journal.view
        view["b"] = _wrapped(view["a"], 20)
        innermost = view["a"]
        for _ in range(40):
            innermost = innermost[0]
        innermost.append(nested_lists(19))
        refused = False
        try:
            journal.prepare(rebuild).apply(memory)
        except NonSerializableResultError:
            refused = True
        assert (refused, sorted(memory), longest_list_path(memory["a"])) == (True, ["a"], 41)

    def test_placed_by_one_patch_and_patched_by_another(self) -> None:
        """Memory: ``w`` an empty list, ``p`` 30 lists above an empty list ``q``. Payload, one
        call: ``q.append(context['w'])`` and ``context['w'].append(<40 lists>)``. Each patch
        fits where it was made (``w`` 31 levels down, then 41 below the top); together ``p``
        would hold 72 lists. Refused: ``w`` counted where the other patch places it, memory
        unchanged."""
        w: list[Any] = []
        memory: dict[str, Any] = {"w": w, "p": _wrapped([], 30)}
        journal = Journal(memory)
        view = journal.view
        q = view["p"]
        for _ in range(29):
            q = q[0]
        q[0].append(view["w"])
        view["w"].append(nested_lists(39))
        with pytest.raises(NonSerializableResultError) as refused:
            journal.prepare(rebuild).apply(memory)
        assert (str(refused.value), longest_list_path(memory["p"]), w) == (
            "context['w'] with its new items, held 31 levels below memory's top, is nested more "
            f"than 64 levels deep; {PLAIN_SUFFIX}",
            31,
            [],
        )

    def test_rounds_of_calls_grow_a_key_without_bound(self) -> None:
        """Payload: ``context['z0'] = []``; ``context['b'] = <60 lists around
        context['z0']>``; then ten rounds of ``context['z<k+1>'] = []`` and
        ``context['z<k>'].append(<62 lists around context['z<k+1>']>)``. Before: every call
        ``ok``, ``b`` grew 63 levels a round (1 321 after twenty; reading it raised
        ``RecursionError``). Now: every ``grow`` refused, ``b`` stays at 61 lists and ``z0``
        empty."""
        agent = probe_agent(
            {
                "setup": "context['z0'] = []\ncontext['k'] = 0\nreturn 1",
                "share": "y = context['z0']\nfor _ in range(60):\n    y = [y]\n"
                "context['b'] = y\nreturn 1",
                "fresh": "context['z' + str(context['k'] + 1)] = []\nreturn 1",
                "grow": "k = context['k']\ny = context['z' + str(k + 1)]\n"
                "for _ in range(62):\n    y = [y]\ncontext['z' + str(k)].append(y)\n"
                "context['k'] = k + 1\nreturn 1",
            }
        )
        agent.setup()
        agent.share()
        grown = []
        for _ in range(10):
            agent.fresh()
            grown.append(agent.grow().error_type)
        memory = agent.runtime_context
        assert (grown, longest_list_path(memory["b"]), memory["k"], memory["z0"]) == (
            ["non_serializable_result"] * 10,
            61,
            0,
            [],
        )


def _through_the_parent(source: str) -> str:
    """The stdout a worker's honest answer for ``source`` leaves after its JSON line and the
    parent's checks (the child's steps in this process, ``worker_answer``)."""
    answer = parse_line(dump_line(worker_answer({}, source)))
    executor = ProcessExecutor(cast(WorkerSupervisor, ReplyingSupervisor(answer)))
    host = Host()
    result = executor.run(
        Program(code=source),
        ExecutionInputs(memory=dict(host.memory), commit_memory=False),
        SandboxLimits(timeout_seconds=5.0),
        host.bridge(),
    )
    return result.stdout


_PAIRS = "print((chr(0xD83D) + chr(0xDE00)) * 32767)\nreturn 1"


class TestPrintedOutputAsTheCollectorCountsIt:
    """Fixed: the parent's stdout cut keeps what the worker's collector kept."""

    def test_surrogate_pairs_within_the_cap_are_kept(self) -> None:
        """Payload (an honest program): ``print((chr(0xD83D) + chr(0xDE00)) * 32767)``. In
        process: 65 535 characters, no marker. Before: 16 384 joined characters and the marker
        through a worker. Now: the 32 767 joined characters and the newline, whole."""
        here = execute(_PAIRS).stdout
        assert (len(here), "truncated" in here) == (65535, False)
        assert _through_the_parent(_PAIRS) == "\U0001f600" * 32767 + "\n"

    def test_astral_text_past_twice_the_cap_is_still_cut(self) -> None:
        """Held: 65 536 four-byte characters from a worker (more than any collector keeps at
        two bytes each) are cut to 64 KiB and the marker, as before."""
        answer = parse_line(dump_line(worker_answer({}, "return 1")))
        answer = answer.model_copy(update={"stdout": "\U0001d11e" * 65536})
        executor = ProcessExecutor(cast(WorkerSupervisor, ReplyingSupervisor(answer)))
        host = Host()
        result = executor.run(
            Program(code="return 1"),
            ExecutionInputs(memory=dict(host.memory), commit_memory=False),
            SandboxLimits(timeout_seconds=5.0),
            host.bridge(),
        )
        assert result.stdout == "\U0001d11e" * 16384 + "\n[output truncated at 64 KiB]\n"


class TestADictViewIsCopiedOnce:
    """Fixed: a view placed many times is rebuilt once."""

    def test_a_big_view_placed_three_hundred_times(self) -> None:
        """Payload: ``v = d.keys()`` of a 100 000-key dict, ``return [v] * 300``. Before: 300
        copies of 100 000 keys, 8.6 s past a one-second deadline. Now: one list, placed 300
        times (ended within a generous bound)."""
        started = time.monotonic()
        result = execute(
            "d = {i: i for i in range(100000)}\nv = d.keys()\nreturn [v] * 300",
            limits=SandboxLimits(timeout_seconds=1.0),
        )
        value = result.value
        assert time.monotonic() - started < 5.0
        assert (len(value), value[0] == list(range(100000)), value[0] is value[299]) == (
            300,
            True,
            True,
        )

    def test_levels_below_a_shared_view_count_where_it_is_reached_again(self) -> None:
        """Held: a view whose values hold 40 levels, placed again 30 lists down, is refused at
        the cap (its height counts where it is reached again)."""
        view = {"k": nested_lists(40)}.values()
        with pytest.raises(NonSerializableResultError, match="nested more than 64 levels deep"):
            rebuild([view, _wrapped(view, 30)], "the value")
        assert rebuild([view, _wrapped(view, 10)], "the value")[0] == [nested_lists(40)]


def _tuple_dag(levels: int) -> Any:
    """``t = (t, t)`` ``levels`` times: 2**levels paths, ``levels + 1`` parts."""
    dag: Any = ()
    for _ in range(levels):
        dag = (dag, dag)
    return dag


class TestHeightsHeld:
    """Held: ADR 0156's memo and heights against shared and deep immutable parts."""

    def test_a_tuple_dag_is_rebuilt_once_a_part(self) -> None:
        """Payload: ``t = (t, t)`` 60 times (2**60 paths). Rebuilt once a part (ended within a
        generous bound), both halves one object in the copy."""
        started = time.monotonic()
        built = rebuild(_tuple_dag(60), "the value")
        assert time.monotonic() - started < 5.0
        assert built[0] is built[1]

    @pytest.mark.parametrize("shape", ["tuple", "frozenset key", "exception", "Outcome"])
    def test_a_deep_immutable_part_reached_again_deeper(self, shape: str) -> None:
        """Payload: a 40-level tuple chain inside ``shape``, placed at the top and again 27
        lists down (a dict key for the frozenset). Refused at 64 levels."""
        chain: Any = ()
        for _ in range(40):
            chain = (chain,)
        part: Any = {
            "tuple": chain,
            "frozenset key": frozenset([chain]),
            "exception": ValueError(chain),
            "Outcome": Outcome.ok(chain),
        }[shape]
        value: Any = (
            {part: _wrapped(part, 27)} if shape == "frozenset key" else [part, _wrapped(part, 27)]
        )
        with pytest.raises(NonSerializableResultError, match="nested more than 64 levels deep"):
            rebuild(value, "the value")

    def test_a_list_cycle_through_a_tuple_commits(self) -> None:
        """Payload: ``l = []; t = (l,); l.append(t)``, returned as ``[t, t]``. Rebuilt: the
        tuple is one object placed twice and its list holds a tuple holding that list."""
        cycle: list[Any] = []
        pair = (cycle,)
        cycle.append(pair)
        built = rebuild([pair, pair], "the value")
        assert built[0] is built[1]
        assert built[0][0][0][0] is built[0][0]


class TestAnInboundCopyVisitsAFrozensetOnce:
    """Fixed: another agent's frozenset DAG is copied once a part on the way in."""

    def test_a_frozenset_dag_from_a_child(self) -> None:
        """Payload: a child's answer ``f = frozenset([f, frozenset([f, k])])`` 30 times (60
        levels, what the boundary keeps shared). Before: copied once a path by ``inbound``
        (18 levels 1.3 s, twice that a level more; 30 would run to the reading attempt's
        deadline). Now: each part once, fewer values than one deadline check's 4 096."""
        dag: Any = frozenset()
        for k in range(30):
            dag = frozenset([dag, frozenset([dag, k])])
        answer = rebuild(Outcome.ok(dag), "the answer")
        ticks: list[int] = []

        def tick() -> None:
            ticks.append(1)
            if len(ticks) > 10:
                raise TimeoutError("copied once a path")

        received = inbound(answer, lambda _: None, tick).value
        # A frozenset's hash is cached and made from its members': equal hashes in linear
        # time (== of two unshared copies would compare once a path).
        assert (ticks, type(received), hash(received) == hash(dag)) == ([], frozenset, True)


def _through_a_workers_parent(memory: dict[str, Any], source: str) -> Any:
    """The result of a worker's honest answer for ``source`` over ``memory``, committed by the
    parent into ``memory`` (the child's steps in this process, ``worker_answer``). The child's
    copy of memory is a tree: only the parent sees that two keys hold one container."""
    answer = parse_line(dump_line(worker_answer(memory, source)))
    executor = ProcessExecutor(cast(WorkerSupervisor, ReplyingSupervisor(answer)))
    host = Host(memory=memory)
    return executor.run(
        Program(code=source),
        ExecutionInputs(memory=host.memory),
        SandboxLimits(timeout_seconds=5.0),
        host.bridge(),
    )


_APPEND_62 = "y = []\nfor _ in range(61):\n    y = [y]\ncontext['z'].append(y)\nreturn 1"


class TestAWorkersPatchCountsEveryPlaceOfItsContainer:
    """Fixed: the worker's parent counts a patch of the host's container as the journal does
    (``_levels.deep_patch``, ADR 0161)."""

    def test_a_shared_container_patched_through_a_worker(self) -> None:
        """Host memory: ``z`` an empty list, ``b`` 60 lists above the same ``z``. Payload
        through a worker: ``context['z'].append(<62 lists>)``. The child's tree copy fits (62
        levels below its own ``z``). Before: the parent patched the host's ``z``, ``b`` then
        held 123 lists. Now: refused as memory's nesting refusal, the host's memory
        unchanged."""
        shared: list[Any] = []
        memory: dict[str, Any] = {"z": shared, "b": _wrapped(shared, 60)}
        result = _through_a_workers_parent(memory, _APPEND_62)
        assert (type(result.error), str(result.error), longest_list_path(memory["b"]), shared) == (
            NonSerializableResultError,
            "context['z'] with its new items, held 60 levels below memory's top, is nested more "
            f"than 64 levels deep; {MEMORY_SUFFIX}",
            61,
            [],
        )

    def test_the_same_patch_within_the_encoders_levels_commits(self) -> None:
        """Held: with ``z`` held 1 level down in ``b`` instead, the same append (a list 63
        levels below memory's top, the deepest a worker's encoder carries) commits in place:
        ``z`` keeps its identity and ``b`` holds 64 lists."""
        shared: list[Any] = []
        memory: dict[str, Any] = {"z": shared, "b": _wrapped(shared, 1)}
        result = _through_a_workers_parent(memory, _APPEND_62)
        assert (
            result.error,
            memory["z"] is shared,
            len(shared),
            longest_list_path(memory["b"]),
        ) == (
            None,
            True,
            1,
            64,
        )

    def test_one_level_deeper_is_refused_as_the_encoder_would(self) -> None:
        """``z`` held 2 levels down: the append would put a list 64 levels below memory's top,
        which a worker's encoder refuses (ADR 0152), so memory could not be sent to a worker
        again: refused by the parent (in process, where the cap is 64, it commits)."""
        shared: list[Any] = []
        memory: dict[str, Any] = {"z": shared, "b": _wrapped(shared, 2)}
        result = _through_a_workers_parent(memory, _APPEND_62)
        assert (str(result.error), longest_list_path(memory["b"]), shared) == (
            "context['z'] with its new items, held 2 levels below memory's top, is nested more "
            f"than 64 levels deep; {MEMORY_SUFFIX}",
            3,
            [],
        )
        here: dict[str, Any] = {"z": [], "b": []}
        here["b"] = _wrapped(here["z"], 2)
        journal = Journal(here)
        journal.view["z"].append(nested_lists(61))
        journal.prepare(rebuild).apply(here)
        assert longest_list_path(here["b"]) == 65


class TestAPatchWalksMemoryOnlyWhenItCanAddALevel:
    """The patch levels' walk (``_levels.deep_patch``) costs nothing on the common path and
    one walk a commit otherwise (ADR 0161). Counted, not timed."""

    @staticmethod
    def _counting(monkeypatch: pytest.MonkeyPatch) -> dict[str, int]:
        counts = {"deep_patch": 0, "walk": 0, "parts": 0}

        def counted(name: str, function: Any) -> Any:
            def call(*args: Any, **kwargs: Any) -> Any:
                counts[name] += 1
                return function(*args, **kwargs)

            return call

        monkeypatch.setattr(core, "deep_patch", counted("deep_patch", levels.deep_patch))
        monkeypatch.setattr(levels, "_walk", counted("walk", levels._walk))
        monkeypatch.setattr(levels, "parts", counted("parts", levels.parts))
        return counts

    def test_a_persisted_counter_never_calls_it(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Payload: ``context['value'] = context.get('value', 0) + 1`` three times (the hot
        benchmark's call): no patch, so ``deep_patch`` is not called."""
        counts = self._counting(monkeypatch)
        agent = probe_agent({"count": "context['value'] = context.get('value', 0) + 1\nreturn 1"})
        for _ in range(3):
            agent.count()
        assert (agent.runtime_context["value"], counts) == (
            3,
            {"deep_patch": 0, "walk": 0, "parts": 0},
        )

    def test_appending_scalars_walks_nothing(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Payload: 1 000 ints and strings appended to a memory list and set in a memory dict
        shared by another key: scalars add no level, so nothing is walked."""
        counts = self._counting(monkeypatch)
        shared: dict[str, Any] = {"log": []}
        memory: dict[str, Any] = {"d": shared, "b": _wrapped(shared, 63)}
        journal = Journal(memory)
        for i in range(1000):
            journal.view["d"]["log"].append(i)
            journal.view["d"][str(i)] = "x"
        journal.prepare(rebuild).apply(memory)
        assert (len(shared), len(shared["log"]), counts) == (
            1001,
            1000,
            {"deep_patch": 1, "walk": 0, "parts": 0},
        )

    def test_a_thousand_appends_are_one_walk(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Payload: ``context['items'].append([i])`` 1 000 times on a 100 000-int memory list.
        One walk: the list once (as the commit leaves it) and each appended list once."""
        counts = self._counting(monkeypatch)
        memory: dict[str, Any] = {"items": list(range(100000)), "n": 0}
        journal = Journal(memory)
        for i in range(1000):
            journal.view["items"].append([i])
        journal.prepare(rebuild).apply(memory)
        assert (len(memory["items"]), memory["items"][-1], counts) == (
            101000,
            [999],
            {"deep_patch": 1, "walk": 1, "parts": 1001},
        )


class TestThePatchWalkHeld:
    """Held: the walk of ``_levels.deep_patch`` keeps what ADR 0156 keeps."""

    def test_a_patch_closing_a_cycle_commits(self) -> None:
        """Memory: ``z`` an empty list, ``b`` 60 lists above it. Payload:
        ``context['z'].append(context['b'])`` (61 levels below ``z``, then a cycle back to
        it). The cycle adds no level: committed, ``z`` holds memory's own ``b``."""
        shared: list[Any] = []
        memory: dict[str, Any] = {"z": shared, "b": _wrapped(shared, 60)}
        journal = Journal(memory)
        journal.view["z"].append(journal.view["b"])
        journal.prepare(rebuild).apply(memory)
        assert (len(shared), shared[0] is memory["b"]) == (1, True)

    def test_memory_deeper_than_the_stack_is_walked(self) -> None:
        """Memory the host built 100 000 lists deep beside a ``log``. Payload:
        ``context['log'].append([1])``. The walk is iterative: no ``RecursionError``, the
        append commits (the log is at the top)."""
        deep: list[Any] = []
        for _ in range(100000):
            deep = [deep]
        log: list[Any] = []
        memory: dict[str, Any] = {"deep": deep, "log": log}
        journal = Journal(memory)
        journal.view["log"].append([1])
        journal.prepare(rebuild).apply(memory)
        assert log == [[1]]


class TestATreeMemoryIsNotWalked:
    """An agent's memory that never held a container at two places is a tree: a patch's path
    is its container's only place, so its commit walks nothing (``MemoryShape``, ADR 0161).
    The first commit that places a part again marks the memory for good; patches then walk.
    Counted, not timed."""

    RECORDS = "context['log'] = [{'id': i, 'tags': [i]} for i in range(1000)]\nreturn 1"
    APPEND = "context['log'].append({'id': args[0], 'tags': [args[0]]})\nreturn 1"

    @staticmethod
    def _walks(monkeypatch: pytest.MonkeyPatch) -> list[int]:
        calls: list[int] = []

        def counted(*args: Any, **kwargs: Any) -> Any:
            calls.append(1)
            return levels.deep_patch(*args, **kwargs)

        monkeypatch.setattr(core, "deep_patch", counted)
        return calls

    def test_appending_records_to_a_tree_walks_nothing(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A thousand records in memory, then three calls each appending a record (a dict
        holding a list: it could add levels). Before (ADR 0161 without the shape): a walk of
        memory a call, 2 000 parts each. Now: none, and the memory is still a tree."""
        walks = self._walks(monkeypatch)
        agent = probe_agent({"fill": self.RECORDS, "add": self.APPEND})
        agent.fill()
        for i in range(3):
            assert agent.add(i).is_ok
        assert (len(agent.runtime_context["log"]), walks, agent._runtime().memory_shape.shared) == (
            1003,
            [],
            False,
        )

    @pytest.mark.parametrize(
        "placing",
        [
            "context['b'] = [context['log']]",  # memory's own container below the top
            "context['b'] = context['log'][0]",  # memory's inner container at a new key
            "x = []\ncontext['b'] = [x, [x]]",  # a part the written value reaches twice
            "context['log'][0]['again'] = context['log'][1]",  # a patch placing memory's own
        ],
    )
    def test_a_part_placed_again_marks_the_memory(
        self, monkeypatch: pytest.MonkeyPatch, placing: str
    ) -> None:
        """Each way a commit can put one container at two places marks the memory; the next
        call's patch walks it once."""
        walks = self._walks(monkeypatch)
        agent = probe_agent(
            {"fill": self.RECORDS, "place": placing + "\nreturn 1", "add": self.APPEND}
        )
        agent.fill()
        assert agent._runtime().memory_shape.shared is False
        assert agent.place().is_ok
        marked = agent._runtime().memory_shape.shared
        walked_before = len(walks)
        assert agent.add(7).is_ok
        assert (marked, len(walks) - walked_before) == (True, 1)

    def test_a_shared_part_in_one_written_value_is_refused_when_patched_deep(self) -> None:
        """Payload: ``x = []``, ``context['b'] = [x, <60 lists around x>]`` (one part at levels
        1 and 61 of one value), then a later call appends 62 levels through the shallow place
        ``context['b'][0]``. Refused: the memory was marked when ``b`` was written."""
        agent = probe_agent(
            {
                "share": "x = []\ny = x\nfor _ in range(60):\n    y = [y]\n"
                "context['b'] = [x, y]\nreturn 1",
                "grow": "y = []\nfor _ in range(62):\n    y = [y]\n"
                "context['b'][0].append(y)\nreturn 1",
            }
        )
        assert agent.share().is_ok
        grown = agent.grow()
        assert (grown.error_type, longest_list_path(agent.runtime_context["b"])) == (
            "non_serializable_result",
            62,
        )
