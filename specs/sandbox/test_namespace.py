"""The namespace of an attempt: exactly the pinned names, forwarded as plain closures, discarded after."""

from __future__ import annotations

import textwrap
from typing import Any

import pytest

from recurgent import Agent
from recurgent._sandbox import (
    VISIBLE_NAMES,
    ExecutionSandbox,
    SandboxLimits,
    compile_program,
    generated_code_running,
)
from recurgent.errors import ProviderError
from recurgent.outcome import Outcome
from recurgent.testing import ScriptedProvider

from .support import SECRET_KEY, Host, error_of, value_of


class TestVisibleNames:
    """Generated code sees the pinned names, the vetted builtins and allowed imports only."""

    def test_visible_names_are_pinned(self) -> None:
        """VISIBLE_NAMES is exactly the nine names the issue lists, in order, then ``content``
        (ADR 0102)."""
        assert VISIBLE_NAMES == (
            "context",
            "memory",
            "args",
            "kwargs",
            "result",
            "tool",
            "delegate",
            "remember",
            "Outcome",
            "content",
        )

    def test_namespace_holds_exactly_the_visible_names(self) -> None:
        """A fresh sandbox's public namespace is VISIBLE_NAMES and nothing else."""
        sandbox = ExecutionSandbox(Host().bridge(), limits=SandboxLimits())

        assert sandbox.visible_names == sorted(VISIBLE_NAMES)

    @pytest.mark.parametrize(
        "name", ["self", "agent", "provider", "runtime", "sandbox", "bridge", "Agent", "os"]
    )
    def test_host_names_are_not_defined(self, name: str) -> None:
        """Names of host objects are unknown (or refuse) inside generated code."""
        kind, message = error_of(f"result = {name}")

        assert (kind, name in message) == ("execution", True)

    @pytest.mark.parametrize(
        "module", ["recurgent", "recurgent._sandbox", "recurgent._agent", "pydantic", "openai"]
    )
    def test_runtime_modules_cannot_be_imported(self, module: str) -> None:
        """The runtime's own modules and its dependencies are outside the import allow-list."""
        kind, message = error_of(f"import {module}")

        assert (kind, f"import of {module!r} is not allowed" in message) == ("execution", True)


