"""The one error and retry policy of every network provider: classify, back off, give up on time.

A provider hands :meth:`RetryPolicy.run` a ``send`` function and a ``classify`` function that turns
whatever ``send`` raised into a :class:`Failure`: the typed error to raise and whether another try
may help. The policy retries transient failures (HTTP 408, 409, 429, 5xx including Anthropic's
529 ``overloaded_error``, connection errors) with exponential backoff and jitter, waits at least a
``Retry-After`` the server sent, and never outlasts the request's timeout: each try gets the time
left as its own timeout, and a wait that would end past the deadline is not started (ADR 0034).
Authentication and permission failures (401/403) are never retried.

Sleep, clocks and jitter are injectable so specs can check the waits without waiting.
"""

from __future__ import annotations

import email.utils
import math
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from typing import Any, TypeVar

from recurgent.errors import (
    ProviderAuthError,
    ProviderError,
    ProviderTimeoutError,
    UsageError,
)

__all__ = [
    "RETRY_STATUSES",
    "Failure",
    "RetryPolicy",
    "auth_failure",
    "check_option",
    "describe_error",
    "retry_after_seconds",
    "safe_message",
    "sdk_failure_headers",
    "status_failure",
]

_T = TypeVar("_T")

#: HTTP statuses worth another try: timeouts, lock conflicts, rate limits, server errors and
#: Anthropic's 529 (overloaded). Every other 4xx is the request's own fault.
RETRY_STATUSES = frozenset({408, 409, 429, *range(500, 600)})
_AUTH_STATUSES = frozenset({401, 403})
# A describe_error result never grows past this; SDK messages can quote whole bodies.
_DESCRIBE_CHARS = 500


_UNAVAILABLE = "<exception message unavailable: its __str__ failed>"


def safe_message(error: BaseException) -> str:
    """``str(error)``, or a fixed placeholder when its ``__str__`` raises or returns a non-str.

    For callers that keep their own wording around the message (the lifecycle's
    ``Provider error in role.method: ...``); never raises.
    """
    try:
        text = str(error)
    except Exception:  # noqa: BLE001 - an attacker-written __str__ may raise anything
        return _UNAVAILABLE
    return text if isinstance(text, str) else _UNAVAILABLE


def describe_error(error: BaseException) -> str:
    """``"TypeName: message"`` for any exception, even one whose ``__str__`` raises or lies.

    Args:
        error: The exception to describe.

    Returns:
        A one-line description, at most 500 characters; never raises.
    """
    try:
        name = type(error).__name__
    except Exception:  # noqa: BLE001 - a metaclass can break even this
        name = "Exception"
    text = " ".join(safe_message(error).split())
    described = f"{name}: {text}" if text else name
    return described[:_DESCRIBE_CHARS]


def check_option(owner: str, name: str, value: object, rule: str, ok: bool) -> None:
    """Raise a :class:`UsageError` naming the option, the rule and the value unless ``ok``.

    Args:
        owner: The class whose option it is, e.g. ``"OpenAIProvider"``.
        name: The option's name.
        value: The value given.
        rule: What is expected, e.g. ``"an int >= 0"``.
        ok: Whether ``value`` satisfies ``rule``.
    """
    if not ok:
        raise UsageError(
            f"{owner} option {name} must be {rule}, got {value!r} ({type(value).__name__})"
        )


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


@dataclass(frozen=True, slots=True)
class Failure:
    """What one failed try means.

    Attributes:
        error: The typed error to raise if no further try is made.
        retry: Whether another try may succeed.
        retry_after: Seconds the server asked us to wait (``Retry-After``), when it said.
    """

    error: ProviderError
    retry: bool
    retry_after: float | None = None


def retry_after_seconds(
    headers: Mapping[str, str] | None, *, now: Callable[[], float] = time.time
) -> float | None:
    """The wait a reply asks for: ``retry-after-ms``, else ``Retry-After`` (seconds or HTTP date).

    Args:
        headers: Reply headers (case-insensitive mapping, or lower-case names).
        now: Wall clock, for the HTTP-date form.

    Returns:
        Seconds to wait (>= 0), or ``None`` when the headers say nothing usable.
    """
    if headers is None:
        return None
    try:
        millis = headers.get("retry-after-ms")
        if millis is not None:
            value = float(millis) / 1000
            if math.isfinite(value):
                return max(value, 0.0)
        raw = headers.get("retry-after")
        if raw is None:
            return None
        try:
            value = float(raw)
        except ValueError:
            moment = email.utils.parsedate_to_datetime(raw)
            return max(moment.timestamp() - now(), 0.0)
        return max(value, 0.0) if math.isfinite(value) else None
    except (TypeError, ValueError, OverflowError, AttributeError):
        return None


def auth_failure(
    *, service: str, status: int, detail: str, key_variable: str, base_url: str
) -> Failure:
    """The non-retriable failure for a 401/403: the message says what to check.

    Args:
        service: ``"OpenAI"`` or ``"Anthropic"``.
        status: 401 or 403.
        detail: The server's own message (already redacted and shortened).
        key_variable: Environment variable holding the key, e.g. ``OPENAI_API_KEY``.
        base_url: The base URL the request went to.
    """
    what = "rejected the API key" if status == 401 else "refused permission"
    detail = detail.rstrip(". ") or "no detail given"
    base_variable = key_variable.replace("API_KEY", "BASE_URL")
    message = (
        f"{service} API {what} (HTTP {status}): {detail}. Check {key_variable} (or api_key=) "
        f"and the base URL {base_url} ({base_variable} or base_url=); not retried"
    )
    return Failure(ProviderAuthError(message, metadata={"status": status}), retry=False)


