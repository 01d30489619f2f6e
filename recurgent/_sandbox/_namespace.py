"""The attempt's namespace: the globals one program runs with, built fresh per attempt.

It holds the vetted builtins and importer, the run-time hooks the compile policy's code calls
(``_getattr_``, ``_write_``, ``_getiter_``, the tick, the size hooks, the fast-path type
tests), the call's data (``context``/``memory`` as the journal view, ``args``, ``kwargs``,
``result``), ``Outcome`` and the forwarders. :data:`VISIBLE_NAMES` lists what code sees
besides builtins and imports.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable
from typing import Any

from recurgent._sandbox._builtins import make_builtins
from recurgent._sandbox._class_bases import make_program_class
from recurgent._sandbox._forwarding import ForwardedCalls
from recurgent._sandbox._guards import MUTABLE_TYPES, OPEN_TYPES, AttributePolicy, SandboxType
from recurgent._sandbox._limits import DeadlineExceeded, OutputCollector
from recurgent._sandbox._modules import ModuleFacade, _Spec, make_importer
from recurgent._sandbox._network import make_network_modules
from recurgent._sandbox._sizes import size_hooks
from recurgent.outcome import Outcome

__all__ = ["GUARDED_OPEN", "VISIBLE_NAMES", "AttemptNamespace", "open_types_and_class_hook"]

_NUMERIC_TYPES = frozenset({int, float})
#: Open types whose attributes are always read through the guard (a batch uses it too).
GUARDED_OPEN = frozenset({ElementTree.Element, re.Pattern})
# Every attempt's ``_OPEN_`` starts as a fresh copy of this set.
_OPEN_AT_START = (OPEN_TYPES - GUARDED_OPEN) | {ModuleFacade}


def open_types_and_class_hook() -> tuple[set[type], Callable[..., type]]:
    """One attempt's ``_OPEN_`` set and its ``__metaclass__`` hook (a batch's items use these
    too, so the two can never drift apart: red team R5, K1 and K2).

    The inline fast path reads attributes natively for the types in ``_OPEN_``. Classes the
    code defines join them, and so do module facades: the guard would return the same
    getattr() for them (a facade's own __getattr__ applies its module's spec). XML elements
    stay on the guarded path: adding a child is checked for cycles (F19); so do
    standard-engine patterns, which match on the sandbox's engine (ADR 0090). Classes are made
    by ``make_program_class`` (ADR 0104), never by typing's own hooks.
    """
    open_types: set[type] = set(_OPEN_AT_START)

    def make_class(name: str, bases: tuple[type, ...], body: dict[str, Any], **kw: Any) -> type:
        cls = make_program_class(name, bases, body, **kw)
        open_types.add(cls)
        return cls

    return open_types, make_class


#: The names generated code sees besides builtins and imports (pinned by specs/sandbox).
VISIBLE_NAMES = (
    "context",
    "memory",
    "args",
    "kwargs",
    "result",
    "tool",
    "delegate",
    "remember",
    "Outcome",
    "content",
)


class AttemptNamespace(ForwardedCalls):
    """The sandbox's side that fills the attempt's namespace.

    :class:`~recurgent._sandbox.ExecutionSandbox` derives from this class and sets the
    attributes declared here (and in :class:`ForwardedCalls`) in its own ``__init__``.
    """

    _namespace: dict[str, Any]
    _network: Any
    _output: OutputCollector

    def _cheap_tick(self) -> bool:
        return next(self._namespace["_ticker_"], False) or self._ticker.tick()

    def _build_namespace(self) -> None:
        ns = self._namespace
        network = make_network_modules(
            policy=self._network,
            limits=self._limits,
            # Read through the sandbox: a batch sandbox gives each item its own ticker (ADR 0111).
            remaining=lambda: self._ticker.remaining(),
            spend=self._spend,
        )
        policy = AttributePolicy(
            handle_attribute=self._handle_attribute,
            handle_writer=self._handle_writer,
            on_violation=self._violation,
            tick=self._cheap_tick,
        )
        importer = make_importer(
            tick=self._cheap_tick,
            extra_modules={
                "modules": {name: (module, _Spec()) for name, module in network.items()},
                "time_overrides": {"sleep": self._sleep},
                "getattr": policy.getattr,
            },
        )
        ns["__builtins__"] = make_builtins(policy=policy, importer=importer, tick=self._cheap_tick)
        ns.update(size_hooks())
        cheap_tick = self._cheap_tick
        open_types, make_class = open_types_and_class_hook()

        ns.update(
            _getattr_=policy.getattr,
            _write_=policy.write,
            _getiter_=lambda obj: cheap_tick() and obj,
            _print_=lambda _getattr: self._output,
            _tick_=self._ticker.tick,
            _next_=next,
            _type_=type,
            _OPEN_=open_types,
            _MUTABLE_=MUTABLE_TYPES,
            # Tests of the policy's other fast paths (_fastpaths): generated code cannot rebind
            # these, unlike int, float or type.
            _INT_=int,
            _FLOAT_=float,
            _NUMERIC_=_NUMERIC_TYPES,
            _SANDBOX_TYPE_=SandboxType,
            __metaclass__=make_class,
            # A program runs as a script would: its `if __name__ == "__main__":` block runs
            # (ADR 0106).
            __name__="__main__",
        )
        bridge = self._bridge
        view = self._journal.view
        ns.update(
            context=view,
            memory=view,
            args=[self._to_sandbox(arg) for arg in bridge.args],
            kwargs={key: self._to_sandbox(value) for key, value in bridge.kwargs.items()},
            result=None,
            Outcome=Outcome,
            **self._forwarders(),
        )

    def _sleep(self, seconds: float) -> None:
        import time

        remaining = self._ticker.remaining()
        if seconds >= remaining:
            time.sleep(max(0.0, remaining))
            self._ticker.expire()
            raise DeadlineExceeded("time.sleep() ran past the attempt's deadline")
        time.sleep(max(0.0, seconds))
