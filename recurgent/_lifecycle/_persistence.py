"""Persistence of one call: run the stored program instead of asking the provider, and repair it
once when it fails (ADR 0047). Recording the program that ran is :mod:`._recording`'s.

The decisions are the pure functions of :mod:`recurgent._lifecycle._selection`; the files are the
store's. This module sequences them and fills the call state. It never runs a program itself:
the lifecycle lends it :class:`Hooks` (build the prompts, ask the provider, run one attempt), so
a stored program goes through exactly the validation, guardrails, compilation, sandbox and
contract checks a fresh one does, and its memory writes are undone like any failed attempt's.
"""

from __future__ import annotations

import contextlib
import functools
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

from recurgent._guardrails import is_terminal, static_violations
from recurgent._lifecycle import _provenance
from recurgent._lifecycle._generation import Generated
from recurgent._lifecycle._lanes import failure_class
from recurgent._lifecycle._provenance import runtime_version
from recurgent._lifecycle._selection import after_persisted, after_repair, plan_call
from recurgent._lifecycle._state import CallState
from recurgent._prompting import Prompts, render
from recurgent._redact import redact
from recurgent._sandbox import compile_program
from recurgent._store import (
    ArtifactRecord,
    Cacheability,
    CallRecord,
    Provenance,
    Store,
    StoredRun,
    contract_fingerprint,
    record_cacheability,
    state_of,
)
from recurgent.errors import ExecutionTimeoutError, GuardrailViolationError, RecurgentError
from recurgent.outcome import Outcome
from recurgent.program import parse_code, parse_program

if TYPE_CHECKING:
    from recurgent._lifecycle import AgentRuntime

__all__ = [
    "AttemptResult",
    "Hooks",
    "ProgramSource",
    "Ready",
    "call_fingerprint",
    "run_stored",
    "runtime_version",
]

_CODE_CHARS = 12000
_MESSAGE_CHARS = 1000

Purpose = Literal["generate", "repair"]
ProgramSource = Literal["generated", "persisted", "repaired"]


@dataclass(frozen=True, slots=True)
class AttemptResult:
    """One program run as an attempt.

    Attributes:
        outcome: What the program produced, when it finished.
        error: What it raised instead (a validation, guardrail, execution or limit failure).
        commit: Applies the attempt's memory writes; called only when its outcome is the
            call's answer (an attempt that is not accepted is rolled back by never committing).
    """

    outcome: Outcome | None
    error: RecurgentError | None
    commit: Callable[[], None] = lambda: None


class Hooks(Protocol):
    """What the lifecycle lends this module for one call."""

    def prompts(self) -> Prompts:
        """The call's system and user prompts (built on first use)."""

    def generate(self, system: str, user: str, purpose: Purpose) -> Generated:
        """Ask the provider for a program (one generation round) with a user prompt and a
        request purpose; raises ``ProviderError`` when the round is spent."""

    def execute(self, generated: Generated) -> AttemptResult:
        """Run one prepared program as an attempt."""


def call_fingerprint(state: CallState) -> str:
    """The contract fingerprint of the call's contract (the one of no contract when none)."""
    contract = state.contract
    return _NO_CONTRACT if contract is None else contract_fingerprint(contract)


_NO_CONTRACT = contract_fingerprint(None)


def _prepare(code: str, dependencies: Sequence[Any], method: str) -> Generated:
    """A stored program as the generation step would hand it over: parsed, screened, compiled."""
    return _prepared(code, json.dumps(list(dependencies), sort_keys=True, default=repr), method)


@functools.lru_cache(maxsize=256)
def _prepared(code: str, dependencies: str, method: str) -> Generated:
    # Keyed by the exact text: the same stored program is screened and compiled once per
    # process. The result is immutable in use (the tree is only read by the provenance check).
    program = parse_program(
        {"code": code, "dependencies": json.loads(dependencies)}, method_name=method
    )
    # The checks a fresh program meets, with the same typed failures (a parser that gives up
    # with MemoryError or RecursionError is invalid code, not a crash of the call).
    tree = parse_code(program.code, where=method)
    violations = static_violations(tree)
    if violations:
        return Generated(program, None, tree, violations[0], 0)
    return Generated(program, compile_program(program.code), tree, None, 0)


@dataclass(slots=True)
class Ready:
    """What a persisted run reads from its cached record, worked out once per record: a
    record the store caches is never changed (ADR 0130)."""

    record: ArtifactRecord
    method: str
    cacheability: Cacheability
    lifecycle_state: str | None
    provenance: Provenance
    generated: Generated | None = None
    #: The call record its answered runs report, and what it was built for (the call's role
    #: spelling, contract and promotion switches): the same for every steady run.
    program: tuple[tuple[Any, ...], CallRecord] | None = None