class TestForwardedFunctions:
    """Each forwarded name works from generated code."""

    def test_context_is_the_live_memory(self) -> None:
        """Writes through ``context`` land in the host's memory dict itself."""
        host = Host(memory={"count": 1})

        value_of("context['count'] += 1\ncontext['new'] = 'x'", host=host)

        assert host.memory == {"count": 2, "new": "x"}

    def test_memory_aliases_context(self) -> None:
        """``memory`` and ``context`` are the same object."""
        assert value_of("result = memory is context") is True

    def test_args_and_kwargs_carry_the_call(self) -> None:
        """``args`` is a list of the positional arguments, ``kwargs`` a dict of the keywords."""
        host = Host(args=(2, 3), kwargs={"scale": 10})

        assert value_of("result = (args[0] + args[1]) * kwargs['scale']", host=host) == 50

    def test_args_are_a_fresh_list(self) -> None:
        """Appending to ``args`` does not change the host's argument tuple."""
        host = Host(args=(1,))

        assert (value_of("args.append(2)\nresult = args", host=host), host.args) == ([1, 2], (1,))

    def test_result_is_the_value(self) -> None:
        """Assigning ``result`` sets the attempt's value."""
        assert value_of("result = {'total': 3}") == {"total": 3}

    def test_top_level_return_wins_over_result(self) -> None:
        """A top-level ``return`` decides the value even when ``result`` was assigned."""
        assert value_of("result = 1\nreturn 2") == 2

    def test_unassigned_result_is_none(self) -> None:
        """Code that neither assigns ``result`` nor returns gives None."""
        assert value_of("x = 1") is None

    def test_remember_writes_memory(self) -> None:
        """``remember(k=v)`` writes plain entries into the host memory."""
        host = Host()

        value_of("remember(city='Paris', visits=2)", host=host)

        assert host.memory == {"city": "Paris", "visits": 2}

    def test_delegate_returns_a_callable_handle(self) -> None:
        """``delegate(role)`` creates the child once and its methods dispatch to it."""
        host = Host()

        value = value_of(
            "h = delegate('weather', purpose='forecasts')\nresult = h.forecast('Oslo').value",
            host=host,
        )

        assert (value, host.delegations, host.children["weather"].calls) == (
            "weather.forecast('Oslo',)",
            [("weather", {"purpose": "forecasts"})],
            [("forecast", ("Oslo",), {})],
        )

    def test_tool_returns_a_handle_to_a_known_tool(self) -> None:
        """``tool(name)`` reaches a registered tool; an unknown one is a fresh RuntimeError."""
        host = Host()
        host.child("search")

        assert value_of("result = tool('search').find('x').value", host=host) == "search.find('x',)"
        assert error_of("tool('nope')", host=host) == (
            "execution",
            "Execution error in tester.run: RuntimeError: tool failed: unknown tool 'nope'",
        )

    def test_handle_setter_and_memory_read(self) -> None:
        """``handle.x = v`` writes the child's memory and ``handle.x`` reads it back."""
        host = Host()

        value = value_of("h = delegate('notes')\nh.topic = 'rust'\nresult = h.topic", host=host)

        assert (value, host.children["notes"].memory) == ("rust", {"topic": "rust"})

    def test_handle_remember_returns_the_handle(self) -> None:
        """``handle.remember(...)`` writes the child's memory and returns a handle again."""
        host = Host()

        value = value_of("h = delegate('notes').remember(a=1)\nresult = h.role", host=host)

        assert (value, host.children["notes"].memory) == ("notes", {"a": 1})

    def test_outcome_constructors_work(self) -> None:
        """``Outcome.ok`` and ``Outcome.error`` build typed outcomes for the host."""
        value = value_of(
            "result = [Outcome.ok(1), Outcome.error(error_type='bad', error_message='no')]"
        )

        assert [(o.status, o.value, o.error_type) for o in value] == [
            ("ok", 1, None),
            ("error", None, "bad"),
        ]

    def test_reading_a_handle_value_gives_a_copy(self) -> None:
        """Mutating a list read from a child's memory leaves the child's memory unchanged."""
        host = Host()
        host.child("notes").memory["items"] = [1]

        value = value_of(
            "items = delegate('notes').items\nitems.append(2)\nresult = items", host=host
        )

        assert (value, host.children["notes"].memory) == ([1, 2], {"items": [1]})

    def test_returning_a_handle_gives_the_host_the_agent(self) -> None:
        """A handle returned by the code reaches the host as the agent itself."""
        host = Host()

        value = value_of("result = delegate('helper')", host=host)

        assert value is host.children["helper"]


