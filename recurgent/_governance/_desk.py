"""The proposals desk: propose, list, show, approve, reject and apply, each as an Outcome.

The operations behind the Agent's reserved methods and ``recurgent proposals`` (ADRs
0086-0088). A developer mistake (a blank proposal type, a target that is not JSON, an unknown
status) raises :class:`~recurgent.errors.UsageError`; everything else is an Outcome:

==============================  ==============================================================
``authority_denied``            the actor may not approve, reject or apply (ADR 0087)
``not_found``                   no readable proposal has that id
``invalid_proposal_state``      the proposal's status does not allow the step
``invalid_proposal_payload``    applying: the proposal does not say what to change, or the
                                runtime refuses it (nothing changed, the status stays)
``proposal_store_full``         proposing: every kept proposal is still pending
``proposal_store_unavailable``  ``proposals.json`` (or a registry an apply changes) cannot be
                                read or written
==============================  ==============================================================

Statuses move ``proposed`` -> ``approved`` | ``rejected``; ``approved`` -> ``applied`` |
``rejected``. ``rejected`` and ``applied`` are final. Each step runs under the book's lock,
so two processes deciding the same proposal cannot both succeed, and an apply runs its
mutation exactly once.
"""

from __future__ import annotations

import math
import secrets
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from recurgent._governance._apply import ApplyContext, PayloadError, mutate
from recurgent._governance._authority import Verb, denied, may_enact, resolve_actor
from recurgent._governance._proposals import (
    ACTIONS_KEPT,
    EVIDENCE_REF_CHARS,
    EVIDENCE_REFS,
    NOTE_CHARS,
    PROPOSAL_BYTES,
    STATUSES,
    SUMMARY_CHARS,
    TYPE_CHARS,
    BookFullError,
    ProposalBook,
    ProposalStoreError,
    checked,
    encoded_size,
    find,
    make_room,
)
from recurgent._governance._role_profiles import RoleProfileMutations
from recurgent._runtime_config import RuntimeSettings
from recurgent._values import utc_timestamp
from recurgent.errors import UsageError
from recurgent.outcome import Outcome

__all__ = ["CLI_ROLE", "TRANSITIONS", "Governance"]

#: Which statuses each step starts from, and the status it leaves.
TRANSITIONS: Mapping[Verb, tuple[frozenset[str], str]] = {
    "approve": (frozenset({"proposed"}), "approved"),
    "reject": (frozenset({"proposed", "approved"}), "rejected"),
    "apply": (frozenset({"approved"}), "applied"),
}
#: The role outcomes of the command line carry (the original's operator agent's role).
CLI_ROLE = "proposal_operator"
_DEPTH = 32


def _plain(value: Any, what: str, depth: int = 0) -> Any:
    """``value`` as JSON data (tuples become lists), or a UsageError naming ``what``."""
    if depth > _DEPTH:
        raise UsageError(f"{what} is nested deeper than {_DEPTH} levels")
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return int(value)
    if isinstance(value, float):
        if not math.isfinite(value):
            raise UsageError(f"{what} holds {value!r}, which JSON cannot hold")
        return float(value)
    if isinstance(value, Mapping):
        plain: dict[str, Any] = {}
        for key, item in value.items():
            if not isinstance(key, str):
                raise UsageError(f"{what} has a key that is not a str: {key!r:.80}")
            plain[key] = _plain(item, what, depth + 1)
        return plain
    if isinstance(value, list | tuple):
        return [_plain(item, what, depth + 1) for item in value]
    raise UsageError(
        f"{what} must be JSON data (dict, list, str, number, bool, None), got {type(value).__name__}"
    )


def _evidence(refs: Any) -> list[str]:
    if refs is None:
        return []
    if isinstance(refs, str):
        refs = [refs]
    if not isinstance(refs, list | tuple):
        raise UsageError(f"evidence_refs must be a list of str, got {type(refs).__name__}")
    kept: list[str] = []
    for ref in refs:
        if not isinstance(ref, str):
            raise UsageError(f"evidence_refs must hold str, got {type(ref).__name__}")
        if len(ref.strip()) > EVIDENCE_REF_CHARS:
            raise UsageError(f"an evidence ref is longer than {EVIDENCE_REF_CHARS} characters")
        if ref.strip():
            kept.append(ref.strip())
    if len(kept) > EVIDENCE_REFS:
        raise UsageError(f"at most {EVIDENCE_REFS} evidence_refs, got {len(kept)}")
    return kept


def _text(value: Any, what: str, limit: int) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise UsageError(f"{what} must be a str, got {type(value).__name__}")
    if len(value) > limit:
        raise UsageError(f"{what} must be at most {limit} characters, got {len(value)}")
    return value


def _proposal_id(value: Any) -> str:
    if not isinstance(value, str):
        raise UsageError(
            f"a proposal id is a str such as 'prop-0123456789abcdef', got {value!r:.80}"
        )
    return value.strip()


