"""Store file mechanics: atomic private writes, file locks, quarantine and the schema guard (ADR 0036).

Reads are strict and bounded (ADR 0070): no ``NaN``, no file over :data:`MAX_FILE_BYTES`, no
symbolic link followed, no open that can block, and nothing read below a directory level or
from a file someone else could write (:mod:`recurgent._store._trust`).

Every store file is one JSON object written whole: a temp file in the same directory, fsync,
then ``os.replace``, so a reader sees the old file or the new one, never a torn one. Updates
that read, change and write a file hold ``<file>.lock`` (``filelock``) so concurrent processes
never lose each other's writes. This is the only module that imports ``filelock``; its
``Timeout`` leaves here as the builtin ``TimeoutError``.
"""

from __future__ import annotations

import contextlib
import datetime
import errno
import json
import math
import os
import secrets
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

import filelock

from recurgent._store._trust import UntrustedStoreError, status_problem, untrusted_levels

__all__ = [
    "CHANGES",
    "LOCK_TIMEOUT_SECONDS",
    "MAX_FILE_BYTES",
    "SCHEMA_VERSION",
    "Identity",
    "LoadState",
    "Loaded",
    "UntrustedStoreError",
    "Updated",
    "encode_json",
    "ensure_private_dir",
    "identity_of",
    "locked",
    "note_change",
    "quarantine",
    "read_json",
    "stored_text",
    "supported_schema",
    "untrusted_levels",
    "update_json",
    "write_json",
]

#: The one schema version this port reads and writes (registry and artifacts).
SCHEMA_VERSION = 1
#: How long an update waits for other processes holding the same file. Each write costs two
#: fsyncs (a few ms each), so even dozens of writers queued on one file get through well
#: within it; only a stuck holder makes an update give up.
LOCK_TIMEOUT_SECONDS = 30.0
# filelock polls; a short interval keeps waiters from starving behind a busy writer.
_LOCK_POLL_SECONDS = 0.005
#: A store file larger than this is damaged, not read (ADR 0070): the biggest file the runtime
#: writes (a registry of thousands of tools) is a few MiB, and every call may read the file.
MAX_FILE_BYTES = 32 * 1024 * 1024

_DIR_MODE = 0o700
_FILE_MODE = 0o600

LoadState = Literal["missing", "ok", "corrupt", "unsupported", "unreadable", "untrusted"]
#: Which file version was read: ``(st_dev, st_ino, st_mtime_ns, st_size)``. Every store write
#: renames a new file into place (a new inode), so a read cache keyed by it sees every write.
Identity = tuple[int, int, int, int]


class ChangeCount:
    """How many store files this process has written, moved aside or removed.

    A cache that skips its ``stat`` for a while (ADR 0138) still sees this process's own
    changes at once: any change moves the count.
    """

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0


#: This process's count (a forked child carries its parent's on: it only ever grows).
CHANGES = ChangeCount()


def note_change() -> None:
    """Count a change this process made to a store file outside :func:`write_json` and
    :func:`quarantine` (which count their own): a removal. Call it in a ``finally`` around the
    removal, so an exception landing after the system call returns still counts (red team
    R16)."""
    CHANGES.value += 1


def _identity(status: os.stat_result) -> Identity:
    return (status.st_dev, status.st_ino, status.st_mtime_ns, status.st_size)


def identity_of(path: Path | str) -> Identity | None:
    """The identity of the file now at ``path`` (``None`` when there is none or it cannot be
    stat'ed): one ``stat`` call, for a cache to decide whether its copy is still current."""
    try:
        status = os.stat(path)
    except OSError:
        return None
    return (status.st_dev, status.st_ino, status.st_mtime_ns, status.st_size)  # as _identity


@dataclass(frozen=True, slots=True)
class Loaded:
    """What reading a store file found.

    Attributes:
        state: ``missing``; ``ok`` (``data`` holds the object); ``corrupt`` (not a JSON
            object, over the size cap, or a symbolic link: moved aside to ``quarantined_to``
            when quarantine was asked for); ``unsupported`` (another ``schema_version``: left
            untouched); ``unreadable`` (an OS error, e.g. permissions, or not a regular file);
            ``untrusted`` (a file someone else could write, moved aside like a corrupt one, or a
            directory level that is not private, left untouched; ADR 0070).
        data: The JSON object when ``state`` is ``ok``.
        detail: Why it is not ``ok``, for messages.
        quarantined_to: Where a corrupt file was moved, when it was.
        raw: The bytes read, when the file could be read.
        identity: The identity of the file the bytes came from (taken from the open file, so
            a cache never pairs one version's bytes with another version's identity).
    """

    state: LoadState
    data: dict[str, Any] | None = None
    detail: str | None = None
    quarantined_to: Path | None = None
    raw: bytes | None = None
    identity: Identity | None = None


