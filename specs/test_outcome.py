"""Outcome: constructors, predicates, rendering, immutability, attribution and coercion."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest
from pydantic import ValidationError
from pydantic_core import PydanticSerializationError

from recurgent import Agent, Outcome
from recurgent.errors import ExecutionError, InvalidOutcomeError
from recurgent.outcome import (
    MAX_ERROR_MESSAGE_CHARS,
    MAX_ERROR_TYPE_CHARS,
    OutcomeFlag,
    coerce_outcome,
    outcome_context,
    plain_ok,
    with_origin,
)
from recurgent.testing import ScriptedProvider


class TestOk:
    """Outcome.ok builds a success."""

    def test_positional_value(self) -> None:
        """Outcome.ok(5) carries 5."""
        outcome = Outcome.ok(5)

        assert (outcome.status, outcome.value) == ("ok", 5)
        assert (outcome.error_type, outcome.error_message, outcome.retriable) == (None, None, False)
        assert outcome.metadata == {}

    def test_value_keyword(self) -> None:
        """Outcome.ok(value=5) carries 5."""
        assert Outcome.ok(value=5).value == 5

    def test_no_value_is_none(self) -> None:
        """Outcome.ok() carries None."""
        assert Outcome.ok().value is None

    def test_keywords_only_become_a_dict_value(self) -> None:
        """Outcome.ok(status=200, content="ok") carries that dict."""
        assert Outcome.ok(status=200, content="ok").value == {"status": 200, "content": "ok"}

    def test_mapping_and_extra_keywords_merge(self) -> None:
        """A mapping value merges with extra keywords, positional or value= alike."""
        expected = {"data": [1], "provenance": "feed"}

        assert Outcome.ok({"data": [1]}, provenance="feed").value == expected
        assert Outcome.ok(value={"data": [1]}, provenance="feed").value == expected

    def test_extra_keywords_next_to_a_scalar_are_dropped(self) -> None:
        """Outcome.ok(5, note=1) carries 5."""
        assert Outcome.ok(5, note=1).value == 5

    def test_two_positionals_are_refused(self) -> None:
        """Outcome.ok(1, 2) raises TypeError."""
        with pytest.raises(TypeError, match="at most one positional value"):
            Outcome.ok(1, 2)

    def test_call_is_a_tolerant_alias(self) -> None:
        """Outcome.call(42) is ok 42; Outcome.call(a=1) carries {"a": 1}."""
        assert Outcome.call(42).value == 42
        assert Outcome.call(a=1).value == {"a": 1}


class TestError:
    """Outcome.error builds a failure."""

    def test_keyword_form(self) -> None:
        """Keywords set type, message, retriable and metadata."""
        outcome = Outcome.error(
            error_type="fetch_failed",
            error_message="503",
            retriable=True,
            metadata={"url": "x"},
        )

        assert outcome.status == "error"
        assert outcome.value is None
        assert (outcome.error_type, outcome.error_message) == ("fetch_failed", "503")
        assert outcome.retriable is True
        assert outcome.metadata == {"url": "x"}

    def test_positional_form(self) -> None:
        """Outcome.error(type, message, retriable) reads the positionals."""
        outcome = Outcome.error("unsupported_capability", "Timers unavailable", True)

        assert (outcome.error_type, outcome.error_message, outcome.retriable) == (
            "unsupported_capability",
            "Timers unavailable",
            True,
        )

    def test_keywords_win_over_positionals(self) -> None:
        """A keyword value beats the positional one."""
        outcome = Outcome.error("a", "m", error_type="b")

        assert (outcome.error_type, outcome.error_message) == ("b", "m")

    def test_mapping_form_and_extra_keys_become_metadata(self) -> None:
        """One mapping supplies the fields; its other keys and extra keywords become metadata."""
        outcome = Outcome.error(
            {"status": "error", "error_type": "parse_error", "message": "bad", "line": 3},
            source="feed",
        )

        assert (outcome.error_type, outcome.error_message) == ("parse_error", "bad")
        assert outcome.metadata == {"line": 3, "source": "feed"}

    def test_mapping_form_never_leaks_field_keys_into_metadata(self) -> None:
        """Field keys of the mapping stay out of metadata even when keywords override them."""
        outcome = Outcome.error(
            {"error_type": "a", "error_message": "m", "message": "n", "tool_role": "t", "x": 1},
            error_type="b",
            error_message="k",
        )

        assert (outcome.error_type, outcome.error_message, outcome.tool_role) == ("b", "k", "t")
        assert outcome.metadata == {"x": 1}

    def test_extra_keywords_become_metadata_and_win(self) -> None:
        """Extra keywords join metadata and win over the metadata mapping."""
        outcome = Outcome.error(error_type="x", metadata={"a": 1, "b": 1}, b=2)

        assert outcome.metadata == {"a": 1, "b": 2}

    def test_non_mapping_metadata_is_kept_as_detail(self) -> None:
        """A metadata value that is not a mapping is kept under "detail"."""
        outcome = Outcome.error(error_type="x", metadata="context")  # type: ignore[arg-type]  # on purpose
        assert outcome.metadata == {"detail": "context"}

    @pytest.mark.parametrize("value", ["true", 1, "yes", None, False])
    def test_retriable_is_true_only_for_true(self, value: Any) -> None:
        """retriable is True only when given exactly True."""
        assert Outcome.error(error_type="x", retriable=value).retriable is False

    def test_defaults(self) -> None:
        """Outcome.error() is execution / "Execution failed", not retriable."""
        outcome = Outcome.error()

        assert (outcome.error_type, outcome.error_message, outcome.retriable) == (
            "execution",
            "Execution failed",
            False,
        )

    def test_more_than_three_positionals_are_refused(self) -> None:
        """Outcome.error(a, b, c, d) raises TypeError."""
        with pytest.raises(TypeError):
            Outcome.error("a", "b", True, "d")


class TestPredicates:
    """ok/error read as real booleans on an instance; is_ok, is_error and value_or."""

    def test_ok_outcome_predicates(self) -> None:
        """An ok outcome: out.ok is True and out.error is False, both real bools (ADR 0098)."""
        outcome = Outcome.ok(0)

        assert outcome.ok is True
        assert outcome.error is False
        assert (outcome.is_ok, outcome.is_error) == (True, False)

    def test_error_outcome_predicates(self) -> None:
        """An error outcome: out.error is True, out.ok is False."""
        outcome = Outcome.error(error_type="x")

        assert outcome.ok is False
        assert outcome.error is True
        assert (outcome.is_ok, outcome.is_error) == (False, True)

    def test_flags_compare_with_booleans(self) -> None:
        """The generated-code flag (OutcomeFlag) compares equal to a bool and reprs as one."""
        flag = OutcomeFlag(True)

        assert flag == True  # noqa: E712 - the comparison itself is the behaviour pinned
        assert flag() is True
        assert repr(flag) == "True"

    def test_value_or(self) -> None:
        """value_or gives the value when ok and the default otherwise."""
        assert Outcome.ok(3).value_or(9) == 3
        assert Outcome.error(error_type="x").value_or(9) == 9

    def test_outcome_is_truthy_even_with_a_falsy_value(self) -> None:
        """bool(Outcome.ok([])) is True: outcomes are never falsy."""
        assert bool(Outcome.ok([])) is True
        assert bool(Outcome.error()) is True


class TestRendering:
    """repr and str show the value or the error."""

    def test_ok_repr(self) -> None:
        """repr of ok shows the value."""
        assert repr(Outcome.ok({"a": 1})) == "Outcome(ok, value={'a': 1})"

    def test_error_repr(self) -> None:
        """repr of error shows type, message and retriable."""
        outcome = Outcome.error("fetch_failed", "503", True)

        assert repr(outcome) == (
            "Outcome(error, error_type='fetch_failed', error_message='503', retriable=True)"
        )

    def test_str(self) -> None:
        """str of ok is the value's str; of error "[type] message"."""
        assert str(Outcome.ok(5)) == "5"
        assert str(Outcome.error("fetch_failed", "503")) == "[fetch_failed] 503"


