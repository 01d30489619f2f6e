"""An Outcome behaves like a Python value (ADR 0098): real bool flags, JSON, unwrap, provenance."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Unpack

import pytest

from recurgent import Agent, Outcome
from recurgent._option_types import AgentOptionsDict
from recurgent.errors import (
    ExecutionTimeoutError,
    OutcomeError,
    ProviderError,
    RecurgentError,
    error_for,
)
from recurgent.testing import ScriptedProvider, read_log


def _agent(replies: dict[object, object], **options: Unpack[AgentOptionsDict]) -> Agent:
    merged: AgentOptionsDict = {"provider": ScriptedProvider(replies), "log": False, **options}
    return Agent("calculator", **merged)


class TestFlags:
    """``out.ok``/``out.error`` of a dynamic call are the bools True and False themselves."""

    def test_identity_with_true_and_false(self) -> None:
        """``out.ok is True`` and ``out.error is False`` for an ok call; the reverse for errors."""
        ok = _agent({"add": "result = 2 + 3"}).add()
        failed = _agent({"div": "return Outcome.error('division_by_zero', 'no')"}).div()

        assert (ok.ok is True, ok.error is False) == (True, True)
        assert (failed.ok is False, failed.error is True) == (True, True)
        assert type(ok.ok) is bool

    def test_generated_code_still_calls_the_flags(self) -> None:
        """A program may write ``out.ok()`` or ``if out.ok:`` on a child's outcome (ADR 0098)."""
        agent = _agent(
            {
                ("calculator", "run"): "h = delegate('adder')\n"
                "out = h.add()\n"
                "return [out.ok(), bool(out.ok), out.error(), bool(out.error)]",
                ("adder", "add"): "result = 1",
            }
        )

        assert agent.run().value == [True, True, False, False]

    def test_generated_code_cannot_read_the_provenance(self) -> None:
        """A child's program text and call id stay with the host: ``out.code`` is refused."""
        agent = _agent(
            {
                ("calculator", "run"): "out = delegate('adder').add()\nreturn out.code",
                ("adder", "add"): "result = 1",
            },
            max_generation_attempts=1,
        )

        outcome = agent.run()

        assert (outcome.ok, outcome.error_type) == (False, "execution")
        assert "'Outcome' object has no attribute 'code'" in (outcome.error_message or "")


class TestJson:
    """An Outcome dumps to JSON through ``model_dump``/``to_dict``; not through ``json.dumps``."""

    def test_model_dump_of_a_call_is_json(self) -> None:
        """``json.dumps(out.model_dump())`` of a call's outcome holds the value and the call id."""
        outcome = _agent({"add": "result = {'sum': 5}"}).add()

        dumped = json.loads(json.dumps(outcome.model_dump()))

        assert (dumped["status"], dumped["value"], dumped["call_id"]) == (
            "ok",
            {"sum": 5},
            outcome.call_id,
        )
        assert dumped["code"] == "result = {'sum': 5}"

    def test_to_dict_renders_what_json_cannot_hold(self) -> None:
        """``to_dict()`` is ``model_dump(mode="json")``: a set becomes a list."""
        outcome = Outcome.ok({1, 2})

        assert json.dumps(outcome.to_dict()) == (
            '{"status": "ok", "value": [1, 2], "error_type": null, "error_message": null, '
            '"retriable": false, "tool_role": "unknown_tool", "method_name": "unknown_method", '
            '"metadata": {}, "code": null, "call_id": null}'
        )

    def test_json_dumps_of_the_outcome_itself_is_refused(self) -> None:
        """An Outcome is not a dict: ``json.dumps(out)`` raises TypeError as for any object."""
        with pytest.raises(TypeError, match="Outcome is not JSON serializable"):
            json.dumps(Outcome.ok(1))


