"""The proposals desk: every status transition, every error type, the checks on what is proposed
(ADR 0086)."""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any

import pytest

from recurgent._governance import _proposals
from recurgent._governance._desk import Governance
from recurgent.errors import UsageError
from specs.governance.support import approved, make_desk

ID_FORM = re.compile(r"prop-[0-9a-f]{16}")
UNKNOWN = "prop-ffffffffffffffff"


@pytest.fixture
def desk(tmp_path: Path) -> Governance:
    """A desk on proposals.json under tmp_path; alice is the maintainer."""
    return make_desk(root=tmp_path / "store")[0]


def _status(desk: Governance, proposal_id: str) -> str:
    status: str = desk.proposal(proposal_id).value["status"]
    return status


class TestPropose:
    """A proposal is recorded with its fields, an id, and who proposed it."""

    def test_the_record_holds_every_field(self, desk: Governance) -> None:
        """The value is the stored record: id prop-<16 hex>, status proposed, author context."""
        outcome = desk.propose(
            " tool_patch ",
            target={"role": "calculator", "methods": ("add", "sub")},
            proposed_diff_summary="keep the total in context['value']",
            evidence_refs=["trace:1", "  ", " call:2 "],
            metadata={"reason": "drift"},
        )

        record = outcome.value
        assert (outcome.status, outcome.tool_role, outcome.method_name) == (
            "ok",
            "calculator",
            "propose",
        )
        assert ID_FORM.fullmatch(record["id"])
        assert record == {
            "id": record["id"],
            "proposal_type": "tool_patch",
            "target": {"role": "calculator", "methods": ["add", "sub"]},
            "evidence_refs": ["trace:1", "call:2"],
            "proposed_diff_summary": "keep the total in context['value']",
            "metadata": {"reason": "drift"},
            "status": "proposed",
            "created_at": record["created_at"],
            "updated_at": record["created_at"],
            "author_context": {"role": "calculator", "model": "test-model", "trace_id": "trace-1"},
            "last_action": None,
            "actions": [],
            "applied_mutation": None,
        }
        assert outcome.metadata == {}

    def test_the_record_is_what_the_book_holds(self, desk: Governance, tmp_path: Path) -> None:
        """proposals.json holds the same record the Outcome carries."""
        record = desk.propose("tool_patch").value

        stored = json.loads((tmp_path / "store" / "proposals.json").read_text())
        assert stored == {"schema_version": 1, "proposals": [record]}

    def test_ids_are_distinct(self, desk: Governance) -> None:
        """Twenty proposals get twenty ids."""
        ids = {desk.propose("tool_patch").value["id"] for _ in range(20)}

        assert len(ids) == 20

    def test_a_single_evidence_ref_may_be_a_str(self, desk: Governance) -> None:
        """evidence_refs='trace:1' is kept as ['trace:1'] (the original's Array())."""
        assert desk.propose("x", evidence_refs="trace:1").value["evidence_refs"] == ["trace:1"]

    @pytest.mark.parametrize(
        ("fields", "message"),
        [
            ({"proposal_type": ""}, "proposal_type must be a non-empty str"),
            ({"proposal_type": "   "}, "proposal_type must be a non-empty str"),
            ({"proposal_type": None}, "proposal_type must be a non-empty str"),
            ({"proposal_type": "x" * 101}, "at most 100 characters"),
            ({"target": {1, 2}}, "target must be JSON data"),
            ({"target": {1: "a"}}, "target has a key that is not a str"),
            ({"target": float("nan")}, "which JSON cannot hold"),
            ({"target": "x" * 40_000}, "at most 32768 bytes"),
            ({"metadata": ["a"]}, "metadata must be a mapping"),
            ({"metadata": {"f": object()}}, "metadata must be JSON data"),
            ({"proposed_diff_summary": 3}, "proposed_diff_summary must be a str"),
            ({"proposed_diff_summary": "x" * 16_001}, "at most 16000 characters"),
            ({"evidence_refs": [1]}, "evidence_refs must hold str"),
            ({"evidence_refs": {"a": 1}}, "evidence_refs must be a list of str"),
            ({"evidence_refs": ["x"] * 101}, "at most 100 evidence_refs"),
            ({"evidence_refs": ["x" * 1_001]}, "longer than 1000 characters"),
        ],
    )
    def test_a_bad_field_is_a_usage_error_and_nothing_is_written(
        self, tmp_path: Path, fields: dict[str, Any], message: str
    ) -> None:
        """Each developer mistake raises UsageError naming it; no file appears."""
        desk = make_desk(root=tmp_path / "store")[0]
        arguments = {"proposal_type": "tool_patch", **fields}

        with pytest.raises(UsageError, match=re.escape(message)):
            desk.propose(arguments.pop("proposal_type"), **arguments)

        assert not (tmp_path / "store" / "proposals.json").exists()

    def test_a_target_nested_too_deep_is_a_usage_error(self, desk: Governance) -> None:
        """A target nested 40 levels deep is refused before any encoding."""
        deep: Any = "leaf"
        for _ in range(40):
            deep = [deep]

        with pytest.raises(UsageError, match="nested deeper than 32 levels"):
            desk.propose("x", target=deep)


