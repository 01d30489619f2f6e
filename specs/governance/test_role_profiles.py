"""The minimal role-profile registry behind RoleProfileMutations, and the original's
publish / publish_only / activate / rollback flow through the agent (ADR 0088)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from recurgent import Agent
from recurgent._governance import _role_profiles
from recurgent._governance._role_profiles import (
    FileRoleProfiles,
    MemoryRoleProfiles,
    RoleProfileChange,
    RoleProfileRefusal,
)
from recurgent.testing import ScriptedProvider
from specs.governance.support import PROFILE_V1, PROFILE_V2

WHO: dict[str, Any] = {"actor": "alice", "proposal_id": "prop-0000000000000001", "note": None}


def _roles(root: Path) -> dict[str, Any]:
    roles: dict[str, Any] = json.loads((root / "role_profiles.json").read_text())["roles"]
    return roles


@pytest.fixture(params=["file", "memory"])
def registry(request: pytest.FixtureRequest, tmp_path: Path) -> Any:
    """Each spec runs on the file registry and on the in-memory one."""
    if request.param == "file":
        return FileRoleProfiles(tmp_path / "store")
    return MemoryRoleProfiles()


class TestRegistry:
    """publish, activate and rollback keep versions, the active one and a history."""

    def test_publish_activate_and_roll_back(self, registry: Any) -> None:
        """v1 active; v2 published only (v1 stays); activate v2; roll back to v1."""
        first = registry.publish("calculator", PROFILE_V1, activate=True, **WHO)
        second = registry.publish("calculator", PROFILE_V2, activate=False, **WHO)
        third = registry.activate("calculator", 2, **WHO)
        fourth = registry.rollback("calculator", None, **WHO)

        assert [first, second, third, fourth] == [
            RoleProfileChange("calculator", 1, 1, None),
            RoleProfileChange("calculator", 1, 2, 1),
            RoleProfileChange("calculator", 2, None, 1),
            RoleProfileChange("calculator", 1, None, 2),
        ]

    def test_the_first_version_published_is_active_even_unasked(self, registry: Any) -> None:
        """publish(activate=False) of the only version: it is the active one (nothing else is)."""
        change = registry.publish("calculator", PROFILE_V2, activate=False, **WHO)

        assert change.active_version == 2

    def test_rollback_to_a_named_version(self, registry: Any) -> None:
        """rollback(version=2) makes 2 active."""
        registry.publish("calculator", PROFILE_V1, activate=True, **WHO)
        registry.publish("calculator", PROFILE_V2, activate=False, **WHO)

        assert registry.rollback("calculator", 2, **WHO).active_version == 2

    @pytest.mark.parametrize(
        ("profile", "message"),
        [
            (
                {**PROFILE_V1, "role": "scribe"},
                "the profile is for role 'scribe', not 'calculator'",
            ),
            ({**PROFILE_V1, "version": 0}, "a role profile needs a version"),
            ({**PROFILE_V1, "version": True}, "a role profile needs a version"),
            ({**PROFILE_V1, "constraints": []}, "constraints must map each name to a mapping"),
            (
                {**PROFILE_V1, "constraints": {"a": 1}},
                "constraints must map each name to a mapping",
            ),
            ({**PROFILE_V1, "note": "x" * 40_000}, "larger than 32768 bytes"),
        ],
    )
    def test_a_profile_out_of_shape_is_refused(
        self, registry: Any, profile: dict[str, Any], message: str
    ) -> None:
        """RoleProfileRefusal (a ValueError) naming the problem."""
        with pytest.raises(RoleProfileRefusal, match=message):
            registry.publish("calculator", profile, activate=True, **WHO)

    def test_activating_an_unknown_version_is_refused(self, registry: Any) -> None:
        """activate(3) with only v1 stored raises and leaves v1 active."""
        registry.publish("calculator", PROFILE_V1, activate=True, **WHO)

        with pytest.raises(RoleProfileRefusal, match="role 'calculator' has no profile version 3"):
            registry.activate("calculator", 3, **WHO)
        assert registry.rollback("calculator", 1, **WHO).previous_active_version == 1

    def test_rollback_with_no_earlier_version_is_refused(self, registry: Any) -> None:
        """Only one version ever active: rollback(None) raises."""
        registry.publish("calculator", PROFILE_V1, activate=True, **WHO)

        with pytest.raises(RoleProfileRefusal, match="no earlier active profile version"):
            registry.rollback("calculator", None, **WHO)

    def test_a_profile_without_a_role_takes_the_one_named(self, registry: Any) -> None:
        """{'version': 1, 'constraints': {}} publishes as the role passed."""
        change = registry.publish(
            "calculator", {"version": "1", "constraints": {}}, activate=True, **WHO
        )

        assert change == RoleProfileChange("calculator", 1, 1, None)


class TestFile:
    """role_profiles.json is the original's format, with history."""

    def test_the_file_holds_versions_active_and_history(self, tmp_path: Path) -> None:
        """versions by string key, active_version, one history event per change."""
        root = tmp_path / "store"
        registry = FileRoleProfiles(root)
        registry.publish("calculator", PROFILE_V1, activate=True, **WHO)
        registry.rollback("calculator", 1, actor="bob", proposal_id="prop-2", note="again")

        entry = _roles(root)["calculator"]
        assert entry["versions"] == {"1": PROFILE_V1}
        assert entry["active_version"] == 1
        assert [
            (e["event"], e["active_version"], e["actor"], e["proposal_id"], e.get("note"))
            for e in entry["history"]
        ] == [
            ("publish", 1, "alice", WHO["proposal_id"], None),
            ("rollback", 1, "bob", "prop-2", "again"),
        ]
        assert {e["source"] for e in entry["history"]} == {"proposal_apply"}

    def test_history_is_bounded(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """With HISTORY_KEPT 3, five changes leave the last three events."""
        monkeypatch.setattr(_role_profiles, "HISTORY_KEPT", 3)
        root = tmp_path / "store"
        registry = FileRoleProfiles(root)
        registry.publish("calculator", PROFILE_V1, activate=True, **WHO)
        for proposal in ("a", "b", "c", "d"):
            registry.activate("calculator", 1, actor="alice", proposal_id=proposal, note=None)

        assert [e["proposal_id"] for e in _roles(root)["calculator"]["history"]] == ["b", "c", "d"]

    def test_other_roles_and_keys_are_kept(self, tmp_path: Path) -> None:
        """A role this change does not touch, and unknown top-level keys, are written back."""
        root = tmp_path / "store"
        root.mkdir(mode=0o700)
        path = root / "role_profiles.json"
        path.write_text(json.dumps({"schema_version": 1, "roles": {"scribe": {"x": 1}}, "k": 2}))
        path.chmod(0o600)

        FileRoleProfiles(root).publish("calculator", PROFILE_V1, activate=True, **WHO)

        data = json.loads(path.read_text())
        assert (data["roles"]["scribe"], data["k"]) == ({"x": 1}, 2)

    def test_roles_out_of_shape_are_quarantined(self, tmp_path: Path) -> None:
        """roles not a mapping: the file is set aside and a new one holds the published role."""
        root = tmp_path / "store"
        root.mkdir(mode=0o700)
        path = root / "role_profiles.json"
        path.write_text('{"roles": [1]}')
        path.chmod(0o600)

        FileRoleProfiles(root).publish("calculator", PROFILE_V1, activate=True, **WHO)

        assert list(_roles(root)) == ["calculator"]
        assert [p.read_text() for p in root.glob("role_profiles.json.corrupt-*")] == [
            '{"roles": [1]}'
        ]

    def test_an_unsupported_file_is_an_os_error(self, tmp_path: Path) -> None:
        """schema_version 2 is left as is and the change raises OSError (store unavailable)."""
        root = tmp_path / "store"
        root.mkdir(mode=0o700)
        path = root / "role_profiles.json"
        path.write_text('{"schema_version": 2}')
        path.chmod(0o600)

        with pytest.raises(OSError, match="unsupported"):
            FileRoleProfiles(root).publish("calculator", PROFILE_V1, activate=True, **WHO)
        assert path.read_text() == '{"schema_version": 2}'


def _apply(agent: Agent, **fields: Any) -> dict[str, Any]:
    proposed = agent.propose("role_profile_update", **fields)
    agent.approve_proposal(proposed.value["id"])
    applied = agent.apply_proposal(proposed.value["id"])
    assert applied.status == "ok", applied
    mutation: dict[str, Any] = applied.value["applied_mutation"]
    return mutation


def test_the_originals_flow_through_the_agent(tmp_path: Path) -> None:
    """publish_and_activate v1, publish_only v2 (v1 stays), activate v2, rollback to v1:
    role_profiles.json follows, with one history event per step."""
    root = tmp_path / "store"
    agent = Agent.for_("calculator", provider=ScriptedProvider(), toolstore_root=root, log=False)

    steps = [
        _apply(agent, metadata={"role_profile": PROFILE_V1}),
        _apply(agent, metadata={"action": "publish_only", "role_profile": PROFILE_V2}),
        _apply(agent, metadata={"action": "activate", "version": 2}),
        _apply(agent, metadata={"action": "rollback", "version": 1}),
    ]

    assert [(s["action"], s["active_version"]) for s in steps] == [
        ("publish_and_activate", 1),
        ("publish_only", 1),
        ("activate", 2),
        ("rollback", 1),
    ]
    entry = _roles(root)["calculator"]
    assert entry["active_version"] == 1
    assert entry["versions"] == {"1": PROFILE_V1, "2": PROFILE_V2}
    assert [e["event"] for e in entry["history"]] == ["publish", "publish", "activate", "rollback"]
