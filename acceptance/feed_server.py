"""A loopback HTTP server that serves the synthetic RSS fixtures, with injectable faults.

The acceptance suite must never touch the network, yet the example agents fetch real-looking
feed URLs. :class:`FeedServer` binds ``127.0.0.1`` on an ephemeral port and serves the files in
``acceptance/fixtures/feeds/`` under paths that mirror the real feeds' paths::

    with FeedServer() as server:
        url = server.url("google")    # http://127.0.0.1:PORT/google/rss?hl=en-US&gl=US&ceid=US:en
        server.set_fault("yahoo", "redirect")
        ...
        assert server.hits["google"] == 1

Routes (the query string is ignored everywhere):

==========================================  =========================  ======================
path                                        hit key                    serves
==========================================  =========================  ======================
``/google/rss``                             ``google``                 Google feed (faults)
``/yahoo/rss/`` and ``/yahoo/rss``          ``yahoo``                  Yahoo feed (faults)
``/nyt/services/xml/rss/nyt/HomePage.xml``  ``nyt``                    NYT feed (faults)
``/google/news/rss``                        ``google_redirect_target`` Google feed, never faulty
``/yahoo/news/rss``                         ``yahoo_redirect_target``  Yahoo feed, never faulty
``/nyt/news/rss``                           ``nyt_redirect_target``    NYT feed, never faulty
anything else                               ``unknown``                404
==========================================  =========================  ======================

Faults, set per source with :meth:`FeedServer.set_fault`:

``None``
    Serve the feed normally (``200``, ``application/rss+xml; charset=UTF-8``).
``"redirect"``
    ``308 Permanent Redirect`` whose absolute ``Location`` points at the source's redirect
    target on the same server (``/yahoo/news/rss`` for Yahoo), which serves the feed normally.
``"forbidden"``
    ``403`` with a small HTML body.
``"slow"``
    Wait ``slow_seconds`` (default 3.0) and then serve normally. The wait is cut short when the
    server stops, so closing the server never hangs on a slow request.
``"truncated"``
    Announce the full ``Content-Length`` but send only the first half of the bytes, then close
    the connection; clients see ``http.client.IncompleteRead`` (or a short body).
``"malformed"``
    ``200`` with a syntactically broken XML document (:data:`MALFORMED_BODY`).
``"latin1"``
    The feed re-encoded as ISO-8859-1, with its XML declaration and ``Content-Type`` saying so.
    Typographic punctuation outside Latin-1 becomes its ASCII look-alike (``'`` ``"`` ``--``);
    any other character outside Latin-1 becomes an XML character reference.

Bodies never depend on the clock; only the standard ``Date``/``Server`` headers do. Request
logging is silenced. Standard library only.
"""

from __future__ import annotations

import re
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import TracebackType
from typing import ClassVar
from urllib.parse import urlsplit

__all__ = [
    "FAULTS",
    "FEEDS_DIR",
    "FEED_FILES",
    "HIT_KEYS",
    "MALFORMED_BODY",
    "SOURCES",
    "FeedServer",
    "to_latin1",
]

FEEDS_DIR = Path(__file__).resolve().parent / "fixtures" / "feeds"
"""Directory holding the synthetic feed files."""

SOURCES = ("google", "yahoo", "nyt")
"""The feed sources the server knows about."""

FEED_FILES = {
    "google": "google_news.xml",
    "yahoo": "yahoo_news.xml",
    "nyt": "nyt_homepage.xml",
}
"""File name (inside :data:`FEEDS_DIR`) of each source's feed."""

FAULTS = (None, "redirect", "forbidden", "slow", "truncated", "malformed", "latin1")
"""Every value accepted by :meth:`FeedServer.set_fault`."""

DEFAULT_SLOW_SECONDS = 3.0

_FEED_PATHS = {
    "google": "/google/rss?hl=en-US&gl=US&ceid=US:en",
    "yahoo": "/yahoo/rss/",
    "nyt": "/nyt/services/xml/rss/nyt/HomePage.xml",
}

