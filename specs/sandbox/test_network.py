"""The urllib.request facade against a loopback server: methods, errors, redirects, caps, policy."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from recurgent._sandbox import SandboxLimits
from recurgent.errors import ExecutionError, ResourceLimitError

from .support import execute, value_of


class _Handler(BaseHTTPRequestHandler):
    release: threading.Event

    def log_message(self, format: str, *args: Any) -> None:
        """Keep the test output quiet."""

    def _send(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
        self.send_response(status)
        for name, value in {"Content-Type": "text/plain; charset=utf-8", **(headers or {})}.items():
            self.send_header(name, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self) -> None:
        assert isinstance(self.server, _Server)  # typed as any socketserver.BaseServer
        port = self.server.server_address[1]
        if self.path == "/text":
            self._send(200, "héllo".encode(), {"X-Answer": "42"})
        elif self.path == "/headers":
            self._send(200, json.dumps({"agent": self.headers.get("X-Agent")}).encode())
        elif self.path == "/redirect":
            self._send(302, b"", {"Location": "/text"})
        elif self.path == "/redirect-away":
            self._send(302, b"", {"Location": f"http://localhost:{port}/text"})
        elif self.path == "/big":
            self._send(200, b"x" * 5000)
        elif self.path == "/truncated":
            self.send_response(200)
            self.send_header("Content-Length", "100")
            self.end_headers()
            self.wfile.write(b"x" * 40)
            self.close_connection = True
        elif self.path == "/slow":
            self.release.wait(timeout=10)
            self._send(200, b"late")
        else:
            self._send(404, b"no such page")

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
        self._send(201, b"got " + body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that gave up on /slow is expected; nothing to report."""


