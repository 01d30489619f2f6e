"""The loopback JSON API the API explorer reads offline: routes, filters, 404s, hits."""

from __future__ import annotations

import json
import urllib.error
import urllib.request

import pytest

from acceptance.api_server import ApiServer, answer


class TestAnswer:
    """What each path gives."""

    def test_collections_records_and_children(self) -> None:
        """/users, /users/1, a user's posts, a post's comments, a query filter."""
        assert [row["id"] for row in answer("/users", [])[1]] == [1, 2, 3]
        assert answer("/users/1", [])[1]["name"] == "Leanne Graham"
        assert [row["id"] for row in answer("/users/1/posts", [])[1]] == [1, 2, 3]
        assert [row["id"] for row in answer("/posts/1/comments", [])[1]] == [1, 2, 3, 4]
        assert answer("/users", [("name", "Ervin Howell")])[1] == [
            {"id": 2, "name": "Ervin Howell", "username": "Antonette", "email": "Shanna@melissa.tv"}
        ]

    @pytest.mark.parametrize("path", ["/", "/albums", "/users/9", "/users/1/comments", "/a/b/c/d"])
    def test_anything_else_is_404(self, path: str) -> None:
        """Unknown tables, records and relations: 404 with an empty object."""
        assert answer(path, []) == (404, {})


class TestServer:
    """Served over loopback HTTP."""

    def test_serves_json_and_counts_hits(self) -> None:
        """A GET returns the JSON body; hits are counted by path; a 404 is an HTTPError."""
        with ApiServer() as server:
            with urllib.request.urlopen(server.base_url + "/users/1", timeout=5) as response:
                body = json.loads(response.read())
            with pytest.raises(urllib.error.HTTPError) as missing:
                urllib.request.urlopen(server.base_url + "/nothing", timeout=5)
            missing.value.close()

        assert (body["id"], missing.value.code) == (1, 404)
        assert (server.hits["/users/1"], server.hits["/nothing"]) == (1, 1)