_REDIRECT_TARGETS = {
    "google": "/google/news/rss",
    "yahoo": "/yahoo/news/rss",
    "nyt": "/nyt/news/rss",
}

# path -> (hit key, source, whether the source's fault applies)
_ROUTES: dict[str, tuple[str, str, bool]] = {
    "/google/rss": ("google", "google", True),
    "/yahoo/rss/": ("yahoo", "yahoo", True),
    "/yahoo/rss": ("yahoo", "yahoo", True),
    "/nyt/services/xml/rss/nyt/HomePage.xml": ("nyt", "nyt", True),
    **{
        path: (f"{source}_redirect_target", source, False)
        for source, path in _REDIRECT_TARGETS.items()
    },
}

HIT_KEYS = (*SOURCES, *(f"{source}_redirect_target" for source in SOURCES), "unknown")
"""Every key of :attr:`FeedServer.hits`."""

RSS_UTF8 = "application/rss+xml; charset=UTF-8"
RSS_LATIN1 = "application/rss+xml; charset=ISO-8859-1"

MALFORMED_BODY = (
    b'<?xml version="1.0" encoding="UTF-8"?>\n'
    b'<rss version="2.0">\n'
    b"  <channel>\n"
    b"    <title>Top stories & more</title>\n"
    b"    <item>\n"
    b"      <title>Unterminated headline\n"
    b"    </item>\n"
    b"  </chanel>\n"
)
"""A broken document: a bare ``&``, an unclosed ``<title>``, a misspelt end tag, no ``</rss>``."""

_FORBIDDEN_BODY = (
    b"<!DOCTYPE html>\n<html><head><title>403 Forbidden</title></head>"
    b"<body><h1>Forbidden</h1><p>You don't have permission to access this feed.</p>"
    b"</body></html>\n"
)

_NOT_FOUND_BODY = (
    b"<!DOCTYPE html>\n<html><head><title>404 Not Found</title></head>"
    b"<body><h1>Not Found</h1><p>No feed lives at this address.</p></body></html>\n"
)

_LATIN1_LOOKALIKES = str.maketrans(
    {
        "\u2018": "'",  # left single quotation mark
        "\u2019": "'",  # right single quotation mark
        "\u201a": "'",  # single low-9 quotation mark
        "\u201c": '"',  # left double quotation mark
        "\u201d": '"',  # right double quotation mark
        "\u201e": '"',  # double low-9 quotation mark
        "\u2013": "-",  # en dash
        "\u2014": "--",  # em dash
        "\u2026": "...",  # horizontal ellipsis
        "\u2022": "*",  # bullet
    }
)

_XML_DECLARATION = re.compile(r"^<\?xml[^>]*\?>")


def to_latin1(feed: bytes) -> bytes:
    """Re-encode a UTF-8 feed as ISO-8859-1 and rewrite its XML declaration to match.

    Typographic quotes and dashes become ASCII look-alikes; any other character outside
    Latin-1 becomes a numeric character reference, so the document stays well-formed.
    """
    text = feed.decode("utf-8").translate(_LATIN1_LOOKALIKES)
    match = _XML_DECLARATION.match(text)
    declaration = '<?xml version="1.0" encoding="ISO-8859-1"?>'
    if match is None:
        text = declaration + "\n" + text
    else:
        old = match.group(0)
        standalone = ' standalone="yes"' if 'standalone="yes"' in old else ""
        text = f'<?xml version="1.0" encoding="ISO-8859-1"{standalone}?>' + text[match.end() :]
    return text.encode("iso-8859-1", errors="xmlcharrefreplace")


class _FeedHTTPServer(ThreadingHTTPServer):
    """ThreadingHTTPServer that knows its owning :class:`FeedServer`."""

    daemon_threads = True
    owner: FeedServer

    def handle_error(self, request: object, client_address: object) -> None:
        """Stay quiet: a client hanging up mid-response is expected in fault tests."""


