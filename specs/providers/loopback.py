"""A loopback HTTP server answering each request with whatever a test's responder returns.

Used by the Anthropic and OpenAI Responses specs: the responder gets the recorded request
(method, path, lower-cased headers, JSON body) and returns a :class:`Reply`. The server binds
127.0.0.1 only and records every request.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

__all__ = ["LoopbackServer", "Received", "Reply"]


@dataclass(frozen=True)
class Reply:
    """One HTTP answer.

    Attributes:
        status: HTTP status.
        body: JSON-able object, or raw bytes sent as they are.
        headers: Extra headers (e.g. ``Retry-After``).
        chunked: Send the body chunked, without Content-Length.
        repeat: Send ``body`` (bytes) this many times (large bodies without building them).
    """

    status: int = 200
    body: Any = None
    headers: Mapping[str, str] = field(default_factory=dict)
    chunked: bool = False
    repeat: int = 1

    def payload(self) -> bytes:
        """The body as bytes (one repetition)."""
        if isinstance(self.body, bytes):
            return self.body
        return json.dumps(self.body).encode()


@dataclass(frozen=True)
class Received:
    """One request the server got: method, path, lower-cased headers and JSON body."""

    method: str
    path: str
    headers: dict[str, str]
    body: Any


Responder = Callable[[Received], Reply]


class LoopbackServer:
    """An HTTP server on 127.0.0.1 in a daemon thread; use it as a context manager.

    Args:
        respond: Builds the reply to each request; replaceable through ``respond``.
    """

    def __init__(self, respond: Responder) -> None:
        self.respond = respond
        self._requests: list[Received] = []
        self._lock = threading.Lock()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def root(self) -> str:
        """``http://127.0.0.1:<port>``."""
        assert self._httpd is not None, "use LoopbackServer as a context manager"
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def requests(self) -> list[Received]:
        """A copy of the requests so far, oldest first."""
        with self._lock:
            return list(self._requests)

    def __enter__(self) -> LoopbackServer:
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self._httpd.daemon_threads = True
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )
        self._thread.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        assert self._httpd is not None and self._thread is not None
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join()

    def _handler(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = None
                headers = {name.lower(): value for name, value in self.headers.items()}
                received = Received(self.command, self.path, headers, body)
                with server._lock:
                    server._requests.append(received)
                reply = server.respond(received)
                try:
                    self._send(reply)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client stopped reading (a reply-size cap); nothing to tell it

            def _send(self, reply: Reply) -> None:
                payload = reply.payload()
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                if reply.chunked:
                    self.send_header("Transfer-Encoding", "chunked")
                else:
                    self.send_header("Content-Length", str(len(payload) * reply.repeat))
                self.end_headers()
                for chunk in _repeat(payload, reply.repeat):
                    if reply.chunked:
                        self.wfile.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
                    else:
                        self.wfile.write(chunk)
                if reply.chunked:
                    self.wfile.write(b"0\r\n\r\n")

            def log_message(self, format: str, *args: Any) -> None:
                pass

        return Handler


def _repeat(payload: bytes, times: int) -> Iterator[bytes]:
    for _ in range(times):
        yield payload
