"""Applied role_profile_update proposals change role profiles through the role-profile room:
the applying agent's own role through its ProfileBinding, another role through the store's
RoleProfileRegistry, so role_profiles.json has one writer and one format
(recurgent/_governance/_role_profiles.py, ADRs 0083, 0088)."""

from __future__ import annotations

import getpass
import io
import json
import os
from pathlib import Path
from typing import Any

import pytest

from recurgent import Agent
from recurgent._governance._cli import main
from recurgent._profiles import RoleProfileRegistry, _registry
from recurgent.outcome import Outcome
from recurgent.testing import ScriptedProvider
from specs.governance.support import PROFILE_V1, PROFILE_V2

ADD = "context['value'] = context.get('value', 0) + args[0]\nresult = context['value']"


@pytest.fixture(autouse=True)
def _maintainer(monkeypatch: pytest.MonkeyPatch) -> None:
    """The OS user is 'tester'; alice is the one maintainer (agents read it when built)."""
    monkeypatch.setattr(getpass, "getuser", lambda: "tester")
    monkeypatch.setenv("RECURGENT_AUTHORITY_MAINTAINERS", "alice")


def _agent(root: Path | None, role: str = "calculator", **options: Any) -> Agent:
    options.setdefault("provider", ScriptedProvider())
    return Agent.for_(role, toolstore_root=root, log=False, **options)


def _apply(agent: Agent, note: str | None = None, **fields: Any) -> tuple[str, Outcome]:
    """Propose, approve and apply as alice; the id and the apply Outcome."""
    proposed = agent.propose("role_profile_update", **fields)
    assert proposed.status == "ok", proposed
    proposal_id: str = proposed.value["id"]
    assert agent.approve_proposal(proposal_id, actor="alice").status == "ok"
    return proposal_id, agent.apply_proposal(proposal_id, actor="alice", note=note)


def _applied(agent: Agent, **fields: Any) -> dict[str, Any]:
    """The applied mutation of a proposal that must apply."""
    _, outcome = _apply(agent, **fields)
    assert outcome.status == "ok", outcome
    mutation: dict[str, Any] = outcome.value["applied_mutation"]
    return mutation


def _refused(agent: Agent, **fields: Any) -> tuple[str, Outcome]:
    """A proposal whose apply is refused: it stays approved."""
    proposal_id, outcome = _apply(agent, **fields)
    assert outcome.status == "error"
    assert agent.proposal(proposal_id).value["status"] == "approved"
    return proposal_id, outcome


def _roles(root: Path) -> dict[str, Any]:
    roles: dict[str, Any] = json.loads((root / "role_profiles.json").read_text())["roles"]
    return roles


def _write(root: Path, text: str) -> Path:
    """``role_profiles.json`` holding ``text``, in a store root only this user may write."""
    root.mkdir(mode=0o700, parents=True, exist_ok=True)
    path = root / "role_profiles.json"
    path.write_text(text)
    path.chmod(0o600)
    return path


def _events(root: Path, role: str = "calculator") -> list[tuple[Any, ...]]:
    return [
        (e["event"], e["version"], e["active_version"], e["source"], e["actor"], e.get("note"))
        for e in RoleProfileRegistry(root).history(role)
    ]


def _mutation(action: str, active: int | None, before: int | None, **more: Any) -> dict[str, Any]:
    return {
        "proposal_type": "role_profile_update",
        "action": action,
        "role": "calculator",
        "active_version": active,
        "previous_active_version": before,
        **more,
    }


@pytest.fixture(params=["store", "no store"])
def root(request: pytest.FixtureRequest, tmp_path: Path) -> Path | None:
    """Each spec of the agent's own role runs with a tool store and without one."""
    return tmp_path / "store" if request.param == "store" else None


