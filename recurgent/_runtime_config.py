"""Process-wide runtime settings: ``configure_runtime``, ``reset_runtime_config``, ``runtime_config``.

The original keeps one memoised table of switches (``Agent.runtime_config``) that turn its
evolutionary machinery on and off. This port keeps the same names and defaults (ADR 0076), with
three differences:

* a setting's value is resolved when it is read: an explicit ``configure_runtime`` value wins,
  else its ``RECURGENT_*`` variable, else the default. A notebook or a test that changes a
  variable sees the change at the next agent it builds, without a reset;
* an unknown setting and a bad value (from code or from the environment) are a ``UsageError``
  that names the setting; the original silently read a misspelt boolean as false;
* an agent captures the settings once, when it is built (its delegates take the parent's), so
  a setting changed mid-session never changes an agent that is already running.

Only this module and ``_options`` read ``RECURGENT_*`` switches (ADR 0005).
"""

from __future__ import annotations

import math
import os
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, fields, replace
from types import MappingProxyType
from typing import Any, Literal

from recurgent._forksafe import fork_safe_lock
from recurgent._os_user import os_user_name
from recurgent._repr import safe_repr
from recurgent.errors import UsageError

__all__ = [
    "SETTING_NAMES",
    "RuntimeSettings",
    "configure_runtime",
    "current_settings",
    "inherited_settings",
    "reset_runtime_config",
    "runtime_config",
    "with_settings",
]

Isolation = Literal["in_process", "process"]
_TRUE = frozenset({"1", "true", "yes", "on"})
_FALSE = frozenset({"0", "false", "no", "off"})


@dataclass(frozen=True, slots=True)
class RuntimeSettings:
    """Every runtime switch with its value (the README's table lists them with their defaults).

    Attributes:
        solver_shape_capture_enabled: Log each call's solver shape (``solver_shape_*``).
        self_model_capture_enabled: Keep ``Agent.self_model`` and log its fields.
        promotion_shadow_mode_enabled: Evaluate each code version's lifecycle and keep the
            decision ledger (no effect on which version runs).
        promotion_enforcement_enabled: Let the lifecycle choose which stored version runs.
        role_profile_shadow_mode_enabled: Compare each call with the active role profile and log
            the report.
        role_profile_enforcement_enabled: A role-profile violation is a guardrail failure.
        content_store_max_entries: Answers kept per agent for ``content(ref)``.
        content_store_max_bytes: Bytes of answers kept per agent.
        content_store_ttl_seconds: Seconds an answer is kept (``None``: no expiry).
        content_store_nested_capture_enabled: Keep answers of nested (depth > 0) calls too.
        content_store_store_error_payloads: Keep error outcomes' payloads too.
        authority_enforcement_enabled: Only maintainers approve, reject and apply proposals.
        authority_maintainers: The user names that count as maintainers (lower case).
        isolation: The default ``isolation`` of agents built without the option.
    """

    solver_shape_capture_enabled: bool = True
    self_model_capture_enabled: bool = True
    promotion_shadow_mode_enabled: bool = True
    promotion_enforcement_enabled: bool = False
    role_profile_shadow_mode_enabled: bool = True
    role_profile_enforcement_enabled: bool = False
    content_store_max_entries: int = 128
    content_store_max_bytes: int = 2_097_152
    content_store_ttl_seconds: float | None = None
    content_store_nested_capture_enabled: bool = False
    content_store_store_error_payloads: bool = False
    authority_enforcement_enabled: bool = True
    authority_maintainers: tuple[str, ...] = ()
    isolation: Isolation = "in_process"

    def as_mapping(self) -> Mapping[str, Any]:
        """The settings as a read-only mapping, in declaration order."""
        return MappingProxyType({name: getattr(self, name) for name in SETTING_NAMES})


SETTING_NAMES: tuple[str, ...] = tuple(f.name for f in fields(RuntimeSettings))


def _shown(value: Any) -> str:
    return safe_repr(value, limit=80)


