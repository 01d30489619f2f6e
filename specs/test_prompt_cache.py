"""Prompts that cache: a byte-identical shared prefix first, the agent and the call last (ADR 0026)."""

from __future__ import annotations

from typing import Any

from recurgent import Agent
from recurgent._prompting import shared_system_prefix
from recurgent.testing import ScriptedProvider


def _requests() -> list[Any]:
    """Calls that differ in role, method, depth, network, limits, contract and memory."""
    provider = ScriptedProvider(
        {
            ("zebra keeper", "feed"): "return delegate('hay keeper', purpose='get hay').gather()",
            ("hay keeper", "gather"): "return delegate('baler').bale()",
            ("baler", "bale"): "return 'bale'",
            ("calculator", "add"): "return 1",
        }
    )
    Agent("zebra keeper", provider=provider, log=False, network="deny").feed("now")
    calc = Agent(
        "calculator", provider=provider, log=False, execution_timeout_seconds=7, network=["a.test"]
    )
    calc.remember(value=3)
    calc.add(2, precise=True)
    return list(provider.requests)


class TestSharedPrefix:
    """Every system prompt starts with the same text, whatever the agent or the call."""

    def test_every_system_prompt_starts_with_the_shared_prefix(self) -> None:
        """Four calls (three depths, two roots, other limits) share the prefix byte for byte."""
        prefix = shared_system_prefix()
        requests = _requests()

        assert [r.system_prompt.startswith(prefix + "\n## This Agent\n") for r in requests] == [
            True,
            True,
            True,
            True,
        ]
        assert [r.depth for r in requests] == [0, 1, 2, 0]

    def test_prefix_is_long_enough_to_be_cached(self) -> None:
        """The prefix is over 1,024 tokens (estimated at 4 characters a token)."""
        assert len(shared_system_prefix()) // 4 > 1024

    def test_prefix_names_no_agent_limit_or_call(self) -> None:
        """Role names, depths, limits, network policy and contracts stay out of the prefix."""
        prefix = shared_system_prefix()

        leaked = [
            text
            for text in (
                "zebra",
                "calculator",
                "Tool Builder called",
                "seconds;",
                "Network: ",
                "Delegation Contract",
                "Operating Mode",
            )
            if text in prefix
        ]
        assert leaked == []

    def test_agent_details_come_after_the_prefix(self) -> None:
        """Role, depth, network and limits are in the system prompt's last part."""
        calc = _requests()[3]
        tail = calc.system_prompt[len(shared_system_prefix()) :]

        assert "You are a Tool Builder called 'calculator'." in tail
        assert "- Network: only these hosts are reachable: a.test." in tail
        assert "the program is stopped after 7 seconds" in tail

    def test_user_prompt_starts_with_the_call(self) -> None:
        """The user prompt holds only the call's details, invocation first."""
        calc = _requests()[3]

        assert calc.user_prompt.startswith(
            "<invocation>\n<role>calculator</role>\n<action>\n<method>add</method>\n"
            "<args>[2]</args>\n<kwargs>{'precise': True}</kwargs>\n"
        )
        assert "<response_contract>" not in calc.user_prompt


class TestSameSystemPromptEveryCall:
    """An agent's system prompt at one depth is the same bytes on every call (ADR 0100)."""

    def test_a_delegate_called_four_times_gets_one_system_prompt(self) -> None:
        """The child's calls, made at different moments of the parent's deadline, share
        the system prompt; the time left is in the user prompt, in whole seconds."""
        provider = ScriptedProvider(
            {
                ("keeper", "feed"): "h = delegate('counter')\nh.count()\nreturn h.count().value",
                ("counter", "count"): "return 1",
            }
        )
        keeper = Agent(
            "keeper",
            provider=provider,
            log=False,
            execution_timeout_seconds=20,
            toolstore_root=None,  # every call asks the provider
        )

        keeper.feed()
        keeper.feed()

        child = provider.requests_for("count", role="counter")
        parent = provider.requests_for("feed", role="keeper")
        assert (len(parent), len(child)) == (2, 4)
        assert len({r.system_prompt for r in child}) == 1
        assert parent[0].system_prompt == parent[1].system_prompt
        assert "the program is stopped after 20 seconds" in child[0].system_prompt
        assert [
            "seconds: the calling program's deadline stops this call sooner" in r.user_prompt
            for r in (*parent, *child)
        ] == [False, False, True, True, True, True]
        left = child[0].user_prompt.split("<time_left>")[1].split(" ")[0]
        assert left in {"18", "19"}