@pytest.fixture
def base_url() -> Iterator[str]:
    """A loopback HTTP server started for one test."""
    release = threading.Event()
    handler = type("Handler", (_Handler,), {"release": release})
    server = _Server(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        release.set()
        server.shutdown()
        server.server_close()
        thread.join()


class TestRequests:
    """GET and POST through the facade behave like urllib.request."""

    def test_get_text_and_response_headers(self, base_url: str) -> None:
        """A GET returns status, decoded body and headers."""
        source = f"""
import urllib.request
with urllib.request.urlopen({base_url + "/text"!r}, timeout=5) as response:
    result = [response.status, response.read().decode("utf-8"), response.headers.get("x-answer"),
              response.headers.get_content_charset()]
"""
        assert value_of(source) == [200, "héllo", "42", "utf-8"]

    def test_post_with_data(self, base_url: str) -> None:
        """``data=`` makes a POST and the server sees the body."""
        source = f"""
import urllib.request
response = urllib.request.urlopen({base_url + "/echo"!r}, data=b"payload", timeout=5)
result = [response.getcode(), response.read()]
"""
        assert value_of(source) == [201, b"got payload"]

    def test_request_headers_are_sent(self, base_url: str) -> None:
        """Headers on a ``Request`` reach the server."""
        source = f"""
import json, urllib.request
request = urllib.request.Request({base_url + "/headers"!r}, headers={{"X-Agent": "recurgent"}})
result = json.loads(urllib.request.urlopen(request, timeout=5).read())
"""
        assert value_of(source) == {"agent": "recurgent"}

    def test_http_error_is_catchable_with_its_code(self, base_url: str) -> None:
        """A 404 raises ``urllib.error.HTTPError`` with ``.code`` 404 and the body."""
        source = f"""
import urllib.request, urllib.error
try:
    urllib.request.urlopen({base_url + "/missing"!r}, timeout=5)
except urllib.error.HTTPError as error:
    result = [error.code, error.read(), isinstance(error, urllib.error.URLError)]
"""
        assert value_of(source) == [404, b"no such page", True]

    def test_redirect_is_followed(self, base_url: str) -> None:
        """A 302 to the same host is followed and ``geturl()`` names the final URL."""
        source = f"""
import urllib.request
response = urllib.request.urlopen({base_url + "/redirect"!r}, timeout=5)
result = [response.read().decode(), response.geturl()]
"""
        assert value_of(source) == ["héllo", base_url + "/text"]

    def test_requests_count_against_the_forwarded_call_budget(self, base_url: str) -> None:
        """Each request is a forwarded call."""
        result = execute(
            f"import urllib.request\nfor i in range(3):\n    urllib.request.urlopen({base_url + '/text'!r})",
            limits=SandboxLimits(max_forwarded_calls=2),
        )

        assert (type(result.error), "more than 2 forwarded calls" in str(result.error)) == (
            ResourceLimitError,
            True,
        )


class TestCapsAndTimeouts:
    """Bodies are capped; waits never outlive the deadline."""

    def test_oversized_body_is_a_resource_limit(self, base_url: str) -> None:
        """A body larger than ``max_response_bytes`` ends the attempt with ``resource_limit``."""
        result = execute(
            f"import urllib.request\nresult = urllib.request.urlopen({base_url + '/big'!r}).read()",
            limits=SandboxLimits(max_response_bytes=1000),
        )

        assert (type(result.error), str(result.error)) == (
            ResourceLimitError,
            "Resource limit in tester.run: HTTP response body exceeds the sandbox limit of "
            "1000 bytes",
        )

    def test_truncated_body_is_a_url_error(self, base_url: str) -> None:
        """A body shorter than its Content-Length is a URLError, not a short 200 response."""
        code = (
            "import urllib.request, urllib.error\n"
            "try:\n"
            f"    result = urllib.request.urlopen({base_url + '/truncated'!r}).read()\n"
            "except urllib.error.URLError as error:\n"
            "    result = str(error.reason)"
        )

        assert value_of(code) == "incomplete response body: received 40 of 100 bytes"

    def test_missing_timeout_defaults(self, base_url: str) -> None:
        """Without ``timeout`` the request waits ``default_http_timeout`` and raises URLError."""
        source = f"""
import urllib.request, urllib.error
try:
    urllib.request.urlopen({base_url + "/slow"!r})
except urllib.error.URLError as error:
    result = str(error)
"""
        started = time.monotonic()
        value = value_of(source, limits=SandboxLimits(default_http_timeout=0.5))

        assert (value, time.monotonic() - started < 2) == ("<urlopen error timed out>", True)

    def test_timeout_is_capped_by_the_deadline(self, base_url: str) -> None:
        """A generous ``timeout`` gives up at the attempt's deadline: a ``timeout`` error."""
        source = f"""
import urllib.request, urllib.error
try:
    urllib.request.urlopen({base_url + "/slow"!r}, timeout=60)
except urllib.error.URLError:
    result = "caught"
"""
        started = time.monotonic()
        result = execute(source, limits=SandboxLimits(timeout_seconds=1.0))

        assert (
            result.error.error_type if result.error else None,
            time.monotonic() - started <= 1.5,
        ) == (
            "timeout",
            True,
        )


class TestNetworkPolicy:
    """The ``network`` option allows all, denies all, or allows listed hosts."""

    def test_deny_refuses_every_request(self, base_url: str) -> None:
        """``network="deny"`` raises URLError before connecting."""
        result = execute(
            f"import urllib.request\nurllib.request.urlopen({base_url + '/text'!r})", network="deny"
        )

        assert (type(result.error), "network access is disabled" in str(result.error)) == (
            ExecutionError,
            True,
        )

    def test_allow_list_admits_listed_hosts(self, base_url: str) -> None:
        """A host on the allow-list is reachable."""
        source = (
            f"import urllib.request\nresult = urllib.request.urlopen({base_url + '/text'!r}).status"
        )

        assert value_of(source, network=("127.0.0.1",)) == 200

    def test_allow_list_refuses_other_hosts(self, base_url: str) -> None:
        """A host missing from the allow-list is refused."""
        result = execute(
            f"import urllib.request\nurllib.request.urlopen({base_url + '/text'!r})",
            network=("example.test",),
        )

        assert "host '127.0.0.1' is not in this agent's network allow-list" in str(result.error)

    @pytest.mark.parametrize("url", ["file:///etc/passwd", "ftp://127.0.0.1/x", "data:,hello"])
    def test_non_http_schemes_are_refused(self, url: str) -> None:
        """Only http and https URLs can be opened."""
        result = execute(f"import urllib.request\nurllib.request.urlopen({url!r})")

        assert "only http and https URLs can be opened" in str(result.error)

    def test_redirect_to_a_refused_host_is_refused(self, base_url: str) -> None:
        """A redirect leaving the allow-list is refused instead of followed."""
        source = f"""
import urllib.request, urllib.error
try:
    urllib.request.urlopen({base_url + "/redirect-away"!r}, timeout=5)
except urllib.error.URLError as error:
    result = str(error)
"""
        assert value_of(source, network=("127.0.0.1",)) == (
            "<urlopen error redirect refused: host 'localhost' is not in this agent's network "
            "allow-list>"
        )