@dataclass(frozen=True, slots=True)
class Governance:
    """One agent's (or the command line's) view of the proposals and the right to decide them.

    Attributes:
        book: Where the proposals live.
        role: The agent's role (``None`` on the command line).
        author: Who proposes: ``role``, ``model`` and ``trace_id``, kept in each proposal.
        settings: The agent's runtime settings now (authority, content retention).
        install_settings: Makes new settings the agent's (an applied retention policy).
        role_profiles: The registry role-profile proposals change.
    """

    book: ProposalBook
    role: str | None
    author: Mapping[str, str | None]
    settings: Callable[[], RuntimeSettings]
    install_settings: Callable[[RuntimeSettings], None]
    role_profiles: RoleProfileMutations

    # ------------------------------------------------------------------ outcomes

    def _ok(self, value: Any, method: str, **metadata: Any) -> Outcome:
        return Outcome(
            status="ok",
            value=value,
            tool_role=self.role or CLI_ROLE,
            method_name=method,
            metadata=metadata,
        )

    def _error(
        self,
        error_type: str,
        message: str,
        method: str,
        *,
        retriable: bool = False,
        **metadata: Any,
    ) -> Outcome:
        return Outcome.error(
            error_type=error_type,
            error_message=message,
            retriable=retriable,
            tool_role=self.role or CLI_ROLE,
            method_name=method,
            metadata=metadata,
        )

    def _unavailable(self, error: ProposalStoreError, method: str) -> Outcome:
        return self._error(
            "proposal_store_unavailable", str(error), method, retriable=error.retriable
        )

    # ------------------------------------------------------------------ operations

    def propose(
        self,
        proposal_type: Any,
        *,
        target: Any = None,
        proposed_diff_summary: Any = "",
        evidence_refs: Any = (),
        metadata: Any = None,
    ) -> Outcome:
        """Record a new proposal (status ``proposed``); anyone may propose.

        Returns:
            ``ok`` with the record (its ``id`` is ``prop-`` and 16 hex digits); metadata
            ``dropped_proposals`` lists the closed proposals dropped to make room, if any.

        Raises:
            UsageError: a blank ``proposal_type``, a target or metadata that is not JSON data,
                or a field over its bound.
        """
        if not isinstance(proposal_type, str) or not proposal_type.strip():
            raise UsageError(f"proposal_type must be a non-empty str, got {proposal_type!r:.80}")
        kind = proposal_type.strip()
        if len(kind) > TYPE_CHARS:
            raise UsageError(f"proposal_type must be at most {TYPE_CHARS} characters")
        if metadata is not None and not isinstance(metadata, Mapping):
            raise UsageError(f"metadata must be a mapping, got {type(metadata).__name__}")
        now = utc_timestamp()
        record: dict[str, Any] = {
            "id": "",
            "proposal_type": kind,
            "target": _plain(target, "target"),
            "evidence_refs": _evidence(evidence_refs),
            "proposed_diff_summary": _text(
                proposed_diff_summary, "proposed_diff_summary", SUMMARY_CHARS
            ),
            "metadata": _plain(metadata or {}, "metadata"),
            "status": "proposed",
            "created_at": now,
            "updated_at": now,
            "author_context": dict(self.author),
            "last_action": None,
            "actions": [],
            "applied_mutation": None,
        }
        if encoded_size(record) > PROPOSAL_BYTES:
            raise UsageError(f"a proposal must be at most {PROPOSAL_BYTES} bytes of JSON")
        done: list[Outcome] = []

        def edit(entries: list[Any]) -> bool:
            taken = {entry.get("id") for entry in entries if isinstance(entry, dict)}
            record["id"] = _fresh_id(taken)
            try:
                dropped = make_room(entries)
            except BookFullError as full:
                done.append(self._error("proposal_store_full", str(full), "propose"))
                return False
            entries.append(record)
            extra = {"dropped_proposals": dropped} if dropped else {}
            done.append(self._ok(checked(record), "propose", **extra))
            return True

        try:
            self.book.update(edit)
        except ProposalStoreError as error:
            return self._unavailable(error, "propose")
        return done[0]

    def proposals(self, *, status: Any = None, limit: Any = None) -> Outcome:
        """The proposals, oldest first: only those with ``status``, only the last ``limit``.

        Raises:
            UsageError: an unknown status, or a limit that is not an int >= 0.
        """
        if status is not None and status not in STATUSES:
            raise UsageError(
                f"status must be one of {', '.join(STATUSES)} or None, got {status!r:.80}"
            )
        if limit is not None and (
            isinstance(limit, bool) or not isinstance(limit, int) or limit < 0
        ):
            raise UsageError(f"limit must be an int >= 0 or None, got {limit!r:.80}")
        try:
            entries = self.book.read()
        except ProposalStoreError as error:
            return self._unavailable(error, "proposals")
        records = [checked(entry) for entry in entries]
        readable = [record for record in records if record is not None]
        chosen = [r for r in readable if status is None or r["status"] == status]
        if limit is not None:
            chosen = chosen[len(chosen) - limit :] if limit else []
        unreadable = len(records) - len(readable)
        extra = {"unreadable_entries": unreadable} if unreadable else {}
        return self._ok(chosen, "proposals", **extra)

    def proposal(self, proposal_id: Any) -> Outcome:
        """The proposal ``proposal_id``, or ``not_found``."""
        wanted = _proposal_id(proposal_id)
        try:
            found = find(self.book.read(), wanted)
        except ProposalStoreError as error:
            return self._unavailable(error, "proposal")
        if found is None:
            return self._not_found(wanted, "proposal")
        return self._ok(found[1], "proposal")

    def approve(self, proposal_id: Any, *, actor: Any = None, note: Any = None) -> Outcome:
        """Approve a ``proposed`` proposal (maintainers only)."""
        return self._decide("approve", proposal_id, actor, note)

    def reject(self, proposal_id: Any, *, actor: Any = None, note: Any = None) -> Outcome:
        """Reject a ``proposed`` or ``approved`` proposal (maintainers only)."""
        return self._decide("reject", proposal_id, actor, note)

    def apply(self, proposal_id: Any, *, actor: Any = None, note: Any = None) -> Outcome:
        """Apply an ``approved`` proposal: run its mutation, then mark it ``applied``
        (maintainers only). A mutation that fails leaves the proposal ``approved``."""
        return self._decide("apply", proposal_id, actor, note)

    # ------------------------------------------------------------------ steps

    def _not_found(self, proposal_id: str, method: str) -> Outcome:
        return self._error(
            "not_found",
            f"Proposal {proposal_id!r:.80} not found in {self.book.where}",
            method,
            proposal_id=proposal_id[:80],
        )

    def _decide(self, verb: Verb, proposal_id: Any, actor: Any, note: Any) -> Outcome:
        wanted = _proposal_id(proposal_id)
        remark = _text(note, "note", NOTE_CHARS) or None
        who = resolve_actor(actor)
        method = f"{verb}_proposal"
        settings = self.settings()
        if not may_enact(settings, who):
            return denied(who, verb, settings, role=self.role or CLI_ROLE)
        allowed, after = TRANSITIONS[verb]
        done: list[Outcome] = []

        def edit(entries: list[Any]) -> bool:
            found = find(entries, wanted)
            if found is None:
                done.append(self._not_found(wanted, method))
                return False
            index, record = found
            if record["status"] not in allowed:
                done.append(self._wrong_state(record, verb, allowed))
                return False
            mutation: dict[str, Any] | None = None
            if verb == "apply":
                context = ApplyContext(
                    role=self.role,
                    actor=who,
                    note=remark,
                    settings=self.settings(),
                    install_settings=self.install_settings,
                    role_profiles=self.role_profiles,
                )
                try:
                    mutation = mutate(record, context)
                except PayloadError as invalid:
                    done.append(
                        self._error(
                            "invalid_proposal_payload",
                            f"Proposal {wanted} is invalid: {invalid}",
                            method,
                            proposal_id=wanted,
                            proposal_type=record["proposal_type"],
                        )
                    )
                    return False
            entries[index] = _stepped(record, after, who, remark, mutation)
            done.append(self._ok(checked(entries[index]), method))
            return True

        try:
            self.book.update(edit)
        except ProposalStoreError as error:
            return self._unavailable(error, method)
        return done[0]

    def _wrong_state(
        self, record: Mapping[str, Any], verb: Verb, allowed: frozenset[str]
    ) -> Outcome:
        status = record["status"]
        return self._error(
            "invalid_proposal_state",
            f"Proposal {record['id']} is {status}; to {verb} it, it must be "
            + " or ".join(sorted(allowed))
            + ".",
            f"{verb}_proposal",
            proposal_id=record["id"],
            status=status,
            allowed_statuses=sorted(allowed),
        )


def _fresh_id(taken: set[Any]) -> str:
    while True:
        candidate = f"prop-{secrets.token_hex(8)}"
        if candidate not in taken:
            return candidate


def _stepped(
    record: Mapping[str, Any],
    status: str,
    actor: str,
    note: str | None,
    mutation: dict[str, Any] | None,
) -> dict[str, Any]:
    """``record`` after one step: its status, who took it and when, what it changed."""
    now = utc_timestamp()
    action: dict[str, Any] = {"status": status, "actor": actor, "at": now, "note": note}
    stepped = dict(record)
    stepped.update(
        status=status,
        updated_at=now,
        last_action=action,
        actions=[*record["actions"], action][-ACTIONS_KEPT:],
    )
    if mutation is not None:
        stepped["applied_mutation"] = mutation
    return stepped
