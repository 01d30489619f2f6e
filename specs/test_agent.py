"""Agent: dispatch rules, the narrow public surface, options and probing safety."""

from __future__ import annotations

import copy
import pickle
from typing import Any
from unittest import mock

import pytest

from recurgent import Agent, GuardrailViolationError, Outcome, UsageError
from recurgent._option_types import AgentOptionsDict
from recurgent.testing import ScriptedProvider


def _agent(role: str = "calculator", **options: Any) -> tuple[Agent, ScriptedProvider]:
    provider = options.pop("provider", None) or ScriptedProvider()
    options.setdefault("log", False)
    return Agent.for_(role, provider=provider, **options), provider


def _options(agent: Agent) -> Any:
    """The validated options of an agent (white-box: they are not public)."""
    return agent._agent.options


class TestSetter:
    """``agent.x = v`` is a memory write."""

    def test_setter_writes_memory_without_provider_call(self) -> None:
        """agent.x = v stores v under "x" and calls no provider."""
        agent, provider = _agent()

        agent.total = 7

        assert agent.runtime_context == {"total": 7}
        assert provider.calls == 0

    def test_setter_on_private_name_is_refused(self) -> None:
        """Assigning an underscored name raises AttributeError and writes nothing."""
        agent, _ = _agent()

        with pytest.raises(AttributeError, match="private attribute '_secret'"):
            agent._secret = 1

        assert agent.runtime_context == {}

    def test_delete_removes_a_memory_key(self) -> None:
        """del agent.x removes "x" from memory; deleting an absent key raises AttributeError."""
        agent, _ = _agent()
        agent.total = 7

        del agent.total

        assert agent.runtime_context == {}
        with pytest.raises(AttributeError):
            del agent.total


class TestMemoryReader:
    """Reading a memory-backed name returns the stored value."""

    def test_reading_a_memory_key_returns_the_value_without_provider_call(self) -> None:
        """agent.x returns memory["x"] itself and calls no provider."""
        agent, provider = _agent()
        agent.remember(unit="cm")

        assert agent.unit == "cm"
        assert provider.calls == 0

    def test_memory_value_that_is_none_is_still_read(self) -> None:
        """A key stored with None reads as None, not as a dynamic method."""
        agent, _ = _agent()
        agent.unit = None

        assert agent.unit is None


class TestDynamicCall:
    """Any other public name is a callable that performs a dynamic call."""

    def test_unknown_name_returns_a_callable_without_provider_call(self) -> None:
        """agent.add is a callable named add; looking it up calls no provider."""
        agent, provider = _agent()

        method = agent.add

        assert callable(method)
        assert method.__name__ == "add"
        assert repr(method) == "<dynamic method calculator.add>"
        assert provider.calls == 0

    def test_calling_it_returns_an_outcome(self) -> None:
        """Calling a dynamic method runs generated code and returns its Outcome."""
        provider = ScriptedProvider({"add": "result = args[0] + kwargs['more']"})
        agent, _ = _agent(provider=provider)

        outcome = agent.add(2, more=3)

        assert isinstance(outcome, Outcome)
        assert (outcome.status, outcome.value) == ("ok", 5)
        assert (outcome.tool_role, outcome.method_name) == ("calculator", "add")
        assert provider.calls == 1

    def test_reserved_word_names_are_reachable_with_getattr(self) -> None:
        """getattr(agent, "import") performs a dynamic call named import."""
        provider = ScriptedProvider({"import": "result = 'imported'"})
        agent, _ = _agent(provider=provider)

        assert getattr(agent, "import")().value == "imported"