class TestImmutability:
    """Outcomes are frozen and hashable."""

    def test_assignment_raises(self) -> None:
        """Assigning a field raises a pydantic ValidationError."""
        outcome = Outcome.ok(1)

        with pytest.raises(ValidationError, match="frozen"):
            outcome.value = 2  # type: ignore[misc]

    def test_unknown_field_is_refused(self) -> None:
        """Constructing with an unknown field raises ValidationError."""
        with pytest.raises(ValidationError):
            Outcome(status="ok", colour="blue")  # type: ignore[call-arg]

    def test_equal_outcomes_hash_equal_even_with_dict_values(self) -> None:
        """Outcomes with dict values hash, and equal outcomes hash alike."""
        first = Outcome.ok({"a": 1}, tool_role="r", method_name="m")
        second = Outcome.ok({"a": 1}, tool_role="r", method_name="m")

        assert first == second
        assert hash(first) == hash(second)
        assert len({first, second}) == 1


class TestAttribution:
    """tool_role and method_name come from the running call, else fallbacks."""

    def test_outside_a_call_uses_fallbacks(self) -> None:
        """Built outside any call, an outcome is unknown_tool.unknown_method."""
        outcome = Outcome.ok(1)

        assert (outcome.tool_role, outcome.method_name) == ("unknown_tool", "unknown_method")

    def test_inside_outcome_context(self) -> None:
        """Inside outcome_context(role, method) both constructors use them."""
        with outcome_context("assistant", "set_timer"):
            made = [Outcome.ok(1), Outcome.error(error_type="x")]

        assert [(o.tool_role, o.method_name) for o in made] == [
            ("assistant", "set_timer"),
            ("assistant", "set_timer"),
        ]
        assert Outcome.ok(1).tool_role == "unknown_tool"

    def test_explicit_attribution_wins(self) -> None:
        """Explicit tool_role/method_name beat the context."""
        with outcome_context("assistant", "set_timer"):
            outcome = Outcome.ok(1, tool_role="clock", method_name="tick")

        assert (outcome.tool_role, outcome.method_name) == ("clock", "tick")


