"""registry.json follows the attempt: a rolled-back one leaves no registration or use (ADR 0056)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from recurgent import Agent
from recurgent._journal import Journal, after_commit
from recurgent._store import Store
from recurgent._store._paths import registry_path
from recurgent.providers import ProviderRequest
from recurgent.testing import FunctionProvider, ScriptedProvider

CONTRACT = "purpose='convert units', deliverable={'type': 'number'}"
DELEGATE_THEN_FAIL = f"h = delegate('converter', {CONTRACT})\nraise ValueError('boom')"
DELEGATE_AND_USE = f"h = delegate('converter', {CONTRACT})\nreturn h.convert(2)"
USE_THEN_FAIL = f"h = delegate('converter', {CONTRACT})\nh.convert(2)\nraise ValueError('boom')"


def _on_disk(root: Path) -> dict[str, Any]:
    path = registry_path(root)
    if not path.exists():
        return {}
    tools = json.loads(path.read_text("utf-8"))["tools"]
    return dict(tools)


class TestRegistration:
    """A tool is written to registry.json only by an attempt that commits."""

    def test_a_failed_attempt_leaves_no_registration_and_the_retry_registers(
        self, tmp_path: Path
    ) -> None:
        """Attempt 1 delegates converter and raises: not on disk when attempt 2 is generated;
        attempt 2 delegates it and answers: registered once."""
        root = tmp_path / "store"
        seen_at_retry: list[dict[str, Any]] = []
        builder_requests: list[ProviderRequest] = []

        def reply(request: ProviderRequest) -> str:
            if request.role == "converter":
                return "return args[0] * 2"
            builder_requests.append(request)
            if len(builder_requests) == 1:
                return DELEGATE_THEN_FAIL
            seen_at_retry.append(_on_disk(root))
            return DELEGATE_AND_USE

        provider = FunctionProvider(reply)
        builder = Agent("builder", provider=provider, log=False, toolstore_root=root)

        outcome = builder.run()

        assert (outcome.value, seen_at_retry) == (4, [{}])
        entry = _on_disk(root)["converter"]
        assert (entry["purpose"], entry["registration_count"]) == ("convert units", 1)

    def test_a_call_that_fails_for_good_registers_nothing(self, tmp_path: Path) -> None:
        """Every attempt delegates and raises: registry.json is never written."""
        root = tmp_path / "store"
        provider = ScriptedProvider({("builder", "run"): DELEGATE_THEN_FAIL})
        builder = Agent(
            "builder",
            provider=provider,
            log=False,
            toolstore_root=root,
            max_generation_attempts=2,
        )

        outcome = builder.run()

        assert outcome.is_error
        assert (
            registry_path(root).exists(),
            "converter" in builder.runtime_context.get("tools", {}),
        ) == (
            False,
            False,
        )

    def test_a_tool_registered_once_is_not_rewritten_per_call(self, tmp_path: Path) -> None:
        """Two calls delegating the same tool: one registration on disk."""
        root = tmp_path / "store"
        provider = ScriptedProvider(
            {("builder", "run"): DELEGATE_AND_USE, ("converter", "convert"): "return args[0] * 2"}
        )
        builder = Agent("builder", provider=provider, log=False, toolstore_root=root)

        values = [builder.run().value, builder.run().value]

        assert (values, _on_disk(root)["converter"]["registration_count"]) == ([4, 4], 1)

    def test_host_delegation_registers_at_once(self, tmp_path: Path) -> None:
        """delegate() called by the host (no attempt running) writes the registration now."""
        root = tmp_path / "store"
        builder = Agent("builder", provider=ScriptedProvider({}), log=False, toolstore_root=root)

        builder.delegate("converter", purpose="convert units")

        assert _on_disk(root)["converter"]["purpose"] == "convert units"


class TestToolWithoutPurpose:
    """The registry's ``purpose unavailable`` placeholder is not a contract (ADR 0074)."""

    def _delegated_without_purpose(self, root: Path) -> None:
        provider = ScriptedProvider(
            {
                ("builder", "run"): "return delegate('doubler').double(args[0]).value",
                ("doubler", "double"): "return args[0] * 2",
            }
        )
        Agent("builder", provider=provider, log=False, toolstore_root=root).run(2)

    def test_tool_reuses_its_programs_in_a_new_agent(self, tmp_path: Path) -> None:
        """``tool('doubler')`` in a later agent runs the stored program: 10, no request, and
        its contract has no purpose (the same fingerprint, ``none``, as when it was made). The
        later agent's double has the same script for the tool (ADR 0077)."""
        root = tmp_path / "store"
        self._delegated_without_purpose(root)
        provider = ScriptedProvider({("doubler", "double"): "return args[0] * 2"})
        doubler = Agent("other", provider=provider, log=False, toolstore_root=root).tool("doubler")

        assert (doubler.double(5).value, provider.calls) == (10, 0)
        assert (doubler._agent.options.contract or {}).get("purpose") is None
        assert _on_disk(root)["doubler"]["purpose"] == "purpose unavailable"

    def test_a_purpose_given_to_tool_is_kept(self, tmp_path: Path) -> None:
        """``tool(name, purpose=...)`` from the caller is a contract like any other."""
        root = tmp_path / "store"
        self._delegated_without_purpose(root)
        agent = Agent("other", provider=ScriptedProvider({}), log=False, toolstore_root=root)

        doubler = agent.tool("doubler", purpose="double numbers")

        assert doubler._agent.options.contract is not None
        assert doubler._agent.options.contract["purpose"] == "double numbers"


