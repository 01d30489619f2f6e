"""The Agent's reserved proposal methods: never a provider request, never a log line, never an
assignment target; in memory without a store; shared through one (ADR 0086)."""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Any

import pytest

from recurgent import Agent
from recurgent._sandbox._forwarding import RUNNING
from recurgent.errors import GuardrailViolationError, UsageError
from recurgent.testing import ScriptedProvider, read_log

METHODS = (
    "propose",
    "proposals",
    "proposal",
    "approve_proposal",
    "reject_proposal",
    "apply_proposal",
)


class TestReservedMethods:
    """The six methods are the Agent's own, not dynamic calls."""

    def test_the_whole_flow_makes_no_request_and_writes_no_log_line(
        self, tmp_path: Path, log_path: Path
    ) -> None:
        """propose, list, show, approve, reject and apply with a provider that has no reply:
        zero requests, no JSONL line, memory untouched."""
        provider = ScriptedProvider()
        agent = Agent.for_(
            "calculator", provider=provider, toolstore_root=tmp_path / "store", log=log_path
        )

        first = agent.propose("tool_patch", target={"method": "add"}).value["id"]
        second = agent.propose(proposal_type="policy_tuning_suggestion").value["id"]
        outcomes = [
            agent.proposals(),
            agent.proposals(status="proposed", limit=1),
            agent.proposal(first),
            agent.approve_proposal(first, note="yes"),
            agent.apply_proposal(first),
            agent.reject_proposal(second),
        ]

        assert [o.status for o in outcomes] == ["ok"] * 6
        assert [p["status"] for p in agent.proposals().value] == ["applied", "rejected"]
        assert provider.calls == 0
        assert read_log(log_path) == []
        assert agent.runtime_context == {}

    @pytest.mark.parametrize("name", METHODS)
    def test_assigning_a_proposal_method_is_refused(self, name: str) -> None:
        """agent.<name> = 1 raises UsageError; the method still works afterwards."""
        agent = Agent.for_("calculator", provider=ScriptedProvider(), toolstore_root=None)

        with pytest.raises(UsageError, match=re.escape(f"{name!r} is reserved by Agent")):
            setattr(agent, name, 1)

        assert agent.runtime_context == {}
        assert agent.proposals().value == []

    def test_a_memory_key_of_the_same_name_does_not_shadow_the_method(self) -> None:
        """remember(propose=1) writes the key; agent.propose is still the method."""
        agent = Agent.for_("calculator", provider=ScriptedProvider(), toolstore_root=None)
        agent.remember(propose=1)

        outcome = agent.propose("tool_patch")

        assert outcome.value["proposal_type"] == "tool_patch"
        assert agent.runtime_context == {"propose": 1}

    @pytest.mark.parametrize("name", METHODS)
    def test_they_answer_responds_to(self, name: str) -> None:
        """responds_to(name) is True; the setter form is not."""
        agent = Agent.for_("calculator", provider=ScriptedProvider(), toolstore_root=None)

        assert (agent.responds_to(name), agent.responds_to(name + "=")) == (True, False)

    def test_outcomes_name_the_agent_and_the_method(self) -> None:
        """Each Outcome carries the agent's role and the method called."""
        agent = Agent.for_("calculator", provider=ScriptedProvider(), toolstore_root=None)
        proposal_id = agent.propose("tool_patch").value["id"]

        named = [
            (o.tool_role, o.method_name)
            for o in (
                agent.proposals(),
                agent.proposal(proposal_id),
                agent.approve_proposal(proposal_id),
                agent.apply_proposal(proposal_id),
                agent.reject_proposal(proposal_id),
            )
        ]

        assert named == [
            ("calculator", "proposals"),
            ("calculator", "proposal"),
            ("calculator", "approve_proposal"),
            ("calculator", "apply_proposal"),
            ("calculator", "reject_proposal"),
        ]

    @pytest.mark.parametrize("name", METHODS)
    def test_generated_code_never_reaches_them(self, name: str) -> None:
        """While generated code runs, each method raises the unforwarded-call guardrail."""
        agent = Agent.for_("calculator", provider=ScriptedProvider(), toolstore_root=None)
        arguments = ("tool_patch",) if name == "propose" else ("prop-0000000000000000",)
        token = RUNNING.set(True)
        try:
            with pytest.raises(GuardrailViolationError) as refused:
                getattr(agent, name)(*(() if name == "proposals" else arguments))
        finally:
            RUNNING.reset(token)

        assert refused.value.subtype == "unforwarded_agent_call"