class TestProbingNeverReachesProvider:
    """Underscored names raise AttributeError at once, so tools that probe never call an LLM."""

    @pytest.mark.parametrize(
        "name",
        [
            "_private",
            "__deepcopy__",
            "__getstate__x",
            "_repr_html_",
            "_ipython_display_",
            "_repr_mimebundle_",
            "_ipython_canary_method_should_not_exist_",
            "__array__",
            "__await__",
            "__wrapped__",
        ],
    )
    def test_underscored_name_raises_attribute_error(self, name: str) -> None:
        """getattr(agent, "<underscored>") raises AttributeError and calls no provider."""
        agent, provider = _agent()

        with pytest.raises(AttributeError):
            getattr(agent, name)

        assert provider.calls == 0

    def test_hasattr_deepcopy_is_false(self) -> None:
        """hasattr(agent, "__deepcopy__") is False."""
        agent, provider = _agent()

        assert hasattr(agent, "__deepcopy__") is False
        assert provider.calls == 0

    @pytest.mark.parametrize(
        "operation",
        [copy.copy, copy.deepcopy, pickle.dumps],
        ids=["copy", "deepcopy", "pickle"],
    )
    def test_copy_and_pickle_fail_cleanly(self, operation: Any) -> None:
        """copy.copy, copy.deepcopy and pickle.dumps raise a TypeError naming the remedy."""
        agent, provider = _agent()
        agent.total = 1

        with pytest.raises(TypeError) as raised:
            operation(agent)

        assert str(raised.value) == (
            "Agent('calculator') cannot be copied or pickled; build another with "
            "Agent.for_(role, **options) and copy its memory with "
            "remember(**agent.runtime_context)"
        )
        assert provider.calls == 0

    def test_mock_spec_probing_makes_no_provider_call(self) -> None:
        """Mock(spec=agent) and create_autospec(agent) see the public names only."""
        agent, provider = _agent()
        agent.total = 1

        spec_mock = mock.Mock(spec=agent)
        autospec = mock.create_autospec(agent)

        assert callable(spec_mock.remember)
        assert callable(autospec.delegate)
        with pytest.raises(AttributeError):
            _ = spec_mock.add
        assert provider.calls == 0

    def test_str_and_format_make_no_provider_call(self) -> None:
        """str(agent) and f-strings give the repr and call no provider."""
        agent, provider = _agent()
        agent.total = 1

        assert str(agent) == "<Agent(calculator) context=['total']>"
        assert f"{agent}" == "<Agent(calculator) context=['total']>"
        assert provider.calls == 0

    def test_agent_is_truthy_and_not_iterable(self) -> None:
        """bool(agent) is True and iter(agent) raises TypeError, with no provider call."""
        agent, provider = _agent()

        assert bool(agent) is True
        with pytest.raises(TypeError):
            iter(agent)
        assert provider.calls == 0


class TestRespondsTo:
    """responds_to is the contract's introspection."""

    @pytest.mark.parametrize(
        ("name", "expected"),
        [
            ("value=", True),
            ("anything=", True),
            ("_private=", False),
            ("=", False),
            ("stored", True),
            ("increment", False),
            ("remember", True),
            ("delegate", True),
            ("_agent", False),
        ],
    )
    def test_answers(self, name: str, expected: bool) -> None:
        """Setter names, memory keys and the agent's own methods answer True; others False."""
        agent, _ = _agent()
        agent.stored = 1

        assert agent.responds_to(name) is expected

    def test_non_string_name_is_false(self) -> None:
        """A non-string name answers False."""
        agent, _ = _agent()

        assert agent.responds_to(5) is False


class TestRememberAndRuntimeContext:
    """remember writes memory; runtime_context is the live dict."""

    def test_remember_returns_the_same_agent_and_writes_memory(self) -> None:
        """remember(**entries) returns the agent itself with the entries stored."""
        agent, provider = _agent()

        assert agent.remember(a=1, b="two") is agent
        assert agent.runtime_context == {"a": 1, "b": "two"}
        assert provider.calls == 0

    def test_runtime_context_is_the_live_dict(self) -> None:
        """Writes through runtime_context are memory writes, and the dict stays the same object."""
        agent, _ = _agent()
        context = agent.runtime_context

        context["unit"] = "kg"

        assert agent.runtime_context is context
        assert agent.unit == "kg"

    def test_remember_refuses_executable_tool_metadata(self) -> None:
        """remember(tools=...) holding a function raises and stores nothing."""
        agent, _ = _agent()

        with pytest.raises(GuardrailViolationError, match="cannot store executable objects"):
            agent.remember(tools={"web_fetcher": {"fetch": len}})

        assert agent.runtime_context == {}


class TestRepr:
    """repr shows role and memory keys."""

    def test_repr_shows_role_and_memory_keys(self) -> None:
        """repr is <Agent(role) context=[keys]> and calls no provider."""
        agent, provider = _agent()
        agent.remember(value=1, mode="x")

        assert repr(agent) == "<Agent(calculator) context=['value', 'mode']>"
        assert provider.calls == 0

    def test_role_is_stripped(self) -> None:
        """Surrounding whitespace of the role is dropped."""
        agent, _ = _agent("  calculator  ")

        assert repr(agent) == "<Agent(calculator) context=[]>"


