"""``recurgent tools scorecards | decisions | set-lifecycle``: the promotion lifecycle of one
stored method, seen and overridden from the command line (ADR 0081).

``scorecards`` and ``decisions`` only read (a damaged file is shown with its state, never moved);
``set-lifecycle`` is a maintainer's override, written at once under the file's lock (``--dry-run``
previews it) and recorded in the artifact twice: in ``lifecycle.manual_overrides`` and in the
ledger. Output goes through the store CLI's escaping stream (ADR 0071).
"""

from __future__ import annotations

import argparse
import json
import re
from collections.abc import Mapping
from pathlib import Path
from typing import Any, TextIO

from pydantic import ValidationError

from recurgent._cli_shared import refuse
from recurgent._os_user import os_user_name
from recurgent._runtime_config import runtime_config
from recurgent._store._artifacts import RUNTIME_TAG, ArtifactRecord
from recurgent._store._files import Loaded, identity_of, read_json, update_json
from recurgent._store._ownership import same_key
from recurgent._store._paths import artifact_path
from recurgent._store._promotion import POLICY, apply_override, metrics, state_of
from recurgent._store._promotion_format import LIFECYCLE_STATES, LifecycleState
from recurgent._values import utc_timestamp
from recurgent.errors import UsageError

__all__ = ["COMMANDS", "add_commands", "resolve_checksum", "run"]

COMMANDS = frozenset({"scorecards", "decisions", "set-lifecycle"})
_HEX = re.compile(r"[0-9a-f]{8,64}")
_SHORT = 19  # "sha256:" and 12 hex digits in text tables


def _limit(text: str) -> int:
    try:
        value = int(text, 10)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a number of decisions >= 1, got {text!r}")
    return value


def add_commands(
    commands: argparse._SubParsersAction[argparse.ArgumentParser],
    common: argparse.ArgumentParser,
) -> None:
    """Register the three lifecycle commands on the ``recurgent tools`` parser."""
    scorecards = commands.add_parser(
        "scorecards",
        parents=[common],
        help="each code version of a method: lifecycle state, calls, successes, contract rate",
    )
    scorecards.add_argument("role", metavar="ROLE")
    scorecards.add_argument("method", metavar="METHOD")
    decisions = commands.add_parser(
        "decisions", parents=[common], help="the promotion ledger of a method, with rationale"
    )
    decisions.add_argument("role", metavar="ROLE")
    decisions.add_argument("method", metavar="METHOD")
    decisions.add_argument(
        "--limit", type=_limit, metavar="N", help="only the N most recent decisions"
    )
    override = commands.add_parser(
        "set-lifecycle",
        parents=[common],
        help="set a code version's lifecycle state by hand (a maintainer override, recorded)",
    )
    override.add_argument("role", metavar="ROLE")
    override.add_argument("method", metavar="METHOD")
    override.add_argument(
        "checksum", metavar="CHECKSUM", help="sha256:<hex>, or at least 8 of its hex digits"
    )
    override.add_argument("state", metavar="STATE", choices=LIFECYCLE_STATES)
    override.add_argument("--reason", metavar="TEXT", default="manual override")
    override.add_argument(
        "--actor", metavar="NAME", help="who decides (default: the OS user); must be a maintainer"
    )
    mode = override.add_mutually_exclusive_group()
    mode.add_argument("--dry-run", action="store_true", help="show the change, write nothing")
    mode.add_argument(
        "--apply", action="store_true", help="write the change (the default; the original's flag)"
    )


def run(args: argparse.Namespace, root: Path, out: TextIO, err: TextIO) -> int:
    """Run one of :data:`COMMANDS` (0 done, 1 nothing stored / refused / damaged, 2 a
    ``RECURGENT_*`` variable the two commands reading the settings cannot read)."""
    if args.command == "decisions":
        return _decisions(args, root, out, err)
    try:
        settings = runtime_config()
    except UsageError as error:
        # A usage error, as `recurgent proposals` says it: never a silent default (a
        # scorecard showing enforcement off) and never an override judged on a guess.
        _refuse(args, out, err, "usage_error", error.message)
        return 2
    if args.command == "scorecards":
        return _scorecards(args, root, out, err, settings)
    return _set_lifecycle(args, root, out, err, settings)


