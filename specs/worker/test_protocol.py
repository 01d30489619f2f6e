"""The worker protocol: strict message models, plain-data values and the two envelopes."""

from __future__ import annotations

from typing import Any

import pytest

from recurgent._worker._protocol import (
    ForwardRequest,
    RunResult,
    Unencodable,
    WireError,
    dump_line,
    error_from_wire,
    error_to_wire,
    from_wire,
    parse_line,
    to_wire,
)
from recurgent.errors import GuardrailViolationError, ResourceLimitError
from recurgent.outcome import Outcome


def _no_agents(_: object) -> None:
    return None


def test_a_message_round_trips_as_one_json_line() -> None:
    """A forward request is one line with ipc_version 1 and parses back equal."""
    message = ForwardRequest(call_id="c1", forward_id=3, op="tool", name="search", kwargs={"q": 1})
    line = dump_line(message)
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert b'"ipc_version":1' in line
    assert parse_line(line) == message


def test_unknown_fields_versions_and_kinds_are_refused() -> None:
    """Models forbid extra keys; another ipc_version or kind is not a message."""
    with pytest.raises(ValueError, match="extra"):
        parse_line(b'{"kind":"result","call_id":"c","status":"ok","pickle":"x"}')
    with pytest.raises(ValueError, match="ipc_version"):
        parse_line(b'{"kind":"result","ipc_version":2,"call_id":"c","status":"ok"}')
    with pytest.raises(ValueError):
        parse_line(b'{"kind":"exec","call_id":"c"}')
    with pytest.raises(ValueError):
        parse_line(b"not json")


def test_text_with_a_lone_surrogate_round_trips() -> None:
    """``json.dumps`` writes a lone surrogate as its escape, which pydantic's parser refuses:
    the line is read by the standard library's instead, the same message back (red team R25,
    ADR 0152); a line that is not JSON at all is still refused."""
    message = ForwardRequest(
        call_id="c1", forward_id=1, op="tool", name="caf\udce9", kwargs={"q": "\ud800x"}
    )
    line = dump_line(message)
    assert b"\\udce9" in line
    assert parse_line(line) == message
    with pytest.raises(ValueError):
        parse_line(b'{"kind":"forward", "name": "\\ud800')


def test_json_values_cross_unchanged() -> None:
    """JSON types cross as they are (other plain values in envelopes: test_codec.py)."""
    value = {"a": [1, 2.5, "x", None, True], "b": {"c": []}}
    assert to_wire(value, "v", _no_agents) == value


def _cyclic() -> list[Any]:
    items: list[Any] = []
    items.append(items)
    return items


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (object(), "v holds a object"),
        (len, "v holds a builtin_function_or_method"),
        (ValueError, "v holds a type"),
        (iter([1]), "v holds a list_iterator"),
        (_cyclic(), "nested more than 64 levels deep"),
    ],
)
def test_non_plain_values_are_refused(value: Any, problem: str) -> None:
    """Objects, functions, classes, iterators and cyclic containers do not cross."""
    with pytest.raises(Unencodable, match=problem):
        to_wire(value, "v", _no_agents)


def test_outcomes_and_agents_cross_in_envelopes() -> None:
    """An Outcome and an agent reference decode back to an Outcome and the mapped agent."""
    agent = object()
    outcome = Outcome.ok({"who": agent}, tool_role="t", method_name="m")
    wire = to_wire([outcome], "v", lambda item: (7, "helper") if item is agent else None)
    assert wire[0]["__recurgent_outcome__"]["value"] == {
        "who": {"__recurgent_agent__": {"id": 7, "role": "helper"}}
    }
    seen: list[tuple[int, str]] = []

    def agent_for(number: int, role: str) -> object:
        seen.append((number, role))
        return agent

    decoded = from_wire(wire, agent_for)
    assert decoded[0].is_ok and decoded[0].value["who"] is agent
    assert decoded[0].tool_role == "t"
    assert seen == [(7, "helper")]


def test_errors_keep_their_taxonomy_across_the_pipe() -> None:
    """error_type, root fields and guardrail subtype survive a round trip."""
    error = ResourceLimitError("too big", root_class="MemoryError", root_message="", line=3)
    back = error_from_wire(error_to_wire(error))
    assert isinstance(back, ResourceLimitError)
    assert (type(back), back.message, back.root_class, back.line) == (
        ResourceLimitError,
        "too big",
        "MemoryError",
        3,
    )
    guard = error_from_wire(
        error_to_wire(GuardrailViolationError("no", subtype="s", correction="c"))
    )
    assert isinstance(guard, GuardrailViolationError) and (guard.subtype, guard.correction) == (
        "s",
        "c",
    )
    unknown = error_from_wire(WireError(error_type="martian", message="?"))
    assert unknown.error_type == "execution"


def test_a_result_defaults_to_no_writes() -> None:
    """A bare ok result carries no memory writes and no stdout."""
    result = RunResult(call_id="c", status="ok")
    assert (result.memory_set, result.memory_deleted, result.stdout) == ({}, [], "")
