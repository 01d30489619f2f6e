"""Red-team findings against the merged boundary: each attack a hostile program would write.

Every class names a finding (fixed: the spec failed before the fix) or an attack that held (a
regression pin). Findings left open are marked ``xfail`` with the payload and what happens.
"""

from __future__ import annotations

import collections
import gc
import io
import json
import random
import sys
import threading
import xml.etree.ElementTree as ElementTree
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, HTTPServer
from typing import Any

import pytest

from recurgent import Agent
from recurgent._contracts import validate_deliverable
from recurgent._journal import Journal
from recurgent._sandbox import SandboxLimits
from recurgent._sandbox._boundary import rebuild
from recurgent.errors import NonSerializableResultError
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


class TestJournalCopiesHostNamedtuples:
    """Finding 2 (fixed): a list inside a namedtuple in memory escaped rollback.

    Payload: ``context['rec'].items.append('x'); raise ValueError()``. The journal copied exact
    tuples only, so a namedtuple came back as the original and its list was appended in place.
    """

    def test_a_failed_attempt_leaves_the_inner_list_alone(self) -> None:
        """The append made before the failure is not in memory."""
        host = Host(memory={"rec": Point([1])})

        result = execute("context['rec'].items.append(2)\nraise ValueError('boom')", host=host)

        assert result.error is not None and result.error.error_type == "execution"
        assert host.memory["rec"] == Point([1])

    def test_a_successful_attempt_commits_into_the_same_list(self) -> None:
        """The append commits in place: the namedtuple and its list keep their identity."""
        record = Point([1])
        inner = record.items
        host = Host(memory={"rec": record})

        result = execute("context['rec'].items.append(2)\nresult = context['rec'].items", host=host)

        assert result.error is None and result.value == [1, 2]
        assert host.memory["rec"] is record and record.items is inner and inner == [1, 2]


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