class TestUnwrap:
    """``unwrap()`` gives the value, or raises the error as its errors.py class."""

    def test_ok_returns_the_value(self) -> None:
        """An ok outcome unwraps to its value."""
        assert _agent({"add": "result = 7"}).add().unwrap() == 7

    def test_runtime_type_raises_its_class(self) -> None:
        """A ``timeout`` outcome raises ExecutionTimeoutError with the same fields."""
        outcome = Outcome.error(
            "timeout", "too slow", retriable=True, metadata={"seconds": 3}, tool_role="t"
        )

        with pytest.raises(ExecutionTimeoutError) as raised:
            outcome.unwrap()

        error = raised.value
        assert (error.error_type, error.retriable, error.message, error.metadata) == (
            "timeout",
            True,
            "too slow",
            {"seconds": 3},
        )
        assert isinstance(error, TimeoutError)

    def test_domain_type_raises_an_outcome_error_carrying_it(self) -> None:
        """``division_by_zero`` from a program raises OutcomeError whose error_type is that."""
        outcome = _agent({"div": "return Outcome.error('division_by_zero', 'b is 0')"}).div()

        with pytest.raises(OutcomeError) as raised:
            outcome.unwrap()

        assert (raised.value.error_type, raised.value.retriable, str(raised.value)) == (
            "division_by_zero",
            False,
            "b is 0",
        )
        assert isinstance(raised.value, RecurgentError)
        assert OutcomeError.error_type == "execution"  # the class default is untouched

    def test_retriable_follows_the_outcome(self) -> None:
        """A provider outcome marked not retriable raises a ProviderError that says so."""
        error = error_for("provider", "key refused", retriable=False)

        assert (type(error), error.error_type, error.retriable) == (
            ProviderError,
            "provider",
            False,
        )
        assert ProviderError.retriable is True


class TestProvenance:
    """``code`` and ``call_id`` say which program and which call produced an outcome."""

    def test_code_and_call_id_of_a_call(self, log_path: Path) -> None:
        """The outcome carries the program that ran and the log line's call id."""
        agent = Agent(
            "calculator", provider=ScriptedProvider({"add": "result = 2 + 3"}), log=log_path
        )

        outcome = agent.add()

        (entry,) = read_log(log_path)
        assert (outcome.code, outcome.call_id) == ("result = 2 + 3", entry["call_id"])

    def test_no_program_no_code(self) -> None:
        """A call whose provider never wrote a program has ``code`` None and still a call id."""
        outcome = _agent({"add": RuntimeError("down")}, max_generation_attempts=1).add()

        assert (outcome.error_type, outcome.code) == ("provider", None)
        assert isinstance(outcome.call_id, str) and len(outcome.call_id) > 0

    def test_reused_program_is_the_code(self, tmp_path: Path) -> None:
        """A stored program answering the call is the outcome's ``code``, with a new call id."""
        provider = ScriptedProvider({"add": "result = args[0] + 1"})
        root = tmp_path / "store"
        first = Agent("calc", provider=provider, log=False, toolstore_root=root).add(1)
        second = Agent("calc", provider=provider, log=False, toolstore_root=root).add(2)

        assert (second.value, second.code, provider.calls) == (3, "result = args[0] + 1", 1)
        assert first.call_id != second.call_id

    def test_equality_ignores_provenance(self) -> None:
        """Two calls that answered the same value are equal outcomes."""
        agent = _agent({"add": "result = 5"})
        first, second = agent.add(), agent.add()

        assert first.call_id != second.call_id
        assert first == second
        assert Outcome.ok(5, tool_role="calculator", method_name="add") == first


class TestAwait:
    """``await outcome`` says where the awaitable call is (ADR 0096)."""

    def test_awaiting_an_outcome_names_the_async_view(self) -> None:
        """The TypeError points at ``agent.aio``, not CPython's bare message."""
        outcome = _agent({"add": "result = 1"}).add()

        async def main() -> object:
            return await outcome

        with pytest.raises(TypeError, match=r"await agent\.aio\.method"):
            asyncio.run(main())
