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
``content``) are the set-up's: they reach the item's journal and budget through the sandbox. Then the ordinary
:meth:`ExecutionSandbox.run` runs the item.

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

import sys
from types import FrameType
from typing import Any

from recurgent._sandbox import ExecutionResult, ExecutionSandbox
from recurgent._sandbox._bridge import HostBridge
from recurgent._sandbox._compile import CompiledProgram
from recurgent._sandbox._guards import GENERATED_FILENAME
from recurgent._sandbox._limits import (
    Clock,
    DeadlineExceeded,
    MemoryMeter,
    SandboxLimits,
    monotonic_clock,
)
from recurgent._sandbox._namespace import open_types_and_class_hook

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


class BatchSandbox(ExecutionSandbox):
    """Runs one compiled program for many items, a fresh attempt each, on one set-up.

    Args:
        bridge: Role, method, memory (the snapshot every item reads) and forwarded operations;
            its arguments are replaced per item.
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
        # Every item's memory cap counts from the batch's start: one reading of the process's
        # resident memory per batch, not per item (ADR 0111). Stricter, never looser: what
        # earlier items left behind counts against a later item's cap too.
        self._memory_baseline = MemoryMeter() if limits.max_memory_bytes is not None else None

    def run_item(
        self, program: CompiledProgram, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> ExecutionResult:
        """Run ``program`` for one item as an attempt of its own; writes are never applied."""
        template = self._template
        self._begin(
            HostBridge(
                template.role,
                template.method_name,
                template.memory,
                args,
                kwargs,
                template.delegate,
                template.tool,
                template.remember,
                template.handle_for_agent,
                template.content,
            )
        )
        return self._end(self.run(program))

    def _end(self, result: ExecutionResult) -> ExecutionResult:
        """The item's attempt is over (its ticker expired): let go of what it made now.

        What the item made and nothing else holds is released here, while this sandbox still
        holds the item's expired ticker: a generator's ``finally`` that runs now stops at its
        first tick, as after any attempt. Its globals are left whole (a generator closes
        quietly through them, ADR 0060); the sandbox only stops pointing at them.
        """
        self._namespace = {"_ticker_": iter(())}
        result.memory = None
        return result

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
        self._start_attempt(bridge, dict(self._setup), self._memory_baseline)
        namespace = self._namespace
        open_types, make_class = open_types_and_class_hook()
        view = self._journal.view
        namespace.update(
            _tick_=self._ticker.tick,
            _OPEN_=open_types,
            __metaclass__=make_class,
            context=view,
            memory=view,
            args=[self._to_sandbox(arg) for arg in bridge.args],
            kwargs={key: self._to_sandbox(value) for key, value in bridge.kwargs.items()},
            result=None,
        )
