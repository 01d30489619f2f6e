"""Red-team findings against a worker's answer: the parent reads attacker-controlled data.

A worker runs generated code; a program that escaped the policy inside it controls every byte the
worker sends back. These specs play that worker with crafted messages (a stand-in supervisor
answers every run) and pin what the parent does with them (red-team R1, ADRs 0062 and 0065).
"""

from __future__ import annotations

import io
from typing import Any, cast

import pytest

from recurgent._execution import ExecutionInputs
from recurgent._journal import apply_plain
from recurgent._sandbox import SandboxLimits
from recurgent._worker._executor import ProcessExecutor, WorkerExecutionResult
from recurgent._worker._protocol import (
    AGENT_KEY,
    OUTCOME_KEY,
    ForwardRequest,
    MemoryPatch,
    RunResult,
)
from recurgent._worker._supervisor import WorkerSupervisor
from recurgent.outcome import Outcome
from recurgent.program import Program
from specs.sandbox.support import Host
from specs.worker.support import ReplyingSupervisor


def _run(host: Host, **answer: Any) -> WorkerExecutionResult:
    """One run whose worker answers ``answer``, with the lifecycle's settings (no commit)."""
    fields: dict[str, Any] = {"call_id": "x", "status": "ok"}
    fields.update(answer)
    executor = ProcessExecutor(cast(WorkerSupervisor, ReplyingSupervisor(RunResult(**fields))))
    return executor.run(
        Program(code="return 0"),
        ExecutionInputs(memory=dict(host.memory), commit_memory=False),
        SandboxLimits(timeout_seconds=5.0),
        host.bridge(),
    )


def _patch(path: list[Any], kind: str, **parts: Any) -> dict[str, Any]:
    return {
        "path": path,
        "kind": kind,
        "set": parts.get("set", []),
        "delete": parts.get("delete", []),
        "items": parts.get("items", []),
    }


class TestPlainWritesFromAHostileSender:
    """Finding 13 (fixed): ``apply_plain`` followed any path and applied any patch kind.

    Payloads: ``{'path': ['log'], 'kind': 'state'}`` closed a host file memory held;
    ``{'kind': 'attrs', 'set': [...]}`` set attributes on any host object a path reached
    (``node[step]`` ran the host object's ``__getitem__``); a valid ``extend`` followed by a
    ``dict`` patch on a list appended, then raised ``TypeError``: memory half-written. Plain
    writes are now checked first, and only ``dict``/``extend``/``replace`` patches of exact
    dicts and lists reached through dicts, lists and tuples apply.
    """

    @pytest.mark.parametrize(
        ("patch", "why"),
        [
            (_patch(["log"], "state"), "a state patch would close the host's stream"),
            (_patch(["log"], "attrs", set=[["name", "x"]]), "attributes of a host object"),
            (_patch(["log"], "extend", items=["x"]), "a host object's own method"),
            (_patch(["rows"], "set", items=[1]), "a kind a worker never sends"),
            (_patch(["rows"], "dict", delete=["x"]), "a dict patch on a list"),
            (_patch(["table"], "extend", items=[1]), "a list patch on a dict"),
            (_patch(["rows", -1], "extend", items=[1]), "a negative index"),
            (_patch(["rows", True], "extend", items=[1]), "a bool as an index"),
            (_patch(["pair", 0, "x"], "dict", set=[["k", 1]]), "a key into a list"),
            (_patch(["outcome", "value"], "extend", items=[1]), "a path into an Outcome"),
            (_patch([], "extend", items=[1]), "an empty path"),
            (_patch(["table"], "dict", set=[[["unhashable"], 1]]), "a key that is not a scalar"),
        ],
    )
    def test_a_patch_that_does_not_fit_is_skipped(self, patch: dict[str, Any], why: str) -> None:
        """Memory is exactly as it was, the stream stays open; the top-level set still lands."""
        stream = io.StringIO("kept")
        memory: dict[str, Any] = {
            "log": stream,
            "rows": [[1]],
            "table": {"a": 1},
            "pair": ([{"x": {}}], 2),
            "outcome": Outcome.ok([1]),
        }

        apply_plain(memory, {"patches": [patch], "set": {"new": 1}, "delete": []})

        assert (stream.closed, stream.getvalue()) == (False, "kept"), why
        assert memory["rows"] == [[1]] and memory["table"] == {"a": 1}, why
        assert memory["pair"] == ([{"x": {}}], 2) and memory["outcome"].value == [1], why
        assert memory["new"] == 1

    def test_a_malformed_patch_writes_nothing(self) -> None:
        """A valid patch followed by one without ``items`` is refused before either applies."""
        rows = [1]
        memory: dict[str, Any] = {"rows": rows}
        broken = {"path": ["rows"], "kind": "extend", "set": [], "delete": []}

        with pytest.raises(ValueError, match="plain writes are malformed"):
            apply_plain(
                memory, {"patches": [_patch(["rows"], "extend", items=[2]), broken], "set": {}}
            )

        assert memory == {"rows": [1]}

    def test_fitting_patches_still_land_in_the_hosts_containers(self) -> None:
        """Through a tuple and a dict, by index and key: the host's own list and dict change."""
        inner: list[Any] = [1]
        table: dict[Any, Any] = {"a": 1, 2: "two"}
        memory: dict[str, Any] = {"pair": (inner, 2), "table": table}

        apply_plain(
            memory,
            {
                "patches": [
                    _patch(["pair", 0], "extend", items=[2]),
                    _patch(["table"], "dict", set=[["b", 2]], delete=[2]),
                ]
            },
        )

        assert (memory["pair"][0] is inner, inner, memory["table"] is table, table) == (
            True,
            [1, 2],
            True,
            {"a": 1, "b": 2},
        )


