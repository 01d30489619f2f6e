"""A loopback JSON REST API shaped like jsonplaceholder.typicode.com, for the API explorer.

The explorer example drills into ``/users``, a user's posts and a post's comments. Offline it
reads this server instead of the real service: :class:`ApiServer` binds ``127.0.0.1`` on an
ephemeral port and serves a small fixed data set::

    with ApiServer() as server:
        url = server.base_url          # http://127.0.0.1:PORT
        ...
        assert server.hits["/users"] == 2

Routes (a query string filters a collection by exact field values, as jsonplaceholder does):

=============================  ==================================
``/users``                     every user
``/users/<id>``                one user (404 when unknown)
``/users/<id>/posts``          the user's posts
``/posts``                     every post
``/posts/<id>``                one post
``/posts/<id>/comments``       the post's comments
anything else                  404 ``{}``
=============================  ==================================

Bodies never depend on the clock. Request logging is silenced. Standard library only.
"""

from __future__ import annotations

import json
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any
from urllib.parse import parse_qsl, urlsplit

__all__ = ["COMMENTS", "POSTS", "USERS", "ApiServer"]

USERS: list[dict[str, Any]] = [
    {"id": 1, "name": "Leanne Graham", "username": "Bret", "email": "Sincere@april.biz"},
    {"id": 2, "name": "Ervin Howell", "username": "Antonette", "email": "Shanna@melissa.tv"},
    {"id": 3, "name": "Clementine Bauch", "username": "Samantha", "email": "Nathan@yesenia.net"},
]
POSTS: list[dict[str, Any]] = [
    {"id": 1, "userId": 1, "title": "sunt aut facere repellat provident", "body": "quia et"},
    {"id": 2, "userId": 1, "title": "qui est esse", "body": "est rerum tempore"},
    {"id": 3, "userId": 1, "title": "ea molestias quasi exercitationem", "body": "et iusto"},
    {"id": 4, "userId": 2, "title": "et ea vero quia laudantium autem", "body": "delectus"},
]
COMMENTS: list[dict[str, Any]] = [
    {"id": 1, "postId": 1, "name": "id labore ex et quam laborum", "email": "Eliseo@gardner.biz"},
    {"id": 2, "postId": 1, "name": "quo vero reiciendis velit", "email": "Jayne_Kuhic@sydney.com"},
    {"id": 3, "postId": 1, "name": "odio adipisci rerum aut animi", "email": "Nikita@garfield.biz"},
    {"id": 4, "postId": 1, "name": "alias odio sit", "email": "Lew@alysha.tv"},
    {"id": 5, "postId": 2, "name": "et fugit eligendi deleniti", "email": "Hayden@althea.biz"},
]
_TABLES = {"users": USERS, "posts": POSTS, "comments": COMMENTS}
_CHILDREN = {("users", "posts"): "userId", ("posts", "comments"): "postId"}


def _matches(row: dict[str, Any], query: list[tuple[str, str]]) -> bool:
    return all(str(row.get(key)) == value for key, value in query)


def answer(path: str, query: list[tuple[str, str]]) -> tuple[int, Any]:
    """The status and JSON body the API gives for ``path`` filtered by ``query``."""
    parts = [part for part in path.split("/") if part]
    if not parts or parts[0] not in _TABLES or len(parts) > 3:
        return 404, {}
    rows = _TABLES[parts[0]]
    if len(parts) == 1:
        return 200, [row for row in rows if _matches(row, query)]
    found = next((row for row in rows if str(row["id"]) == parts[1]), None)
    if found is None:
        return 404, {}
    if len(parts) == 2:
        return 200, found
    field = _CHILDREN.get((parts[0], parts[2]))
    if field is None:
        return 404, {}
    children = _TABLES[parts[2]]
    return 200, [row for row in children if row[field] == found["id"] and _matches(row, query)]


class _Handler(BaseHTTPRequestHandler):
    server: _Server

    def do_GET(self) -> None:
        split = urlsplit(self.path)
        self.server.count(split.path)
        status, body = answer(split.path, parse_qsl(split.query))
        data = json.dumps(body, indent=2).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        return


class _Server(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.hits: Counter[str] = Counter()
        self._lock = threading.Lock()

    def count(self, path: str) -> None:
        with self._lock:
            self.hits[path] += 1


class ApiServer:
    """The loopback API, running in a thread while the ``with`` block lasts."""

    def __init__(self) -> None:
        self._server = _Server()
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        """``http://127.0.0.1:PORT``."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def hits(self) -> Counter[str]:
        """Requests served, by path."""
        return self._server.hits

    def __enter__(self) -> ApiServer:
        self._thread.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self._server.shutdown()
        self._server.server_close()
        self._thread.join(timeout=5)
