"""How a worker process is confined: scrubbed environment, scratch directory, rlimits, bubblewrap.

Every worker gets an environment built from an allow-list (so no API key or token reaches it)
and a private scratch working directory. With ``isolation="process"`` it also gets resource
limits (address space, CPU seconds, open files, no core dumps) and, when ``bwrap`` is on PATH
and works, runs inside bubblewrap: read-only binds of the interpreter, the host paths and the
environment, a private ``/tmp``, no home, new PID/IPC/UTS namespaces and, unless the network
policy allows network, a new network namespace (ADR 0041).
"""

from __future__ import annotations

import functools
import os
import resource
import shutil
import subprocess
import sys
import warnings
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

__all__ = [
    "IsolationSettings",
    "bwrap_command",
    "bwrap_path",
    "limit_resources",
    "network_allowed",
    "scrubbed_environment",
]

Backend = Literal["bwrap", "rlimits", "none"]

# Variables a worker may inherit. Everything else (API keys, tokens, cloud credentials, proxy
# settings that may embed passwords) stays in the parent.
_INHERITED = ("PATH", "LANG", "LANGUAGE", "TZ", "TERM")
_INHERITED_PREFIXES = ("LC_",)
_SECRET_MARKERS = ("KEY", "TOKEN", "SECRET", "PASSWORD", "PASSWD", "CREDENTIAL", "AUTH")


def scrubbed_environment(
    scratch: Path,
    *,
    source: Mapping[str, str] | None = None,
    extra: Mapping[str, str] | None = None,
) -> dict[str, str]:
    """The worker's environment: an allow-list of the parent's, with home and tmp in ``scratch``."""
    source = os.environ if source is None else source
    environment = {
        name: value
        for name, value in source.items()
        if (name in _INHERITED or name.startswith(_INHERITED_PREFIXES))
        and not any(marker in name.upper() for marker in _SECRET_MARKERS)
    }
    environment.update(
        HOME=str(scratch),
        TMPDIR=str(scratch),
        PYTHONDONTWRITEBYTECODE="1",
        PYTHONUNBUFFERED="1",
    )
    environment.update(extra or {})
    return environment


#: What a worker may write to one file (and to its ``/tmp``): programs cannot open files, so this
#: bounds what code that escaped the policy could write to the host's disk or RAM (red team
#: R25, ADR 0152).
FILE_BYTES = 64 * 1024**2


@dataclass(frozen=True, slots=True)
class IsolationSettings:
    """The confinement of one agent's workers.

    Attributes:
        mode: ``"in_process"`` (a dependency worker: scrubbed env and scratch directory only)
            or ``"process"`` (also rlimits and, where available, bubblewrap).
        max_address_space_bytes: ``RLIMIT_AS`` of the worker.
        max_cpu_seconds: Hard ``RLIMIT_CPU`` over the worker's life; each run also gets a soft
            limit of its deadline (set by the worker itself before it runs the program).
        max_open_files: ``RLIMIT_NOFILE``.
        max_file_bytes: ``RLIMIT_FSIZE`` (no file the worker writes grows past it), and the
            size of bubblewrap's ``/tmp`` (a RAM-backed tmpfs).
        network: The agent's network policy (``"allow"``, ``"deny"`` or host names): anything
            but ``"deny"`` keeps the network namespace shared.
        use_bwrap: ``None``: bubblewrap when it works; ``False``: never; ``True``: required.
    """

    mode: Literal["in_process", "process"] = "in_process"
    max_address_space_bytes: int = 4 * 1024**3
    max_cpu_seconds: int = 3600
    max_open_files: int = 256
    max_file_bytes: int = FILE_BYTES
    network: object = "allow"
    use_bwrap: bool | None = None

    @property
    def confined(self) -> bool:
        """True when rlimits (and bubblewrap) apply."""
        return self.mode == "process"


def network_allowed(policy: object) -> bool:
    """Whether a network policy lets the worker keep the host's network."""
    return policy != "deny"


