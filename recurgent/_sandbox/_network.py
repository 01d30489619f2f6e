"""The network facade: ``urllib.request`` and ``urllib.error`` as generated code sees them (ADR 0013).

Only GET/POST-style requests over http and https, to hosts the agent's ``network`` option
allows (redirect targets are checked too), with a timeout that never outlives the attempt's
deadline and a capped response body. Failures raise the facade's own ``HTTPError``/``URLError``,
fresh objects that carry no reference to the host's sockets or request objects.
"""

from __future__ import annotations

import http.client
import io
import socket
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from types import SimpleNamespace
from typing import Any

from recurgent._async_stop import host_section
from recurgent._hosts import entry_matches, url_host_port
from recurgent._sandbox._gate import exact, exact_name
from recurgent._sandbox._limits import (
    DeadlineExceeded,
    SandboxLimits,
    SizeLimitExceeded,
    monotonic_clock,
)

__all__ = ["HTTPError", "Headers", "Request", "Response", "URLError", "make_network_modules"]

NetworkPolicy = Any  # "allow" | "deny" | tuple of host names (see recurgent._options)


class URLError(OSError):
    """A request could not be completed (bad URL, refused host, connection or timeout)."""

    _sandbox_public_ = frozenset({"reason", "args"})

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason

    def __str__(self) -> str:
        return f"<urlopen error {self.reason}>"


class Headers:
    """Case-insensitive response headers (a copy; nothing leads back to the socket)."""

    _sandbox_public_ = frozenset(
        {"get", "items", "keys", "values", "get_all", "get_content_charset", "get_content_type"}
    )

    def __init__(self, pairs: list[tuple[str, str]]) -> None:
        self._pairs = pairs

    def get(self, name: str, default: Any = None) -> Any:
        """First value of a header, or ``default``."""
        wanted = name.lower()
        return next((value for key, value in self._pairs if key.lower() == wanted), default)

    def get_all(self, name: str, default: Any = None) -> Any:
        """Every value of a header, or ``default``."""
        wanted = name.lower()
        found = [value for key, value in self._pairs if key.lower() == wanted]
        return found or default

    def items(self) -> list[tuple[str, str]]:
        """All ``(name, value)`` pairs."""
        return list(self._pairs)

    def keys(self) -> list[str]:
        """All header names."""
        return [key for key, _ in self._pairs]

    def values(self) -> list[str]:
        """All header values."""
        return [value for _, value in self._pairs]

    def get_content_type(self) -> str:
        """The media type, lower-cased, without parameters."""
        return str(self.get("content-type", "text/plain")).split(";")[0].strip().lower()

    def get_content_charset(self, failobj: Any = None) -> Any:
        """The ``charset`` parameter of Content-Type, or ``failobj``."""
        for part in str(self.get("content-type", "")).split(";")[1:]:
            key, _, value = part.partition("=")
            if key.strip().lower() == "charset" and value.strip():
                return value.strip().strip('"').lower()
        return failobj

    def __getitem__(self, name: str) -> Any:
        return self.get(name)

    def __contains__(self, name: object) -> bool:
        return isinstance(name, str) and self.get(name) is not None

    def __repr__(self) -> str:
        return f"Headers({self._pairs!r})"


class HTTPError(URLError):
    """The server answered with an HTTP error status (4xx/5xx)."""

    _sandbox_public_ = frozenset(
        {"code", "status", "reason", "headers", "url", "read", "getcode", "geturl", "args", "msg"}
    )

    def __init__(self, url: str, code: int, reason: str, headers: Headers, body: bytes) -> None:
        super().__init__(reason)
        self.url = url
        self.code = code
        self.status = code
        self.msg = reason
        self.headers = headers
        self._body = body

    def read(self, amount: int = -1) -> bytes:
        """The error response body."""
        return self._body if amount < 0 else self._body[:amount]

    def getcode(self) -> int:
        """The HTTP status."""
        return self.code

    def geturl(self) -> str:
        """The URL that answered."""
        return self.url

    def __str__(self) -> str:
        return f"HTTP Error {self.code}: {self.reason}"


