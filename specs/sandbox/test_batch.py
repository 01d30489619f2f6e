"""BatchSandbox: one set-up, a fresh attempt per item; nothing one item does reaches the next."""

from __future__ import annotations

import textwrap
from typing import Any

import pytest

from recurgent._sandbox import ExecutionResult, ExecutionSandbox, SandboxLimits, compile_program
from recurgent._sandbox._batch import PER_ATTEMPT_NAMES, BatchSandbox
from recurgent.errors import ExecutionError, ExecutionTimeoutError, ResourceLimitError
from specs.sandbox.support import Host


def _batch(host: Host, **limits: Any) -> BatchSandbox:
    return BatchSandbox(
        host.bridge(), limits=SandboxLimits(**{"timeout_seconds": 5.0, **limits}), network="deny"
    )


def _items(
    source: str, items: list[Any], host: Host | None = None, **limits: Any
) -> list[ExecutionResult]:
    host = host or Host()
    program = compile_program(textwrap.dedent(source))
    sandbox = _batch(host, **limits)
    return sandbox.run_items(program, [((item,), {}) for item in items])


class TestOneAttemptPerItem:
    def test_an_item_sees_the_globals_of_a_fresh_attempt(self) -> None:
        """Each item's globals are a fresh attempt's: the same names, nothing added."""
        host = Host()
        fresh = ExecutionSandbox(host.bridge(), limits=SandboxLimits(timeout_seconds=1.0))
        sandbox = _batch(host)
        sandbox.run_item(compile_program("seen = 1\nresult = 1"), (1,), {})
        sandbox._begin(host.bridge())

        assert set(sandbox._namespace) == set(fresh._namespace)
        assert set(fresh._namespace) >= PER_ATTEMPT_NAMES

    def test_a_name_one_item_binds_is_unknown_to_the_next(self) -> None:
        """A global declared and set by one item does not exist for the next."""
        source = """
        def keep(value):
            global kept
            kept = value
        if args[0] == 'set':
            keep('from the first item')
            result = 'set'
        else:
            result = kept
        """

        first, second = _items(source, ["set", "get"])

        assert first.value == "set"
        assert isinstance(second.error, ExecutionError)
        assert "NameError" in second.error.message

    def test_a_change_to_memory_one_item_made_is_not_seen_by_the_next(self) -> None:
        """Items read one snapshot; an in-place change stays in that item's journal."""
        host = Host(memory={"names": ["a"]})
        source = "context['names'].append(args[0])\nresult = len(context['names'])"

        results = _items(source, ["b", "c"], host)

        assert [r.value for r in results] == [2, 2]
        assert all(r.writes is not None and not r.writes.empty for r in results)
        assert host.memory == {"names": ["a"]}

    def test_each_item_has_its_own_deadline_and_output(self) -> None:
        """A looping item times out; the next sleeps, prints and answers in its own time."""
        source = """
        import time
        if args[0] == 'hang':
            while True:
                pass
        time.sleep(0.01)
        print('item', args[0])
        result = args[0]
        """

        hung, calm = _items(source, ["hang", "calm"], timeout_seconds=0.3)

        assert isinstance(hung.error, ExecutionTimeoutError)
        assert (calm.error, calm.value, calm.stdout) == (None, "calm", "item calm\n")

    def test_each_item_has_its_own_forwarded_call_budget(self) -> None:
        """Two calls each fit a budget of two per item; three in one item do not."""
        source = "for i in range(args[0]):\n    remember(k=i)\nresult = args[0]"

        results = _items(source, [2, 2, 3], max_forwarded_calls=2)

        assert [r.value for r in results[:2]] == [2, 2]
        assert isinstance(results[2].error, ResourceLimitError)

    def test_a_class_one_item_made_does_not_reach_the_next(self) -> None:
        """Classes are per item: the next item's open types hold none of the earlier's."""
        source = "class Row:\n    pass\nresult = type(Row()).__name__"
        host = Host()
        sandbox = _batch(host)

        first = sandbox.run_item(compile_program(source), (1,), {})
        sandbox._begin(host.bridge())

        assert first.value == "Row"
        assert [
            t for t in sandbox._namespace["_OPEN_"] if getattr(t, "__name__", "") == "Row"
        ] == []


@pytest.mark.parametrize(
    "source",
    [
        "result = sorted({args[0], 3, 1})",
        "import math\nresult = math.factorial(args[0])",
        "import random\nresult = random.Random(args[0]).randint(1, 100)",
        "from dataclasses import dataclass\n@dataclass\nclass P:\n    x: int\nresult = P(args[0]).x",
        "result = Outcome.error(error_type='odd', error_message='no') if args[0] % 2 else args[0]",
        "raise ValueError(f'bad {args[0]}')",
    ],
)
def test_a_batch_answers_as_fresh_sandboxes_would(source: str) -> None:
    """The same program over the same items: values and errors equal a fresh sandbox each."""
    program = compile_program(source)
    items = [4, 7, 10]
    sandbox = _batch(Host())
    batched = sandbox.run_items(program, [((item,), {}) for item in items])
    fresh = [
        ExecutionSandbox(
            Host(args=(item,)).bridge(), limits=SandboxLimits(timeout_seconds=5.0), network="deny"
        ).run(program)
        for item in items
    ]

    assert [(r.value, str(r.error)) for r in batched] == [(r.value, str(r.error)) for r in fresh]


