"""The batch example's program: triage one support ticket (a CSV row) into a queue."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from acceptance.programs import ProgramKey

TRIAGE_ROLE = "support ticket triage: route each ticket (a CSV row) to one queue"

TRIAGE = """\
row = args[0]
subject = str(row.get("subject") or "").strip().lower()
if not subject:
    raise ValueError(f"ticket {row.get('id')} has no subject")
amount = float(row.get("amount") or 0)
if "refund" in subject or "charged" in subject:
    queue = "billing-priority" if amount >= 100 else "billing"
elif "crash" in subject or "error" in subject:
    queue = "bugs"
elif "password" in subject or "login" in subject:
    queue = "accounts"
else:
    queue = "general"
result = queue
"""

PROGRAMS: dict[ProgramKey, str | None] = {(TRIAGE_ROLE, "triage"): TRIAGE}
