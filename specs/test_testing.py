"""recurgent.testing: the scripted and function providers, and the log reader."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from recurgent import Agent, Program
from recurgent.providers import Provider, ProviderRequest
from recurgent.testing import FunctionProvider, ScriptedProvider, read_log


def _request(method: str = "add", role: str = "calculator") -> ProviderRequest:
    return ProviderRequest(
        role=role,
        method_name=method,
        args=(),
        kwargs={},
        depth=0,
        model="m",
        system_prompt="s",
        user_prompt="u",
        attempt=1,
        timeout_seconds=None,
    )


class TestScriptedProvider:
    """Replies per method (or role and method), recorded requests."""

    def test_is_a_provider(self) -> None:
        """ScriptedProvider satisfies the Provider protocol."""
        assert isinstance(ScriptedProvider(), Provider)

    def test_single_reply_is_reused(self) -> None:
        """One reply for a method answers every request for it."""
        provider = ScriptedProvider({"add": "result = 1"})

        replies = [provider.generate_program(_request()) for _ in range(3)]

        assert replies == [{"code": "result = 1"}] * 3

    def test_list_is_consumed_in_order(self) -> None:
        """A list of replies is used one per request, in order."""
        provider = ScriptedProvider({"add": ["result = 1", None, {"code": "result = 3"}]})

        replies = [provider.generate_program(_request()) for _ in range(3)]

        assert replies == [{"code": "result = 1"}, None, {"code": "result = 3"}]

    def test_running_out_raises_lookup_error(self) -> None:
        """A used-up list raises LookupError naming role.method."""
        provider = ScriptedProvider({"add": ["result = 1"]})
        provider.generate_program(_request())

        with pytest.raises(LookupError) as raised:
            provider.generate_program(_request())

        assert str(raised.value) == "ScriptedProvider has no replies left for calculator.add"

    def test_unknown_method_raises_lookup_error(self) -> None:
        """A method with no reply raises LookupError naming role.method."""
        provider = ScriptedProvider({"add": "result = 1"})

        with pytest.raises(LookupError) as raised:
            provider.generate_program(_request("divide"))

        assert str(raised.value) == "ScriptedProvider has no reply for calculator.divide"

    def test_role_and_method_key_wins(self) -> None:
        """A (role, method) key beats a method key for that role only."""
        provider = ScriptedProvider({"add": "result = 'any'", ("child", "add"): "result = 'child'"})

        assert provider.generate_program(_request("add", "child")) == {"code": "result = 'child'"}
        assert provider.generate_program(_request("add", "other")) == {"code": "result = 'any'"}

    def test_records_every_request(self) -> None:
        """requests holds every request, even failed ones; calls counts them."""
        provider = ScriptedProvider({"add": "result = 1"})
        first, second = _request("add"), _request("divide")

        provider.generate_program(first)
        with pytest.raises(LookupError):
            provider.generate_program(second)

        assert provider.requests == [first, second]
        assert provider.calls == 2
        assert provider.requests_for("divide") == [second]
        assert provider.requests_for("add", role="other") == []

    def test_exception_instance_is_raised(self) -> None:
        """An exception reply is raised."""
        provider = ScriptedProvider({"add": RuntimeError("503")})

        with pytest.raises(RuntimeError, match="503"):
            provider.generate_program(_request())

    def test_exception_class_is_raised_with_a_message(self) -> None:
        """An exception class reply is raised with a message naming role.method."""
        provider = ScriptedProvider({"add": TimeoutError})

        with pytest.raises(TimeoutError, match=r"scripted failure for calculator\.add"):
            provider.generate_program(_request())

    def test_callable_is_called_with_the_request(self) -> None:
        """A callable reply is called with the request; a str result becomes code."""
        seen: list[ProviderRequest] = []

        def reply(request: ProviderRequest) -> str:
            seen.append(request)
            return f"result = {request.attempt}"

        provider = ScriptedProvider({"add": reply})
        request = _request()

        assert provider.generate_program(request) == {"code": "result = 1"}
        assert seen == [request]

    def test_program_and_mapping_replies_pass_through(self) -> None:
        """A Program or mapping reply is returned unchanged."""
        program = Program(code="result = 1")
        provider = ScriptedProvider({"add": program, "sub": {"code": "x", "dependencies": []}})

        assert provider.generate_program(_request("add")) is program
        assert provider.generate_program(_request("sub")) == {"code": "x", "dependencies": []}


class TestFunctionProvider:
    """Replies computed by a function of the request."""

    def test_function_reply_and_recording(self) -> None:
        """fn(request) is called per request and each request is recorded."""
        provider = FunctionProvider(lambda request: {"code": f"result = '{request.method_name}'"})
        request = _request("shout")

        assert provider.generate_program(request) == {"code": "result = 'shout'"}
        assert provider.requests == [request]
        assert provider.calls == 1

    @pytest.mark.parametrize(
        ("reply", "expected"),
        [
            ("result = 1", {"code": "result = 1"}),
            (None, None),
            (Program(code="x = 1"), Program(code="x = 1")),
        ],
    )
    def test_reply_kinds(self, reply: Any, expected: Any) -> None:
        """A str becomes code; None and Programs pass through."""
        provider = FunctionProvider(lambda request: reply)

        assert provider.generate_program(_request()) == expected

    def test_raising_function_propagates(self) -> None:
        """An exception from fn propagates to the runtime."""

        def fail(request: ProviderRequest) -> str:
            raise ConnectionError("down")

        with pytest.raises(ConnectionError, match="down"):
            FunctionProvider(fail).generate_program(_request())

    def test_drives_an_agent(self) -> None:
        """An agent with a FunctionProvider runs the code it returns."""
        provider = FunctionProvider(lambda request: "result = args[0] * 2")
        agent = Agent("doubler", provider=provider, log=False)

        assert agent.double(21).value == 42
        assert provider.requests[0].args == (21,)


class TestReadLog:
    """read_log parses a JSONL log."""

    def test_absent_file_is_empty(self, tmp_path: Path) -> None:
        """A missing file reads as []."""
        assert read_log(tmp_path / "none.jsonl") == []

    def test_lines_are_parsed_and_blank_lines_skipped(self, tmp_path: Path) -> None:
        """Each non-blank line is one entry."""
        path = tmp_path / "log.jsonl"
        path.write_text('{"a": 1}\n\n{"b": 2}\n', "utf-8")

        assert read_log(path) == [{"a": 1}, {"b": 2}]


class TestReadLogLineBreaks:
    """read_log splits on newline characters only."""

    def test_unicode_line_separators_inside_strings_are_kept(self, tmp_path: Path) -> None:
        """A logged string holding U+2028, U+2029, U+0085 and a form feed stays one entry."""
        log = tmp_path / "calls.jsonl"
        Agent(
            "echo",
            provider=FunctionProvider(lambda request: "result = args[0]"),
            log=log,
        ).say("a\u2028b\u2029c\x85d\x0ce")

        entries = read_log(log)

        assert len(entries) == 1
        assert entries[0]["args"] == ["a\u2028b\u2029c\x85d\x0ce"]