class TestLeftovers:
    LEAKER = """
    def hold():
        try:
            yield 1
        finally:
            remember(late=args[0])
    keeper = []
    runner = hold()
    keeper.append(runner)
    keeper.append(keeper)
    next(runner)
    result = args[0]
    """

    def test_code_an_item_left_in_a_cycle_cannot_act_for_a_later_item(self) -> None:
        """A generator kept alive by a reference cycle is finalized by the collector while a
        later item's attempt is current: its remember() is refused as an expired attempt's,
        and the later item's budget and memory are untouched."""
        import gc

        host = Host()
        sandbox = _batch(host)
        program = compile_program(textwrap.dedent(self.LEAKER))
        gc.disable()
        try:
            first = sandbox.run_item(program, ("first",), {})
            sandbox._begin(host.bridge())
            gc.collect()
            forwarded, writes = sandbox._forwarded, sandbox._memory_writes()
        finally:
            gc.enable()

        assert first.value == "first"
        assert (forwarded, writes.empty, host.memory) == (0, True, {})

    def test_an_items_globals_are_let_go_when_it_ends(self) -> None:
        """When an item ends the sandbox no longer holds its globals (only a spent tick)."""
        sandbox = _batch(Host())

        ended = sandbox.run_item(compile_program("rows = [1, 2]\nresult = len(rows)"), (1,), {})

        assert ended.value == 2
        assert list(sandbox._namespace) == ["_ticker_"]
        assert next(sandbox._namespace["_ticker_"], False) is False