@dataclass(frozen=True, slots=True)
class Updated:
    """What :func:`update_json` did.

    Attributes:
        written: The new object was written.
        data: The object written (or, when not written, the object as found, if any).
        skipped: Why nothing was written (``unsupported: ...``, ``unreadable: ...``,
            ``untrusted: ...``, ``no_change``).
        quarantined_to: A corrupt file found on the way was moved here.
    """

    written: bool
    data: dict[str, Any] | None = None
    skipped: str | None = None
    quarantined_to: Path | None = None


def supported_schema(data: dict[str, Any]) -> bool:
    """Whether this port understands the object's ``schema_version`` (missing counts as 1)."""
    version = data.get("schema_version")
    if version is None:
        return True
    return not isinstance(version, bool) and isinstance(version, int) and version == SCHEMA_VERSION


def stored_text(text: str) -> str:
    """``text`` as a store file holds it (and gives it back when read).

    Lone surrogates (from undecodable input) cannot be UTF-8 encoded; they become U+FFFD, as
    the Ruby store turns invalid bytes into U+FFFD before writing.
    """
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def encode_json(payload: dict[str, Any]) -> bytes:
    """Compact UTF-8 JSON (no spaces, keys in insertion order, non-ASCII kept as is)."""
    text = json.dumps(payload, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    return stored_text(text).encode("utf-8")


def ensure_private_dir(directory: Path, root: Path) -> None:
    """Create ``directory`` (under ``root``) with every missing level at mode 0700.

    Directories that already exist keep their mode: a root the user made is theirs.

    Raises:
        UntrustedStoreError: an existing level is a symbolic link, not a directory, or not
            private (see :func:`untrusted_levels`): nothing is created through it.
    """
    problem = untrusted_levels(directory, root)
    if problem is not None:
        raise UntrustedStoreError(f"untrusted tool store path: {problem}")
    if directory.is_dir():
        return
    if not root.exists():
        root.parent.mkdir(mode=_DIR_MODE, parents=True, exist_ok=True)
    levels = [directory, *directory.parents]
    chain = [root, *reversed([p for p in levels if root in p.parents])]
    for level in chain:
        try:
            os.mkdir(level, _DIR_MODE)
        except FileExistsError:
            continue
        # mkdir's mode is filtered by the umask; set it exactly.
        os.chmod(level, _DIR_MODE)


def write_json(path: Path, payload: dict[str, Any], *, root: Path, durable: bool = True) -> None:
    """Write ``payload`` to ``path`` atomically, as a 0600 file.

    ``durable=False`` skips the two fsyncs: the rename is still atomic (no reader ever sees a
    torn file), but a power loss may lose this write, or leave a file the next read
    quarantines. Worth it only for frequent writes whose loss costs little (ADR 0047).

    Raises:
        OSError: the directory cannot be created or the file cannot be written; the previous
            file is then unchanged and no temp file is left behind.
    """
    data = encode_json(payload)
    ensure_private_dir(path.parent, root)
    temp = path.with_name(f"{path.name}.tmp-{os.getpid()}-{secrets.token_hex(4)}")
    try:
        descriptor = os.open(temp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, _FILE_MODE)
        with os.fdopen(descriptor, "wb") as handle:
            handle.write(data)
            handle.flush()
            if durable:
                os.fsync(handle.fileno())
        os.chmod(temp, _FILE_MODE)
        try:
            os.replace(temp, path)
        finally:
            # Counted even when an exception (a KeyboardInterrupt at the signal check after
            # the call returns) lands between the rename and this line (red team R16).
            CHANGES.value += 1
    except BaseException:
        # Only a failed write leaves the temp file; after the rename there is none to remove.
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temp)
        raise
    if durable:
        _fsync_dir(path.parent)