def limit_resources(settings: IsolationSettings) -> Callable[[], None]:
    """A ``preexec_fn`` that applies the rlimits in the child before it runs Python."""

    def apply() -> None:
        resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
        resource.setrlimit(
            resource.RLIMIT_AS, (settings.max_address_space_bytes, settings.max_address_space_bytes)
        )
        # The worker lowers the soft limit to its deadline before each run.
        resource.setrlimit(
            resource.RLIMIT_CPU, (settings.max_cpu_seconds, settings.max_cpu_seconds)
        )
        resource.setrlimit(
            resource.RLIMIT_NOFILE, (settings.max_open_files, settings.max_open_files)
        )
        resource.setrlimit(
            resource.RLIMIT_FSIZE, (settings.max_file_bytes, settings.max_file_bytes)
        )

    return apply


@functools.lru_cache(maxsize=1)
def bwrap_path() -> str | None:
    """``bwrap`` when it is on PATH and can create namespaces here, else ``None``."""
    found = shutil.which("bwrap")
    if found is None:
        return None
    try:
        probe = subprocess.run(
            [found, "--ro-bind", "/", "/", "--unshare-pid", "--unshare-net", "--", "true"],
            capture_output=True,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    return found if probe.returncode == 0 else None


_warned: list[bool] = []


def warn_without_bwrap() -> None:
    """Warn once per process that ``isolation="process"`` runs without bubblewrap."""
    if not _warned:
        _warned.append(True)
        warnings.warn(
            "recurgent: bwrap (bubblewrap) is not available; isolation='process' workers run "
            "with rlimits and a scrubbed environment only (no filesystem or network namespace)",
            RuntimeWarning,
            stacklevel=3,
        )


_SYSTEM_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
_NETWORK_FILES = (
    "/etc/resolv.conf",
    "/etc/hosts",
    "/etc/nsswitch.conf",
    "/etc/ssl",
    "/etc/ca-certificates",
    "/etc/pki",
)


def bwrap_command(
    bwrap: str,
    command: list[str],
    *,
    read_only: Iterable[str],
    scratch: Path,
    network: bool,
    tmp_bytes: int = FILE_BYTES,
) -> list[str]:
    """Wrap ``command`` in bubblewrap with the binds and namespaces of ADR 0041."""
    argv = [bwrap, "--die-with-parent", "--unshare-pid", "--unshare-ipc", "--unshare-uts"]
    if not network:
        argv.append("--unshare-net")
    if os.geteuid() == 0:
        # Run by root, bubblewrap keeps every capability in the sandbox: code that escaped the
        # policy could remount a read-only bind and write host files (red team R25, ADR 0152).
        # Unprivileged, it already drops them (and refuses the option in setuid mode).
        argv += ["--cap-drop", "ALL"]
    for path in _SYSTEM_DIRS:
        argv += ["--ro-bind-try", path, path]
    argv += ["--ro-bind-try", "/etc/ld.so.cache", "/etc/ld.so.cache"]
    if network:
        for path in _NETWORK_FILES:
            argv += ["--ro-bind-try", path, path]
    # /dev and the root are tmpfs bubblewrap makes without a size (host memory): read-only, so
    # what a worker writes lands in /tmp and its scratch directory, each sized (red team R27).
    argv += ["--proc", "/proc", "--dev", "/dev", "--remount-ro", "/dev"]
    argv += ["--size", str(tmp_bytes), "--tmpfs", "/tmp"]
    seen: set[str] = set()
    for path in sorted(read_only, key=len):
        real = str(Path(path).resolve())
        if real not in seen and Path(real).exists():
            seen.add(real)
            argv += ["--ro-bind", real, real]
    # The scratch directory is the worker's own tmpfs, not the host directory: bound, it took
    # files of 64 MiB without end on the host's disk (red team R27).
    argv += ["--size", str(tmp_bytes), "--tmpfs", str(scratch), "--remount-ro", "/"]
    argv += ["--chdir", str(scratch), "--", *command]
    return argv


def interpreter_paths(python: str) -> list[str]:
    """Directories the interpreter needs: its prefixes and the real location of its binary."""
    paths = [sys.base_prefix, sys.prefix, str(Path(python).resolve().parent)]
    venv = Path(python).parent.parent
    if (venv / "pyvenv.cfg").exists():
        paths.append(str(venv))
    return paths


def backend_for(settings: IsolationSettings) -> Backend:
    """Which confinement a worker of these settings gets."""
    if not settings.confined:
        return "none"
    if settings.use_bwrap is False:
        return "rlimits"
    if bwrap_path() is not None:
        return "bwrap"
    if settings.use_bwrap:
        raise OSError("bwrap was required but is not available")
    warn_without_bwrap()
    return "rlimits"