def _parse(loaded: Loaded) -> tuple[ArtifactRecord | None, str]:
    if loaded.state != "ok" or loaded.data is None:
        return None, loaded.state
    if loaded.data.get("runtime") != RUNTIME_TAG:
        return None, "foreign_runtime"
    try:
        return ArtifactRecord.model_validate(loaded.data), "ok"
    except ValidationError:
        return None, "invalid_record"


def _refuse(args: argparse.Namespace, out: TextIO, err: TextIO, error_type: str, why: str) -> int:
    return refuse(args.command, error_type, why, as_json=args.json, out=out, err=err)


def _missing(args: argparse.Namespace, root: Path) -> str:
    return f"nothing stored for {args.role}.{args.method} under {root}"


def _read(
    args: argparse.Namespace, root: Path, out: TextIO, err: TextIO
) -> tuple[ArtifactRecord, Path] | None:
    path = artifact_path(root, args.role, args.method)
    loaded = read_json(path, quarantine_corrupt=False, root=root)
    record, state = _parse(loaded)
    if record is not None:
        return record, path
    if state == "missing":
        _refuse(args, out, err, "not_found", _missing(args, root))
    else:
        why = f"{args.role}.{args.method} cannot be read ({state}): {path}"
        _refuse(args, out, err, "unreadable_artifact", why)
    return None


def _dump(value: Any, out: TextIO) -> None:
    out.write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")


def _known(record: ArtifactRecord) -> list[str]:
    """Every version the record knows, newest first as far as it can tell."""
    known: list[str] = []
    if record.code_checksum and record.code.strip():
        known.append(record.code_checksum)
    lifecycle = record.lifecycle
    groups = [
        reversed(list(record.versions)),
        reversed(list(record.scorecards)),
        reversed(list(lifecycle.versions)) if lifecycle is not None else [],
    ]
    for group in groups:
        known.extend(digest for digest in group if digest not in known)
    return known


def _row(record: ArtifactRecord, digest: str) -> dict[str, Any]:
    card = record.scorecards.get(digest)
    numbers = metrics(card)
    lifecycle = record.lifecycle
    entry = lifecycle.versions.get(digest) if lifecycle is not None else None
    return {
        "checksum": digest,
        "lifecycle_state": entry.lifecycle_state if entry is not None else None,
        "current": digest == record.code_checksum,
        "incumbent": lifecycle is not None and lifecycle.incumbent_durable_checksum == digest,
        "code_kept": digest in record.versions or digest == record.code_checksum,
        "calls": numbers["calls"],
        "successes": numbers["successes"],
        "failures": numbers["failures"],
        "domain_errors": card.domain_errors if card is not None else 0,
        "contract_checks": numbers["contract_checks"],
        "contract_pass_rate": numbers["contract_pass_rate"],
        "sessions": numbers["session_count"],
        "role_profile_pass_rate": numbers["role_profile_pass_rate"],
        "guardrail_retry_exhausted": numbers["guardrail_retry_exhausted"],
        "outcome_retry_exhausted": numbers["outcome_retry_exhausted"],
        "wrong_boundary_count": numbers["wrong_boundary_count"],
        "provenance_violations": numbers["provenance_violations"],
        "user_corrections": numbers["user_correction_count"],
        "last_decision": entry.last_decision if entry is not None else None,
        "last_decision_at": entry.last_decision_at if entry is not None else None,
    }