class TestMemoryCapPerBatch:
    """Each item's memory cap counts from the batch's start: one reading of the process's
    resident memory per batch, not one per item (ADR 0111)."""

    def test_one_baseline_reading_serves_every_item(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Five items, one MemoryMeter made (the batch's); each item's meter shares it."""
        from recurgent._sandbox import _memory

        made: list[object] = []
        real_init = _memory.MemoryMeter.__init__

        def counting_init(meter: _memory.MemoryMeter) -> None:
            made.append(meter)
            real_init(meter)

        monkeypatch.setattr(_memory.MemoryMeter, "__init__", counting_init)

        results = _items("result = args[0] * 2", [1, 2, 3, 4, 5])

        assert ([r.value for r in results], len(made)) == ([2, 4, 6, 8, 10], 1)

    def test_an_item_past_the_cap_stops_and_the_next_runs(self) -> None:
        """An item growing memory past the cap is a resource-limit error; the next item, under
        the same batch baseline, still answers."""
        source = """
        if args[0] == 'grow':
            rows = []
            for i in range(10**7):
                rows.append('x' * 1000 + str(i))
        result = args[0]
        """

        grown, after = _items(source, ["grow", "ok"], max_memory_bytes=64 * 1024 * 1024)

        assert (type(grown.error), after.value) == (ResourceLimitError, "ok")
        assert grown.error is not None
        assert "grew the process by more than 64 MiB" in grown.error.message


class TestArmedOncePerBatch:
    """What every item shares is armed once around a batch; each item is still stopped,
    cancelled and given a decimal context of its own (ADR 0124)."""

    def test_the_watchdog_is_registered_once_for_a_batch(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Five items, one registration with the process's watchdog, and none left after."""
        from recurgent._sandbox import _watchdog

        registered: list[object] = []
        real_register = _watchdog.WATCHDOG.register

        def counting(watched: _watchdog.Watched) -> bool:
            registered.append(watched)
            return real_register(watched)

        monkeypatch.setattr(_watchdog.WATCHDOG, "register", counting)

        results = _items("result = args[0] + 1", [1, 2, 3, 4, 5])

        assert ([r.value for r in results], len(registered)) == ([2, 3, 4, 5, 6], 1)
        assert registered[0] not in _watchdog.WATCHDOG._tickers.values()

    def test_library_code_of_one_item_stops_at_its_own_deadline(self) -> None:
        """Pure-Python library code never ticks: the watchdog's visit reaches the current item
        through the batch and stops it (ADR 0089); the items before and after answer."""
        source = """
        import urllib.parse
        if args[0] == 'slow':
            result = len(urllib.parse.parse_qsl('a=1&' * 2_000_000))
        else:
            result = args[0]
        """

        before, slow, after = _items(source, ["before", "slow", "after"], timeout_seconds=0.3)

        assert (before.value, after.value) == ("before", "after")
        assert slow.error is not None and slow.error.error_type == "timeout"
        assert "execution_timeout_seconds=0.3" in str(slow.error)

    def test_a_cancelled_call_stops_the_running_item_and_the_batch(self) -> None:
        """Cancelling the awaited call while an item spins ends that item (CallCancelled leaves
        the batch, as it leaves a single attempt); a batch run in a cancelled scope stops at
        its first item."""
        import threading

        from recurgent._cancellation import CallCancelled, CancelScope, enter_scope

        program = compile_program("while args[0]:\n    pass\nresult = 1")
        scope = CancelScope()
        sandbox = _batch(Host(), timeout_seconds=30.0)
        timer = threading.Timer(0.2, scope.cancel)
        timer.start()
        try:
            with enter_scope(scope), pytest.raises(CallCancelled):
                sandbox.run_items(program, [((False,), {}), ((True,), {}), ((False,), {})])
        finally:
            timer.cancel()
        with enter_scope(scope), pytest.raises(CallCancelled):
            _batch(Host()).run_items(program, [((False,), {})])

    def test_each_item_starts_on_a_fresh_decimal_context_and_the_hosts_comes_back(self) -> None:
        """An item that lowers its precision changes neither the next item's nor the host's."""
        import decimal

        source = """
        import decimal
        if args[0] == 'narrow':
            decimal.getcontext().prec = 5
        result = str(decimal.Decimal(1) / decimal.Decimal(3))
        """
        host_context = decimal.getcontext()

        narrow, plain = _items(source, ["narrow", "plain"])

        assert (narrow.value, plain.value) == ("0.33333", "0." + "3" * 28)
        assert decimal.getcontext() is host_context

    def test_the_running_flag_and_the_views_are_the_hosts_again_after_a_batch(self) -> None:
        """Inside an item generated code is running and its view is the active one; after the
        batch neither is left behind."""
        from recurgent._journal._view import ACTIVE
        from recurgent._sandbox._forwarding import RUNNING

        results = _items("result = 1", [1, 2])

        assert ([r.value for r in results], RUNNING.get(), ACTIVE.get()) == ([1, 1], False, ())


class TestAnEndedItemIsFreedAtOnce:
    """An item no code of which survives is freed by reference counting: its globals, journal
    and view do not wait for the cycle collector (ADR 0124)."""

    @pytest.mark.parametrize(
        "source",
        [
            "result = args[0] * 2",
            "def twice(n):\n    return 2 * n\nresult = twice(args[0])",
            "raise ValueError(args[0])",
            "result = len(context['names']) + context['limit']",
        ],
    )
    def test_items_leave_no_garbage_for_the_collector(self, source: str) -> None:
        """With the collector off, a batch of fifty items leaves exactly the unreachable
        objects a batch of one does (the batch's own set-up): none per item."""
        import gc

        program = compile_program(source)

        def garbage_of(items: int) -> int:
            gc.collect()
            gc.disable()
            try:
                sandbox = _batch(Host(memory={"names": ["a"], "limit": 3}))
                sandbox.run_items(program, [((n,), {}) for n in range(items)])
                del sandbox
                return gc.collect()
            finally:
                gc.enable()

        garbage_of(1)  # first-use caches (the importer's, the regex engine's) filled

        assert garbage_of(50) == garbage_of(1)

    def test_an_item_whose_code_survives_keeps_its_globals_and_view_whole(self) -> None:
        """A function the item kept in its globals still holds them: its view stays usable
        (its journal is not cut), while a plain item's view is let go."""
        host = Host(memory={"names": ["a"]})
        keeper = _batch(host)
        keeper.run_item(
            compile_program("def keep():\n    global kept\n    kept = keep\nkeep()\nresult = 1"),
            (1,),
            {},
        )
        plain = _batch(host)
        plain.run_item(compile_program("result = 1"), (1,), {})

        assert keeper._journal.view["names"] == ["a"]
        assert not hasattr(plain._journal.view, "_journal")


def test_forwarded_calls_and_agent_arguments_answer_as_in_fresh_sandboxes() -> None:
    """Items that are agents reach the program as handles, and delegate() and remember() are
    served inside the batch's arming as in a single attempt: the same values, the same calls."""
    from specs.sandbox.support import FakeAgent

    source = "result = [args[0].greet(1), delegate('helper').ask(args[0].role)]"
    program = compile_program(source)
    batch_host, fresh_host = Host(), Host()
    batched = _batch(batch_host).run_items(
        program, [((FakeAgent("ann"),), {}), ((FakeAgent("bob"),), {})]
    )
    fresh = [
        ExecutionSandbox(
            Host(args=(FakeAgent(name),), children=fresh_host.children).bridge(),
            limits=SandboxLimits(timeout_seconds=5.0),
            network="deny",
        ).run(program)
        for name in ("ann", "bob")
    ]

    assert [(r.value, r.error, r.forwarded_calls) for r in batched] == [
        (r.value, r.error, r.forwarded_calls) for r in fresh
    ]
    assert [outcome.value for outcome in batched[0].value] == [
        "ann.greet(1,)",
        "helper.ask('ann',)",
    ]
    assert batch_host.child("helper").calls == fresh_host.child("helper").calls