class Request:
    """An HTTP request to pass to ``urlopen``."""

    _sandbox_public_ = frozenset(
        {"full_url", "data", "headers", "method", "add_header", "get_method", "get_full_url"}
    )

    def __init__(
        self,
        url: str,
        data: bytes | None = None,
        headers: Mapping[str, str] | None = None,
        method: str | None = None,
    ) -> None:
        if not isinstance(url, str):
            raise TypeError(f"url must be a str, got {type(url).__name__}")
        # Exact built-in values (ADR 0091): a str subclass could show the policy one host and
        # urllib another through its own methods.
        self.full_url: str = exact(url)
        self.data = exact(data)
        self.headers = {_text(k): _text(v) for k, v in (headers or {}).items()}
        self.method = None if method is None else _text(method)

    def add_header(self, key: str, value: str) -> None:
        """Add or replace a request header."""
        self.headers[_text(key)] = _text(value)

    def get_method(self) -> str:
        """``GET``, or ``POST`` when there is a body, unless a method was given."""
        return self.method or ("POST" if self.data is not None else "GET")

    def get_full_url(self) -> str:
        """The request URL."""
        return self.full_url


class Response:
    """A completed HTTP response; the whole (capped) body is already read."""

    _sandbox_public_ = frozenset(
        {
            "status",
            "code",
            "reason",
            "headers",
            "url",
            "read",
            "getcode",
            "geturl",
            "info",
            "getheader",
            "getheaders",
            "close",
            "readlines",
        }
    )

    def __init__(self, url: str, status: int, reason: str, headers: Headers, body: bytes) -> None:
        self.url = url
        self.status = status
        self.code = status
        self.reason = reason
        self.headers = headers
        self._body = body
        self._offset = 0

    def read(self, amount: int = -1) -> bytes:
        """Read the body (all of it, or ``amount`` more bytes)."""
        end = len(self._body) if amount is None or amount < 0 else self._offset + amount
        chunk = self._body[self._offset : end]
        self._offset += len(chunk)
        return chunk

    def readlines(self) -> list[bytes]:
        """The rest of the body split into lines."""
        return self.read().splitlines(keepends=True)

    def getcode(self) -> int:
        """The HTTP status."""
        return self.status

    def geturl(self) -> str:
        """The final URL, after redirects."""
        return self.url

    def info(self) -> Headers:
        """The response headers."""
        return self.headers

    def getheader(self, name: str, default: Any = None) -> Any:
        """One response header."""
        return self.headers.get(name, default)

    def getheaders(self) -> list[tuple[str, str]]:
        """All response headers."""
        return self.headers.items()

    def close(self) -> None:
        """Nothing to release: the body was read when the request completed."""

    def __enter__(self) -> Response:
        return self

    def __exit__(self, *exc: object) -> None:
        return None


def _text(value: Any) -> str:
    """``str(value)`` as an exact ``str``, whatever the value's ``__str__`` returned."""
    return exact_name(str(value))


def host_allowed(policy: NetworkPolicy, host: str, port: int) -> bool:
    """Whether ``policy`` lets generated code reach ``host`` (normalised) on ``port``.

    Allow-list entries match by exact host equality (ADR 0024): never by suffix or substring.
    """
    if policy == "allow":
        return True
    if policy == "deny":
        return False
    return any(entry_matches(entry, host, port) for entry in policy)


def _refusal(policy: NetworkPolicy, url: str) -> str | None:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme not in ("http", "https"):
        return f"only http and https URLs can be opened, got {url!r}"
    if not parts.hostname:
        return f"URL has no host: {url!r}"
    if policy == "deny":
        return "network access is disabled for this agent (network='deny')"
    target = url_host_port(url)
    if target is None:
        return f"URL has an invalid port: {url!r}"
    if not host_allowed(policy, *target):
        return f"host {parts.hostname!r} is not in this agent's network allow-list"
    return None