class TestCoerce:
    """coerce_outcome turns whatever generated code produced into an Outcome."""

    def _coerce(self, value: Any) -> Outcome:
        return coerce_outcome(value, tool_role="r", method_name="m")

    def test_outcome_of_the_running_call_is_returned_unchanged(self) -> None:
        """An Outcome already naming the running call is the same object."""
        own = Outcome.ok(5, tool_role="r", method_name="m")

        assert self._coerce(own) is own

    def test_an_outcome_keeps_the_attribution_the_boundary_settled(self) -> None:
        """coerce_outcome passes a child's Outcome on as it is (the sandbox settled its role)."""
        child = Outcome.error("rate_limited", "slow down", True, tool_role="c", method_name="x")

        assert self._coerce(child) is child

    @pytest.mark.parametrize("value", [None, 15, "text", [1, {"a": 2}], {"status": 200}])
    def test_plain_value_equals_the_validated_outcome(self, value: Any) -> None:
        """A plain value's Outcome names the running call and equals the one built directly."""
        built = self._coerce(value)
        validated = Outcome(status="ok", value=value, tool_role="r", method_name="m")

        assert built == validated
        assert built.model_fields_set == validated.model_fields_set
        assert built.model_dump() == validated.model_dump()
        assert built.metadata == {} and built.metadata is not validated.metadata

    @pytest.mark.parametrize("status", ["ok", "error"])
    def test_mapping_attribution_keys_are_ignored(self, status: str) -> None:
        """tool_role/method_name keys of a returned mapping neither attribute nor join metadata."""
        outcome = self._coerce({"status": status, "tool_role": "other", "method_name": "x"})

        assert (outcome.status, outcome.tool_role, outcome.method_name) == (status, "r", "m")
        assert outcome.metadata == {}

    def test_error_shaped_mapping_becomes_an_error(self) -> None:
        """{"status": "error", ...} becomes an error; other keys become metadata."""
        outcome = self._coerce(
            {
                "status": "ERROR",
                "error_type": "unsupported_capability",
                "error_message": "no timers",
                "retriable": True,
                "hint": "use cron",
            }
        )

        assert outcome == Outcome(
            status="error",
            error_type="unsupported_capability",
            error_message="no timers",
            retriable=True,
            tool_role="r",
            method_name="m",
            metadata={"hint": "use cron"},
        )

    def test_error_mapping_without_type_defaults_to_execution(self) -> None:
        """An error mapping with no type is execution / "Execution failed"."""
        outcome = self._coerce({"status": "error"})

        assert (outcome.error_type, outcome.error_message) == ("execution", "Execution failed")

    def test_ok_envelope_is_unwrapped(self) -> None:
        """{"status": "ok", "value": 3} becomes ok 3."""
        assert self._coerce({"status": "ok", "value": 3}) == Outcome(
            status="ok", value=3, tool_role="r", method_name="m"
        )

    def test_ok_mapping_with_data_keys_is_kept_whole(self) -> None:
        """{"status": "ok", "items": [1]} keeps the whole mapping as the value."""
        assert self._coerce({"status": "ok", "items": [1]}).value == {"status": "ok", "items": [1]}

    def test_other_status_is_a_plain_value(self) -> None:
        """{"status": "weird", "x": 1} is ok with the whole mapping."""
        assert self._coerce({"status": "weird", "x": 1}).value == {"status": "weird", "x": 1}

    @pytest.mark.parametrize("value", [None, False, 0, "", [1], "text"])
    def test_anything_else_is_an_ok_value(self, value: Any) -> None:
        """Any other value becomes an ok outcome carrying it."""
        outcome = self._coerce(value)

        assert (outcome.status, outcome.value, outcome.tool_role) == ("ok", value, "r")


