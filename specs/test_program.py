"""parse_program: validation of provider replies into Programs, and dependency manifests."""

from __future__ import annotations

from typing import Any

import pytest

from recurgent import Agent, Dependency, InvalidCodeError, InvalidDependencyManifestError, Program
from recurgent.program import PROGRAM_SCHEMA, parse_program
from recurgent.testing import FunctionProvider


def _parse(reply: object) -> Program:
    return parse_program(reply, method_name="add")


class TestReplyShape:
    """What counts as a program."""

    def test_mapping_with_code(self) -> None:
        """{"code": ...} gives a Program with no dependencies."""
        assert _parse({"code": "result = 1"}) == Program(code="result = 1")

    def test_unknown_keys_are_ignored(self) -> None:
        """Extra keys of the reply are ignored."""
        assert _parse({"code": "result = 1", "notes": "x"}) == Program(code="result = 1")

    def test_program_object_is_accepted(self) -> None:
        """A Program is returned equal to itself."""
        program = Program(code="result = 1", dependencies=(Dependency(name="a"),))

        assert _parse(program) == program

    def test_program_object_dependencies_are_normalized(self) -> None:
        """A Program built by a provider gets its dependency names normalized too."""
        program = Program(code="x = 1", dependencies=(Dependency(name="Foo_Bar"),))

        assert _parse(program).dependencies == (Dependency(name="foo-bar"),)

    @pytest.mark.parametrize(
        ("reply", "kind"), [(None, "NoneType"), (5, "int"), ("result = 1", "str"), ([], "list")]
    )
    def test_non_mapping_is_invalid_program(self, reply: object, kind: str) -> None:
        """A reply that is not an object raises InvalidCodeError naming its type."""
        with pytest.raises(InvalidCodeError) as raised:
            _parse(reply)

        assert str(raised.value) == (
            f"Provider returned invalid program for add (provider returned {kind}; expected object)"
        )

    @pytest.mark.parametrize(
        ("reply", "detail"),
        [
            ({}, "provider returned null `code`"),
            ({"code": None}, "provider returned null `code`"),
            ({"code": 5}, "provider returned int for `code`"),
            ({"code": "  \n"}, "provider returned blank `code`"),
            (Program(code=" "), "provider returned blank `code`"),
        ],
    )
    def test_bad_code_is_invalid_code(self, reply: object, detail: str) -> None:
        """Missing, non-string or blank code raises InvalidCodeError saying which."""
        with pytest.raises(InvalidCodeError) as raised:
            _parse(reply)

        assert str(raised.value) == (
            f"Provider returned invalid code for add ({detail}; expected non-empty str)"
        )
        assert raised.value.error_type == "invalid_code"


