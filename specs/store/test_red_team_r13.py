"""Red team R13: can a generated program still move the host's stored program's evidence or
lifecycle? (ADRs 0074, 0080, 0081, 0108, 0131, 0132)

A hostile program (a non-host caller: ``delegate`` agents of the host's role, their setters,
the input it hands the host's code, the options it may narrow) ran the host's durable or
probation program along every route out of ``_persistence.run_stored`` and ``_recording.record``
and tried to add failures, guardrail or role-profile verdicts, or take the incumbency. The
specs under "break" fail without their fix (the numbers without it are in each docstring); the
others pin what held, with real agents, and the host's own evidence as the control.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from recurgent import Agent, configure_runtime
from recurgent._lifecycle import _role_continuity
from recurgent._profiles import (
    load_namespace,
    observe_program,
    pressure,
    record_namespace,
    seen_values,
)
from recurgent._store import Store, checksum
from recurgent._store._paths import artifact_path
from specs.store.support import ScriptedModel, host_agent_without_a_model, version_state

#: The host's program: an answer for any number >= 0; for a negative one it reports the outage
#: a real upstream call would (a fetcher's unreachable address), and -2 is a bug it raises.
OUTAGE = (
    "if args[0] == -2:\n"
    "    raise ValueError('negative')\n"
    "if args[0] < 0:\n"
    "    return Outcome.error(error_type='network_error', error_message='unreachable')\n"
    "return args[0] * 2"
)
TRIPLING = "return args[0] * 3"
DOUBLING = "return args[0] * 2"
#: The host's program that calls another agent first (so a deadline that stops it is an
#: upstream's timeout, extrinsic, ADR 0073) and then counts up to its input.
COUNTING = (
    "delegate('clock').tick()\ntotal = 0\nwhile total < args[0]:\n    total += 1\nreturn total"
)
CLOCK = "return 1"
ADD = "context['value'] = context.get('value', 0) + args[0]\nresult = context['value']"
ADD_INT = "context['value'] = context.get('value', 0) + int(args[0])\nresult = context['value']"
SUB_MEMORY = "context['memory'] = context.get('memory', 0) - args[0]\nresult = context['memory']"
SUB_VALUE = "context['value'] = context.get('value', 0) - args[0]\nresult = context['value']"
INC_MEMORY = "context['memory'] = context.get('memory', 0) + 1\nresult = context['memory']"
PROFILE = {"role": "calculator", "version": 1, "constraints": {"accumulator": {}}}


def _host_session(
    root: Path, trace: str, code: str = OUTAGE, method: str = "run", **options: Any
) -> None:
    """The host's own agent answers 0..4 in one session (``trace``)."""
    script = {("calculator", method): code, ("clock", "tick"): CLOCK}
    agent = Agent(
        "calculator",
        provider=ScriptedModel(script),
        toolstore_root=root,
        log=False,
        trace_id=trace,
        **options,
    )
    for number in range(5):
        assert getattr(agent, method)(number).status == "ok"


def _planner(root: Path, program: str, trace: str) -> Agent:
    """A host agent whose generated program builds agents of its own with ``delegate``; its
    model writes nothing for ``calculator`` (a repair request fails, as when the provider is
    down)."""
    script = {("planner", "go"): program, ("clock", "tick"): CLOCK}
    return Agent(
        "planner", provider=ScriptedModel(script), toolstore_root=root, log=False, trace_id=trace
    )


def _artifact(root: Path, method: str = "run") -> dict[str, Any]:
    Store(root).flush()
    return dict(json.loads(artifact_path(root, "calculator", method).read_text()))


def _profile(data: dict[str, Any], code: str) -> tuple[int, int]:
    card = data["scorecards"][checksum(code)]
    return card["role_profile_pass_count"], card["role_profile_fail_count"]


HOST_TRACES = ["session-a", "session-b"]


def _host_sessions(tmp_path: Path, code: str = OUTAGE) -> Path:
    """A store root where the host's own agent answered 0..4 with ``code`` in each of
    :data:`HOST_TRACES`."""
    root = tmp_path / "store"
    for trace in HOST_TRACES:
        _host_session(root, trace, code)
    return root


