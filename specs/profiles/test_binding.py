"""One agent's role profile: the options, the registry and the observation cache
(recurgent/_profiles/_binding.py, ADR 0083)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from recurgent import Agent
from recurgent._profiles import ProfileBinding, RoleProfileRegistry, _registry
from recurgent.errors import UsageError
from recurgent.testing import ScriptedProvider


def _profile(version: int, mode: str = "coordination", role: str = "calculator") -> dict[str, Any]:
    constraint: dict[str, Any] = {"mode": mode}
    if mode == "prescriptive":
        constraint["canonical_key"] = "value"
    return {"role": role, "version": version, "constraints": {"accumulator": constraint}}


def _agent(root: Path | None, **options: Any) -> Agent:
    return Agent(
        "calculator", provider=ScriptedProvider(), log=False, toolstore_root=root, **options
    )


class TestOptions:
    """role_profile= and role_profile_version= at construction."""

    def test_without_a_store_the_option_holds_in_memory(self) -> None:
        """toolstore_root=None: the option's profile is active and nothing is written."""
        agent = _agent(None, role_profile=_profile(1))

        assert agent.role_profile == {
            "role": "calculator",
            "version": 1,
            "constraints": {
                "accumulator": {
                    "kind": "shared_state_slot",
                    "mode": "coordination",
                    "scope": "all_methods",
                }
            },
        }

    def test_without_a_store_only_the_options_version_exists(self) -> None:
        """role_profile_version naming another version is a UsageError."""
        with pytest.raises(UsageError, match=r"version 2 not found .* held \(no tool store\): 1"):
            _agent(None, role_profile=_profile(1), role_profile_version=2)

    def test_the_option_is_published_for_later_agents(self, tmp_path: Path) -> None:
        """With a store, the option publishes and activates; a plain agent later sees it."""
        root = tmp_path / "store"
        _agent(root, role_profile=_profile(1))

        assert _agent(root).role_profile == _agent(None, role_profile=_profile(1)).role_profile
        event = RoleProfileRegistry(root).history("calculator")[-1]
        assert (event["event"], event["source"]) == ("publish", "initialize_option")

    def test_the_originals_version_scenario(self, tmp_path: Path) -> None:
        """v1, then v2 (published and active), then role_profile_version=1: a plain agent sees 1."""
        root = tmp_path / "store"
        _agent(root, role_profile=_profile(1))
        _agent(root, role_profile=_profile(2, "prescriptive"))
        assert _agent(root).role_profile["version"] == 2  # type: ignore[index]

        _agent(root, role_profile_version=1)

        assert _agent(root).role_profile["version"] == 1  # type: ignore[index]

    def test_an_unknown_stored_version_is_refused(self, tmp_path: Path) -> None:
        """role_profile_version of a version never published is a UsageError at construction."""
        root = tmp_path / "store"
        _agent(root, role_profile=_profile(1))

        with pytest.raises(
            UsageError, match="version 4 not found for role 'calculator'; versions stored: 1"
        ):
            _agent(root, role_profile_version=4)

    def test_a_profile_of_another_role_is_refused(self) -> None:
        """The profile's role must be the agent's."""
        with pytest.raises(
            UsageError, match="role 'parser' must match the agent's role 'calculator'"
        ):
            _agent(None, role_profile=_profile(1, role="parser"))

    @pytest.mark.parametrize("version", [0, "two", 1.0])
    def test_a_bad_version_option_is_refused(self, version: Any) -> None:
        """role_profile_version must be an int >= 1."""
        with pytest.raises(UsageError, match="role_profile_version must be an int >= 1"):
            _agent(None, role_profile_version=version)

    def test_an_untrusted_store_keeps_the_profile_in_memory(self, tmp_path: Path) -> None:
        """A store the registry may not write (group/other-writable) leaves the profile held."""
        root = tmp_path / "store"
        root.mkdir(mode=0o700)
        root.chmod(0o777)

        agent = _agent(root, role_profile=_profile(1))

        assert agent.role_profile["version"] == 1  # type: ignore[index]
        assert not (root / "role_profiles.json").exists()

    def test_role_profile_is_a_copy(self) -> None:
        """Changing the returned dict changes nothing the agent uses."""
        agent = _agent(None, role_profile=_profile(1))

        agent.role_profile["constraints"].clear()  # type: ignore[index]

        assert list(agent.role_profile["constraints"]) == ["accumulator"]  # type: ignore[index]

    def test_no_profile_is_none(self, tmp_path: Path) -> None:
        """An agent of a role without a profile has role_profile None."""
        assert _agent(tmp_path / "store").role_profile is None