class TestTransitions:
    """proposed -> approved | rejected; approved -> applied | rejected; the rest is refused."""

    def test_approve_then_apply(self, desk: Governance) -> None:
        """Both steps are recorded in actions, the last in last_action, with actor and note."""
        proposal_id = desk.propose("tool_patch").value["id"]

        approving = desk.approve(proposal_id, actor="alice", note="looks right")
        applying = desk.apply(proposal_id, actor="Alice")

        record = applying.value
        assert approving.value["status"] == "approved"
        assert (applying.tool_role, applying.method_name) == ("calculator", "apply_proposal")
        assert record["status"] == "applied"
        assert [(a["status"], a["actor"], a["note"]) for a in record["actions"]] == [
            ("approved", "alice", "looks right"),
            ("applied", "Alice", None),
        ]
        assert record["last_action"] == record["actions"][-1]
        assert record["updated_at"] == record["last_action"]["at"]
        assert record["applied_mutation"] is None

    def test_reject_a_proposed_proposal(self, desk: Governance) -> None:
        """proposed -> rejected, with the note."""
        proposal_id = desk.propose("tool_patch").value["id"]

        outcome = desk.reject(proposal_id, actor="alice", note="no")

        assert (outcome.value["status"], outcome.value["last_action"]["note"]) == ("rejected", "no")

    def test_reject_an_approved_proposal(self, desk: Governance) -> None:
        """approved -> rejected: a maintainer may change their mind before it is applied."""
        proposal_id = approved(desk, "tool_patch")

        assert desk.reject(proposal_id, actor="alice").value["status"] == "rejected"

    @pytest.mark.parametrize(
        ("history", "verb", "allowed"),
        [
            ([], "apply", ["approved"]),
            (["approve"], "approve", ["proposed"]),
            (["reject"], "approve", ["proposed"]),
            (["reject"], "apply", ["approved"]),
            (["reject"], "reject", ["approved", "proposed"]),
            (["approve", "apply"], "apply", ["approved"]),
            (["approve", "apply"], "approve", ["proposed"]),
            (["approve", "apply"], "reject", ["approved", "proposed"]),
        ],
    )
    def test_a_step_from_the_wrong_status_is_invalid_proposal_state(
        self, desk: Governance, history: list[str], verb: str, allowed: list[str]
    ) -> None:
        """The step is refused with the status and the allowed ones; the status stays."""
        proposal_id = desk.propose("tool_patch").value["id"]
        for step in history:
            assert getattr(desk, step)(proposal_id, actor="alice").status == "ok"
        status = _status(desk, proposal_id)

        outcome = getattr(desk, verb)(proposal_id, actor="alice")

        assert (outcome.status, outcome.error_type, outcome.retriable) == (
            "error",
            "invalid_proposal_state",
            False,
        )
        assert outcome.metadata == {
            "proposal_id": proposal_id,
            "status": status,
            "allowed_statuses": allowed,
        }
        assert outcome.error_message == (
            f"Proposal {proposal_id} is {status}; to {verb} it, it must be "
            + " or ".join(allowed)
            + "."
        )
        assert _status(desk, proposal_id) == status

    @pytest.mark.parametrize("verb", ["approve", "reject", "apply"])
    def test_an_unknown_id_is_not_found(self, desk: Governance, verb: str) -> None:
        """A maintainer naming an unknown id gets not_found with the id."""
        outcome = getattr(desk, verb)(UNKNOWN, actor="alice")

        assert (outcome.error_type, outcome.metadata) == ("not_found", {"proposal_id": UNKNOWN})
        assert outcome.method_name == f"{verb}_proposal"

    def test_two_threads_applying_at_once_apply_once(self, tmp_path: Path) -> None:
        """Eight threads apply one approved role-profile proposal: one applies, seven get
        invalid_proposal_state, and the registry is changed once."""
        desk, fake, _ = make_desk(root=tmp_path / "store")
        proposal_id = approved(
            desk,
            "role_profile_update",
            metadata={"action": "activate", "version": 2, "role": "calculator"},
        )
        results: list[str] = []
        start = threading.Barrier(8)

        def apply() -> None:
            start.wait()
            outcome = desk.apply(proposal_id, actor="alice")
            results.append(outcome.error_type or outcome.value["status"])

        threads = [threading.Thread(target=apply) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()

        assert sorted(results) == ["applied"] + ["invalid_proposal_state"] * 7
        assert [call[0] for call in fake.calls] == ["activate"]


class TestReading:
    """proposals() filters by status and keeps the last N; proposal() finds one."""

    def test_filter_and_limit(self, desk: Governance) -> None:
        """Oldest first; status picks; limit keeps the last N; limit 0 is empty."""
        ids = [desk.propose("tool_patch", target=n).value["id"] for n in range(4)]
        desk.approve(ids[1], actor="alice")
        desk.approve(ids[3], actor="alice")

        everything = desk.proposals()
        approved_ones = desk.proposals(status="approved")

        assert (everything.tool_role, everything.method_name) == ("calculator", "proposals")
        assert [p["id"] for p in everything.value] == ids
        assert [p["id"] for p in approved_ones.value] == [ids[1], ids[3]]
        assert [p["id"] for p in desk.proposals(limit=2).value] == ids[2:]
        assert [p["id"] for p in desk.proposals(status="proposed", limit=1).value] == [ids[2]]
        assert desk.proposals(limit=0).value == []
        assert desk.proposals(status="applied").value == []

    def test_proposal_returns_the_record_or_not_found(self, desk: Governance) -> None:
        """proposal(id) is the record; an unknown id is not_found naming the book."""
        record = desk.propose("tool_patch").value

        found = desk.proposal(record["id"])
        missing = desk.proposal(UNKNOWN)

        assert (found.value, found.method_name) == (record, "proposal")
        assert (missing.error_type, missing.method_name) == ("not_found", "proposal")
        assert "proposals.json" in str(missing.error_message)

    def test_unreadable_entries_are_counted_not_shown(self, tmp_path: Path) -> None:
        """A junk entry in the file is left out of the list and counted in the metadata."""
        desk = make_desk(root=tmp_path / "store")[0]
        record = desk.propose("tool_patch").value
        path = tmp_path / "store" / "proposals.json"
        data = json.loads(path.read_text())
        data["proposals"].insert(0, {"id": "prop-x"})
        path.write_text(json.dumps(data))

        outcome = desk.proposals()

        assert (outcome.value, outcome.metadata) == ([record], {"unreadable_entries": 1})

    @pytest.mark.parametrize(
        ("arguments", "message"),
        [
            ({"status": "done"}, "status must be one of proposed, approved, rejected, applied"),
            ({"limit": -1}, "limit must be an int >= 0"),
            ({"limit": True}, "limit must be an int >= 0"),
            ({"limit": "3"}, "limit must be an int >= 0"),
        ],
    )
    def test_bad_filters_are_usage_errors(
        self, desk: Governance, arguments: dict[str, Any], message: str
    ) -> None:
        """An unknown status or a bad limit raises UsageError."""
        with pytest.raises(UsageError, match=message):
            desk.proposals(**arguments)

    @pytest.mark.parametrize("proposal_id", [None, 7, ["prop-1"]])
    def test_an_id_that_is_not_a_str_is_a_usage_error(
        self, desk: Governance, proposal_id: Any
    ) -> None:
        """proposal(7) raises UsageError showing the expected form."""
        with pytest.raises(UsageError, match="a proposal id is a str"):
            desk.proposal(proposal_id)

    def test_a_note_over_its_bound_is_a_usage_error(self, desk: Governance) -> None:
        """A 1,001-character note raises UsageError; the proposal stays proposed."""
        proposal_id = desk.propose("tool_patch").value["id"]

        with pytest.raises(UsageError, match="note must be at most 1000 characters"):
            desk.approve(proposal_id, actor="alice", note="x" * 1_001)

        assert _status(desk, proposal_id) == "proposed"


class TestBounds:
    """The book keeps MAX_PROPOSALS entries and never drops a pending one."""

    def test_a_full_book_drops_the_oldest_closed_proposal_and_says_so(
        self, desk: Governance, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """With room for 3: the 4th proposal drops the rejected one, named in the metadata."""
        monkeypatch.setattr(_proposals, "MAX_PROPOSALS", 3)
        first = desk.propose("a").value["id"]
        second = desk.propose("b").value["id"]
        third = desk.propose("c").value["id"]
        desk.reject(second, actor="alice")

        outcome = desk.propose("d")

        assert outcome.metadata == {"dropped_proposals": [second]}
        assert [p["id"] for p in desk.proposals().value] == [first, third, outcome.value["id"]]

    def test_a_book_full_of_pending_proposals_refuses_a_new_one(
        self, desk: Governance, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """All pending: proposal_store_full, and the book is unchanged."""
        monkeypatch.setattr(_proposals, "MAX_PROPOSALS", 2)
        kept = [desk.propose("a").value["id"], approved(desk, "b")]

        outcome = desk.propose("c")

        assert (outcome.status, outcome.error_type, outcome.retriable) == (
            "error",
            "proposal_store_full",
            False,
        )
        assert "approve, reject or apply some" in str(outcome.error_message)
        assert [p["id"] for p in desk.proposals().value] == kept


class TestStoreUnavailable:
    """A book that cannot be read or written is an Outcome, never an exception."""

    def test_an_unlockable_book_is_a_retriable_error(self, tmp_path: Path) -> None:
        """The lock path is a directory: propose and approve give proposal_store_unavailable."""
        root = tmp_path / "store"
        desk = make_desk(root=root)[0]
        proposal_id = desk.propose("tool_patch").value["id"]
        (root / "proposals.json.lock").unlink(missing_ok=True)
        (root / "proposals.json.lock").mkdir()

        proposing = desk.propose("tool_patch")
        approving = desk.approve(proposal_id, actor="alice")

        assert (proposing.error_type, proposing.retriable) == ("proposal_store_unavailable", True)
        assert (approving.error_type, approving.method_name) == (
            "proposal_store_unavailable",
            "approve_proposal",
        )
        assert _status(desk, proposal_id) == "proposed"

    def test_a_book_of_another_schema_version_is_unavailable_for_reading(
        self, tmp_path: Path
    ) -> None:
        """schema_version 2: proposals() and proposal() say so and change nothing."""
        root = tmp_path / "store"
        root.mkdir(mode=0o700)
        path = root / "proposals.json"
        path.write_text('{"schema_version": 2, "proposals": []}')
        path.chmod(0o600)
        desk = make_desk(root=root)[0]

        listing = desk.proposals()
        one = desk.proposal(UNKNOWN)

        assert (listing.error_type, listing.retriable) == ("proposal_store_unavailable", False)
        assert one.error_type == "proposal_store_unavailable"
        assert path.read_text() == '{"schema_version": 2, "proposals": []}'