class TestTheAgentsOwnRole:
    """Every action on the applying agent's role, with or without a store alike."""

    def test_the_originals_flow(self, root: Path | None) -> None:
        """publish_and_activate v1, publish_only v2 (v1 stays), activate v2, rollback with no
        version (v1, active before): each applied mutation says so, and role_profile follows."""
        agent = _agent(root)
        steps, seen = [], []

        for metadata in (
            {"role_profile": PROFILE_V1},
            {"action": "publish_only", "role_profile": PROFILE_V2},
            {"action": "activate", "version": 2},
            {"action": "rollback"},
        ):
            steps.append(_applied(agent, metadata=metadata))
            seen.append(agent.role_profile)

        assert steps == [
            _mutation("publish_and_activate", 1, None, published_version=1),
            _mutation("publish_only", 1, 1, published_version=2),
            _mutation("activate", 2, 1),
            _mutation("rollback", 1, 2),
        ]
        assert seen == [PROFILE_V1, PROFILE_V1, PROFILE_V2, PROFILE_V1]

    def test_publish_keeps_the_active_version(self, root: Path | None) -> None:
        """Action publish stores v2 and leaves v1 active (only publish_and_activate activates)."""
        agent = _agent(root)
        _applied(agent, metadata={"role_profile": PROFILE_V1})

        mutation = _applied(agent, metadata={"action": "publish", "role_profile": PROFILE_V2})

        assert mutation == _mutation("publish", 1, 1, published_version=2)
        assert agent.role_profile == PROFILE_V1

    def test_the_first_version_published_only_is_active(self, root: Path | None) -> None:
        """publish_only of a role's first version: it is the active one (nothing else is)."""
        agent = _agent(root)

        mutation = _applied(agent, metadata={"action": "publish_only", "role_profile": PROFILE_V2})

        assert mutation == _mutation("publish_only", 2, None, published_version=2)
        assert agent.role_profile == PROFILE_V2

    def test_rollbacks_in_a_row_alternate_and_a_version_may_be_named(
        self, root: Path | None
    ) -> None:
        """v1, v2, v3 published and active in turn: rollbacks give 2, 3 (the version active
        before the current one each time); rollback to version 1 names it."""
        agent = _agent(root)
        for version in (1, 2, 3):
            profile = {**PROFILE_V1, "version": version}
            _applied(agent, metadata={"role_profile": profile})

        actives = [
            _applied(agent, metadata={"action": "rollback"})["active_version"],
            _applied(agent, metadata={"action": "rollback"})["active_version"],
            _applied(agent, metadata={"action": "rollback", "version": "1"})["active_version"],
        ]

        assert actives == [2, 3, 1]
        assert agent.role_profile == PROFILE_V1

    def test_a_profile_naming_no_role_is_for_the_role_named(self, root: Path | None) -> None:
        """metadata.role calculator, a profile without a role and version "1": published as
        calculator's version 1."""
        agent = _agent(root)
        profile = {"version": "1", "constraints": {}}

        _applied(agent, metadata={"role": "calculator", "role_profile": profile})

        assert agent.role_profile == {"role": "calculator", "version": 1, "constraints": {}}

    def test_the_target_may_be_the_profile_and_carry_the_action(self, root: Path | None) -> None:
        """target = v2 with action publish_only: v2 is stored as a profile (the action is not
        part of it) and v1 stays active."""
        agent = _agent(root)
        _applied(agent, metadata={"role_profile": PROFILE_V1})

        mutation = _applied(agent, target={"action": "publish_only", **PROFILE_V2})
        activated = _applied(agent, metadata={"action": "activate", "version": 2})

        assert mutation == _mutation("publish_only", 1, 1, published_version=2)
        assert (activated["active_version"], agent.role_profile) == (2, PROFILE_V2)

    def test_the_agent_uses_the_change_at_its_next_call(self, root: Path | None) -> None:
        """After applying v2 (prescriptive, key 'value'), the next call's system prompt carries
        the Role Profile block of version 2."""
        provider = ScriptedProvider({"add": ADD})
        agent = _agent(root, provider=provider)
        _applied(agent, metadata={"role_profile": PROFILE_V2})

        agent.add(1)

        assert provider.requests[0].system_prompt.endswith(
            "Role Profile (version 2): this role's methods share these agreements. Follow them so "
            "every method of the role reads and writes the same memory keys, takes its arguments "
            "the same way and answers in the same shape:\n"
            "- accumulator: keep the role's state in memory key 'value'\n"
        )

    @pytest.mark.parametrize(
        ("profile", "message"),
        [
            (
                {**PROFILE_V1, "note": "x"},
                "role_profile has unknown key(s) note; known keys: constraints, role, version",
            ),
            (
                {**PROFILE_V1, "version": 0},
                "role_profile version must be an int from 1 to 1000000000, got 0",
            ),
            (
                {**PROFILE_V1, "version": True},
                "role_profile version must be an int from 1 to 1000000000, got True",
            ),
            ({**PROFILE_V1, "constraints": []}, "role_profile constraints must be a dict, got []"),
            (
                {**PROFILE_V1, "constraints": {"a": 1}},
                "role_profile constraint 'a' must be a dict, got 1",
            ),
            (
                {**PROFILE_V1, "constraints": {f"c{n}": {} for n in range(33)}},
                "role_profile has 33 constraints, more than 32",
            ),
            (
                {**PROFILE_V1, "constraints": {"a" * 201: {}}},
                "role_profile constraint name is longer than 200 characters",
            ),
            (
                {**PROFILE_V1, "constraints": {"a": {"mode": "prescriptive"}}},
                "role_profile constraint 'a' in prescriptive mode needs canonical_key or "
                "canonical_value",
            ),
        ],
    )
    def test_a_profile_out_of_shape_is_an_invalid_payload(
        self, root: Path | None, profile: dict[str, Any], message: str
    ) -> None:
        """The role-profile room's check, as invalid_proposal_payload (not retriable) naming
        the problem; nothing is published."""
        agent = _agent(root)

        proposal_id, outcome = _refused(agent, metadata={"role_profile": profile})

        assert (outcome.error_type, outcome.retriable) == ("invalid_proposal_payload", False)
        assert outcome.error_message == f"Proposal {proposal_id} is invalid: {message}"
        assert agent.role_profile is None
        assert root is None or not (root / "role_profiles.json").exists()

    def test_activating_an_unknown_version_is_an_invalid_payload(self, root: Path | None) -> None:
        """activate 3 with only v1: refused, naming the versions there are; v1 stays active."""
        agent = _agent(root)
        _applied(agent, metadata={"role_profile": PROFILE_V1})

        _, outcome = _refused(agent, metadata={"action": "activate", "version": 3})

        where = "stored" if root is not None else "held (no tool store)"
        assert outcome.error_type == "invalid_proposal_payload"
        assert str(outcome.error_message).endswith(
            f"role_profile_version 3 not found for role 'calculator'; versions {where}: 1"
        )
        assert agent.role_profile == PROFILE_V1

    def test_a_rollback_with_nothing_before_is_an_invalid_payload(self, root: Path | None) -> None:
        """Only v1 was ever active: rollback with no version is refused."""
        agent = _agent(root)
        _applied(agent, metadata={"role_profile": PROFILE_V1})

        _, outcome = _refused(agent, metadata={"action": "rollback"})

        assert outcome.error_type == "invalid_proposal_payload"
        assert str(outcome.error_message).endswith(
            "role 'calculator' has no earlier active role_profile version to roll back to"
        )