class TestItemAccess:
    """__getitem__ and get read an ok outcome's mapping value."""

    def test_getitem_on_ok(self) -> None:
        """out["key"] reads the value."""
        assert Outcome.ok({"items": [1]})["items"] == [1]

    def test_getitem_on_error_raises_type_error(self) -> None:
        """Indexing an error outcome raises TypeError naming the error."""
        with pytest.raises(TypeError) as raised:
            Outcome.error("fetch_failed", "503")["items"]

        assert str(raised.value) == (
            "cannot index an error Outcome (fetch_failed: 503); check .ok before reading .value"
        )

    def test_get(self) -> None:
        """get reads a key with a default; errors and non-mappings give the default."""
        assert Outcome.ok({"a": 1}).get("a") == 1
        assert Outcome.ok({"a": 1}).get("b", 2) == 2
        assert Outcome.ok([1]).get("a", 3) == 3
        assert Outcome.error(error_type="x").get("a", 4) == 4


class TestJson:
    """Outcomes round-trip through JSON."""

    def test_round_trip(self) -> None:
        """model_dump(mode="json") -> json -> model_validate gives an equal outcome."""
        outcome = Outcome.error("fetch_failed", "503", True, metadata={"tries": [1, 2]})

        dumped = json.loads(json.dumps(outcome.model_dump(mode="json")))

        assert dumped == {
            "status": "error",
            "value": None,
            "error_type": "fetch_failed",
            "error_message": "503",
            "retriable": True,
            "tool_role": "unknown_tool",
            "method_name": "unknown_method",
            "metadata": {"tries": [1, 2]},
            "code": None,
            "call_id": None,
        }
        assert Outcome.model_validate(dumped) == outcome

    def test_values_pydantic_cannot_serialize_are_rendered(self) -> None:
        """An Agent or invalid UTF-8 bytes dump as text instead of failing."""
        agent = Agent("helper", provider=ScriptedProvider(), log=False)

        assert Outcome.ok(agent).model_dump(mode="json")["value"] == "<Agent(helper) context=[]>"
        assert Outcome.ok(b"\xffok").model_dump(mode="json")["value"] == "\ufffdok"
        assert json.loads(Outcome.ok(b"\xff").model_dump_json())["value"] == "\ufffd"


