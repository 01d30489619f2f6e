"""One mapped item's Outcome from its execution result, and the map's tally (ADR 0110).

Each item's result meets the checks an ordinary call's attempt does, on the driver, whatever
executor ran it: its guardrail violations, the memory-write refusal, its typed error, the
outcome coercion, the external-data provenance check and the agent's deliverable contract.
There are no retries per item: a failed item is its error Outcome, and whether the program
is repaired is the map's decision (:mod:`recurgent._lifecycle._map`), from the tally.
"""

from __future__ import annotations

import ast
import math
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from recurgent._contracts import validate_deliverable
from recurgent._guardrails import provenance_violation
from recurgent._journal import Writes
from recurgent._lifecycle._lanes import failure_class
from recurgent._lifecycle._selection import result_kind
from recurgent._sandbox import ExecutionResult
from recurgent.errors import GuardrailViolationError, RecurgentError
from recurgent.outcome import Outcome, coerce_outcome, plain_ok

__all__ = [
    "REPAIR_MIN_FAILURES",
    "REPAIR_SHARE",
    "ItemChecks",
    "Tally",
    "refuse_map_writes",
]

#: A program is repaired once when at least this many items failed intrinsically ...
REPAIR_MIN_FAILURES = 3
#: ... and they are at least this share of the items it has run (ADR 0110).
REPAIR_SHARE = 0.1

MAP_WRITE_SUBTYPE = "map_memory_write"
_SCALARS = frozenset({int, float, str, bool, type(None)})
_MAP_WRITE_CORRECTION = (
    "this method runs over many items with Agent.map, each against a read-only snapshot of "
    "memory: do not write context/memory or call remember(); return everything as the value"
)


def refuse_map_writes(writes: Writes | None, role: str, method: str) -> None:
    """A mapped program's item may read memory but not change it.

    Raises:
        GuardrailViolationError: the run wrote memory (subtype ``map_memory_write``).
    """
    if writes is None or writes.empty:
        return
    keys = writes.touched_keys()
    named = ", ".join(sorted(map(repr, keys))[:5]) if keys else "memory"
    raise GuardrailViolationError(
        f"{role}.{method} wrote {named} while mapped; a mapped program reads a snapshot of "
        "memory and may not write it",
        subtype=MAP_WRITE_SUBTYPE,
        correction=_MAP_WRITE_CORRECTION,
    )


@dataclass(frozen=True, slots=True)
class ItemChecks:
    """What every item of one map is checked against.

    Attributes:
        role: The agent's role.
        method: The mapped method.
        code: The program's source (each Outcome's ``code``, ADR 0098).
        tree: The program's syntax tree (for the provenance check).
        deliverable: The agent's contract deliverable, or ``None``.
        error_outcome: Builds the Outcome of a runtime error (the lifecycle's).
        external: The program fetches external data (read once from its tree).
    """

    role: str
    method: str
    code: str
    tree: ast.Module
    deliverable: Any
    error_outcome: Any
    #: The program fetches external data: its ok values must carry provenance.
    external: bool = False

    def outcome(
        self, result: ExecutionResult, args: tuple[Any, ...], kwargs: Mapping[str, Any]
    ) -> Outcome:
        """The item's Outcome (never raises for a failure of the program)."""
        value = result.value
        writes = result.writes
        if (
            type(value) in _SCALARS
            and result.error is None
            and not result.violations
            and (writes is None or writes.empty)
            and not self.external
            and self.deliverable is None
        ):
            # Most items: a plain scalar answer, nothing written, nothing to check against
            # (no provenance, no contract): the Outcome _checked would build, built at once.
            return plain_ok(value, tool_role=self.role, method_name=self.method, code=self.code)
        try:
            outcome = self._checked(result, args, kwargs)
        except RecurgentError as error:
            outcome = self.error_outcome(error, self.role, self.method, 0)
        if outcome.code is self.code:
            return outcome
        return outcome.model_copy(update={"code": self.code})

    def _checked(
        self, result: ExecutionResult, args: tuple[Any, ...], kwargs: Mapping[str, Any]
    ) -> Outcome:
        if result.violations:
            raise result.violations[0]
        if result.error is not None:
            raise result.error
        refuse_map_writes(result.writes, self.role, self.method)
        value = result.value
        if type(value) in _SCALARS:
            # Most items answer a plain scalar: the Outcome coerce_outcome would build, with
            # its code at once. Nothing in it needs validating (no error fields; the value is
            # a rebuilt str, number, bool or None), so it is constructed as it is, directly
            # (pydantic's model_construct was about a fifth of an item's cost).
            outcome = plain_ok(value, tool_role=self.role, method_name=self.method, code=self.code)
        else:
            outcome = coerce_outcome(value, tool_role=self.role, method_name=self.method)
        if not outcome.is_ok:
            return outcome
        if self.external:
            violation = provenance_violation(self.tree, outcome.value)
            if violation is not None:
                raise violation
        return self._contract(outcome, args, kwargs)

    def _contract(
        self, outcome: Outcome, args: tuple[Any, ...], kwargs: Mapping[str, Any]
    ) -> Outcome:
        if self.deliverable is None:
            return outcome
        check = validate_deliverable(self.deliverable, outcome.value, args, kwargs)
        # A map runs only at depth 0 (generated code cannot call map): its caller is outside.
        return check.checked_outcome(outcome, role=self.role, method=self.method, typed=True)


