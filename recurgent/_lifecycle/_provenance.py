"""The provenance of the program a call runs (ADR 0077): who wrote a fresh one, what the store
says of a stored one, and the reader a stored program is judged for.

Values only: the lifecycle puts them in the call state, the store records and judges them.
"""

from __future__ import annotations

import functools
from importlib.metadata import PackageNotFoundError, version

from recurgent._prompting import PROMPT_VERSION
from recurgent._store import ArtifactRecord, Provenance, Reader
from recurgent._store._provenance import LEGACY_KIND
from recurgent.program import Program
from recurgent.providers._identity import (
    author_kind,
    double_fingerprint,
    is_test_double,
    script_fingerprint,
)

__all__ = ["fresh", "log_fields", "reader", "runtime_version", "stored"]

_NOT_A_DOUBLE = Reader()


@functools.cache
def runtime_version() -> str:
    """The installed recurgent version: stored programs are reused only by the same version."""
    try:
        return version("recurgent")
    except PackageNotFoundError:  # pragma: no cover - a source tree without install
        return "0.0.0"


def fresh(provider: object, program: Program, role: str, method: str) -> Provenance:
    """The provenance of a program ``provider`` just wrote for ``role.method``.

    The model is the one the reply named (the built-in providers always name one: the served
    model, else the requested one); a test double or a custom provider that names none has
    none, never the agent's default model.
    """
    double = is_test_double(provider)
    return Provenance(
        provider_kind=author_kind(provider),
        model=program.model,
        prompt_version=PROMPT_VERSION,
        runtime_version=runtime_version(),
        double_fingerprint=script_fingerprint(provider, role, method) if double else None,
    )


def stored(record: ArtifactRecord) -> Provenance:
    """The provenance of a stored program as it runs: the record's block, or, for a record
    written before the block existed, ``unknown`` with the versions and model it recorded."""
    if record.provenance is not None:
        return record.provenance
    return Provenance(
        provider_kind=LEGACY_KIND,
        model=record.model,
        prompt_version=record.prompt_version,
        runtime_version=record.runtime_version,
    )


def reader(provider: object | None, role: str, method: str) -> Reader:
    """Who a stored program for ``role.method`` would run for: an agent's ``provider`` option
    (``None``: routed by model name, never a double). Costs one attribute read for a provider
    that is not a double."""
    if provider is None or not is_test_double(provider):
        return _NOT_A_DOUBLE
    fingerprint = double_fingerprint(provider, role, method)
    found = _DOUBLE_READERS.get(fingerprint)
    if found is None:
        # One Reader per fingerprint: the store's verdict memo then matches it by identity.
        if len(_DOUBLE_READERS) >= _DOUBLE_READERS_KEPT:
            _DOUBLE_READERS.clear()
        found = _DOUBLE_READERS[fingerprint] = Reader(test_double=True, fingerprint=fingerprint)
    return found


_DOUBLE_READERS: dict[str | None, Reader] = {}
_DOUBLE_READERS_KEPT = 256


def log_fields(provenance: Provenance | None) -> tuple[str | None, str | None]:
    """``(program_provider_kind, program_model)`` for the call log."""
    if provenance is None:
        return None, None
    return provenance.provider_kind, provenance.model
