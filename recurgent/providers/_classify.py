"""One translation of SDK exceptions into provider failures, for every Stainless-generated SDK.

The ``openai`` and ``anthropic`` SDKs share one exception shape (timeout, HTTP status,
connection, response validation, base error). Each provider module, the only importer of its
SDK, passes its exception classes in as :class:`SdkErrors`; the policy (what is retried, what
the message says, what is redacted) lives here once (ADR 0034).
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from recurgent.errors import ProviderError, ProviderReplyTooLargeError, ProviderTimeoutError
from recurgent.providers._http import reply_too_large
from recurgent.providers._reply import Redactor, no_program
from recurgent.providers._retry import (
    Failure,
    describe_error,
    sdk_failure_headers,
    status_failure,
)

__all__ = ["SdkErrors", "classify_sdk_error"]


@dataclass(frozen=True, slots=True)
class SdkErrors:
    """The exception classes of one SDK, and how it describes an HTTP error's body."""

    timeout: type[BaseException]
    status: type[BaseException]
    connection: type[BaseException]
    base: type[BaseException]
    detail: Callable[[Any], str]
    invalid_response: type[BaseException] | None = None


def classify_sdk_error(
    error: Exception,
    *,
    errors: SdkErrors,
    service: str,
    key_variable: str,
    base_url: str,
    timeout: float | None,
    redact: Redactor,
    now: Callable[[], float],
) -> Failure:
    """What ``error`` from the SDK means: the provider failure, and whether to retry."""
    too_large = reply_too_large(error)
    if too_large is not None:
        return Failure(
            ProviderReplyTooLargeError(
                f"{service} reply body exceeded max_reply_bytes ({too_large.limit} bytes)",
                metadata={"max_reply_bytes": too_large.limit},
            ),
            retry=False,
        )
    if isinstance(error, errors.timeout):
        limit = f" after {timeout:g}s" if timeout is not None else ""
        return Failure(ProviderTimeoutError(f"{service} request timed out{limit}"), retry=False)
    if isinstance(error, errors.status):
        return status_failure(
            service=service,
            status=error.status_code,  # type: ignore[attr-defined]
            detail=redact(errors.detail(error)),
            headers=sdk_failure_headers(error),
            key_variable=key_variable,
            base_url=redact(base_url),
            now=now,
        )
    if errors.invalid_response is not None and isinstance(error, errors.invalid_response):
        status = getattr(error, "status_code", "?")
        message = f"{service} API error (HTTP {status}): {errors.detail(error)}"
        return Failure(ProviderError(redact(message)), retry=False)
    if isinstance(error, errors.connection):
        cause = error.__cause__
        suffix = f" ({describe_error(cause)})" if cause is not None else ""
        reason = getattr(error, "message", "")
        message = f"Could not reach the {service} API: {reason}{suffix}"
        return Failure(ProviderError(redact(message)), retry=True)
    if isinstance(error, json.JSONDecodeError):
        # The SDK decodes a 200 reply with json.loads and lets malformed bodies through.
        return Failure(no_program(service, f"body is not JSON ({error})", redact), False)
    if isinstance(error, errors.base):
        message = f"{service} SDK error: {describe_error(error)}"
        return Failure(ProviderError(redact(message)), retry=False)
    message = f"{service} provider failed: {describe_error(error)}"
    return Failure(ProviderError(redact(message)), retry=False)