def _intrinsic(outcome: Outcome) -> bool:
    """A failure the program is to blame for (a repair could fix it): not a domain error the
    program returned on purpose, not a timeout or another failure from outside the program."""
    if result_kind(outcome, raised=False) != "failure":
        return False
    return failure_class(outcome.error_type) == "intrinsic"


@dataclass(slots=True)
class Tally:
    """The counts of one map, kept as items finish (for the repair rule and the summary).

    Attributes:
        ok: Items whose Outcome is ok.
        errors: Items whose Outcome is an error (any kind).
        timeouts: Error Outcomes of type ``timeout``.
        intrinsic: Intrinsic failures among the items run by the current program.
        ran: Items run by the current program.
        by_type: Error Outcomes per ``error_type``.
    """

    ok: int = 0
    errors: int = 0
    timeouts: int = 0
    intrinsic: int = 0
    ran: int = 0
    by_type: dict[str, int] = field(default_factory=dict)

    def count(self, outcome: Outcome, *, current: bool = True) -> bool:
        """Count one finished item; True when it failed intrinsically."""
        if current:
            self.ran += 1
        if outcome.is_ok:
            self.ok += 1
            return False
        self.errors += 1
        kind = outcome.error_type or "unknown"
        self.by_type[kind] = self.by_type.get(kind, 0) + 1
        if kind == "timeout":
            self.timeouts += 1
        intrinsic = _intrinsic(outcome)
        if intrinsic and current:
            self.intrinsic += 1
        return intrinsic

    def uncount(self, outcome: Outcome) -> None:
        """Forget a counted item that is about to run again (under the repaired program)."""
        self.errors -= 1
        kind = outcome.error_type or "unknown"
        self.by_type[kind] -= 1
        if not self.by_type[kind]:
            del self.by_type[kind]
        if kind == "timeout":
            self.timeouts -= 1

    def count_ok(self, items: int, *, current: bool = True) -> None:
        """Count ``items`` finished items whose Outcomes are ok (what :meth:`count` does for
        each of them)."""
        self.ok += items
        if current:
            self.ran += items

    def needs_repair(self) -> bool:
        """The program failed intrinsically on many of the items it ran (ADR 0110)."""
        if self.intrinsic < REPAIR_MIN_FAILURES:
            return False
        return self.intrinsic >= math.ceil(REPAIR_SHARE * self.ran)

    def restart(self) -> None:
        """A new program: the repair rule counts its items afresh."""
        self.intrinsic = 0
        self.ran = 0
