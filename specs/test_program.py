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


PROGRAM = "def double(x):\n    return 2 * x\n\nresult = double(args[0])"


class TestTolerantFences:
    """Fences with whitespace after them, prose around them, or several of them (ADR 0100)."""

    @pytest.mark.parametrize(
        "code",
        [
            "```python\nresult = 1\n```\n",
            "```python\nresult = 1\n```  \n\n",
            "\n```py\nresult = 1\n```\n",
            "Here is the program:\n```python\nresult = 1\n```\nIt returns one.",
            "Sure!\n\n~~~\nresult = 1\n~~~\n",
            "Here it is:\n```python\nresult = 1\n",
            "1. The program:\n   ```python\n   result = 1\n   ```\n",
        ],
        ids=["newline", "spaces", "leading", "prose", "tildes", "unclosed", "indented"],
    )
    def test_one_block_is_the_program(self, code: str) -> None:
        """Each reply is the program ``result = 1``."""
        assert parse_program({"code": code}, method_name="m").code == "result = 1"

    def test_the_program_wins_over_a_usage_example(self) -> None:
        """Of two python blocks that parse, the longer one is the program."""
        code = f"```python\n{PROGRAM}\n```\nUse it as:\n```python\nagent.double(2)\n```\n"

        assert parse_program({"code": code}, method_name="m").code == PROGRAM

    def test_a_python_block_wins_over_an_untagged_one(self) -> None:
        """An untagged block of output is not the program when a python block exists."""
        code = "Output:\n```\n4\n```\nProgram:\n```python\nresult = 4\n```"

        assert parse_program({"code": code}, method_name="m").code == "result = 4"

    def test_a_block_that_parses_wins_over_a_longer_one_that_does_not(self) -> None:
        """A python block with prose in it loses to one that parses."""
        code = (
            "```python\nThis is not code at all, only a long explanation.\n```\n"
            "```python\nresult = 4\n```"
        )

        assert parse_program({"code": code}, method_name="m").code == "result = 4"

    def test_valid_python_with_fences_in_a_string_is_kept(self) -> None:
        """Python that parses is never changed, whatever fences its strings hold."""
        code = 'intro = "see below"\nmd = """\n```python\nx = 1\n```\n"""\nresult = md\n'

        assert parse_program({"code": code}, method_name="m").code == code

    def test_a_fence_line_inside_a_wrapped_program_is_code(self) -> None:
        """A wrapped program whose string literal holds a line of backticks stays whole."""
        inner = 'md = """\n```\n"""\nresult = md'

        reply = {"code": f"```python\n{inner}\n```\n"}

        assert parse_program(reply, method_name="m").code == inner

    def test_fenced_json_among_prose_is_the_reply(self) -> None:
        """A JSON reply in a ``json`` block between sentences is the reply object."""
        reply = 'Here you go:\n```json\n{"code": "result = 3"}\n```\nLet me know!\n'

        assert parse_program(reply, method_name="m").code == "result = 3"

    def test_a_call_answered_in_markdown_needs_one_request(self) -> None:
        """A prose-and-fence reply runs at the first request."""
        provider = FunctionProvider(
            lambda request: {"code": "Sure:\n```python\nresult = args[0] * 2\n```\n"}
        )

        outcome = Agent("t", provider=provider, log=False).run(21)

        assert (outcome.value, provider.calls) == (42, 1)


class TestFunctionProviderJsonReplies:
    """``FunctionProvider`` treats a JSON string of the reply schema as the reply."""

    def test_json_string_is_a_reply_not_code(self) -> None:
        """``'{"code": "result = 2"}'`` runs ``result = 2`` instead of evaluating a dict literal."""
        provider = FunctionProvider(lambda request: '{"code": "result = 2"}')
        assert Agent("t", provider=provider, log=False).run().value == 2
