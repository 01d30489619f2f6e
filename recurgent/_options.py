"""AgentOptions: every agent option, its default, its validation, and what delegates inherit.

This and the OpenAI provider are the only places that read the environment (ADR 0005).
"""

from __future__ import annotations

import math
import os
import secrets
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from recurgent._contracts import CONTRACT_FIELDS, ContractSource, compose_contract
from recurgent._hosts import host_entry_covered, normalize_host_entry
from recurgent._log_path import default_log_path
from recurgent._profiles._model import normalize_profile, normalize_version
from recurgent._repr import safe_repr
from recurgent._runtime_config import RuntimeSettings, current_settings
from recurgent._store._paths import default_root
from recurgent._worker._manifest import DependencyPolicy
from recurgent.errors import UsageError
from recurgent.providers import Provider, resolve_provider
from recurgent.providers._identity import is_test_double

__all__ = [
    "DEFAULT_MODEL",
    "HOST_ONLY_OPTIONS",
    "NARROWING_OPTIONS",
    "AgentOptions",
    "NetworkPolicy",
    "default_log_path",
    "parse_options",
]

DEFAULT_MODEL = "gpt-4.1-mini"
NetworkPolicy = Literal["allow", "deny"] | tuple[str, ...]
Isolation = Literal["in_process", "process"]
_POLICY_KEYS = frozenset({"index_urls", "source_mode", "allowed_packages", "blocked_packages"})

# Options a delegate takes over from its parent unless the delegate call overrides them.
_INHERITED = (
    "provider",
    "model",
    "log",
    "debug",
    "verbose",
    "max_generation_attempts",
    "guardrail_recovery_budget",
    "fresh_outcome_repair_budget",
    "provider_timeout_seconds",
    "execution_timeout_seconds",
    "trace_id",
    "network",
    "forwarded_call_budget",
    "toolstore_root",
    "isolation",
    "dependency_policy",
    "environment_cache_root",
)
# Inherited but never overridden by a delegate call: generated code calls delegate() too, and a
# program must not choose where programs are stored and loaded from (ADR 0047), which packages
# and indexes its environment may use, or its own confinement (ADR 0042).
_NOT_OVERRIDABLE = frozenset(
    {"toolstore_root", "isolation", "dependency_policy", "environment_cache_root"}
)
_RUNTIME_OPTIONS = (*_INHERITED, "delegation_budget")
# A role profile is its role's: never inherited, but the host may give a child one (ADR 0083).
_PROFILE_OPTIONS = ("role_profile", "role_profile_version")
KNOWN_OPTIONS = frozenset(
    (*_RUNTIME_OPTIONS, *_PROFILE_OPTIONS, *CONTRACT_FIELDS, "delegation_contract")
)
#: Limits generated code may pass to ``delegate``/``tool``, and only to narrow them (ADR 0024).
NARROWING_OPTIONS = (
    "network",
    "execution_timeout_seconds",
    "provider_timeout_seconds",
    "forwarded_call_budget",
)
#: Runtime options that only the host sets: generated code passing one is refused (ADR 0024).
HOST_ONLY_OPTIONS = (frozenset(_RUNTIME_OPTIONS) - frozenset(NARROWING_OPTIONS)) | frozenset(
    _PROFILE_OPTIONS
)
_UNSET: Any = object()


