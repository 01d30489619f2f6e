"""Network allow-list entries: parsing the ``network=`` forms and exact host matching (ADR 0024).

An entry is a host with an optional port, written ``example.com``, ``example.com:8443`` or as an
http(s) URL (``https://example.com:8443/v1``; the path is ignored). Every form is normalised to
the scheme-less, lower-case ``host`` or ``host:port`` (IPv6 in brackets: ``[::1]:8080``). A URL
matches an entry only when its host is *equal* to the entry's host, and its port to the entry's
port when the entry names one: no suffix, substring or subdomain matching, so
``evil-example.com``, ``example.com.evil.net`` and ``api.example.com`` never match
``example.com``.
"""

from __future__ import annotations

import ipaddress
import re
import urllib.parse
from collections.abc import Iterable

from recurgent.errors import UsageError

__all__ = ["entry_matches", "host_entry_covered", "normalize_host_entry", "url_host_port"]

_LABEL = re.compile(r"^(?!-)[a-z0-9_-]{1,63}(?<!-)$")
_DEFAULT_PORTS = {"http": 80, "https": 443}


def _valid_host(host: str) -> bool:
    if host.startswith("[") and host.endswith("]"):
        try:
            return isinstance(ipaddress.ip_address(host[1:-1]), ipaddress.IPv6Address)
        except ValueError:
            return False
    labels = host.split(".")
    return len(host) <= 253 and all(_LABEL.match(label) for label in labels)


def _bracketed(host: str) -> str:
    """IPv6 literals are kept in brackets so ``host:port`` stays unambiguous."""
    return f"[{host}]" if ":" in host else host


def _refused(entry: str, problem: str) -> UsageError:
    return UsageError(
        f"network entry {entry!r} is refused: {problem}; use a host, host:port or "
        "http(s) URL, e.g. 'example.com', 'example.com:8443', 'https://example.com/v1'"
    )


def normalize_host_entry(entry: object) -> str:
    """``host`` or ``host:port``, lower-case and scheme-less, from any accepted form.

    Raises:
        UsageError: not a str, blank, a scheme other than http/https, user info, a bad port, or
            a host that is not a DNS name or IP address (wildcards such as ``*.example.com``).
    """
    if not isinstance(entry, str) or not entry.strip() or any(c.isspace() for c in entry.strip()):
        raise UsageError(f"network entry must be a host, host:port or http(s) URL, got {entry!r}")
    text = entry.strip().lower()
    has_scheme = "://" in text
    try:
        parts = urllib.parse.urlsplit(text if has_scheme else f"//{text}")
    except ValueError:
        # urlsplit validates bracketed IPv6 literals itself.
        raise _refused(entry, "the host is not a DNS name or IP address") from None
    problem = None
    if has_scheme and parts.scheme not in _DEFAULT_PORTS:
        problem = "only http and https URLs are accepted"
    elif parts.username is not None or parts.password is not None:
        problem = "user info is not accepted"
    elif not has_scheme and (parts.path or parts.query or parts.fragment):
        problem = "a path needs the URL form (http://host/path)"
    try:
        port = parts.port
    except ValueError:
        port, problem = None, problem or "the port is not a number between 0 and 65535"
    hostname = (parts.hostname or "").rstrip(".")
    host = _bracketed(hostname) if hostname else ""
    if problem is None and not _valid_host(host):
        problem = "the host is not a DNS name or IP address"
    if problem is not None:
        raise _refused(entry, problem)
    return host if port is None else f"{host}:{port}"


def _split(entry: str) -> tuple[str, int | None]:
    host, colon, port = entry.rpartition(":")
    if colon and not port.endswith("]") and port.isdigit():
        return host, int(port)
    return entry, None


def url_host_port(url: str) -> tuple[str, int] | None:
    """The normalised host and effective port of an http(s) URL, or None when it has none."""
    parts = urllib.parse.urlsplit(url)
    hostname = (parts.hostname or "").lower().rstrip(".")
    if not hostname or parts.scheme.lower() not in _DEFAULT_PORTS:
        return None
    try:
        port = parts.port
    except ValueError:
        return None
    return _bracketed(hostname), port if port is not None else _DEFAULT_PORTS[parts.scheme.lower()]


def entry_matches(entry: str, host: str, port: int) -> bool:
    """Whether the normalised ``entry`` admits ``host`` (normalised) on ``port``: exact equality."""
    allowed_host, allowed_port = _split(entry)
    return allowed_host == host and (allowed_port is None or allowed_port == port)


def host_entry_covered(parent: Iterable[str], entry: str) -> bool:
    """Whether every request ``entry`` admits is also admitted by one of ``parent``'s entries."""
    host, port = _split(entry)
    return any(
        candidate == entry or (port is not None and candidate == host) for candidate in parent
    )
