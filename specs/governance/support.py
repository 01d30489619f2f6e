"""Shared helpers of the governance specs: a recording role-profile registry and desks."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from recurgent._governance._desk import Governance
from recurgent._governance._proposals import FileBook, MemoryBook, ProposalBook
from recurgent._governance._role_profiles import RoleProfileChange
from recurgent._runtime_config import RuntimeSettings

#: A role profile in the original's shape.
PROFILE_V1: dict[str, Any] = {
    "role": "calculator",
    "version": 1,
    "constraints": {
        "accumulator": {"kind": "shared_state_slot", "mode": "coordination", "scope": "all_methods"}
    },
}
PROFILE_V2: dict[str, Any] = {
    "role": "calculator",
    "version": 2,
    "constraints": {
        "accumulator": {
            "kind": "shared_state_slot",
            "mode": "prescriptive",
            "scope": "all_methods",
            "canonical_key": "value",
        }
    },
}


@dataclass
class FakeRoleProfiles:
    """A registry that records every call and answers what it is told to.

    ``refuse`` (a ValueError) or ``fail`` (an OSError) is raised by the next call instead.
    """

    calls: list[tuple[Any, ...]] = field(default_factory=list)
    refuse: ValueError | None = None
    fail: OSError | None = None

    def _answer(self, change: RoleProfileChange) -> RoleProfileChange:
        if self.refuse is not None:
            raise self.refuse
        if self.fail is not None:
            raise self.fail
        return change

    def publish(
        self,
        role: str,
        profile: Mapping[str, Any],
        *,
        activate: bool,
        actor: str,
        proposal_id: str,
        note: str | None,
    ) -> RoleProfileChange:
        self.calls.append(("publish", role, dict(profile), activate, actor, proposal_id, note))
        version = int(profile["version"])
        return self._answer(
            RoleProfileChange(role, version if activate else 1, version, None if activate else 1)
        )

    def activate(
        self, role: str, version: int, *, actor: str, proposal_id: str, note: str | None
    ) -> RoleProfileChange:
        self.calls.append(("activate", role, version, actor, proposal_id, note))
        return self._answer(RoleProfileChange(role, version, None, 1))

    def rollback(
        self, role: str, version: int | None, *, actor: str, proposal_id: str, note: str | None
    ) -> RoleProfileChange:
        self.calls.append(("rollback", role, version, actor, proposal_id, note))
        return self._answer(RoleProfileChange(role, version or 1, None, 2))


@dataclass
class Held:
    """Settings a desk reads and installs, kept where a spec can see them."""

    settings: RuntimeSettings

    def install(self, settings: RuntimeSettings) -> None:
        self.settings = settings


def make_desk(
    *,
    root: Path | None = None,
    book: ProposalBook | None = None,
    role: str | None = "calculator",
    maintainers: tuple[str, ...] = ("alice",),
    enforcement: bool = True,
    registry: Any = None,
    held: Held | None = None,
) -> tuple[Governance, FakeRoleProfiles, Held]:
    """A desk over a book (a file under ``root``, else memory) with a fake registry."""
    fake = registry if registry is not None else FakeRoleProfiles()
    held = held or Held(
        RuntimeSettings(
            authority_maintainers=maintainers, authority_enforcement_enabled=enforcement
        )
    )
    chosen = book if book is not None else (FileBook(root) if root is not None else MemoryBook())
    desk = Governance(
        book=chosen,
        role=role,
        author={"role": role, "model": "test-model", "trace_id": "trace-1"},
        settings=lambda: held.settings,
        install_settings=held.install,
        role_profiles=fake,
    )
    return desk, fake, held


def approved(desk: Governance, proposal_type: str, **fields: Any) -> str:
    """Propose and approve (as alice); return the id."""
    proposed = desk.propose(proposal_type, **fields)
    assert proposed.status == "ok", proposed
    proposal_id: str = proposed.value["id"]
    decided = desk.approve(proposal_id, actor="alice")
    assert decided.status == "ok", decided
    return proposal_id