#: Stored programs ready to run, one per agent's store and method: a record the store reads
#: again (after any write to its file, about once a second for a busy method) replaces its
#: predecessor here, so a long session keeps one record per method, not one per write.
_READY: dict[tuple[int, str], Ready] = {}
_READY_KEPT = 256


def _ready(record: ArtifactRecord, store: Store, method: str) -> Ready:
    key = (id(store), method)
    entry = _READY.get(key)
    if entry is not None and entry.record is record and entry.method == method:
        return entry
    entry = Ready(
        record,
        method,
        record_cacheability(record),
        state_of(record, record.code_checksum),
        _provenance.stored(record),
    )
    if key not in _READY and len(_READY) >= _READY_KEPT:
        # Another thread may change the table between iter() and next(): then skip the drop.
        with contextlib.suppress(RuntimeError):
            _READY.pop(next(iter(_READY), (0, "")), None)
    _READY[key] = entry
    return entry


def _prepare_record(ready: Ready) -> Generated:
    """:func:`_prepare` for a record the store handed out, without encoding its dependencies
    again on every run of it."""
    generated = ready.generated
    if generated is None:
        record = ready.record
        generated = ready.generated = _prepare(record.code, record.dependencies, ready.method)
    return generated


def _run_ready(hooks: Hooks, ready: Ready) -> AttemptResult:
    try:
        generated = _prepare_record(ready)
    except RecurgentError as error:
        return AttemptResult(None, error)
    return hooks.execute(generated)


def _error_outcome(error: RecurgentError, state: CallState) -> Outcome:
    # Only the routing reads it: the call's own error Outcome is built by the lifecycle.
    return Outcome(
        status="error",
        error_type=error.error_type,
        error_message=error.message,
        retriable=error.retriable,
        tool_role=state.role,
        method_name=state.method,
    )


def _ends_call(error: RecurgentError | None) -> bool:
    """A terminal guardrail (e.g. the caller broke the registry) fails any program alike."""
    if not isinstance(error, GuardrailViolationError):
        return False
    return (
        is_terminal(error.message) or error.metadata.get("guardrail_class") == "terminal_guardrail"
    )


def _hit(state: CallState, ready: Ready) -> None:
    record, cache = ready.record, ready.cacheability
    state.program_source = "persisted"
    state.artifact_hit = True
    state.generation_attempt = 0
    state.code = record.code
    state.program_dependencies = (
        [dict(d) for d in record.dependencies] if record.dependencies else []
    )
    state.cacheable = cache.cacheable
    state.cacheability_reason = cache.reason
    state.input_sensitive = cache.input_sensitive
    state.artifact_prompt_version = record.prompt_version
    state.artifact_contract_fingerprint = record.contract_fingerprint
    state.artifact_author = record.author
    state.artifact_selected_checksum = record.code_checksum
    state.artifact_selected_lifecycle_state = ready.lifecycle_state
    state.program_provenance = ready.provenance
    state.stored_program = ready


def _give_up_program(state: CallState) -> None:
    """The stored (or repaired) program is not the answer: the call goes on as a generation."""
    state.program_source = "generated"
    state.artifact_hit = False
    state.code = None
    state.program_dependencies = None
    state.cacheable = state.cacheability_reason = state.input_sensitive = None
    state.artifact_author = None
    state.program_provenance = None
    state.stored_program = None


def _finish_attempt(result: AttemptResult) -> Outcome:
    """The routed attempt is the answer: its outcome, or its error raised for the lifecycle.

    Only an ok outcome commits its writes (ADR 0100): a domain error the stored program
    returned leaves memory as it was, like one a fresh program returns.
    """
    if result.error is not None:
        # Raised failures that end the call (timeouts, limits) never leave half an attempt:
        # their writes are never committed.
        raise result.error
    assert result.outcome is not None
    if result.outcome.is_ok:
        result.commit()
    return result.outcome


def _answered(state: CallState, result: AttemptResult) -> Outcome:
    outcome = result.outcome
    if result.error is None and outcome is not None and outcome.status == "ok":
        # The common case, in one step: what _finish_attempt does with an ok outcome.
        state.attempt_stage = "executed"
        result.commit()
        return outcome
    if result.error is None:
        state.attempt_stage = "executed"
        if outcome is not None and outcome.is_error:
            state.rollback_applied = True
    return _finish_attempt(result)


