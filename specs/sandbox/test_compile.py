"""``compile_program``'s failures are typed: an unexpected exception of the sandbox's own compile
steps is ``InvalidCodeError`` naming the sandbox, never a provider error (ADR 0148).

Red teams R20 and R22 each found a valid program the policy could not compile (``lambda:
str(12)`` raised ``AttributeError`` from the transform); the call then failed as ``provider``
("Provider error in ...: 'Call' object has no attribute 'lineno'"), which blamed the model's
server for the sandbox's bug.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import recurgent._lifecycle._persistence as persistence
import recurgent._sandbox._compile as compile_module
from recurgent import Agent
from recurgent._sandbox import compile_program
from recurgent._sandbox._wrap import wrap_in_main
from recurgent.errors import InvalidCodeError
from recurgent.testing import ScriptedProvider

_BROKEN_MARKER = "broken_by_the_spec"


def _wrap_that_fails_on_the_marker(error: BaseException) -> object:
    def wrap(transformed: ast.Module, original: ast.Module) -> object:
        if _BROKEN_MARKER in ast.unparse(original):
            raise error
        return wrap_in_main(transformed, original)

    return wrap


@pytest.fixture(autouse=True)
def _fresh_cache() -> None:
    compile_program.cache_clear()


class TestAnInternalFailureIsInvalidCode:
    def test_an_unexpected_exception_is_invalid_code_naming_the_sandbox(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """An ``AttributeError`` out of a compile step: ``InvalidCodeError`` with its text, the
        original exception kept as the cause."""
        cause = AttributeError("'Call' object has no attribute 'lineno'")
        monkeypatch.setattr(compile_module, "wrap_in_main", _wrap_that_fails_on_the_marker(cause))

        with pytest.raises(InvalidCodeError) as raised:
            compile_program(f"{_BROKEN_MARKER} = 1\nresult = 2")

        assert (raised.value.message, raised.value.__cause__) == (
            "Generated code could not be compiled by the sandbox (an internal error: "
            "AttributeError: 'Call' object has no attribute 'lineno'); write the failing "
            "statement another way",
            cause,
        )

    def test_a_long_internal_message_is_cut_to_300_characters(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The internal text is bounded: it reaches the user and the model's retry prompt."""
        monkeypatch.setattr(
            compile_module, "wrap_in_main", _wrap_that_fails_on_the_marker(KeyError("k" * 5000))
        )

        with pytest.raises(InvalidCodeError) as raised:
            compile_program(f"{_BROKEN_MARKER} = 1\nresult = 2")

        assert raised.value.message == (
            "Generated code could not be compiled by the sandbox (an internal error: KeyError: '"
            + "k" * 299
            + "); write the failing statement another way"
        )

    def test_running_out_of_memory_while_compiling_is_a_program_too_large(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """``MemoryError`` in a compile step says the program is too large, not internal."""
        monkeypatch.setattr(
            compile_module, "wrap_in_main", _wrap_that_fails_on_the_marker(MemoryError())
        )

        with pytest.raises(InvalidCodeError) as raised:
            compile_program(f"{_BROKEN_MARKER} = 1\nresult = 2")

        assert raised.value.message == (
            "Generated code is too large to compile; write a shorter program"
        )

    def test_a_policy_refusal_keeps_its_own_message(self) -> None:
        """The policy's own ``InvalidCodeError`` passes through as it was (a control)."""
        with pytest.raises(InvalidCodeError) as raised:
            compile_program("result = ().__subclasses__")

        assert raised.value.message == (
            'Generated code breaks the sandbox policy: Line 1: "__subclasses__" is an invalid '
            'attribute name because it starts with "_".'
        )


class TestTheCallSaysInvalidCode:
    def test_a_call_whose_program_cannot_compile_fails_as_invalid_code(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Through an agent: each attempt's program hits the internal failure, the call ends
        ``invalid_code`` (before: ``provider``), and the retry prompt carries the message."""
        monkeypatch.setattr(
            compile_module,
            "wrap_in_main",
            _wrap_that_fails_on_the_marker(AttributeError("no attribute 'lineno'")),
        )
        program = f"{_BROKEN_MARKER} = 1\nresult = 2"
        provider = ScriptedProvider({("tester", "run"): [program, program]})
        agent = Agent(
            "tester", provider=provider, log=False, toolstore_root=None, max_generation_attempts=2
        )

        outcome = agent.run()

        assert (outcome.error_type, provider.calls) == ("invalid_code", 2)
        assert "could not be compiled by the sandbox (an internal error: AttributeError: " in (
            outcome.error_message or ""
        )
        assert "could not be compiled by the sandbox" in provider.requests[1].user_prompt

    def test_another_way_of_writing_it_answers_the_call(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The retry lane works as for any invalid code: the second program compiles and
        answers."""
        monkeypatch.setattr(
            compile_module,
            "wrap_in_main",
            _wrap_that_fails_on_the_marker(AttributeError("no attribute 'lineno'")),
        )
        provider = ScriptedProvider(
            {("tester", "run"): [f"{_BROKEN_MARKER} = 1\nresult = 2", "result = 2"]}
        )
        agent = Agent("tester", provider=provider, log=False, toolstore_root=None)

        outcome = agent.run()

        assert (outcome.ok, outcome.value, provider.calls) == (True, 2, 2)

    def test_a_stored_program_that_no_longer_compiles_is_regenerated(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """A stored program the sandbox fails to compile (after an upgrade, say) fails its
        persisted run as invalid code and the call generates anew (before: the
        ``AttributeError`` escaped the call untyped)."""
        provider = ScriptedProvider(
            {("tester", "run"): [f"{_BROKEN_MARKER} = 1\nresult = args[0] * 2", "result = 15"]}
        )
        first = Agent("tester", provider=provider, log=False, toolstore_root=tmp_path)
        assert first.run(2).value == 4
        # The stored program is compiled again, as in a new process.
        compile_program.cache_clear()
        persistence._prepared.cache_clear()
        monkeypatch.setattr(persistence, "_READY", {})
        monkeypatch.setattr(
            compile_module,
            "wrap_in_main",
            _wrap_that_fails_on_the_marker(AttributeError("no attribute 'lineno'")),
        )
        again = Agent("tester", provider=provider, log=False, toolstore_root=tmp_path)

        outcome = again.run(5)

        assert (outcome.ok, outcome.value, provider.calls) == (True, 15, 2)