class TestMalformedWorkerAnswers:
    """Finding 14 (fixed): an envelope no honest worker sends escaped the call as a raw error.

    Payload: a result value ``{'__recurgent_outcome__': {'status': 5}}`` (or an agent reference
    without a number) raised pydantic's ``ValidationError``, ``ValueError`` or ``KeyError``
    out of ``ProcessExecutor.run``, and so out of the agent call, which must always return an
    Outcome. The parent now reports a ``worker_crash``.
    """

    @pytest.mark.parametrize(
        "answer",
        [
            {"value": {OUTCOME_KEY: {"status": 5}}},
            {"value": {OUTCOME_KEY: {"status": "error", "error_type": "not an identifier"}}},
            {"value": {AGENT_KEY: {"id": "x", "role": "r"}}},
            {"value": {AGENT_KEY: {"role": "r"}}},
            {"memory_set": {"rows": {AGENT_KEY: {"id": "x", "role": "r"}}}},
            {
                "memory_set": {"rows": [1, 2]},
                "memory_patches": {
                    "rows": [
                        MemoryPatch(
                            path=["rows"], kind="extend", items=[{OUTCOME_KEY: {"status": 5}}]
                        )
                    ]
                },
            },
        ],
    )
    def test_the_run_ends_as_a_worker_crash(self, answer: dict[str, Any]) -> None:
        """The result is a typed ``worker_crash`` error and carries no writes."""
        host = Host(memory={"rows": [1]})

        result = _run(host, **answer)

        assert result.error is not None
        assert (result.error.error_type, result.writes) == ("worker_crash", None)
        assert str(result.error).startswith("the worker sent a malformed answer (")
        assert host.memory == {"rows": [1]}


class TestHostileMemoryPatchesThatHeld:
    """Regression pins: patches that do not fit the host's memory fall back to whole values."""

    @pytest.mark.parametrize(
        ("path", "kind", "why"),
        [
            (["rows", -1], "extend", "a negative index"),
            (["table", "name"], "extend", "a string"),
            (["table", "name", 0], "dict", "an index into a string"),
            (["outcome"], "extend", "an Outcome"),
            (["outcome", "value"], "extend", "a list inside an Outcome"),
            (["rows", 0, 0, 0], "extend", "an index into an int"),
            (["table"], "replace", "a list patch on a dict"),
        ],
    )
    def test_the_key_takes_its_whole_value(self, path: list[Any], kind: str, why: str) -> None:
        """No patch is kept; the key is set whole; memory itself is untouched."""
        host = Host(memory={"rows": [[1]], "table": {"name": "abc"}, "outcome": Outcome.ok([1])})
        key = path[0]
        patch = MemoryPatch(path=path, kind=kind, items=[1], set=[("name", 1)])

        result = _run(host, memory_set={key: [9]}, memory_patches={key: [patch]})

        assert result.writes is not None
        assert (result.writes.set, result.writes.patches) == ({key: [9]}, []), why
        assert (host.memory["rows"], host.memory["table"]) == ([[1]], {"name": "abc"})
        assert host.memory["outcome"].value == [1]

    def test_a_patch_path_deeper_than_the_protocol_allows_is_refused(self) -> None:
        """A path of 65 steps fails validation of the message itself."""
        with pytest.raises(ValueError, match="at most 64 items"):
            MemoryPatch(path=["rows", *[0] * 64], kind="extend")

    def test_ten_thousand_patches_of_one_list_apply_in_order(self) -> None:
        """Many small patches of one key cost one walk each and keep the host's list."""
        rows: list[Any] = []
        host = Host(memory={"rows": rows})
        patches = [MemoryPatch(path=["rows"], kind="extend", items=[i]) for i in range(10_000)]

        result = _run(
            host, memory_set={"rows": list(range(10_000))}, memory_patches={"rows": patches}
        )
        assert result.writes is not None
        result.writes.apply(host.memory)

        assert (host.memory["rows"] is rows, rows == list(range(10_000))) == (True, True)


