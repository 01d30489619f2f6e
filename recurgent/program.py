"""Program: what a provider returns (code plus pip dependencies), and validation of raw replies.

Replies are bounded before any deadline runs (ADR 0025): the code's length, then the size and
nesting of its syntax tree, are capped with a typed ``invalid_code`` error, so static checks and
compilation of one reply stay well under a second.
"""

from __future__ import annotations

import ast
import json
import re
from collections.abc import Mapping, Sequence
from importlib import resources
from typing import Any

from pydantic import BaseModel, ConfigDict

from recurgent._parsing import parse_python
from recurgent.errors import InvalidCodeError, InvalidDependencyManifestError

__all__ = [
    "MAX_CODE_CHARS",
    "MAX_SYNTAX_DEPTH",
    "MAX_SYNTAX_NODES",
    "PROGRAM_SCHEMA",
    "Dependency",
    "Program",
    "check_syntax_bounds",
    "parse_code",
    "parse_program",
    "reply_from_text",
    "unfence",
]

#: Longest ``code`` accepted, in characters. Generous for programs that embed data (a 150 KB
#: literal table is about 3,000 syntax nodes); static checks and compilation cost follows the node
#: count, which has its own cap.
MAX_CODE_CHARS = 200_000
#: Most syntax-tree nodes accepted: about 500 lines of ordinary code, ten times a typical reply.
#: Compiling under the sandbox policy costs roughly 0.1-0.3 ms per node.
MAX_SYNTAX_NODES = 6_000
#: Deepest syntax-tree nesting accepted. Ordinary code nests 10-30 levels; the policy transformer
#: and CPython's compiler recurse per level and overflow the stack a few hundred levels down.
MAX_SYNTAX_DEPTH = 100

# PEP 508 distribution names, compared in their PEP 503 normal form.
_NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$")

#: JSON schema of the reply every provider must fill (the Ruby runtime's ``execute_code`` tool).
#: It lives with the prompts, in ``recurgent/prompts/program_schema.json``; providers send it and
#: the runtime validates replies with :func:`parse_program`.
PROGRAM_SCHEMA: dict[str, Any] = json.loads(
    resources.files("recurgent").joinpath("prompts", "program_schema.json").read_text("utf-8")
)


class Dependency(BaseModel):
    """One pip requirement declared by a program."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    version: str | None = None


class Program(BaseModel):
    """A generated program: Python source, the pip packages it declares, what writing it cost.

    ``usage`` holds the provider request's token counts (``input_tokens``, ``output_tokens``,
    cached-input counts) when the provider reports them; see
    :func:`recurgent.providers.reply_usage`. ``model`` names the model that wrote it, when the
    provider says (a custom provider or a test double may set it; ADR 0077).
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    code: str
    dependencies: tuple[Dependency, ...] = ()
    usage: dict[str, int] | None = None
    model: str | None = None

    def __hash__(self) -> int:
        # The usage dict is unhashable; equal programs still hash equal without it.
        return hash((self.code, self.dependencies))


def _normalize_dependencies(raw: Any) -> tuple[Dependency, ...]:
    if raw is None:
        return ()
    if isinstance(raw, str | bytes) or not isinstance(raw, Sequence):
        raise InvalidDependencyManifestError(
            f"dependencies must be a list of {{name, version}} objects, got {type(raw).__name__}"
        )
    by_name: dict[str, Dependency] = {}
    for index, entry in enumerate(raw):
        if isinstance(entry, Dependency):
            entry = entry.model_dump()
        if not isinstance(entry, Mapping):
            raise InvalidDependencyManifestError(
                f"dependencies[{index}] must be an object with a 'name', got {type(entry).__name__}"
            )
        name = entry.get("name")
        if not isinstance(name, str) or not _NAME.match(name.strip()):
            raise InvalidDependencyManifestError(
                f"dependencies[{index}].name must be a package name, got {name!r}"
            )
        version = entry.get("version")
        if version is not None and (not isinstance(version, str) or not version.strip()):
            raise InvalidDependencyManifestError(
                f"dependencies[{index}].version must be a non-blank string or null, got {version!r}"
            )
        normal = re.sub(r"[-_.]+", "-", name.strip()).lower()
        dependency = Dependency(name=normal, version=version.strip() if version else None)
        previous = by_name.get(normal)
        if previous is not None and previous.version != dependency.version:
            raise InvalidDependencyManifestError(
                f"dependency {normal!r} conflicts with a prior declaration "
                f"({previous.version!r} vs {dependency.version!r})"
            )
        by_name[normal] = dependency
    return tuple(sorted(by_name.values(), key=lambda d: (d.name, d.version or "")))


# One fenced block filling the whole text: ```python\n...\n``` (any info string, or none).
_FENCED = re.compile(
    r"\A\s*(`{3,}|~{3,})[ \t]*([\w+-]*)[^\n]*\n(.*?)\n?[ \t]*\1[ \t]*\Z", re.DOTALL
)


