"""Agent at the edges of interactive use: introspection probes, reserved setters, any keyword name."""

from __future__ import annotations

import inspect
import rlcompleter
from typing import Any
from unittest import mock

import pytest

from recurgent import Agent
from recurgent._agent import PROBE_NAMES, RESERVED_NAMES
from recurgent.errors import UsageError
from recurgent.testing import FunctionProvider

# What IPython's display and inspection machinery, pytest, mock and rich look up on an object.
UNDERSCORE_PROBES = (
    "_repr_html_",
    "_repr_markdown_",
    "_repr_svg_",
    "_repr_png_",
    "_repr_jpeg_",
    "_repr_latex_",
    "_repr_json_",
    "_repr_javascript_",
    "_repr_pdf_",
    "_repr_mimebundle_",
    "_repr_pretty_",
    "_ipython_display_",
    "_ipython_canary_method_should_not_exist_",
    "_ipython_key_completions_",
    "_getAttributeNames",
    "_fields",
    "__wrapped__",
    "__signature__",
    "__length_hint__",
    "__rich__",
    "__rich_repr__",
    "__html__",
    "__array__",
    "__fspath__",
)


def _agent() -> tuple[Agent, FunctionProvider]:
    provider = FunctionProvider(lambda request: "result = [args, kwargs]")
    return Agent("calculator", provider=provider, log=False), provider


class TestProbes:
    """Names tools probe never become provider requests."""

    @pytest.mark.parametrize("name", UNDERSCORE_PROBES)
    def test_underscore_probe_raises_attribute_error(self, name: str) -> None:
        """Each display/inspection probe raises AttributeError and reaches no provider."""
        agent, provider = _agent()

        with pytest.raises(AttributeError):
            getattr(agent, name)
        assert hasattr(agent, name) is False
        assert provider.calls == 0

    @pytest.mark.parametrize("name", sorted(PROBE_NAMES))
    def test_public_probe_raises_attribute_error(self, name: str) -> None:
        """Each public probe name (trait_names, pytestmark, rich's canary) is not a method."""
        agent, provider = _agent()

        with pytest.raises(AttributeError):
            getattr(agent, name)
        assert provider.calls == 0

    def test_public_probe_list_is_pinned(self) -> None:
        """The public probe names are exactly these three (ADR 0031)."""
        assert sorted(PROBE_NAMES) == [
            "awehoi1234_wdfjwljet234_234wdfoijsdfmmnxpi492",
            "pytestmark",
            "trait_names",
        ]

    def test_getdoc_describes_the_agent_without_a_call(self) -> None:
        """agent.getdoc() (IPython's `agent?`) is a short description naming role and memory."""
        agent, provider = _agent()
        agent.total = 3

        assert agent.getdoc() == (
            "Agent('calculator'): a recurgent agent. Calling any other public method asks the "
            "model to write it and returns an Outcome. Memory keys: total."
        )
        assert provider.calls == 0

    def test_inspect_and_mock_stay_quiet(self) -> None:
        """inspect.getdoc/unwrap/getmembers and mock autospec make no provider call."""
        agent, provider = _agent()

        assert inspect.getdoc(agent) is not None
        assert inspect.unwrap(agent) is agent  # type: ignore[arg-type]
        names = [name for name, _ in inspect.getmembers(agent)]
        spec = mock.create_autospec(agent, instance=True)

        assert "getdoc" in names
        assert isinstance(spec, mock.NonCallableMagicMock)
        assert provider.calls == 0

    def test_dir_and_tab_completion_stay_quiet(self) -> None:
        """dir(agent) and rlcompleter's `agent.` completion list names without any call."""
        agent, provider = _agent()
        agent.total = 1
        completer = rlcompleter.Completer({"agent": agent})

        matches = []
        state = 0
        while (match := completer.complete("agent.", state)) is not None:
            matches.append(match)
            state += 1

        assert "agent.getdoc()" in matches
        assert "agent.total" in matches
        assert "agent.trait_names" not in matches
        assert provider.calls == 0

    def test_probe_names_stay_out_of_dir_even_when_in_memory(self) -> None:
        """A probe name written through remember() is not listed by dir()."""
        agent, _ = _agent()
        agent.remember(trait_names=1, total=2)

        assert "trait_names" not in dir(agent)
        assert "total" in dir(agent)

    def test_ordinary_names_are_still_dynamic(self) -> None:
        """A name that is not a probe still makes a dynamic call."""
        agent, provider = _agent()

        assert agent.keys().value == [[], {}]
        assert provider.calls == 1