class TestChanges:
    """publish/activate/rollback on the binding, as an applied proposal uses them."""

    def test_a_registry_change_in_this_process_reaches_a_built_agent(self, tmp_path: Path) -> None:
        """An agent built before a publish sees the new active version at once."""
        root = tmp_path / "store"
        agent = _agent(root)

        RoleProfileRegistry(root).publish(_profile(5), activate=True, proposal_id="prop-1")

        assert agent.role_profile["version"] == 5  # type: ignore[index]

    def test_binding_publish_activate_rollback_with_a_store(self, tmp_path: Path) -> None:
        """The binding changes the registry; rollback returns to the earlier version."""
        root = tmp_path / "store"
        binding = ProfileBinding("calculator", root)

        binding.publish(_profile(1), actor="ana")
        binding.publish(_profile(2, "prescriptive"), activate=False)
        binding.activate(2, actor="ana", proposal_id="prop-2")
        assert binding.active_version() == 2
        binding.rollback(actor="ana")

        assert binding.active_version() == 1
        events = [e["event"] for e in RoleProfileRegistry(root).history("calculator")]
        assert events == ["publish", "publish", "activate", "rollback"]

    def test_binding_changes_without_a_store(self) -> None:
        """Without a store the versions and the rollback are held in memory; a single version
        has nothing to roll back to."""
        binding = ProfileBinding("calculator", None)

        binding.publish(_profile(1))
        with pytest.raises(UsageError, match="no earlier active role_profile version"):
            binding.rollback()
        binding.publish(_profile(2))
        assert binding.active_version() == 2
        binding.rollback()

        assert binding.active_version() == 1

    @pytest.mark.parametrize("store", [True, False])
    def test_rollback_goes_to_the_version_active_before_with_or_without_a_store(
        self, tmp_path: Path, store: bool
    ) -> None:
        """The registry's rule, held or stored alike: the most recent other version active
        before the current one, so rollbacks in a row alternate (1, 2, 3 active in turn:
        rollbacks give 2, 3, 2); activating 1 and rolling back gives the 2 active before."""
        binding = ProfileBinding("calculator", tmp_path / "store" if store else None)
        for version in (1, 2, 3):
            binding.publish(_profile(version))

        seen = []
        for _ in range(3):
            binding.rollback()
            seen.append(binding.active_version())
        binding.activate(1)
        binding.rollback()

        assert (seen, binding.active_version()) == ([2, 3, 2], 2)

    def test_a_refused_write_may_fail_instead_of_holding(
        self, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """hold_if_refused=False (an applied proposal): the store's OSError is raised, nothing
        is held in memory and the active profile stays the one before."""
        binding = ProfileBinding("calculator", tmp_path / "store")
        binding.publish(_profile(1))
        binding.publish(_profile(2), activate=False)

        def disk_full(*args: Any, **kwargs: Any) -> Any:
            raise OSError("disk full")

        monkeypatch.setattr(_registry, "update_json", disk_full)
        with pytest.raises(OSError, match="disk full"):
            binding.publish(_profile(3), hold_if_refused=False)
        with pytest.raises(OSError, match="disk full"):
            binding.activate(2, hold_if_refused=False)
        with pytest.raises(OSError, match="disk full"):
            binding.rollback(2, hold_if_refused=False)

        assert binding.active_version() == 1
        with pytest.raises(UsageError, match="version 3 not found"):
            binding.activate(3)


class TestSetterObservations:
    """agent.x = v shows method x= using key x when a state-slot constraint covers it."""

    def test_setters_and_remember_are_observed(self) -> None:
        """Setter and remember keys are seen as methods 'x=' (tools never)."""
        agent = _agent(None, role_profile=_profile(1))

        agent.memory = 1
        agent.remember(mode="x", tools={})

        binding = agent._agent.profiles
        assert binding is not None
        assert binding.seen(None)["shared_state_slot"] == {"memory=": "memory", "mode=": "mode"}

    def test_nothing_is_observed_without_a_covering_constraint(self) -> None:
        """An excluded setter (or no profile) records nothing."""
        profile = {
            "role": "calculator",
            "version": 1,
            "constraints": {"a": {"exclude_methods": ["memory="]}},
        }
        agent = _agent(None, role_profile=profile)
        plain = _agent(None)

        agent.memory = 1
        plain.memory = 1

        assert agent._agent.profiles.seen(None)["shared_state_slot"] == {}  # type: ignore[union-attr]
        assert plain._agent.profiles.seen(None)["shared_state_slot"] == {}  # type: ignore[union-attr]
