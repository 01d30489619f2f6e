"""Tool telemetry through agents (ADR 0109): a call through a delegated tool records the tool's
method state keys, signatures, capability tags, consistency ratio and lifecycle in memory and in
registry.json, and later prompts show them in <known_tools>."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from recurgent import Agent
from recurgent._store import flush
from recurgent.testing import ScriptedProvider

SOURCES = (
    "{'sources': [{'uri': args[0], 'fetched_at': '2026-12-02T00:00:00Z', "
    "'retrieval_tool': 'urllib', 'retrieval_mode': 'fixture'}]}"
)
BOSS = (
    "f = delegate('web_fetcher', purpose='fetch pages over http')\n"
    "page = f.load('https://example.test/')\n"
    "f.peek()\n"
    "return {'status': page.value['status'], 'provenance': page.value['provenance']}"
)
LOAD = (
    "import urllib.request\n"
    "context['last_url'] = args[0]\n"
    f"return {{'status': 200, 'body': '', 'provenance': {SOURCES}}}"
)
PEEK = "return context.get('cache', {})"


def _boss(root: Path, more: dict[Any, str] | None = None) -> tuple[Agent, ScriptedProvider]:
    provider = ScriptedProvider(
        {
            ("boss", "run"): BOSS,
            ("web_fetcher", "load"): LOAD,
            ("web_fetcher", "peek"): PEEK,
            **(more or {}),
        }
    )
    return Agent("boss", provider=provider, toolstore_root=root), provider


TELEMETRY = {
    "method_state_keys": {"load": ["last_url"], "peek": ["cache"]},
    "method_primary_keys": {"load": "last_url", "peek": "cache"},
    "method_signatures": {"load": "args:0|kwargs:none", "peek": "args:none|kwargs:none"},
    "method_capabilities": {"load": ["http_fetch"]},
    "capabilities": ["http_fetch"],
    "state_key_consistency_ratio": 0.5,
    "lifecycle_state": "probation",
    "promotion_policy_version": "solver_promotion_v1",
}


class TestRecorded:
    """In memory at once, on disk with the batched counts."""

    def test_memory_and_registry_json(self, tmp_path: Path) -> None:
        """After two runs (the tool's second calls run its stored programs) both views hold
        the telemetry."""
        root = tmp_path / "store"
        boss, _ = _boss(root)

        assert boss.run().ok and boss.run().ok
        flush()

        in_memory = boss.runtime_context["tools"]["web_fetcher"]
        on_disk = json.loads((root / "registry.json").read_text())["tools"]["web_fetcher"]
        for entry in (in_memory, on_disk):
            assert {key: entry.get(key) for key in TELEMETRY} == TELEMETRY
        assert (in_memory["usage_count"], on_disk["usage_count"]) == (4, 4)

    def test_a_later_prompt_shows_capabilities_and_lifecycle(self, tmp_path: Path) -> None:
        """The boss's next generated call lists the tool with its program-read capabilities,
        the intent it was delegated with (inferred from ``run``) and its lifecycle."""
        root = tmp_path / "store"
        boss, provider = _boss(root, {("boss", "ask"): "return 1"})
        boss.run()

        boss.ask("what now?")

        (request,) = provider.requests_for("ask", "boss")
        assert (
            "- web_fetcher: fetch pages over http\n"
            "  methods: [load, peek]\n"
            "  capabilities: [http_fetch]\n"
            "  intent_signatures: [run]\n"
            "  lifecycle: probation (policy: solver_promotion_v1)\n"
            "  reliability: calls=2, success_rate=1.00\n"
        ) in request.user_prompt

    def test_overlapping_method_names_are_observed_in_the_prompt(self, tmp_path: Path) -> None:
        """A tool answering both fetch and fetch_url: the next prompt says so."""
        boss = (
            "f = delegate('pager', purpose='pages')\n"
            "return [f.fetch(1).value, f.fetch_url(2).value]"
        )
        provider = ScriptedProvider(
            {
                ("boss", "run"): boss,
                ("boss", "ask"): "return 1",
                ("pager", "fetch"): "return args[0]",
                ("pager", "fetch_url"): "return args[0]",
            }
        )
        agent = Agent("boss", provider=provider, toolstore_root=tmp_path / "store")
        agent.run()

        agent.ask("next")

        (request,) = provider.requests_for("ask", "boss")
        assert "<interface_overlap_observations>\n- pager: [fetch, fetch_url]\n" in (
            request.user_prompt
        )


class TestWhenWritten:
    """New telemetry reaches registry.json at once; a repeat waits for the batch (ADR 0055)."""

    def test_a_new_program_is_written_at_once_a_repeat_is_batched(self, tmp_path: Path) -> None:
        """After the first run registry.json holds the telemetry without a flush; the second
        run (stored programs, nothing new) leaves the file as it was until the flush."""
        root = tmp_path / "store"
        registry = root / "registry.json"
        boss, _ = _boss(root)

        boss.run()
        after_first = registry.read_bytes()
        boss.run()
        after_second = registry.read_bytes()
        flush()

        first = json.loads(after_first)["tools"]["web_fetcher"]
        assert {key: first.get(key) for key in TELEMETRY} == TELEMETRY
        assert after_second == after_first
        assert json.loads(registry.read_text())["tools"]["web_fetcher"]["usage_count"] == 4