class TestWithoutAStore:
    """toolstore_root=None: the proposals live in the agent, nothing is written."""

    def test_the_flow_works_in_memory_and_writes_no_file(self, tmp_path: Path) -> None:
        """Propose, approve and apply a role profile; no file appears under tmp_path."""
        agent = Agent.for_("calculator", provider=ScriptedProvider(), toolstore_root=None)
        profile = {"role": "calculator", "version": 1, "constraints": {}}
        proposal_id = agent.propose("role_profile_update", metadata={"role_profile": profile})
        agent.approve_proposal(proposal_id.value["id"])

        applied = agent.apply_proposal(proposal_id.value["id"])

        assert applied.value["applied_mutation"]["active_version"] == 1
        written = [Path(d, f) for d, _, files in os.walk(tmp_path) for f in files]
        assert written == []

    def test_two_agents_without_a_store_do_not_share(self) -> None:
        """One agent's proposal is not_found from another."""
        first = Agent.for_("calculator", provider=ScriptedProvider(), toolstore_root=None)
        second = Agent.for_("calculator", provider=ScriptedProvider(), toolstore_root=None)
        proposal_id = first.propose("tool_patch").value["id"]

        assert second.proposal(proposal_id).error_type == "not_found"
        assert second.proposals().value == []


class TestThroughAStore:
    """Agents on one root share proposals.json."""

    def test_a_delegate_and_another_agent_see_the_proposal(self, tmp_path: Path) -> None:
        """The parent proposes; its delegate approves; a new agent on the root applies."""
        root = tmp_path / "store"
        parent = Agent.for_("planner", provider=ScriptedProvider(), toolstore_root=root, log=False)
        child = parent.delegate("checker", purpose="check plans")
        proposal_id = parent.propose("tool_patch").value["id"]

        child.approve_proposal(proposal_id)
        other = Agent.for_("auditor", provider=ScriptedProvider(), toolstore_root=root, log=False)
        applied = other.apply_proposal(proposal_id)

        assert applied.value["status"] == "applied"
        assert applied.value["author_context"]["role"] == "planner"
        assert parent.proposal(proposal_id).value["status"] == "applied"

    def test_a_test_doubles_proposal_names_no_model(self, tmp_path: Path) -> None:
        """A proposal records its author's role and trace; the model is ``None`` for an agent
        whose provider is a test double (no model stands behind it, ADR 0077), and the model
        option for any other provider."""
        root = tmp_path / "store"
        double = Agent.for_("planner", provider=ScriptedProvider(), toolstore_root=root, log=False)

        class Model:
            def generate_program(self, request: Any) -> str:
                raise AssertionError("a proposal never reaches the provider")

        real = Agent.for_(
            "planner", provider=Model(), model="model-z", toolstore_root=root, log=False
        )

        made = [double.propose("tool_patch").value, real.propose("tool_patch").value]

        assert [value["author_context"]["model"] for value in made] == [None, "model-z"]
        assert [value["author_context"]["role"] for value in made] == ["planner", "planner"]

    def test_a_corrupt_book_is_set_aside_and_a_new_one_begins(self, tmp_path: Path) -> None:
        """Garbage in proposals.json: proposals() is empty, the bytes are kept as
        proposals.json.corrupt-<stamp>, and the next proposal starts a new book."""
        root = tmp_path / "store"
        agent = Agent.for_("planner", provider=ScriptedProvider(), toolstore_root=root, log=False)
        agent.propose("tool_patch")
        path = root / "proposals.json"
        path.write_bytes(b'{"schema_version": 1, "proposals": [')

        listed = agent.proposals()
        proposal_id = agent.propose("tool_patch").value["id"]

        assert (listed.status, listed.value) == ("ok", [])
        assert [p.read_bytes() for p in root.glob("proposals.json.corrupt-*")] == [
            b'{"schema_version": 1, "proposals": ['
        ]
        assert [p["id"] for p in agent.proposals().value] == [proposal_id]
