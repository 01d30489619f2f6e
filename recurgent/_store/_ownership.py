"""Who may fold a call into a stored record: the rules every write of an artifact applies.

A write carries a call (or a batch of persisted runs, told as the call record of their
program) into the record now in the file. It is refused when the file holds another role's or
method's record (paths are short digests and may collide, red team R8), the host's code and
the call is not the host's (ADR 0074), or a model's code and the call's program came from a
test double (ADR 0077). A write made at once and a batch written a second later apply the same
rules (ADR 0131): the file may have changed between a run and its flush.
"""

from __future__ import annotations

from recurgent._store._artifacts import HOST, ArtifactRecord, CallRecord
from recurgent._store._files import stored_text
from recurgent._store._provenance import write_refusal
from recurgent._store._versions import runs_kept_version

__all__ = ["refusal", "same_key"]


def same_key(record: ArtifactRecord, role: str, method: str) -> bool:
    """Whether ``record`` is the one of ``role.method``, as its file gives the names back (a
    name with a lone surrogate is stored with U+FFFD in its place: red team R10)."""
    stored = (record.role, record.method_name)
    return stored == (role, method) or stored == (stored_text(role), stored_text(method))


def refusal(record: ArtifactRecord, call: CallRecord, digest: str) -> str | None:
    """Why ``call`` (whose code has checksum ``digest``) may not be folded into ``record``:
    ``key_mismatch``, ``host_written`` or ``model_written``; ``None`` when it may."""
    if not same_key(record, call.role, call.method):
        return "key_mismatch"
    # A program may run a kept version (enforcement chose it): its runs count for that
    # version, under the rules of who wrote it, never replacing the current code.
    kept = runs_kept_version(record, digest, call.source)
    if record.author == HOST and call.author != HOST and not kept:
        # A program may run the host's code, never replace it.
        return "host_written"
    if kept:
        return write_refusal(record.versions[digest].provenance, True, call.provenance)
    return write_refusal(record.provenance, bool(record.code.strip()), call.provenance)