class TestDisplayIsBounded:
    """A value whose text is too long to show is described, not written out (ADR 0142): a
    program's answer may repeat its parts, so a few kilobytes of memory are megabytes (or
    gigabytes) of text, which displaying the outcome in a notebook or an f-string wrote."""

    MARKER = (
        " <not shown in full: its text is over 1,000,000 characters; the value itself is whole>"
    )

    @staticmethod
    def _repeating_answer() -> Outcome:
        # 100 rows of 100 references to one 1 000-character string: 10 MB of text.
        program = "s = 'x' * 1000\nrow = [s] * 100\nreturn [row] * 100"
        agent = Agent("t", provider=ScriptedProvider({"make": program}), log=False)
        return agent.make()

    def test_repr_shows_a_bounded_preview_and_the_value_stays_whole(self) -> None:
        """repr is the first 2 000 characters and the note; the value is untouched."""
        outcome = self._repeating_answer()

        text = repr(outcome)

        assert (len(text), text[:24], text.endswith(self.MARKER + ")")) == (
            2125,
            "Outcome(ok, value=[['xxx",
            True,
        )
        assert (len(outcome.value), outcome.value[0] is outcome.value[1]) == (100, True)
        assert outcome.value[99][99] == "x" * 1000

    def test_str_shows_the_same_preview(self) -> None:
        """str is the preview and the note, without the envelope."""
        text = str(self._repeating_answer())

        assert (len(text), text[:5], text.endswith(self.MARKER)) == (2106, "[['xx", True)

    def test_a_value_at_the_limit_is_shown_whole_and_one_past_it_is_not(self) -> None:
        """A 999 998-character string's repr is exactly 1 000 000 characters: shown whole; one
        character more and it is described."""
        at_limit = Outcome.ok("y" * 999_998)
        past_limit = Outcome.ok("y" * 999_999)

        assert str(at_limit) == "y" * 999_998
        assert repr(at_limit) == "Outcome(ok, value='" + "y" * 999_998 + "')"
        assert (len(str(past_limit)), str(past_limit).endswith(self.MARKER)) == (2106, True)

    def test_rich_is_handed_the_description(self) -> None:
        """rich renders what __rich_repr__ yields in full: a long value is yielded as an object
        whose repr is the description; a short one as itself."""
        outcome = self._repeating_answer()

        fields = list(outcome.__rich_repr__())

        assert fields[0] == ("status", "ok")
        assert repr(fields[1][1]) == repr(outcome)[len("Outcome(ok, value=") : -1]
        assert list(Outcome.ok([1, 2]).__rich_repr__()) == [("status", "ok"), ("value", [1, 2])]

    def test_a_host_objects_repr_runs_once(self) -> None:
        """An object of the host's own is shown by its repr, which runs once (no walk of it)."""
        calls: list[int] = []

        class Frame:
            def __repr__(self) -> str:
                calls.append(1)
                return "<Frame 3x2>"

        assert (repr(Outcome.ok(Frame())), calls) == ("Outcome(ok, value=<Frame 3x2>)", [1])

    def test_a_json_dump_past_the_cap_is_refused_before_writing(self) -> None:
        """model_dump_json of a value whose JSON text is over 64 000 000 characters raises
        (pydantic's serialization error, naming the cap) instead of writing it."""
        outcome = Outcome.ok([["x" * 1000] * 1000] * 65)

        with pytest.raises(PydanticSerializationError, match="over 64,000,000 characters"):
            outcome.model_dump_json()

    def test_a_json_dump_under_the_cap_is_whole(self) -> None:
        """A value of a megabyte of JSON text dumps in full."""
        value = ["z" * 1000] * 1000

        assert json.loads(Outcome.ok(value).model_dump_json())["value"] == value