class TestNothingLeadsToTheHost:
    """Forwarded functions and handles carry no path back to host objects."""

    @pytest.mark.parametrize("name", ["tool", "delegate", "remember", "content"])
    def test_forwarded_functions_are_plain_functions(self, name: str) -> None:
        """Each forwarded name is a plain function: not a bound method or functools.partial."""
        assert value_of(f"result = type({name}).__name__") == "function"

    @pytest.mark.parametrize(
        "attribute", ["__self__", "__closure__", "__globals__", "__wrapped__", "func", "args"]
    )
    def test_forwarded_functions_expose_no_attributes(self, attribute: str) -> None:
        """No attribute of a forwarded function is readable."""
        kind, _ = error_of(f"result = getattr(delegate, {attribute!r})")

        assert kind == "execution"

    @pytest.mark.parametrize(
        "name", ["provider", "api_key", "options", "client", "config", "agent"]
    )
    def test_handle_names_are_dynamic_calls(self, name: str) -> None:
        """Any public name on a handle is a dynamic call on the child, never a host object."""
        host = Host()

        value = value_of(f"h = delegate('helper')\nresult = h.{name}().value", host=host)

        assert (value, host.children["helper"].calls) == (f"helper.{name}()", [(name, (), {})])

    def test_handle_dynamic_call_has_no_attributes(self) -> None:
        """The callable a handle returns exposes nothing, e.g. no ``api_key``."""
        assert error_of("result = delegate('helper').provider.api_key")[0] == "execution"

    @pytest.mark.parametrize("attribute", ["_handle_ops", "__init__", "__dict__"])
    def test_private_handle_attributes_are_refused(self, attribute: str) -> None:
        """Underscore attributes of a handle are refused through getattr()."""
        kind, message = error_of(f"result = getattr(delegate('helper'), {attribute!r})")

        assert (kind, "private in the sandbox" in message) == ("execution", True)

    def test_class_of_a_handle_is_sealed(self) -> None:
        """``handle.__class__`` is the same sealed type ``type(handle)`` gives: a name only."""
        kind, message = error_of("T = delegate('helper').__class__\nT(context)")

        assert value_of("result = delegate('helper').__class__.__name__") == "AgentHandle"
        assert (kind, "cannot be created by generated code" in message) == ("execution", True)

    def test_type_of_a_handle_cannot_construct(self) -> None:
        """``type(handle)`` is sealed: it has a name and constructs nothing."""
        host = Host()

        name = value_of("result = type(delegate('helper')).__name__", host=host)
        kind, message = error_of("T = type(delegate('helper'))\nT(context)", host=host)

        assert (name, kind, "cannot be created by generated code" in message) == (
            "AgentHandle",
            "execution",
            True,
        )

    def test_host_exception_is_re_raised_fresh_and_redacted(self) -> None:
        """A provider error carrying a key reaches generated code as a new, redacted error."""
        leaky = ProviderError(f"401 from upstream: Authorization: Bearer {SECRET_KEY}")
        host = Host(delegate_errors={"helper": leaky})

        caught = value_of(
            "try:\n    delegate('helper')\nexcept Exception as e:\n    result = e", host=host
        )

        assert (
            type(caught).__name__,
            caught is leaky,
            SECRET_KEY in str(caught),
            caught.__cause__,
            caught.__context__,
            str(caught),
        ) == (
            "RuntimeError",
            False,
            False,
            None,
            None,
            "delegate failed: 401 from upstream: Authorization: Bearer [REDACTED]",
        )

    def test_child_call_failure_is_redacted(self) -> None:
        """An exception raised by a child's call comes back without the key it carried."""
        host = Host()

        def explode(method: str, args: object, kwargs: object) -> Outcome:
            raise ConnectionError(f"proxy said {SECRET_KEY}")

        host.child("helper").reply = explode

        message = value_of(
            "try:\n    delegate('helper').run()\nexcept RuntimeError as e:\n    result = str(e)",
            host=host,
        )

        assert message == "helper.run failed: proxy said [REDACTED]"