def _bool(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if type(value) is int and value in (0, 1):
        # The error below offers 1 and 0: the numbers are taken as the words are.
        return value == 1
    if isinstance(value, str):
        word = value.strip().lower()
        if word in _TRUE:
            return True
        if word in _FALSE:
            return False
    raise UsageError(
        f"{name} must be True or False (or one of 1/true/yes/on, 0/false/no/off), "
        f"got {_shown(value)}"
    )


def _positive_int(name: str, value: Any) -> int:
    if isinstance(value, str):
        try:
            value = int(value.strip(), 10)
        except ValueError:
            pass
    if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
        raise UsageError(f"{name} must be an int > 0, got {_shown(value)}")
    return value


def _ttl(name: str, value: Any) -> float | None:
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    if isinstance(value, str):
        try:
            value = float(value.strip())
        except ValueError:
            pass
    if (
        isinstance(value, bool)
        or not isinstance(value, int | float)
        or not math.isfinite(value)
        or value <= 0
    ):
        raise UsageError(f"{name} must be a number of seconds > 0 or None, got {_shown(value)}")
    return float(value)


class MaintainerNames(tuple[str, ...]):
    """The maintainers' names: a tuple (the settings are read-only) that also equals a list of
    the same names, the original's value (an Array), as the issue's "defaults as in the
    original" reads (ADR 0128)."""

    __slots__ = ()

    def __eq__(self, other: object) -> bool:
        # NotImplemented for anything else, so the other operand still has its say.
        return tuple.__eq__(self, tuple(other) if isinstance(other, list) else other)

    def __ne__(self, other: object) -> bool:
        equal = self.__eq__(other)
        return equal if equal is NotImplemented else not equal

    __hash__ = tuple.__hash__


def _maintainers(name: str, value: Any) -> tuple[str, ...]:
    if value is None:
        return MaintainerNames()
    items: Iterable[Any]
    if isinstance(value, str):
        items = value.split(",")
    elif isinstance(value, list | tuple | set | frozenset):
        items = value
    else:
        raise UsageError(f"{name} must be a list of user names or a comma-separated str")
    names: list[str] = []
    for item in items:
        if not isinstance(item, str):
            raise UsageError(f"{name} must hold user names (str), got {_shown(item)}")
        cleaned = item.strip().lower()
        if cleaned and cleaned not in names:
            names.append(cleaned)
    return MaintainerNames(names)


def _isolation(name: str, value: Any) -> Isolation:
    cleaned = value.strip() if isinstance(value, str) else value
    if cleaned == "in_process":
        return "in_process"
    if cleaned == "process":
        return "process"
    raise UsageError(f"{name} must be 'in_process' or 'process', got {_shown(value)}")


_PARSERS: dict[str, Callable[[str, Any], Any]] = {
    "content_store_max_entries": _positive_int,
    "content_store_max_bytes": _positive_int,
    "content_store_ttl_seconds": _ttl,
    "authority_maintainers": _maintainers,
    "isolation": _isolation,
}


def _parse(name: str, value: Any) -> Any:
    parser: Callable[[str, Any], Any] = _PARSERS.get(name, _bool)
    return parser(name, value)


def _default(name: str) -> Any:
    if name == "authority_maintainers":
        return _maintainers(name, os_user_name())
    return getattr(_DEFAULTS, name)


_DEFAULTS = RuntimeSettings()
_lock = fork_safe_lock()
_overrides: dict[str, Any] = {}


def _env_name(name: str) -> str:
    return "RECURGENT_" + name.upper()


def _resolve(name: str) -> Any:
    if name in _overrides:
        return _overrides[name]
    variable = _env_name(name)
    raw = os.environ.get(variable)
    if raw is None or not raw.strip():
        return _default(name)
    try:
        return _parse(name, raw)
    except UsageError as bad:
        raise UsageError(f"environment variable {variable}: {bad.message}") from None


# Set while a parent builds a child agent: the child takes the parent's captured settings.
_inherited: ContextVar[RuntimeSettings | None] = ContextVar("recurgent_settings", default=None)


@contextmanager
def inherited_settings(settings: RuntimeSettings) -> Iterator[None]:
    """Agents built inside this block capture ``settings`` (a delegate takes its parent's)."""
    token = _inherited.set(settings)
    try:
        yield
    finally:
        _inherited.reset(token)


def current_settings() -> RuntimeSettings:
    """The settings an agent built now captures.

    Inside :func:`inherited_settings` the given settings; else ``configure_runtime`` values,
    else ``RECURGENT_*`` variables, else the defaults.

    Raises:
        UsageError: a ``RECURGENT_*`` variable holds a value its setting does not accept.
    """
    inherited = _inherited.get()
    return inherited if inherited is not None else _process_settings()


def _process_settings() -> RuntimeSettings:
    with _lock:
        return RuntimeSettings(**{name: _resolve(name) for name in SETTING_NAMES})


def configure_runtime(**settings: Any) -> Mapping[str, Any]:
    """Set process-wide runtime switches; agents built afterwards use them.

    Every setting is also read from its ``RECURGENT_<NAME>`` variable when not set here
    (booleans accept ``1/true/yes/on`` and ``0/false/no/off``). Passing ``None`` for a setting
    other than ``content_store_ttl_seconds`` and ``authority_maintainers`` clears what an
    earlier call set. Returns the resulting settings (as :func:`runtime_config`).

    Raises:
        UsageError: an unknown setting or a value it does not accept; nothing is changed then.
    """
    unknown = sorted(set(settings) - set(SETTING_NAMES))
    if unknown:
        raise UsageError(
            f"Unknown runtime setting(s): {', '.join(unknown)}. "
            f"Known settings: {', '.join(SETTING_NAMES)}"
        )
    parsed: dict[str, Any] = {}
    cleared: list[str] = []
    for name, value in settings.items():
        if value is None and name not in ("content_store_ttl_seconds", "authority_maintainers"):
            cleared.append(name)
        else:
            parsed[name] = _parse(name, value)
    with _lock:
        for name in cleared:
            _overrides.pop(name, None)
        _overrides.update(parsed)
    return runtime_config()


def reset_runtime_config() -> None:
    """Forget every ``configure_runtime`` value: variables and defaults apply again."""
    with _lock:
        _overrides.clear()


def runtime_config() -> Mapping[str, Any]:
    """Every runtime setting with its current value, as a read-only mapping.

    Raises:
        UsageError: a ``RECURGENT_*`` variable holds a value its setting does not accept.
    """
    return _process_settings().as_mapping()


def with_settings(base: RuntimeSettings, **changes: Any) -> RuntimeSettings:
    """``base`` with some settings changed, each checked (used by applied proposals)."""
    return replace(base, **{name: _parse(name, value) for name, value in changes.items()})