def unfence(text: str) -> str:
    """The content of a Markdown code fence wrapping the whole text, else the text unchanged.

    Models often send ```` ```python ... ``` ```` even when asked for bare code; a fence inside
    the code (in a string literal) is left alone because the fence must wrap everything.
    """
    found = _FENCED.match(text)
    return found.group(3) if found else text


def reply_from_text(reply: object) -> object:
    """A reply sent as text: a (possibly fenced) JSON object of the reply schema, else as is."""
    if not isinstance(reply, str):
        return reply
    candidate = unfence(reply).strip()
    if not candidate.startswith("{"):
        return reply
    try:
        decoded = json.loads(candidate)
    except ValueError:
        return reply
    return decoded if isinstance(decoded, Mapping) and "code" in decoded else reply


def parse_program(reply: object, *, method_name: str) -> Program:
    """Validate a provider's reply into a :class:`Program`.

    Args:
        reply: A ``Program`` or a mapping with ``code`` and optional ``dependencies``.
        method_name: The method being generated, for error messages.

    Raises:
        InvalidCodeError: The reply is not an object or its code is missing, not a string, blank
            or longer than :data:`MAX_CODE_CHARS`.
        InvalidDependencyManifestError: ``dependencies`` is malformed.
    """
    if isinstance(reply, Program):
        # A provider may build a Program itself; its dependencies still get normalized.
        reply = reply.model_dump()
    reply = reply_from_text(reply)
    if not isinstance(reply, Mapping):
        raise InvalidCodeError(
            f"Provider returned invalid program for {method_name} "
            f"(provider returned {type(reply).__name__}; expected object)"
        )
    code = reply.get("code")
    if code is None:
        detail = "provider returned null `code`"
    elif not isinstance(code, str):
        detail = f"provider returned {type(code).__name__} for `code`"
    elif not code.strip():
        detail = "provider returned blank `code`"
    elif len(code) > MAX_CODE_CHARS:
        # Checked before anything walks the code: static checks and compilation of a huge reply
        # would run for seconds before any deadline starts (ADR 0025).
        raise InvalidCodeError(
            f"Provider returned invalid code for {method_name} (code is {len(code):,} "
            f"characters, over the limit of {MAX_CODE_CHARS:,}; write a shorter program that "
            "fetches or computes its data instead of embedding it)"
        )
    else:
        return Program(
            code=unfence(code), dependencies=_normalize_dependencies(reply.get("dependencies"))
        )
    raise InvalidCodeError(
        f"Provider returned invalid code for {method_name} ({detail}; expected non-empty str)"
    )


def check_syntax_bounds(tree: ast.AST) -> None:
    """Refuse a tree with more than :data:`MAX_SYNTAX_NODES` nodes or deeper than the depth cap.

    Iterative and stopping at the first excess, so it costs at most the cap, whatever the tree.

    Raises:
        InvalidCodeError: too many nodes or too deep; the message names the limit.
    """
    stack: list[tuple[ast.AST, int]] = [(tree, 1)]
    seen = 0
    while stack:
        node, depth = stack.pop()
        seen += 1
        if seen > MAX_SYNTAX_NODES:
            raise InvalidCodeError(
                f"Generated code is too large: more than {MAX_SYNTAX_NODES:,} syntax nodes; "
                "write a shorter program"
            )
        if depth > MAX_SYNTAX_DEPTH:
            raise InvalidCodeError(
                f"Generated code is nested too deeply: more than {MAX_SYNTAX_DEPTH} levels; "
                "split long expressions into statements"
            )
        stack.extend((child, depth + 1) for child in ast.iter_child_nodes(node))


def parse_code(code: str, *, filename: str = "<generated>", where: str = "") -> ast.Module:
    """Parse generated code into a tree within the size and nesting caps.

    Args:
        code: The program's source.
        filename: The filename compiled code reports.
        where: ``role.method`` or a method name for the message, if known.

    Raises:
        InvalidCodeError: over the length cap, a syntax error, nesting the parser itself cannot
            hold, or a tree over the caps of :func:`check_syntax_bounds`.
    """
    suffix = f" in {where}" if where else ""
    if len(code) > MAX_CODE_CHARS:
        raise InvalidCodeError(
            f"Generated code{suffix} is {len(code):,} characters, over the limit of "
            f"{MAX_CODE_CHARS:,}"
        )
    try:
        tree = parse_python(code, filename)
    except SyntaxError as error:
        raise InvalidCodeError(
            f"Generated code has invalid Python syntax{suffix}: line {error.lineno}: {error.msg}"
        ) from None
    except (RecursionError, MemoryError):
        # CPython's parser gives up on deep nesting with these instead of a SyntaxError.
        raise InvalidCodeError(
            f"Generated code{suffix} is nested too deeply to parse; split long expressions "
            "into statements"
        ) from None
    check_syntax_bounds(tree)
    return tree
