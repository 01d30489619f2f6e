"""Generation: asks the provider for a program, up to ``max_generation_attempts`` times (ADR 0004).

Each reply is validated (shape, non-blank code, dependencies), parsed, screened by the static
guardrails and compiled under the sandbox policy. A failure of any of those steps, or a provider
error, is retried with a prompt naming it; the last failure is raised when the round is spent.
The runtime enforces ``provider_timeout_seconds`` for every provider, not only OpenAI's, on
long-lived helper threads (``_workers``); ``generate_program`` may be ``async def``. A provider
error whose ``retriable`` is False ends the round at once.
"""

from __future__ import annotations

import ast
import inspect
import re
from collections.abc import Callable, Coroutine
from dataclasses import dataclass
from typing import Any

from recurgent._cancellation import current_scope
from recurgent._guardrails import static_violations
from recurgent._lifecycle._lanes import generation_feedback
from recurgent._lifecycle._workers import AsyncRunner, ProviderPool, RequestTimedOut
from recurgent._redact import redact
from recurgent._sandbox import CompiledProgram, compile_program
from recurgent.errors import (
    GuardrailViolationError,
    ProviderError,
    ProviderTimeoutError,
    UsageError,
)
from recurgent.program import Program, parse_code, parse_program
from recurgent.providers import Provider, ProviderRequest, reply_model, reply_usage

__all__ = ["Generated", "check_provider", "generate_program"]

_TIMEOUT_WORDS = re.compile(r"\b(timeout|timed out|execution expired)\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Generated:
    """A usable program, compiled, or refused by a static guardrail (to run the guardrail lane)."""

    program: Program
    compiled: CompiledProgram | None
    tree: ast.Module
    violation: GuardrailViolationError | None
    attempt: int


_POOL = ProviderPool()
_LOOP = AsyncRunner()


def check_provider(provider: object) -> None:
    """Refuse, at construction, a provider the runtime cannot call.

    Raises:
        UsageError: ``provider`` has no callable ``generate_program``.
    """
    method = getattr(provider, "generate_program", None)
    if not callable(method):
        raise UsageError(
            f"provider {type(provider).__name__} has no callable generate_program(request); "
            "a provider is an object whose generate_program is a function or an async function"
        )


def _call_with_timeout(provider: Provider, request: ProviderRequest) -> object:
    timeout = request.timeout_seconds
    method = provider.generate_program
    if inspect.iscoroutinefunction(method):
        return _await(method(request), request)
    if timeout is None and current_scope() is None:
        reply = method(request)
    else:
        try:
            reply = _POOL.run(provider, lambda: method(request), timeout)
        except RequestTimedOut:
            raise _timed_out(request) from None
    if inspect.iscoroutine(reply):
        # A sync function that returns a coroutine (a wrapper around an async client).
        return _await(reply, request)
    return reply


def _await(coroutine: Coroutine[Any, Any, object], request: ProviderRequest) -> object:
    try:
        return _LOOP.run(coroutine, request.timeout_seconds)
    except RequestTimedOut:
        raise _timed_out(request) from None


def _timed_out(request: ProviderRequest) -> ProviderTimeoutError:
    return ProviderTimeoutError(
        f"Provider timeout in {request.role}.{request.method_name}: no reply within "
        f"{request.timeout_seconds:g}s"
    )


def _normalize(error: BaseException, request: ProviderRequest) -> ProviderError:
    if isinstance(error, ProviderError):
        return error
    where = f"{request.role}.{request.method_name}"
    try:
        text = str(error)
    except Exception:  # noqa: BLE001 - describing a provider's exception must not raise
        text = ""
    message = redact(text or type(error).__name__)
    if isinstance(error, TimeoutError) or _TIMEOUT_WORDS.search(message):
        return ProviderTimeoutError(f"Provider timeout in {where}: {message}")
    return ProviderError(f"Provider error in {where}: {message}")


def generate_program(
    *,
    provider: Callable[[], Provider],
    base_request: ProviderRequest,
    max_attempts: int,
    on_attempt: Callable[[int, Program | None], None],
    on_refusal: Callable[[ProviderError, bool], None] | None = None,
) -> Generated:
    """Run one generation round.

    Args:
        provider: Returns the provider (built lazily on the first call).
        base_request: The request of attempt 1; later attempts get the retry block appended.
        max_attempts: ``max_generation_attempts``.
        on_attempt: Told each attempt number and, when it parsed, the program (for the log).
        on_refusal: Told each refused reply (invalid reply, invalid code, a compile-time policy
            refusal, a forgotten result) and whether a retry with its feedback follows.

    Raises:
        ProviderError: (or a subclass) when every attempt failed; the last failure wins.
    """
    last: ProviderError | None = None
    last_code: str | None = None
    for attempt in range(1, max_attempts + 1):
        user_prompt = base_request.user_prompt
        if attempt > 1:
            user_prompt += generation_feedback(
                last.message if last else "invalid provider output",
                last_code,
                attempt=attempt,
                max_attempts=max_attempts,
            )
        request = ProviderRequest(
            role=base_request.role,
            method_name=base_request.method_name,
            args=base_request.args,
            kwargs=base_request.kwargs,
            depth=base_request.depth,
            model=base_request.model,
            system_prompt=base_request.system_prompt,
            user_prompt=user_prompt,
            attempt=attempt,
            timeout_seconds=base_request.timeout_seconds,
            purpose=base_request.purpose,
        )
        on_attempt(attempt, None)
        try:
            reply = _call_with_timeout(provider(), request)
        except Exception as error:  # noqa: BLE001 - every provider failure is classified
            last = _normalize(error, request)
            if last.retriable is False:
                # The provider says asking again cannot help (bad credentials, say).
                raise last from None
            continue
        last_code = None
        try:
            program = parse_program(reply, method_name=request.method_name)
            last_code = program.code
            tree = parse_code(program.code, where=request.method_name)
            usage = reply_usage(reply)
            model = reply_model(reply)  # who wrote it, as the provider says (ADR 0077)
            if usage or model:
                program = program.model_copy(update={"usage": usage, "model": model})
            on_attempt(attempt, program)
            violations = static_violations(tree)
            if violations:
                return Generated(program, None, tree, violations[0], attempt)
            return Generated(program, compile_program(program.code), tree, None, attempt)
        except Exception as error:  # noqa: BLE001 - every invalid reply is classified
            last = _normalize(error, request)
            if on_refusal is not None:
                on_refusal(last, attempt < max_attempts)
    assert last is not None
    raise last
