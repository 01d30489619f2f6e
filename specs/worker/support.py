"""Helpers shared by the worker specs: a hand-built wheel, a worker runner, a loopback server."""

from __future__ import annotations

import base64
import hashlib
import socket
import sys
import textwrap
import threading
import zipfile
from pathlib import Path
from typing import Any, cast

from recurgent._execution import ExecutionInputs
from recurgent._sandbox import ExecutionSandbox, SandboxLimits, compile_program
from recurgent._worker import _child
from recurgent._worker._codec import from_wire, to_wire
from recurgent._worker._executor import ProcessExecutor, WorkerExecutionResult
from recurgent._worker._isolation import IsolationSettings
from recurgent._worker._protocol import RunRequest, RunResult, WireLimits
from recurgent._worker._supervisor import WorkerSupervisor
from recurgent.program import Program
from specs.sandbox.support import Host

DEMO_DISTRIBUTION = "recurgent-demo-dep"
DEMO_MODULE = "recurgent_demo_dep"

_DEMO_SOURCE = '''
"""A tiny package the worker specs install from a local wheel."""
import os
from os import system

VERSION = "0.1.0"


def double(value):
    return value * 2


class Greeter:
    def __init__(self, name):
        self.name = name
        self._secret = "hidden"

    def greet(self):
        return "hello " + self.name
'''


def build_wheel(directory: Path) -> Path:
    """Write ``recurgent_demo_dep-0.1.0-py3-none-any.whl`` into ``directory``; no network."""
    directory.mkdir(parents=True, exist_ok=True)
    dist_info = "recurgent_demo_dep-0.1.0.dist-info"
    files = {
        f"{DEMO_MODULE}/__init__.py": _DEMO_SOURCE.encode(),
        f"{dist_info}/METADATA": (
            b"Metadata-Version: 2.1\nName: recurgent-demo-dep\nVersion: 0.1.0\n"
        ),
        f"{dist_info}/WHEEL": (
            b"Wheel-Version: 1.0\nGenerator: recurgent-specs\nRoot-Is-Purelib: true\n"
            b"Tag: py3-none-any\n"
        ),
        f"{dist_info}/top_level.txt": f"{DEMO_MODULE}\n".encode(),
    }
    record = []
    for name, data in files.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        record.append(f"{name},sha256={digest},{len(data)}")
    record.append(f"{dist_info}/RECORD,,")
    files[f"{dist_info}/RECORD"] = ("\n".join(record) + "\n").encode()
    wheel = directory / "recurgent_demo_dep-0.1.0-py3-none-any.whl"
    with zipfile.ZipFile(wheel, "w") as archive:
        for name, data in files.items():
            archive.writestr(name, data)
    return wheel


class ReplyingSupervisor:
    """A stand-in supervisor that answers every run with one prepared result (a worker's
    answer as the parent receives it, without a process)."""

    backend = "none"
    pid = 1
    restarts = 0

    def __init__(self, result: RunResult) -> None:
        self._result = result

    def run(self, request: Any, handler: Any, *, timeout_seconds: float, **_: Any) -> RunResult:
        return self._result.model_copy(update={"call_id": request.call_id})


def worker_answer(memory: dict[Any, Any], source: str) -> RunResult:
    """What a worker answers for ``source`` over ``memory``: the steps of ``run_request``
    after the program ran (commit to the worker's copy, then ``_finish``), in this process, so
    a spec reaches the worker child's code of this checkout (a real worker imports the
    installed package)."""
    code = textwrap.dedent(source)
    limits = SandboxLimits(timeout_seconds=5.0)
    host = Host(memory=from_wire(to_wire(memory, "context", lambda _: None), lambda *_: None))
    sandbox = ExecutionSandbox(host.bridge(), limits=limits, commit_memory=False)
    done = sandbox.run(compile_program(code))
    patches = _child._commit(done, host.memory)
    request = RunRequest(
        call_id="c",
        role="probe",
        method_name="run",
        code=code,
        memory=to_wire(memory, "context", lambda _: None),
        args=[],
        kwargs={},
        limits=WireLimits(**{name: getattr(limits, name) for name in WireLimits.model_fields}),
    )
    forwarder = _child._Forwarder(cast(Any, None), "c")
    return _child._finish(request, forwarder, host.memory, done, patches)


def supervisor(**options: Any) -> WorkerSupervisor:
    """A worker on this interpreter (no environment), test hooks on."""
    options.setdefault("python", sys.executable)
    options.setdefault("test_hooks", True)
    return WorkerSupervisor(**options)


def confined(**settings: Any) -> IsolationSettings:
    """``isolation="process"`` settings (bubblewrap off unless asked for)."""
    settings.setdefault("use_bwrap", False)
    return IsolationSettings(mode="process", **settings)


def run(
    executor: ProcessExecutor,
    source: str,
    *,
    host: Host | None = None,
    timeout: float = 10.0,
    **limits: Any,
) -> WorkerExecutionResult:
    """Run dedented ``source`` once in the executor's worker."""
    host = host or Host()
    bridge = host.bridge()
    inputs = ExecutionInputs(memory=host.memory, args=host.args, kwargs=host.kwargs)
    return executor.run(
        Program(code=textwrap.dedent(source)),
        inputs,
        SandboxLimits(timeout_seconds=timeout, **limits),
        bridge,
    )


class LoopbackServer:
    """A TCP listener on 127.0.0.1 that accepts and closes connections (network probe)."""

    def __init__(self) -> None:
        self._socket = socket.create_server(("127.0.0.1", 0))
        self.port = self._socket.getsockname()[1]
        self.accepted = 0
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        while True:
            try:
                connection, _ = self._socket.accept()
            except OSError:
                return
            self.accepted += 1
            connection.close()

    def close(self) -> None:
        """Stop listening."""
        self._socket.close()
