"""``context``/``memory`` as generated code holds it: a dict private to one attempt.

:class:`MemoryView` routes every read through its journal, which copies a value on first
touch; :func:`writable` sends host writes made for generated code (``delegate()``
registering a tool) to the running attempt's view; :func:`redirect_unbound` keeps
``dict.get(view, key)`` and friends on the view's own methods.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Iterator
from typing import Any, Protocol

__all__ = [
    "ACTIVE",
    "REDIRECTED_DICT_METHODS",
    "MemoryView",
    "Toucher",
    "after_commit",
    "redirect_unbound",
    "writable",
]


class Toucher(Protocol):
    """What a view needs from its journal: the copy of a value on first touch."""

    def _touch(self, key: Any, value: Any) -> Any: ...  # pragma: no cover - a protocol

    def _touch_all(self) -> None: ...  # pragma: no cover - a protocol

    def _defer(self, action: Callable[[], None]) -> None: ...  # pragma: no cover - a protocol


class MemoryView(dict):  # type: ignore[type-arg]
    """``context``/``memory`` as generated code sees it: a dict, private to one attempt.

    Every way of reading a value (``[]``, ``get``, ``setdefault``, ``pop``, ``items``,
    ``values``, ``copy``, ``|``, ``==``, ``dict(view)``, ``{**view}``) goes through
    :meth:`__getitem__`, which copies a mutable value on first touch. ``__iter__`` is overridden
    so CPython's dict fast paths (which read the storage directly) fall back to these methods.
    """

    __slots__ = ("_journal",)
    _journal: Toucher

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("memory views are made by the runtime; build a plain dict instead")

    # -- reads: every value a read returns is the attempt's own copy

    def __getitem__(self, key: Any) -> Any:
        return self._journal._touch(key, dict.__getitem__(self, key))

    def get(self, key: Any, default: Any = None) -> Any:
        if dict.__contains__(self, key):
            return self[key]
        return default

    def setdefault(self, key: Any, default: Any = None) -> Any:
        if dict.__contains__(self, key):
            return self[key]
        dict.__setitem__(self, key, default)
        return default

    def pop(self, key: Any, *default: Any) -> Any:
        if dict.__contains__(self, key):
            value = self[key]
            dict.__delitem__(self, key)
            return value
        if default:
            return default[0]
        raise KeyError(key)

    def popitem(self) -> tuple[Any, Any]:
        if not dict.__len__(self):
            raise KeyError("popitem(): dictionary is empty")
        key = next(dict.__reversed__(self))
        return key, self.pop(key)

    def __iter__(self) -> Iterator[Any]:
        return dict.__iter__(self)

    def items(self) -> Any:
        self._journal._touch_all()
        return dict.items(self)

    def values(self) -> Any:
        self._journal._touch_all()
        return dict.values(self)

    def copy(self) -> dict[Any, Any]:
        self._journal._touch_all()
        return dict(dict.items(self))

    def __or__(self, other: Any) -> Any:
        if not isinstance(other, dict):
            return NotImplemented
        merged = self.copy()
        merged.update(other)
        return merged

    def __ror__(self, other: Any) -> Any:
        if not isinstance(other, dict):
            return NotImplemented
        merged = dict(other)
        merged.update(self.copy())
        return merged

    def __ior__(self, other: Any) -> MemoryView:
        self.update(other)
        return self

    def __eq__(self, other: object) -> bool:
        # Comparing values could hand an original to a generated __eq__: compare copies.
        self._journal._touch_all()
        return dict.__eq__(self, other)

    def __ne__(self, other: object) -> bool:
        self._journal._touch_all()
        return dict.__ne__(self, other)

    __hash__ = None

    # -- copying and pickling give a plain dict of the attempt's copies, never the journal

    def __copy__(self) -> dict[Any, Any]:
        return self.copy()

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[Any, Any]:
        import copy

        return copy.deepcopy(self.copy(), memo)

    def __reduce_ex__(self, protocol: Any) -> Any:
        return (dict, (self.copy(),))


# Attempts running in this context, as (memory id, view) pairs: host operations made on an
# attempt's behalf (delegate() registering a tool) write into that attempt's view.
ACTIVE: contextvars.ContextVar[tuple[tuple[int, MemoryView], ...]] = contextvars.ContextVar(
    "recurgent_active_views", default=()
)


def writable(memory: dict[str, Any]) -> dict[str, Any]:
    """Where a host operation run for generated code should write ``memory``.

    Inside an attempt of the agent that owns ``memory`` this is the attempt's view, so the
    write commits or rolls back with the attempt; anywhere else it is ``memory`` itself.
    """
    for owner, view in reversed(ACTIVE.get()):
        if owner == id(memory):
            return view
    return memory


def after_commit(memory: dict[str, Any], action: Callable[[], None]) -> bool:
    """Run ``action`` when the attempt now writing ``memory`` commits, never if it is rolled
    back; False when no attempt of that memory is active here (the caller acts at once).

    For effects outside memory that must follow the attempt (a tool registered on disk).
    ``action`` runs under the agent's memory lock and must not raise.
    """
    for owner, view in reversed(ACTIVE.get()):
        if owner == id(memory):
            view._journal._defer(action)
            return True
    return False


def redirect_unbound(name: str, method: Any) -> Any:
    """``dict.<name>`` as generated code gets it: on a view, the view's own method runs.

    ``dict.get(view, key)`` would otherwise read the view's storage directly and hand out an
    original container.
    """

    def unbound(obj: Any, *args: Any, **kwargs: Any) -> Any:
        if type(obj) is MemoryView:
            return getattr(obj, name)(*args, **kwargs)
        return method(obj, *args, **kwargs)

    unbound.__name__ = name
    unbound.__qualname__ = f"dict.{name}"
    return unbound


#: ``dict`` methods that read values: the attribute policy redirects their unbound forms.
REDIRECTED_DICT_METHODS = frozenset(
    {"get", "setdefault", "pop", "popitem", "items", "values", "copy"}
)
