"""Persistence in calls: stored programs answer with no provider request, repair, regenerate."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from recurgent import Agent
from recurgent._lifecycle import _persistence
from recurgent._store import Store, checksum
from recurgent._store._paths import artifact_path, default_root
from recurgent.testing import ScriptedProvider, read_log
from specs.store.support import ScriptedModel

ADD = "context['value'] = context.get('value', 0) + args[0]\nreturn context['value']"
DIVIDE = "context['seen'] = args[0]\nreturn 100 // args[0]"
CHECKED_DIVIDE = (
    "if args[0] == 0:\n"
    "    return Outcome.error(error_type='division_by_zero', error_message='zero')\n"
    "return 100 // args[0]"
)
FLAKY_UPSTREAM = (
    "if args[0] == 0:\n"
    "    return Outcome.error(error_type='timeout', error_message='upstream slow', retriable=True)\n"
    "return 100 // args[0]"
)
LOG_FIELDS = (
    "program_source",
    "artifact_hit",
    "generation_attempt",
    "cacheable",
    "cacheability_reason",
    "repair_attempted",
    "repair_succeeded",
    "artifact_lookup",
)


def _agent(
    replies: Any, root: Path, log: Path | None = None, role: str = "calculator", **options: Any
) -> tuple[Agent, ScriptedProvider]:
    # A stand-in for a real model: these specs are about reuse and repair, not test doubles.
    provider = ScriptedModel(replies if isinstance(replies, dict) else {"run": replies})
    agent = Agent(role, provider=provider, log=log or False, toolstore_root=root, **options)
    return agent, provider


def _fields(entry: dict[str, Any]) -> tuple[Any, ...]:
    return tuple(entry[name] for name in LOG_FIELDS)


def _artifact(root: Path, method: str, role: str = "calculator") -> dict[str, Any]:
    # Counts of persisted runs wait in this process until a flush (ADR 0055).
    Store(root).flush()
    return dict(json.loads(artifact_path(root, role, method).read_text("utf-8")))


class TestReuse:
    """A cacheable stored program answers later calls with other arguments."""

    def test_second_call_reuses_with_no_request(self, tmp_path: Path, log_path: Path) -> None:
        """add(5) generates, add(3) runs the stored program: one request, values 5 and 8."""
        calc, provider = _agent({"add": ADD}, tmp_path / "store", log_path)

        values = [calc.add(5).value, calc.add(3).value]

        assert (values, provider.calls) == ([5, 8], 1)
        first, second = read_log(log_path)
        assert _fields(first) == (
            "generated",
            False,
            1,
            True,
            "stable_method_default",
            False,
            None,
            "missing",
        )
        assert _fields(second) == (
            "persisted",
            True,
            0,
            True,
            "stable_method_default",
            False,
            None,
            "hit",
        )
        assert first["artifact_checksum"] == second["artifact_checksum"] == checksum(ADD)
        assert (first["artifact_write"], second["artifact_write"]) == ("written", "deferred")

    def test_a_new_agent_on_the_same_root_reuses(self, tmp_path: Path) -> None:
        """A second agent (another trace) makes no request and counts both calls."""
        root = tmp_path / "store"
        _agent({"add": ADD}, root)[0].add(5)
        warm, provider = _agent({"add": ADD}, root)

        assert (warm.add(7).value, provider.calls) == (7, 0)
        stored = _artifact(root, "add")
        assert (stored["success_count"], stored["last_program_source"]) == (2, "persisted")

    def test_input_baked_code_is_stored_but_not_reused(
        self, tmp_path: Path, log_path: Path
    ) -> None:
        """Code holding the literal argument is regenerated for the next call."""
        calc, provider = _agent({"sqrt": "return 32 ** 0.5"}, tmp_path / "store", log_path)

        calc.sqrt(32)
        calc.sqrt(32)

        assert provider.calls == 2
        assert [
            (e["cacheable"], e["cacheability_reason"], e["artifact_lookup"])
            for e in read_log(log_path)
        ] == [
            (False, "input_baked_code", "missing"),
            (False, "input_baked_code", "not_cacheable"),
        ]

    def test_ask_is_never_reused(self, tmp_path: Path) -> None:
        """ask() generates on every call even with code that reads args."""
        agent, provider = _agent({"ask": "return 'answer to ' + args[0]"}, tmp_path / "s", role="a")

        agent.ask("Google")
        agent.ask("Yahoo")

        assert provider.calls == 2
        assert _artifact(tmp_path / "s", "ask", role="a")["cacheability_reason"] == (
            "dynamic_dispatch_method"
        )

    def test_persistence_off_writes_nothing(self, tmp_path: Path, log_path: Path) -> None:
        """toolstore_root=None: two requests, no store directory, lookup persistence_off."""
        provider = ScriptedProvider({"add": ADD})
        calc = Agent("calculator", provider=provider, log=log_path, toolstore_root=None)

        calc.add(1)
        calc.add(2)

        assert provider.calls == 2
        assert not default_root().exists()
        assert [e["artifact_lookup"] for e in read_log(log_path)] == ["persistence_off"] * 2
        assert read_log(log_path)[0]["cacheable"] is True

    def test_default_root_follows_the_environment(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Without the option, RECURGENT_TOOLSTORE_ROOT is the root (of an agent whose provider
        is not a test double; a double's agent writes nowhere, ADR 0077)."""
        monkeypatch.setenv("RECURGENT_TOOLSTORE_ROOT", str(tmp_path / "env-root"))
        Agent("calculator", provider=ScriptedProvider({"add": ADD}), log=False).add(1)
        assert (tmp_path / "env-root").exists() is False

        Agent("calculator", provider=ScriptedModel({"add": ADD}), log=False).add(1)

        assert artifact_path(tmp_path / "env-root", "calculator", "add").is_file()

    def test_a_tampered_program_is_quarantined_not_run(
        self, tmp_path: Path, log_path: Path
    ) -> None:
        """Code edited without its checksum is moved aside and the call regenerates."""
        root = tmp_path / "store"
        _agent({"add": ADD}, root)[0].add(1)
        path = artifact_path(root, "calculator", "add")
        data = json.loads(path.read_text("utf-8"))
        data["code"] = "return 'owned'"
        path.write_text(json.dumps(data), "utf-8")
        warm, provider = _agent({"add": ADD}, root, log_path)

        assert (warm.add(4).value, provider.calls) == (4, 1)
        assert read_log(log_path)[0]["artifact_lookup"] == "checksum_mismatch"
        assert len(list(path.parent.glob("*.corrupt-*"))) == 1

    def test_a_program_that_never_answered_is_regenerated(self, tmp_path: Path) -> None:
        """A stored program whose only run failed is not run again: the next call generates."""
        root = tmp_path / "store"
        failing = "return Outcome.error(error_type='low_utility', error_message='empty')"
        _agent({"run": [failing, failing]}, root)[0].run()
        warm, provider = _agent({"run": "return 'fine'"}, root)

        assert (warm.run().value, provider.calls) == ("fine", 1)
        assert [r.purpose for r in provider.requests] == ["generate"]


