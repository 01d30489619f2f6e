"""Reachability audit: nothing generated code can hold leads into the runtime (issue 9, ADR 0021).

Host-side, the audit walks ``gc.get_referents`` transitively from every object generated code
can name in a fresh attempt (the public namespace, every vetted builtin) and from the facade of
every allowed module (so every served name), and fails if the walk reaches a module object, the
real builtins dict, an ``Agent``, an ``ExecutionSandbox``, its ``Ticker``, the
``AttributePolicy`` or the ``HostBridge``.

``gc.get_referents`` sees more than any attribute read, so the walk stops where the sandbox's
own rules already decide what the program may read, and says so:

* **classes** are leaves: attributes of classes are read only through the policy's class
  rules, never natively, so the walk does not enter a class's ``__dict__`` or ``__mro__``;
* **sealed runtime callables** (``SealedCallable``) are leaves: they have ``__slots__`` and
  no ``__dict__``, the policy reads nothing but their name, and copy/pickle is refused, which
  :class:`TestSealedCallables` pins;
* **functions and natives of the standard library** (code compiled from the stdlib directory,
  builtin functions, method descriptors) are leaves: their globals are the stdlib module's own,
  which no served helper reads for the program (``test_side_doors.py`` pins the helpers that
  used to);
* everything else is walked: instances, containers, closures, cells, bound methods, partials,
  and the ``__globals__`` of every function the runtime defined, which therefore must not be
  served unsealed.

Names starting with ``_`` in the namespace are the runtime's hooks: the compile policy refuses
every such name, so generated code cannot name them and they are not roots.
"""

from __future__ import annotations

import builtins
import collections
import datetime
import decimal
import fractions
import gc
import re
import sysconfig
import types
from collections.abc import Iterator
from typing import Any

import pytest

from recurgent import Agent
from recurgent._sandbox import ALLOWED_MODULES, ExecutionSandbox, HostBridge, SandboxLimits
from recurgent._sandbox._guards import AttributePolicy
from recurgent._sandbox._limits import Ticker
from recurgent._sandbox._reflection import SealedCallable
from recurgent.outcome import Outcome

from .support import Host, error_of

_STDLIB = sysconfig.get_paths()["stdlib"]
_SCALARS = (str, bytes, int, float, complex, bool, type(None))
_FORBIDDEN = (types.ModuleType, Agent, ExecutionSandbox, Ticker, AttributePolicy, HostBridge)
_NATIVE_CALLABLES = (
    types.BuiltinFunctionType,
    types.MethodDescriptorType,
    types.WrapperDescriptorType,
    types.MethodWrapperType,
    types.ClassMethodDescriptorType,
    types.GetSetDescriptorType,
    types.MemberDescriptorType,
)
_MAX_OBJECTS = 500_000


def _is_leaf(obj: Any) -> bool:
    if isinstance(obj, (type, SealedCallable, *_NATIVE_CALLABLES)):
        return True
    if isinstance(obj, types.FunctionType):
        return obj.__code__.co_filename.startswith(_STDLIB)
    return False


def _forbidden(obj: Any) -> bool:
    return isinstance(obj, _FORBIDDEN) or obj is vars(builtins)


def _referents(obj: Any) -> Iterator[tuple[Any, str]]:
    if isinstance(obj, dict):
        for key, value in list(obj.items()):
            yield key, f"[key {key!r}]"
            yield value, f"[{key!r}]"
        return
    for index, child in enumerate(gc.get_referents(obj)):
        yield child, f"<{type(obj).__name__} referent {index}: {type(child).__name__}>"


def _walk(roots: dict[str, Any], *, first_only: bool = False) -> list[str]:
    """Paths from a root to every forbidden object found (empty when the audit passes), or to
    the first one (``first_only``). Breadth first: a planted object near a root is found before
    the walk wanders into whatever the root's module reaches (pytest's session, in a full run)."""
    found: list[str] = []
    seen: set[int] = set()
    queue = collections.deque((value, name) for name, value in roots.items())
    keep_alive = []
    while queue:
        obj, path = queue.popleft()
        if type(obj) in _SCALARS or id(obj) in seen:
            continue
        seen.add(id(obj))
        keep_alive.append(obj)
        assert len(seen) < _MAX_OBJECTS, f"the walk grew past {_MAX_OBJECTS} objects at {path}"
        if _forbidden(obj):
            found.append(f"{path} -> {type(obj).__name__}")
            if first_only:
                return found
            continue
        if _is_leaf(obj):
            continue
        queue.extend((child, f"{path}{step}") for child, step in _referents(obj))
    return found


def _fresh_sandbox() -> ExecutionSandbox:
    return ExecutionSandbox(Host().bridge(), limits=SandboxLimits(timeout_seconds=5.0))


def _roots(sandbox: ExecutionSandbox) -> dict[str, Any]:
    namespace = sandbox._namespace
    roots = {name: value for name, value in namespace.items() if not name.startswith("_")}
    vetted = namespace["__builtins__"]
    roots.update({f"builtins.{name}": value for name, value in vetted.items()})
    importer = vetted["__import__"]._sealed_call
    for module in ALLOWED_MODULES:
        roots[f"import {module}"] = importer(module, None, None, ("*",), 0)
    return roots


