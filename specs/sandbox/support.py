"""Helpers shared by the sandbox specs: a fake clock, a host bridge with fake agents, a runner."""

from __future__ import annotations

import contextlib
import re
import textwrap
import threading
import tracemalloc
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest

from recurgent import Agent
from recurgent._sandbox import (
    ExecutionResult,
    ExecutionSandbox,
    HandleOps,
    HostBridge,
    SandboxLimits,
    compile_program,
)
from recurgent._sandbox._memory import MemoryMeter
from recurgent.outcome import Outcome
from recurgent.testing import ScriptedProvider

SECRET_KEY = "sk-live-secret-123456"
"""An API key the fake child agents carry; generated code must never see it."""


class FakeClock:
    """A monotonic clock that advances by ``step`` seconds every time it is read."""

    def __init__(self, step: float = 0.05) -> None:
        self.now = 1000.0
        self.step = step
        self.reads = 0

    def __call__(self) -> float:
        self.reads += 1
        self.now += self.step
        return self.now


@dataclass
class FakeProvider:
    """Stands in for a provider client: holds an API key generated code must not reach."""

    api_key: str = SECRET_KEY


@dataclass
class FakeAgent:
    """A child agent for direct sandbox specs: memory, a provider, and a scripted call."""

    role: str
    memory: dict[str, Any] = field(default_factory=dict)
    provider: FakeProvider = field(default_factory=FakeProvider)
    calls: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = field(default_factory=list)
    reply: Callable[[str, tuple[Any, ...], dict[str, Any]], Outcome] | None = None

    def ops(self) -> HandleOps:
        """The handle operations the host lends generated code for this agent."""

        def call(method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Outcome:
            self.calls.append((method, args, kwargs))
            if self.reply is not None:
                return self.reply(method, args, kwargs)
            return Outcome.ok(f"{self.role}.{method}{args}", tool_role=self.role)

        def read(name: str) -> tuple[bool, Any]:
            return (name in self.memory, self.memory.get(name))

        return HandleOps(
            role=self.role,
            call=call,
            set=self.memory.__setitem__,
            read=read,
            remember=self.memory.update,
            agent=lambda: self,
        )


@dataclass
class Host:
    """The host side of a sandbox: memory, fake child agents and a record of forwarded calls."""

    memory: dict[str, Any] = field(default_factory=dict)
    args: tuple[Any, ...] = ()
    kwargs: dict[str, Any] = field(default_factory=dict)
    children: dict[str, FakeAgent] = field(default_factory=dict)
    delegations: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    delegate_errors: dict[str, BaseException] = field(default_factory=dict)

    def child(self, role: str) -> FakeAgent:
        """The fake agent of a role, created on first use."""
        return self.children.setdefault(role, FakeAgent(role))

    def bridge(self) -> HostBridge:
        """A HostBridge whose forwarded operations act on this host."""

        def delegate(role: str, **options: Any) -> HandleOps:
            self.delegations.append((role, options))
            if role in self.delegate_errors:
                raise self.delegate_errors[role]
            return self.child(role).ops()

        def tool(name: str, **options: Any) -> HandleOps:
            if name not in self.children:
                raise LookupError(f"unknown tool {name!r}")
            return self.children[name].ops()

        def handle_for_agent(obj: object) -> HandleOps | None:
            return obj.ops() if isinstance(obj, FakeAgent) else None

        return HostBridge(
            role="tester",
            method_name="run",
            memory=self.memory,
            args=self.args,
            kwargs=self.kwargs,
            delegate=delegate,
            tool=tool,
            remember=self.memory.update,
            handle_for_agent=handle_for_agent,
        )


def execute(
    source: str,
    *,
    host: Host | None = None,
    limits: SandboxLimits | None = None,
    clock: Callable[[], float] | None = None,
    network: Any = "allow",
) -> ExecutionResult:
    """Compile ``source`` (dedented) and run it once in a fresh sandbox.

    Raises:
        InvalidCodeError: the policy refuses the code at compile time.
    """
    program = compile_program(textwrap.dedent(source))
    options: dict[str, Any] = {"network": network}
    if clock is not None:
        options["clock"] = clock
    sandbox = ExecutionSandbox(
        (host or Host()).bridge(), limits=limits or SandboxLimits(timeout_seconds=5.0), **options
    )
    return sandbox.run(program)


def value_of(source: str, **options: Any) -> Any:
    """The value of a program that must succeed."""
    result = execute(source, **options)
    assert result.error is None, f"{type(result.error).__name__}: {result.error}"
    assert result.violations == []
    return result.value


def error_of(source: str, **options: Any) -> tuple[str, str]:
    """``(error_type, message)`` of a program that must fail."""
    result = execute(source, **options)
    assert result.error is not None, f"expected a failure, got value {result.value!r}"
    return result.error.error_type, str(result.error)


# A generator whose cleanup runs ``{late}``, started and kept alive in a reference cycle, so a
# later garbage collection finalizes it after the attempt ended (red-team findings 9, F12, G1,
# G2 and H1 share this shape).
_LEAK = (
    "def g():\n"
    "    try:\n"
    "        yield 1\n"
    "    finally:\n"
    "        {late}\n"
    "x = g()\n"
    "next(x)\n"
    "loop = [x]\n"
    "loop.append(loop)\n"
)


def reprs_without_addresses(source: str) -> list[str]:
    """The texts ``source``'s result lists, each `` at 0x...`` address taken out."""
    return [re.sub(r" at 0x[0-9a-f]+", "", text) for text in value_of(source)]


def names_as_a_module(source: str) -> Any:
    """``names`` after running ``source`` as a module in plain Python: what a program's
    definitions should be named (ADR 0145)."""
    namespace: dict[str, Any] = {"__name__": "__main__"}
    exec(compile(source, "<module>", "exec"), namespace)  # the spec's own text
    return namespace["names"]


def result_in_python(source: str) -> Any:
    """``result`` after running ``source`` (the spec's own text) in plain Python: what the same
    program should answer in the sandbox."""
    namespace: dict[str, Any] = {}
    exec(compile(source, "<plain>", "exec"), namespace)
    return namespace["result"]


def nested_lists(levels: int) -> list[Any]:
    """A list holding a list, ``levels`` deep (the innermost empty)."""
    top: list[Any] = []
    inner = top
    for _ in range(levels):
        below: list[Any] = []
        inner.append(below)
        inner = below
    return top


def leaking(late: str, rest: str) -> str:
    """A program that leaks a generator whose late cleanup runs ``late``, then runs ``rest``."""
    return _LEAK.format(late=late) + rest


# The memory-cap specs (red teams R18, R20): a cap of 64 MiB, what a program stopped by it
# answers, and 48 MB held then enough ticks that the attempt reads its memory after growing.
CAP_64_MIB = 64 * 2**20
STOPPED_AT_64_MIB = (
    "Resource limit in tester.run: generated code grew the process by more than 64 MiB"
)
GROW_48_MB = "keep = [0] * 6_000_000\nfor i in range(20_000):\n    pass\n"


def traced_resident(meter: MemoryMeter) -> int:
    """A meter's reading as the bytes Python has allocated (while ``tracemalloc`` traces)."""
    return 0 if meter._fd is None else tracemalloc.get_traced_memory()[0]


@contextlib.contextmanager
def traced_memory(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Memory meters read :func:`traced_resident` for the resident size: a process that has
    run other specs keeps freed blocks resident and serves a program's lists from them, so its
    resident size would not show their growth."""
    tracemalloc.start()
    monkeypatch.setattr(MemoryMeter, "_resident", traced_resident)
    try:
        yield
    finally:
        tracemalloc.stop()


def child_that_grows(host: Host, limits: SandboxLimits) -> list[str]:
    """Make ``helper.work()`` of ``host`` a nested attempt on the caller's thread (as a
    delegated child's is) that holds 48 MB more; returns the list its results are written to
    (``grown``, or the error that stopped it)."""
    seen: list[str] = []

    def reply(method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Outcome:
        result = execute(GROW_48_MB + "result = 'grown'", limits=limits)
        seen.append("grown" if result.error is None else str(result.error))
        return Outcome.ok(seen[-1], tool_role="helper")

    host.child("helper").reply = reply
    return seen


def recorded_wait_timeouts(
    monkeypatch: pytest.MonkeyPatch, condition: threading.Condition
) -> list[float | None]:
    """The timeout of every ``condition.wait_for`` from now on (the watchdog's hand-off
    waits), in order; each wait still happens."""
    timeouts: list[float | None] = []
    real_wait_for = condition.wait_for

    def recording(predicate: Any, timeout: float | None = None) -> bool:
        timeouts.append(timeout)
        return bool(real_wait_for(predicate, timeout))

    monkeypatch.setattr(condition, "wait_for", recording)
    return timeouts


def probe_agent(programs: dict[str, str], *, timeout_seconds: float = 5.0) -> Agent:
    """An in-process agent ``probe`` answering each method with its scripted program, with no
    log and no store (the red-team specs' agent)."""
    return Agent(
        "probe",
        provider=ScriptedProvider(programs),
        log=False,
        toolstore_root=None,
        isolation="in_process",
        execution_timeout_seconds=timeout_seconds,
    )


def longest_list_path(value: Any) -> int:
    """The longest path of lists in ``value``, a tree (iterative: it may be deeper than the
    stack)."""
    deepest, stack = 0, [(value, 0)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, list):
            deepest = max(deepest, level + 1)
            stack.extend((part, level + 1) for part in node)
    return deepest