class _Forwarding:
    """A stand-in worker that asks the parent for ``bank.balance()`` and then answers with
    ``result(answer)``, where ``answer`` is the wire form of the child's Outcome."""

    backend = "none"
    pid = 1
    restarts = 0

    def __init__(self, result: Any) -> None:
        self._result = result

    def run(self, request: Any, handler: Any, *, timeout_seconds: float, **_: Any) -> RunResult:
        opened = handler(
            ForwardRequest(call_id=request.call_id, forward_id=1, op="delegate", name="bank")
        )
        called = handler(
            ForwardRequest(
                call_id=request.call_id,
                forward_id=2,
                op="handle_call",
                handle=opened.handle,
                name="balance",
            )
        )
        return RunResult(call_id=request.call_id, status="ok", value=self._result(called.value))


def _through_a_forwarding_worker(result: Any) -> Any:
    host = Host()
    host.child("bank").reply = lambda method, args, kwargs: Outcome.ok(
        {"balance": [1, 2]}, tool_role="bank", method_name="balance"
    )
    executor = ProcessExecutor(cast(WorkerSupervisor, _Forwarding(result)))
    return executor.run(
        Program(code="return 0"),
        ExecutionInputs(memory={}, commit_memory=False),
        SandboxLimits(timeout_seconds=5.0),
        host.bridge(),
    ).value


def _forged(answer: dict[str, Any]) -> dict[str, Any]:
    fields = dict(answer[OUTCOME_KEY])
    fields["value"] = {"balance": [1, 2, 999]}
    return {OUTCOME_KEY: fields}


class TestWorkerAnswersNameAnyRole:
    """Finding 15 (fixed): a subverted worker's Outcome named any role and method.

    Payload: a result value ``{'__recurgent_outcome__': {'status': 'ok', 'value': 1,
    'tool_role': 'bank', 'method_name': 'transfer'}}``. ADR 0059 settles attribution in the
    worker's own sandbox, before the pipe; the parent took the worker's word, so a program
    that escaped the policy inside the worker named a role that never ran. The parent now
    keeps an Outcome's role only when its wire form is exactly an answer it forwarded into
    the run (ADR 0065).
    """

    def test_an_outcome_the_parent_never_forwarded_names_the_call(self) -> None:
        """The Outcome, and one nested in its value, name ``tester.run``."""
        forged = {"status": "ok", "value": 1, "tool_role": "bank", "method_name": "transfer"}
        outer = dict(forged, value=[{OUTCOME_KEY: forged}])

        result = _run(Host(), value={OUTCOME_KEY: outer})

        assert isinstance(result.value, Outcome)
        inner = result.value.value[0]
        assert (result.value.tool_role, result.value.method_name) == ("tester", "run")
        assert (inner.tool_role, inner.method_name, inner.value) == ("tester", "run", 1)

    def test_a_forwarded_answer_passed_on_unchanged_keeps_the_childs_name(self) -> None:
        """The child's own answer, returned as received and inside a list, names the bank."""
        value = _through_a_forwarding_worker(lambda answer: [answer, answer])

        assert [(o.tool_role, o.method_name, o.value) for o in value] == [
            ("bank", "balance", {"balance": [1, 2]}),
            ("bank", "balance", {"balance": [1, 2]}),
        ]

    def test_a_forwarded_answer_with_a_changed_value_names_the_call(self) -> None:
        """The bank's answer with an item appended names ``tester.run``."""
        value = _through_a_forwarding_worker(_forged)

        assert (value.tool_role, value.method_name, value.value) == (
            "tester",
            "run",
            {"balance": [1, 2, 999]},
        )
