"""An HTTP client whose GET, status, headers and POST methods are written on first call.

Live it talks to https://httpbin.org; offline it starts a tiny httpbin-like server on
127.0.0.1 implementing ``/get``, ``/status/<code>``, ``/response-headers`` and ``/post``.
"""

from __future__ import annotations

import contextlib
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import parse_qsl, urlsplit

from _offline import is_live, log_path, show, start

from acceptance.programs.tools import HTTP_ROLE
from recurgent import Agent


class _Httpbin(BaseHTTPRequestHandler):
    """The four httpbin routes the example uses, answered with JSON like httpbin's."""

    def log_message(self, format: str, *args: object) -> None:
        """Keep the example's output clean."""

    def do_GET(self) -> None:
        parts = urlsplit(self.path)
        query = dict(parse_qsl(parts.query))
        if parts.path == "/get":
            self._json(200, {"args": query, "headers": dict(self.headers), "url": self._url()})
        elif parts.path.startswith("/status/") and parts.path[8:].isdigit():
            code = int(parts.path[8:])
            body = b"I'm a teapot\n" if code == 418 else b""
            self._reply(code, "text/plain", body)
        elif parts.path == "/response-headers":
            self._json(200, query, headers=query)
        else:
            self._json(404, {"error": f"no route {parts.path}"})

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        data = self.rfile.read(length).decode("utf-8")
        if urlsplit(self.path).path != "/post":
            self._json(404, {"error": f"no route {self.path}"})
            return
        try:
            parsed = json.loads(data)
        except ValueError:
            parsed = None
        self._json(200, {"data": data, "json": parsed, "url": self._url()})

    def _url(self) -> str:
        host, port = self.server.server_address[:2]
        return f"http://{host!s}:{port}{self.path}"

    def _json(self, code: int, payload: object, headers: dict[str, str] | None = None) -> None:
        self._reply(code, "application/json", json.dumps(payload).encode(), headers)

    def _reply(
        self, code: int, content_type: str, body: bytes, headers: dict[str, str] | None = None
    ) -> None:
        self.send_response(code)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in (headers or {}).items():
            self.send_header(name, value)
        self.end_headers()
        self.wfile.write(body)


@contextlib.contextmanager
def httpbin() -> Iterator[str]:
    """The httpbin base URL: the real one live, a loopback server offline."""
    if is_live():
        yield "https://httpbin.org"
        return
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Httpbin)
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def main() -> None:
    """Make the four requests and print each Outcome."""
    provider = start("HTTP client")
    with httpbin() as base:
        client = Agent(HTTP_ROLE, provider=provider, log=log_path())
        get = client.get(f"{base}/get")
        show("get('/get')", get.value.get("status") if get.is_ok else get)
        status = client.status(f"{base}/status/418")
        show("status('/status/418')", status.value.get("status") if status.is_ok else status)
        headers = client.headers(f"{base}/response-headers?X-Custom=hello")
        custom = headers.value.get("headers", {}).get("X-Custom") if headers.is_ok else headers
        show("headers(...X-Custom=hello)", custom)
        posted = client.post(f"{base}/post", body='{"key": "value"}')
        echoed = (posted.value.get("json") or {}).get("json") if posted.is_ok else posted
        show("post('/post', body=...) echoes", echoed)
    print(f"Log: {log_path()}")


if __name__ == "__main__":
    main()