class TestBreaks:
    """A program's failure of the host's code that the call returned as it is, or a verdict
    its own agent decided, was the host's evidence (each fails without its fix)."""

    def test_an_outage_the_programs_input_causes_is_not_the_hosts_evidence(
        self, tmp_path: Path
    ) -> None:
        """A hostile program calls the host's durable program 24 times (three sessions) with
        input it answers ``network_error`` for: an extrinsic failure is returned as the call's
        answer (no repair), and was recorded under the author of the code that ran, the host.
        Without the fix: 16 failures in two sessions degraded the version (26 calls, rate
        0.62), took its incumbency, and the third session's calls found no program (provider
        errors). With it: every answer is the outage, the version keeps its 10 calls, no
        failure, durable and incumbent."""
        root = _host_sessions(tmp_path)
        program = "return [delegate('calculator').run(-1) for _ in range(8)]"

        answers = [_planner(root, program, f"evil-{n}").go().value for n in range(3)]

        data = _artifact(root)
        assert {(o.status, o.error_type) for batch in answers for o in batch} == {
            ("error", "network_error")
        }
        assert (data["failure_count"], data["extrinsic_failure_count"]) == (0, 0)
        assert version_state(data, OUTAGE) == (10, 0, HOST_TRACES, "durable", True)

    def test_under_enforcement_an_outage_of_the_kept_incumbent_is_not_the_hosts_evidence(
        self, tmp_path: Path
    ) -> None:
        """Under enforcement the host's durable version fails once on its own call and is
        repaired (the repair current, on probation; the durable version the kept incumbent).
        The program's agent runs the incumbent 16 times with input it answers
        ``network_error`` for. Without the fix: the 15th failure degraded the incumbent (26
        calls, 16 failures), the incumbency was gone, and the 16th call ran the host's repair
        instead. With it: every answer is the outage; 11 calls, the host's one failure,
        durable and incumbent."""
        configure_runtime(promotion_enforcement_enabled=True)
        root = _host_sessions(tmp_path)
        host = Agent(
            "calculator",
            provider=ScriptedModel({("calculator", "run"): TRIPLING}),
            toolstore_root=root,
            log=False,
            trace_id="session-c",
        )
        assert host.run(-2).value == -6
        program = "return [delegate('calculator').run(-1) for _ in range(8)]"

        answers = [_planner(root, program, f"evil-{n}").go().value for n in range(2)]

        data = _artifact(root)
        assert {(o.status, o.error_type) for batch in answers for o in batch} == {
            ("error", "network_error")
        }
        assert data["code_checksum"] == checksum(TRIPLING)
        assert version_state(data, OUTAGE) == (11, 1, [*HOST_TRACES, "session-c"], "durable", True)

    def test_a_deadline_the_program_narrowed_is_not_the_hosts_evidence(
        self, tmp_path: Path
    ) -> None:
        """The program narrows its agent's deadline to one second (a child may lower it) and
        hands the host's program, which calls another agent first, a number it counts to for
        longer: the deadline stops it after a forwarded call, an upstream's timeout
        (extrinsic), returned as it is. Without the fix both timeouts were the host's failures
        (12 calls, 2 failures). With it: 10 calls, none."""
        root = _host_sessions(tmp_path, COUNTING)
        program = (
            "agent = delegate('calculator', execution_timeout_seconds=1)\n"
            "return [agent.run(10 ** 9) for _ in range(2)]"
        )

        answers = _planner(root, program, "evil").go().value

        data = _artifact(root)
        assert [(o.status, o.error_type) for o in answers] == [("error", "timeout")] * 2
        assert version_state(data, COUNTING) == (10, 0, HOST_TRACES, "durable", True)

    def test_one_setter_on_the_programs_agent_does_not_hold_the_hosts_version_back(
        self, tmp_path: Path
    ) -> None:
        """Under a role profile (one shared state slot for the role), a program writes
        ``memory`` on its agent of the host's role and then has it run the host's ``add``
        (which keeps ``value``): the guard judges the host's code against the sibling the
        program made, a drift logged in shadow mode on an ok answer. Without the fix the
        verdict went on the host's version: after the host's ten compliant calls over two
        sessions its pass rate was 10 in 11 (below 0.99) and it stayed on probation. With it:
        10 passes, no failure, durable and incumbent (the program's answer still counts: 11
        calls)."""
        root = tmp_path / "store"
        _host_session(root, "session-a", ADD, "add", role_profile=PROFILE)
        program = "agent = delegate('calculator')\nagent.memory = 0\nreturn agent.add(1).value"

        answered = _planner(root, program, "evil").go().value
        _host_session(root, "session-b", ADD, "add")

        data = _artifact(root, "add")
        assert answered == 1
        assert _profile(data, ADD) == (10, 0)
        assert version_state(data, ADD) == (11, 0, ["evil", *HOST_TRACES], "durable", True)


