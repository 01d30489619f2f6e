"""Program: what a provider returns (code plus pip dependencies), and validation of raw replies."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from importlib import resources
from typing import Any

from pydantic import BaseModel, ConfigDict

from recurgent.errors import InvalidCodeError, InvalidDependencyManifestError

__all__ = ["PROGRAM_SCHEMA", "Dependency", "Program", "parse_program"]

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
    :func:`recurgent.providers.reply_usage`.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    code: str
    dependencies: tuple[Dependency, ...] = ()
    usage: dict[str, int] | None = None

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


def parse_program(reply: object, *, method_name: str) -> Program:
    """Validate a provider's reply into a :class:`Program`.

    Args:
        reply: A ``Program`` or a mapping with ``code`` and optional ``dependencies``.
        method_name: The method being generated, for error messages.

    Raises:
        InvalidCodeError: The reply is not an object or its code is missing, not a string or blank.
        InvalidDependencyManifestError: ``dependencies`` is malformed.
    """
    if isinstance(reply, Program):
        # A provider may build a Program itself; its dependencies still get normalized.
        reply = reply.model_dump()
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
    else:
        return Program(code=code, dependencies=_normalize_dependencies(reply.get("dependencies")))
    raise InvalidCodeError(
        f"Provider returned invalid code for {method_name} ({detail}; expected non-empty str)"
    )