def _fsync_dir(directory: Path) -> None:
    # The rename is durable only once the directory entry is; not every platform allows it.
    try:
        descriptor = os.open(directory, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(descriptor)
    except OSError:
        pass
    finally:
        os.close(descriptor)


@contextlib.contextmanager
def locked(path: Path, *, root: Path, timeout: float = LOCK_TIMEOUT_SECONDS) -> Iterator[None]:
    """Hold ``<path>.lock`` for a read-modify-write of ``path``.

    Raises:
        TimeoutError: another holder kept the lock for ``timeout`` seconds.
    """
    ensure_private_dir(path.parent, root)
    lock = filelock.FileLock(f"{path}.lock", timeout=timeout, mode=_FILE_MODE)
    try:
        lock.acquire(poll_interval=_LOCK_POLL_SECONDS)
    except filelock.Timeout as error:
        raise TimeoutError(f"store file {path} stayed locked for {timeout:g}s") from error
    try:
        yield
    finally:
        lock.release()


def _stamp(now: datetime.datetime | None) -> str:
    moment = (now or datetime.datetime.now(datetime.UTC)).astimezone(datetime.UTC)
    return moment.strftime("%Y%m%dT%H%M%S")


def quarantine(
    path: Path,
    *,
    expected: bytes | None = None,
    now: datetime.datetime | None = None,
    identity: Identity | None = None,
) -> Path | None:
    """Move a damaged file to ``<path>.corrupt-<UTC YYYYMMDDTHHMMSS>`` and return the new path.

    A second quarantine in the same second gets ``-2``, ``-3``, ... instead of overwriting the
    first. With ``expected`` (or ``identity``), the file is moved only if it still holds
    exactly those bytes (is still that file): another process may have replaced it with a good
    file meanwhile. A symbolic link is moved as the link, never through it. Returns ``None``
    when nothing was moved.
    """
    if expected is not None:
        try:
            if _read(path)[0] != expected:
                return None
        except OSError:
            return None
    if identity is not None and _lidentity(path) != identity:
        return None
    base = f"{path}.corrupt-{_stamp(now)}"
    for attempt in range(1, 1000):
        target = Path(base if attempt == 1 else f"{base}-{attempt}")
        try:
            # link() refuses an existing target, which rename() would silently replace; it
            # links the symbolic link itself, so nothing outside the root is linked in.
            os.link(path, target, follow_symlinks=False)
        except FileExistsError:
            continue
        except FileNotFoundError:
            return None
        except OSError:
            if os.path.lexists(target):
                continue
            try:
                os.replace(path, target)
            finally:
                CHANGES.value += 1  # as in write_json: counted whatever lands after the call
            return target
        try:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(path)
        finally:
            CHANGES.value += 1
        return target
    return None


def read_json(
    path: Path,
    *,
    quarantine_corrupt: bool = True,
    now: datetime.datetime | None = None,
    root: Path | None = None,
) -> Loaded:
    """Read a store file; never raises.

    A file that is not a JSON object (or larger than :data:`MAX_FILE_BYTES`, or a symbolic
    link) is corrupt and, with ``quarantine_corrupt``, moved aside (the caller then behaves as
    if it were absent). A file not owned by this user or writable by others is ``untrusted``
    and moved aside the same way. With ``root``, a directory level that is not private (see
    :func:`untrusted_levels`) makes the file ``untrusted`` without touching it. A
    ``schema_version`` other than 1 is ``unsupported`` and left untouched.
    """
    if root is not None:
        problem = untrusted_levels(path.parent, root)
        if problem is not None:
            return Loaded("untrusted", detail=problem)
    try:
        raw, identity = _read(path)
    except FileNotFoundError:
        return Loaded("missing")
    except _Untrusted as foreign:
        moved = quarantine(path, now=now, identity=foreign.identity) if quarantine_corrupt else None
        return Loaded("untrusted", detail=foreign.problem, quarantined_to=moved)
    except _TooLarge as large:
        moved = quarantine(path, now=now, identity=large.identity) if quarantine_corrupt else None
        return Loaded("corrupt", detail=large.problem, quarantined_to=moved)
    except OSError as error:
        link = _lidentity(path) if error.errno == errno.ELOOP else None
        if link is not None and os.path.islink(path):
            # A link is not a file this store wrote: moved aside like damage, never followed.
            moved = quarantine(path, now=now, identity=link) if quarantine_corrupt else None
            return Loaded("corrupt", detail="a symbolic link", quarantined_to=moved)
        return Loaded("unreadable", detail=f"{type(error).__name__}: {error}")
    detail: str | None = None
    try:
        data = _decode(raw)
    except (ValueError, RecursionError) as error:
        detail = f"invalid JSON: {type(error).__name__}: {str(error)[:200]}"
    else:
        if not isinstance(data, dict):
            detail = f"top level is {type(data).__name__}"
    if detail is not None:
        moved = quarantine(path, expected=raw, now=now) if quarantine_corrupt else None
        return Loaded("corrupt", detail=detail, quarantined_to=moved, raw=raw, identity=identity)
    if not supported_schema(data):
        return Loaded(
            "unsupported",
            detail=f"schema_version {data.get('schema_version')!r} is not 1",
            raw=raw,
            identity=identity,
        )
    return Loaded("ok", data=data, raw=raw, identity=identity)


def _refuse_constant(name: str) -> Any:
    raise ValueError(f"{name} is not JSON")


def _finite(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text[:40]} does not fit a float")
    return value


def _decode(raw: bytes) -> Any:
    """Strict JSON (ADR 0070): no ``NaN``/``Infinity`` (this store never writes them, and they
    break every counter), no float that overflows to infinity. An integer of more than 4300
    digits raises ``ValueError`` and a nesting deeper than the stack ``RecursionError``; the
    caller treats all of them as damage."""
    return json.loads(raw.decode("utf-8"), parse_constant=_refuse_constant, parse_float=_finite)


class _Untrusted(OSError):
    def __init__(self, problem: str, identity: Identity) -> None:
        super().__init__(problem)
        self.problem = problem
        self.identity = identity


class _TooLarge(OSError):
    def __init__(self, size: int, identity: Identity) -> None:
        super().__init__(f"{size} bytes")
        self.size = size
        self.identity = identity

    @property
    def problem(self) -> str:
        return f"{self.size} bytes, more than {MAX_FILE_BYTES}"


def _lidentity(path: Path) -> Identity | None:
    try:
        return _identity(os.lstat(path))
    except OSError:
        return None


def _read(path: Path) -> tuple[bytes, Identity]:
    # fstat of the descriptor read from: a rename over the path between the stat and the read
    # cannot pair the old bytes with the new file's identity. O_NOFOLLOW: a symbolic link at a
    # store path is never read through (it may point anywhere outside the root).
    # O_NONBLOCK: a named pipe put at a store path would block the open forever.
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0)
    descriptor = os.open(path, flags)
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            raise IsADirectoryError(errno.EISDIR, "not a regular file", str(path))
        problem = status_problem(status, f"store file {path}", strict=True)
        if problem is not None:
            raise _Untrusted(problem, _identity(status))
        if status.st_size > MAX_FILE_BYTES:
            raise _TooLarge(status.st_size, _identity(status))
        chunks: list[bytes] = []
        total = 0
        while chunk := os.read(descriptor, max(status.st_size, 1 << 16)):
            chunks.append(chunk)
            total += len(chunk)
            if total > MAX_FILE_BYTES:
                # Grew while being read: as damaged as one that was too large to begin with.
                raise _TooLarge(total, _identity(status))
        return b"".join(chunks), _identity(status)
    finally:
        os.close(descriptor)


