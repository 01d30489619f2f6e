"""Redaction: API keys, bearer tokens and secret-named environment values are masked."""

from __future__ import annotations

import pytest

from recurgent._redact import environment_secrets, is_secret_key, redact


class TestPatterns:
    """Secrets recognised by their shape."""

    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("key sk-abcdefgh12345 used", "key [REDACTED] used"),
            ("sk-proj-AbC_12-xyz9876", "[REDACTED]"),
            ("Authorization: Bearer abc.def-123456", "Authorization: Bearer [REDACTED]"),
            ("bearer ABCDEFGH", "Bearer [REDACTED]"),
            ("Authorization: Basic dXNlcjpwYXNz", "Authorization: Basic [REDACTED]"),
            ("authorization=opaque-value", "authorization=[REDACTED]"),
            ("api_key=abcdef123", "api_key=[REDACTED]"),
            ('{"apiKey": "abcdef123"}', '{"apiKey": "[REDACTED]"}'),
            ("password: hunter22", "password: [REDACTED]"),
            ("token='abcdefgh'", "token='[REDACTED]'"),
        ],
    )
    def test_masks_secret_shapes(self, text: str, expected: str) -> None:
        """Keys, bearer tokens and key=value secrets are replaced by [REDACTED]."""
        assert redact(text, ()) == expected

    @pytest.mark.parametrize(
        "text",
        [
            "plain text",
            "sk-short",
            "max_tokens=2048",
            "token=abc",
            "the secret garden",
            "ask-questions-now",
            "a basic understanding of authorization",
        ],
    )
    def test_leaves_ordinary_text_alone(self, text: str) -> None:
        """Text without a secret shape is unchanged."""
        assert redact(text, ()) == text


class TestEnvironmentSecrets:
    """Values of secret-named environment variables."""

    def test_secret_named_values_are_collected(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Variables named like KEY/TOKEN/SECRET/PASSWORD with 8+ characters are secrets."""
        monkeypatch.setenv("MY_SERVICE_TOKEN", "tok-value-1")
        monkeypatch.setenv("DB_PASSWORD", "pw-value-22")
        monkeypatch.setenv("SHORT_SECRET", "short")
        monkeypatch.setenv("GREETING", "hello-world-value")

        secrets = environment_secrets()

        assert "tok-value-1" in secrets
        assert "pw-value-22" in secrets
        assert "short" not in secrets
        assert "hello-world-value" not in secrets

    def test_longest_first(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Longer secrets come first, so one containing another is masked whole."""
        monkeypatch.setenv("A_TOKEN", "abcdefgh")
        monkeypatch.setenv("B_TOKEN", "abcdefgh-longer")

        secrets = environment_secrets()

        assert secrets.index("abcdefgh-longer") < secrets.index("abcdefgh")
        assert redact("x abcdefgh-longer y") == "x [REDACTED] y"

    def test_redact_reads_the_environment_when_not_given(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """redact(text) masks a secret set after import."""
        monkeypatch.setenv("INTERNAL_AUTH", "opaque-credential")

        assert redact("sent opaque-credential") == "sent [REDACTED]"

    def test_given_secrets_are_used_instead(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """redact(text, secrets) masks exactly the given values."""
        monkeypatch.setenv("INTERNAL_AUTH", "opaque-credential")

        assert redact("opaque-credential and other-value", ("other-value",)) == (
            "opaque-credential and [REDACTED]"
        )


class TestSecretKeyNames:
    """Which mapping keys name secrets (ADR 0032)."""

    @pytest.mark.parametrize(
        "name",
        [
            "password",
            "PASSWORD",
            "db_password",
            "passwd",
            "secret",
            "client_secret",
            "token",
            "access_token",
            "csrfToken",
            "api_key",
            "apiKey",
            "APIKEY",
            "x-api-key",
            "Authorization",
            "proxy-authorization",
            "cookie",
            "Set-Cookie",
            "private_key",
            "privateKey",
            "ssh_passphrase",
        ],
    )
    def test_secret_names(self, name: str) -> None:
        """Names containing a secret stem, or the word token, are secret."""
        assert is_secret_key(name) is True

    @pytest.mark.parametrize(
        "name",
        ["user", "key", "keys", "author", "max_tokens", "prompt_tokens", "tokenizer", "monkey"],
    )
    def test_ordinary_names(self, name: str) -> None:
        """Counters and plain words that merely resemble a secret name are not secret."""
        assert is_secret_key(name) is False


class TestFastPath:
    """The key-word pre-checks never skip text the patterns would match."""

    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("api_\u212aey=abcdefgh", "api_\u212aey=[REDACTED]"),  # KELVIN SIGN matches k
            ("\u017fecret=abcdefgh", "\u017fecret=[REDACTED]"),  # LONG S matches s
            ("BEARER abcdefghij", "Bearer [REDACTED]"),
            ("AUTHORIZATION: Basic dXNlcjpwYXNz", "AUTHORIZATION: Basic [REDACTED]"),
        ],
    )
    def test_case_variants_are_still_masked(self, text: str, expected: str) -> None:
        """Upper-case and Unicode case variants of the key words still trigger redaction."""
        assert redact(text, ()) == expected

    def test_long_text_without_key_words_is_unchanged(self) -> None:
        """A 1 MB string with no key word comes back identical."""
        text = "w" * 1_000_000

        assert redact(text, ()) is text

    def test_cached_scan_follows_every_environment_change(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        """The cached scan is redone when a secret is added, changed or removed after a read."""
        monkeypatch.delenv("P4_LATE_TOKEN", raising=False)
        before = environment_secrets()
        assert environment_secrets() is before

        monkeypatch.setenv("P4_LATE_TOKEN", "first-late-value")
        assert "first-late-value" in environment_secrets()
        assert redact("x first-late-value y") == "x [REDACTED] y"

        monkeypatch.setenv("P4_LATE_TOKEN", "second-late-value")
        assert "second-late-value" in environment_secrets()
        assert "first-late-value" not in environment_secrets()

        monkeypatch.delenv("P4_LATE_TOKEN")
        assert "second-late-value" not in environment_secrets()
        assert environment_secrets() == before


class TestShortText:
    """Text shorter than any pattern skips the pattern scans but not the given secrets."""

    @pytest.mark.parametrize(
        ("text", "expected"),
        [
            ("sk-abcdefgh", "[REDACTED]"),
            ("sk-abcdefg", "sk-abcdefg"),
            ("token=abcdef", "token=[REDACTED]"),
            ("token=abcde", "token=abcde"),
        ],
    )
    def test_boundary_of_the_shortest_pattern(self, text: str, expected: str) -> None:
        """An 11-character API key is still masked; 10 characters cannot be one."""
        assert redact(text, ()) == expected

    def test_short_given_secret_is_still_masked(self) -> None:
        """A 4-character secret passed in is masked inside short text."""
        assert redact("pin 4242", ("4242",)) == "pin [REDACTED]"