class _CheckedRedirects(urllib.request.HTTPRedirectHandler):
    max_redirections = 5

    def __init__(self, policy: NetworkPolicy) -> None:
        self._policy = policy

    def redirect_request(
        self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str
    ) -> Any:
        refusal = _refusal(self._policy, newurl)
        if refusal is not None:
            fp.close()
            raise urllib.error.URLError(f"redirect refused: {refusal}")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


class _RequestClock:
    """One request's deadline: min(its own timeout, the attempt's remaining time).

    ``left()`` is asked before every socket operation, so the socket timeout shrinks to what is
    left: a server dribbling one byte at a time cannot stretch the request, as a per-read
    timeout would let it.
    """

    __slots__ = ("_end", "_remaining")

    def __init__(self, seconds: float, remaining: Callable[[], float]) -> None:
        self._end = monotonic_clock() + seconds
        self._remaining = remaining

    def left(self) -> float:
        left = min(self._end - monotonic_clock(), self._remaining())
        if left <= 0:
            raise TimeoutError("timed out")
        return left


class _DeadlineReader(io.RawIOBase):
    """A socket's read side that re-arms the socket timeout to the request's time left."""

    def __init__(self, sock: socket.socket, clock: _RequestClock) -> None:
        super().__init__()
        self._sock = sock
        self._clock = clock
        # SocketIO keeps the socket's reference count, so closing the connection (urllib does
        # at once) leaves the socket open until this reader is closed as well.
        self._raw = sock.makefile("rb", buffering=0)

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int | None:
        self._sock.settimeout(self._clock.left())
        return self._raw.readinto(buffer)

    def close(self) -> None:
        self._raw.close()
        super().close()


class _DeadlineSocket:
    """The connection's socket as http.client sees it: every wait bounded by the request clock."""

    def __init__(self, sock: socket.socket, clock: _RequestClock) -> None:
        self._sock = sock
        self._clock = clock

    def makefile(self, mode: str = "r", *args: Any, **kwargs: Any) -> Any:
        if mode != "rb":
            raise ValueError(f"unsupported socket file mode {mode!r}")
        return io.BufferedReader(_DeadlineReader(self._sock, self._clock))

    def sendall(self, data: Any, *args: Any) -> None:
        self._sock.settimeout(self._clock.left())
        self._sock.sendall(data, *args)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._sock, name)


def _bounded(base: type[http.client.HTTPConnection], clock: _RequestClock) -> Callable[..., Any]:
    """A connection factory for ``do_open`` whose socket waits end at ``clock``'s deadline."""

    class Connection(base):  # type: ignore[valid-type,misc]
        def connect(self) -> None:
            self.timeout = clock.left()
            super().connect()
            connected: socket.socket = getattr(self, "sock")  # noqa: B009 - typed read
            self.sock = _DeadlineSocket(connected, clock)

    return Connection


class _BoundedHTTP(urllib.request.HTTPHandler):
    def __init__(self, clock: _RequestClock) -> None:
        super().__init__()
        self._clock = clock

    def http_open(self, req: Any) -> Any:
        return self.do_open(_bounded(http.client.HTTPConnection, self._clock), req)


class _BoundedHTTPS(urllib.request.HTTPSHandler):
    def __init__(self, clock: _RequestClock) -> None:
        super().__init__()
        self._clock = clock

    def https_open(self, req: Any) -> Any:
        return self.do_open(_bounded(http.client.HTTPSConnection, self._clock), req)


class _IncompleteBody(Exception):
    """The connection closed before the body announced by Content-Length arrived."""


