"""``BatchSandbox``: many attempts of one program, each its own, on one set-up (ADR 0111).

Building an attempt's namespace (the vetted builtins, the importer, the attribute policy, the
size hooks, the network modules) is most of what a small program's attempt costs. Those parts
hold nothing of one attempt: they reach the attempt only through the sandbox object, at call
time (its ticker, journal, output, counts). A batch sandbox builds them once and, for each item,
makes everything that does belong to one attempt anew: the globals dict (so nothing a program
defines or rebinds reaches the next item), the journal over the snapshot of memory (so no
change one item made to what it read is seen by the next), the deadline ticker, the output,
the forwarded-call count and budget, the violations, the classes the program made, and the
call's ``args``/``kwargs``/``result``. The forwarders (``delegate``, ``tool``, ``remember``,
``content``) are the set-up's: they reach the item's journal and budget through the sandbox.

What is the same for every item is armed once per batch, around all its items (ADR 0124): the
watchdog's visit (it finds the current item's ticker through the sandbox), the cancellation
hook (it stops the current item and every later one), the attribution of the Outcomes the
program builds, the enclosing deadline (the current item's), the flag that generated code is
running, and the host's decimal context (saved once, restored once; each item starts on a fresh
capped one). Each item's attempt still has its own ticker, interrupter, journal activation and
decimal context, and its failure is translated as a single attempt's
(:meth:`ExecutionSandbox._failure`).

What items still share is what every attempt of the process shares anyway (modules, the
catalog's stand-ins), plus the per-attempt module instances the importer made for the first
item that imported them (a ``random.Random``, a module facade): their state is a program's
to change only through their served API (a seed, a draw), never by assignment: the write guard
refuses attributes on builtins, sealed callables and module facades alike.

Code an item leaves behind must not act for a later one. When an item ends, the sandbox lets go
of its globals, so what it made is released at once, under its own expired ticker. What survives in a
reference cycle is finalized whenever the collector runs, possibly during a later item: the set-up
reaches the sandbox's current state, so the ways out that act or wait (a forwarded call, the
network, ``time.sleep``, a host call) check that the program frame calling them belongs to the
current item, and refuse an earlier item's code as an expired attempt's. Such code can still
compute until its own first tick (its loops tick on its own, expired, ticker).
"""

from __future__ import annotations

import decimal
import sys
from collections.abc import Iterable, Mapping
from types import FrameType
from typing import Any

from recurgent._cancellation import CallCancelled, on_cancel
from recurgent._journal import Writes
from recurgent._journal._view import ACTIVE
from recurgent._sandbox import ExecutionResult, ExecutionSandbox
from recurgent._sandbox._boundary import SCALAR_TYPES
from recurgent._sandbox._bridge import HostBridge
from recurgent._sandbox._compile import CompiledProgram
from recurgent._sandbox._forwarding import RUNNING
from recurgent._sandbox._guards import GENERATED_FILENAME
from recurgent._sandbox._idioms import fresh_sandbox_context
from recurgent._sandbox._limits import (
    Clock,
    DeadlineExceeded,
    SandboxLimits,
    attempt_deadline,
    enclosing_memory,
    monotonic_clock,
)
from recurgent._sandbox._memory import MemoryMeter
from recurgent._sandbox._namespace import open_types_and_class_hook
from recurgent._sandbox._policy import MAIN_FUNCTION
from recurgent._sandbox._watchdog import WATCHDOG
from recurgent.outcome import outcome_context

__all__ = ["PER_ATTEMPT_NAMES", "BatchSandbox"]

#: The globals made anew for every item (everything else is the batch's set-up).
PER_ATTEMPT_NAMES = frozenset(
    {
        "_ticker_",
        "_tick_",
        "_OPEN_",
        "__metaclass__",
        "context",
        "memory",
        "args",
        "kwargs",
        "result",
    }
)


# sys.getrefcount of an ended item's globals when only the sandbox holds them (its attribute,
# _let_go's argument and getrefcount's own), and of its view when only the item holds it (the
# journal, the globals' ``context`` and ``memory``, _let_go's argument and getrefcount's own).
_GLOBALS_HELD_BY_THE_SANDBOX = 3
_VIEW_HELD_BY_ITS_ITEM = 5


class _CurrentItem:
    """What the process's watchdog visits for a running batch: the current item's ticker,
    read at each visit (an ended item's ticker is expired and its interrupter disarmed, so a
    late visit to it stops nothing)."""

    __slots__ = ("_sandbox",)

    def __init__(self, sandbox: BatchSandbox) -> None:
        self._sandbox = sandbox

    def watch(self) -> None:
        self._sandbox._ticker.watch()