class TestGeneratedCodeRunning:
    """Host objects can tell a direct call from generated code from a forwarded call."""

    def test_flag_is_set_only_while_generated_code_calls_directly(self) -> None:
        """True inside code, False inside a forwarded call and after the run."""
        seen: list[tuple[str, bool]] = []

        def probe() -> int:
            seen.append(("direct", generated_code_running()))
            return 1

        def forwarded(method: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Outcome:
            seen.append(("forwarded", generated_code_running()))
            return Outcome.ok(2)

        host = Host(memory={"probe": probe})
        host.child("helper").reply = forwarded

        value = value_of("result = context['probe']() + delegate('helper').run().value", host=host)

        assert (value, seen, generated_code_running()) == (
            3,
            [("direct", True), ("forwarded", False)],
            False,
        )


class TestAttemptIsolation:
    """Everything an attempt defines dies with it."""

    def test_a_def_does_not_survive_its_attempt(self) -> None:
        """A function defined by one attempt is unknown to the next attempt's code."""
        host = Host()

        value_of("def helper():\n    return 1\nresult = helper()", host=host)
        kind, message = error_of("result = helper()", host=host)

        assert (kind, message) == (
            "execution",
            "Execution error in tester.run: NameError: name 'helper' is not defined",
        )

    def test_a_def_never_reaches_the_namespace(self) -> None:
        """After a run the sandbox namespace still holds only the pinned names."""
        sandbox = ExecutionSandbox(Host().bridge(), limits=SandboxLimits())

        sandbox.run(compile_program("def helper():\n    return 1\nclass K:\n    pass\nresult = 1"))

        assert sandbox.visible_names == sorted(VISIBLE_NAMES)

    def test_a_leaked_function_stops_at_its_first_tick(self) -> None:
        """A generated function that escaped its attempt raises instead of running later."""
        program = compile_program(
            textwrap.dedent("""
            def helper():
                return 'ran'
            args[0].append(helper)
        """)
        )
        # Memory cannot receive it (the journal refuses it at commit): a host object passed
        # as an argument is the one way out left.
        box: list[object] = []
        ExecutionSandbox(Host(args=(box,)).bridge(), limits=SandboxLimits()).run(program)

        with pytest.raises(BaseException, match="execution_timeout_seconds") as stopped:
            box[0]()  # type: ignore[operator]

        assert isinstance(stopped.value, Exception) is False


class TestAttemptIsolationThroughAgent:
    """Phase 0 regression specs: generated helpers never leak onto agents."""

    def test_leaked_helper_is_visible_nowhere(self) -> None:
        """A generated ``def leaked_helper`` is not on the agent, on Agent, or on a new agent."""
        provider = ScriptedProvider(
            {"define": "def leaked_helper():\n    return 1\nresult = leaked_helper()"}
        )
        agent = Agent("tester", provider=provider, log=False)

        outcome = agent.define()
        fresh = Agent("tester", provider=provider, log=False)

        assert (
            outcome.value,
            agent.responds_to("leaked_helper"),
            "leaked_helper" in dir(agent),
            "leaked_helper" in vars(Agent),
            "leaked_helper" in agent.runtime_context,
            fresh.responds_to("leaked_helper"),
            type(agent.leaked_helper).__name__,
        ) == (1, False, False, False, False, False, "_DynamicMethod")

    def test_later_call_using_leaked_helper_fails_as_execution(self) -> None:
        """A later call whose code calls ``leaked_helper`` ends in an execution error."""
        provider = ScriptedProvider(
            {
                "define": "def leaked_helper():\n    return 1\nresult = leaked_helper()",
                "use": "result = leaked_helper()",
            }
        )
        agent = Agent("tester", provider=provider, log=False)

        agent.define()
        outcome = agent.use()

        assert outcome.error_message is not None
        assert (outcome.status, outcome.error_type, "leaked_helper" in outcome.error_message) == (
            "error",
            "execution",
            True,
        )

    def test_generated_fetch_headlines_does_not_change_dispatch(self) -> None:
        """A generated ``def fetch_headlines`` does not turn the next call into a local call."""
        provider = ScriptedProvider(
            {
                "setup": "def fetch_headlines():\n    return ['leaked']\nresult = 'ok'",
                "fetch_headlines": "result = ['from provider']",
            }
        )
        agent = Agent("news", provider=provider, log=False)

        agent.setup()
        outcome = agent.fetch_headlines()

        assert (outcome.value, provider.calls) == (["from provider"], 2)


class TestSharedAndPerAttemptParts:
    """What attempts share (stateless builtins) and what each builds for itself (ADR 0063)."""

    def test_shared_builtins_cannot_be_written(self) -> None:
        """Setting an attribute on a shared builtin fails and leaves the next attempt's alone."""
        refusal = (
            "tool_registry_violation",
            "Generated code may not modify SealedCallable object: mutating agents, modules or "
            "host classes is not supported; keep state in context or in objects your code creates",
        )
        assert error_of("range.note = 1\nresult = 1") == refusal
        assert error_of("setattr(format, 'note', 1)\nresult = 1") == refusal

        assert value_of("result = [hasattr(range, 'note'), list(range(3))]") == [False, [0, 1, 2]]

    def test_each_attempt_builds_its_own_random_generator(self) -> None:
        """A seed set in one attempt does not carry into the next one's generator."""
        first = value_of("import random\nrandom.seed(7)\nresult = random.random()")
        second = value_of("import random\nresult = random.random()")
        again = value_of("import random\nrandom.seed(7)\nresult = random.random()")

        assert first == again
        assert second != first

    def test_a_module_row_is_built_once_per_attempt(self) -> None:
        """Two imports of random in one attempt share one generator."""
        source = "import random\nrandom.seed(3)\nfrom random import random as draw\nresult = draw()"
        expected = value_of("import random\nrandom.seed(3)\nresult = random.random()")

        assert value_of(source) == expected