class TestTheStoresFile:
    """With a store, role_profiles.json is the registry's: later agents read it, its history
    says which proposal changed what."""

    def test_an_agent_built_afterwards_reads_it_and_the_history_names_the_proposals(
        self, tmp_path: Path
    ) -> None:
        """After v1 then v2 applied through proposals, a new agent on the same root has v2
        active; the registry's history records each proposal (source proposal_apply, actor
        alice, the proposal id, the note)."""
        root = tmp_path / "store"
        agent = _agent(root)
        first, _ = _apply(agent, metadata={"role_profile": PROFILE_V1}, note="start")
        second, _ = _apply(agent, metadata={"role_profile": PROFILE_V2})

        later = _agent(root)

        assert later.role_profile == PROFILE_V2
        assert RoleProfileRegistry(root).active_version("calculator") == 2
        history = _roles(root)["calculator"]["history"]
        assert [(e["proposal_id"], e["actor"], e["source"]) for e in history] == [
            (first, "alice", "proposal_apply"),
            (second, "alice", "proposal_apply"),
        ]
        assert _events(root) == [
            ("publish", 1, 1, "proposal_apply", "alice", "start"),
            ("publish", 2, 2, "proposal_apply", "alice", None),
        ]
        assert _roles(root)["calculator"]["versions"] == {"1": PROFILE_V1, "2": PROFILE_V2}

    def test_publishing_the_active_version_again_records_nothing(self, tmp_path: Path) -> None:
        """A second proposal publishing v1 unchanged applies (active 1, before 1) and the
        registry writes no event for it: applying again after a failed status write repeats
        nothing."""
        root = tmp_path / "store"
        agent = _agent(root)
        _applied(agent, metadata={"role_profile": PROFILE_V1})

        mutation = _applied(agent, metadata={"role_profile": PROFILE_V1})

        assert mutation == _mutation("publish_and_activate", 1, 1, published_version=1)
        assert len(_events(root)) == 1

    def test_another_role_goes_to_the_registry(self, tmp_path: Path) -> None:
        """A calculator applying a proposal for role scribe: scribe's profile is published in
        the store (a scribe already built in this process sees it); the calculator's is not."""
        root = tmp_path / "store"
        scribe = _agent(root, "scribe")
        agent = _agent(root)
        profile = {**PROFILE_V1, "role": "scribe"}

        mutation = _applied(agent, metadata={"role_profile": profile})

        assert mutation == {
            **_mutation("publish_and_activate", 1, None, published_version=1),
            "role": "scribe",
        }
        assert (scribe.role_profile, agent.role_profile) == (profile, None)
        assert _events(root, "scribe") == [("publish", 1, 1, "proposal_apply", "alice", None)]

    def test_other_roles_and_keys_are_kept(self, tmp_path: Path) -> None:
        """A role the change does not touch, and unknown top-level keys, are written back."""
        root = tmp_path / "store"
        agent = _agent(root)
        scribe = {"role": "scribe", "active_version": 1, "versions": {}, "history": []}
        path = _write(root, json.dumps({"schema_version": 1, "roles": {"scribe": scribe}, "k": 2}))

        _applied(agent, metadata={"role_profile": PROFILE_V1})

        data = json.loads(path.read_text())
        assert (data["roles"]["scribe"], data["k"]) == (scribe, 2)

    def test_roles_out_of_shape_are_quarantined(self, tmp_path: Path) -> None:
        """roles not a mapping: the file is set aside and a new one holds the published role."""
        root = tmp_path / "store"
        agent = _agent(root)
        _write(root, '{"schema_version": 1, "roles": [1]}')

        _applied(agent, metadata={"role_profile": PROFILE_V1})

        assert list(_roles(root)) == ["calculator"]
        assert [p.read_text() for p in root.glob("role_profiles.json.corrupt-*")] == [
            '{"schema_version": 1, "roles": [1]}'
        ]

    def test_history_is_bounded(self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
        """With HISTORY_KEPT 3, a publish and four activations keep the last three events."""
        monkeypatch.setattr(_registry, "HISTORY_KEPT", 3)
        root = tmp_path / "store"
        agent = _agent(root)
        _applied(agent, metadata={"role_profile": PROFILE_V1})

        ids = [_apply(agent, metadata={"action": "activate", "version": 1})[0] for _ in range(4)]

        assert [e["proposal_id"] for e in _roles(root)["calculator"]["history"]] == ids[1:]

    def test_a_file_of_another_schema_is_unavailable(self, tmp_path: Path) -> None:
        """schema_version 2: proposal_store_unavailable (retriable), the file is left as it is,
        the proposal stays approved and the agent's profile does not change."""
        root = tmp_path / "store"
        agent = _agent(root)
        path = _write(root, '{"schema_version": 2}')

        _, outcome = _refused(agent, metadata={"role_profile": PROFILE_V1})

        assert (outcome.error_type, outcome.retriable) == ("proposal_store_unavailable", True)
        assert "unsupported" in str(outcome.error_message)
        assert path.read_text() == '{"schema_version": 2}'
        assert agent.role_profile is None

    def test_a_failed_write_is_not_held_for_the_agent_alone(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The registry cannot write (disk full): proposal_store_unavailable, and the agent
        keeps v1 (the change is not held in its memory, as a refused option would be)."""
        root = tmp_path / "store"
        agent = _agent(root)
        _applied(agent, metadata={"role_profile": PROFILE_V1})

        def disk_full(*args: Any, **kwargs: Any) -> Any:
            raise OSError("disk full")

        monkeypatch.setattr(_registry, "update_json", disk_full)
        for fields in (
            {"metadata": {"role_profile": PROFILE_V2}},
            {"metadata": {"action": "activate", "version": 1}},
            {"metadata": {"action": "rollback", "version": 1}},
        ):
            _, outcome = _refused(agent, **fields)
            assert (outcome.error_type, outcome.retriable) == ("proposal_store_unavailable", True)
            assert str(outcome.error_message).endswith(
                "the role-profile registry cannot be changed (OSError: disk full)"
            )

        assert agent.role_profile == PROFILE_V1


class TestWithoutAStore:
    """toolstore_root=None: the agent's own role is held in memory; other roles are refused."""

    def test_nothing_is_written(self, tmp_path: Path) -> None:
        """The whole flow leaves no file under tmp_path."""
        agent = _agent(None)

        _applied(agent, metadata={"role_profile": PROFILE_V1})
        _applied(agent, metadata={"action": "publish_only", "role_profile": PROFILE_V2})
        _applied(agent, metadata={"action": "activate", "version": 2})

        assert agent.role_profile == PROFILE_V2
        assert [Path(d, f) for d, _, files in os.walk(tmp_path) for f in files] == []

    def test_another_role_is_an_invalid_payload(self) -> None:
        """A proposal for role scribe: invalid_proposal_payload, not retriable (this agent will
        never have a store, and its proposals live in its memory), saying where to apply it."""
        agent = _agent(None)
        metadata = {"role_profile": {**PROFILE_V1, "role": "scribe"}}

        proposal_id, outcome = _refused(agent, metadata=metadata)

        assert (outcome.error_type, outcome.retriable) == ("invalid_proposal_payload", False)
        assert outcome.error_message == (
            f"Proposal {proposal_id} is invalid: this agent ('calculator') has no tool store, "
            "so it changes only its own role's profile; role 'scribe' keeps its profiles in a "
            "tool store: propose this on an agent with a toolstore_root and apply it there or "
            "with recurgent proposals apply"
        )

    def test_each_agent_holds_its_own(self) -> None:
        """Two agents of one role with no store: a proposal applied by one leaves the other."""
        first, second = _agent(None), _agent(None)

        _applied(first, metadata={"role_profile": PROFILE_V1})

        assert (first.role_profile, second.role_profile) == (PROFILE_V1, None)


def _cli(*argv: str) -> tuple[int, Any]:
    out, err = io.StringIO(), io.StringIO()
    code = main([*argv, "--json"], out=out, err=err)
    assert err.getvalue() == ""
    return code, json.loads(out.getvalue())


class TestCommandLine:
    """recurgent proposals apply: every role goes to the store's registry."""

    def _approved(self, root: Path, **fields: Any) -> str:
        proposed = _agent(root, "planner").propose("role_profile_update", **fields)
        proposal_id: str = proposed.value["id"]
        assert _cli("approve", proposal_id, "--actor", "alice", "--root", str(root))[0] == 0
        return proposal_id

    def _apply(self, root: Path, proposal_id: str) -> tuple[int, Any]:
        return _cli("apply", proposal_id, "--actor", "alice", "--root", str(root))

    def test_publish_publish_only_activate_rollback(self, tmp_path: Path) -> None:
        """The flow for role calculator, proposed by a planner and applied from the command
        line: each mutation, an agent built afterwards with v2 then v1 active, and the
        registry's history naming each proposal."""
        root = tmp_path / "store"
        named = {"role": "calculator"}
        ids = [
            self._approved(root, metadata={"role_profile": PROFILE_V1}),
            self._approved(root, metadata={"action": "publish_only", "role_profile": PROFILE_V2}),
            self._approved(root, target=named, metadata={"action": "activate", "version": 2}),
        ]
        applied = [self._apply(root, proposal_id) for proposal_id in ids]
        in_between = _agent(root).role_profile
        last = self._approved(root, target=named, metadata={"action": "rollback"})

        code, document = self._apply(root, last)

        assert [
            (code, doc["proposal"]["applied_mutation"]["active_version"]) for code, doc in applied
        ] == [(0, 1), (0, 1), (0, 2)]
        assert (code, document["proposal"]["applied_mutation"]) == (
            0,
            _mutation("rollback", 1, 2),
        )
        assert (in_between, _agent(root).role_profile) == (PROFILE_V2, PROFILE_V1)
        history = RoleProfileRegistry(root).history("calculator")
        assert [(e["event"], e["proposal_id"], e["actor"], e["source"]) for e in history] == [
            ("publish", ids[0], "alice", "proposal_apply"),
            ("publish", ids[1], "alice", "proposal_apply"),
            ("activate", ids[2], "alice", "proposal_apply"),
            ("rollback", last, "alice", "proposal_apply"),
        ]

    def test_refusals(self, tmp_path: Path) -> None:
        """An unknown version: invalid_proposal_payload; a file of another schema:
        proposal_store_unavailable; both exit 1 and leave the proposal approved."""
        root = tmp_path / "store"
        named = {"role": "calculator"}
        unknown = self._approved(root, target=named, metadata={"action": "activate", "version": 7})
        blocked = self._approved(root, metadata={"role_profile": PROFILE_V1})
        first = self._apply(root, unknown)
        path = _write(root, '{"schema_version": 2}')

        second = self._apply(root, blocked)

        assert [(code, doc["error_type"]) for code, doc in (first, second)] == [
            (1, "invalid_proposal_payload"),
            (1, "proposal_store_unavailable"),
        ]
        assert first[1]["error_message"].endswith(
            "role_profile version 7 not found for role 'calculator'; stored versions: none"
        )
        assert path.read_text() == '{"schema_version": 2}'
        statuses = [
            _cli("show", proposal_id, "--root", str(root))[1]["proposal"]["status"]
            for proposal_id in (unknown, blocked)
        ]
        assert statuses == ["approved", "approved"]