_STAND_IN_MODULES = ("random", "decimal", "fractions", "string", "difflib")


def _attribute_roots(sandbox: ExecutionSandbox) -> dict[str, Any]:
    """What reading each public attribute of plain values and their classes hands the program."""
    read = sandbox._namespace["_getattr_"]
    samples: list[Any] = ["s", b"b", bytearray(b"b"), 7, 1.5, [1], (1,), {1: 2}, {1}]
    samples += [frozenset({1}), re.compile("a"), re.match("a", "a"), collections.Counter("ab")]
    samples += [decimal.Decimal(1), fractions.Fraction(1, 3), datetime.date(2026, 1, 1)]
    importer = sandbox._namespace["__builtins__"]["__import__"]
    stand_ins = {name: importer(name, None, None, ("*",), 0) for name in _STAND_IN_MODULES}
    samples += [
        stand_ins["random"].Random(1),
        stand_ins["decimal"].Decimal("1.5"),
        stand_ins["fractions"].Fraction(1, 3),
        stand_ins["string"].Template("$a"),
        stand_ins["difflib"].SequenceMatcher(None, "ab", "b"),
        Outcome.ok(1),
    ]
    roots = {}
    # A handle's own slot holds the host's operations (outside this audit); what reading its
    # attributes hands the program is audited.
    handle = sandbox._namespace["delegate"]("helper")
    for name in ("run", "remember", "role", "summarize"):
        roots[f"handle.{name}"] = read(handle, name)
    for sample in samples:
        for owner in (sample, type(sample)):
            for name in dir(owner):
                if name.startswith("_"):
                    continue
                try:
                    roots[f"{type(sample).__name__}.{name}"] = read(owner, name)
                except AttributeError:
                    continue
    return roots


class TestReachability:
    """No object generated code can hold leads to a module or a runtime object."""

    def test_namespace_builtins_and_served_names_reach_no_runtime_object(self) -> None:
        """The walk from every root of a fresh attempt finds no forbidden object."""
        assert _walk(_roots(_fresh_sandbox())) == []

    def test_attributes_of_plain_values_reach_no_runtime_object(self) -> None:
        """Checked methods (``str.format``...) and methods of served host classes are sealed."""
        roots = _attribute_roots(_fresh_sandbox())
        assert (len(roots) > 300, _walk(roots)) == (True, [])

    def test_every_allowed_module_is_a_root(self) -> None:
        """The audit covers the facade of every allowed module."""
        roots = _roots(_fresh_sandbox())
        assert sorted(name[7:] for name in roots if name.startswith("import ")) == sorted(
            ALLOWED_MODULES
        )

    @pytest.mark.parametrize(
        "planted",
        [
            pytest.param(lambda: types.ModuleType("x"), id="module"),
            pytest.param(lambda: vars(builtins), id="real-builtins"),
            pytest.param(lambda: _fresh_sandbox(), id="sandbox"),
            pytest.param(lambda: lambda: None, id="runtime-function-globals"),
        ],
    )
    def test_the_walk_finds_a_planted_runtime_object(self, planted: Any) -> None:
        """The audit is not vacuous: a forbidden object behind a container is found."""
        assert _walk({"planted": [{"inner": planted()}]}, first_only=True) != []


class TestSealedCallables:
    """The leaves the walk does not enter expose nothing to generated code."""

    @pytest.mark.parametrize(
        "attribute",
        ["_sealed_call", "__globals__", "__closure__", "__self__", "__wrapped__", "__dict__"],
    )
    def test_no_attribute_of_a_sealed_builtin_is_readable(self, attribute: str) -> None:
        """``getattr(range, name)`` is refused for every runtime-leading name."""
        kind, message = error_of(f"result = getattr(range, {attribute!r})")
        assert (kind, message.split(" is not accessible")[0]) == (
            "execution",
            f"Execution error in tester.run: AttributeError: {attribute!r}"
            + (" of SealedCallable objects" if attribute == "__dict__" else ""),
        )
        assert "names starting with '_' are private in the sandbox" in message

    def test_a_sealed_callable_has_no_instance_dict(self) -> None:
        """``SealedCallable`` has ``__slots__`` only: there is no ``__dict__`` to merge."""
        assert (hasattr(SealedCallable(len), "__dict__"), SealedCallable.__slots__) == (
            False,
            ("__name__", "__qualname__", "_sealed_call"),
        )

    @pytest.mark.parametrize("source", ["copy.copy(range)", "copy.deepcopy([range])"])
    def test_a_sealed_callable_cannot_be_copied(self, source: str) -> None:
        """copy refuses a sealed builtin instead of reducing it."""
        assert error_of(f"import copy\nresult = {source}") == (
            "execution",
            "Execution error in tester.run: TypeError: copy cannot copy SealedCallable objects "
            "in the sandbox; it copies plain data (containers, numbers, strings) and objects "
            "your code defined",
        )