class TestUses:
    """A call through a tool counts on disk only when the attempt that made it commits."""

    def test_uses_in_a_rolled_back_attempt_are_not_counted(self, tmp_path: Path) -> None:
        """Attempt 1 uses converter then raises; attempt 2 uses it and answers: one use."""
        root = tmp_path / "store"
        provider = ScriptedProvider(
            {
                ("builder", "run"): [USE_THEN_FAIL, DELEGATE_AND_USE],
                ("converter", "convert"): "return args[0] * 2",
            }
        )
        builder = Agent("builder", provider=provider, log=False, toolstore_root=root)

        outcome = builder.run()
        Store(root).flush()

        entry = _on_disk(root)["converter"]
        assert outcome.value == 4
        assert (entry["usage_count"], entry["success_count"], entry["methods"]) == (
            1,
            1,
            ["convert"],
        )
        memory_entry = builder.runtime_context["tools"]["converter"]
        assert memory_entry["usage_count"] == 1


class TestAfterCommitHook:
    """The journal's hook: actions run when the attempt's writes are applied, never on discard."""

    def test_actions_run_on_commit_in_order(self) -> None:
        """Two actions registered in an attempt run, in order, when its writes are applied."""
        memory: dict[str, Any] = {}
        journal = Journal(memory)
        ran: list[str] = []
        token = journal.activate()
        try:
            registered = [
                after_commit(memory, lambda: ran.append("first")),
                after_commit(memory, lambda: ran.append("second")),
            ]
        finally:
            Journal.deactivate(token)
        writes = journal.prepare(lambda value, where, *, resolve, depth=0, heights=None: value)
        before = list(ran)

        writes.apply(memory)

        assert (registered, before, ran, writes.empty) == (
            [True, True],
            [],
            ["first", "second"],
            False,
        )

    def test_discarded_attempt_runs_nothing_and_no_attempt_means_now(self) -> None:
        """Rollback drops the actions; outside an attempt after_commit says so (False)."""
        memory: dict[str, Any] = {}
        journal = Journal(memory)
        ran: list[str] = []
        token = journal.activate()
        try:
            after_commit(memory, lambda: ran.append("dropped"))
        finally:
            Journal.deactivate(token)
        journal.discard()
        writes = journal.prepare(lambda value, where, *, resolve, depth=0, heights=None: value)
        writes.apply(memory)

        assert (ran, writes.empty, after_commit(memory, lambda: None)) == ([], True, False)