@dataclass(frozen=True, slots=True)
class AgentOptions:
    """Validated, immutable options of one agent (see the README's option table)."""

    provider: Provider | None
    model: str
    log: Path | None
    debug: bool
    verbose: bool
    max_generation_attempts: int
    guardrail_recovery_budget: int
    fresh_outcome_repair_budget: int
    provider_timeout_seconds: float | None
    execution_timeout_seconds: float
    delegation_budget: int | None
    trace_id: str
    network: NetworkPolicy
    forwarded_call_budget: int
    toolstore_root: Path | None
    isolation: Isolation
    dependency_policy: DependencyPolicy
    environment_cache_root: Path | None
    contract: Mapping[str, Any] | None
    contract_source: ContractSource
    #: The runtime settings captured when the agent was built (ADR 0076); delegates share them.
    settings: RuntimeSettings = field(default_factory=RuntimeSettings)
    #: The ``role_profile=`` option, checked (ADR 0083); its role is checked by the agent.
    role_profile: Mapping[str, Any] | None = None
    #: The ``role_profile_version=`` option.
    role_profile_version: int | None = None
    #: Whether ``toolstore_root`` was given as an option (ADR 0077): a default root is resolved
    #: again by each delegate, so a test double never persists into it.
    toolstore_root_explicit: bool = True

    def for_delegate(self, overrides: Mapping[str, Any]) -> dict[str, Any]:
        """Options for a child: inherited values, the budget minus one, then ``overrides``."""
        inherited: dict[str, Any] = {name: getattr(self, name) for name in _INHERITED}
        inherited["log"] = self.log if self.log is not None else False
        if self.delegation_budget is None:
            inherited["delegation_budget"] = None
        else:
            inherited["delegation_budget"] = self.delegation_budget - 1
        inherited.update(
            {
                k: v
                for k, v in overrides.items()
                if (k in _RUNTIME_OPTIONS and k not in _NOT_OVERRIDABLE) or k in _PROFILE_OPTIONS
            }
        )
        if not self.toolstore_root_explicit:
            del inherited["toolstore_root"]
        return inherited

    def narrowing_refusals(self, requested: Mapping[str, Any]) -> list[str]:
        """Why each runtime option generated code passed to a child is refused (ADR 0024).

        Generated code is written by an attacker, so it may only narrow what its agent has:
        a stricter ``network`` policy and lower limits. Host-only options are always refused.
        An empty list means ``requested`` may be applied as overrides.
        """
        refusals = [
            f"{name} is set by the host, never by generated code"
            for name in sorted(HOST_ONLY_OPTIONS & set(requested))
        ]
        for name in NARROWING_OPTIONS:
            if name in requested:
                reason = self._widening(name, requested[name])
                if reason is not None:
                    # The value comes from generated code: a huge one must not flood the log,
                    # nor be written out whole first (2 300 ints of 4 299 digits: 0.5 s in one
                    # C call, red team R14).
                    refusal = f"{name}={_shown(requested[name])} {reason}"
                    refusals.append(refusal if len(refusal) <= 500 else refusal[:497] + "...")
        return refusals

    def _widening(self, name: str, value: Any) -> str | None:
        try:
            if name == "network":
                return _wider_network(self.network, _network(value))
            if name == "forwarded_call_budget":
                wanted: float | None = _int_option(name, value, 1)
                limit: float | None = self.forwarded_call_budget
            elif name == "execution_timeout_seconds":
                wanted = _seconds(name, value, low=1, high=600, nullable=False)
                limit = self.execution_timeout_seconds
            else:
                wanted = _seconds(name, value, low=0, high=None, nullable=True)
                limit = self.provider_timeout_seconds
        except UsageError as invalid:
            return f"is invalid: {invalid.message}"
        if limit is None or (wanted is not None and wanted <= limit):
            return None
        return f"exceeds this agent's {name}={limit:g}; a child may only lower it"


def _shown(value: Any) -> str:
    """A value for an error message: bounded, redacted, and safe for any object (10 ** 5000)."""
    return safe_repr(value, limit=200)


