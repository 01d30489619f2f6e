"""Every request ends by its deadline however slowly bytes arrive; allow-list forms end to end."""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from recurgent import Agent
from recurgent._sandbox import SandboxLimits
from recurgent.errors import ExecutionTimeoutError
from recurgent.testing import ScriptedProvider

from .support import execute, value_of

_DRIP_SECONDS = 0.25


class _Handler(BaseHTTPRequestHandler):
    stop: threading.Event

    def log_message(self, format: str, *args: Any) -> None:
        """Keep the test output quiet."""

    def _drip(self, data: bytes) -> None:
        for byte in data:
            if self.stop.wait(_DRIP_SECONDS):
                return
            self.wfile.write(bytes([byte]))
            self.wfile.flush()

    def do_GET(self) -> None:
        if self.path == "/drip-body":
            self.send_response(200)
            self.send_header("Content-Length", "100000")
            self.end_headers()
            self.wfile.flush()
            self._drip(b"x" * 100000)
        elif self.path == "/drip-headers":
            self._drip(b"HTTP/1.1 200 OK\r\nX-Slow: " + b"y" * 100000)
        elif self.path == "/drip-chunked":
            self.send_response(200)
            self.send_header("Transfer-Encoding", "chunked")
            self.end_headers()
            self.wfile.flush()
            self._drip(b"1\r\nx\r\n" * 10000)
        else:
            body = b"fine"
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """A client that gave up on a drip is expected; nothing to report."""


@pytest.fixture
def server() -> Iterator[tuple[str, int]]:
    """A loopback server whose drip pages send one byte every 0.25 s."""
    stop = threading.Event()
    server = _Server(("127.0.0.1", 0), type("Handler", (_Handler,), {"stop": stop}))
    thread = threading.Thread(target=server.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield "127.0.0.1", server.server_address[1]
    finally:
        stop.set()
        server.shutdown()
        server.server_close()
        thread.join()


class TestWholeRequestDeadline:
    """The deadline covers the request, not one socket read (the issue demands these bounds)."""

    @pytest.mark.parametrize("path", ["/drip-body", "/drip-headers", "/drip-chunked"])
    def test_dripping_server_cannot_outlast_the_attempt(
        self, server: tuple[str, int], path: str
    ) -> None:
        """A 2 s attempt asking timeout=30 ends with a timeout error, well before 30 s."""
        host, port = server
        source = (
            "import urllib.request\n"
            f"result = urllib.request.urlopen('http://{host}:{port}{path}', timeout=30).read()"
        )
        started = time.monotonic()

        result = execute(source, limits=SandboxLimits(timeout_seconds=2.0))

        assert (type(result.error), time.monotonic() - started < 6) == (
            ExecutionTimeoutError,
            True,
        )

    @pytest.mark.parametrize("path", ["/drip-body", "/drip-headers"])
    def test_request_timeout_bounds_the_whole_request(
        self, server: tuple[str, int], path: str
    ) -> None:
        """timeout=1 under a 20 s attempt is a catchable URLError 'timed out' after about 1 s."""
        host, port = server
        source = (
            "import urllib.request, urllib.error\n"
            "try:\n"
            f"    urllib.request.urlopen('http://{host}:{port}{path}', timeout=1).read()\n"
            "    result = 'read'\n"
            "except urllib.error.URLError as error:\n"
            "    result = str(error)\n"
        )
        started = time.monotonic()

        value = value_of(source, limits=SandboxLimits(timeout_seconds=20.0))

        assert (value, time.monotonic() - started < 6) == ("<urlopen error timed out>", True)

    def test_fast_response_is_unaffected(self, server: tuple[str, int]) -> None:
        """An ordinary response still reads completely."""
        host, port = server
        source = f"import urllib.request\nresult = urllib.request.urlopen('http://{host}:{port}/ok').read()"

        assert value_of(source) == b"fine"


def _fetch(network: Any, port: int) -> Any:
    """Run an agent fetching /ok on the loopback server under ``network``: body or refusal."""
    url = f"http://127.0.0.1:{port}/ok"
    program = (
        "import urllib.request, urllib.error\n"
        "try:\n"
        f"    body = urllib.request.urlopen({url!r}, timeout=5).read().decode()\n"
        "except urllib.error.URLError as error:\n"
        "    return Outcome.error(error_type='network_error', error_message=str(error.reason))\n"
        f"source = {{'uri': {url!r}, 'fetched_at': '2026-12-01T00:00:00Z',\n"
        "          'retrieval_tool': 'urllib', 'retrieval_mode': 'live'}\n"
        "return {'body': body, 'provenance': {'sources': [source]}}\n"
    )
    agent = Agent(
        "fetcher", provider=ScriptedProvider({"get": program}), log=False, network=network
    )
    outcome = agent.get()
    return outcome.value["body"] if outcome.is_ok else outcome.error_message


class TestAllowListForms:
    """URL and host:port entries of network= match a real loopback request."""

    def test_url_form_admits_its_host_and_port(self, server: tuple[str, int]) -> None:
        """network=['http://127.0.0.1:PORT/v1'] reaches the server."""
        port = server[1]

        assert _fetch([f"http://127.0.0.1:{port}/v1"], port) == "fine"

    def test_host_port_form_admits_its_port(self, server: tuple[str, int]) -> None:
        """network=['127.0.0.1:PORT'] reaches the server."""
        port = server[1]

        assert _fetch([f"127.0.0.1:{port}"], port) == "fine"

    def test_host_form_admits_any_port(self, server: tuple[str, int]) -> None:
        """network=['127.0.0.1'] reaches the server on any port."""
        assert _fetch(["127.0.0.1"], server[1]) == "fine"

    @pytest.mark.parametrize(
        "entry", ["127.0.0.1:1", "127.0.0.1.nip.io", "27.0.0.1", "127.0.0.10", "localhost"]
    )
    def test_other_entries_refuse(self, server: tuple[str, int], entry: str) -> None:
        """Another port or a look-alike host is refused before connecting."""
        assert _fetch([entry], server[1]) == (
            "host '127.0.0.1' is not in this agent's network allow-list"
        )