class TestConstruction:
    """Agent.for_ and Agent(...) build the same thing; the public surface is pinned."""

    def test_for_and_constructor_are_equivalent(self) -> None:
        """Agent.for_(role, **o) and Agent(role, **o) give equal options and repr."""
        provider = ScriptedProvider()
        options: AgentOptionsDict = {
            "provider": provider,
            "log": False,
            "trace_id": "abc",
            "purpose": "add",
        }

        made_by_for = Agent.for_("calculator", **options)
        made_directly = Agent("calculator", **options)

        assert repr(made_by_for) == repr(made_directly)
        assert _options(made_by_for) == _options(made_directly)

    def test_public_names_are_exactly_the_pinned_surface(self) -> None:
        """The agent's own public names are exactly the pinned ones (getdoc: ADR 0031;
        prepare: ADR 0042; the six proposal methods: ADR 0086; role_profile: ADR 0083;
        self_model: ADR 0085; aio: ADR 0096; map and starmap: ADR 0110)."""
        public = sorted(name for name in dir(Agent) if not name.startswith("_"))

        assert public == [
            "aio",
            "apply_proposal",
            "approve_proposal",
            "delegate",
            "for_",
            "getdoc",
            "map",
            "prepare",
            "proposal",
            "proposals",
            "propose",
            "reject_proposal",
            "remember",
            "responds_to",
            "role_profile",
            "runtime_context",
            "self_model",
            "starmap",
            "tool",
        ]

    def test_dir_lists_public_names_and_memory_keys(self) -> None:
        """dir(agent) is the public surface plus memory keys."""
        agent, _ = _agent()
        agent.total = 1

        assert dir(agent) == [
            "aio",
            "apply_proposal",
            "approve_proposal",
            "delegate",
            "for_",
            "getdoc",
            "map",
            "prepare",
            "proposal",
            "proposals",
            "propose",
            "reject_proposal",
            "remember",
            "responds_to",
            "role_profile",
            "runtime_context",
            "self_model",
            "starmap",
            "tool",
            "total",
        ]

    def test_bases_add_no_instance_dict(self) -> None:
        """The facade's bases (its parts and their wiring, its children; ADR 0067) add no slot:
        an agent still has no ``__dict__``, so a name it does not define is never stored on it."""
        agent, _ = _agent()

        assert (
            [base.__name__ for base in Agent.__mro__],
            [vars(cls).get("__slots__") for cls in Agent.__mro__[:-1]],
            hasattr(agent, "__dict__"),
        ) == (["Agent", "AgentWiring", "ChildAgents", "object"], [("_agent",), (), ()], False)

    def test_public_surface_and_call_path_are_the_facade_own(self) -> None:
        """Every public name is defined on Agent itself, so ``help(Agent)`` and a type checker
        name ``Agent`` for each; so are the attribute hook and the dispatch of a dynamic call."""
        public = {name for name in dir(Agent) if not name.startswith("_")}

        assert public | {"__getattr__", "_dispatch"} <= set(vars(Agent))

    @pytest.mark.parametrize("role", ["", "   ", None, 5])
    def test_role_must_be_a_non_empty_string(self, role: Any) -> None:
        """A blank or non-string role raises UsageError."""
        with pytest.raises(UsageError, match="role must be a non-empty str"):
            Agent(role)

    def test_options_are_keyword_only(self) -> None:
        """A positional option raises TypeError."""
        with pytest.raises(TypeError):
            # Positional on purpose. mypy 2.4 adds arg-type only when it analyses recurgent in the
            # same run (a cold cache), not when it reads recurgent from its cache.
            Agent("calculator", {"log": False})  # type: ignore[call-arg, arg-type, unused-ignore]


