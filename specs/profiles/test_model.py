"""Role profile shape and checks (recurgent/_profiles/_model.py, ADR 0083)."""

from __future__ import annotations

from typing import Any

import pytest

from recurgent._profiles import (
    constraint_applies,
    expected_value,
    normalize_profile,
    normalize_version,
)
from recurgent.errors import UsageError


def _profile(**constraint: Any) -> dict[str, Any]:
    return {"role": "calculator", "version": 1, "constraints": {"slot": constraint}}


class TestNormalize:
    """A profile is checked and returned in one canonical form."""

    def test_defaults_are_filled_in(self) -> None:
        """An empty constraint is a coordination state slot over all methods."""
        assert normalize_profile(_profile()) == {
            "role": "calculator",
            "version": 1,
            "constraints": {
                "slot": {
                    "kind": "shared_state_slot",
                    "mode": "coordination",
                    "scope": "all_methods",
                }
            },
        }

    def test_full_constraint_keeps_every_field(self) -> None:
        """Names are stripped and de-duplicated; canonical key and value are kept."""
        profile = _profile(
            kind="return_shape_family",
            mode="prescriptive",
            scope="explicit_methods",
            methods=[" add ", "add", "sub"],
            canonical_value="numeric",
        )

        assert normalize_profile(profile)["constraints"]["slot"] == {
            "kind": "return_shape_family",
            "mode": "prescriptive",
            "scope": "explicit_methods",
            "methods": ["add", "sub"],
            "canonical_value": "numeric",
        }

    def test_digit_string_version_is_an_int(self) -> None:
        """The version "2" (as JSON keys come back) is the int 2."""
        assert normalize_profile({**_profile(), "version": "2"})["version"] == 2

    @pytest.mark.parametrize("version", [0, -1, 1.5, True, "x", None, 10**9 + 1])
    def test_bad_version_is_refused(self, version: Any) -> None:
        """A version that is not an int from 1 to 10**9 is a UsageError naming the field."""
        with pytest.raises(UsageError, match="role_profile version must be an int from 1"):
            normalize_profile({**_profile(), "version": version})

    def test_role_must_match_the_agent(self) -> None:
        """With an expected role, a profile of another role is refused."""
        with pytest.raises(UsageError, match="role 'calculator' must match the agent's role 'x'"):
            normalize_profile(_profile(), expected_role="x")

    @pytest.mark.parametrize(
        ("change", "message"),
        [
            ({"extra": 1}, "role_profile has unknown key\\(s\\) extra"),
            ({"role": " "}, "role_profile role must be a non-empty str"),
            ({"constraints": []}, "role_profile constraints must be a dict"),
            ({"constraints": {"slot": 3}}, "constraint 'slot' must be a dict"),
            (
                {"constraints": {str(i): {} for i in range(33)}},
                "has 33 constraints, more than 32",
            ),
        ],
    )
    def test_malformed_profile_is_refused(self, change: dict[str, Any], message: str) -> None:
        """Each malformed part is a UsageError naming it."""
        with pytest.raises(UsageError, match=message):
            normalize_profile({**_profile(), **change})

    @pytest.mark.parametrize(
        ("constraint", "message"),
        [
            ({"kind": "colour"}, "unsupported kind 'colour'"),
            ({"mode": "strict"}, "unsupported mode 'strict'"),
            ({"scope": "some"}, "unsupported scope 'some'"),
            ({"canonical_kye": "v"}, "unknown key\\(s\\) canonical_kye"),
            ({"methods": ["add"]}, "scope all_methods must not list methods"),
            ({"scope": "explicit_methods"}, "scope explicit_methods needs methods"),
            (
                {"scope": "explicit_methods", "methods": ["a"], "exclude_methods": ["b"]},
                "scope explicit_methods must not list exclude_methods",
            ),
            ({"mode": "prescriptive"}, "prescriptive mode needs canonical_key or canonical_value"),
            ({"methods": "add"}, "methods must be a list of method names"),
            ({"canonical_value": {"a": 1}}, "canonical_value must be a str, number or bool"),
        ],
    )
    def test_malformed_constraint_is_refused(
        self, constraint: dict[str, Any], message: str
    ) -> None:
        """Each malformed constraint field is a UsageError naming the constraint and field."""
        with pytest.raises(UsageError, match=message):
            normalize_profile(_profile(**constraint))

    def test_not_a_dict_is_refused(self) -> None:
        """A profile that is not a dict is a UsageError."""
        with pytest.raises(UsageError, match="role_profile must be a dict, got 3"):
            normalize_profile(3)


class TestHelpers:
    """Versions, expected values and scopes."""

    @pytest.mark.parametrize(
        ("value", "version"), [(1, 1), ("7", 7), (" 3 ", 3), (0, None), (False, None), ("a", None)]
    )
    def test_normalize_version(self, value: Any, version: int | None) -> None:
        """Ints and digit strings from 1 are versions; anything else is None."""
        assert normalize_version(value) == version

    def test_expected_value_prefers_the_canonical_key(self) -> None:
        """canonical_key wins over canonical_value; a bool value reads as true/false."""
        assert expected_value({"canonical_key": "value", "canonical_value": 1}) == "value"
        assert expected_value({"canonical_value": True}) == "true"
        assert expected_value({"canonical_value": 2}) == "2"
        assert expected_value({}) is None

    def test_constraint_applies_by_scope(self) -> None:
        """all_methods covers all but the excluded; explicit_methods only the listed."""
        everything = {"scope": "all_methods", "exclude_methods": ["reset"]}
        listed = {"scope": "explicit_methods", "methods": ["add"]}

        assert (constraint_applies(everything, "add"), constraint_applies(everything, "reset")) == (
            True,
            False,
        )
        assert (constraint_applies(listed, "add"), constraint_applies(listed, "sub")) == (
            True,
            False,
        )
