"""Dependency manifests: normalising declared packages, growing an agent's manifest, the policy.

A manifest is what a program asks pip for. Only plain PyPI distribution names with PEP 440
specifiers are accepted: extras, URLs, paths and markers are supply-chain escapes a model that
read hostile text could use to point the installer at code of the attacker's choosing (ADR 0039).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlparse

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.utils import canonicalize_name

from recurgent.errors import (
    DependencyManifestIncompatibleError,
    DependencyPolicyViolationError,
    InvalidDependencyManifestError,
    UsageError,
)

__all__ = [
    "ANY_VERSION",
    "SOURCE_MODES",
    "DependencyPolicy",
    "EffectiveManifest",
    "ManifestEntry",
    "grow_manifest",
    "normalize_manifest",
]

#: The specifier of a dependency declared without a version.
ANY_VERSION = ">=0"
#: ``pip_config``: no index flags at all, so the user's pip configuration (a private index) rules.
SOURCE_MODES = ("pip_config", "public_only", "internal_only", "internal_then_public")

# PEP 508 names; anything else (``pkg[extra]``, ``pkg @ url``, ``./path``, ``pkg; marker``) fails.
_NAME = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9._-]*[A-Za-z0-9])?$")
_PUBLIC_HOSTS = frozenset({"pypi.org", "files.pythonhosted.org", "pypi.python.org"})


@dataclass(frozen=True, slots=True, order=True)
class ManifestEntry:
    """One normalised requirement: a PEP 503 name and a PEP 440 specifier set as written."""

    name: str
    version: str = ANY_VERSION

    def requirement(self) -> str:
        """The line pip reads, e.g. ``python-dateutil>=2.8``."""
        return f"{self.name}{self.version}"

    def as_dict(self) -> dict[str, str]:
        """Plain data for logs and persisted artifacts."""
        return {"name": self.name, "version": self.version}


def _entry(raw: Any, index: int) -> ManifestEntry:
    if hasattr(raw, "model_dump"):
        raw = raw.model_dump()
    if not isinstance(raw, Mapping):
        raise InvalidDependencyManifestError(
            f"dependencies[{index}] must be an object with a 'name', got {type(raw).__name__}"
        )
    unknown = sorted(str(key) for key in raw if key not in ("name", "version"))
    if unknown:
        raise InvalidDependencyManifestError(
            f"dependencies[{index}] has unknown keys {unknown}; only 'name' and 'version' are read"
        )
    name = raw.get("name")
    if not isinstance(name, str) or not name.strip():
        raise InvalidDependencyManifestError(
            f"dependencies[{index}].name must be a non-empty string, got {name!r}"
        )
    if not _NAME.match(name.strip()):
        raise InvalidDependencyManifestError(
            f"dependencies[{index}].name is invalid: {name!r} (a plain package name; extras, "
            "URLs, paths and markers are refused)"
        )
    version = raw.get("version")
    if version is None:
        spec = ANY_VERSION
    elif not isinstance(version, str) or not version.strip():
        raise InvalidDependencyManifestError(
            f"dependencies[{index}].version must be a non-empty string when provided, "
            f"got {version!r}"
        )
    else:
        spec = version.strip()
        if ";" in spec or "@" in spec:
            raise InvalidDependencyManifestError(
                f"dependencies[{index}].version is invalid: {version!r} (markers and URLs "
                "are refused)"
            )
        try:
            SpecifierSet(spec)
        except InvalidSpecifier:
            raise InvalidDependencyManifestError(
                f"dependencies[{index}].version is invalid: {version!r} (expected a PEP 440 "
                "specifier such as '>=2.8' or '~=1.16')"
            ) from None
    return ManifestEntry(name=canonicalize_name(name.strip()), version=spec)


def normalize_manifest(raw: Any) -> tuple[ManifestEntry, ...]:
    """Normalise declared dependencies into a sorted tuple of entries.

    Args:
        raw: ``None``, or a list of ``{"name", "version"}`` mappings (or ``Dependency`` models).

    Raises:
        InvalidDependencyManifestError: the shape, a name or a specifier is refused, or one
            package is declared twice with different versions.
    """
    if raw is None:
        return ()
    if isinstance(raw, str | bytes) or not isinstance(raw, Sequence):
        raise InvalidDependencyManifestError(
            f"dependencies must be a list of {{name, version}} objects, got {type(raw).__name__}"
        )
    by_name: dict[str, ManifestEntry] = {}
    for index, item in enumerate(raw):
        entry = _entry(item, index)
        previous = by_name.get(entry.name)
        if previous is not None and previous.version != entry.version:
            raise InvalidDependencyManifestError(
                f"dependencies[{index}] conflicts with prior declaration for package "
                f"{entry.name!r} ({previous.version} vs {entry.version})"
            )
        by_name[entry.name] = entry
    return tuple(sorted(by_name.values()))


def grow_manifest(
    current: tuple[ManifestEntry, ...] | None, incoming: tuple[ManifestEntry, ...], *, role: str
) -> tuple[ManifestEntry, ...]:
    """The manifest an agent would have after a program declaring ``incoming`` (pure).

    An agent's manifest only grows: a program that declares nothing keeps the current one,
    new packages are added, and a package already present must keep its exact specifier.

    Raises:
        DependencyManifestIncompatibleError: ``incoming`` changes or drops a present package.
    """
    if current is None:
        return incoming
    if not incoming:
        return current
    declared = {entry.name: entry.version for entry in incoming}
    changed = [
        entry for entry in current if declared.get(entry.name, entry.version) != entry.version
    ]
    if changed:
        entry = changed[0]
        raise DependencyManifestIncompatibleError(
            f"dependencies for {role} are incompatible with prior manifest (existing packages "
            f"must remain with identical versions): {entry.name} {entry.version} vs "
            f"{declared[entry.name]}",
            metadata={"dependency_name": entry.name},
        )
    merged = {entry.name: entry for entry in current}
    merged.update({entry.name: entry for entry in incoming})
    return tuple(sorted(merged.values()))


class EffectiveManifest:
    """An agent's manifest: candidates are computed first and committed only after success.

    Committing after the environment is ready (not before, as the Ruby runtime does) means a
    growth refused by policy or a failed install does not poison later calls (ADR 0042).
    """

    def __init__(self) -> None:
        self._entries: tuple[ManifestEntry, ...] | None = None

    @property
    def entries(self) -> tuple[ManifestEntry, ...]:
        """The committed manifest (empty until a program declared something)."""
        return self._entries or ()

    def candidate(
        self, incoming: tuple[ManifestEntry, ...], *, role: str
    ) -> tuple[ManifestEntry, ...]:
        """What the manifest would become; see :func:`grow_manifest`."""
        return grow_manifest(self._entries, incoming, role=role)

    def commit(self, entries: tuple[ManifestEntry, ...]) -> None:
        """Adopt a candidate once its environment is ready."""
        self._entries = entries


def _clean_names(values: Iterable[str] | None, option: str) -> frozenset[str] | None:
    if values is None:
        return None
    if isinstance(values, str):
        raise UsageError(f"{option} must be a list of package names, not a string")
    return frozenset(canonicalize_name(value.strip()) for value in values if value.strip())


def _is_local(url: str) -> bool:
    return url.startswith("file:") or "://" not in url


@dataclass(frozen=True, slots=True)
class DependencyPolicy:
    """Which packages and indexes a runtime admits.

    Attributes:
        index_urls: Indexes or local wheel directories, first one primary. Empty means the
            installer's own configuration (``pip.conf``, ``PIP_INDEX_URL``) is used.
        source_mode: One of :data:`SOURCE_MODES`.
        allowed_packages: When set, only these (canonical) names may be installed.
        blocked_packages: Names never installed.
    """

    index_urls: tuple[str, ...] = ()
    source_mode: str = "pip_config"
    allowed_packages: frozenset[str] | None = None
    blocked_packages: frozenset[str] | None = None

    @classmethod
    def build(
        cls,
        *,
        index_urls: Iterable[str] | None = None,
        source_mode: str = "pip_config",
        allowed_packages: Iterable[str] | None = None,
        blocked_packages: Iterable[str] | None = None,
    ) -> DependencyPolicy:
        """Validate and normalise policy options.

        Raises:
            UsageError: an unknown source mode or a malformed list.
        """
        if source_mode not in SOURCE_MODES:
            raise UsageError(f"source_mode must be one of {SOURCE_MODES}, got {source_mode!r}")
        if isinstance(index_urls, str):
            raise UsageError("index_urls must be a list of URLs or directories, not a string")
        urls: list[str] = []
        for url in index_urls or ():
            if url.strip() and url.strip() not in urls:
                urls.append(url.strip())
        return cls(
            index_urls=tuple(urls),
            source_mode=source_mode,
            allowed_packages=_clean_names(allowed_packages, "allowed_packages"),
            blocked_packages=_clean_names(blocked_packages, "blocked_packages"),
        )

    def check(self, manifest: Sequence[ManifestEntry]) -> None:
        """Refuse a manifest the policy does not admit, before anything is installed.

        Raises:
            DependencyPolicyViolationError: with ``dependency_name`` and ``policy`` metadata.
        """
        hosts = [(url, (urlparse(url).hostname or "").lower()) for url in self.index_urls]
        if self.source_mode == "internal_only":
            if not self.index_urls:
                raise DependencyPolicyViolationError(
                    "source_mode internal_only requires at least one internal package index",
                    metadata={"policy": "source_mode"},
                )
            for url, host in hosts:
                if host in _PUBLIC_HOSTS:
                    raise DependencyPolicyViolationError(
                        f"source_mode internal_only forbids public source {url}",
                        metadata={"policy": "source_mode"},
                    )
        if self.source_mode == "public_only":
            for url, host in hosts:
                if _is_local(url) or host not in _PUBLIC_HOSTS:
                    raise DependencyPolicyViolationError(
                        f"source_mode public_only forbids non-public source {url}",
                        metadata={"policy": "source_mode"},
                    )
        for entry in manifest:
            if self.allowed_packages is not None and entry.name not in self.allowed_packages:
                raise DependencyPolicyViolationError(
                    f"dependency policy violation for {entry.name}: not in allowed_packages",
                    metadata={"dependency_name": entry.name, "policy": "allowed_packages"},
                )
            if self.blocked_packages is not None and entry.name in self.blocked_packages:
                raise DependencyPolicyViolationError(
                    f"dependency policy violation for {entry.name}: blocked by blocked_packages",
                    metadata={"dependency_name": entry.name, "policy": "blocked_packages"},
                )

    def index_flags(self) -> list[str]:
        """Installer flags for the configured sources (none: the user's pip configuration)."""
        local = [url for url in self.index_urls if _is_local(url)]
        remote = [url for url in self.index_urls if not _is_local(url)]
        flags: list[str] = []
        if local and not remote:
            flags.append("--no-index")
        for url in local:
            flags += ["--find-links", url.removeprefix("file://")]
        for position, url in enumerate(remote):
            flags += ["--index-url" if position == 0 else "--extra-index-url", url]
        return flags