class TestPreparedOnce:
    """A stored program is screened and compiled once per record read, not on every reuse."""

    def test_reuses_of_one_record_prepare_once(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """Three persisted calls prepare the stored code once; a rewritten file is prepared again."""
        prepared: list[str] = []
        real = _persistence._prepare

        def counting(code: str, dependencies: Any, method: str) -> Any:
            prepared.append(code)
            return real(code, dependencies, method)

        monkeypatch.setattr(_persistence, "_prepare", counting)
        root = tmp_path / "store"
        calc, _ = _agent({"add": ADD}, root)
        calc.add(1)
        values = [calc.add(2).value, calc.add(3).value, calc.add(4).value]
        path = artifact_path(root, "calculator", "add")
        Store(root).flush()  # the waiting counts are written: a new file, a new record
        calc.add(5)

        assert values == [3, 6, 10]
        assert prepared == [ADD, ADD]
        assert path.exists()


class TestRepair:
    """A failing stored program is repaired once, then regenerated."""

    def _seed(self, root: Path, code: str = DIVIDE) -> None:
        agent, _ = _agent({"divide": code}, root)
        assert agent.divide(4).value == 25

    def test_intrinsic_failure_is_repaired(self, tmp_path: Path, log_path: Path) -> None:
        """divide(0) raises in the stored program; one repair request fixes it."""
        root = tmp_path / "store"
        self._seed(root)
        fixed = "if args[0] == 0:\n    return 0\nreturn 100 // args[0]"
        calc, provider = _agent({"divide": fixed}, root, log_path)

        outcome = calc.divide(0)

        assert (outcome.value, [r.purpose for r in provider.requests]) == (0, ["repair"])
        entry = read_log(log_path)[0]
        assert _fields(entry) == (
            "repaired",
            False,
            1,
            True,
            "stable_method_default",
            True,
            True,
            "hit",
        )
        assert (entry["failure_class"], entry["artifact_checksum"]) == (
            "intrinsic",
            checksum(fixed),
        )
        stored = _artifact(root, "divide")
        assert (stored["repair_count_since_regen"], stored["code"]) == (1, fixed)
        assert stored["history"][0]["trigger"] == "repair:intrinsic_failure"

    def test_repair_prompt_names_the_code_and_the_failure(self, tmp_path: Path) -> None:
        """The repair request carries the stored code, the failure class and message."""
        root = tmp_path / "store"
        self._seed(root)
        calc, provider = _agent({"divide": "return 0"}, root)

        calc.divide(0)

        user = provider.requests[0].user_prompt
        assert "<existing_code>\n" + DIVIDE + "\n</existing_code>" in user
        assert "<failure_class>intrinsic</failure_class>" in user
        assert "ZeroDivisionError" in user
        assert "<contract_fingerprint>none</contract_fingerprint>" in user

    def test_failed_repair_falls_through_to_generation(
        self, tmp_path: Path, log_path: Path
    ) -> None:
        """A repair that fails too is followed by a fresh generation."""
        root = tmp_path / "store"
        self._seed(root)
        calc, provider = _agent({"divide": [DIVIDE, "return 'fresh'"]}, root, log_path)

        outcome = calc.divide(0)

        assert outcome.value == "fresh"
        assert [r.purpose for r in provider.requests] == ["repair", "generate"]
        entry = read_log(log_path)[0]
        assert (entry["program_source"], entry["artifact_hit"], entry["repair_attempted"]) == (
            "generated",
            False,
            True,
        )
        assert entry["repair_succeeded"] is False
        assert _artifact(root, "divide")["repair_count_since_regen"] == 0

    def test_three_repairs_then_generation(self, tmp_path: Path) -> None:
        """With three repairs since the last generation, a failure regenerates at once."""
        root = tmp_path / "store"
        self._seed(root)
        path = artifact_path(root, "calculator", "divide")
        data = json.loads(path.read_text("utf-8"))
        data["repair_count_since_regen"] = 3
        path.write_text(json.dumps(data), "utf-8")
        calc, provider = _agent({"divide": "return 'fresh'"}, root)

        assert calc.divide(0).value == "fresh"
        assert [r.purpose for r in provider.requests] == ["generate"]
        assert "<existing_code>" not in provider.requests[0].user_prompt

    def test_memory_writes_of_the_failed_run_are_rolled_back(self, tmp_path: Path) -> None:
        """The stored run's write is undone before the repaired program runs."""
        root = tmp_path / "store"
        self._seed(root)
        calc, _ = _agent({"divide": "return 'fixed'"}, root)
        calc.seen = "before"

        assert calc.divide(0).value == "fixed"
        assert calc.seen == "before"

    def test_extrinsic_failure_comes_back_as_it_is(self, tmp_path: Path, log_path: Path) -> None:
        """A stored program's timeout outcome is returned with no request."""
        root = tmp_path / "store"
        self._seed(root, FLAKY_UPSTREAM)
        calc, provider = _agent({"divide": "return 0"}, root, log_path)

        outcome = calc.divide(0)

        assert (outcome.error_type, provider.calls) == ("timeout", 0)
        entry = read_log(log_path)[0]
        assert (entry["program_source"], entry["artifact_hit"], entry["failure_class"]) == (
            "persisted",
            True,
            "extrinsic",
        )
        assert _artifact(root, "divide")["extrinsic_failure_count"] == 1

    def test_domain_error_is_an_answer(self, tmp_path: Path, log_path: Path) -> None:
        """division_by_zero returned on purpose: no repair, counted as an answer."""
        root = tmp_path / "store"
        self._seed(root, CHECKED_DIVIDE)
        calc, provider = _agent({"divide": "return 0"}, root, log_path)

        outcome = calc.divide(0)

        assert (outcome.error_type, provider.calls) == ("division_by_zero", 0)
        assert read_log(log_path)[0]["repair_attempted"] is False
        stored = _artifact(root, "divide")
        assert (stored["success_count"], stored["failure_count"]) == (2, 0)
        assert stored["domain_error_count"] == 1


class TestTools:
    """Delegated tools: registry across agents, the same child per parent, programs reused."""

    CONTRACT = "purpose='convert units', deliverable={'type': 'number'}"

    def test_tool_programs_are_reused_within_one_parent_call(self, tmp_path: Path) -> None:
        """Three conversions through one tool cost one generation for the tool."""
        code = (
            f"h = delegate('converter', {self.CONTRACT})\n"
            "return [h.convert(v).value for v in args[0]]"
        )
        parent, provider = _agent(
            {("builder", "run"): code, ("converter", "convert"): "return args[0] * 2"},
            tmp_path / "store",
            role="builder",
        )

        assert parent.run([1, 2, 3]).value == [2, 4, 6]
        assert len(provider.requests_for("convert", role="converter")) == 1

    def test_tool_returns_the_same_child_and_its_memory(self, tmp_path: Path) -> None:
        """Memory set through a handle is there at the tool's next call."""
        parent, provider = _agent(
            {
                ("builder", "setup"): (
                    f"h = delegate('converter', {self.CONTRACT})\nh.precision = 2\nreturn 'ok'"
                ),
                ("builder", "precision"): "return tool('converter').precision",
            },
            tmp_path / "store",
            role="builder",
        )

        parent.setup()

        assert parent.precision().value == 2
        assert parent.tool("converter") is parent.tool("converter")
        assert parent.tool("converter").precision == 2
        assert provider.calls == 2

    def test_a_kept_child_remembers_its_options_by_digest(self, tmp_path: Path) -> None:
        """A child made with 70,000 characters of options is kept under a 64-character key
        (not the options' text, for the agent's lifetime); the same options find the same
        child, other options make another (kept from then on)."""
        long_purpose = "convert units " * 5_000
        parent, provider = _agent(
            {
                ("builder", "setup"): (
                    f"a = delegate('converter', purpose={long_purpose!r})\n"
                    f"b = delegate('converter', purpose={long_purpose!r})\n"
                    "a.precision = 2\n"
                    "c = delegate('converter', purpose='something else')\n"
                    "c.precision = 5\n"
                    "return [b.precision, c.precision]"
                ),
            },
            tmp_path / "store",
            role="builder",
        )

        outcome = parent.setup()

        key, child = parent._agent.children["converter"]
        assert (outcome.value, len(key), child.precision, provider.calls) == ([2, 5], 64, 5, 1)

    def test_registry_is_hydrated_into_a_new_agent(self, tmp_path: Path) -> None:
        """A tool delegated by one agent is known, with its contract, to the next."""
        root = tmp_path / "store"
        first = Agent("builder", provider=ScriptedProvider({}), log=False, toolstore_root=root)
        first.delegate("converter", purpose="convert units", deliverable={"type": "number"})

        later = Agent("other", provider=ScriptedProvider({}), log=False, toolstore_root=root)
        child = later.tool("converter")

        assert later.runtime_context["tools"]["converter"]["purpose"] == "convert units"
        assert child._agent.options.contract is not None
        assert child._agent.options.contract["deliverable"] == {"type": "number"}
        assert Store(root).registry_entries()["converter"]["purpose"] == "convert units"

    def test_calls_through_a_tool_count_in_the_store(self, tmp_path: Path) -> None:
        """A call a registered tool serves is counted in registry.json."""
        root = tmp_path / "store"
        parent, _ = _agent(
            {
                ("builder", "run"): f"return delegate('converter', {self.CONTRACT}).convert(2)",
                ("converter", "convert"): "return args[0] * 2",
            },
            root,
            role="builder",
        )

        parent.run()
        Store(root).flush()

        entry = Store(root).registry_entries()["converter"]
        assert (entry["usage_count"], entry["success_count"], entry["methods"]) == (
            1,
            1,
            ["convert"],
        )

    def test_delegates_inherit_the_root(self, tmp_path: Path) -> None:
        """A child delegated by code stores its programs under its parent's root."""
        root = tmp_path / "store"
        code = f"h = delegate('converter', {self.CONTRACT})\nreturn h.convert(2)"
        parent, _ = _agent(
            {("builder", "run"): code, ("converter", "convert"): "return args[0] * 2"},
            root,
            role="builder",
        )

        assert parent.run().value == 4
        assert parent.tool("converter")._agent.options.toolstore_root == root
        assert artifact_path(root, "converter", "convert").is_file()

    def test_code_cannot_choose_the_root(self, tmp_path: Path) -> None:
        """``toolstore_root`` from generated code is refused like every host-only option."""
        root = tmp_path / "store"
        elsewhere = tmp_path / "elsewhere"
        code = (
            f"h = delegate('converter', {self.CONTRACT}, toolstore_root={str(elsewhere)!r})\n"
            "return h.convert(2)"
        )
        parent, _ = _agent(
            {("builder", "run"): code, ("converter", "convert"): "return args[0] * 2"},
            root,
            role="builder",
        )

        outcome = parent.run()

        assert (outcome.error_type, outcome.metadata["guardrail_subtype"]) == (
            "guardrail_retry_exhausted",
            "delegate_option_refused",
        )
        assert not elsewhere.exists()


class TestOption:
    """toolstore_root: a path, None, or the default root; inherited, never overridden."""

    def test_values(self, tmp_path: Path) -> None:
        """Unset is the default root, None is off, a str is a path; other values are refused."""
        from recurgent._options import parse_options
        from recurgent.errors import UsageError

        assert parse_options({}).toolstore_root == default_root()
        assert parse_options({"toolstore_root": None}).toolstore_root is None
        assert parse_options({"toolstore_root": str(tmp_path)}).toolstore_root == tmp_path
        with pytest.raises(UsageError, match="toolstore_root must be a path or None, got 3"):
            parse_options({"toolstore_root": 3})

    def test_a_test_double_has_no_default_root(self, tmp_path: Path) -> None:
        """A double as provider: unset is off (the environment's root too); an explicit root is
        kept; a delegate resolves a default root again instead of inheriting it (ADR 0077)."""
        from recurgent._options import parse_options

        double = ScriptedProvider({})
        assert parse_options({"provider": double}).toolstore_root is None
        explicit = parse_options({"provider": double, "toolstore_root": tmp_path})
        assert (explicit.toolstore_root, explicit.toolstore_root_explicit) == (tmp_path, True)
        real = parse_options({"provider": ScriptedModel({})})
        assert (real.toolstore_root, real.toolstore_root_explicit) == (default_root(), False)
        assert "toolstore_root" not in real.for_delegate({})
        child = parse_options({**real.for_delegate({}), "provider": double})
        assert (child.toolstore_root, child.toolstore_root_explicit) == (None, False)

    def test_delegates_inherit_and_cannot_override(self, tmp_path: Path) -> None:
        """for_delegate keeps the parent's root, even when the override names another."""
        from recurgent._options import parse_options

        parent = parse_options({"toolstore_root": tmp_path})
        assert parent.for_delegate({"toolstore_root": "/elsewhere"})["toolstore_root"] == tmp_path
        off = parse_options({"toolstore_root": None})
        assert off.for_delegate({"toolstore_root": str(tmp_path)})["toolstore_root"] is None


class TestNoExtraTrust:
    """A stored program passes the same policy as a fresh one; a repair needs the provider."""

    def _store(self, root: Path, code: str) -> None:
        from recurgent._lifecycle._persistence import runtime_version
        from recurgent._store import Cacheability, CallRecord

        record = CallRecord(
            role="calculator",
            method="run",
            code=code,
            dependencies=[],
            contract_fingerprint="none",
            prompt_version="p",
            runtime_version=runtime_version(),
            model="m",
            cacheability=Cacheability(True, "stable_method_default", False),
            source="generated",
            result="ok",
            author="host",
        )
        assert Store(root).record_call(record).written

    def test_a_stored_program_breaking_the_policy_never_runs(
        self, tmp_path: Path, log_path: Path
    ) -> None:
        """An intact stored 'import os' is refused by the sandbox, rolled back and repaired."""
        root = tmp_path / "store"
        self._store(root, "import os\nreturn os.getcwd()")
        calc, provider = _agent("return 'safe'", root, log_path)

        assert calc.run().value == "safe"
        assert [r.purpose for r in provider.requests] == ["repair"]
        failure = read_log(log_path)[0]["attempt_failures"][0]
        assert (failure["stage"], failure["error_class"]) == ("persisted", "ExecutionError")
        assert "import of 'os' is not allowed in the sandbox" in failure["error_message"]

    def test_provider_down_during_repair_ends_the_call(self, tmp_path: Path) -> None:
        """With no provider to repair it, the call returns the provider error at once."""
        root = tmp_path / "store"
        self._store(root, "return 100 // args[0]")
        calc, provider = _agent({"other": "return 1"}, root)

        outcome = calc.run(0)

        assert (outcome.error_type, [r.purpose for r in provider.requests]) == (
            "provider",
            ["repair", "repair"],
        )