class TestAttributionInGeneratedCode:
    """Outcomes built by generated code name the executing agent and method."""

    def test_error_built_in_code_names_the_running_call(self) -> None:
        """Outcome.error without role or method inside assistant.set_timer names them."""
        code = "return Outcome.error('unsupported_capability', 'Timers unavailable')"
        agent = Agent("assistant", provider=ScriptedProvider({"set_timer": code}), log=False)

        outcome = agent.set_timer()

        assert (outcome.tool_role, outcome.method_name) == ("assistant", "set_timer")
        assert (outcome.error_type, outcome.retriable) == ("unsupported_capability", False)

    @pytest.mark.parametrize(
        "code",
        [
            "return Outcome.ok(1, tool_role='bank', method_name='transfer')",
            "return Outcome.error('denied', 'no', tool_role='bank', method_name='transfer')",
            "return Outcome(status='ok', value=1, tool_role='bank', method_name='transfer')",
            "return {'status': 'error', 'error_type': 'denied', 'tool_role': 'bank'}",
            "return {'status': 'ok', 'value': 1, 'tool_role': 'bank', 'method_name': 'transfer'}",
        ],
    )
    def test_a_program_cannot_claim_another_role(self, code: str, tmp_path: Any) -> None:
        """The caller and the log line name assistant.set_timer whatever the program wrote."""
        log = tmp_path / "calls.jsonl"
        agent = Agent("assistant", provider=ScriptedProvider({"set_timer": code}), log=log)

        outcome = agent.set_timer()

        assert (outcome.tool_role, outcome.method_name) == ("assistant", "set_timer")
        entry = json.loads(log.read_text().splitlines()[-1])
        assert (entry["outcome_tool_role"], entry["outcome_method_name"]) == (
            "assistant",
            "set_timer",
        )

    @pytest.mark.parametrize(
        ("code", "named"),
        [
            ("return delegate('bank').transfer()", ("bank", "transfer")),
            ("answer = delegate('bank').transfer()\nreturn [answer][0]", ("bank", "transfer")),
            (
                "answer = delegate('bank').transfer()\n"
                "return Outcome(status='ok', value=2, tool_role=answer.tool_role, "
                "method_name=answer.method_name)",
                ("assistant", "set_timer"),
            ),
            (
                "answer = delegate('bank').transfer()\nreturn Outcome.ok(answer.value)",
                ("assistant", "set_timer"),
            ),
        ],
    )
    def test_only_a_child_answer_passed_on_names_the_child(
        self, code: str, named: tuple[str, str]
    ) -> None:
        """The child's own Outcome keeps bank.transfer; any Outcome the program built does not."""
        provider = ScriptedProvider({"set_timer": code, ("bank", "transfer"): "return 1"})
        agent = Agent("assistant", provider=provider, log=False, toolstore_root=None)

        outcome = agent.set_timer()

        assert outcome.ok
        assert (outcome.tool_role, outcome.method_name) == named


