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
from dataclasses import dataclass
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
    "FencedBlock",
    "Program",
    "check_syntax_bounds",
    "fenced_blocks",
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


# One fenced block filling the whole text, whitespace around it allowed: ```python\n...\n```
# (any info string, or none).
_FENCED = re.compile(
    r"\A\s*(`{3,}|~{3,})[ \t]*([\w+-]*)[^\n]*\n(.*?)\n?[ \t]*\1[ \t]*\s*\Z", re.DOTALL
)
# An opening fence on a line of its own: the fence and its info string.
_OPENING = re.compile(r"(`{3,}|~{3,})[ \t]*([^`\s]*)[^`]*\Z")
_PYTHON_TAGS = frozenset({"python", "py", "python3", "py3"})


@dataclass(frozen=True, slots=True)
class FencedBlock:
    """One Markdown code block of a reply: its info string (lower case) and its content."""

    info: str
    content: str


def fenced_blocks(text: str) -> list[FencedBlock]:
    """The fenced code blocks of ``text``, in order, in one pass over its lines.

    A block closes at a line holding only a fence of the same character, at least as long as
    the opening one; a block left open runs to the end of the text (a reply cut short). An
    indented fence's content is dedented by the fence's indentation.
    """
    blocks: list[FencedBlock] = []
    fence: str | None = None
    info = ""
    indent = 0
    body: list[str] = []
    for line in text.split("\n"):
        stripped = line.strip()
        if fence is None:
            opening = _OPENING.match(stripped)
            if opening is not None:
                fence, info = opening.group(1), opening.group(2).lower()
                indent = len(line) - len(line.lstrip())
                body = []
            continue
        if stripped.startswith(fence) and not stripped.strip(fence[0]):
            blocks.append(FencedBlock(info, _dedent(body, indent)))
            fence = None
        else:
            body.append(line)
    if fence is not None and body:
        blocks.append(FencedBlock(info, _dedent(body, indent).rstrip()))
    return blocks


def _dedent(lines: list[str], indent: int) -> str:
    if indent:
        lines = [line[indent:] if line[:indent].isspace() else line.lstrip() for line in lines]
    return "\n".join(lines)


def _parses(code: str) -> bool:
    try:
        parse_python(code, "<reply>")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return False
    return True


def unfence(text: str) -> str:
    """The program inside a reply's Markdown fences, else the text unchanged (ADR 0046, 0100).

    Models often send ```` ```python ... ``` ```` even when asked for bare code, with a newline
    after the closing fence or prose around the block (local models on the OpenAI-compatible
    path nearly always do). Text that is valid Python is never changed, so a fence inside a
    string literal stays. Otherwise the program is taken from the fenced blocks: the
    python-tagged ones (else the untagged ones, else all); of those, the longest that parses
    (a usage example next to the program is shorter), else the longest.
    """
    if "```" not in text and "~~~" not in text:
        return text
    blocks = fenced_blocks(text)
    whole = _FENCED.match(text)
    # One fence around everything is the common case; its content may itself hold a line of
    # backticks (in a string literal), which only the outermost pair of fences tells apart.
    if whole is not None and (len(blocks) == 1 or _parses(whole.group(3))):
        return whole.group(3)
    if _parses(text):
        return text
    candidates = (
        [block for block in blocks if block.info in _PYTHON_TAGS]
        or [block for block in blocks if not block.info]
        or blocks
    )
    if not candidates:
        return text
    parsing = [block for block in candidates if _parses(block.content)]
    return max(parsing or candidates, key=lambda block: len(block.content)).content


def _json_reply(text: str) -> Mapping[str, Any] | None:
    try:
        decoded = json.loads(text)
    except (ValueError, RecursionError):
        return None
    return decoded if isinstance(decoded, Mapping) and "code" in decoded else None


def reply_from_text(reply: object) -> object:
    """A reply sent as text: a JSON object of the reply schema, bare, fenced or in a fenced
    block among prose (a ``json``-tagged block first), else the reply as is."""
    if not isinstance(reply, str):
        return reply
    if reply.lstrip().startswith("{"):
        decoded = _json_reply(reply.strip())
        if decoded is not None:
            return decoded
    if "```" not in reply and "~~~" not in reply:
        return reply
    blocks = fenced_blocks(reply)
    blocks.sort(key=lambda block: block.info != "json")
    for block in blocks:
        if block.content.lstrip().startswith("{"):
            decoded = _json_reply(block.content.strip())
            if decoded is not None:
                return decoded
    return reply


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
