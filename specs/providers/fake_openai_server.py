"""A loopback OpenAI-compatible HTTP server that answers chat completions with scripted replies.

Usage::

    with FakeOpenAIServer(lambda body: FakeReply.ok({"code": "result = 1"})) as server:
        provider = OpenAIProvider(base_url=server.base_url, api_key="sk-test")
        ...
        assert server.requests[0].body["model"] == "gpt-test"

Only ``POST /v1/chat/completions`` is served (through ``server.handler``); every other route
gets a 404 with an OpenAI error body. All requests are recorded. The server binds 127.0.0.1 only.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any

__all__ = ["FakeOpenAIServer", "FakeReply", "ReceivedRequest", "chat_completion"]

CHAT_PATH = "/v1/chat/completions"


@dataclass(frozen=True)
class FakeReply:
    """What the server answers to one chat completion request; build it with a classmethod.

    Attributes:
        program: Program to return as a chat completion, shaped like the request asked.
        status: HTTP status.
        error: OpenAI error object (``message``, ``type``, ``code``) sent as ``{"error": ...}``.
        body: Raw body sent as is, instead of ``program`` or ``error``.
        content_type: Content-Type of the reply.
        delay: Seconds to wait before answering.
        headers: Extra reply headers (e.g. ``Retry-After``).
    """

    program: Mapping[str, Any] | None = None
    status: int = 200
    error: Mapping[str, Any] | None = None
    body: bytes | None = None
    content_type: str = "application/json"
    delay: float = 0.0
    headers: Mapping[str, str] | None = None

    def __post_init__(self) -> None:
        if sum(part is not None for part in (self.program, self.error, self.body)) != 1:
            raise ValueError("FakeReply needs exactly one of program, error and body")

    @classmethod
    def ok(cls, program: Mapping[str, Any], *, delay: float = 0.0) -> FakeReply:
        """Answer with ``program``: a tool call, or message content for ``response_format``."""
        return cls(program=program, delay=delay)

    @classmethod
    def fail(
        cls,
        status: int,
        message: str = "fake failure",
        *,
        type: str = "server_error",
        code: str | None = None,
        delay: float = 0.0,
        headers: Mapping[str, str] | None = None,
    ) -> FakeReply:
        """Answer with an HTTP error status and an OpenAI error body."""
        return cls(
            status=status,
            error={"message": message, "type": type, "code": code},
            delay=delay,
            headers=headers,
        )

    @classmethod
    def raw(
        cls,
        body: bytes | str,
        *,
        status: int = 200,
        content_type: str = "application/json",
        delay: float = 0.0,
    ) -> FakeReply:
        """Answer with ``body`` verbatim (malformed JSON, a hand-built completion, ...)."""
        data = body.encode() if isinstance(body, str) else body
        return cls(status=status, body=data, content_type=content_type, delay=delay)


@dataclass(frozen=True)
class ReceivedRequest:
    """One request the server received.

    Attributes:
        method: HTTP method.
        path: Request path, e.g. ``/v1/chat/completions``.
        headers: Request headers, names lower-cased.
        body: The JSON body, or ``None`` when absent or not JSON.
    """

    method: str
    path: str
    headers: dict[str, str]
    body: Any


Handler = Callable[[dict[str, Any]], FakeReply]


def chat_completion(message: Mapping[str, Any], *, model: str = "gpt-test") -> dict[str, Any]:
    """Wrap an assistant ``message`` into a complete ``chat.completion`` object.

    Args:
        message: The assistant message, e.g. ``{"role": "assistant", "content": "..."}``.
        model: Model name reported by the reply.
    """
    finish_reason = "tool_calls" if message.get("tool_calls") else "stop"
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": model,
        "choices": [
            {"index": 0, "message": dict(message), "logprobs": None, "finish_reason": finish_reason}
        ],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
    }


def _render(reply: FakeReply, request_body: Mapping[str, Any]) -> bytes:
    if reply.body is not None:
        return reply.body
    if reply.error is not None:
        return json.dumps({"error": dict(reply.error)}).encode()
    arguments = json.dumps(reply.program)
    message: dict[str, Any] = {"role": "assistant", "content": None, "refusal": None}
    response_format = request_body.get("response_format") or {}
    if request_body.get("tools") and response_format.get("type") != "json_schema":
        message["tool_calls"] = [
            {
                "id": "call_fake",
                "type": "function",
                "function": {"name": "execute_code", "arguments": arguments},
            }
        ]
    else:
        message["content"] = arguments
    model = str(request_body.get("model", "gpt-test"))
    return json.dumps(chat_completion(message, model=model)).encode()


def _default_handler(body: dict[str, Any]) -> FakeReply:
    return FakeReply.ok({"code": "result = 42", "dependencies": []})


class FakeOpenAIServer:
    """An OpenAI-compatible server on 127.0.0.1, on a free port, in a daemon thread.

    Args:
        handler: Called with each chat completion request's JSON body; returns the reply.
            Replaceable at any time through the ``handler`` attribute. The default answers
            ``{"code": "result = 42", "dependencies": []}``.

    Attributes:
        handler: The current handler.
    """

    def __init__(self, handler: Handler | None = None) -> None:
        self.handler: Handler = handler or _default_handler
        self._requests: list[ReceivedRequest] = []
        self._lock = threading.Lock()
        # Set on close so delayed replies stop waiting instead of outliving the test.
        self._closing = threading.Event()
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None

    @property
    def base_url(self) -> str:
        """API root to give a client, ``http://127.0.0.1:<port>/v1``."""
        if self._httpd is None:
            raise RuntimeError("FakeOpenAIServer is not running; use it as a context manager")
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    @property
    def requests(self) -> list[ReceivedRequest]:
        """A copy of the requests received so far, oldest first."""
        with self._lock:
            return list(self._requests)

    def start(self) -> FakeOpenAIServer:
        """Bind a free loopback port and serve in a daemon thread."""
        self._closing.clear()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._request_handler_class())
        # A short poll interval keeps close() (which waits for the next poll) fast.
        self._thread = threading.Thread(
            target=self._httpd.serve_forever,
            kwargs={"poll_interval": 0.01},
            name="fake-openai-server",
            daemon=True,
        )
        self._thread.start()
        return self

    def close(self) -> None:
        """Stop serving and release the port."""
        self._closing.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
        if self._thread is not None:
            self._thread.join()
        self._httpd = None
        self._thread = None

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _record(self, request: ReceivedRequest) -> None:
        with self._lock:
            self._requests.append(request)

    def _request_handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class RequestHandler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                self._dispatch()

            do_GET = do_PUT = do_PATCH = do_DELETE = do_POST

            def _dispatch(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length) if length else b""
                try:
                    body = json.loads(raw) if raw else None
                except ValueError:
                    body = None
                headers = {name.lower(): value for name, value in self.headers.items()}
                server._record(ReceivedRequest(self.command, self.path, headers, body))
                if self.command != "POST" or self.path != CHAT_PATH:
                    reply = FakeReply.fail(
                        404,
                        f"Unknown route {self.command} {self.path}",
                        type="invalid_request_error",
                        code="unknown_url",
                    )
                else:
                    try:
                        reply = server.handler(body if isinstance(body, dict) else {})
                    except Exception as exc:
                        reply = FakeReply.fail(500, f"fake handler failed: {exc!r}")
                if reply.delay and server._closing.wait(reply.delay):
                    return
                payload = _render(reply, body if isinstance(body, dict) else {})
                try:
                    self.send_response(reply.status)
                    self.send_header("Content-Type", reply.content_type)
                    self.send_header("Content-Length", str(len(payload)))
                    for name, value in (reply.headers or {}).items():
                        self.send_header(name, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up (a timeout test); nothing left to tell it

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep test output clean

        return RequestHandler
