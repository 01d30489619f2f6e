"""What an agent knows about itself (``Agent.self_model``) and the shape of each call's solving
(``solver_shape_*`` log fields) (ADR 0085).

Both are telemetry, each behind its runtime switch (``self_model_capture_enabled``,
``solver_shape_capture_enabled``, on by default as in the original); neither changes what a
call does.

**Self model**: ``awareness_level`` is ``l3`` once the agent has run code (its last call's
evolution snapshot exists), else ``l2`` with an active contract or role profile, else ``l1``;
``authority`` is what this process's user may do with proposals (``observe`` and ``propose``
always; ``enact`` when authority enforcement is off or the user is a maintainer, read from the
agent's settings: the original always said ``enact: false``); the active contract version (its
fingerprint) and role-profile version are read when asked; the snapshot refs name the last
call (``<trace>:<call>:<role>.<method>``) and the code version it ran
(``<role>.<method>@sha256:<hex>``).

**Solver shape**: the original's five parts: ``stance`` (``do``/``forge``/``shape``),
``capability_summary``, ``reuse_basis`` (how the answer's program was obtained),
``contract_intent`` and ``promotion_intent``.

Capturing costs a few attribute reads per call: the snapshot keeps the last call's names and
code, and the dictionaries are built only when read or logged.
"""

from __future__ import annotations

import functools
import getpass
import os
import re
from collections.abc import Mapping
from typing import Any

from recurgent._profiles import current_actor
from recurgent._redact import environment_fingerprint
from recurgent._runtime_config import RuntimeSettings
from recurgent._store import checksum, contract_fingerprint
from recurgent._store._cacheability import DYNAMIC_DISPATCH_METHODS

__all__ = [
    "SELF_MODEL_FIELDS",
    "SOLVER_SHAPE_FIELDS",
    "CallSnapshot",
    "SelfModelSlot",
    "authority",
    "awareness_level",
    "contract_version",
    "self_model",
    "solver_shape",
    "solver_shape_fields",
    "solver_shape_log_fields",
]

_SLUG = re.compile(r"[^a-z0-9]+")

#: The log fields of the solver shape, in order (null when capture is off).
SOLVER_SHAPE_FIELDS = (
    "solver_shape",
    "solver_shape_complete",
    "solver_shape_stance",
    "solver_shape_capability_summary",
    "solver_shape_reuse_basis",
    "solver_shape_contract_intent",
    "solver_shape_promotion_intent",
)
#: The log fields of the self model, in order (null when capture is off).
SELF_MODEL_FIELDS = (
    "self_model",
    "awareness_level",
    "authority",
    "active_contract_version",
    "active_role_profile_version",
    "execution_snapshot_ref",
    "evolution_snapshot_ref",
)


_uid = getattr(os, "getuid", None)
# (what the user name was read from, the name): see _os_actor.
_actor: tuple[Any, str] | None = None


def _os_actor() -> str:
    """``current_actor()``, read again only when what it reads may have changed: the
    environment (the name is read from it), the process's uid (else its password entry), or
    the functions themselves (specs stand in their own)."""
    global _actor  # one process-wide slot, replaced in one assignment
    key = (
        environment_fingerprint(),
        _uid() if _uid is not None else None,
        getpass.getuser,
        current_actor,
    )
    known = _actor
    if known is not None and known[0] == key:
        return known[1]
    name = current_actor()
    _actor = (key, name)
    return name


def authority(settings: RuntimeSettings, actor: str | None = None) -> dict[str, bool]:
    """What ``actor`` (default: this process's user) may do with proposals."""
    who = (actor or _os_actor()).strip().lower()
    enact = not settings.authority_enforcement_enabled or who in settings.authority_maintainers
    return {"observe": True, "propose": True, "enact": enact}


def contract_version(contract: Mapping[str, Any] | None) -> str | None:
    """The active contract's version: its fingerprint (``None`` without a contract)."""
    fingerprint = contract_fingerprint(contract)
    return None if fingerprint == "none" else fingerprint


def awareness_level(
    evolution_ref: str | None, contract: str | None, profile_version: int | None
) -> str:
    """``l3`` with an evolution snapshot, ``l2`` with a contract or profile, else ``l1``."""
    if evolution_ref is not None:
        return "l3"
    if contract is not None or profile_version is not None:
        return "l2"
    return "l1"


class CallSnapshot:
    """The names of one finished call, enough to build its snapshot refs when asked."""

    __slots__ = ("call_id", "code", "method", "role", "trace_id")

    def __init__(
        self, role: str, method: str, trace_id: str, call_id: str, code: str | None
    ) -> None:
        self.role, self.method, self.trace_id, self.call_id = role, method, trace_id, call_id
        self.code = code

    @property
    def execution_ref(self) -> str | None:
        if not (self.trace_id and self.call_id and self.method):
            return None
        return f"{self.trace_id}:{self.call_id}:{self.role}.{self.method}"

    @property
    def evolution_ref(self) -> str | None:
        if not self.code or self.code.isspace():
            return None
        return f"{self.role}.{self.method}@{checksum(self.code)}"