def _scorecards(
    args: argparse.Namespace, root: Path, out: TextIO, err: TextIO, settings: Mapping[str, Any]
) -> int:
    found = _read(args, root, out, err)
    if found is None:
        return 1
    record, path = found
    rows = [_row(record, digest) for digest in _known(record)]
    lifecycle = record.lifecycle
    ledger = lifecycle.shadow_ledger if lifecycle is not None else None
    enforced = bool(settings["promotion_enforcement_enabled"])
    if args.json:
        _dump(
            {
                "role": record.role,
                "method": record.method_name,
                "artifact_path": str(path),
                "current_checksum": record.code_checksum,
                "policy_version": lifecycle.policy_version if lifecycle else POLICY.version,
                "incumbent_durable_checksum": (
                    lifecycle.incumbent_durable_checksum if lifecycle else None
                ),
                "promotion_enforcement_enabled": enforced,
                "versions": rows,
                "scorecards": {d: c.model_dump(mode="json") for d, c in record.scorecards.items()},
                "lifecycle": {
                    "policy_version": lifecycle.policy_version if lifecycle else None,
                    "incumbent_durable_checksum": (
                        lifecycle.incumbent_durable_checksum if lifecycle else None
                    ),
                    "legacy_compatibility_mode": (
                        lifecycle.legacy_compatibility_mode if lifecycle else False
                    ),
                    "versions": (
                        {d: e.model_dump(mode="json") for d, e in lifecycle.versions.items()}
                        if lifecycle
                        else {}
                    ),
                    "shadow_ledger_summary": {
                        "evaluations": len(ledger.evaluations) if ledger else 0,
                        "false_promotion_count": ledger.false_promotion_count if ledger else 0,
                        "false_hold_count": ledger.false_hold_count if ledger else 0,
                    },
                    # The records, as the artifact holds them (ADR 0128), not their count.
                    "manual_overrides": (
                        [o.model_dump(mode="json") for o in lifecycle.manual_overrides]
                        if lifecycle
                        else []
                    ),
                },
            },
            out,
        )
        return 0
    out.write(
        f"{record.role}.{record.method_name}  policy {POLICY.version}  "
        f"enforcement {'on' if enforced else 'off'}  {path}\n"
    )
    if lifecycle is None:
        out.write("No lifecycle data yet (evaluated at the next call with shadow mode on).\n")
    headers = ("CHECKSUM", "STATE", "CALLS", "OK", "FAILED", "CONTRACT", "SESSIONS", "")
    cells = [
        (
            row["checksum"],
            row["lifecycle_state"] or "-",
            str(row["calls"]),
            str(row["successes"]),
            str(row["failures"]),
            f"{row['contract_pass_rate']:.2f}" if row["contract_checks"] else "-",
            str(row["sessions"]),
            ", ".join(
                label
                for label, on in (
                    ("current", row["current"]),
                    ("incumbent", row["incumbent"]),
                    ("code not kept", not row["code_kept"]),
                )
                if on
            ),
        )
        for row in rows
    ]
    widths = [max(len(line[i]) for line in [headers, *cells]) for i in range(len(headers))]
    for line in [headers, *cells]:
        out.write("  ".join(c.ljust(w) for c, w in zip(line, widths, strict=True)).rstrip() + "\n")
    return 0


def _describe(entry: Mapping[str, Any]) -> str:
    rationale = entry.get("rationale") or {}
    moved = f"{entry.get('from_state') or '-'} -> {entry.get('to_state') or '-'}"
    head = (
        f"{entry.get('at')}  {entry.get('decision'):<18}  {moved:<22}  "
        f"{str(entry.get('candidate_artifact_id'))[:_SHORT]}"
    )
    if entry.get("decision_type") == "manual_override":
        return f"{head}  by {rationale.get('actor')}: {rationale.get('reason')}"
    numbers = (
        f"calls={rationale.get('calls')} sessions={rationale.get('session_count')} "
        f"contract={rationale.get('contract_pass_rate')} failures={rationale.get('failures')}"
    )
    covered = entry.get("calls_covered")
    if isinstance(covered, int) and covered > 1:
        numbers += f" batch={covered}"
    held = rationale.get("failed_checks")
    gate = "gate=pass" if rationale.get("gate_pass") else f"gate: {', '.join(map(str, held or []))}"
    return f"{head}  {numbers}  {gate}"


def _decisions(args: argparse.Namespace, root: Path, out: TextIO, err: TextIO) -> int:
    found = _read(args, root, out, err)
    if found is None:
        return 1
    record, path = found
    lifecycle = record.lifecycle
    entries = (
        [e.model_dump(mode="json") for e in lifecycle.shadow_ledger.evaluations]
        if lifecycle
        else []
    )
    if args.limit is not None:
        entries = entries[-args.limit :]
    if args.json:
        _dump(
            {
                "role": record.role,
                "method": record.method_name,
                "artifact_path": str(path),
                "decision_count": len(entries),
                "decisions": entries,
            },
            out,
        )
        return 0
    if not entries:
        out.write(f"No promotion decisions recorded for {record.role}.{record.method_name}.\n")
        return 0
    for entry in entries:
        out.write(_describe(entry) + "\n")
    return 0