class TestLeakedGeneratorsStayInTheirAttempt:
    """Finding 9 (fixed): a generator in a reference cycle is finalized by a later host garbage
    collection, after the attempt returned; its ``finally`` block still reached agents and memory.

    Payload: a generator whose ``finally`` calls ``h.late()`` / ``remember(...)``, kept in a
    cycle (``c = [x]; c.append(c)``) so it outlives the attempt. Loops stopped at their first
    tick, but forwarded calls never ticked.
    """

    @pytest.mark.parametrize(
        "late",
        ["h.late()", "remember(late=1)", "h.late = 1", "delegate('other')", "tool('c')"],
    )
    def test_forwarded_calls_after_the_attempt_are_refused(
        self, late: str, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """After ``gc.collect()`` the child saw no call, memory holds no write, and the late
        call's stop ended the generator quietly: nothing reached ``sys.unraisablehook``
        (ADR 0060; it used to report ``DeadlineExceeded`` there)."""
        host = Host()
        child = host.child("c")
        source = (
            "h = delegate('c')\n"
            "def g():\n"
            "    try:\n"
            "        yield 1\n"
            "    finally:\n"
            f"        {late}\n"
            "x = g()\n"
            "next(x)\n"
            "loop = [x]\n"
            "loop.append(loop)\n"
            "result = 1"
        )
        result = execute(source, host=host)
        delegations = list(host.delegations)

        unraisable: list[str] = []
        monkeypatch.setattr(sys, "unraisablehook", lambda u: unraisable.append(u.exc_type.__name__))
        gc.collect()
        monkeypatch.undo()

        assert result.error is None and result.value == 1
        assert unraisable == []
        assert (child.calls, child.memory, host.memory, host.delegations) == (
            [],
            {},
            {},
            delegations,
        )


# Attacks on the journal view that held: each mutates what it reached, then fails.
_VIEW_READS = [
    "context.__class__.get(context, 'lst')",
    "type(context).get(context, 'lst')",
    "dict.get(context, 'lst')",
    "dict.setdefault(context, 'lst')",
    "dict.pop(context, 'lst')",
    "[v for v in dict.values(context) if type(v) is list][0]",
    "[v for k, v in reversed(context.items()) if k == 'lst'][0]",
    "dict(context)['lst']",
    "{**context}['lst']",
    "(context | {})['lst']",
    "({} | context)['lst']",
    "collections.ChainMap(context)['lst']",
    "collections.OrderedDict(context)['lst']",
    "collections.defaultdict(None, context)['lst']",
    "operator.itemgetter('lst')(context)",
    "sorted(context.items())[1][1]",
    "context['nested']['lst']",
]


class TestViewReadsThatHeld:
    """Regression pins: every way of reaching a memory list hands out the attempt's copy."""

    @pytest.mark.parametrize("reach", _VIEW_READS)
    def test_mutation_after_the_read_rolls_back(self, reach: str) -> None:
        """Appending to what the read returned, then failing, leaves memory as it was."""
        host = Host(memory={"lst": [1], "nested": {"lst": [1]}})
        source = (
            "import collections, operator\n"
            f"target = {reach}\n"
            "target.append(2)\n"
            "raise ValueError('boom')"
        )

        result = execute(source, host=host)

        assert result.error is not None and result.error.error_type == "execution"
        assert host.memory == {"lst": [1], "nested": {"lst": [1]}}


def _open_types_memory() -> dict[str, Any]:
    return {
        "buf": io.StringIO("abc"),
        "tree": ElementTree.Element("root"),
        "table": collections.UserDict(a=1),
        "rows": collections.UserList([1]),
        "rng": random.Random(1),
    }


def _state(memory: dict[str, Any]) -> list[Any]:
    return [
        memory["buf"].getvalue(),
        dict(memory["tree"].attrib),
        dict(memory["table"]),
        list(memory["rows"]),
        memory["rng"].getstate(),
    ]


class TestHostObjectsTheJournalDoesNotCopy:
    """Finding 3 (fixed): mutable host objects in memory were changed in place, past rollback.

    Payload: ``context['buf'].write('ZZZ'); raise ValueError()``. The journal copied dicts,
    lists, sets, deques, bytearrays, tuples, namedtuples and Outcomes only; other objects a host
    stored (io.StringIO, ElementTree.Element, collections.UserDict/UserList/ChainMap,
    random.Random) came back as the originals. They are now copied on touch and committed in
    place, and host objects the journal cannot restore are withheld (ADR 0057;
    ``specs/journal/test_kinds.py`` pins each kind).
    """

    @pytest.mark.parametrize(
        "mutation",
        [
            "context['buf'].write('ZZZ')",
            "context['tree'].set('owned', '1')",
            "context['table'].update(b=2)",
            "context['rows'].append(2)",
            "context['rng'].seed(5)",
        ],
    )
    def test_mutation_in_a_failed_attempt_does_not_reach_memory(self, mutation: str) -> None:
        """The failed attempt's change is not visible in memory afterwards."""
        host = Host(memory=_open_types_memory())
        before = _state(host.memory)

        result = execute(f"{mutation}\nraise ValueError('boom')", host=host)

        assert result.error is not None
        assert _state(host.memory) == before

    @pytest.mark.parametrize(
        ("mutation", "changed", "expected"),
        [
            ("context['buf'].write('ZZZ')", 0, "ZZZ"),
            ("context['tree'].set('owned', '1')", 1, {"owned": "1"}),
            ("context['table'].update(b=2)", 2, {"a": 1, "b": 2}),
            ("context['rows'].append(2)", 3, [1, 2]),
            ("context['rng'].seed(5)", 4, random.Random(5).getstate()),
        ],
    )
    def test_mutation_in_a_successful_attempt_commits_into_the_same_objects(
        self, mutation: str, changed: int, expected: Any
    ) -> None:
        """Memory keeps every object it held; the one the attempt changed holds the change."""
        host = Host(memory=_open_types_memory())
        originals = dict(host.memory)
        before = _state(host.memory)
        before[changed] = expected

        result = execute(f"{mutation}\nresult = 1", host=host)

        assert (result.error, result.value) == (None, 1)
        assert all(host.memory[key] is originals[key] for key in originals)
        assert _state(host.memory) == before


class TestHostWorkOutsideTheDeadline:
    """Findings 4-7 (open): single host calls that run far past the attempt's deadline.

    Not run (each takes tens of seconds or more); the payloads are recorded here so the fix can
    turn them into specs. Measured with ``timeout_seconds=2``.
    """

    def test_a_deliverable_pattern_cannot_backtrack_in_the_host(self) -> None:
        """F4: the program picks the child's schema, the child the value; jsonschema then runs in
        the host with no deadline. ``{'pattern': '^(a+)+$'}`` on 'a'*26+'b': 15 s;
        ``patternProperties`` ``'^(a|a)+$'`` on a 25-char key: 8 s; ``uniqueItems`` on 20000
        lists: 3 s (quadratic); 14 nested ``{'anyOf': [s, s]}`` (a shared DAG, 28 deep): 82 s."""
        provider = ScriptedProvider(
            {
                ("builder", "run"): "return delegate('child_tool', deliverable="
                "{'type': 'string', 'pattern': '^(a+)+$'}).work()",
                ("child_tool", "work"): "return 'a' * 40 + 'b'",
            }
        )
        outcome = Agent("builder", provider=provider, log=False).run()
        assert outcome.error_type == "contract_violation"
        assert "does not match '^(a+)+$'" in (outcome.error_message or "")

    def test_a_deliverable_pattern_that_still_backtracks_times_out(self) -> None:
        """F4: a pattern the regex engine does backtrack on stops after 0.5 s as a violation."""
        provider = ScriptedProvider(
            {
                ("builder", "run"): "return delegate('child_tool', deliverable="
                "{'type': 'string', 'pattern': '(a|aa)+$'}).work()",
                ("child_tool", "work"): "return 'a' * 60 + 'b'",
            }
        )
        outcome = Agent("builder", provider=provider, log=False).run()
        assert outcome.error_type == "contract_violation"
        assert "took longer than 0.5s" in (outcome.error_message or "")

    def test_a_deliverable_schema_that_explodes_is_refused(self) -> None:
        """F4: 14 nested ``anyOf: [s, s]`` (a shared DAG) is refused when the child is made."""
        provider = ScriptedProvider(
            {
                ("builder", "run"): "s = {'type': 'string'}\n"
                "for _ in range(14):\n    s = {'anyOf': [s, s]}\n"
                "return delegate('child_tool', deliverable=s).work()",
                ("child_tool", "work"): "return 'x'",
            }
        )
        outcome = Agent("builder", provider=provider, log=False).run()
        assert outcome.error_type == "execution"
        assert "deliverable JSON Schema is refused: it has more than 5000 nodes" in (
            outcome.error_message or ""
        )
        assert [request.role for request in provider.requests] == ["builder", "builder"]

    def test_regex_backtracking_stops_at_the_deadline(self) -> None:
        """F5: ``re.match('(a+)+$', 'a'*40+'b')`` ran past 30 s; on the regex engine it ends."""
        result = execute("import re\nresult = bool(re.match('(a+)+$', 'a' * 40 + 'b'))")
        assert (result.error, result.value) == (None, False)

    def test_json_dumps_of_a_shared_row_is_capped(self) -> None:
        """F6: ``json.dumps([[0]*10**4]*10**4)``: each repetition is under the item cap, the
        output is 2e8 characters from one C call; ran past 30 s (300 MB) with a 2 s deadline."""
        result = execute("import json\nresult = len(json.dumps([[0] * 10**4] * 10**4))")
        assert result.error is not None and result.error.error_type == "resource_limit"

    def test_textwrap_of_a_huge_text_is_refused(self) -> None:
        """F7: ``textwrap.fill('a ' * 10**6, width=1)`` took 5-8 s; such a text is now refused."""
        result = execute("import textwrap\nresult = len(textwrap.fill('a ' * 10**6, width=1))")
        assert result.error is not None and result.error.error_type == "resource_limit"


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


class TestClosingGeneratorsCannotSwallowTheDeadline:
    """Finding 11 (fixed): a generator closing quietly (ADR 0060) swallowed ``DeadlineExceeded``.

    Payload: a generator whose ``finally`` loops forever, closed with ``x.close()``; the
    deadline raised inside the cleanup, the rewrite's ``except: if _closing_: return`` ended
    the generator quietly, ``close()`` returned, and the attempt succeeded after its deadline
    (``result = 'survived'``). Only ticking code raised again, so the program could finish,
    return and commit memory past the deadline.
    """

    def test_the_attempt_still_times_out(self) -> None:
        """The attempt ends as ``timeout``; memory keeps nothing it wrote."""
        host = Host(memory={"log": []})
        source = (
            "def g():\n"
            "    try:\n"
            "        yield 1\n"
            "    finally:\n"
            "        while True:\n"
            "            pass\n"
            "x = g()\n"
            "next(x)\n"
            "x.close()\n"
            "context['log'].append('after the deadline')\n"
            "result = 'survived'"
        )

        result = execute(source, host=host, limits=SandboxLimits(timeout_seconds=0.3))

        assert result.error is not None and result.error.error_type == "timeout"
        assert host.memory == {"log": []}

    def test_nested_closes_each_swallowing_once_still_time_out(self) -> None:
        """Fifty generators closing each other from their cleanups still end as ``timeout``."""
        source = (
            "def g(inner):\n"
            "    try:\n"
            "        yield 1\n"
            "    finally:\n"
            "        if inner is not None:\n"
            "            inner.close()\n"
            "        while True:\n"
            "            pass\n"
            "prev = None\n"
            "for i in range(50):\n"
            "    x = g(prev)\n"
            "    next(x)\n"
            "    prev = x\n"
            "prev.close()\n"
            "result = 'survived'"
        )

        result = execute(source, limits=SandboxLimits(timeout_seconds=0.3))

        assert result.error is not None and result.error.error_type == "timeout"

    def test_a_size_limit_in_a_cleanup_is_an_ordinary_exception(self) -> None:
        """A refused size is raised before the work, so a closing generator may end on it."""
        source = (
            "def g():\n"
            "    try:\n"
            "        yield 1\n"
            "    finally:\n"
            "        s = 'x' * 10**9\n"
            "x = g()\n"
            "next(x)\n"
            "x.close()\n"
            "result = 'closed'"
        )

        assert execute(source).value == "closed"


class TestModulesImportedAfterTheAttemptThatHeld:
    """Regression pin (ADR 0063): a module's per-attempt rows built lazily by an import in a
    leaked generator's late cleanup close over the ended attempt, so their loops stop."""

    def test_a_late_import_and_endless_loop_end_at_the_next_collection(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """``gc.collect()`` returns; the cleanup's ``itertools.count()`` loop raised the stop,
        which the generator swallowed quietly (nothing reached ``sys.unraisablehook``)."""
        source = (
            "def g():\n"
            "    try:\n"
            "        yield 1\n"
            "    finally:\n"
            "        import itertools, random\n"
            "        for i in itertools.count():\n"
            "            random.random()\n"
            "x = g()\n"
            "next(x)\n"
            "loop = [x]\n"
            "loop.append(loop)\n"
            "result = 1"
        )
        result = execute(source)

        unraisable: list[str] = []
        monkeypatch.setattr(sys, "unraisablehook", lambda u: unraisable.append(u.exc_type.__name__))
        gc.collect()
        monkeypatch.undo()

        assert (result.error, result.value, unraisable) == (None, 1, [])


class TestLeakedGeneratorsCallingHostFunctions:
    """Finding 12 (fixed): a leaked generator called a host function after its attempt failed.

    Payload: ``def g(): try: yield 1 finally: context['notify']('late')``, started, kept in a
    cycle, then ``raise ValueError()``. Memory rolled back, yet the next garbage collection
    ran the cleanup, which called the host function memory holds (shared as host code, ADR
    0057) outside any attempt and deadline. Finding 9 stopped forwarded calls and loops there,
    not calls of host functions. The journal now hands out a host function wrapped: called
    as it is during the attempt, it raises the attempt's stop afterwards (ADR 0065).
    """

    def test_a_host_function_keeps_working_and_its_place(self) -> None:
        """Called during the attempt it runs; stored under another key it is the function."""
        calls: list[int] = []

        def record(n: int) -> int:
            calls.append(n)
            return n * 2

        host = Host(memory={"record": record})

        result = execute(
            "f = context['record']\ncontext['again'] = f\nresult = [f(2), sorted([3, 1], key=f)]",
            host=host,
        )

        assert (result.error, result.value, calls) == (None, [4, [1, 3]], [2, 3, 1])
        assert host.memory["again"] is record and host.memory["record"] is record

    def test_the_host_function_is_not_called_after_the_attempt(self) -> None:
        """After ``gc.collect()`` the host function was called during the attempt only."""
        calls: list[str] = []

        def notify(text: str) -> None:
            calls.append(text)

        host = Host(memory={"notify": notify})
        source = (
            "def g():\n"
            "    try:\n"
            "        yield 1\n"
            "    finally:\n"
            "        context['notify']('late')\n"
            "x = g()\n"
            "next(x)\n"
            "loop = [x]\n"
            "loop.append(loop)\n"
            "context['notify']('during')\n"
            "raise ValueError('fail the attempt')"
        )

        result = execute(source, host=host)
        gc.collect()

        assert result.error is not None and result.error.error_type == "execution"
        assert calls == ["during"]


class TestMethodsOfCopiedHostObjectsAreCapped:
    """Finding 16 (fixed): a host ``random.Random`` in memory bypassed the size caps.

    Payload: ``context['rng'].randbytes(2 * 10**8)`` (200 MB in one C call), ``getrandbits(10**8)``,
    ``choices([1], k=2 * 10**7)`` (2 s, uninterruptible). The journal's copy is a plain
    ``random.Random`` (ADR 0057), not the sandbox's checked ``SandboxRandom``; the policy now
    applies the checked methods to any ``random.Random``.
    """

    @pytest.mark.parametrize(
        ("call", "message"),
        [
            ("getrandbits(10**8)", "getrandbits() would create a number of about 100000000 bits"),
            ("randbytes(2 * 10**8)", "randbytes() would create 200000000 items"),
            ("choices([1], k=2 * 10**7)", "choices() would create 20000000 items"),
            ("sample([1], 2 * 10**7, counts=[2 * 10**7])", "sample() would create 20000000 items"),
        ],
    )
    def test_a_huge_request_is_a_resource_limit(self, call: str, message: str) -> None:
        """Each call past its cap is refused before the work; the generator is unchanged."""
        rng = random.Random(1)
        state = rng.getstate()
        host = Host(memory={"rng": rng})

        result = execute(f"result = context['rng'].{call}", host=host)

        assert result.error is not None and result.error.error_type == "resource_limit"
        assert message in str(result.error)
        assert rng.getstate() == state

    def test_calls_within_the_caps_match_a_plain_generator_and_commit(self) -> None:
        """Values equal ``random.Random``'s own; the advanced state commits into the host's."""
        rng = random.Random(3)
        expected = random.Random(3)
        want = [
            expected.getrandbits(8),
            expected.randbytes(4),
            expected.choices([1, 2], k=3),
            expected.sample(range(10), 2),
        ]
        host = Host(memory={"rng": rng})
        source = (
            "r = context['rng']\n"
            "result = [r.getrandbits(8), r.randbytes(4), r.choices([1, 2], k=3), "
            "r.sample(range(10), 2)]"
        )

        result = execute(source, host=host)

        assert (result.error, result.value) == (None, want)
        assert host.memory["rng"] is rng and rng.getstate() == expected.getstate()


class TestStreamsCannotSeekPastTheCap:
    """Finding 17 (fixed): ``seek`` then ``write`` padded a stream to any size in one C call.

    Payload: ``s = io.StringIO(); s.seek(2 * 10**8); s.write('x')``: 2.5 GB of resident memory
    from a program's own stream or the journal's copy of a host's. ``seek`` of ``StringIO`` and
    ``BytesIO`` is now checked against the item cap (``SIZE_CAPS['items']``).
    """

    @pytest.mark.parametrize(
        "seek",
        [
            "s.seek(2 * 10**8)",
            "type(s).seek(s, 2 * 10**8)",
            "s.seek(0, 2)\ns.seek(2 * 10**8, 1)",
        ],
    )
    @pytest.mark.parametrize("stream", ["io.BytesIO()", "context['buf']"])
    def test_seeking_past_the_cap_is_a_resource_limit(self, seek: str, stream: str) -> None:
        """The seek is refused, the position is where it was, memory's stream is unchanged."""
        host = Host(memory={"buf": io.BytesIO(b"abc")})
        if "1)" in seek and stream == "io.BytesIO()":
            seek = seek.replace("(0, 2)", "(0, 0)")

        result = execute(f"import io\ns = {stream}\n{seek}\ns.write(b'x')", host=host)

        assert result.error is not None and result.error.error_type == "resource_limit"
        assert "BytesIO.seek() would create 200000" in str(result.error)
        assert host.memory["buf"].getvalue() == b"abc"

    def test_seeking_within_the_cap_behaves_as_usual(self) -> None:
        """Absolute and relative seeks return the new position; a write pads with zeros."""
        source = (
            "import io\ns = io.BytesIO(b'abc')\n"
            "result = [s.seek(0, 2), s.seek(-1, 1), s.read(), s.seek(5), s.write(b'z'), "
            "s.getvalue()]"
        )

        assert execute(source).value == [3, 2, b"c", 5, 1, b"abc\x00\x00z"]


class TestMemoryElementsStayTrees:
    """Finding 18 (fixed): an attempt made a host XML element its own descendant.

    Payload: ``e = context['tree']; e.append(e)``. The commit replaced the host element's
    children with memory's own elements, so the host's tree held a cycle; the host's later
    ``ElementTree.tostring(tree)`` or ``tree.iter()`` then never ends (a loop in library code,
    after and outside any attempt). The attempt now fails when it adds the child (F19 below);
    the journal also refuses such a commit as ``non_serializable_result``.
    """

    @pytest.mark.parametrize(
        "cycle",
        [
            "e.append(e)",
            "e[0].append(e)",
            "n = ET.Element('n')\nn.append(e)\ne.append(n)",
            "e.extend([e[0], e])",
            "e[0] = e",
        ],
    )
    def test_a_cycle_through_a_memory_element_is_refused(self, cycle: str) -> None:
        """The attempt fails; the host's element keeps its one child, which has none."""
        tree = ElementTree.Element("root")
        ElementTree.SubElement(tree, "child")
        host = Host(memory={"tree": tree})
        source = f"import xml.etree.ElementTree as ET\ne = context['tree']\n{cycle}\nresult = 1"

        result = execute(source, host=host)

        assert result.error is not None and result.error.error_type == "execution"
        assert "an XML element cannot contain itself" in str(result.error)
        assert [child.tag for child in tree] == ["child"] and len(tree[0]) == 0

    def test_the_journal_refuses_a_cyclic_copy_at_commit(self) -> None:
        """A cycle made in the view past the policy (host code) fails ``prepare``, unwritten."""
        tree = ElementTree.Element("root")
        memory: dict[str, Any] = {"tree": tree}
        journal = Journal(memory)
        copy = journal.view["tree"]
        copy.append(copy)

        with pytest.raises(NonSerializableResultError, match="is its own descendant"):
            journal.prepare(rebuild)

        assert len(tree) == 0

    def test_a_shared_child_is_still_allowed(self) -> None:
        """The same child twice is a shared subtree, not a cycle: it commits."""
        tree = ElementTree.Element("root")
        child = ElementTree.SubElement(tree, "child")
        host = Host(memory={"tree": tree})

        result = execute("e = context['tree']\ne.append(e[0])\nresult = len(e)", host=host)

        assert (result.error, result.value) == (None, 2)
        assert list(tree) == [child, child]


class TestElementsTheAttemptMakesStayTrees:
    """Finding 19 (fixed): an element the attempt made its own descendant hung the host thread.

    Payload: ``a = ET.Element('a'); a.append(a); ET.tostring(a)`` looped forever in
    ElementTree's Python code, which never ticks (past a 1 s deadline, stopped only by killing
    the process); ``list(a.iter())`` grew memory in one C call until ``MemoryError`` (3.8 s,
    3 GB). Adding a child (``append``, ``extend``, ``insert``, ``e[i] = x``, ``e[a:b] = xs``,
    bound or unbound) now refuses a child whose subtree holds the parent.
    """

    @pytest.mark.parametrize(
        "cycle",
        [
            "a.append(a)",
            "ET.Element.append(a, a)",
            "a.extend([ET.Element('b'), a])",
            "a.insert(0, a)",
            "a.append(ET.Element('b'))\na[0] = a",
            "a[:] = [a]",
            "b = ET.SubElement(a, 'b')\nc = ET.SubElement(b, 'c')\nc.append(a)",
        ],
    )
    def test_a_cycle_is_refused_before_it_exists(self, cycle: str) -> None:
        """The attempt fails with the refusal; ``tostring`` after it is never reached."""
        source = (
            "import xml.etree.ElementTree as ET\n"
            f"a = ET.Element('a')\n{cycle}\n"
            "result = len(ET.tostring(a))"
        )

        result = execute(source)

        assert result.error is not None and result.error.error_type == "execution"
        assert "ValueError: an XML element cannot contain itself" in str(result.error)

    def test_trees_with_shared_subtrees_still_build(self) -> None:
        """Appending, replacing by index and slice, and sharing one child twice all work."""
        source = (
            "import xml.etree.ElementTree as ET\n"
            "e = ET.Element('a')\nb = ET.Element('b')\n"
            "e.append(b)\ne.append(b)\ne[0] = ET.Element('c')\ne[1:] = [b, b]\n"
            "e.insert(0, ET.Element('d'))\ne.extend([ET.Element('f')])\n"
            "e.tag = 'z'\ne.text = 't'\ne.set('k', 'v')\ndel e[0]\n"
            "result = ET.tostring(e)"
        )

        assert execute(source).value == b'<z k="v">t<c /><b /><b /><f /></z>'


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


class _HostList(collections.UserList):  # type: ignore[type-arg]
    """A host subclass of a copied kind: its own methods are out of the journal's reach."""


class TestHostObjectAttacksThatHeld:
    """Regression pins: attacks on memory's host objects (ADR 0057) that held."""

    def test_a_subclass_of_a_copied_kind_is_withheld(self) -> None:
        """``append`` on a host ``UserList`` subclass fails; the host's object is unchanged."""
        rows = _HostList([1])
        host = Host(memory={"rows": rows})

        result = execute("context['rows'].append(2)\nresult = 1", host=host)

        assert result.error is not None and "Withheld" in str(result.error)
        assert list(rows) == [1]

    @pytest.mark.parametrize(
        "change",
        ["class T:\n    pass\ne.tag = T()", "class T:\n    pass\ne.set('k', T())"],
    )
    def test_a_program_object_in_an_element_is_refused(self, change: str) -> None:
        """A program object as tag or attribute value fails the commit; the host's is as was."""
        tree = ElementTree.Element("root")
        host = Host(memory={"tree": tree})

        result = execute(f"e = context['tree']\n{change}\nresult = 1", host=host)

        assert result.error is not None and result.error.error_type == "non_serializable_result"
        assert (tree.tag, tree.attrib) == ("root", {})

    def test_a_str_subclass_attribute_key_arrives_as_a_str(self) -> None:
        """A key whose ``__hash__`` the program overrode is committed as a plain ``str``."""
        tree = ElementTree.Element("root")
        host = Host(memory={"tree": tree})
        source = (
            "class K(str):\n    def __hash__(self):\n        return 1\n"
            "e = context['tree']\ne.attrib[K('k')] = 'v'\nresult = 1"
        )

        result = execute(source, host=host)

        assert (result.error, tree.attrib, [type(key) for key in tree.attrib]) == (
            None,
            {"k": "v"},
            [str],
        )

    @pytest.mark.parametrize("method", ["write('/tmp/x.xml')", "parse('/etc/hostname')"])
    def test_a_memory_tree_cannot_touch_files(self, method: str) -> None:
        """``ElementTree.write``/``parse`` stay denied on the journal's copy of a host tree."""
        host = Host(memory={"doc": ElementTree.ElementTree(ElementTree.Element("r"))})

        result = execute(f"context['doc'].{method}\nresult = 1", host=host)

        assert result.error is not None and "is not available in the sandbox" in str(result.error)


class TestMemoryElementAttributesStayStrings:
    """Finding 20 (fixed): a memory element's attribute could be committed as a non-string.

    Payload: ``context['tree'].set('k', 5)`` (or ``[1, 2]``). The element's attribute dict is
    journaled as a plain dict (ADR 0057), so the commit wrote the int into the host's
    element, while an element the attempt makes with one is refused; the host's later
    ``ElementTree.tostring(tree)`` raised ``TypeError: cannot serialize 5``. The changed items
    of an element's attribute dict are now checked like a new element's (ADR 0066).
    """

    @pytest.mark.parametrize(
        "change", ["context['tree'].set('k', 5)", "context['tree'].attrib['k'] = [1, 2]"]
    )
    def test_a_non_string_attribute_is_refused(self, change: str) -> None:
        """The attempt fails as ``non_serializable_result``; the host's element serializes."""
        tree = ElementTree.Element("root")
        host = Host(memory={"tree": tree})

        result = execute(f"{change}\nresult = 1", host=host)

        assert result.error is not None and result.error.error_type == "non_serializable_result"
        assert ElementTree.tostring(tree) == b"<root />"

    def test_a_value_the_host_stored_may_stay_while_others_change(self) -> None:
        """A non-string the host put there itself is left; a new string attribute commits."""
        tree = ElementTree.Element("root")
        tree.attrib["n"] = [1]
        host = Host(memory={"tree": tree})

        result = execute("context['tree'].set('k', 'v')\nresult = 1", host=host)

        assert (result.error, tree.attrib) == (None, {"n": [1], "k": "v"})
