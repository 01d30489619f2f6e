"""Delegation contracts: composition from options and deliverable validation."""

from __future__ import annotations

from typing import Any

import pytest

from recurgent._contracts import compose_contract, infer_intent_signature
from recurgent._deliverables import shape_name, validate_deliverable
from recurgent.errors import UsageError

NO_FIELDS: dict[str, Any] = {
    "purpose": None,
    "deliverable": None,
    "acceptance": None,
    "failure_policy": None,
    "intent_signature": None,
}


def _check(deliverable: Any, value: Any, args: tuple[Any, ...] = (), **kwargs: Any) -> Any:
    return validate_deliverable(deliverable, value, args, kwargs)


class TestComposeContract:
    """compose_contract merges a mapping and field options and names the source."""

    def test_sources(self) -> None:
        """none, hash, fields and merged (fields win per key)."""
        mapping = {"purpose": "from map", "acceptance": ["a"], "version": 2}

        assert compose_contract(None, NO_FIELDS) == (None, "none")
        assert compose_contract(mapping, NO_FIELDS) == (
            {"purpose": "from map", "acceptance": ["a"]},
            "hash",
        )
        assert compose_contract(None, {**NO_FIELDS, "purpose": "p"}) == ({"purpose": "p"}, "fields")
        assert compose_contract(mapping, {**NO_FIELDS, "purpose": "field"}) == (
            {"purpose": "field", "acceptance": ["a"]},
            "merged",
        )

    def test_mapping_of_unknown_keys_only_is_no_contract(self) -> None:
        """Only the five contract fields survive; nothing left means no contract."""
        assert compose_contract({"version": 1}, NO_FIELDS) == (None, "none")

    @pytest.mark.parametrize(
        ("explicit", "message"),
        [
            ("invalid", "delegation_contract must be a mapping or None, got str"),
            (
                {"purpose": " "},
                "delegation_contract['purpose'] must be a non-empty str when provided, got ' '",
            ),
            (
                {"intent_signature": 3},
                "delegation_contract['intent_signature'] must be a non-empty str when provided, "
                "got 3",
            ),
        ],
    )
    def test_invalid_contracts_raise(self, explicit: Any, message: str) -> None:
        """A non-mapping or a blank purpose or intent signature is a usage error."""
        with pytest.raises(UsageError) as raised:
            compose_contract(explicit, NO_FIELDS)

        assert str(raised.value) == message


class TestIntentSignature:
    """infer_intent_signature describes the delegating call."""

    def test_method_args_and_kwargs(self) -> None:
        """First two non-blank args (120 chars each) and first three kwarg names."""
        signature = infer_intent_signature(
            "ask", ("latest news", " ", "x" * 200), {"url": 1, "a": 2, "b": 3, "c": 4}
        )

        assert signature == "ask: args=latest news: kwargs=url,a,b"

    def test_bare_method(self) -> None:
        """Without arguments the signature is the method name."""
        assert infer_intent_signature("run", (), {}) == "run"


class TestShapeNames:
    """shape_name uses JSON-style names."""

    @pytest.mark.parametrize(
        ("value", "name"),
        [
            (None, "null"),
            (True, "boolean"),
            (3, "integer"),
            (1.5, "number"),
            ("s", "string"),
            ({}, "object"),
            ([], "array"),
            ((), "array"),
            (b"x", "bytes"),
        ],
    )
    def test_names(self, value: Any, name: str) -> None:
        """Each Python value maps to its JSON shape name."""
        assert shape_name(value) == name


JSON_TYPE_CASES = [
    ("object", {"a": 1}, [1]),
    ("array", [1], {"a": 1}),
    ("string", "text", 3),
    ("integer", 3, 3.5),
    ("integer", 3, True),
    ("number", 2.5, "2.5"),
    ("number", 2, False),
    ("boolean", False, 0),
    ("null", None, 0),
]