class TestNamespaceBreaks:
    """A program's agent of the host's role writing its own methods decided what the host's
    own calls were judged against (the role's namespace telemetry, ADR 0084); ADR 0133 keeps
    who wrote each method and reads the host's methods alone for the host's evidence (each
    fails without the fix)."""

    def test_a_programs_sibling_does_not_make_the_hosts_own_calls_drift(
        self, tmp_path: Path
    ) -> None:
        """Under a role profile (one shared state slot), a program has its agent of the
        host's role write a method of its own, ``sub``, on ``memory``: the role's telemetry
        then showed a sibling on ``memory`` to the host's own next agent. Without the fix
        every one of the host's five calls of ``add`` in the next session failed the guard
        (5 passes, 5 failures) and its version stayed on probation after ten calls over two
        sessions. With it: 10 passes, durable and incumbent."""
        root = tmp_path / "store"
        _host_session(root, "session-a", ADD, "add", role_profile=PROFILE)
        script = {("planner", "go"): "return delegate('calculator').sub(1).value"}
        script["calculator", "sub"] = SUB_MEMORY
        planner = Agent("planner", provider=ScriptedModel(script), toolstore_root=root, log=False)

        assert planner.go().value == -1
        _host_session(root, "session-b", ADD, "add")

        data = _artifact(root, "add")
        assert _profile(data, ADD) == (10, 0)
        assert version_state(data, ADD) == (10, 0, HOST_TRACES, "durable", True)

    def test_a_programs_siblings_do_not_steer_the_hosts_prompt(self, tmp_path: Path) -> None:
        """A program has its agent of the host's role write two methods on ``memory``; the
        host's own agent then asks for a new method. Without the fix its prompt named the
        program's key as the siblings' (``'memory'``), steering the host's program onto a key
        its own methods do not use. With it: the host's ``'value'``."""
        root = tmp_path / "store"
        _host_session(root, "session-a", ADD, "add", role_profile=PROFILE)
        program = "agent = delegate('calculator')\nreturn [agent.sub(1).value, agent.neg(1).value]"
        script = {("planner", "go"): program}
        script["calculator", "sub"] = script["calculator", "neg"] = SUB_MEMORY
        planner = Agent("planner", provider=ScriptedModel(script), toolstore_root=root, log=False)
        assert planner.go().value == [-1, -2]
        provider = ScriptedModel({("calculator", "increment"): ADD})
        host = Agent("calculator", provider=provider, toolstore_root=root, log=False)

        host.increment(1)

        assert provider.requests[0].system_prompt.endswith(
            "- accumulator: use the memory key the sibling methods use ('value')\n"
        )

    def test_a_programs_version_never_replaces_the_hosts_method_in_the_telemetry(
        self, tmp_path: Path
    ) -> None:
        """The host's ``add`` and ``sub`` keep ``value``; the host's ``inc`` keeps ``memory``
        and fails the guard (0 passes, 3 failures: the control). A program's agent under
        another contract (``purpose``) cannot reuse the host's programs, writes its own
        ``add`` and ``sub`` on ``memory`` (their artifacts refused ``host_written``), and,
        without the fix, their versions replaced the host's entries in the role's telemetry:
        the host's drifting ``inc`` then passed all three calls (3 passes, no failure). With
        it the host's entries stay and ``inc`` fails as before."""
        root = tmp_path / "store"
        script = {("calculator", "add"): ADD, ("calculator", "sub"): SUB_VALUE}
        host = Agent(
            "calculator",
            provider=ScriptedModel(script),
            toolstore_root=root,
            log=False,
            role_profile=PROFILE,
        )
        assert (host.add(1).value, host.sub(1).value) == (1, 0)
        program = (
            "agent = delegate('calculator', purpose='other')\n"
            "return [agent.add(1).value, agent.sub(1).value]"
        )
        script = {("planner", "go"): program}
        script["calculator", "add"] = script["calculator", "sub"] = SUB_MEMORY
        planner = Agent("planner", provider=ScriptedModel(script), toolstore_root=root, log=False)
        assert planner.go().value == [-1, -2]
        provider = ScriptedModel({("calculator", "inc"): INC_MEMORY})
        later = Agent("calculator", provider=provider, toolstore_root=root, log=False)

        answers = [later.inc().value for _ in range(3)]

        methods = load_namespace(root, "calculator")["methods"]
        assert answers == [1, 2, 3]
        assert {name: methods[name]["author"] for name in ("add", "sub")} == {
            "add": "host",
            "sub": "host",
        }
        assert _profile(_artifact(root, "inc"), INC_MEMORY) == (0, 3)

    def test_a_programs_methods_do_not_set_the_hosts_state_key_consistency(
        self, tmp_path: Path
    ) -> None:
        """A program has its agent of the host's role write three methods, each on a key of
        its own; later the host's own call of ``add`` fails once and is repaired (a new host
        version recorded in the role's telemetry). Without the fix the repair was given the
        role's consistency with the program's methods in it, 0.25 (below 0.5): after ten host
        calls over two sessions it stayed on probation. With it: 1.0, durable and incumbent."""
        root = tmp_path / "store"
        script = {
            (
                "planner",
                "go",
            ): "agent = delegate('calculator')\nreturn [agent.m1().value, agent.m2().value, agent.m3().value]"
        }
        for number in (1, 2, 3):
            script["calculator", f"m{number}"] = f"context['k{number}'] = 1\nresult = {number}"
        planner = Agent("planner", provider=ScriptedModel(script), toolstore_root=root, log=False)
        assert planner.go().value == [1, 2, 3]
        _host_session(root, "session-a", ADD, "add")
        host = Agent(
            "calculator",
            provider=ScriptedModel({("calculator", "add"): ADD_INT}),
            toolstore_root=root,
            log=False,
            trace_id="session-b",
        )

        answers = [host.add("2" if number == 0 else 1).status for number in range(5)]
        _role_continuity._RECORDED.clear()  # the next session is a new host process
        _host_session(root, "session-c", ADD_INT, "add")

        data = _artifact(root, "add")
        assert answers == ["ok"] * 5
        assert data["scorecards"][checksum(ADD_INT)]["state_key_consistency_ratio"] == 1.0
        assert version_state(data, ADD_INT) == (10, 0, ["session-b", "session-c"], "durable", True)