class TestErrorFieldBounds:
    """error_type is a short identifier and error_message is bounded, at construction (ADR 0059)."""

    @pytest.mark.parametrize(
        "error_type",
        ["division_by_zero", "ValueError", "http.404", "rate-limited", "x" * MAX_ERROR_TYPE_CHARS],
    )
    def test_short_identifiers_are_accepted(self, error_type: str) -> None:
        """snake_case, CamelCase, dotted and dashed identifiers up to the cap are kept as given."""
        assert Outcome.error(error_type, "m").error_type == error_type
        assert Outcome(status="error", error_type=error_type).error_type == error_type

    @pytest.mark.parametrize(
        "error_type",
        ["x" * (MAX_ERROR_TYPE_CHARS + 1), "two words", "line\nbreak", "-leading", "é", "a/b"],
    )
    def test_other_error_types_raise_a_typed_error(self, error_type: str) -> None:
        """One past the cap, or any character outside the identifier set, raises the typed error."""
        builds: tuple[Callable[[], Outcome], ...] = (
            lambda: Outcome.error(error_type, "m"),
            lambda: Outcome.error(error_type=error_type),
            lambda: Outcome(status="error", error_type=error_type),
            lambda: Outcome.model_validate({"status": "error", "error_type": error_type}),
        )
        for build in builds:
            with pytest.raises(InvalidOutcomeError) as raised:
                build()
            assert str(raised.value).startswith(
                "error_type must be a short identifier such as 'division_by_zero' (ASCII letters, "
                "digits, '_', '.' or '-'; at most 64 characters); got "
            )

    def test_a_huge_error_type_is_named_by_its_head_and_length(self) -> None:
        """The error quotes 40 characters and the length, never the whole string."""
        with pytest.raises(InvalidOutcomeError) as raised:
            Outcome.error(error_type="x" * 10**7)

        assert str(raised.value).endswith(f"got {'x' * 40!r}... (10000000 characters)")
        assert isinstance(raised.value, ExecutionError)
        assert (raised.value.error_type, raised.value.retriable) == ("execution", False)

    def test_error_message_at_the_cap_is_kept(self) -> None:
        """A message of exactly MAX_ERROR_MESSAGE_CHARS characters is kept whole."""
        message = "m" * MAX_ERROR_MESSAGE_CHARS

        assert Outcome.error("too_long", message).error_message == message

    def test_error_message_one_past_the_cap_raises(self) -> None:
        """Outcome.error with one character more raises InvalidOutcomeError saying the cap."""
        with pytest.raises(InvalidOutcomeError) as raised:
            Outcome.error("too_long", "m" * (MAX_ERROR_MESSAGE_CHARS + 1))

        assert str(raised.value) == (
            "error_message has 10001 characters; an Outcome carries at most 10000: shorten it"
        )

    def test_error_mapping_past_the_cap_raises(self) -> None:
        """An error mapping returned by a program is held to the same cap when coerced."""
        with pytest.raises(InvalidOutcomeError):
            coerce_outcome(
                {"status": "error", "error_message": "m" * (MAX_ERROR_MESSAGE_CHARS + 1)},
                tool_role="r",
                method_name="m",
            )

    def test_the_model_cuts_longer_messages_to_the_cap(self) -> None:
        """Outcome(...) itself (how the runtime reports exception text) cuts with a marker."""
        outcome = Outcome(status="error", error_type="execution", error_message="m" * 20_000)

        marker = " [cut from 20000 characters]"
        assert outcome.error_message == "m" * (MAX_ERROR_MESSAGE_CHARS - len(marker)) + marker
        assert len(outcome.error_message) == MAX_ERROR_MESSAGE_CHARS

    def test_generated_code_gets_the_typed_error_as_its_failure(self) -> None:
        """Outcome.error(error_type="x" * 10**7) in a program ends the call as an execution error."""
        code = "return Outcome.error(error_type='x' * 10**7, error_message='boom')"
        agent = Agent("calc", provider=ScriptedProvider({"divide": code}), log=False)

        outcome = agent.divide()

        assert (outcome.status, outcome.error_type) == ("error", "execution")
        assert outcome.error_message is not None
        assert "InvalidOutcomeError: error_type must be a short identifier" in (
            outcome.error_message
        )
        assert len(outcome.error_message) < 1_000


class TestPlainOk:
    """``plain_ok`` builds a mapped item's scalar Outcome directly (ADR 0122): exactly what
    ``model_construct`` makes of the same five fields."""

    @pytest.mark.parametrize("value", [3, -2.5, "text", True, None, 10**30])
    def test_it_is_model_construct(self, value: object) -> None:
        """Fields, explicitly-set fields, dumps, equality and hash match model_construct's."""
        expected = Outcome.model_construct(
            status="ok", value=value, tool_role="t", method_name="m", code="result = 1"
        )

        built = plain_ok(value, tool_role="t", method_name="m", code="result = 1")

        assert type(built) is Outcome
        assert built.__dict__ == expected.__dict__
        assert built.model_fields_set == expected.model_fields_set
        assert built.model_dump() == expected.model_dump()
        assert (built == expected, hash(built) == hash(expected)) == (True, True)
        assert (built.ok, built.unwrap(), built.metadata is not expected.metadata) == (
            True,
            value,
            True,
        )


class TestCoercedPlainValue:
    """A program's plain answer becomes its Outcome without pydantic's validation (ADR 0126):
    exactly the Outcome ``Outcome(status="ok", value=..., tool_role=..., method_name=...)``
    validates into, the same value object kept."""

    @pytest.mark.parametrize(
        "value", [3, -2.5, "text", True, None, 10**30, [1, {"a": 2}], (1, "b"), b"raw"]
    )
    def test_it_is_the_validated_outcome(self, value: object) -> None:
        expected = Outcome(status="ok", value=value, tool_role="t", method_name="m")

        built = coerce_outcome(value, tool_role="t", method_name="m")

        assert type(built) is Outcome
        assert built.__dict__ == expected.__dict__
        assert built.model_fields_set == expected.model_fields_set
        assert built.model_dump() == expected.model_dump()
        assert built.value is value
        assert built.metadata is not expected.metadata
        assert (built == expected, hash(built) == hash(expected)) == (True, True)