class BatchSandbox(ExecutionSandbox):
    """Runs one compiled program for many items, a fresh attempt each, on one set-up.

    Args:
        bridge: Role, method, memory (the snapshot every item reads) and forwarded operations;
            its arguments are ignored (each item brings its own).
        limits: Each item's limits (its own deadline from when it starts).
        network: The agent's network policy.
        clock: Monotonic clock for the deadlines.
    """

    def __init__(
        self,
        bridge: HostBridge,
        *,
        limits: SandboxLimits,
        network: Any = "allow",
        clock: Clock = monotonic_clock,
    ) -> None:
        super().__init__(bridge, limits=limits, network=network, clock=clock, commit_memory=False)
        self._setup = {
            name: value for name, value in self._namespace.items() if name not in PER_ATTEMPT_NAMES
        }
        self._template = bridge
        self._where = f"{bridge.role}.{bridge.method_name}"
        # Every item's memory cap counts from the batch's start: one reading of the process's
        # resident memory per batch, not per item (ADR 0111). Stricter, never looser: what
        # earlier items left behind counts against a later item's cap too.
        self._memory_baseline = MemoryMeter() if limits.max_memory_bytes is not None else None
        # What an item's ticker holds once the item is over (the text a single attempt's
        # expired ticker has); never raised itself: a tick raises a fresh copy.
        self._ended = DeadlineExceeded(
            f"generated code exceeded execution_timeout_seconds={limits.timeout_seconds:g}"
        )
        #: The stop of a cancelled awaited map: every item from then on starts stopped.
        self._cancelled: CallCancelled | None = None
        self._views: tuple[Any, ...] = ()
        # The memory budget of the attempt the batch runs inside, if any (ADR 0141).
        self._outer_memory: tuple[int, int] | None = None
        self._host_decimal = decimal.getcontext()

    def run_item(
        self, program: CompiledProgram, args: tuple[Any, ...], kwargs: Mapping[str, Any]
    ) -> ExecutionResult:
        """Run ``program`` for one item as an attempt of its own; writes are never applied."""
        return self.run_items(program, ((args, kwargs),))[0]

    def run_items(
        self,
        program: CompiledProgram,
        calls: Iterable[tuple[tuple[Any, ...], Mapping[str, Any]]],
    ) -> list[ExecutionResult]:
        """Run ``program`` for each ``(args, kwargs)``, each an attempt of its own, in order;
        writes are never applied. What every item shares is armed once, around them all."""
        template = self._template
        watched = _CurrentItem(self)
        WATCHDOG.register(watched)
        # A cancelled awaited map stops the running item at its next tick, and every later
        # one before it starts (ADR 0096).
        cancelling = on_cancel(self._cancel)
        running = RUNNING.set(True)
        saved = self._host_decimal = decimal.getcontext()
        self._views = ACTIVE.get()
        self._outer_memory = enclosing_memory()
        try:
            with (
                outcome_context(template.role, template.method_name),
                attempt_deadline(self._remaining, self._memory_budget),
            ):
                return [self._attempt(program, args, kwargs) for args, kwargs in calls]
        finally:
            decimal.setcontext(saved)
            RUNNING.reset(running)
            cancelling.close()
            WATCHDOG.unregister(watched)

    def _cancel(self) -> None:
        # The flag first, then the current ticker: an item started meanwhile sees the flag.
        stop = CallCancelled(self._where)
        self._cancelled = stop
        self._ticker.expire(stop)

    def _remaining(self) -> float:
        return self._ticker.remaining()

    def _memory_budget(self) -> tuple[int, int] | None:
        # The current item's, so a child it delegates to grows within it; while an item starts
        # (its meter not made yet), the budget of the attempt the batch runs inside (ADR 0141).
        own = self._ticker.memory_budget()
        return self._outer_memory if own is None else own

    def _attempt(
        self, program: CompiledProgram, args: tuple[Any, ...], kwargs: Mapping[str, Any]
    ) -> ExecutionResult:
        """One item's attempt: as :meth:`ExecutionSandbox.run`, inside the batch's arming."""
        self._begin_item(args, kwargs)
        ticker = self._ticker
        if self._cancelled is not None:
            ticker.expire(self._cancelled)
        result = ExecutionResult()
        main: Any = None
        ticker.start()
        try:
            exec(program.code, self._namespace)
            main = self._namespace.pop(MAIN_FUNCTION)
            active = ACTIVE.set((*self._views, (id(self._template.memory), self._journal.view)))
            try:
                decimal.setcontext(fresh_sandbox_context())
                # Stoppable in any Python frame at the deadline, library code's too (ADR 0089).
                value = ticker.run(main)
                if ticker.expired:
                    # A stop the program swallowed still ends the attempt (as in run()).
                    ticker.tick()
            finally:
                # The host's decimal context while the host rebuilds the item's answer.
                decimal.setcontext(self._host_decimal)
                ACTIVE.reset(active)
            result.value = value if type(value) in SCALAR_TYPES else self._result_value(value)
            value = None
            # Most items only read: their (empty) writes need no preparing.
            result.writes = Writes() if self._journal.untouched() else self._memory_writes()
        except (KeyboardInterrupt, CallCancelled):
            raise
        except BaseException as error:  # noqa: BLE001 - generated code may raise anything
            result.error = self._failure(error, self._where)
        finally:
            # As after any attempt: what the item leaked stops at its first tick from now on.
            ticker.interrupter.leave()
            ticker.expire(self._ended)
            main = None
        result.stdout = self._output.text()
        result.violations = list(self._violations)
        result.forwarded_calls = self._forwarded
        return self._end(result)

    def _end(self, result: ExecutionResult) -> ExecutionResult:
        """The item's attempt is over (its ticker expired): let go of what it made now.

        What the item made and nothing else holds is released here, while this sandbox still
        holds the item's expired ticker: a generator's ``finally`` that runs now stops at its
        first tick, as after any attempt. Its globals are left whole (a generator closes
        quietly through them, ADR 0060); the sandbox only stops pointing at them.
        """
        self._ticker.forget_globals()
        self._let_go(self._namespace, self._journal.view)
        self._namespace = {"_ticker_": iter(())}
        result.memory = None
        return result

    def _let_go(self, namespace: dict[str, Any], view: Any) -> None:
        """Cut the item's last cycle (its view and journal) when nothing but the sandbox holds
        its globals and nothing but they and the journal hold its view (ADR 0124).

        Then no code of the item survives (a function, generator, class or traceback of it
        would hold its globals), nothing can reach the view, and the item's globals, journal
        and view are freed at once by reference counting instead of piling up for the cycle
        collector. Anything more holding either (code the item left behind) keeps both whole.
        """
        if (
            sys.getrefcount(namespace) == _GLOBALS_HELD_BY_THE_SANDBOX
            and sys.getrefcount(view) == _VIEW_HELD_BY_ITS_ITEM
        ):
            self._journal.release()

    def _from_an_earlier_item(self) -> bool:
        """True when the nearest program frame calling the host is not the current item's: code
        an earlier item left behind (a generator in a reference cycle, finalized later)."""
        frame: FrameType | None = sys._getframe(2)
        while frame is not None:
            if frame.f_code.co_filename == GENERATED_FILENAME:
                return frame.f_globals is not self._namespace
            frame = frame.f_back
        return False

    def _refuse_late_caller(self, what: str) -> None:
        if self._from_an_earlier_item():
            raise DeadlineExceeded(f"{what}: an earlier item's code ran after its attempt ended")

    # The ways out of an attempt that reach the host or take time: the set-up reaches them
    # through this sandbox, so code an earlier item left behind would otherwise act as the
    # current item (spend its budget, call its agents, sleep through its deadline).
    def _spend(self, what: str) -> None:
        self._refuse_late_caller(what)
        super()._spend(what)

    def _sleep(self, seconds: float) -> None:
        self._refuse_late_caller("time.sleep()")
        super()._sleep(seconds)

    def _after_the_attempt(self) -> None:
        self._refuse_late_caller("a host call")
        super()._after_the_attempt()

    def _begin(self, bridge: HostBridge) -> None:
        """A fresh attempt for ``bridge``'s arguments (what :meth:`run_items` makes per item)."""
        self._begin_item(bridge.args, bridge.kwargs)

    def _begin_item(self, args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> None:
        passed = set(map(id, args))
        if kwargs:
            passed.update(map(id, kwargs.values()))
        namespace = dict(self._setup)
        self._start_attempt(self._template, namespace, self._memory_baseline, passed)
        open_types, make_class = open_types_and_class_hook()
        view = self._journal.view
        to_sandbox = self._to_sandbox
        namespace.update(
            _tick_=self._ticker.tick,
            _OPEN_=open_types,
            __metaclass__=make_class,
            context=view,
            memory=view,
            args=[arg if type(arg) in SCALAR_TYPES else to_sandbox(arg) for arg in args],
            kwargs={key: to_sandbox(value) for key, value in kwargs.items()} if kwargs else {},
            result=None,
        )