def run_stored(runtime: AgentRuntime, state: CallState, hooks: Hooks) -> Outcome | None:
    """Answer the call from the store when it can: the stored program's outcome (or its
    repaired version's), or ``None`` when the call must generate.

    Raises:
        RecurgentError: a failure that ends the call as it is (an extrinsic failure of the
            stored run, a terminal guardrail, a provider outage during a repair).
    """
    store: Store | None = runtime.store
    if store is None:
        state.artifact_lookup = plan_call(None).reason
        return None
    lookup = store.lookup(
        state.role,
        state.method,
        contract_fingerprint=call_fingerprint(state),
        runtime_version=runtime_version(),
        host_call=state.host_call,
        enforce=runtime.options.settings.promotion_enforcement_enabled,
        reader=_provenance.reader(runtime.options.provider, state.role, state.method),
    )
    start = plan_call(lookup)
    state.artifact_lookup = start.reason
    if start.action != "persisted" or lookup.record is None:
        return None
    record = lookup.record
    ready = _ready(record, store, state.method)
    _hit(state, ready)
    state.attempt_stage = "persisted"
    result = _run_ready(hooks, ready)
    outcome = result.outcome if result.error is None else _error_outcome(result.error, state)
    route = after_persisted(
        outcome,
        raised=result.error is not None,
        repair_count=record.repair_count_since_regen,
        stalled=isinstance(result.error, ExecutionTimeoutError) and state.forwarded_calls == 0,
    )
    state.failure_class = route.failure_class
    if route.action == "return" or _ends_call(result.error):
        return _answered(state, result)
    state.rollback_applied = True
    _remember_failure(state, "persisted", result, outcome)
    failed_class = route.failure_class
    state.failed_stored_run = StoredRun(
        code=record.code,
        author=record.author,
        error_type=outcome.error_type if outcome is not None else None,
        failure_class=failed_class,
        violation=(
            result.error.subtype if isinstance(result.error, GuardrailViolationError) else None
        ),
        dependencies=tuple(record.dependencies),
        cacheability=ready.cacheability,
    )
    _give_up_program(state)
    if route.action == "regenerate":
        return None
    return _repair(state, hooks, record, outcome, failed_class)


def _remember_failure(
    state: CallState, stage: str, result: AttemptResult, outcome: Outcome | None
) -> None:
    if result.error is not None:
        # A stored or repaired program refused by a guardrail (a broken role profile under
        # enforcement) names its subtype as a validation failure does.
        subtype = (
            result.error.subtype if isinstance(result.error, GuardrailViolationError) else None
        )
        state.record_failure(stage, type(result.error).__name__, result.error.message, subtype)
    elif outcome is not None:
        message = f"{outcome.error_type}: {outcome.error_message}"
        state.record_failure(stage, "OutcomeError", message)


def _repair(
    state: CallState,
    hooks: Hooks,
    record: ArtifactRecord,
    failed: Outcome | None,
    failed_class: str | None,
) -> Outcome | None:
    state.repair_attempted = True
    state.repaired_failure_class = failed_class
    prompts = hooks.prompts()
    message = (failed.error_message or failed.error_type or "") if failed else "unknown failure"
    user = prompts.user + render(
        "repair",
        failure_class=failed_class or "unknown",
        failure_message=redact(f"{failed.error_type}: {message}" if failed else message)[
            :_MESSAGE_CHARS
        ],
        code=record.code[:_CODE_CHARS],
        prompt_version=record.prompt_version or "unknown",
        contract_fingerprint=record.contract_fingerprint,
        repair_count=record.repair_count_since_regen,
    )
    state.system_prompt = prompts.system
    state.user_prompt = user
    try:
        generated = hooks.generate(prompts.system, user, "repair")
    except RecurgentError as error:
        if failure_class(error.error_type) == "extrinsic":
            raise
        # The provider wrote nothing usable: a fresh generation gets its own attempts.
        state.repair_succeeded = False
        _give_up_program(state)
        return None
    state.program_source = "repaired"
    state.attempt_stage = "repaired"
    result = hooks.execute(generated)
    outcome = result.outcome if result.error is None else _error_outcome(result.error, state)
    route = after_repair(outcome, raised=result.error is not None)
    if route.action == "return" or _ends_call(result.error):
        state.repair_succeeded = route.kind != "failure"
        state.failure_class = route.failure_class or failed_class
        return _answered(state, result)
    state.rollback_applied = True
    state.repair_succeeded = False
    _remember_failure(state, "repair", result, outcome)
    _give_up_program(state)
    return None
