"""Generators the program defines close quietly, whoever closes them and when (ADR 0060)."""

from __future__ import annotations

import gc
import sys

import pytest

from recurgent._sandbox import SandboxLimits
from specs.sandbox.support import FakeClock, Host, error_of, execute, value_of

# Kept alive by a reference cycle, the generator is closed by a later garbage collection.
_LEAK = "x = g()\nnext(x)\nloop = [x]\nloop.append(loop)\nresult = 1"


def _unraisable_after_collect(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Collect garbage and return what reached ``sys.unraisablehook`` meanwhile."""
    seen: list[str] = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: seen.append(u.exc_type.__name__))
    gc.collect()
    monkeypatch.undo()
    return seen


class TestLeakedGenerators:
    """Cleanup of a generator the attempt leaked never reaches the host's stderr."""

    @pytest.mark.parametrize(
        "cleanup",
        [
            "raise ValueError('forged log line')",
            "yield 2",
            "while True:\n            pass",
            "print(1 / 0)",
        ],
    )
    def test_cleanup_after_the_attempt_is_quiet(
        self, cleanup: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A finally that raises, yields or loops forever leaves sys.unraisablehook unused."""
        source = f"def g():\n    try:\n        yield 1\n    finally:\n        {cleanup}\n{_LEAK}"
        result = execute(source)

        assert (result.error, result.value) == (None, 1)
        assert _unraisable_after_collect(monkeypatch) == []

    def test_a_context_manager_exit_that_raises_is_quiet(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """An __exit__ of the program's own class raising on close is quiet too."""
        source = (
            "class C:\n"
            "    def __enter__(self):\n        return self\n"
            "    def __exit__(self, *exc):\n        raise KeyError('late')\n"
            "def g():\n    with C():\n        yield 1\n"
            f"{_LEAK}"
        )
        result = execute(source)

        assert (result.error, result.value) == (None, 1)
        assert _unraisable_after_collect(monkeypatch) == []

    def test_late_cleanup_still_reaches_no_agent(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A forwarded call in the late cleanup is still refused (and now quiet)."""
        host = Host()
        child = host.child("c")
        source = (
            "h = delegate('c')\n"
            "def g():\n    try:\n        yield 1\n    finally:\n        h.late()\n"
            f"{_LEAK}"
        )
        result = execute(source, host=host)

        assert (result.error, result.value) == (None, 1)
        assert _unraisable_after_collect(monkeypatch) == []
        assert child.calls == []


class TestClosingInTheAttempt:
    """close() in generated code finishes cleanly; what the cleanup raised is dropped."""

    def test_close_drops_what_the_finally_raised(self) -> None:
        """close() returns None although the finally raised, and the program goes on."""
        source = """
            log = []
            def g():
                try:
                    yield 1
                finally:
                    log.append('cleanup')
                    raise ValueError('x')
            x = g()
            next(x)
            result = [x.close(), log]
        """
        assert value_of(source) == [None, ["cleanup"]]

    def test_a_generator_ignoring_generator_exit_is_ended(self) -> None:
        """Catching GeneratorExit and yielding again ends the generator, not RuntimeError."""
        source = """
            def g():
                while True:
                    try:
                        yield 1
                    except GeneratorExit:
                        pass
            x = g()
            next(x)
            x.close()
            result = list(x)
        """
        assert value_of(source) == []

    def test_a_while_test_that_yields_stops_once_closing(self) -> None:
        """A loop whose test yields ends instead of yielding after GeneratorExit was caught."""
        source = """
            def g():
                while (yield 'head'):
                    try:
                        yield 'body'
                    except GeneratorExit:
                        pass
                yield 'after'
            x = g()
            seen = [next(x), x.send(True)]
            x.close()
            result = seen + list(x)
        """
        assert value_of(source) == ["head", "body"]

    def test_closing_a_delegating_generator_closes_the_inner_one_quietly(self) -> None:
        """close() of `yield from inner()` runs both cleanups; the inner one's error is dropped."""
        source = """
            log = []
            def inner():
                try:
                    yield 1
                finally:
                    log.append('inner')
                    raise KeyError('x')
            def outer():
                try:
                    yield from inner()
                finally:
                    log.append('outer')
            x = outer()
            next(x)
            x.close()
            result = log
        """
        assert value_of(source) == ["inner", "outer"]


class TestGeneratorsStillBehave:
    """Outside closing, generators raise, return and receive as Python's do."""

    def test_an_error_while_running_reaches_the_consumer(self) -> None:
        """An exception raised while iterating propagates to the loop that consumes it."""
        source = """
            def g():
                yield 1
                raise ValueError('bad item')
            result = list(g())
        """
        assert error_of(source) == (
            "execution",
            "Execution error in tester.run: ValueError: bad item",
        )

    def test_send_throw_and_return_values(self) -> None:
        """send() delivers values, throw() raises inside, yield from gets the return value."""
        source = """
            def inner():
                got = yield 'ready'
                try:
                    yield got * 2
                except KeyError:
                    yield 'caught'
                return 'done'
            def outer():
                value = yield from inner()
                yield value
            x = outer()
            result = [next(x), x.send(21), x.throw(KeyError('k')), next(x)]
        """
        assert value_of(source) == ["ready", 42, "caught", "done"]

    def test_yields_inside_rewritten_statements(self) -> None:
        """`d[k] += yield`, a generator method and a global declaration work as in Python."""
        source = """
            total = 0
            class Box:
                def __init__(self):
                    self.items = [1, 2]
                def __iter__(self):
                    for item in self.items:
                        yield item * 2
            def counter():
                global total
                d = {'k': 1}
                d['k'] += yield 'ready'
                total = d['k']
                yield total
            x = counter()
            result = [next(x), x.send(10), total, list(Box())]
        """
        assert value_of(source) == ["ready", 11, 11, [2, 4]]

    def test_an_uncaught_throw_propagates(self) -> None:
        """throw() of an exception the generator does not handle raises it in the caller."""
        source = """
            def g():
                yield 1
            x = g()
            next(x)
            try:
                x.throw(KeyError('k'))
                result = 'swallowed'
            except KeyError:
                result = 'raised'
        """
        assert value_of(source) == "raised"

    def test_an_endless_generator_still_times_out(self) -> None:
        """Consuming an endless generator ends at the deadline, as a timeout."""
        source = """
            def g():
                while True:
                    yield 1
            result = sum(g())
        """
        result = execute(
            source, limits=SandboxLimits(timeout_seconds=1.0), clock=FakeClock(step=0.01)
        )

        assert result.error is not None and result.error.error_type == "timeout"
