"""Dependency environments: one cached virtual environment per ``env_id``, built once under a lock.

An environment is a directory ``<cache_root>/<env_id>/`` holding ``requirements.in``,
``requirements.lock``, ``venv/`` and ``.ready.json``. It is built by ``uv`` when it is on PATH
and by ``venv`` + ``pip`` otherwise (ADR 0039). A file lock next to it serialises builders, so
two processes asking for the same manifest build it once and the second one reuses it. Installer
failures are translated here, once, into typed errors carrying the installer's message.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import sysconfig
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import filelock

import recurgent
from recurgent._worker._manifest import DependencyPolicy, ManifestEntry
from recurgent.errors import DependencyInstallError, DependencyResolutionError

__all__ = [
    "CommandResult",
    "CommandRunner",
    "Environment",
    "EnvironmentManager",
    "default_cache_root",
    "host_binds",
    "host_paths",
    "run_command",
]

_INSTALL_TIMEOUT_SECONDS = 900.0
_DETAIL_CHARS = 4000
_HOST_PTH = "recurgent-host.pth"


@dataclass(frozen=True, slots=True)
class CommandResult:
    """What one installer command printed and returned."""

    returncode: int
    stdout: str
    stderr: str


CommandRunner = Callable[[Sequence[str], Path], CommandResult]


def run_command(argv: Sequence[str], cwd: Path) -> CommandResult:
    """Run an installer command; a missing program or a hang becomes a failed result."""
    try:
        done = subprocess.run(
            list(argv),
            cwd=cwd,
            capture_output=True,
            text=True,
            timeout=_INSTALL_TIMEOUT_SECONDS,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired) as error:
        return CommandResult(returncode=-1, stdout="", stderr=f"{type(error).__name__}: {error}")
    return CommandResult(done.returncode, done.stdout, done.stderr)


def default_cache_root() -> Path:
    """``$XDG_CACHE_HOME/recurgent/python-envs``, falling back to ``~/.cache``."""
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "recurgent" / "python-envs"


def host_paths() -> tuple[str, ...]:
    """Directories the worker needs from this interpreter to import ``recurgent`` itself.

    The directory holding the ``recurgent`` package (a source tree or site-packages) and this
    interpreter's site-packages (RestrictedPython, pydantic). An environment appends them after
    its own site-packages, so a package the manifest installs wins over the host's copy.
    """
    root = str(Path(recurgent.__file__).resolve().parent.parent)
    paths = [root]
    for key in ("purelib", "platlib"):
        path = str(Path(sysconfig.get_paths()[key]).resolve())
        if path not in paths:
            paths.append(path)
    return tuple(paths)


def host_binds(paths: Iterable[str]) -> list[str]:
    """What bubblewrap binds for ``paths`` (:func:`host_paths` or a caller's): the directory
    holding the ``recurgent`` package is bound as the package alone, unless it is a
    site-packages directory. A source checkout's ``.git``, ``pyproject.toml`` and any ``.env``
    stay outside the worker (red team R25, ADR 0152); the package's parent, put on the path,
    still finds it."""
    package = Path(recurgent.__file__).resolve().parent
    sites = {str(Path(sysconfig.get_paths()[key]).resolve()) for key in ("purelib", "platlib")}
    checkout = str(package.parent)
    return [str(package) if path == checkout and path not in sites else path for path in paths]


@dataclass(frozen=True, slots=True)
class Environment:
    """A ready environment and how long getting it took.

    Attributes:
        env_id: SHA-256 of interpreter, platform, sources, runtime paths and manifest.
        env_dir: Its directory.
        python: The environment's interpreter.
        site_packages: The environment's own site-packages (dependency code lives here).
        manifest: The manifest it satisfies.
        cache_hit: True when it already existed.
        prepare_ms: Total time of :meth:`EnvironmentManager.ensure`.
        resolve_ms: Time spent resolving (0.0 on a hit).
        install_ms: Time spent creating the venv and installing (0.0 on a hit).
    """

    env_id: str
    env_dir: Path
    python: Path
    site_packages: Path
    manifest: tuple[ManifestEntry, ...]
    cache_hit: bool
    prepare_ms: float
    resolve_ms: float
    install_ms: float

    def log_fields(self) -> dict[str, object]:
        """The fields a call's log line carries about its environment."""
        return {
            "env_id": self.env_id,
            "environment_cache_hit": self.cache_hit,
            "env_prepare_ms": self.prepare_ms,
            "env_resolve_ms": self.resolve_ms,
            "env_install_ms": self.install_ms,
        }


def _ms(start: float) -> float:
    return round((time.perf_counter() - start) * 1000.0, 1)


def _atomic_write(path: Path, text: str) -> None:
    temporary = path.with_name(f"{path.name}.{os.getpid()}.tmp")
    temporary.write_text(text, encoding="utf-8")
    os.replace(temporary, path)


def _detail(result: CommandResult) -> str:
    text = result.stderr.strip() or result.stdout.strip() or "unknown failure"
    return text[-_DETAIL_CHARS:]


class EnvironmentManager:
    """Builds and caches dependency environments.

    Args:
        policy: Sources and the source mode (checked by the caller before :meth:`ensure`).
        cache_root: Where environments live; defaults to :func:`default_cache_root`.
        runner: Runs installer commands; tests inject a recording fake.
        installer: ``"auto"`` (uv when on PATH, else pip), ``"uv"`` or ``"pip"``.
        python: The interpreter environments are created from (this one by default).
    """

    def __init__(
        self,
        policy: DependencyPolicy | None = None,
        *,
        cache_root: Path | None = None,
        runner: CommandRunner = run_command,
        installer: str = "auto",
        python: str = sys.executable,
    ) -> None:
        self._policy = policy or DependencyPolicy()
        self._root = Path(cache_root) if cache_root is not None else default_cache_root()
        self._runner = runner
        if installer == "auto":
            installer = "uv" if shutil.which("uv") else "pip"
        if installer not in ("uv", "pip"):
            raise ValueError(f"installer must be 'auto', 'uv' or 'pip', got {installer!r}")
        self._installer = installer
        self._python = python

    @property
    def cache_root(self) -> Path:
        """The directory environments are cached under."""
        return self._root

    @property
    def installer(self) -> str:
        """``"uv"`` or ``"pip"``."""
        return self._installer

    def env_id(self, manifest: Sequence[ManifestEntry]) -> str:
        """The identity of the environment for ``manifest`` under this manager's sources."""
        parts = [
            f"impl:{sys.implementation.name}",
            f"python:{platform.python_version()}",
            f"abi:{sys.implementation.cache_tag}",
            f"platform:{sysconfig.get_platform()}",
            f"interpreter:{Path(self._python).resolve()}",
            f"runtime:{json.dumps(list(host_paths()), separators=(',', ':'))}",
            f"source_mode:{self._policy.source_mode}",
            f"sources:{json.dumps(sorted(self._policy.index_urls), separators=(',', ':'))}",
            f"deps:{json.dumps([e.as_dict() for e in manifest], separators=(',', ':'))}",
        ]
        return hashlib.sha256("|".join(parts).encode("utf-8")).hexdigest()

    def _paths(self, env_id: str) -> tuple[Path, Path, Path]:
        env_dir = self._root / env_id
        python = env_dir / "venv" / "bin" / "python"
        version = f"python{sys.version_info.major}.{sys.version_info.minor}"
        site = env_dir / "venv" / "lib" / version / "site-packages"
        return env_dir, python, site

    def _ready_record(self, manifest: Sequence[ManifestEntry], lock_text: str) -> dict[str, object]:
        return {
            "manifest": [entry.as_dict() for entry in manifest],
            "lock_checksum": hashlib.sha256(lock_text.encode("utf-8")).hexdigest(),
            "source_mode": self._policy.source_mode,
            "index_urls": sorted(self._policy.index_urls),
            "python": f"{Path(self._python).resolve()} {platform.python_version()}",
        }

    def _is_ready(self, env_dir: Path, python: Path, manifest: Sequence[ManifestEntry]) -> bool:
        try:
            ready = json.loads((env_dir / ".ready.json").read_text("utf-8"))
            lock_text = (env_dir / "requirements.lock").read_text("utf-8")
        except (OSError, ValueError):
            return False
        if not isinstance(ready, dict) or not python.exists():
            return False
        expected = self._ready_record(manifest, lock_text)
        return all(ready.get(key) == value for key, value in expected.items())

    def ensure(self, manifest: Sequence[ManifestEntry]) -> Environment:
        """Return the environment for ``manifest``, building it once if needed.

        Raises:
            DependencyResolutionError: the installer could not resolve the manifest.
            DependencyInstallError: creating the venv or installing failed (also OS errors).
        """
        start = time.perf_counter()
        manifest = tuple(manifest)
        env_id = self.env_id(manifest)
        env_dir, python, site = self._paths(env_id)

        def done(hit: bool, resolve_ms: float, install_ms: float) -> Environment:
            return Environment(
                env_id=env_id,
                env_dir=env_dir,
                python=python,
                site_packages=site,
                manifest=manifest,
                cache_hit=hit,
                prepare_ms=_ms(start),
                resolve_ms=resolve_ms,
                install_ms=install_ms,
            )

        if self._is_ready(env_dir, python, manifest):
            return done(True, 0.0, 0.0)
        try:
            self._root.mkdir(parents=True, exist_ok=True)
            with filelock.FileLock(str(self._root / f"{env_id}.lock")):
                # Another process may have finished the build while this one waited.
                if self._is_ready(env_dir, python, manifest):
                    return done(True, 0.0, 0.0)
                resolve_ms, install_ms = self._build(env_dir, python, site, manifest)
        except OSError as error:
            raise DependencyInstallError(
                f"environment setup failed in {env_dir}: {type(error).__name__}: {error}"
            ) from None
        return done(False, resolve_ms, install_ms)

    def _run(self, label: str, argv: Sequence[str], env_dir: Path, *, resolve: bool) -> None:
        result = self._runner(argv, env_dir)
        if result.returncode != 0:
            error = DependencyResolutionError if resolve else DependencyInstallError
            raise error(f"{label} failed in {env_dir}: {_detail(result)}")

    def _build(
        self, env_dir: Path, python: Path, site: Path, manifest: Sequence[ManifestEntry]
    ) -> tuple[float, float]:
        if env_dir.exists():
            # A build that died half-way leaves a directory without .ready.json: start over.
            shutil.rmtree(env_dir)
        env_dir.mkdir(parents=True)
        lines = ["# generated by Recurgent", *(entry.requirement() for entry in manifest)]
        _atomic_write(env_dir / "requirements.in", "\n".join(lines) + "\n")
        flags = self._policy.index_flags()
        started = time.perf_counter()
        if self._installer == "uv":
            self._run(
                "uv pip compile",
                [
                    "uv", "pip", "compile", "requirements.in", "-o", "requirements.lock",
                    "--quiet", "--python", self._python, *flags,
                ],
                env_dir,
                resolve=True,
            )  # fmt: skip
        else:
            self._run(
                "pip resolve",
                [
                    self._python, "-m", "pip", "install", "--dry-run", "--ignore-installed",
                    "--disable-pip-version-check", "--quiet", "--report", "resolve.json",
                    *flags, "-r", "requirements.in",
                ],
                env_dir,
                resolve=True,
            )  # fmt: skip
            _atomic_write(env_dir / "requirements.lock", self._lock_from_report(env_dir))
        resolve_ms = _ms(started)
        started = time.perf_counter()
        if self._installer == "uv":
            self._run(
                "uv venv", ["uv", "venv", "--quiet", "--python", self._python, "venv"], env_dir,
                resolve=False,
            )  # fmt: skip
            self._run(
                "uv pip sync",
                [
                    "uv",
                    "pip",
                    "sync",
                    "--quiet",
                    "--python",
                    str(python),
                    *flags,
                    "requirements.lock",
                ],
                env_dir,
                resolve=False,
            )
        else:
            self._run(
                "venv create",
                [self._python, "-m", "venv", "--without-pip", "venv"],
                env_dir,
                resolve=False,
            )
            self._run(
                "pip install",
                [
                    self._python, "-m", "pip", "--python", str(python), "install", "--no-deps",
                    "--disable-pip-version-check", "--quiet", *flags, "-r", "requirements.lock",
                ],
                env_dir,
                resolve=False,
            )  # fmt: skip
        site.mkdir(parents=True, exist_ok=True)
        _atomic_write(site / _HOST_PTH, "\n".join(host_paths()) + "\n")
        install_ms = _ms(started)
        lock_text = (env_dir / "requirements.lock").read_text("utf-8")
        record = self._ready_record(manifest, lock_text)
        record["prepared_at"] = datetime.now(UTC).isoformat(timespec="milliseconds")
        record["installer"] = self._installer
        _atomic_write(env_dir / ".ready.json", json.dumps(record, indent=2) + "\n")
        return resolve_ms, install_ms

    def _lock_from_report(self, env_dir: Path) -> str:
        try:
            report = json.loads((env_dir / "resolve.json").read_text("utf-8"))
            pins = sorted(
                f"{item['metadata']['name']}=={item['metadata']['version']}"
                for item in report.get("install", [])
            )
        except (OSError, ValueError, KeyError, TypeError) as error:
            raise DependencyResolutionError(
                f"pip resolve failed in {env_dir}: unreadable report ({error})"
            ) from None
        return "\n".join(pins) + "\n"