class SelfModelSlot:
    """The last call an agent captured (``None`` before its first captured call)."""

    __slots__ = ("last",)

    def __init__(self) -> None:
        self.last: CallSnapshot | None = None


def self_model(
    settings: RuntimeSettings,
    contract: Mapping[str, Any] | None,
    profile_version: int | None,
    last: CallSnapshot | None,
) -> dict[str, Any]:
    """The self-model envelope: versions and authority as they are now, refs of ``last``."""
    version = contract_version(contract)
    evolution = last.evolution_ref if last is not None else None
    return {
        "awareness_level": awareness_level(evolution, version, profile_version),
        "authority": authority(settings),
        "active_contract_version": version,
        "active_role_profile_version": profile_version,
        "execution_snapshot_ref": last.execution_ref if last is not None else None,
        "evolution_snapshot_ref": evolution,
    }


def _slug(text: str) -> str:
    return _SLUG.sub("_", text.lower()).strip("_")


def solver_shape(
    *,
    role: str,
    method: str,
    depth: int,
    arg_count: int,
    kwarg_count: int,
    contract: Mapping[str, Any] | None,
    program_source: str,
    artifact_hit: bool,
) -> dict[str, Any]:
    """The solver shape of one finished call (the original's rules)."""
    dynamic = method.lower() in DYNAMIC_DISPATCH_METHODS
    if depth >= 1:
        stance = "do"
    elif dynamic:
        stance = "forge"
    else:
        stance = "do" if contract else "shape"
    if artifact_hit:
        reuse = "persisted_artifact_reuse"
    elif program_source == "repaired":
        reuse = "repaired_artifact_execution"
    else:
        reuse = "generated_program_fresh"
    if contract:
        intent: dict[str, Any] = {
            "purpose": contract.get("purpose") or "unspecified",
            "deliverable": contract.get("deliverable"),
            "acceptance": contract.get("acceptance"),
            "failure_policy": contract.get("failure_policy") or {},
        }
        intent = {key: value for key, value in intent.items() if value is not None}
    else:
        intent = {
            "purpose": f"resolve {role}.{method}",
            "failure_policy": {"on_error": "return_error"},
        }
    if depth > 0 or method == "to_s":
        promotion = "none"
    else:
        promotion = "durable_tool_candidate" if dynamic else "local_pattern"
    return {
        "stance": stance,
        "capability_summary": ".".join(
            [_slug(role), _slug(method), f"args{arg_count}", f"kwargs{kwarg_count}"]
        ),
        "reuse_basis": reuse,
        "contract_intent": intent,
        "promotion_intent": promotion,
    }


def _complete(shape: Mapping[str, Any]) -> bool:
    return all(bool(shape.get(key)) for key in ("stance", "contract_intent", "promotion_intent"))


def solver_shape_fields(shape: Mapping[str, Any] | None) -> dict[str, Any]:
    """The ``solver_shape_*`` log fields of a shape (all null for ``None``)."""
    if shape is None:
        return dict.fromkeys(SOLVER_SHAPE_FIELDS)
    return {
        "solver_shape": dict(shape),
        "solver_shape_complete": _complete(shape),
        "solver_shape_stance": shape.get("stance"),
        "solver_shape_capability_summary": shape.get("capability_summary"),
        "solver_shape_reuse_basis": shape.get("reuse_basis"),
        "solver_shape_contract_intent": shape.get("contract_intent"),
        "solver_shape_promotion_intent": shape.get("promotion_intent"),
    }


def solver_shape_log_fields(
    *,
    role: str,
    method: str,
    depth: int,
    arg_count: int,
    kwarg_count: int,
    contract: Mapping[str, Any] | None,
    program_source: str,
    artifact_hit: bool,
) -> Mapping[str, Any]:
    """``solver_shape_fields(solver_shape(...))`` of one call.

    Without a contract the shape depends on the other arguments alone, so it is built once per
    combination (every logged call carries it) and shared: read it, never change it.
    """
    facts = (role, method, depth, arg_count, kwarg_count, program_source, artifact_hit)
    return _shape_fields(*facts, contract) if contract else _shared_shape_fields(*facts)


def _shape_fields(
    role: str,
    method: str,
    depth: int,
    arg_count: int,
    kwarg_count: int,
    program_source: str,
    artifact_hit: bool,
    contract: Mapping[str, Any] | None = None,
) -> Mapping[str, Any]:
    return solver_shape_fields(
        solver_shape(
            role=role,
            method=method,
            depth=depth,
            arg_count=arg_count,
            kwarg_count=kwarg_count,
            contract=contract,
            program_source=program_source,
            artifact_hit=artifact_hit,
        )
    )


# A contract only counts by being there (solver_shape reads no field of an absent one), so the
# fields of a call without one are the same for the same facts: built once, shared.
_shared_shape_fields = functools.lru_cache(maxsize=1024)(_shape_fields)