def _read_capped(stream: Any, cap: int) -> bytes:
    chunks: list[bytes] = []
    size = 0
    while True:
        chunk = stream.read(64 * 1024)
        if not chunk:
            # http.client returns a short body silently when the peer closes early; a truncated
            # feed must be an error generated code can see, not a valid-looking 200.
            announced = getattr(stream, "length", None)
            if isinstance(announced, int) and announced > 0:
                raise _IncompleteBody(f"{size} of {size + announced} bytes")
            return b"".join(chunks)
        size += len(chunk)
        if size > cap:
            raise SizeLimitExceeded(f"HTTP response body exceeds the sandbox limit of {cap} bytes")
        chunks.append(chunk)


def make_network_modules(
    *,
    policy: NetworkPolicy,
    limits: SandboxLimits,
    remaining: Callable[[], float],
    spend: Callable[[str], None],
) -> dict[str, SimpleNamespace]:
    """The ``urllib.request`` and ``urllib.error`` facades of one attempt.

    Args:
        policy: ``"allow"``, ``"deny"`` or a tuple of host names.
        limits: Response size cap and default timeout.
        remaining: Seconds left before the attempt's deadline.
        spend: Charges one forwarded call to the attempt's budget.
    """

    def urlopen(url: Any, data: bytes | None = None, timeout: float | None = None) -> Response:
        spend("urllib.request.urlopen")
        data, timeout = exact(data), exact(timeout)
        request = url if isinstance(url, Request) else Request(url, data=data)
        if data is not None and request.data is None:
            request.data = data
        # The program may have changed the request's attributes since: exact values again.
        full_url = exact_name(request.full_url)
        headers = {_text(key): _text(value) for key, value in dict(request.headers).items()}
        refusal = _refusal(policy, full_url)
        if refusal is not None:
            raise URLError(refusal)
        budget = remaining()
        wait = min(timeout if timeout else limits.default_http_timeout, budget)
        if wait <= 0:
            raise DeadlineExceeded("the attempt's deadline passed before an HTTP request")
        outgoing = urllib.request.Request(
            full_url,
            data=exact(request.data),
            headers=headers,
            method=_text(request.get_method()),
        )
        clock = _RequestClock(wait, remaining)
        opener = urllib.request.build_opener(
            _CheckedRedirects(policy), _BoundedHTTP(clock), _BoundedHTTPS(clock)
        )
        failure: URLError | None = None
        # The request is bounded by its own deadline; the host code that makes it is shielded
        # from the attempt's stop (ADR 0089).
        with host_section():
            try:
                with opener.open(outgoing, timeout=wait) as raw:
                    body = _read_capped(raw, limits.max_response_bytes)
                    return Response(
                        url=raw.geturl(),
                        status=raw.status,
                        reason=str(raw.reason or ""),
                        headers=Headers(list(raw.headers.items())),
                        body=body,
                    )
            except _IncompleteBody as short:
                failure = URLError(f"incomplete response body: received {short}")
            except urllib.error.HTTPError as error:
                try:
                    body = _read_capped(error, limits.max_response_bytes)
                except (OSError, SizeLimitExceeded, _IncompleteBody):
                    body = b""
                failure = HTTPError(
                    request.full_url,
                    error.code,
                    str(error.reason or ""),
                    Headers(list((error.headers or {}).items())),
                    body,
                )
                error.close()
            except urllib.error.URLError as error:
                failure = URLError(str(error.reason))
            except TimeoutError:
                failure = URLError("timed out")
            except OSError as error:
                failure = URLError(str(error) or type(error).__name__)
        if wait >= budget and remaining() <= 0:
            # The wait was cut short by the attempt's deadline, not by the request's timeout.
            raise DeadlineExceeded("the attempt's deadline passed during an HTTP request")
        # Raised outside the except blocks so no host exception rides along as __context__.
        raise failure

    request_module = SimpleNamespace(
        urlopen=urlopen, Request=Request, HTTPError=HTTPError, URLError=URLError
    )
    error_module = SimpleNamespace(HTTPError=HTTPError, URLError=URLError)
    return {"urllib.request": request_module, "urllib.error": error_module}