class TestReservedSetters:
    """Assigning to a name the Agent uses raises UsageError and changes nothing."""

    @pytest.mark.parametrize("name", sorted(RESERVED_NAMES))
    def test_reserved_name_assignment_is_refused(self, name: str) -> None:
        """agent.<reserved> = value raises UsageError naming the reserved names and remember()."""
        agent, provider = _agent()

        with pytest.raises(UsageError) as raised:
            setattr(agent, name, {})

        message = str(raised.value)
        assert f"{name!r} is reserved by Agent" in message
        assert (
            "for_, getdoc, map, prepare, proposal, proposals, propose, pytestmark, "
            "reject_proposal, remember, responds_to, role_profile, runtime_context, self_model, "
            "starmap, tool" in message
        )
        assert f"agent.remember({name}=value)" in message
        assert agent.runtime_context == {}
        assert provider.calls == 0

    def test_reserved_names_are_pinned(self) -> None:
        """The reserved names are the public surface plus the probe names."""
        assert sorted(RESERVED_NAMES) == [
            "aio",
            "apply_proposal",
            "approve_proposal",
            "awehoi1234_wdfjwljet234_234wdfoijsdfmmnxpi492",
            "delegate",
            "for_",
            "getdoc",
            "map",
            "prepare",
            "proposal",
            "proposals",
            "propose",
            "pytestmark",
            "reject_proposal",
            "remember",
            "responds_to",
            "role_profile",
            "runtime_context",
            "self_model",
            "starmap",
            "tool",
            "trait_names",
        ]

    def test_agent_keeps_working_after_a_refused_assignment(self) -> None:
        """After refused runtime_context/remember assignments, memory and remember still work."""
        agent, _ = _agent()
        for name in ("runtime_context", "remember", "delegate", "tool"):
            with pytest.raises(UsageError):
                setattr(agent, name, 1)

        agent.remember(tool="hammer")

        assert agent.runtime_context == {"tool": "hammer"}
        assert callable(agent.tool)

    def test_responds_to_knows_reserved_setters_and_probes(self) -> None:
        """responds_to: no setter for reserved names, False for probe names, True for getdoc."""
        agent, _ = _agent()
        agent.remember(trait_names=1)

        assert agent.responds_to("remember=") is False
        assert agent.responds_to("getdoc=") is False
        assert agent.responds_to("total=") is True
        assert agent.responds_to("trait_names") is False
        assert agent.responds_to("getdoc") is True

    def test_ordinary_setter_still_writes_memory(self) -> None:
        """A name that is not reserved is still a memory write."""
        agent, _ = _agent()
        agent.tools_used = 2

        assert agent.runtime_context == {"tools_used": 2}


class TestAnyKeywordName:
    """Every keyword name is a valid keyword of a dynamic call."""

    def test_self_is_passed_as_a_keyword(self) -> None:
        """agent.update(self=1) reaches the program with kwargs {'self': 1}."""
        agent, provider = _agent()

        outcome = agent.update(self=1)

        assert outcome.value == [[], {"self": 1}]
        assert provider.requests[0].kwargs == {"self": 1}

    def test_self_and_positional_arguments_together(self) -> None:
        """Positional arguments and a self keyword arrive separately."""
        agent, _ = _agent()

        assert agent.update(5, self="me", name="x").value == [[5], {"self": "me", "name": "x"}]

    def test_remember_accepts_self(self) -> None:
        """agent.remember(self=1) stores the key 'self'."""
        agent, _ = _agent()

        assert agent.remember(self=1) is agent
        assert agent.runtime_context == {"self": 1}

    def test_handles_pass_self_through(self) -> None:
        """Generated code calling a tool handle with self=1 reaches the child with that keyword."""
        seen: list[dict[str, Any]] = []

        def reply(request: Any) -> str:
            if request.role == "child":
                seen.append(dict(request.kwargs))
                return "result = kwargs['self']"
            return "result = delegate('child').update(self=7).value"

        agent = Agent("parent", provider=FunctionProvider(reply), log=False)

        assert agent.run().value == 7
        assert seen == [{"self": 7}]


class TestReprAndDirAreBounded:
    """repr and dir of an agent show memory keys boundedly (ADR 0142): a program may store a
    tuple key whose parts repeat, gigabytes as plain text, and a notebook runs both."""

    PROGRAM = "k = (('x' * 1000,) * 100,) * 100\ncontext[k] = 1\ncontext['total'] = 2\nreturn 1"

    def _hostile(self) -> Agent:
        agent = Agent("t", provider=FunctionProvider(lambda request: self.PROGRAM), log=False)
        assert agent.make().status == "ok"
        return agent

    def test_a_tuple_key_is_shown_by_its_bounded_repr(self) -> None:
        """The 10 MB tuple key is shown by its first 80 characters and safe_repr's marker."""
        agent = self._hostile()

        assert repr(agent) == (
            "<Agent(t) context=['conversation_history', \"(('"
            + "x" * 77
            + "...<1024 more chars>\", 'total']>"
        )

    def test_dir_lists_only_keys_that_are_names(self) -> None:
        """dir lists memory keys that can be read as attributes; the tuple key is not one."""
        agent = self._hostile()

        names = dir(agent)

        assert ("total" in names, "conversation_history" in names) == (True, True)
        assert [name for name in names if not name.isidentifier()] == []

    def test_repr_lists_fifty_keys_and_counts_the_rest(self) -> None:
        """Sixty keys: the first fifty, then how many more."""
        agent, _ = _agent()
        agent.remember(**{f"k{index}": index for index in range(60)})

        listed = ", ".join(f"'k{index}'" for index in range(50))
        assert repr(agent) == f"<Agent(calculator) context=[{listed}, ...<10 more>]>"

    def test_a_long_string_key_is_cut_to_80_characters(self) -> None:
        """A 100-character key shows 80 and the length marker."""
        agent, _ = _agent()
        agent.remember(**{"a" * 100: 1})

        assert repr(agent) == ("<Agent(calculator) context=['" + "a" * 80 + "...<20 more chars>']>")