class TestValidateDeliverable:
    """validate_deliverable checks ok values against a deliverable."""

    def test_non_mapping_deliverable_is_not_applied(self) -> None:
        """A prose deliverable is not enforced."""
        check = _check("a list of headlines", [])

        assert (check.applied, check.passed) == (False, None)

    def test_deliverable_without_type_or_required_passes(self) -> None:
        """Nothing to check passes."""
        check = _check({"description": "anything"}, 5)

        assert (check.applied, check.passed, check.mismatch) == (True, True, None)

    def test_unknown_type_passes(self) -> None:
        """A type that is not a JSON type (e.g. 'summary') is not checked."""
        assert _check({"type": "summary"}, 5).passed is True

    @pytest.mark.parametrize(("kind", "good", "bad"), JSON_TYPE_CASES)
    def test_top_level_type_for_every_json_type(self, kind: str, good: Any, bad: Any) -> None:
        """The value's type must match the declared type."""
        passed = _check({"type": kind}, good)
        failed = _check({"type": kind}, bad)

        assert passed.passed is True
        assert (failed.passed, failed.mismatch, failed.details) == (
            False,
            "type_mismatch",
            {"expected_shape": kind, "actual_shape": shape_name(bad)},
        )

    @pytest.mark.parametrize(("kind", "good", "bad"), JSON_TYPE_CASES)
    def test_property_type_for_every_json_type(self, kind: str, good: Any, bad: Any) -> None:
        """Declared property types are checked for every JSON type."""
        deliverable = {"type": "object", "constraints": {"properties": {"p": {"type": kind}}}}

        passed = _check(deliverable, {"p": good})
        failed = _check(deliverable, {"p": bad})

        assert passed.passed is True
        assert (failed.mismatch, failed.expected_keys, failed.details) == (
            "property_type_mismatch",
            ["p"],
            {
                "constraint_path": "deliverable.constraints.properties.p.type",
                "expected_shape": kind,
                "actual_shape": shape_name(bad),
            },
        )

    def test_missing_required_keys(self) -> None:
        """Missing keys are listed with the expected and actual keys."""
        check = _check({"type": "object", "required": ["body", "status"]}, {"status": 200})

        assert (check.mismatch, check.expected_keys, check.actual_keys, check.details) == (
            "missing_required_key",
            ["body", "status"],
            ["status"],
            {"expected_shape": "object", "actual_shape": "object", "missing_keys": ["body"]},
        )

    def test_required_without_type_means_object(self) -> None:
        """A deliverable with only required keys is checked as an object."""
        check = _check({"required": ["body"]}, ["body"])

        assert (check.mismatch, check.details["expected_shape"]) == ("type_mismatch", "object")

    def test_required_as_a_single_string_names_one_key(self) -> None:
        """required: 'body' is the key 'body', not the letters b, o, d, y."""
        check = _check({"type": "object", "required": "body"}, {"body": 1})

        assert (check.passed, check.expected_keys) == (True, ["body"])

    def test_tolerant_match_returns_a_canonical_value(self) -> None:
        """pubDate satisfies pub_date; the canonical value adds pub_date."""
        check = _check({"type": "object", "required": ["pub_date"]}, {"pubDate": "d"})

        assert (check.passed, check.canonical_value) == (True, {"pubDate": "d", "pub_date": "d"})

    def test_exact_match_needs_no_canonical_value(self) -> None:
        """When every required key is spelled as asked the value is kept as it is."""
        check = _check({"type": "object", "required": ["body"]}, {"body": 1})

        assert check.canonical_value is None

    def test_property_constraints_match_keys_tolerantly(self) -> None:
        """A constraint on 'pub_dates' applies to a 'pubDates' key."""
        deliverable = {
            "type": "object",
            "constraints": {"properties": {"pub_dates": {"min_items": 2}}},
        }

        check = _check(deliverable, {"pubDates": ["d"]})

        assert (check.mismatch, check.details["actual_items"]) == ("min_items_violation", 1)

    def test_property_min_items_on_a_non_list(self) -> None:
        """min_items on a string property fails with actual_items None."""
        deliverable = {"type": "object", "constraints": {"properties": {"p": {"min_items": 1}}}}

        check = _check(deliverable, {"p": "text"})

        assert (check.mismatch, check.details["actual_shape"], check.details["actual_items"]) == (
            "min_items_violation",
            "string",
            None,
        )

    @pytest.mark.parametrize(
        ("deliverable", "passes"),
        [
            ({"type": "array", "min_items": 2}, False),
            ({"type": "array", "min_items": "2"}, False),
            ({"type": "array", "constraints": {"min_items": 2}}, False),
            ({"type": "array", "min_items": -1}, True),
            ({"type": "array", "min_items": True}, True),
            ({"type": "array", "min_items": "two"}, True),
        ],
        ids=["int", "digit-string", "constraints", "negative", "bool", "unparsable"],
    )
    def test_array_min_items_spellings(self, deliverable: dict[str, Any], passes: bool) -> None:
        """min_items may be an int or digit string, at top level or in constraints."""
        check = _check(deliverable, [1])

        assert check.passed is passes
        if not passes:
            assert check.details["constraint_path"] == "deliverable.min_items"

    def test_nil_required_input(self) -> None:
        """A None first argument, no kwargs and an empty value violate any deliverable."""
        check = _check({"type": "object"}, {}, (None,))

        assert (check.mismatch, check.details) == (
            "nil_required_input",
            {"expected_shape": "non_null_input", "actual_shape": "null"},
        )

    @pytest.mark.parametrize(
        ("args", "kwargs", "value"),
        [((None,), {"k": 1}, []), ((None,), {}, [1]), (("x",), {}, [])],
        ids=["with-kwargs", "non-empty-value", "non-null-arg"],
    )
    def test_nil_required_input_needs_all_three_conditions(
        self, args: tuple[Any, ...], kwargs: dict[str, Any], value: Any
    ) -> None:
        """kwargs present, a non-empty value or a real argument is not that violation."""
        check = _check({"type": "array"}, value, args, **kwargs)

        assert check.passed is True

    def test_metadata_combines_keys_and_details(self) -> None:
        """metadata() is what a contract_violation outcome carries."""
        check = _check({"type": "array", "min_items": 1}, [])

        assert check.metadata() == {
            "mismatch": "min_items_violation",
            "expected_keys": [],
            "actual_keys": [],
            "constraint_path": "deliverable.min_items",
            "expected_shape": "array",
            "actual_shape": "array",
            "expected_min_items": 1,
            "actual_items": 0,
        }