def _flag(name: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise UsageError(f"{name} must be True or False, got {_shown(value)}")
    return value


def _int_option(name: str, value: Any, minimum: int, *, nullable: bool = False) -> int | None:
    if value is None and nullable:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        suffix = " or None" if nullable else ""
        raise UsageError(f"{name} must be an int >= {minimum}{suffix}, got {_shown(value)}")
    return value


def _seconds(
    name: str, value: Any, *, low: float, high: float | None, nullable: bool
) -> float | None:
    if value is None and nullable:
        return None
    number = math.nan
    if not isinstance(value, bool) and isinstance(value, int | float):
        try:
            number = float(value)
        except OverflowError:  # an int beyond float range, e.g. 10 ** 400
            number = math.nan
    valid = math.isfinite(number) and (number > low if high is None else low <= number <= high)
    if not valid:
        bound = f"> {low:g}" if high is None else f"between {low:g} and {high:g}"
        raise UsageError(
            f"{name} must be a finite number {bound}{' or None' if nullable else ''}, "
            f"got {_shown(value)}"
        )
    return number


def _log_path(value: Any) -> Path | None:
    if value is None or value is False:
        return None
    if value is True:
        path = default_log_path()
    elif isinstance(value, os.PathLike) or (isinstance(value, str) and value.strip()):
        try:
            path = Path(value).expanduser()
        except (TypeError, ValueError, RuntimeError) as error:
            raise UsageError(f"log must be a file path, got {_shown(value)}: {error}") from None
    else:
        raise UsageError(f"log must be a path, None or False, got {_shown(value)}")
    _check_log_target(path)
    return path


def _check_log_target(path: Path) -> None:
    """Refuse a log target no line could ever be appended to (ADR 0032).

    A regular file (existing or not) and a character device (``/dev/null``, a terminal) are
    fine; a directory, a FIFO (opening it would block the call), a socket or a path under a
    non-directory are not.
    """
    try:
        mode = path.stat().st_mode
    except FileNotFoundError:
        mode = None
    except OSError as error:
        raise UsageError(f"log={str(path)!r} cannot be used: {error.strerror or error}") from None
    if mode is None:
        parent = next((p for p in path.parents if p.exists()), None)
        if parent is not None and not parent.is_dir():
            raise UsageError(
                f"log={str(path)!r} cannot be created: {str(parent)!r} is not a directory"
            )
        return
    if stat.S_ISREG(mode) or stat.S_ISCHR(mode):
        return
    kind = "a directory" if stat.S_ISDIR(mode) else "not a regular file"
    raise UsageError(
        f"log={str(path)!r} is {kind}; pass the path of a JSONL file "
        "(e.g. log='calls.jsonl'), or log=False to turn the call log off"
    )


def _toolstore_root(value: Any, provider: Provider | None) -> Path | None:
    if value is _UNSET:
        # A test double persists only where it is told to (ADR 0077): never into the user's
        # store, wherever RECURGENT_TOOLSTORE_ROOT or XDG_STATE_HOME put it.
        return None if is_test_double(provider) else default_root()
    if value is None:
        return None
    if isinstance(value, os.PathLike) or (isinstance(value, str) and value.strip()):
        return Path(value).expanduser()
    raise UsageError(f"toolstore_root must be a path or None, got {value!r}")


def _isolation(value: Any) -> Isolation:
    if value in ("in_process", "process"):
        return value  # type: ignore[no-any-return]
    raise UsageError(f"isolation must be 'in_process' or 'process', got {_shown(value)}")


def _dependency_policy(value: Any) -> DependencyPolicy:
    """``None``, a ``DependencyPolicy``, or a mapping of its fields (ADR 0042)."""
    if value is None:
        return DependencyPolicy()
    if isinstance(value, DependencyPolicy):
        return value
    if not isinstance(value, Mapping):
        raise UsageError(
            f"dependency_policy must be a mapping with keys {sorted(_POLICY_KEYS)}, "
            f"got {_shown(value)}"
        )
    unknown = sorted(map(str, set(value) - _POLICY_KEYS))
    if unknown:
        raise UsageError(
            f"dependency_policy has unknown key(s) {unknown}; known: {sorted(_POLICY_KEYS)}"
        )
    try:
        return DependencyPolicy.build(**value)
    except (TypeError, AttributeError) as error:
        raise UsageError(f"dependency_policy is malformed: {error}") from None


def _cache_root(value: Any) -> Path | None:
    if value is None:
        return None
    if isinstance(value, os.PathLike) or (isinstance(value, str) and value.strip()):
        return Path(value).expanduser()
    raise UsageError(f"environment_cache_root must be a path or None, got {_shown(value)}")


def _network(value: Any) -> NetworkPolicy:
    if value in ("allow", "deny"):
        return value  # type: ignore[no-any-return]
    if isinstance(value, list | tuple | set | frozenset) and value:
        return tuple(sorted({normalize_host_entry(entry) for entry in value}))
    raise UsageError(f"network must be 'allow', 'deny' or a list of host names, got {value!r}")


def _wider_network(parent: NetworkPolicy, child: NetworkPolicy) -> str | None:
    """Why ``child`` reaches something ``parent`` does not, or None when it is narrower."""
    if parent == "allow" or child == "deny":
        return None
    if parent == "deny" or child == "allow":
        return f"widens this agent's network={parent!r}; a child may only narrow it"
    assert isinstance(parent, tuple) and isinstance(child, tuple)
    outside = [entry for entry in child if not host_entry_covered(parent, entry)]
    if outside:
        return (
            f"reaches {', '.join(outside)} outside this agent's allow-list "
            f"{list(parent)!r}; a child may only narrow it"
        )
    return None


def parse_options(options: Mapping[str, Any]) -> AgentOptions:
    """Validate keyword options given to ``Agent``/``Agent.for_``.

    Raises:
        UsageError: an unknown option, or a value out of range (the message names both).
    """
    unknown = sorted(set(options) - KNOWN_OPTIONS)
    if unknown:
        raise UsageError(
            f"Unknown option(s) for Agent: {', '.join(map(repr, unknown))}. "
            f"Known options: {', '.join(sorted(KNOWN_OPTIONS))}"
        )
    get = options.get
    model = get("model")
    if model is None:
        model = os.environ.get("RECURGENT_MODEL", "").strip() or DEFAULT_MODEL
    elif not isinstance(model, str) or not model.strip():
        raise UsageError(f"model must be a non-empty str, got {_shown(model)}")
    trace_id = get("trace_id")
    if trace_id is None:
        trace_id = secrets.token_hex(12)
    elif not isinstance(trace_id, str) or not trace_id.strip():
        raise UsageError(f"trace_id must be a non-empty str, got {_shown(trace_id)}")
    settings = current_settings()
    contract, source = compose_contract(
        get("delegation_contract"), {name: get(name) for name in CONTRACT_FIELDS}
    )
    provider = resolve_provider(get("provider"))
    return AgentOptions(
        provider=provider,
        model=model.strip(),
        # A test double logs only where it is told to, as it persists (ADR 0127).
        log=_log_path(get("log", not is_test_double(provider))),
        debug=_flag("debug", get("debug", False)),
        verbose=_flag("verbose", get("verbose", False)),
        max_generation_attempts=_int_option(  # type: ignore[arg-type]
            "max_generation_attempts", get("max_generation_attempts", 2), 1
        ),
        guardrail_recovery_budget=_int_option(  # type: ignore[arg-type]
            "guardrail_recovery_budget", get("guardrail_recovery_budget", 1), 0
        ),
        fresh_outcome_repair_budget=_int_option(  # type: ignore[arg-type]
            "fresh_outcome_repair_budget", get("fresh_outcome_repair_budget", 1), 0
        ),
        provider_timeout_seconds=_seconds(
            "provider_timeout_seconds",
            get("provider_timeout_seconds", 120.0),
            low=0,
            high=None,
            nullable=True,
        ),
        execution_timeout_seconds=_seconds(  # type: ignore[arg-type]
            "execution_timeout_seconds",
            get("execution_timeout_seconds", 30.0),
            low=1,
            high=600,
            nullable=False,
        ),
        delegation_budget=_int_option(
            "delegation_budget", get("delegation_budget", 8), 0, nullable=True
        ),
        trace_id=trace_id.strip(),
        network=_network(get("network", "allow")),
        forwarded_call_budget=_int_option(  # type: ignore[arg-type]
            "forwarded_call_budget", get("forwarded_call_budget", 200), 1
        ),
        toolstore_root=_toolstore_root(get("toolstore_root", _UNSET), provider),
        isolation=_isolation(get("isolation", settings.isolation)),
        dependency_policy=_dependency_policy(get("dependency_policy")),
        environment_cache_root=_cache_root(get("environment_cache_root")),
        contract=contract,
        contract_source=source,
        settings=settings,
        role_profile=_role_profile(get("role_profile")),
        role_profile_version=_role_profile_version(get("role_profile_version")),
        toolstore_root_explicit="toolstore_root" in options,
    )


def _role_profile(value: Any) -> Mapping[str, Any] | None:
    return None if value is None else normalize_profile(value)


def _role_profile_version(value: Any) -> int | None:
    if value is None:
        return None
    version = normalize_version(value)
    if version is None:
        raise UsageError(f"role_profile_version must be an int >= 1, got {_shown(value)}")
    return version