class TestOptionValidation:
    """Every bad option value raises UsageError with a message naming it."""

    @pytest.mark.parametrize(
        ("options", "message"),
        [
            (
                {"max_generation_attempts": 0},
                "max_generation_attempts must be an int >= 1, got 0",
            ),
            (
                {"max_generation_attempts": True},
                "max_generation_attempts must be an int >= 1, got True",
            ),
            (
                {"guardrail_recovery_budget": -1},
                "guardrail_recovery_budget must be an int >= 0, got -1",
            ),
            (
                {"fresh_outcome_repair_budget": 1.5},
                "fresh_outcome_repair_budget must be an int >= 0, got 1.5",
            ),
            (
                {"provider_timeout_seconds": 0},
                "provider_timeout_seconds must be a finite number > 0 or None, got 0",
            ),
            (
                {"provider_timeout_seconds": float("inf")},
                "provider_timeout_seconds must be a finite number > 0 or None, got inf",
            ),
            (
                {"execution_timeout_seconds": 0.5},
                "execution_timeout_seconds must be a finite number between 1 and 600, got 0.5",
            ),
            (
                {"execution_timeout_seconds": 601},
                "execution_timeout_seconds must be a finite number between 1 and 600, got 601",
            ),
            (
                {"delegation_budget": -1},
                "delegation_budget must be an int >= 0 or None, got -1",
            ),
            ({"trace_id": ""}, "trace_id must be a non-empty str, got ''"),
            ({"model": ""}, "model must be a non-empty str, got ''"),
            (
                {"delegation_contract": "x"},
                "delegation_contract must be a mapping or None, got str",
            ),
            (
                {"purpose": " "},
                "delegation_contract['purpose'] must be a non-empty str when provided, got ' '",
            ),
            ({"log": 123}, "log must be a path, None or False, got 123"),
            ({"log": ""}, "log must be a path, None or False, got ''"),
            (
                {"network": "maybe"},
                "network must be 'allow', 'deny' or a list of host names, got 'maybe'",
            ),
            ({"debug": "yes"}, "debug must be True or False, got 'yes'"),
            ({"verbose": 1}, "verbose must be True or False, got 1"),
            (
                {"provider": "gemini"},
                "Unknown provider 'gemini'; pass 'openai', 'anthropic' or a provider object",
            ),
            (
                {"provider": ScriptedProvider},
                "provider must be an instance, got the class ScriptedProvider",
            ),
        ],
    )
    def test_bad_value_is_refused_with_a_clear_message(
        self, options: dict[str, Any], message: str
    ) -> None:
        """The UsageError message states the option, the rule and the value given."""
        options.setdefault("log", False)

        with pytest.raises(UsageError) as raised:
            Agent("calculator", **options)

        assert str(raised.value) == message

    def test_unknown_option_is_an_error_naming_it(self) -> None:
        """An unknown option raises UsageError naming it and listing the known ones."""
        with pytest.raises(UsageError) as raised:
            Agent("calculator", log=False, colour="blue")  # type: ignore[call-arg]  # on purpose

        message = str(raised.value)
        assert message.startswith("Unknown option(s) for Agent: 'colour'. Known options: ")
        assert "delegation_budget" in message

    def test_usage_error_is_a_value_error(self) -> None:
        """UsageError subclasses ValueError, so callers may catch either."""
        with pytest.raises(ValueError):
            Agent("calculator", log=False, delegation_budget=-1)


class TestContractSource:
    """contract_source is none, hash, fields or merged."""

    def test_no_contract_is_none(self) -> None:
        """With no fields and no mapping the contract is None and the source "none"."""
        agent, _ = _agent()

        assert (_options(agent).contract, _options(agent).contract_source) == (None, "none")

    def test_mapping_only_is_hash_and_keeps_only_contract_fields(self) -> None:
        """A delegation_contract mapping alone is source "hash"; unknown keys are dropped."""
        deliverable = {"type": "number"}
        agent, _ = _agent(
            delegation_contract={"purpose": "add", "deliverable": deliverable, "other": 2}
        )

        assert _options(agent).contract == {"purpose": "add", "deliverable": deliverable}
        assert _options(agent).contract_source == "hash"

    def test_fields_only_is_fields(self) -> None:
        """Contract field options alone are source "fields"."""
        agent, _ = _agent(purpose="add", acceptance="positive")

        assert _options(agent).contract == {"purpose": "add", "acceptance": "positive"}
        assert _options(agent).contract_source == "fields"

    def test_mapping_and_fields_merge_with_fields_winning(self) -> None:
        """Mapping plus fields is source "merged" and the field wins per key."""
        agent, _ = _agent(
            delegation_contract={"purpose": "old", "failure_policy": "stop"}, purpose="new"
        )

        assert _options(agent).contract == {"purpose": "new", "failure_policy": "stop"}
        assert _options(agent).contract_source == "merged"
