"""Delegation contracts: composing them from options, and inferring the intent signature (ADR 0009).

A contract is made of five optional fields (:data:`CONTRACT_FIELDS`); its ``deliverable`` is kept
as :func:`recurgent._deliverables.as_deliverable` returns it and checked by
:func:`validate_deliverable` (re-exported here, the lifecycle's one entry point for contracts).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Literal

from recurgent._deliverables import as_deliverable, validate_deliverable
from recurgent._repr import safe_repr
from recurgent.errors import UsageError

__all__ = [
    "CONTRACT_FIELDS",
    "ContractSource",
    "compose_contract",
    "infer_intent_signature",
    "validate_deliverable",
]

CONTRACT_FIELDS = ("purpose", "deliverable", "acceptance", "failure_policy", "intent_signature")
ContractSource = Literal["none", "hash", "fields", "merged"]


def _normalize(contract: Mapping[str, Any]) -> dict[str, Any] | None:
    kept = {key: contract[key] for key in CONTRACT_FIELDS if contract.get(key) is not None}
    if "deliverable" in kept:
        kept["deliverable"] = as_deliverable(kept["deliverable"])
    for key in ("purpose", "intent_signature"):
        if key in kept and (not isinstance(kept[key], str) or not kept[key].strip()):
            raise UsageError(
                f"delegation_contract[{key!r}] must be a non-empty str when provided, "
                f"got {safe_repr(kept[key], ())}"  # bounded: a program's value (red team R12)
            )
    return kept or None


def compose_contract(
    explicit: object, fields: Mapping[str, Any]
) -> tuple[dict[str, Any] | None, ContractSource]:
    """Compose the active contract from a ``delegation_contract`` mapping and field options.

    Field options win over the mapping per key. Only the five contract fields are kept.

    Returns:
        ``(contract, source)`` where source is ``none``, ``hash``, ``fields`` or ``merged``.

    Raises:
        UsageError: the mapping is not a mapping, or purpose/intent_signature are blank.
    """
    if explicit is not None and not isinstance(explicit, Mapping):
        raise UsageError(
            f"delegation_contract must be a mapping or None, got {type(explicit).__name__}"
        )
    declared = {key: value for key, value in fields.items() if value is not None}
    if explicit is None and not declared:
        return None, "none"
    if explicit is None:
        source: ContractSource = "fields"
        merged: dict[str, Any] = declared
    elif not declared:
        source, merged = "hash", {str(k): v for k, v in explicit.items()}
    else:
        source, merged = "merged", {**{str(k): v for k, v in explicit.items()}, **declared}
    contract = _normalize(merged)
    return contract, source if contract is not None else "none"


def infer_intent_signature(method_name: str, args: Sequence[Any], kwargs: Mapping[str, Any]) -> str:
    """Describe the call that is delegating, e.g. ``ask: args=latest news: kwargs=url``."""
    parts = [method_name]
    shown = [str(arg).strip()[:120] for arg in list(args)[:2]]
    shown = [text for text in shown if text]
    if shown:
        parts.append("args=" + " | ".join(shown))
    if kwargs:
        parts.append("kwargs=" + ",".join(list(kwargs)[:3]))
    return ": ".join(parts)
