"""Provenance of a stored program: who wrote it, and who may run it (ADR 0077).

:class:`Provenance` is the block an artifact and each history entry carry: the provider kind
(``openai``, ``anthropic``, ``custom:<module.Class>``, ``test_double:<Class>``), the model that
wrote the code (``None`` when no model did or none was reported), the prompt and runtime
versions, and for a test double the fingerprint of its script. A record written before the
block existed has none: its provenance is unknown.

:class:`Reader` is the agent about to run a stored program. :func:`provenance_verdict` and
:func:`write_refusal` are the rules (pure):

* an agent whose provider is not a double never runs a double's program
  (``test_double_written``); it runs real models' programs and ones of unknown provenance, as
  it always did;
* a double runs only a double's program written from the same script (``script_changed``
  otherwise), never a real model's or one of unknown provenance (``model_written``);
* a double's program never replaces one a real model (or an unknown author) wrote
  (``model_written``): a test pointed at a real store cannot overwrite it.
"""

from __future__ import annotations

from dataclasses import dataclass

from pydantic import BaseModel, ConfigDict

__all__ = [
    "LEGACY_KIND",
    "TEST_DOUBLE_PREFIX",
    "Provenance",
    "Reader",
    "is_double_written",
    "provenance_verdict",
    "write_refusal",
]

TEST_DOUBLE_PREFIX = "test_double:"
#: The kind a stored program of unknown provenance is reported with (a record written before
#: provenance was recorded).
LEGACY_KIND = "unknown"


class Provenance(BaseModel):
    """Who wrote a program (the ``provenance`` object of an artifact and its history entries).

    Attributes:
        provider_kind: ``openai``, ``anthropic``, ``custom:<module.Class>``,
            ``test_double:<Class>``, or ``unknown`` (reported for a record without the block).
        model: The model that wrote the code, as the reply named it (the served model, else
            the one requested, for the built-in providers); ``None`` when not reported (a test
            double, a custom provider that does not say).
        prompt_version: The prompt version the code was written under.
        runtime_version: The recurgent version that asked for it.
        double_fingerprint: For a test double, the digest of the script entry that answered.
    """

    # Unknown keys are kept and written back, as everywhere in an artifact.
    model_config = ConfigDict(extra="allow", frozen=True)

    provider_kind: str
    model: str | None = None
    prompt_version: str | None = None
    runtime_version: str | None = None
    double_fingerprint: str | None = None


@dataclass(frozen=True, slots=True)
class Reader:
    """The agent a stored program would run for: whether its provider is a test double, and
    that double's fingerprint for the key (``None``: it cannot say, so it reuses nothing)."""

    test_double: bool = False
    fingerprint: str | None = None


def is_double_written(provenance: Provenance | None) -> bool:
    """Whether a test double wrote the program."""
    return provenance is not None and provenance.provider_kind.startswith(TEST_DOUBLE_PREFIX)


def provenance_verdict(provenance: Provenance | None, reader: Reader) -> str | None:
    """``None`` when ``reader`` may run a program of this provenance, else the reason not."""
    written_by_double = is_double_written(provenance)
    if not reader.test_double:
        return "test_double_written" if written_by_double else None
    if not written_by_double:
        return "model_written"
    assert provenance is not None
    if reader.fingerprint is None or provenance.double_fingerprint != reader.fingerprint:
        return "script_changed"
    return None


def write_refusal(
    stored: Provenance | None, stored_code: bool, call: Provenance | None
) -> str | None:
    """Why a call's program may not replace the stored one (``model_written``), or ``None``.

    Args:
        stored: The provenance of the record's current code.
        stored_code: Whether the record holds code at all (an empty record is anyone's).
        call: The provenance of the code the call ran.
    """
    if stored_code and is_double_written(call) and not is_double_written(stored):
        return "model_written"
    return None
