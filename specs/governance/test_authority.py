"""Authority: only maintainers approve, reject and apply; who they are comes from the settings
the agent captured (ADR 0087)."""

from __future__ import annotations

import getpass
import json
from pathlib import Path

import pytest

from recurgent import Agent, configure_runtime
from recurgent._governance._authority import denied, may_enact, os_user, resolve_actor
from recurgent._runtime_config import RuntimeSettings
from recurgent.errors import UsageError
from recurgent.testing import ScriptedProvider

AUTHORITY = {"observe": True, "propose": True, "enact": False}


@pytest.fixture(autouse=True)
def _os_user(monkeypatch: pytest.MonkeyPatch) -> None:
    """The OS user is 'Tester' (mixed case: names compare lower-cased)."""
    monkeypatch.setattr(getpass, "getuser", lambda: "Tester")


def _agent(tmp_path: Path) -> Agent:
    return Agent.for_(
        "calculator", provider=ScriptedProvider(), toolstore_root=tmp_path / "store", log=False
    )


def _proposed(agent: Agent) -> str:
    outcome = agent.propose("tool_patch", target={"method": "add"})
    assert outcome.status == "ok"
    proposal_id: str = outcome.value["id"]
    return proposal_id


class TestActor:
    """The actor is the name given (stripped) or the OS user, lower-cased."""

    def test_no_actor_is_the_os_user_lower_cased(self) -> None:
        """None and a blank name resolve to 'tester'."""
        assert (resolve_actor(None), resolve_actor("  "), os_user()) == ("tester",) * 3

    def test_a_given_actor_is_kept_as_written(self) -> None:
        """' Alice ' is recorded as 'Alice' (it compares case-insensitively)."""
        assert resolve_actor(" Alice ") == "Alice"

    def test_no_os_user_is_unknown(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """getuser() failing gives 'unknown', as the original's fallback."""

        def no_user() -> str:
            raise OSError("no user")

        monkeypatch.setattr(getpass, "getuser", no_user)

        assert resolve_actor(None) == "unknown"

    @pytest.mark.parametrize("actor", [7, ["alice"], "a" * 201])
    def test_a_bad_actor_is_a_usage_error(self, actor: object) -> None:
        """A non-str or a 201-character actor raises UsageError."""
        with pytest.raises(UsageError, match="actor"):
            resolve_actor(actor)


class TestMayEnact:
    """The rule itself, on a settings record."""

    def test_maintainers_compare_case_insensitively(self) -> None:
        """'ALICE' is the maintainer 'alice'; 'bob' is not."""
        settings = RuntimeSettings(authority_maintainers=("alice",))

        assert (may_enact(settings, "ALICE"), may_enact(settings, "bob")) == (True, False)

    def test_an_empty_maintainer_list_allows_no_one(self) -> None:
        """No maintainers: even the OS user is refused."""
        assert may_enact(RuntimeSettings(authority_maintainers=()), "tester") is False

    def test_enforcement_off_allows_anyone(self) -> None:
        """authority_enforcement_enabled=False: anyone may enact, maintainers or not."""
        settings = RuntimeSettings(authority_enforcement_enabled=False)

        assert may_enact(settings, "mallory") is True

    def test_the_denial_has_the_originals_shape(self) -> None:
        """authority_denied, not retriable, metadata {actor, action, authority}."""
        outcome = denied(
            "mallory", "apply", RuntimeSettings(authority_maintainers=("a",)), role="r"
        )

        assert (outcome.status, outcome.error_type, outcome.retriable) == (
            "error",
            "authority_denied",
            False,
        )
        assert (outcome.tool_role, outcome.method_name) == ("r", "apply_proposal")
        assert outcome.metadata == {"actor": "mallory", "action": "apply", "authority": AUTHORITY}
        assert outcome.error_message is not None
        assert outcome.error_message.startswith(
            "Actor 'mallory' may not apply proposals: they are not a maintainer."
        )

    def test_the_denial_says_when_no_one_is_a_maintainer(self) -> None:
        """With an empty list the message says no maintainers are configured."""
        outcome = denied("tester", "approve", RuntimeSettings(authority_maintainers=()), role="r")

        assert "no maintainers are configured" in str(outcome.error_message)


class TestThroughTheAgent:
    """The agent's methods check the settings it was built with."""

    def test_by_default_the_os_user_is_the_maintainer(self, tmp_path: Path) -> None:
        """No configuration: approve with no actor succeeds, recorded as 'tester'."""
        agent = _agent(tmp_path)
        proposal_id = _proposed(agent)

        outcome = agent.approve_proposal(proposal_id)

        assert outcome.status == "ok"
        assert outcome.value["last_action"]["actor"] == "tester"

    @pytest.mark.parametrize("verb", ["approve_proposal", "reject_proposal", "apply_proposal"])
    def test_a_non_maintainer_is_refused_and_nothing_changes(
        self, tmp_path: Path, verb: str
    ) -> None:
        """mallory gets authority_denied for each step; the file's bytes stay the same."""
        agent = _agent(tmp_path)
        proposal_id = _proposed(agent)
        path = tmp_path / "store" / "proposals.json"
        before = path.read_bytes()

        outcome = getattr(agent, verb)(proposal_id, actor="mallory", note="let me")

        assert (outcome.status, outcome.error_type) == ("error", "authority_denied")
        assert outcome.metadata == {
            "actor": "mallory",
            "action": verb.removesuffix("_proposal"),
            "authority": AUTHORITY,
        }
        assert (outcome.tool_role, outcome.method_name) == ("calculator", verb)
        assert path.read_bytes() == before

    def test_authority_is_checked_before_the_proposal_is_looked_up(self, tmp_path: Path) -> None:
        """An unknown id asked by a non-maintainer is authority_denied, not not_found."""
        outcome = _agent(tmp_path).apply_proposal("prop-0000000000000000", actor="mallory")

        assert outcome.error_type == "authority_denied"

    def test_maintainers_come_from_the_environment(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """RECURGENT_AUTHORITY_MAINTAINERS='alice, Bob': Bob approves; the OS user is refused."""
        monkeypatch.setenv("RECURGENT_AUTHORITY_MAINTAINERS", "alice, Bob")
        agent = _agent(tmp_path)
        first, second = _proposed(agent), _proposed(agent)

        by_bob = agent.approve_proposal(first, actor="BOB")
        by_os_user = agent.approve_proposal(second)

        assert (by_bob.status, by_bob.value["status"]) == ("ok", "approved")
        assert (by_os_user.error_type, by_os_user.metadata["actor"]) == (
            "authority_denied",
            "tester",
        )

    def test_maintainers_come_from_configure_runtime(self, tmp_path: Path) -> None:
        """configure_runtime(authority_maintainers=['carol']) before building: carol approves."""
        configure_runtime(authority_maintainers=["carol"])
        agent = _agent(tmp_path)
        proposal_id = _proposed(agent)

        assert agent.approve_proposal(proposal_id).error_type == "authority_denied"
        assert agent.approve_proposal(proposal_id, actor="carol").status == "ok"

    def test_an_agent_keeps_the_maintainers_it_was_built_with(self, tmp_path: Path) -> None:
        """configure_runtime after the agent is built does not change who it lets decide."""
        agent = _agent(tmp_path)
        configure_runtime(authority_maintainers=["carol"])
        proposal_id = _proposed(agent)

        assert agent.approve_proposal(proposal_id, actor="carol").error_type == "authority_denied"
        assert agent.approve_proposal(proposal_id).status == "ok"

    @pytest.mark.parametrize("empty", [[], None, ""])
    def test_an_empty_maintainer_list_refuses_everyone(self, tmp_path: Path, empty: object) -> None:
        """authority_maintainers [] / None / '': the OS user and anyone else are refused."""
        configure_runtime(authority_maintainers=empty)
        agent = _agent(tmp_path)
        proposal_id = _proposed(agent)

        assert agent.approve_proposal(proposal_id).error_type == "authority_denied"
        assert agent.approve_proposal(proposal_id, actor="unknown").error_type == "authority_denied"

    def test_enforcement_off_from_the_environment_lets_anyone_decide(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """RECURGENT_AUTHORITY_ENFORCEMENT_ENABLED=off: mallory approves and applies."""
        monkeypatch.setenv("RECURGENT_AUTHORITY_ENFORCEMENT_ENABLED", "off")
        monkeypatch.setenv("RECURGENT_AUTHORITY_MAINTAINERS", "alice")
        agent = _agent(tmp_path)
        proposal_id = _proposed(agent)

        agent.approve_proposal(proposal_id, actor="mallory")
        applied = agent.apply_proposal(proposal_id, actor="mallory")

        assert applied.value["status"] == "applied"
        stored = json.loads((tmp_path / "store" / "proposals.json").read_text())["proposals"]
        assert [a["actor"] for a in stored[0]["actions"]] == ["mallory", "mallory"]

    def test_proposing_and_reading_need_no_authority(self, tmp_path: Path) -> None:
        """With no maintainers at all, propose, proposals and proposal still work."""
        configure_runtime(authority_maintainers=[])
        agent = _agent(tmp_path)
        proposal_id = _proposed(agent)

        assert agent.proposal(proposal_id).value["id"] == proposal_id
        assert [p["id"] for p in agent.proposals().value] == [proposal_id]
