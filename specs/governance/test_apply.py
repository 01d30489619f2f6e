"""Applying a proposal changes the runtime: role profiles through the registry contract,
content retention through the agent's settings (ADR 0088)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from recurgent import Agent, runtime_config
from recurgent._runtime_config import RuntimeSettings
from recurgent.testing import ScriptedProvider
from specs.governance.support import PROFILE_V1, Held, approved, make_desk


def _payload_error(outcome: Any) -> str:
    assert (outcome.status, outcome.error_type, outcome.retriable) == (
        "error",
        "invalid_proposal_payload",
        False,
    )
    assert outcome.method_name == "apply_proposal"
    message: str = outcome.error_message
    return message


class TestRoleProfileUpdate:
    """role_profile_update goes through RoleProfileMutations with actor, id and note."""

    def test_publish_and_activate_is_the_default_action(self) -> None:
        """No action: publish(role, profile, activate=True, ...), described in the record."""
        desk, fake, _ = make_desk()
        proposal_id = approved(desk, "role_profile_update", metadata={"role_profile": PROFILE_V1})

        outcome = desk.apply(proposal_id, actor="alice", note="ship it")

        assert fake.calls == [
            ("publish", "calculator", PROFILE_V1, True, "alice", proposal_id, "ship it")
        ]
        assert outcome.value["status"] == "applied"
        assert outcome.value["applied_mutation"] == {
            "proposal_type": "role_profile_update",
            "action": "publish_and_activate",
            "role": "calculator",
            "active_version": 1,
            "previous_active_version": None,
            "published_version": 1,
        }

    @pytest.mark.parametrize("action", ["publish", "publish_only"])
    def test_publish_stores_without_activating(self, action: str) -> None:
        """publish and publish_only call publish(..., activate=False)."""
        desk, fake, _ = make_desk()
        profile = {**PROFILE_V1, "version": 2}
        proposal_id = approved(
            desk, "role_profile_update", metadata={"action": action, "role_profile": profile}
        )

        outcome = desk.apply(proposal_id, actor="alice")

        assert fake.calls == [("publish", "calculator", profile, False, "alice", proposal_id, None)]
        assert outcome.value["applied_mutation"]["action"] == action

    def test_the_profile_may_be_the_target_itself(self) -> None:
        """A target with constraints is the profile (the original's third place to look)."""
        desk, fake, _ = make_desk()
        proposal_id = approved(desk, "role_profile_update", target=PROFILE_V1)

        desk.apply(proposal_id, actor="alice")

        assert fake.calls[0][:3] == ("publish", "calculator", PROFILE_V1)

    @pytest.mark.parametrize(
        ("fields", "version"),
        [
            ({"metadata": {"action": "activate", "version": 2}}, 2),
            ({"metadata": {"action": "activate", "active_version": "3"}}, 3),
            ({"target": {"action": "activate", "version": 4}}, 4),
        ],
    )
    def test_activate_names_a_version(self, fields: dict[str, Any], version: int) -> None:
        """activate takes the version from metadata (version/active_version) or the target."""
        desk, fake, _ = make_desk()
        proposal_id = approved(desk, "role_profile_update", **fields)

        outcome = desk.apply(proposal_id, actor="alice")

        assert fake.calls == [("activate", "calculator", version, "alice", proposal_id, None)]
        assert outcome.value["applied_mutation"] == {
            "proposal_type": "role_profile_update",
            "action": "activate",
            "role": "calculator",
            "active_version": version,
            "previous_active_version": 1,
        }

    @pytest.mark.parametrize(("version", "expected"), [(None, None), (1, 1)])
    def test_rollback_with_or_without_a_version(self, version: Any, expected: Any) -> None:
        """rollback passes the version named, or None (the version active before)."""
        desk, fake, _ = make_desk()
        metadata = {"action": "rollback", "version": version}
        proposal_id = approved(desk, "role_profile_update", metadata=metadata)

        desk.apply(proposal_id, actor="alice")

        assert fake.calls == [("rollback", "calculator", expected, "alice", proposal_id, None)]

    @pytest.mark.parametrize(
        ("fields", "call"),
        [
            (
                {"metadata": {"action": "activate", "role_profile": {**PROFILE_V1, "version": 2}}},
                ("activate", "calculator", 2),
            ),
            (
                {
                    "target": {"role_profile": {**PROFILE_V1, "role": "scribe", "version": 3}},
                    "metadata": {"action": "activate"},
                },
                ("activate", "scribe", 3),
            ),
            (
                {"metadata": {"action": "rollback", "role_profile": PROFILE_V1}},
                ("rollback", "calculator", 1),
            ),
            (
                {"metadata": {"action": "activate", "version": 5, "role_profile": PROFILE_V1}},
                ("activate", "calculator", 5),
            ),
        ],
    )
    def test_activate_and_rollback_take_the_carried_profiles_version(
        self, fields: dict[str, Any], call: tuple[str, str, int]
    ) -> None:
        """ADR 0163: with no ``version``/``active_version`` named, activate and rollback take
        the version (and role) of the ``role_profile`` the proposal carries, as the issue's
        "metadata ``role_profile`` + ``action``" reads; a named version still wins."""
        desk, fake, _ = make_desk()
        proposal_id = approved(desk, "role_profile_update", **fields)

        outcome = desk.apply(proposal_id, actor="alice")

        assert outcome.status == "ok", outcome
        assert fake.calls == [(*call, "alice", proposal_id, None)]
        assert outcome.value["applied_mutation"]["active_version"] == call[2]

    @pytest.mark.parametrize(
        ("fields", "role"),
        [
            (
                {"target": {"role": "scribe"}, "metadata": {"action": "activate", "version": 1}},
                "scribe",
            ),
            ({"metadata": {"role": "scribe", "action": "activate", "version": 1}}, "scribe"),
            ({"metadata": {"role_profile": {**PROFILE_V1, "role": "scribe"}}}, "scribe"),
            ({"metadata": {"action": "activate", "version": 1}}, "calculator"),
        ],
    )
    def test_the_role_is_the_one_named_else_the_agents(
        self, fields: dict[str, Any], role: str
    ) -> None:
        """target.role, metadata.role or the profile's role; none named: the applying agent's."""
        desk, fake, _ = make_desk()
        proposal_id = approved(desk, "role_profile_update", **fields)

        desk.apply(proposal_id, actor="alice")

        assert fake.calls[0][1] == role

    @pytest.mark.parametrize(
        ("fields", "message"),
        [
            (
                {"metadata": {"action": "delete"}},
                "unsupported role_profile_update action 'delete'; use one of "
                "publish_and_activate, publish, publish_only, activate, rollback",
            ),
            ({"metadata": {"action": 5}}, "action must be a non-empty str, got 5"),
            (
                {"metadata": {"action": "activate"}},
                "it names no role profile version to activate",
            ),
            (
                {"metadata": {"action": "activate", "version": 0}},
                "the role profile version must be an int >= 1, got 0",
            ),
            (
                {"metadata": {"action": "activate", "version": "two"}},
                "the role profile version must be an int >= 1, got 'two'",
            ),
            (
                {"metadata": {"action": "activate", "role_profile": {"role": "calculator"}}},
                "it names no role profile version to activate",
            ),
            (
                {"metadata": {"action": "activate", "role_profile": [2]}},
                "role_profile must be a mapping",
            ),
            (
                {
                    "target": {"role": "scribe"},
                    "metadata": {"action": "activate", "role_profile": PROFILE_V1},
                },
                "it names role 'scribe' but its profile is for 'calculator'",
            ),
            (
                {"metadata": {"action": "publish"}},
                "it names no role profile to publish (metadata.role_profile)",
            ),
            ({"metadata": {"role_profile": [1]}}, "role_profile must be a mapping"),
            (
                {"target": {"role": "scribe"}, "metadata": {"role_profile": PROFILE_V1}},
                "it names role 'scribe' but its profile is for 'calculator'",
            ),
        ],
    )
    def test_an_invalid_payload_changes_nothing(self, fields: dict[str, Any], message: str) -> None:
        """invalid_proposal_payload naming the problem; the registry is not called; the proposal
        stays approved."""
        desk, fake, _ = make_desk()
        proposal_id = approved(desk, "role_profile_update", **fields)

        outcome = desk.apply(proposal_id, actor="alice")

        assert _payload_error(outcome) == f"Proposal {proposal_id} is invalid: {message}"
        assert outcome.metadata == {
            "proposal_id": proposal_id,
            "proposal_type": "role_profile_update",
        }
        assert fake.calls == []
        assert desk.proposal(proposal_id).value["status"] == "approved"

    def test_a_proposal_from_the_command_line_must_name_its_role(self) -> None:
        """A desk with no role (the CLI): an activate naming no role is an invalid payload."""
        desk, fake, _ = make_desk(role=None)
        metadata = {"action": "activate", "version": 2}
        proposal_id = approved(desk, "role_profile_update", metadata=metadata)

        outcome = desk.apply(proposal_id, actor="alice")

        assert _payload_error(outcome).endswith("it names no role (target.role or metadata.role)")
        assert outcome.tool_role == "proposal_operator"
        assert fake.calls == []

    def test_a_refusal_of_the_registry_is_an_invalid_payload(self) -> None:
        """The registry's ValueError becomes invalid_proposal_payload with its message."""
        desk, fake, _ = make_desk()
        fake.refuse = ValueError("role 'calculator' has no profile version 9")
        metadata = {"action": "activate", "version": 9}
        proposal_id = approved(desk, "role_profile_update", metadata=metadata)

        outcome = desk.apply(proposal_id, actor="alice")

        assert _payload_error(outcome).endswith("role 'calculator' has no profile version 9")
        assert desk.proposal(proposal_id).value["status"] == "approved"

    def test_a_registry_that_cannot_be_written_is_unavailable(self) -> None:
        """The registry's OSError: proposal_store_unavailable, retriable; still approved."""
        desk, fake, _ = make_desk()
        fake.fail = OSError("disk full")
        metadata = {"action": "activate", "version": 2}
        proposal_id = approved(desk, "role_profile_update", metadata=metadata)

        outcome = desk.apply(proposal_id, actor="alice")

        assert (outcome.error_type, outcome.retriable) == ("proposal_store_unavailable", True)
        assert "disk full" in str(outcome.error_message)
        assert desk.proposal(proposal_id).value["status"] == "approved"


class TestContentRetentionPolicyUpdate:
    """The content_store_* settings become the applying agent's and the process's."""

    def test_the_policy_becomes_the_agents_settings_and_the_process(self) -> None:
        """max_entries 128 -> 32 and nested capture -> True, checked as configure_runtime does."""
        desk, _, held = make_desk()
        policy = {"content_store_max_entries": 32, "content_store_nested_capture_enabled": "yes"}
        proposal_id = approved(
            desk,
            "content_retention_policy_update",
            metadata={"content_retention_policy": policy},
        )

        outcome = desk.apply(proposal_id, actor="alice", note="smaller")

        assert (
            held.settings.content_store_max_entries,
            held.settings.content_store_nested_capture_enabled,
        ) == (32, True)
        assert held.settings.authority_maintainers == ("alice",)
        assert (
            runtime_config()["content_store_max_entries"],
            runtime_config()["content_store_nested_capture_enabled"],
        ) == (32, True)
        assert outcome.value["applied_mutation"] == {
            "proposal_type": "content_retention_policy_update",
            "action": "apply_runtime_policy",
            "policy": {
                "content_store_max_entries": 32,
                "content_store_nested_capture_enabled": True,
            },
            "actor": "alice",
            "note": "smaller",
        }

    @pytest.mark.parametrize(
        "fields",
        [
            {"metadata": {"content_retention_policy": {"max_bytes": 4096, "ttl_seconds": 60}}},
            {
                "target": {
                    "content_retention_policy": {
                        "content_store_max_bytes": 4096,
                        "content_store_ttl_seconds": "60",
                    }
                }
            },
            {
                "target": {
                    "content_store_max_bytes": 4096,
                    "content_store_ttl_seconds": 60,
                    "why": "x",
                }
            },
            {"metadata": {"content_store_max_bytes": 4096, "content_store_ttl_seconds": 60.0}},
        ],
        ids=["short names", "in the target", "inline target", "inline metadata"],
    )
    def test_every_place_the_policy_may_be(self, fields: dict[str, Any]) -> None:
        """Nested under content_retention_policy (full or short names) or inline: the same
        settings result."""
        desk, _, held = make_desk()
        proposal_id = approved(desk, "content_retention_policy_update", **fields)

        outcome = desk.apply(proposal_id, actor="alice")

        assert outcome.value["applied_mutation"]["policy"] == {
            "content_store_max_bytes": 4096,
            "content_store_ttl_seconds": 60.0,
        }
        assert (held.settings.content_store_max_bytes, held.settings.content_store_ttl_seconds) == (
            4096,
            60.0,
        )

    def test_a_ttl_of_none_means_no_expiry(self) -> None:
        """content_store_ttl_seconds None is a value: the TTL goes away."""
        held = Held(
            RuntimeSettings(content_store_ttl_seconds=30.0, authority_maintainers=("alice",))
        )
        desk, _, _ = make_desk(held=held)
        policy = {"content_store_ttl_seconds": None}
        proposal_id = approved(
            desk, "content_retention_policy_update", metadata={"content_retention_policy": policy}
        )

        desk.apply(proposal_id, actor="alice")

        assert held.settings.content_store_ttl_seconds is None
        assert runtime_config()["content_store_ttl_seconds"] is None

    @pytest.mark.parametrize(
        ("policy", "message"),
        [
            ({"content_store_max_entries": 0}, "content_store_max_entries must be an int > 0"),
            ({"content_store_max_bytes": "lots"}, "content_store_max_bytes must be an int > 0"),
            ({"content_store_ttl_seconds": -1}, "content_store_ttl_seconds must be a number"),
            ({"content_store_store_error_payloads": "maybe"}, "must be True or False"),
            ({"content_store_max_entries": None}, "content_store_max_entries must be an int > 0"),
            ({"isolation": "process"}, "unsupported content retention setting 'isolation'"),
            ({}, "it names no content retention setting"),
        ],
    )
    def test_a_bad_policy_changes_nothing(self, policy: dict[str, Any], message: str) -> None:
        """invalid_proposal_payload naming the setting; agent and process settings unchanged."""
        desk, _, held = make_desk()
        before = held.settings
        proposal_id = approved(
            desk, "content_retention_policy_update", metadata={"content_retention_policy": policy}
        )

        outcome = desk.apply(proposal_id, actor="alice")

        assert message in _payload_error(outcome)
        assert held.settings is before
        assert runtime_config()["content_store_max_entries"] == 128
        assert desk.proposal(proposal_id).value["status"] == "approved"

    def test_a_policy_that_is_not_a_mapping_is_invalid(self) -> None:
        """content_retention_policy: [1] is refused."""
        desk, _, _ = make_desk()
        metadata = {"content_retention_policy": [1]}
        proposal_id = approved(desk, "content_retention_policy_update", metadata=metadata)

        assert "must be a mapping" in _payload_error(desk.apply(proposal_id, actor="alice"))


class TestThroughTheAgent:
    """The agent's captured settings change; agents built before keep theirs (ADR 0076)."""

    def test_the_agent_and_agents_built_afterwards_take_the_policy(self, tmp_path: Path) -> None:
        """The applying agent's options and its lifecycle view change; an agent built before
        keeps 128; one built after gets 16."""
        provider = ScriptedProvider({"total": "result = 1"})
        root = tmp_path / "store"
        agent = Agent.for_("calculator", provider=provider, toolstore_root=root, log=False)
        bystander = Agent.for_(
            "scribe", provider=ScriptedProvider(), toolstore_root=root, log=False
        )
        assert agent.total().value == 1
        proposed = agent.propose(
            "content_retention_policy_update",
            metadata={"content_retention_policy": {"content_store_max_entries": 16}},
        )
        agent.approve_proposal(proposed.value["id"])

        applied = agent.apply_proposal(proposed.value["id"])
        later = Agent.for_("reader", provider=ScriptedProvider(), toolstore_root=root, log=False)

        assert applied.value["status"] == "applied"
        state = agent._agent
        assert state.options.settings.content_store_max_entries == 16
        assert state.runtime is not None
        assert state.runtime.options is state.options
        assert bystander._agent.options.settings.content_store_max_entries == 128
        assert later._agent.options.settings.content_store_max_entries == 16
        assert agent.total().value == 1

    def test_activate_by_the_carried_profile_through_the_public_api(self, tmp_path: Path) -> None:
        """ADR 0163, end to end: v1 from the option, v2 published and activated by a proposal,
        then ``{"role_profile": v1, "action": "activate"}`` makes v1 active again, for the
        applying agent and in ``role_profiles.json`` (an agent built afterwards)."""
        root = tmp_path / "store"
        agent = Agent.for_(
            "calculator",
            provider=ScriptedProvider(),
            toolstore_root=root,
            log=False,
            role_profile=PROFILE_V1,
        )
        profile_v2 = {**PROFILE_V1, "version": 2}
        steps: list[dict[str, Any]] = [
            {"role_profile": profile_v2},
            {"role_profile": PROFILE_V1, "action": "activate"},
        ]
        active = []
        for metadata in steps:
            proposal_id = agent.propose("role_profile_update", metadata=metadata).value["id"]
            agent.approve_proposal(proposal_id)
            applied = agent.apply_proposal(proposal_id)
            assert applied.status == "ok", applied
            active.append(applied.value["applied_mutation"]["active_version"])
        later = Agent.for_(
            "calculator", provider=ScriptedProvider(), toolstore_root=root, log=False
        )

        assert active == [2, 1]
        assert agent.role_profile == later.role_profile == PROFILE_V1

    def test_other_types_only_change_status(self, tmp_path: Path) -> None:
        """tool_patch: applied, applied_mutation None, settings as they were."""
        agent = Agent.for_(
            "calculator", provider=ScriptedProvider(), toolstore_root=tmp_path / "s", log=False
        )
        before = agent._agent.options
        proposal_id = agent.propose("tool_patch", metadata={"content_store_max_entries": 1}).value[
            "id"
        ]
        agent.approve_proposal(proposal_id)

        applied = agent.apply_proposal(proposal_id)

        assert (applied.value["status"], applied.value["applied_mutation"]) == ("applied", None)
        assert agent._agent.options is before