def update_json(
    path: Path,
    change: Callable[[Loaded], dict[str, Any] | None],
    *,
    root: Path,
    now: datetime.datetime | None = None,
    durable: bool = True,
) -> Updated:
    """Read, change and write ``path`` under its lock (merge-on-write; ``durable`` as in
    :func:`write_json`).

    ``change`` gets what was read (``data`` is ``None`` when the file is missing or was
    quarantined as corrupt) and returns the object to write, or ``None`` to write nothing. An unsupported schema version
    or an unreadable file is never overwritten.

    Raises:
        OSError: locking or writing failed (``TimeoutError`` for a lock held too long).
    """
    with locked(path, root=root):
        loaded = read_json(path, now=now, root=root)
        if loaded.state in ("unsupported", "unreadable"):
            return Updated(False, skipped=f"{loaded.state}: {loaded.detail}")
        if loaded.state == "untrusted" and loaded.quarantined_to is None:
            # A file someone else may write that could not be moved aside: not replaced either.
            return Updated(False, skipped=f"{loaded.state}: {loaded.detail}")
        new = change(loaded)
        if new is None:
            return Updated(False, data=loaded.data, skipped="no_change")
        write_json(path, new, root=root, durable=durable)
        return Updated(True, data=new, quarantined_to=loaded.quarantined_to)