def resolve_checksum(record: ArtifactRecord, text: str) -> tuple[str | None, str]:
    """The version ``text`` names (``sha256:<hex>``, or at least 8 leading hex digits with or
    without the prefix), or ``None`` and why not (unknown, ambiguous, malformed)."""
    wanted = text.strip().lower().removeprefix("sha256:")
    if not _HEX.fullmatch(wanted):
        return None, (
            f"{text!r} is not a checksum: give sha256:<64 hex digits> or at least 8 of them"
        )
    known = _known(record)
    matches = [digest for digest in known if digest.removeprefix("sha256:").startswith(wanted)]
    if len(matches) == 1:
        return matches[0], ""
    if not matches:
        listed = ", ".join(known) or "none"
        return None, f"no version {text} in {record.role}.{record.method_name} (known: {listed})"
    return None, f"{text} is ambiguous: {', '.join(matches)}"


def _actor(args: argparse.Namespace) -> str:
    if args.actor is not None and args.actor.strip():
        return str(args.actor.strip())
    return os_user_name() or "unknown"


def _refusal(actor: str, settings: Mapping[str, Any]) -> tuple[str, str] | None:
    """The error type and why ``actor`` may not override, from the runtime settings (None:
    allowed)."""
    if not settings["authority_enforcement_enabled"]:
        return None
    maintainers = settings["authority_maintainers"]
    if actor.lower() in maintainers:
        return None
    listed = ", ".join(maintainers) or "nobody"
    return "authority_denied", (
        f"authority_denied: {actor} is not a maintainer (maintainers: {listed}; set "
        "RECURGENT_AUTHORITY_MAINTAINERS)"
    )


def _set_lifecycle(
    args: argparse.Namespace, root: Path, out: TextIO, err: TextIO, settings: Mapping[str, Any]
) -> int:
    actor = _actor(args)
    refused = _refusal(actor, settings)
    if refused is not None:
        return _refuse(args, out, err, *refused)
    path = artifact_path(root, args.role, args.method)
    if identity_of(path) is None:
        # Checked before locking: a lock would make the role's directory for nothing.
        return _refuse(args, out, err, "not_found", _missing(args, root))
    state: LifecycleState = args.state
    now = utc_timestamp()
    problems: list[tuple[str, str]] = []
    report: dict[str, Any] = {}

    def change(loaded: Loaded) -> dict[str, Any] | None:
        record, reading = _parse(loaded)
        if record is None:
            problems.append(
                ("not_found", _missing(args, root))
                if reading == "missing"
                else (
                    "unreadable_artifact",
                    f"{args.role}.{args.method} cannot be changed ({reading}): {path}",
                )
            )
            return None
        if not same_key(record, args.role, args.method):
            why = f"{path} holds {record.role}.{record.method_name} (key_mismatch)"
            problems.append(("unreadable_artifact", why))
            return None
        digest, why = resolve_checksum(record, args.checksum)
        if digest is None:
            problems.append(("unknown_version", why))
            return None
        previous = state_of(record, digest)
        apply_override(record, digest, state, actor=actor, reason=args.reason, now=now)
        assert record.lifecycle is not None
        report.update(
            dry_run=bool(args.dry_run),
            artifact_path=str(path),
            role=record.role,
            method=record.method_name,
            checksum=digest,
            previous_state=previous,
            state=state,
            actor=actor,
            reason=args.reason,
            code_kept=digest in record.versions or digest == record.code_checksum,
            updated_entry=record.lifecycle.versions[digest].model_dump(mode="json"),
            incumbent_durable_checksum=record.lifecycle.incumbent_durable_checksum,
        )
        return None if args.dry_run else record.to_json()

    if args.dry_run:
        change(read_json(path, quarantine_corrupt=False, root=root))
    else:
        update_json(path, change, root=root, durable=True)
    if problems:
        return _refuse(args, out, err, *problems[0])
    if args.json:
        _dump(report, out)
        return 0
    verb = "Would set" if args.dry_run else "Set"
    out.write(
        f"{verb} {report['role']}.{report['method']} {report['checksum']}: "
        f"{report['previous_state'] or 'no state'} -> {state} (manual override by {actor})\n"
    )
    if not report["code_kept"]:
        out.write("Its code is no longer kept: enforcement cannot run this version.\n")
    if args.dry_run:
        out.write("Dry run: nothing was written.\n")
    return 0
