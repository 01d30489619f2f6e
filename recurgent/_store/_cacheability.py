"""What may be reused: classifying a generated program as cacheable or not, and why (ADR 0037).

Runs when code comes from the provider (a fresh generation or a repair); a persisted run keeps
the artifact's classification. The first rule that matches wins:

1. ``ask``, ``chat``, ``discuss`` and ``host`` (any case) answer open requests: never reused
   (``dynamic_dispatch_method``).
2. The call had inputs, the code never reads ``args``/``kwargs`` and an input appears verbatim in
   it: the program answers only this input (``input_baked_code``).
3. The call had inputs and the code never reads ``args``/``kwargs``, or reads them but nothing
   it answers or does depends on them: the program ignores its inputs (``arg_ignored_code``).
4. The call had inputs and the walk deciding rule 3 gave up (``input_flow_unknown``): not
   reused, since a wrong reuse is the harm and a missed one costs a request.
5. The agent has a delegation contract: reusable (``delegated_contract_tool``).
6. Otherwise reusable (``stable_method_default``).

"Reads" means a name ``args``/``kwargs`` loaded in the program's syntax tree: the word in a
comment or a string (``return 5.65  # args``) does not count (ADR 0070). "Depends" is decided
by data flow from the inputs to the answer, memory writes, forwarded calls and network calls
(:mod:`._dataflow`, ADR 0078): ``_ = args`` or ``n = len(args)`` followed by a constant reads
the inputs and ignores them.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from recurgent._store._dataflow import input_flow
from recurgent.outcome import Outcome

__all__ = [
    "DYNAMIC_DISPATCH_METHODS",
    "Cacheability",
    "classify",
    "input_literals",
    "legacy_cacheable",
]

DYNAMIC_DISPATCH_METHODS = frozenset({"ask", "chat", "discuss", "host"})

_MAX_LITERALS = 256
_MAX_DEPTH = 16


@dataclass(frozen=True, slots=True)
class Cacheability:
    """Whether a program may run again for a later call, and why.

    Attributes:
        cacheable: It may be reused.
        reason: The rule that decided (see the module docstring).
        input_sensitive: The program depends on this call's inputs in a way reuse would get
            wrong.
    """

    cacheable: bool
    reason: str
    input_sensitive: bool


def _walk(value: Any, depth: int) -> Iterator[str]:
    if depth > _MAX_DEPTH or value is None:
        return
    if isinstance(value, Outcome):
        yield from _walk(value.value, depth + 1)
    elif isinstance(value, str):
        yield value.strip()
    elif isinstance(value, bool | int | float):
        yield str(value)
    elif isinstance(value, Mapping):
        for child in list(value.values()):
            yield from _walk(child, depth + 1)
    elif isinstance(value, list | tuple | set | frozenset):
        for child in list(value):
            yield from _walk(child, depth + 1)


def input_literals(args: tuple[Any, ...], kwargs: Mapping[str, Any]) -> list[str]:
    """The call's inputs as the text they would have if written into code.

    Strings are stripped; numbers and bools use ``str()``; lists, tuples, sets and mapping
    values are walked; Outcomes are unwrapped; keyword names and empty results are ignored.
    """
    found: list[str] = []
    for text in _walk([*args, *kwargs.values()], 0):
        if text and text not in found:
            found.append(text)
            if len(found) >= _MAX_LITERALS:
                break
    return found


def classify(
    method: str,
    code: str,
    args: tuple[Any, ...],
    kwargs: Mapping[str, Any],
    *,
    contracted: bool,
) -> Cacheability:
    """Classify the program ``code`` generated for ``method(*args, **kwargs)``."""
    if method.lower() in DYNAMIC_DISPATCH_METHODS:
        return Cacheability(False, "dynamic_dispatch_method", True)
    if args or kwargs:
        flow = input_flow(code)
        if flow == "unread" and any(literal in code for literal in input_literals(args, kwargs)):
            return Cacheability(False, "input_baked_code", True)
        if flow in ("unread", "ignored"):
            # A program that ignores its arguments answered this call from what it already
            # knew (memory, or the model's own answer written in as a constant, like a
            # translation): run again for other arguments it would give this call's answer.
            # Ruby reused it when it did not read memory either; that is the bug, not the rule.
            return Cacheability(False, "arg_ignored_code", True)
        if flow == "unknown":
            return Cacheability(False, "input_flow_unknown", True)
    if contracted:
        return Cacheability(True, "delegated_contract_tool", False)
    return Cacheability(True, "stable_method_default", False)


def legacy_cacheable(method: str) -> bool:
    """Cacheability of an artifact written without a boolean ``cacheable``: every method but the
    dynamic dispatch ones."""
    return method.lower() not in DYNAMIC_DISPATCH_METHODS