def status_failure(
    *,
    service: str,
    status: int,
    detail: str,
    headers: Mapping[str, str] | None,
    key_variable: str,
    base_url: str,
    now: Callable[[], float] = time.time,
) -> Failure:
    """Classify an HTTP error status: auth (never retried), transient (retried) or final.

    Args:
        service: ``"OpenAI"`` or ``"Anthropic"``.
        status: The HTTP status.
        detail: The server's message (already redacted and shortened).
        headers: The reply's headers, for ``Retry-After``.
        key_variable: Environment variable holding the key.
        base_url: The base URL the request went to.
        now: Wall clock, for an HTTP-date ``Retry-After``.
    """
    if status in _AUTH_STATUSES:
        return auth_failure(
            service=service,
            status=status,
            detail=detail,
            key_variable=key_variable,
            base_url=base_url,
        )
    error = ProviderError(
        f"{service} API error (HTTP {status}): {detail}", metadata={"status": status}
    )
    if status in RETRY_STATUSES:
        return Failure(error, retry=True, retry_after=retry_after_seconds(headers, now=now))
    return Failure(error, retry=False)


@dataclass(frozen=True, slots=True)
class RetryPolicy:
    """How many times and how long to retry transient provider failures.

    The wait before retry ``n`` (from 0) is ``min(max_delay, base_delay * 2**n)`` scaled by a
    jitter factor in ``[0.5, 1.0)``, or the server's ``Retry-After`` when that is longer.

    Attributes:
        max_retries: Retries after the first try (0 disables retrying).
        base_delay: Seconds before the first retry, before jitter.
        max_delay: Upper bound of a computed wait, before ``Retry-After``.
        sleep: How to wait (``time.sleep``).
        clock: Monotonic clock for the deadline (``time.monotonic``).
        wall_clock: Wall clock for HTTP-date ``Retry-After`` values (``time.time``).
        jitter: Returns a float in ``[0, 1)`` (``random.random``).
    """

    max_retries: int = 2
    base_delay: float = 0.5
    max_delay: float = 8.0
    sleep: Callable[[float], None] = field(default=time.sleep, repr=False)
    clock: Callable[[], float] = field(default=time.monotonic, repr=False)
    wall_clock: Callable[[], float] = field(default=time.time, repr=False)
    jitter: Callable[[], float] = field(default=random.random, repr=False)

    def __post_init__(self) -> None:
        check_option(
            "RetryPolicy",
            "max_retries",
            self.max_retries,
            "an int >= 0",
            _is_int(self.max_retries) and self.max_retries >= 0,
        )
        for name in ("base_delay", "max_delay"):
            value = getattr(self, name)
            check_option(
                "RetryPolicy", name, value, "a finite number >= 0", _is_number(value) and value >= 0
            )
        for name in ("sleep", "clock", "wall_clock", "jitter"):
            value = getattr(self, name)
            check_option("RetryPolicy", name, value, "callable", callable(value))

    def with_retries(self, max_retries: int | None) -> RetryPolicy:
        """This policy with ``max_retries`` replaced, or unchanged for ``None``."""
        return self if max_retries is None else replace(self, max_retries=max_retries)

    def delay(self, retry: int, retry_after: float | None) -> float:
        """Seconds to wait before retry number ``retry`` (0 for the first retry)."""
        backoff = min(self.max_delay, self.base_delay * 2.0 ** min(retry, 62))
        factor = 0.5 + 0.5 * min(max(self.jitter(), 0.0), 1.0)
        wait = backoff * factor
        if retry_after is not None:
            wait = max(wait, retry_after)
        return wait

    def run(
        self,
        send: Callable[[float | None], _T],
        classify: Callable[[Exception], Failure],
        *,
        timeout: float | None,
        service: str,
    ) -> _T:
        """Call ``send(time_left)`` until it returns, a failure is final, or time runs out.

        Args:
            send: Makes one try; gets the seconds left (``None`` for no limit) as its timeout.
            classify: Turns what ``send`` raised into a :class:`Failure`. It must not raise.
            timeout: The whole budget of all tries and waits; ``None`` for no limit.
            service: Name used in messages, e.g. ``"OpenAI"``.

        Raises:
            ProviderError: The last failure's typed error (with ``metadata["tries"]``), or a
                :class:`ProviderTimeoutError` when the budget ran out between tries.
        """
        deadline = None if timeout is None else self.clock() + timeout
        tries = 0
        while True:
            left = None if deadline is None else deadline - self.clock()
            if left is not None and left <= 0:
                raise ProviderTimeoutError(
                    f"{service} request timed out after {timeout:g}s ({tries} tries)",
                    metadata={"tries": tries},
                )
            tries += 1
            failure: Failure
            try:
                return send(left)
            except Exception as error:  # noqa: BLE001 - classify decides what every error means
                failure = classify(error)
            # Raised outside the except clause so the SDK exception (it holds the request
            # headers, with the key) is neither the __context__ nor a live local of any frame.
            final = failure.error
            final.metadata.setdefault("tries", tries)
            if not failure.retry or tries > self.max_retries:
                raise final from None
            wait = self.delay(tries - 1, failure.retry_after)
            if deadline is not None and self.clock() + wait >= deadline:
                final.message = (
                    f"{final.message} (no retry: the next try would start after the timeout)"
                )
                final.args = (final.message,)
                raise final from None
            self.sleep(wait)


def sdk_failure_headers(error: object) -> Mapping[str, Any] | None:
    """The headers of the HTTP reply an SDK status error carries, if any."""
    response = getattr(error, "response", None)
    headers = getattr(response, "headers", None)
    return headers if isinstance(headers, Mapping) else None
