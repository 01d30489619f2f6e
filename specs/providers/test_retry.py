"""Specs for the shared provider retry policy: backoff, Retry-After, deadline, descriptions."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from recurgent.errors import ProviderAuthError, ProviderError, ProviderTimeoutError, UsageError
from recurgent.providers._retry import (
    Failure,
    RetryPolicy,
    describe_error,
    retry_after_seconds,
    safe_message,
    status_failure,
)
from specs.providers.support import FakeClock


def flaky(
    failures: int, result: str = "ok"
) -> tuple[list[float | None], Callable[[float | None], str]]:
    """A send function failing ``failures`` times, recording the time left it was given."""
    calls: list[float | None] = []

    def send(left: float | None) -> str:
        calls.append(left)
        if len(calls) <= failures:
            raise ConnectionError("reset")
        return result

    return calls, send


def transient(error: Exception, retry_after: float | None = None) -> Failure:
    return Failure(ProviderError(f"transient: {error}"), retry=True, retry_after=retry_after)


class TestBackoff:
    def test_waits_grow_exponentially_with_jitter(self) -> None:
        """Waits are base * 2**n scaled into [0.5, 1.0) by the jitter draw."""
        policy = RetryPolicy(base_delay=1.0, max_delay=8.0, jitter=lambda: 0.5)

        assert [policy.delay(n, None) for n in range(5)] == [0.75, 1.5, 3.0, 6.0, 6.0]

    def test_retry_after_wins_when_longer(self) -> None:
        """A Retry-After longer than the backoff is waited in full; a shorter one is not."""
        policy = RetryPolicy(base_delay=1.0, jitter=lambda: 0.0)

        assert (policy.delay(0, 4.0), policy.delay(0, 0.1)) == (4.0, 0.5)

    def test_transient_failures_are_retried_until_success(self) -> None:
        """Two failures then success: three sends, two waits, the result returned."""
        clock = FakeClock()
        calls, send = flaky(2)

        result = clock.policy().run(send, transient, timeout=10.0, service="Test")

        assert result == "ok"
        assert calls == [10.0, 9.75, 9.25]
        assert clock.sleeps == [0.25, 0.5]

    def test_gives_up_after_max_retries(self) -> None:
        """max_retries=1: two sends, then the last failure with the number of tries."""
        clock = FakeClock()
        calls, send = flaky(5)

        with pytest.raises(ProviderError) as excinfo:
            clock.policy(max_retries=1).run(send, transient, timeout=None, service="Test")

        assert (excinfo.value.message, excinfo.value.metadata) == (
            "transient: reset",
            {"tries": 2},
        )
        assert (len(calls), clock.sleeps) == (2, [0.25])

    def test_final_failures_are_not_retried(self) -> None:
        """A failure classified final is raised after one send."""
        clock = FakeClock()
        calls, send = flaky(5)
        final = Failure(ProviderAuthError("no", metadata={"status": 401}), retry=False)

        with pytest.raises(ProviderAuthError):
            clock.policy().run(send, lambda error: final, timeout=None, service="Test")

        assert (len(calls), clock.sleeps) == (1, [])

    def test_the_original_exception_is_not_chained(self) -> None:
        """The raised error has no cause or context (SDK errors carry request headers)."""
        _, send = flaky(5)

        with pytest.raises(ProviderError) as excinfo:
            FakeClock().policy(max_retries=0).run(send, transient, timeout=None, service="T")

        assert (excinfo.value.__cause__, excinfo.value.__context__) == (None, None)

    def test_no_try_starts_after_the_deadline(self) -> None:
        """When the budget is spent before a try, a ProviderTimeoutError names it."""
        clock = FakeClock()

        def send(left: float | None) -> str:
            clock.now += 10  # the try itself used the whole budget
            raise ConnectionError("slow")

        with pytest.raises(ProviderError) as excinfo:
            clock.policy().run(send, transient, timeout=5.0, service="Test")

        assert excinfo.value.message == (
            "transient: slow (no retry: the next try would start after the timeout)"
        )

    def test_an_exhausted_budget_is_a_timeout(self) -> None:
        """A zero budget: no send at all, a timeout error."""
        calls, send = flaky(0)

        with pytest.raises(ProviderTimeoutError) as excinfo:
            FakeClock().policy().run(send, transient, timeout=0.0, service="Test")

        assert excinfo.value.message == "Test request timed out after 0s (0 tries)"
        assert calls == []

    @pytest.mark.parametrize(
        ("field", "value", "message"),
        [
            (
                "max_retries",
                "3",
                "RetryPolicy option max_retries must be an int >= 0, got '3' (str)",
            ),
            (
                "base_delay",
                float("nan"),
                "RetryPolicy option base_delay must be a finite number >= 0, got nan (float)",
            ),
            ("sleep", None, "RetryPolicy option sleep must be callable, got None (NoneType)"),
        ],
    )
    def test_bad_fields_are_refused(self, field: str, value: object, message: str) -> None:
        """RetryPolicy validates its fields at construction."""
        with pytest.raises(UsageError) as excinfo:
            RetryPolicy(**{field: value})  # type: ignore[arg-type]

        assert excinfo.value.message == message


class TestClassification:
    @pytest.mark.parametrize(
        ("status", "retry"),
        [
            (400, False),
            (404, False),
            (408, True),
            (409, True),
            (429, True),
            (500, True),
            (503, True),
            (529, True),
        ],
    )
    def test_statuses(self, status: int, retry: bool) -> None:
        """Timeouts, conflicts, rate limits and 5xx are transient; other 4xx are final."""
        failure = status_failure(
            service="S",
            status=status,
            detail="d",
            headers=None,
            key_variable="K_API_KEY",
            base_url="http://x",
        )

        assert (type(failure.error), failure.retry, failure.error.metadata) == (
            ProviderError,
            retry,
            {"status": status},
        )

    def test_auth_statuses_are_final_and_say_what_to_check(self) -> None:
        """401: ProviderAuthError, not retriable, naming the key variable and base URL."""
        failure = status_failure(
            service="OpenAI",
            status=401,
            detail="bad key.",
            headers=None,
            key_variable="OPENAI_API_KEY",
            base_url="https://api.openai.com/v1/",
        )

        assert (type(failure.error), failure.retry, failure.error.retriable) == (
            ProviderAuthError,
            False,
            False,
        )
        assert failure.error.message == (
            "OpenAI API rejected the API key (HTTP 401): bad key. Check OPENAI_API_KEY "
            "(or api_key=) and the base URL https://api.openai.com/v1/ (OPENAI_BASE_URL or "
            "base_url=); not retried"
        )


class TestRetryAfter:
    @pytest.mark.parametrize(
        ("headers", "seconds"),
        [
            ({"retry-after": "7"}, 7.0),
            ({"retry-after": "1.5"}, 1.5),
            ({"retry-after-ms": "250", "retry-after": "9"}, 0.25),
            ({"retry-after": "Tue, 14 Nov 2023 22:13:40 GMT"}, 20.0),
            ({"retry-after": "-3"}, 0.0),
            ({"retry-after": "soon"}, None),
            ({"retry-after": "inf"}, None),
            ({}, None),
        ],
    )
    def test_forms(self, headers: dict[str, str], seconds: float | None) -> None:
        """Seconds, milliseconds and HTTP dates are read; nonsense is ignored."""
        assert retry_after_seconds(headers, now=lambda: 1_700_000_000.0) == seconds


class TestDescribeError:
    def test_a_broken_str_does_not_raise(self) -> None:
        """An exception whose __str__ raises is described by its type."""

        class Hostile(Exception):
            def __str__(self) -> str:
                raise RuntimeError("gotcha")

        assert describe_error(Hostile()) == (
            "Hostile: <exception message unavailable: its __str__ failed>"
        )

    def test_safe_message_keeps_good_messages_and_replaces_broken_ones(self) -> None:
        """safe_message is str(error) when that works, a fixed placeholder otherwise."""

        class Hostile(Exception):
            def __str__(self) -> str:
                raise RuntimeError("gotcha")

        assert (safe_message(ValueError("bad")), safe_message(Hostile())) == (
            "bad",
            "<exception message unavailable: its __str__ failed>",
        )

    def test_a_str_returning_a_non_string(self) -> None:
        """A __str__ returning a non-str is treated as broken too."""

        class Odd(Exception):
            def __str__(self) -> str:
                return 42  # type: ignore[return-value]

        assert describe_error(Odd()) == "Odd: <exception message unavailable: its __str__ failed>"

    def test_long_and_multiline_messages_are_flattened_and_bounded(self) -> None:
        """Whitespace collapses to single spaces and the result stops at 500 characters."""
        described = describe_error(ValueError("a\n\nb " + "x" * 1000))

        assert described.startswith("ValueError: a b xxx")
        assert len(described) == 500
