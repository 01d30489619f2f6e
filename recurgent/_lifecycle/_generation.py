"""Generation: asks the provider for a program, up to ``max_generation_attempts`` times (ADR 0004).

Each reply is validated (shape, non-blank code, dependencies), parsed, screened by the static
guardrails and compiled under the sandbox policy. A failure of any of those steps, or a provider
error, is retried with a prompt naming it; the last failure is raised when the round is spent.
The runtime enforces ``provider_timeout_seconds`` for every provider, not only OpenAI's.
"""

from __future__ import annotations

import ast
import contextvars
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from recurgent._guardrails import static_violations
from recurgent._prompting import render
from recurgent._redact import redact
from recurgent._sandbox import CompiledProgram, compile_program
from recurgent.errors import (
    GuardrailViolationError,
    InvalidCodeError,
    ProviderError,
    ProviderTimeoutError,
)
from recurgent.program import Program, parse_program
from recurgent.providers import Provider, ProviderRequest

__all__ = ["Generated", "generate_program"]

_TIMEOUT_WORDS = re.compile(r"\b(timeout|timed out|execution expired)\b", re.IGNORECASE)


@dataclass(frozen=True, slots=True)
class Generated:
    """A usable program, compiled, or refused by a static guardrail (to run the guardrail lane)."""

    program: Program
    compiled: CompiledProgram | None
    tree: ast.Module
    violation: GuardrailViolationError | None
    attempt: int


def _call_with_timeout(provider: Provider, request: ProviderRequest) -> object:
    timeout = request.timeout_seconds
    if timeout is None:
        return provider.generate_program(request)
    outcome: dict[str, Any] = {}
    finished = threading.Event()
    context = contextvars.copy_context()

    def work() -> None:
        try:
            outcome["reply"] = context.run(provider.generate_program, request)
        except BaseException as error:  # noqa: BLE001 - handed back to the waiting thread
            outcome["error"] = error
        finally:
            finished.set()

    # A daemon thread: a provider that never answers cannot keep the process alive, and the
    # call returns a timeout Outcome on time even though the thread itself cannot be stopped.
    threading.Thread(target=work, name="recurgent-provider", daemon=True).start()
    if not finished.wait(timeout):
        raise ProviderTimeoutError(
            f"Provider timeout in {request.role}.{request.method_name}: no reply within "
            f"{timeout:g}s"
        )
    if "error" in outcome:
        raise outcome.pop("error")
    return outcome["reply"]


def _normalize(error: BaseException, request: ProviderRequest) -> ProviderError:
    if isinstance(error, ProviderError):
        return error
    where = f"{request.role}.{request.method_name}"
    message = redact(str(error) or type(error).__name__)
    if isinstance(error, TimeoutError) or _TIMEOUT_WORDS.search(message):
        return ProviderTimeoutError(f"Provider timeout in {where}: {message}")
    return ProviderError(f"Provider error in {where}: {message}")


def _validate(reply: object, method_name: str) -> tuple[Program, ast.Module]:
    program = parse_program(reply, method_name=method_name)
    try:
        tree = ast.parse(program.code, "<generated>", "exec")
    except SyntaxError as error:
        raise InvalidCodeError(
            f"Generated code has invalid Python syntax in {method_name}: line {error.lineno}: "
            f"{error.msg}"
        ) from None
    return program, tree


def generate_program(
    *,
    provider: Callable[[], Provider],
    base_request: ProviderRequest,
    max_attempts: int,
    on_attempt: Callable[[int, Program | None], None],
) -> Generated:
    """Run one generation round.

    Args:
        provider: Returns the provider (built lazily on the first call).
        base_request: The request of attempt 1; later attempts get the retry block appended.
        max_attempts: ``max_generation_attempts``.
        on_attempt: Told each attempt number and, when it parsed, the program (for the log).

    Raises:
        ProviderError: (or a subclass) when every attempt failed; the last failure wins.
    """
    last: ProviderError | None = None
    for attempt in range(1, max_attempts + 1):
        user_prompt = base_request.user_prompt
        if attempt > 1:
            user_prompt += render(
                "retry_generation",
                previous_error=last.message if last else "invalid provider output",
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
            program, tree = _validate(reply, request.method_name)
            on_attempt(attempt, program)
            violations = static_violations(tree)
            if violations:
                return Generated(program, None, tree, violations[0], attempt)
            return Generated(program, compile_program(program.code), tree, None, attempt)
        except Exception as error:  # noqa: BLE001 - every provider failure is classified
            last = _normalize(error, request)
    assert last is not None
    raise last
