"""The network allow-list: accepted forms, refused forms, and exact host matching (ADR 0024)."""

from __future__ import annotations

from typing import Any

import pytest

from recurgent import Agent, UsageError
from recurgent._hosts import (
    entry_matches,
    host_entry_covered,
    normalize_host_entry,
    url_host_port,
)
from recurgent._sandbox._network import host_allowed
from recurgent.testing import ScriptedProvider


class TestForms:
    """Host, host:port and URL forms normalise to a scheme-less lower-case host[:port]."""

    @pytest.mark.parametrize(
        ("entry", "normal"),
        [
            ("example.com", "example.com"),
            ("  Example.COM ", "example.com"),
            ("example.com.", "example.com"),
            ("example.com:8443", "example.com:8443"),
            ("http://127.0.0.1:8080/v1", "127.0.0.1:8080"),
            ("127.0.0.1:8080", "127.0.0.1:8080"),
            ("https://API.example.com/path?q=1", "api.example.com"),
            ("http://localhost", "localhost"),
            ("[::1]:8080", "[::1]:8080"),
            ("http://[::1]/x", "[::1]"),
            ("my_host.internal", "my_host.internal"),
        ],
    )
    def test_accepted_forms(self, entry: str, normal: str) -> None:
        """Each accepted spelling gives the normalised entry."""
        assert normalize_host_entry(entry) == normal

    @pytest.mark.parametrize(
        ("entry", "problem"),
        [
            ("ftp://example.com", "only http and https URLs are accepted"),
            ("user:pw@example.com", "user info is not accepted"),
            ("http://user@example.com", "user info is not accepted"),
            ("example.com/v1", "a path needs the URL form (http://host/path)"),
            ("example.com:99999", "the port is not a number between 0 and 65535"),
            ("example.com:http", "the port is not a number between 0 and 65535"),
            ("*.example.com", "the host is not a DNS name or IP address"),
            ("-bad-.com", "the host is not a DNS name or IP address"),
            ("exa mple.com", None),
            ("", None),
            ("http://", "the host is not a DNS name or IP address"),
            ("[zz]:80", "the host is not a DNS name or IP address"),
        ],
    )
    def test_refused_forms(self, entry: str, problem: str | None) -> None:
        """Anything else is a UsageError naming the entry and the problem."""
        with pytest.raises(UsageError) as raised:
            normalize_host_entry(entry)

        if problem is None:
            assert str(raised.value) == (
                f"network entry must be a host, host:port or http(s) URL, got {entry!r}"
            )
        else:
            assert str(raised.value) == (
                f"network entry {entry!r} is refused: {problem}; use a host, host:port or "
                "http(s) URL, e.g. 'example.com', 'example.com:8443', 'https://example.com/v1'"
            )

    @pytest.mark.parametrize("entry", [None, 80, b"example.com", ["example.com"]])
    def test_non_strings_are_refused(self, entry: Any) -> None:
        """A non-str entry is refused."""
        with pytest.raises(UsageError, match="network entry must be a host"):
            normalize_host_entry(entry)

    def test_agent_construction_normalises_and_deduplicates(self) -> None:
        """network= accepts mixed forms at construction; the option holds sorted normal entries."""
        agent = Agent(
            "fetcher",
            provider=ScriptedProvider(),
            log=False,
            network=["http://127.0.0.1:8080/v1", "127.0.0.1:8080", "Example.com", "example.com"],
        )

        assert agent._agent.options.network == ("127.0.0.1:8080", "example.com")

    @pytest.mark.parametrize("network", [["*.example.com"], [], "example.com", ["ok.test", ""]])
    def test_agent_construction_refuses_bad_entries(self, network: Any) -> None:
        """A bad entry, an empty list or a bare string is a UsageError at construction."""
        with pytest.raises(UsageError, match="network"):
            Agent("fetcher", log=False, network=network)


_POLICY = ("example.com", "127.0.0.1", "api.test:8443", "[::1]")


class TestMatching:
    """Matching is exact host equality, plus port equality when the entry names a port."""

    @pytest.mark.parametrize(
        ("host", "port"),
        [
            ("example.com", 80),
            ("example.com", 443),
            ("example.com", 8080),
            ("127.0.0.1", 5000),
            ("api.test", 8443),
            ("[::1]", 80),
        ],
    )
    def test_hosts_that_must_match(self, host: str, port: int) -> None:
        """Listed hosts match on any port, host:port entries on their port only."""
        assert host_allowed(_POLICY, host, port) is True

    @pytest.mark.parametrize(
        ("host", "port"),
        [
            ("evil-example.com", 80),
            ("example.com.evil.net", 80),
            ("notexample.com", 80),
            ("api.example.com", 80),
            ("xample.com", 80),
            ("example.co", 80),
            ("127.0.0.1.nip.io", 80),
            ("127.0.0.10", 80),
            ("27.0.0.1", 80),
            ("api.test", 443),
            ("api.test.evil", 8443),
            ("localhost", 80),
            ("[::2]", 80),
        ],
    )
    def test_hosts_that_must_not_match(self, host: str, port: int) -> None:
        """No suffix, prefix, substring or subdomain match; a host:port entry pins the port."""
        assert host_allowed(_POLICY, host, port) is False

    def test_entry_port_must_equal(self) -> None:
        """A host:port entry admits only that port."""
        assert (
            entry_matches("a.test:8080", "a.test", 8080),
            entry_matches("a.test:8080", "a.test", 80),
            entry_matches("a.test", "a.test", 1),
        ) == (True, False, True)

    def test_coverage_for_narrowing(self) -> None:
        """A host entry covers its host:port entries; a host:port entry does not cover the host."""
        assert (
            host_entry_covered(("a.test",), "a.test:1"),
            host_entry_covered(("a.test:1",), "a.test"),
            host_entry_covered(("a.test:1",), "a.test:2"),
            host_entry_covered(("a.test",), "b.a.test"),
        ) == (True, False, False, False)


class TestUrls:
    """Request URLs are reduced to host and effective port before matching."""

    @pytest.mark.parametrize(
        ("url", "allowed"),
        [
            ("http://example.com/", True),
            ("https://EXAMPLE.com./feed", True),
            ("http://example.com:8080/x", True),
            ("https://api.test:8443/v1", True),
            ("https://api.test/v1", False),
            ("http://api.test:8443/v1", True),
            ("http://example.com@evil.net/", False),
            ("http://evil.net/?u=http://example.com/", False),
            ("http://example.com.evil.net/", False),
            ("http://example.com%2eevil.net/", False),
            ("http://[::1]:9000/", True),
            ("http://127.0.0.1.nip.io/", False),
        ],
    )
    def test_url_table(self, url: str, allowed: bool) -> None:
        """Userinfo, query strings and look-alike hosts never pass for a listed host."""
        target = url_host_port(url)

        assert target is not None
        assert host_allowed(_POLICY, *target) is allowed