class TestDependencies:
    """The dependency manifest is validated and normalized."""

    def test_names_are_normalized_and_versions_stripped(self) -> None:
        """Names become their PEP 503 form; versions are stripped; null version is None."""
        program = _parse(
            {
                "code": "x = 1",
                "dependencies": [
                    {"name": " Python_Dateutil ", "version": " >=2.8 "},
                    {"name": "requests", "version": None},
                ],
            }
        )

        assert program.dependencies == (
            Dependency(name="python-dateutil", version=">=2.8"),
            Dependency(name="requests", version=None),
        )

    def test_dependencies_are_sorted_and_deduplicated(self) -> None:
        """Entries are sorted by name; the same name and version twice is kept once."""
        program = _parse(
            {
                "code": "x = 1",
                "dependencies": [{"name": "zeta"}, {"name": "alpha"}, {"name": "ALPHA"}],
            }
        )

        assert [d.name for d in program.dependencies] == ["alpha", "zeta"]

    def test_null_dependencies_are_empty(self) -> None:
        """dependencies: null gives ()."""
        assert _parse({"code": "x = 1", "dependencies": None}).dependencies == ()

    @pytest.mark.parametrize(
        ("dependencies", "message"),
        [
            (
                "requests",
                "dependencies must be a list of {name, version} objects, got str",
            ),
            (
                {"name": "requests"},
                "dependencies must be a list of {name, version} objects, got dict",
            ),
            ([5], "dependencies[0] must be an object with a 'name', got int"),
            ([{"version": "1"}], "dependencies[0].name must be a package name, got None"),
            ([{"name": ""}], "dependencies[0].name must be a package name, got ''"),
            ([{"name": "a b"}], "dependencies[0].name must be a package name, got 'a b'"),
            ([{"name": "-a"}], "dependencies[0].name must be a package name, got '-a'"),
            (
                [{"name": "a", "version": 1}],
                "dependencies[0].version must be a non-blank string or null, got 1",
            ),
            (
                [{"name": "a", "version": " "}],
                "dependencies[0].version must be a non-blank string or null, got ' '",
            ),
            (
                [{"name": "a", "version": "1"}, {"name": "A", "version": "2"}],
                "dependency 'a' conflicts with a prior declaration ('1' vs '2')",
            ),
            (
                [{"name": "a", "version": "1"}, {"name": "a"}],
                "dependency 'a' conflicts with a prior declaration ('1' vs None)",
            ),
        ],
    )
    def test_bad_manifest_is_refused(self, dependencies: Any, message: str) -> None:
        """A malformed manifest raises InvalidDependencyManifestError with the reason."""
        with pytest.raises(InvalidDependencyManifestError) as raised:
            _parse({"code": "x = 1", "dependencies": dependencies})

        assert str(raised.value) == message
        assert (raised.value.error_type, raised.value.retriable) == (
            "invalid_dependency_manifest",
            False,
        )


class TestSchema:
    """PROGRAM_SCHEMA is what providers are asked to fill."""

    def test_schema_requires_code_and_allows_dependencies(self) -> None:
        """The schema is a closed object requiring code, with optional dependencies."""
        assert PROGRAM_SCHEMA["required"] == ["code"]
        assert PROGRAM_SCHEMA["additionalProperties"] is False
        assert sorted(PROGRAM_SCHEMA["properties"]) == ["code", "dependencies"]
        assert PROGRAM_SCHEMA["properties"]["dependencies"]["items"]["required"] == ["name"]

    def test_program_is_frozen(self) -> None:
        """Program and Dependency are immutable."""
        program = Program(code="x = 1")

        with pytest.raises(ValueError, match="frozen"):
            program.code = "y"  # type: ignore[misc]


class TestRepliesAsModelsSendThem:
    """Fenced code and JSON sent as text are unwrapped before validation."""

    @pytest.mark.parametrize(
        "reply",
        [
            {"code": "```python\nresult = 1\n```"},
            {"code": "```\nresult = 1\n```"},
            {"code": "~~~py\nresult = 1\n~~~"},
            '{"code": "result = 1"}',
            '```json\n{"code": "result = 1", "dependencies": []}\n```',
        ],
    )
    def test_wrapped_reply_becomes_the_bare_program(self, reply: object) -> None:
        """Every wrapping a model uses yields the same program ``result = 1``."""
        assert parse_program(reply, method_name="m").code == "result = 1"

    def test_fence_inside_the_code_is_kept(self) -> None:
        """A fence that does not wrap the whole text (here inside a string) is code."""
        code = 'text = """\n```\nx\n```\n"""\nresult = text'
        assert parse_program({"code": code}, method_name="m").code == code

    def test_text_that_is_not_a_reply_stays_invalid(self) -> None:
        """A string that is not JSON of the reply schema is still refused as not an object."""
        with pytest.raises(InvalidCodeError, match="provider returned str; expected object"):
            parse_program('{"not_code": 1}', method_name="m")


class TestFunctionProviderJsonReplies:
    """``FunctionProvider`` treats a JSON string of the reply schema as the reply."""

    def test_json_string_is_a_reply_not_code(self) -> None:
        """``'{"code": "result = 2"}'`` runs ``result = 2`` instead of evaluating a dict literal."""
        provider = FunctionProvider(lambda request: '{"code": "result = 2"}')
        assert Agent("t", provider=provider, log=False).run().value == 2
