"""API-explorer programs: drilling into a JSON REST API by handing back agents.

The explorer's ``users()`` answers with an agent standing for the ``/users`` collection; each
level's methods fetch their slice of the API and hand back the next level as a new agent (with
what they fetched, and its provenance). Every agent keeps the API's base URL and its own path in
memory. The loopback server is ``acceptance/api_server.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from acceptance.programs import ProgramKey

ROLE = "REST API explorer"

# Shared by every level that reads the API: the URL from memory, one GET, typed errors.
_GET = """\
import json
import urllib.error
import urllib.request
from datetime import datetime, timezone

base = context.get("base_url")
path = context.get("path", "")
if not base:
    return Outcome.error(
        error_type="missing_input", error_message="No API base_url in memory", retriable=False
    )


def get(suffix=""):
    url = base + path + suffix
    with urllib.request.urlopen(url, timeout=10) as response:
        return url, json.loads(response.read().decode("utf-8"))


def provenance(url):
    fetched_at = datetime.now(timezone.utc).isoformat()
    source = {"uri": url, "fetched_at": fetched_at, "retrieval_tool": "urllib.request"}
    return {"sources": [{**source, "retrieval_mode": "fixture"}]}


"""

_FAILED = """\
except urllib.error.HTTPError as error:
    return Outcome.error(
        error_type="http_error",
        error_message=f"HTTP {error.code} reading {base + path}",
        retriable=error.code >= 500,
    )
except urllib.error.URLError as error:
    return Outcome.error(
        error_type="network_error", error_message=str(error.reason), retriable=True
    )
"""

USERS = """\
base = context.get("base_url")
if not base:
    return Outcome.error(
        error_type="missing_input", error_message="Set base_url first", retriable=False
    )
users = delegate(
    "users_collection",
    purpose="the /users collection of a JSON REST API: count it, find a user by a field",
)
users.base_url = base
users.path = "/users"
return users
"""

COUNT = (
    _GET
    + """\
try:
    url, rows = get()
"""
    + _FAILED
    + """\
return {"count": len(rows), "provenance": provenance(url)}
"""
)

FIND = (
    _GET
    + """\
wanted = {key: value for key, value in kwargs.items()}
try:
    url, rows = get()
"""
    + _FAILED
    + """\
matches = [row for row in rows if all(row.get(k) == v for k, v in wanted.items())]
if not matches:
    return Outcome.error(
        error_type="not_found", error_message=f"No user with {wanted}", retriable=False
    )
found = matches[0]
user = delegate("user_record", purpose="one user of a JSON REST API: their posts")
user.base_url = base
user.path = f"/users/{found['id']}"
return {
    "user": user,
    "id": found["id"],
    "name": found["name"],
    "email": found["email"],
    "provenance": provenance(url),
}
"""
)

POSTS = (
    _GET
    + """\
try:
    url, rows = get("/posts")
"""
    + _FAILED
    + """\
posts = delegate("posts_collection", purpose="a list of posts of a JSON REST API: the first")
posts.base_url = base
posts.path = path + "/posts"
return {
    "posts": posts,
    "count": len(rows),
    "titles": [row["title"] for row in rows[:3]],
    "provenance": provenance(url),
}
"""
)

FIRST = (
    _GET
    + """\
try:
    url, rows = get()
"""
    + _FAILED
    + """\
if not rows:
    return Outcome.error(error_type="not_found", error_message="No posts", retriable=False)
first = rows[0]
post = delegate("post_record", purpose="one post of a JSON REST API: its comments")
post.base_url = base
post.path = f"/posts/{first['id']}"
return {"post": post, "id": first["id"], "title": first["title"], "provenance": provenance(url)}
"""
)

COMMENTS = (
    _GET
    + """\
try:
    url, rows = get("/comments")
"""
    + _FAILED
    + """\
comments = delegate("comments_collection", purpose="a post's comments in a JSON REST API")
comments.base_url = base
comments.path = path + "/comments"
return {
    "comments": comments,
    "count": len(rows),
    "authors": [row["email"] for row in rows],
    "provenance": provenance(url),
}
"""
)

PROGRAMS: dict[ProgramKey, str | None] = {
    (ROLE, "users"): USERS,
    ("users_collection", "count"): COUNT,
    ("users_collection", "find"): FIND,
    ("user_record", "posts"): POSTS,
    ("posts_collection", "first"): FIRST,
    ("post_record", "comments"): COMMENTS,
    ("comments_collection", "count"): COUNT,
}
