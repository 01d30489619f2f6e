"""Pins the SecretIndex: memory's secret values found for the log, walked only where memory changed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from recurgent import Agent, _secret_index as secret_index
from recurgent._redact import MASK
from recurgent._secret_index import REWALK_AFTER, SecretIndex
from recurgent._values import secret_values
from recurgent.testing import ScriptedProvider, read_log


class _CountingWalk:
    """Counts the walks the index makes through ``secret_values``."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.walked: list[Any] = []
        real = secret_values  # what the index imported, patched below

        def counting(*values: Any) -> tuple[str, ...]:
            self.walked.extend(list(value) for value in values)
            return real(*values)

        monkeypatch.setattr(secret_index, "secret_values", counting)


class TestFinding:
    """The index finds what the full walk finds."""

    def test_top_level_and_nested_secrets(self) -> None:
        """A secret-named string at the top and one nested in rows are both found."""
        memory = {
            "api_key": "sk-top-level",
            "rows": [{"id": 1, "password": "hunter22"}],
            "short_token": "abc",
            "name": "not a secret",
        }
        assert SecretIndex().secrets(memory) == {"sk-top-level", "hunter22"}

    def test_masked_values_and_the_skipped_key_are_left_out(self) -> None:
        """An already masked value is no secret; the skipped key is not walked."""
        memory = {"token": MASK, "conversation_history": [{"secret": "history-secret"}]}
        assert SecretIndex().secrets(memory, skip="conversation_history") == set()


class TestWalkingOnlyWhatChanged:
    """A value is walked when it is new or changed, not on every call."""

    def test_an_unchanged_value_is_walked_once(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """Ten reads of the same rows walk them once."""
        walks = _CountingWalk(monkeypatch)
        index = SecretIndex()
        memory = {"rows": [{"id": i} for i in range(1000)], "count": 3}
        for _ in range(10):
            assert index.secrets(memory) == set()
        assert walks.walked == [["rows"]]

    def test_a_replaced_value_is_walked_again(self, monkeypatch: pytest.MonkeyPatch) -> None:
        """A new object under a key (a setter, a commit's top-level write) is walked at once."""
        walks = _CountingWalk(monkeypatch)
        index = SecretIndex()
        memory: dict[str, Any] = {"rows": [{"id": 1}], "other": [2]}
        index.secrets(memory)
        memory["rows"] = [{"api_key": "replaced-secret"}]
        assert index.secrets(memory) == {"replaced-secret"}
        assert walks.walked == [["rows"], ["other"], ["rows"]]

    def test_a_resized_value_is_walked_when_memory_changed(self) -> None:
        """When another key changed, an appended-to value (new length) is walked again too."""
        index = SecretIndex()
        memory: dict[str, Any] = {"rows": [{"id": 1}]}
        index.secrets(memory)
        memory["rows"].append({"secret": "appended-secret"})
        memory["count"] = 2
        assert index.secrets(memory) == {"appended-secret"}

    def test_forget_walks_a_key_again(self) -> None:
        """A same-length change in place is seen once the key is forgotten (a commit does it)."""
        index = SecretIndex()
        memory = {"cfg": {"api_key": "first-secret"}}
        assert index.secrets(memory) == {"first-secret"}
        memory["cfg"]["api_key"] = "second-secret"
        assert index.secrets(memory) == {"first-secret"}
        index.forget(["cfg"])
        assert index.secrets(memory) == {"second-secret"}

    def test_an_entry_is_walked_again_after_its_uses(self) -> None:
        """Host code changing a nested value in place is seen within REWALK_AFTER calls."""
        index = SecretIndex()
        memory = {"cfg": {"api_key": "first-secret"}}
        index.secrets(memory)  # call 1
        memory["cfg"]["api_key"] = "changed-in-place"
        seen = [index.secrets(memory) for _ in range(REWALK_AFTER - 1)]  # calls 2..REWALK_AFTER
        assert seen == [{"first-secret"}] * (REWALK_AFTER - 2) + [{"changed-in-place"}]

    def test_deleted_keys_are_dropped(self) -> None:
        """Entries of keys gone from memory are dropped at the periodic sweep."""
        index = SecretIndex()
        memory: dict[str, Any] = {"rows": [1, 2], "other": [3]}
        index.secrets(memory)
        del memory["rows"]
        for _ in range(REWALK_AFTER):
            index.secrets(memory)
        assert list(index._entries) == ["other"]


class TestInTheLog:
    """Log lines mask memory's secrets, including one a commit changed in place."""

    def test_a_secret_changed_by_a_commit_is_masked(self, tmp_path: Path) -> None:
        """A program overwriting a nested secret (same length) and printing it: masked."""
        log = tmp_path / "calls.jsonl"
        agent = Agent.for_(
            "keeper",
            provider=ScriptedProvider(
                {
                    "show": "print(context['cfg']['api_key'])\nresult = 1",
                    "rotate": "context['cfg']['api_key'] = 'rotated-77'\n"
                    "print('now rotated-77')\nresult = 2",
                }
            ),
            log=log,
            toolstore_root=None,
        )
        agent.cfg = {"api_key": "initial-11"}
        assert agent.show().value == 1
        assert agent.rotate().value == 2
        assert agent.runtime_context["cfg"] == {"api_key": "rotated-77"}
        stdout = [entry["stdout"] for entry in read_log(log)]
        assert stdout == [f"{MASK}\n", f"now {MASK}\n"]