class TestControls:
    """The host's own evidence of the same kinds still counts (these pass with and without
    the fixes)."""

    def test_the_hosts_own_outage_counts(self, tmp_path: Path) -> None:
        """The host's own call answered ``network_error``: one extrinsic failure on its
        version (11 calls)."""
        root = _host_sessions(tmp_path)
        agent = host_agent_without_a_model(root, "session-c")

        failed = agent.run(-1)

        data = _artifact(root)
        assert (failed.status, failed.error_type) == ("error", "network_error")
        assert (data["failure_count"], data["extrinsic_failure_count"]) == (1, 1)
        assert version_state(data, OUTAGE)[:2] == (11, 1)

    def test_the_hosts_own_drift_counts(self, tmp_path: Path) -> None:
        """The host's own agent writes ``memory`` and runs its ``add``: the failed verdict is
        its version's (5 passes, 1 failure)."""
        root = tmp_path / "store"
        _host_session(root, "session-a", ADD, "add", role_profile=PROFILE)
        agent = host_agent_without_a_model(root, "session-b")
        agent.memory = 0

        assert agent.add(1).value == 1
        assert _profile(_artifact(root, "add"), ADD) == (5, 1)

    def test_the_hosts_own_sibling_still_makes_its_calls_drift(self, tmp_path: Path) -> None:
        """The host's own ``sub`` on ``memory`` is a sibling the host's ``add`` is judged
        against: its next five calls fail the guard (5 passes, 5 failures), as before."""
        root = tmp_path / "store"
        _host_session(root, "session-a", ADD, "add", role_profile=PROFILE)
        host = Agent(
            "calculator",
            provider=ScriptedModel({("calculator", "sub"): SUB_MEMORY}),
            toolstore_root=root,
            log=False,
        )
        assert host.sub(1).value == -1

        _host_session(root, "session-b", ADD, "add")

        assert _profile(_artifact(root, "add"), ADD) == (5, 5)

    def test_the_namespace_keeps_each_methods_author(self, tmp_path: Path) -> None:
        """``record_namespace`` keeps who wrote each method's version; ``seen_values`` and
        ``pressure`` with ``hosts_only`` leave the program's out, and an entry of unknown
        author (written before authors were kept) in."""
        shape = observe_program("context['value'] = 1")
        other = observe_program("context['memory'] = 1")
        for method, found, author in (
            ("add", shape, "host"),
            ("sub", other, "program"),
            ("mul", shape, None),
        ):
            record_namespace(
                tmp_path,
                "calculator",
                method,
                shape=found,
                checksum=method,
                return_shape=None,
                violations=[],
                author=author,
            )
        record = load_namespace(tmp_path, "calculator")

        assert [entry.get("author") for entry in record["methods"].values()] == [
            "host",
            "program",
            None,
        ]
        assert seen_values(record)["shared_state_slot"] == {
            "add": "value",
            "sub": "memory",
            "mul": "value",
        }
        assert seen_values(record, hosts_only=True)["shared_state_slot"] == {
            "add": "value",
            "mul": "value",
        }
        assert pressure(record, "calculator")["state_key_consistency_ratio"] == 0.6667
        assert pressure(record, "calculator", hosts_only=True)["state_key_consistency_ratio"] == 1.0