class TestStampedWhenMade:
    """A plain answer's Outcome made with its call's origin (ADR 0130) is the Outcome
    ``with_origin`` would make of the unstamped one, in every respect a caller can see, and
    ``with_origin`` keeps it as it is."""

    @pytest.mark.parametrize("value", [3, "text", None, [1, {"a": 2}], b"raw"])
    def test_it_is_the_stamped_copy_and_is_kept(self, value: object) -> None:
        expected = with_origin(
            coerce_outcome(value, tool_role="t", method_name="m"), call_id="c1", code="x = 1"
        )

        built = coerce_outcome(value, tool_role="t", method_name="m", call_id="c1", code="x = 1")

        assert built.__dict__ == expected.__dict__
        assert built.model_fields_set == expected.model_fields_set
        assert built.model_dump(exclude_unset=True) == expected.model_dump(exclude_unset=True)
        assert with_origin(built, call_id="c1", code="x = 1") is built

    def test_another_origin_is_stamped_on_a_copy(self) -> None:
        """Another call id or code than the Outcome carries: a new, restamped Outcome."""
        built = coerce_outcome(3, tool_role="t", method_name="m", call_id="c1", code="x = 1")

        restamped = with_origin(built, call_id="c2", code="x = 1")

        assert (restamped is built, restamped.call_id, built.call_id) == (False, "c2", "c1")


class TestWithOrigin:
    """``with_origin`` stamps a call's Outcome without pydantic's generic copy (ADR 0122): the
    result is what ``model_copy(update={"call_id": ..., "code": ...})`` makes, in every respect
    a caller can see."""

    @pytest.mark.parametrize(
        "outcome",
        [
            Outcome(status="ok", value={"a": [1, 2]}, tool_role="calc", method_name="add"),
            Outcome(status="ok", value=3, code="old", call_id="c0"),
            Outcome(
                status="error",
                error_type="division_by_zero",
                error_message="no",
                retriable=True,
                metadata={"k": 1},
            ),
        ],
    )
    def test_the_copy_is_model_copy(self, outcome: Outcome) -> None:
        """Fields, explicitly-set fields, dumps, equality and hash match; the original is left
        as it was and the copy is frozen like any Outcome."""
        expected = outcome.model_copy(update={"call_id": "c1", "code": "result = 3"})
        before = outcome.model_dump()

        copied = with_origin(outcome, call_id="c1", code="result = 3")

        assert copied is not outcome
        assert type(copied) is Outcome
        assert copied.__dict__ == expected.__dict__
        assert copied.model_fields_set == expected.model_fields_set
        assert copied.model_dump() == expected.model_dump()
        assert copied.model_dump_json() == expected.model_dump_json()
        assert (copied == expected, hash(copied) == hash(expected)) == (True, True)
        assert copied.__pydantic_extra__ is None and copied.__pydantic_private__ is None
        assert outcome.model_dump() == before
        with pytest.raises(ValidationError):
            copied.call_id = "other"  # type: ignore[misc]

    def test_the_value_is_shared_not_copied(self) -> None:
        """As with model_copy (a shallow copy), the value object is the original's."""
        value = {"rows": [1]}
        outcome = Outcome(status="ok", value=value)

        assert with_origin(outcome, call_id="c", code=None).value is value

    def test_a_subclass_takes_model_copy(self) -> None:
        """A subclass of Outcome keeps its class (pydantic's copy handles what it adds)."""

        class Tagged(Outcome):
            pass

        outcome = Tagged(status="ok", value=1)

        copied = with_origin(outcome, call_id="c2", code="x")

        assert (type(copied), copied.call_id, copied.code, copied.value) == (Tagged, "c2", "x", 1)
