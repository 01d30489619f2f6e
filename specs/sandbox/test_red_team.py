"""Red-team findings against the merged boundary: each attack a hostile program would write.

Every class names a finding (fixed: the spec failed before the fix) or an attack that held (a
regression pin). Findings left open are marked ``xfail`` with the payload and what happens.

The findings are filed by theme; this file holds the first one, the edges an attempt shares
with other agents and the host (delegated contracts, another agent's values and answers, the
log line). The others:

* ``test_red_team_memory.py``: host objects in memory and the journal's copies of them;
* ``test_red_team_deadline.py``: leaked generators and host work after or past the deadline;
* ``test_red_team_caps.py``: size caps on host objects' methods and on streams;
* ``test_red_team_elements.py``: XML elements in memory and made by the attempt stay trees.
"""

from __future__ import annotations

import collections
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest

from recurgent import Agent
from recurgent._contracts import validate_deliverable
from recurgent.outcome import Outcome
from recurgent.testing import FunctionProvider, ScriptedProvider, read_log
from specs.sandbox.support import Host, execute

Point = collections.namedtuple("Point", "items")


class _SchemaServer:
    """A loopback HTTP server that serves a JSON Schema and records every path requested."""

    def __init__(self) -> None:
        self.hits: list[str] = []
        hits = self.hits

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                hits.append(self.path)
                body = json.dumps({"type": "object"}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.server = HTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def __enter__(self) -> _SchemaServer:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()
        self.thread.join()


@pytest.fixture
def schema_server() -> Iterator[_SchemaServer]:
    """A running loopback schema server."""
    with _SchemaServer() as server:
        yield server


class TestDeliverableReferencesStayOffline:
    """Finding 1 (fixed): a ``$ref`` to a URL made the host fetch it, past the network policy.

    Payload: ``delegate('child_tool', deliverable={'$ref': 'http://169.254.169.254/...'})``.
    jsonschema's default registry retrieved remote references with ``urllib`` from the host,
    outside the sandbox and with ``network='deny'``.
    """

    def test_a_delegated_remote_ref_is_never_fetched(self, schema_server: _SchemaServer) -> None:
        """The child's outcome fails its contract as unresolvable; the server sees no request."""
        schema = {"$ref": f"{schema_server.url}/latest/meta-data"}
        provider = ScriptedProvider(
            {
                ("builder", "run"): f"return delegate('child_tool', deliverable={schema!r}).work()",
                ("child_tool", "work"): "return {'a': 1}",
            }
        )
        builder = Agent("builder", provider=provider, log=False, network="deny")

        outcome = builder.run()

        assert (outcome.status, outcome.error_type, outcome.metadata["mismatch"]) == (
            "error",
            "contract_violation",
            "unresolvable_reference",
        )
        assert schema_server.hits == []

    def test_a_remote_ref_in_the_callers_deliverable_is_never_fetched(
        self, schema_server: _SchemaServer
    ) -> None:
        """validate_deliverable with a URL ``$ref`` reports unresolvable_reference, offline."""
        check = validate_deliverable({"$ref": f"{schema_server.url}/schema.json"}, {"a": 1}, (), {})

        assert (check.passed, check.mismatch) == (False, "unresolvable_reference")
        assert schema_server.hits == []

    def test_local_references_still_resolve(self) -> None:
        """``$ref`` into the schema's own ``$defs`` validates as before."""
        schema = {"$defs": {"name": {"type": "string"}}, "$ref": "#/$defs/name"}

        good = validate_deliverable(schema, "ada", (), {})
        bad = validate_deliverable(schema, 7, (), {})

        assert (good.passed, bad.passed, bad.mismatch) == (True, False, "schema_violation")


def _child_memory() -> dict[str, Any]:
    return {
        "queue": collections.deque([1]),
        "raw": bytearray(b"a"),
        "ordered": collections.OrderedDict(a=[1]),
        "counts": collections.Counter(a=1),
        "groups": collections.defaultdict(list),
        "rec": Point([1]),
    }


class TestValuesFromOtherAgentsAreCopied:
    """Finding 8 (fixed): reading another agent's memory handed out its deques, bytearrays,
    OrderedDicts, Counters, defaultdicts and namedtuples themselves.

    Payload: ``delegate('c').queue.append(2)``. ``inbound`` copied exact dicts, lists, tuples
    and sets only, so the parent changed the child's memory in place, outside any journal.
    """

    @pytest.mark.parametrize(
        "mutation",
        [
            "h.queue.append(2)",
            "h.raw.extend(b'z')",
            "h.ordered['z'] = 1",
            "h.ordered['a'].append(2)",
            "h.counts['z'] = 1",
            "h.groups['z'].append(1)",
            "h.rec.items.append(2)",
        ],
    )
    def test_changing_what_was_read_leaves_the_child_alone(self, mutation: str) -> None:
        """The parent's program succeeds; the child's memory is exactly what it was."""
        host = Host()
        child = host.child("c")
        child.memory.update(_child_memory())

        result = execute(f"h = delegate('c')\n{mutation}\nresult = 1", host=host)

        assert result.error is None
        assert child.memory == _child_memory()

    def test_copies_keep_types_sharing_and_cycles(self) -> None:
        """A deque keeps its maxlen, a shared list stays shared, a cyclic list stays cyclic."""
        shared: list[Any] = [1]
        loop: list[Any] = []
        loop.append(loop)
        host = Host()
        host.child("c").memory.update(
            queue=collections.deque([1], maxlen=3), pair=[shared, shared], loop=loop
        )
        source = (
            "h = delegate('c')\n"
            "q, pair, loop = h.queue, h.pair, h.loop\n"
            "result = [type(q).__name__, q.maxlen, pair[0] is pair[1], loop[0] is loop]"
        )

        assert execute(source, host=host).value == ["deque", 3, True, True]

    def test_a_structure_deeper_than_the_boundary_limit_is_still_copied(self) -> None:
        """A list nested 80 deep: appending at the bottom leaves the child's list empty."""
        bottom: list[Any] = []
        nested: list[Any] = bottom
        for _ in range(80):
            nested = [nested]
        host = Host()
        host.child("c").memory["deep"] = nested
        source = "node = delegate('c').deep\nwhile node:\n    node = node[0]\nnode.append(1)"

        result = execute(source + "\nresult = 1", host=host)

        assert result.error is None and bottom == []


def _bank_answer(method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Outcome:
    return Outcome.ok(
        {"balance": [1, 2], "note": "real", "flag": 1},
        tool_role="bank",
        method_name="balance",
    )


class TestForwardedAnswersChangedInPlace:
    """Finding 10 (fixed): a child's answer the program changed in place kept the child's name.

    Payload: ``a = delegate('bank').balance(); a.value['note'] = 'forged'; result = a``. The
    Outcome is frozen, but its value is the program's copy of a dict: the attempt's Outcome
    named ``bank.balance`` while carrying a value the bank never returned (ADR 0059 promised
    only unchanged answers keep the child's name).
    """

    @pytest.mark.parametrize(
        "change",
        [
            "a.value['note'] = 'forged'",
            "a.value['balance'].append(999)",
            "a.value['flag'] = True",
            "del a.value['note']",
        ],
    )
    def test_a_changed_answer_names_the_call_that_ran(self, change: str) -> None:
        """The returned Outcome carries the change and names ``tester.run``, not the bank."""
        host = Host()
        host.child("bank").reply = _bank_answer

        result = execute(f"a = delegate('bank').balance()\n{change}\nresult = a", host=host)

        assert result.error is None and isinstance(result.value, Outcome)
        assert (result.value.tool_role, result.value.method_name) == ("tester", "run")
        assert json.dumps(result.value.value) != json.dumps(_bank_answer("", (), {}).value)

    def test_an_unchanged_answer_keeps_the_childs_name(self) -> None:
        """Passed on as received (twice, next to an Outcome of its own), it names the bank."""
        host = Host()
        host.child("bank").reply = _bank_answer

        result = execute(
            "a = delegate('bank').balance()\nb = a.value['balance'][0]\n"
            "result = [a, Outcome.ok(b), a]",
            host=host,
        )

        assert result.error is None
        assert [(o.tool_role, o.method_name, o.value) for o in result.value] == [
            ("bank", "balance", {"balance": [1, 2], "note": "real", "flag": 1}),
            ("tester", "run", 1),
            ("bank", "balance", {"balance": [1, 2], "note": "real", "flag": 1}),
        ]


class TestProgramTextInTheLogLineThatHeld:
    """Regression pin: program-chosen short fields of the one-pass log line (ADR 0063) are
    redacted like free text: a secret written as an ``error_type`` (a valid identifier), a
    metadata key, stdout and the message never reach the JSONL line."""

    def test_a_secret_argument_never_reaches_the_line(self, tmp_path: Any) -> None:
        """The caller's ``api_key`` value appears nowhere in the file; the fields are masked."""
        secret = "sk-abcdefgh12345678XYZ"
        code = (
            "k = kwargs['api_key']\n"
            "print(k)\n"
            "return Outcome.error(error_type=k, error_message='leak ' + k, metadata={k: k})"
        )
        log = tmp_path / "calls.jsonl"
        agent = Agent("leaky", provider=FunctionProvider(lambda request: code), log=str(log))

        outcome = agent.fetch(api_key=secret)

        entry = read_log(log)[-1]
        assert (outcome.error_type, secret in log.read_text()) == (secret, False)
        assert (entry["outcome_error_type"], entry["outcome_error_message"]) == (
            "[REDACTED]",
            "leak [REDACTED]",
        )
        assert entry["outcome_error_metadata"] == {"[REDACTED]": "[REDACTED]"}