class _FeedHandler(BaseHTTPRequestHandler):
    """Route a request to a feed, a fault, or a 404."""

    server: _FeedHTTPServer
    server_version = "FixtureFeedServer/1.0"
    sys_version = ""
    error_content_type = "text/html; charset=UTF-8"
    _quiet_errors: ClassVar[tuple[type[BaseException], ...]] = (
        BrokenPipeError,
        ConnectionResetError,
        ConnectionAbortedError,
    )

    def log_message(self, format: str, *args: object) -> None:
        """Silence the default per-request logging to stderr."""

    def do_GET(self) -> None:
        """Serve a GET request."""
        try:
            self._respond(send_body=True)
        except self._quiet_errors:
            self.close_connection = True

    def do_HEAD(self) -> None:
        """Serve a HEAD request: same status and headers as GET, no body."""
        try:
            self._respond(send_body=False)
        except self._quiet_errors:
            self.close_connection = True

    def _respond(self, *, send_body: bool) -> None:
        owner = self.server.owner
        path = urlsplit(self.path).path
        route = _ROUTES.get(path)
        if route is None:
            owner._count("unknown")
            self._send(404, "text/html; charset=UTF-8", _NOT_FOUND_BODY, send_body=send_body)
            return
        key, source, faults_apply = route
        owner._count(key)
        fault, slow_seconds = owner._fault_for(source) if faults_apply else (None, 0.0)
        feed = owner.feed_bytes(source)

        if fault is None:
            self._send(200, RSS_UTF8, feed, send_body=send_body)
        elif fault == "redirect":
            location = owner.base_url + _REDIRECT_TARGETS[source]
            self._send(
                308,
                "text/plain; charset=UTF-8",
                f"Permanent Redirect: {location}\n".encode(),
                send_body=send_body,
                extra_headers={"Location": location},
            )
        elif fault == "forbidden":
            self._send(403, "text/html; charset=UTF-8", _FORBIDDEN_BODY, send_body=send_body)
        elif fault == "slow":
            owner._stopping.wait(slow_seconds)
            self._send(200, RSS_UTF8, feed, send_body=send_body)
        elif fault == "truncated":
            self.close_connection = True
            self.send_response(200)
            self.send_header("Content-Type", RSS_UTF8)
            self.send_header("Content-Length", str(len(feed)))
            self.send_header("Connection", "close")
            self.end_headers()
            if send_body:
                self.wfile.write(feed[: len(feed) // 2])
            self.wfile.flush()
        elif fault == "malformed":
            self._send(200, RSS_UTF8, MALFORMED_BODY, send_body=send_body)
        elif fault == "latin1":
            self._send(200, RSS_LATIN1, to_latin1(feed), send_body=send_body)
        else:  # pragma: no cover - set_fault validates
            raise AssertionError(f"unhandled fault {fault!r}")

    def _send(
        self,
        status: int,
        content_type: str,
        body: bytes,
        *,
        send_body: bool,
        extra_headers: dict[str, str] | None = None,
    ) -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (extra_headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        if send_body:
            self.wfile.write(body)


class FeedServer:
    """Serve the synthetic feeds on ``127.0.0.1`` from a daemon thread.

    Use it as a context manager (or call :meth:`start` / :meth:`stop`). All methods are safe
    to call from any thread while requests are in flight.
    """

    def __init__(self, feeds_dir: Path | str | None = None) -> None:
        """Load the three feed files from ``feeds_dir`` (default :data:`FEEDS_DIR`)."""
        directory = Path(feeds_dir) if feeds_dir is not None else FEEDS_DIR
        self._feeds = {
            source: (directory / name).read_bytes() for source, name in FEED_FILES.items()
        }
        self._lock = threading.Lock()
        self._hits = dict.fromkeys(HIT_KEYS, 0)
        self._faults: dict[str, tuple[str | None, float]] = dict.fromkeys(
            SOURCES, (None, DEFAULT_SLOW_SECONDS)
        )
        self._stopping = threading.Event()
        self._httpd: _FeedHTTPServer | None = None
        self._thread: threading.Thread | None = None

    # -- lifecycle -----------------------------------------------------------------------

    def start(self) -> FeedServer:
        """Bind an ephemeral loopback port and start serving; return ``self``."""
        if self._httpd is not None:
            raise RuntimeError("FeedServer is already running")
        self._stopping.clear()
        httpd = _FeedHTTPServer(("127.0.0.1", 0), _FeedHandler)
        httpd.owner = self
        self._httpd = httpd
        self._thread = threading.Thread(
            target=httpd.serve_forever,
            kwargs={"poll_interval": 0.05},
            name=f"FeedServer:{httpd.server_address[1]}",
            daemon=True,
        )
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop serving, wake any ``slow`` request, and close the listening socket."""
        httpd, thread = self._httpd, self._thread
        if httpd is None:
            return
        self._stopping.set()
        httpd.shutdown()
        httpd.server_close()
        if thread is not None:
            thread.join(timeout=5)
        self._httpd = None
        self._thread = None

    def __enter__(self) -> FeedServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- addresses -----------------------------------------------------------------------

    @property
    def port(self) -> int:
        """The bound port (only while running)."""
        if self._httpd is None:
            raise RuntimeError("FeedServer is not running")
        return int(self._httpd.server_address[1])

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT`` (no trailing slash)."""
        return f"http://127.0.0.1:{self.port}"

    def url(self, source: str) -> str:
        """The feed URL of ``source`` ("google", "yahoo" or "nyt")."""
        _check_source(source)
        return self.base_url + _FEED_PATHS[source]

    def redirect_target_url(self, source: str) -> str:
        """Where the ``redirect`` fault sends clients for ``source``."""
        _check_source(source)
        return self.base_url + _REDIRECT_TARGETS[source]

    # -- content, faults and counters ----------------------------------------------------

    def feed_bytes(self, source: str) -> bytes:
        """The exact bytes served for ``source`` when there is no fault."""
        _check_source(source)
        return self._feeds[source]

    def set_fault(
        self, source: str, fault: str | None, *, slow_seconds: float | None = None
    ) -> None:
        """Make ``source`` misbehave with ``fault`` (see the module docstring); ``None`` heals it.

        ``slow_seconds`` sets the delay of the ``slow`` fault; when omitted it is reset to the
        default of 3.0 seconds.
        """
        _check_source(source)
        if fault not in FAULTS:
            raise ValueError(f"unknown fault {fault!r}; expected one of {FAULTS}")
        delay = DEFAULT_SLOW_SECONDS if slow_seconds is None else float(slow_seconds)
        if delay < 0:
            raise ValueError("slow_seconds must be >= 0")
        with self._lock:
            self._faults[source] = (fault, delay)

    def clear_faults(self) -> None:
        """Heal every source."""
        with self._lock:
            for source in SOURCES:
                self._faults[source] = (None, DEFAULT_SLOW_SECONDS)

    def fault(self, source: str) -> str | None:
        """The fault currently set for ``source``."""
        _check_source(source)
        return self._fault_for(source)[0]

    @property
    def hits(self) -> dict[str, int]:
        """A snapshot of request counts per route key (every key of :data:`HIT_KEYS`)."""
        with self._lock:
            return dict(self._hits)

    def reset_hits(self) -> None:
        """Set every counter back to zero."""
        with self._lock:
            self._hits = dict.fromkeys(HIT_KEYS, 0)

    def _count(self, key: str) -> None:
        with self._lock:
            self._hits[key] += 1

    def _fault_for(self, source: str) -> tuple[str | None, float]:
        with self._lock:
            return self._faults[source]


def _check_source(source: str) -> None:
    if source not in SOURCES:
        raise ValueError(f"unknown feed source {source!r}; expected one of {SOURCES}")