class TestHeld:
    """Routes that already counted nothing for the host, and the intended policy."""

    @pytest.mark.parametrize("error_type", ["low_utility", "parse_failed", "wrong_tool_boundary"])
    def test_a_taxonomy_error_the_hosts_code_returns_counts_for_nothing(
        self, tmp_path: Path, error_type: str
    ) -> None:
        """The host's code returns a failure of the tool vocabulary for the program's input
        (adaptive: a repair is asked, and fails): 8 such calls leave 10 calls, no failure, no
        wrong-boundary count, durable and incumbent."""
        code = (
            "if args[0] < 0:\n"
            f"    return Outcome.error(error_type={error_type!r}, error_message='no')\n"
            "return args[0] * 2"
        )
        root = _host_sessions(tmp_path, code)
        program = "return [delegate('calculator').run(-1) for _ in range(8)]"

        answers = _planner(root, program, "evil").go().value

        data = _artifact(root)
        assert {(o.status, o.error_type) for o in answers} == {("error", "provider")}
        assert data["scorecards"][checksum(code)]["wrong_boundary_count"] == 0
        assert version_state(data, code) == (10, 0, HOST_TRACES, "durable", True)

    def test_an_outage_the_repair_returns_is_refused_with_the_hosts_failure(
        self, tmp_path: Path
    ) -> None:
        """The host's code raises for the program's input; the model's repair answers
        ``network_error`` (``after_repair`` returns an extrinsic failure as it is). The
        repaired program is the program's, so the write is refused ``host_written`` and the
        host's failure with it: 10 calls, no failure, durable and incumbent."""
        root = _host_sessions(tmp_path)
        repair = "return Outcome.error(error_type='network_error', error_message='down')"
        script = {("planner", "go"): "return [delegate('calculator').run(-2) for _ in range(4)]"}
        script["calculator", "run"] = repair
        planner = Agent(
            "planner", provider=ScriptedModel(script), toolstore_root=root, log=False, trace_id="e"
        )

        answers = planner.go().value

        data = _artifact(root)
        assert {(o.status, o.error_type) for o in answers} == {("error", "network_error")}
        assert (data["failure_count"], data["code_checksum"]) == (0, checksum(OUTAGE))
        assert version_state(data, OUTAGE) == (10, 0, HOST_TRACES, "durable", True)

    def test_a_stalled_timeout_is_repaired_and_counts_for_nothing(self, tmp_path: Path) -> None:
        """The program narrows its agent's deadline to one second and hands the host's
        program (which waits on nothing outside it) a number it counts to for longer: the
        stall is intrinsic (ADR 0073), a repair is asked and fails; the host's version keeps
        10 calls and no failure."""
        counting = "total = 0\nwhile total < args[0]:\n    total += 1\nreturn total"
        root = _host_sessions(tmp_path, counting)
        program = (
            "agent = delegate('calculator', execution_timeout_seconds=1)\n"
            "return [agent.run(10 ** 9) for _ in range(2)]"
        )

        answers = _planner(root, program, "evil").go().value

        data = _artifact(root)
        assert [(o.status, o.error_type) for o in answers] == [("error", "provider")] * 2
        assert version_state(data, counting) == (10, 0, HOST_TRACES, "durable", True)

    def test_a_domain_error_the_programs_input_causes_is_an_answer(self, tmp_path: Path) -> None:
        """The intended policy (ADR 0037, 0074): a domain error the host's code returns for a
        program's input is an answer and counts for the host's version like any answer (13
        calls, 3 domain errors, no failure)."""
        code = (
            "if args[0] < 0:\n"
            "    return Outcome.error(error_type='negative_input', error_message='no')\n"
            "return args[0] * 2"
        )
        root = _host_sessions(tmp_path, code)
        program = "return [delegate('calculator').run(-1) for _ in range(3)]"

        answers = _planner(root, program, "evil").go().value

        data = _artifact(root)
        assert {(o.status, o.error_type) for o in answers} == {("error", "negative_input")}
        assert data["scorecards"][checksum(code)]["domain_errors"] == 3
        assert version_state(data, code) == (13, 0, ["evil", *HOST_TRACES], "durable", True)

    def test_under_enforcement_a_host_call_never_runs_a_programs_durable_incumbent(
        self, tmp_path: Path
    ) -> None:
        """A program's agent made its own ``calculator.run`` durable first (10 calls, two
        sessions, incumbent). The host's own agent never runs it (ADR 0074): its three calls
        are answered by its own program, which becomes the record's code (the host's, on
        probation), and a program's later calls still run their incumbent."""
        configure_runtime(promotion_enforcement_enabled=True)
        root = tmp_path / "store"
        program = "return [delegate('calculator').run(n).value for n in range(5)]"
        script = {("planner", "go"): program, ("calculator", "run"): DOUBLING}
        for trace in ("p1", "p2"):
            planner = Agent(
                "planner",
                provider=ScriptedModel(script),
                toolstore_root=root,
                log=False,
                trace_id=trace,
            )
            assert planner.go().value == [0, 2, 4, 6, 8]
        host = Agent(
            "calculator",
            provider=ScriptedModel({("calculator", "run"): TRIPLING}),
            toolstore_root=root,
            log=False,
            trace_id="h",
        )

        answers = [host.run(number).value for number in range(3)]
        later = _planner(root, program, "p3").go().value

        data = _artifact(root)
        assert (answers, later) == ([0, 3, 6], [0, 2, 4, 6, 8])
        assert (data["author"], data["code_checksum"]) == ("host", checksum(TRIPLING))
        assert version_state(data, TRIPLING) == (3, 0, ["h"], "probation", False)
        assert version_state(data, DOUBLING) == (15, 0, ["p1", "p2", "p3"], "durable", True)

    def test_a_programs_answer_in_another_session_completes_the_hosts_gate(
        self, tmp_path: Path
    ) -> None:
        """The policy as it stands (ADRs 0074, 0080; R11's held specs): a program's answers of
        the host's code count for it, sessions included. The host's ten calls in one session
        leave its version on probation (``min_sessions``); one answer of a program's agent in
        another session makes it durable and incumbent. docs/security.md (R13) lists this as
        a question for the policy, not a break."""
        root = tmp_path / "store"
        host = Agent(
            "calculator",
            provider=ScriptedModel({("calculator", "run"): DOUBLING}),
            toolstore_root=root,
            log=False,
            trace_id="h",
        )
        assert [host.run(number).value for number in range(10)] == list(range(0, 20, 2))
        before = version_state(_artifact(root), DOUBLING)

        answered = _planner(root, "return delegate('calculator').run(1).value", "p").go().value

        assert (before, answered) == ((10, 0, ["h"], "probation", False), 2)
        assert version_state(_artifact(root), DOUBLING) == (11, 0, ["h", "p"], "durable", True)
