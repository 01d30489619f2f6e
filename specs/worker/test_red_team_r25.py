"""Red team R25: hostile programs against the worker path (``isolation="process"``).

The same programs run on an in-process agent and on a process-isolated one: the compile-time
and builtin rules of R22 to R24 (star-unpacking, ``print``'s options, ``str`` spread, qualified
names) answer alike; hangs that sleep, swallow the stop or backtrack in a regex end by the
deadline plus the parent's grace and the next call works; what one call leaves in a warm
worker's modules does not reach the next; hostile answers come back as typed Outcomes with
memory unchanged on failure. Broken, fixed and pinned (ADR 0152): a lone surrogate in any
text on the pipe was a ``worker_crash`` (host memory holding one stopped every call), a
datetime made by ``email.utils`` reached ``_strptime``'s caches without retiring the worker,
and, for a program that escaped the policy, bubblewrap showed the project checkout above the
package, kept root's capabilities (a read-only bind was remounted and written) and no
file-size limit bounded what a worker wrote. Found on the way, in process, fixed: in-place
writes nested memory past the 64-level cap, about 60 levels a call. And the size of memory was
spent from the program's deadline (fixed: only changed keys are encoded after a run).

A worker imports the ``recurgent`` its interpreter finds under ``python -I``; when that is not
this checkout's (a git worktree beside an editable install), the module's fixture adds that
package directory (only it) to what bubblewrap binds, so the worker can start. Run from the
installed checkout, it adds nothing new.
"""

from __future__ import annotations

import os
import resource
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import pytest

import recurgent
from recurgent import Agent
from recurgent._worker import _supervisor
from recurgent._worker._env import host_paths
from recurgent._worker._executor import ProcessExecutor
from recurgent._worker._isolation import bwrap_path
from recurgent._worker._pool import WorkerPool
from recurgent.outcome import Outcome
from recurgent.testing import ScriptedProvider, read_log
from specs.worker.support import LoopbackServer, confined, supervisor

pytestmark = pytest.mark.slow

needs_bwrap = pytest.mark.skipif(
    bwrap_path() is None,
    reason="bwrap (bubblewrap) is not installed or cannot create namespaces here",
)

#: The deadline of the timing specs, and the bound a hang must end within (deadline + 1 s).
DEADLINE = 1.0
BOUND = DEADLINE + 1.0


def _installed_package() -> str:
    """The ``recurgent`` package directory ``python -I`` imports (the worker's)."""
    found = subprocess.run(
        [
            sys.executable,
            "-I",
            "-c",
            "import os, recurgent; print(os.path.dirname(os.path.realpath(recurgent.__file__)))",
        ],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return found.stdout.strip()


@pytest.fixture(scope="module")
def worker_paths() -> Iterator[tuple[str, ...]]:
    """What bubblewrap binds for this module's workers: the runtime's paths and the package
    directory the worker's interpreter imports (the same one, run from the installed checkout)."""
    paths = (*host_paths(), _installed_package())
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(_supervisor, "runtime_paths", lambda: paths)
        yield paths


def _agent(
    isolation: Literal["in_process", "process"],
    programs: dict[str, str],
    *,
    log: Path | bool = False,
    timeout: float = 5.0,
) -> Agent:
    return Agent(
        "probe",
        provider=ScriptedProvider(programs),
        log=log,
        toolstore_root=None,
        isolation=isolation,
        execution_timeout_seconds=timeout,
    )


def _shutdown(agent: Agent) -> None:
    workers = agent._agent.workers
    if workers is not None:
        workers.shutdown()


# --- 1. The R22-R24 rules answer alike in a worker -------------------------------------------

RULES: dict[str, str] = {
    # A million items unpacked, not ten: the same rule, and the in-process twin builds its list
    # well inside the five-second deadline on a loaded machine (it timed out once).
    "repeat_star": "return len([*range(10**6)] * 20)",
    "sep_list": "print('a', 'b', sep=[[1] * 1000] * 100000)\nreturn 1",
    "sep_wide": "print(*[''] * 10**6, sep='y' * 10**4)\nreturn 1",
    "str_star": "x = [[1] * 1000] * 100000\nreturn len(str(*[x]))",
    "str_object": "x = [[1] * 1000] * 100000\nreturn len(str(object=x))",
    "qualname": "def f():\n    pass\nreturn [f.__qualname__, f.__name__]",
    "generator_names": "def g():\n    yield 1\nreturn [g().__name__, g().__qualname__]",
    "class_module": "class A:\n    pass\nreturn A.__module__",
}
RULE_ANSWERS: dict[str, tuple[str, str | None, Any]] = {
    "repeat_star": (
        "resource_limit",
        "Resource limit in probe.repeat_star: sequence repetition would create 20000000 "
        "items; the sandbox limit is 10000000",
        None,
    ),
    "sep_list": (
        "execution",
        "Execution error in probe.sep_list: TypeError: sep must be None or a string, not list",
        None,
    ),
    "sep_wide": (
        "resource_limit",
        "Resource limit in probe.sep_wide: print() would create 9999990001 items; the sandbox "
        "limit is 10000000",
        None,
    ),
    "str_star": (
        "resource_limit",
        "Resource limit in probe.str_star: str() would create 10000517 items; the sandbox "
        "limit is 10000000",
        None,
    ),
    "str_object": (
        "resource_limit",
        "Resource limit in probe.str_object: str() would create 10000517 items; the sandbox "
        "limit is 10000000",
        None,
    ),
    "qualname": ("", None, ["f", "f"]),
    "generator_names": ("", None, ["g", "g"]),
    "class_module": (
        "invalid_code",
        'Generated code breaks the sandbox policy: Line 3: "__module__" is an invalid '
        'attribute name because it starts with "_".',
        None,
    ),
}


@pytest.fixture(scope="module")
def rule_twins(worker_paths: tuple[str, ...]) -> Iterator[tuple[Agent, Agent]]:
    """An in-process agent and a process-isolated one with the rule programs."""
    here, there = _agent("in_process", RULES), _agent("process", RULES)
    yield here, there
    _shutdown(there)


@pytest.mark.parametrize("method", list(RULES))
def test_the_r22_to_r24_rules_answer_alike_in_a_worker(
    rule_twins: tuple[Agent, Agent], method: str
) -> None:
    """Star-unpacking past the item cap, ``print``'s non-text ``sep`` and its counted line,
    ``str(*[x])`` and ``str(object=x)`` of a shared structure, program qualified names and a
    refused ``__module__``: the worker's Outcome has the in-process error type, message and
    value, exactly."""
    here, there = (getattr(agent, method)() for agent in rule_twins)
    error_type, message, value = RULE_ANSWERS[method]

    assert (there.error_type, there.error_message, there.value) == (
        here.error_type,
        here.error_message,
        here.value,
    )
    assert (there.error_type or "", there.error_message, there.value) == (
        error_type,
        message,
        value,
    )


ENDLESS: dict[str, str] = {
    "wide_zip": "return sum(1 for _ in zip(*[range(10**7)] * 16))",
    "star_of_count": "import itertools\nreturn max(*itertools.count())",
}


@pytest.mark.parametrize("method", list(ENDLESS))
def test_endless_star_arguments_stop_at_the_deadline_in_a_worker_as_in_process(
    worker_paths: tuple[str, ...], method: str
) -> None:
    """A zip of sixteen ten-million ranges walked item by item, and ``max(*count())``: both
    end as the in-process ``timeout`` with the same message (the worker's own sandbox stops
    them, not the parent's kill), and the worker answers the next call."""
    programs = {**ENDLESS, "one": "return 1"}
    here = _agent("in_process", programs, timeout=DEADLINE)
    there = _agent("process", programs, timeout=DEADLINE)
    try:
        expected = getattr(here, method)()
        outcome = getattr(there, method)()

        assert expected.error_type == "timeout"
        assert (outcome.error_type, outcome.error_message) == (
            "timeout",
            expected.error_message,
        )
        assert there.one().value == 1
    finally:
        _shutdown(there)


# --- 2. Time: hangs end by the deadline plus the grace ------------------------------------

HANGS: dict[str, str] = {
    "sleep": "import time\ntime.sleep(100)\nreturn 1",
    "swallow": (
        "n = 0\nwhile True:\n    try:\n        while True:\n            n += 1\n"
        "    except BaseException:\n        pass"
    ),
    "looping_finally": "try:\n    while True:\n        pass\nfinally:\n    while True:\n        pass",
    "generator_swallows_close": (
        "def g():\n    while True:\n        try:\n            yield 1\n"
        "        except BaseException:\n            pass\nx = g()\nnext(x)\nwhile True:\n    pass"
    ),
    "generator_finally_loops": (
        "def g():\n    try:\n        yield 1\n    finally:\n        while True:\n"
        "            pass\nx = g()\nnext(x)\nreturn 1"
    ),
    "regex_backtracking": "import re\nreturn re.match(r'(a|aa)+$', 'a' * 60 + 'b')",
}


@pytest.mark.parametrize("method", list(HANGS))
def test_a_hang_ends_by_the_deadline_plus_one_second_and_the_next_call_works(
    worker_paths: tuple[str, ...], tmp_path: Path, method: str
) -> None:
    """Sleeping, swallowing the stop in ``except BaseException`` or a looping ``finally``, a
    generator that swallows or loops on close, and catastrophic backtracking: each is
    a ``timeout`` within deadline + 1 s (less the worker's start-up), one attempt, the worker
    is retired, and the next call answers on a fresh worker."""
    log = tmp_path / "calls.jsonl"
    agent = _agent("process", {**HANGS, "one": "return 1"}, log=log, timeout=DEADLINE)
    try:
        began = time.monotonic()
        outcome = getattr(agent, method)()
        wall = time.monotonic() - began
        after = agent.one()
    finally:
        _shutdown(agent)

    hang, following = read_log(log)
    assert outcome.error_type == "timeout"
    assert wall - hang["worker_start_ms"] / 1000.0 < BOUND, (wall, hang["worker_start_ms"])
    assert hang["worker_retired"] == "timeout"
    assert (after.status, after.value) == ("ok", 1)
    assert following["worker_pid"] != hang["worker_pid"]


# --- 3. Process-wide state: what one call leaves, the next does not see -------------------

STATE: list[tuple[str, str, str, Any]] = [
    (
        "hashlib_sets",
        "import hashlib\nhashlib.algorithms_available.add('pwn')\n"
        "hashlib.algorithms_guaranteed.discard('md5')\nreturn 1",
        "import hashlib\nreturn ['pwn' in hashlib.algorithms_available, "
        "'md5' in hashlib.algorithms_guaranteed]",
        [False, True],
    ),
    (
        "calendar_mdays",
        "import calendar\ncalendar.mdays[2] = 30\nreturn 1",
        "import calendar\nreturn [calendar.mdays[2], calendar.monthrange(2023, 2)]",
        [28, (2, 28)],
    ),
    (
        "decimal_context",
        "import decimal\ndecimal.getcontext().prec = 3\nreturn 1",
        "import decimal\nreturn str(decimal.Decimal(1) / 7)",
        "0.1428571428571428571428571429",
    ),
    (
        "random_seed",
        "import random\nrandom.seed(1)\nreturn 1",
        "import random\nreturn random.random() == 0.13436424411240122",
        False,
    ),
]


@pytest.mark.parametrize(
    ("write", "read", "expected"),
    [entry[1:] for entry in STATE],
    ids=[entry[0] for entry in STATE],
)
def test_what_a_call_leaves_in_a_warm_worker_does_not_reach_the_next(
    worker_paths: tuple[str, ...], tmp_path: Path, write: str, read: str, expected: Any
) -> None:
    """Mutating ``hashlib``'s algorithm sets or ``calendar.mdays``, the decimal context and the
    random seed: the writing call answers, the next call runs on the same warm worker (same
    pid, nothing retired) and reads the pristine value."""
    log = tmp_path / "calls.jsonl"
    agent = _agent("process", {"write": write, "read": read}, log=log)
    try:
        written = agent.write()
        seen = agent.read()
    finally:
        _shutdown(agent)

    first, second = read_log(log)
    assert (written.status, written.value) == ("ok", 1)
    assert (seen.status, seen.value) == ("ok", expected)
    assert (first["worker_retired"], second["worker_pid"]) == (None, first["worker_pid"])


MUTATIONS: dict[str, str] = {
    "counter_method": (
        "import collections\ncollections.Counter.most_common = lambda self, n=None: 'pwn'\nreturn 1"
    ),
    "json_encoder": "import json\njson.JSONEncoder.item_separator = '!!'\nreturn 1",
    "json_module": "import json\njson.dumps = len\nreturn 1",
    "abc_register": ("import collections.abc\ncollections.abc.Sequence.register(dict)\nreturn 1"),
    "numbers_register": "import numbers\nnumbers.Number.register(str)\nreturn 1",
}


@pytest.mark.parametrize("method", list(MUTATIONS))
def test_a_change_to_a_shared_class_or_module_is_refused_in_a_worker_as_in_process(
    worker_paths: tuple[str, ...], method: str
) -> None:
    """A method set on ``Counter``, a ``JSONEncoder`` class attribute, a module function
    replaced, an ABC registration of a builtin: refused with the in-process error type and
    message, and the next call reads the untouched behaviour."""
    reads = {
        "check": (
            "import collections, collections.abc, json, numbers\n"
            "return [collections.Counter('aab').most_common(), json.dumps([1, 2]), "
            "isinstance({}, collections.abc.Sequence), isinstance('a', numbers.Number)]"
        )
    }
    programs = {**MUTATIONS, **reads}
    here = _agent("in_process", programs)
    there = _agent("process", programs)
    try:
        expected = getattr(here, method)()
        outcome = getattr(there, method)()
        check = there.check()
    finally:
        _shutdown(there)

    assert expected.status == "error"
    assert (outcome.error_type, outcome.error_message) == (
        expected.error_type,
        expected.error_message,
    )
    assert check.value == [[("a", 2), ("b", 1)], "[1, 2]", False, False]


def test_a_run_that_reached_strptime_through_email_utils_retires_its_worker(
    worker_paths: tuple[str, ...], tmp_path: Path
) -> None:
    """The second wall does not depend on the program importing ``datetime`` by name: a run
    that imports ``email.utils`` (whose datetimes reach ``_strptime``'s process-wide caches)
    retires its worker, as one importing ``datetime`` does (it was not retired, ADR 0152)."""
    log = tmp_path / "calls.jsonl"
    program = (
        "import email.utils\n"
        "d = email.utils.parsedate_to_datetime('Mon, 20 Nov 1995 19:12:08 -0500')\n"
        "return d.strptime('2024', '%Y').year"
    )
    agent = _agent("process", {"parsed": program}, log=log)
    try:
        assert agent.parsed().value == 2024
    finally:
        _shutdown(agent)

    (entry,) = read_log(log)
    assert entry["worker_retired"] == "module:email"


# --- 4. The protocol: hostile answers as data ------------------------------------------------

ANSWERS: dict[str, str] = {
    "nested_64": "x = 1\nfor _ in range(64):\n    x = [x]\nreturn x",
    "nested_70": "x = 1\nfor _ in range(70):\n    x = [x]\nreturn x",
    "long_key": "return {'k' * 10**6: 1}",
    "odd_keys": "return {float('nan'): 1, (1, 2): frozenset({3}), 7: b'\\x00'}",
    "int_at_cap": "return (1 << 999_999).bit_length()",
    "exception_value": "return ValueError([1, {2: 3}])",
    "own_exception": "class E(ValueError):\n    pass\nreturn E('x')",
    "raising_repr": "class A:\n    def __repr__(self):\n        raise RuntimeError('boom')\nreturn A()",
    "hashed_member": "class A:\n    def __hash__(self):\n        return 1\nreturn {A()}",
}


@pytest.fixture(scope="module")
def answer_twins(worker_paths: tuple[str, ...]) -> Iterator[tuple[Agent, Agent]]:
    """An in-process agent and a process-isolated one with the hostile answers."""
    here, there = _agent("in_process", ANSWERS), _agent("process", ANSWERS)
    yield here, there
    _shutdown(there)


def _shape(outcome: Outcome) -> tuple[Any, ...]:
    value = outcome.value
    if isinstance(value, BaseException):
        value = (type(value), value.args)
    elif isinstance(value, dict):
        value = sorted((repr(key)[:20], type(key), repr(item)) for key, item in value.items())
    return (outcome.status, outcome.error_type, outcome.error_message, value)


@pytest.mark.parametrize("method", list(ANSWERS))
def test_a_hostile_answer_is_the_same_outcome_in_a_worker(
    answer_twins: tuple[Agent, Agent], method: str
) -> None:
    """Nesting at and past the 64-level cap, a million-character key, NaN/tuple/int keys, a
    million-bit int, builtin and program exceptions, a class whose ``repr`` raises, a set of
    program objects: the worker's Outcome has the in-process status, error type, message and
    value."""
    here, there = (getattr(agent, method)() for agent in answer_twins)
    assert _shape(there) == _shape(here)


FAILED_WRITES: dict[str, str] = {
    "stores_a_function": "context['a'] = 2\ncontext['b'] = lambda: 1\nreturn 1",
    "raises_after_writing": "context['a'] = 3\nraise ValueError('no')",
    "stores_too_deep": "x = 1\nfor _ in range(70):\n    x = [x]\ncontext['a'] = 4\ncontext['b'] = x",
}


@pytest.mark.parametrize("method", list(FAILED_WRITES))
def test_a_failed_call_leaves_memory_as_it_was(worker_paths: tuple[str, ...], method: str) -> None:
    """A program that writes memory and then fails (a function stored, an exception, a value
    nested too deep): the Outcome is an error and memory holds exactly what it held before."""
    agent = _agent("process", FAILED_WRITES)
    agent.a = 1
    try:
        outcome = getattr(agent, method)()
    finally:
        _shutdown(agent)

    assert outcome.status == "error"
    assert outcome.error_type in {"non_serializable_result", "execution", "worker_crash"}
    assert (agent.runtime_context.get("a"), "b" in agent.runtime_context) == (1, False)


SURROGATES: dict[str, tuple[str, tuple[Any, ...]]] = {
    "answered": ("return '\\ud800x'", ()),
    "printed": ("print('\\ud800')\nreturn 1", ()),
    "raised": ("raise ValueError('\\ud800')", ()),
    "remembered": ("remember(k='\\ud800')\nreturn 1", ()),
    "argument": ("return len(args[0])", ("caf\udce9",)),
    "stored": ("context['b'] = '\\ud800'\nreturn context['b']", ()),
}


def _surrogate_twins(method: str) -> tuple[Outcome, Outcome]:
    code, args = SURROGATES[method]
    here = _agent("in_process", {method: code})
    there = _agent("process", {method: code})
    try:
        return getattr(here, method)(*args), getattr(there, method)(*args)
    finally:
        _shutdown(there)


@pytest.mark.parametrize("method", list(SURROGATES))
def test_a_lone_surrogate_crosses_the_pipe_as_in_process(
    worker_paths: tuple[str, ...], method: str
) -> None:
    """Text with a lone surrogate, answered, printed, raised, remembered, stored or passed in:
    the worker's Outcome has the in-process status, error type and value (each was a
    ``worker_crash``: pydantic-core's JSON parser refuses the escape ``json.dumps`` writes;
    the protocol reads such a line with the standard library's, ADR 0152)."""
    here, there = _surrogate_twins(method)
    assert (there.status, there.error_type, there.value) == (
        here.status,
        here.error_type,
        here.value,
    )


def test_memory_with_a_lone_surrogate_does_not_stop_an_isolated_agent(
    worker_paths: tuple[str, ...],
) -> None:
    """An agent whose memory holds ``'caf\\udce9'`` answers ``return 1``, as in process (the
    worker refused the run request and exited, on every call)."""
    agent = _agent("process", {"one": "return 1"})
    agent.name = "caf\udce9"
    try:
        outcome = agent.one()
    finally:
        _shutdown(agent)
    assert (outcome.status, outcome.value) == ("ok", 1)


# --- 5. The second wall, for a program that escaped the policy ------------------------------


@pytest.fixture(scope="module")
def walled(worker_paths: tuple[str, ...]) -> Iterator[ProcessExecutor]:
    """A worker in bubblewrap with the network denied, test hooks on (raw programs)."""
    if bwrap_path() is None:
        pytest.skip("bwrap (bubblewrap) is not installed or cannot create namespaces here")
    worker = supervisor(
        isolation=confined(use_bwrap=True, network="deny"),
        host_paths=worker_paths,
        pool=WorkerPool(idle_timeout_seconds=None, reaper=False),
    )
    yield ProcessExecutor(worker)
    worker.shutdown()


@needs_bwrap
def test_an_escaped_program_in_bubblewrap_has_no_network_no_host_pids_and_no_secrets(
    walled: ProcessExecutor, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """Raw Python in the worker: a connection to a listener on this host's loopback is refused
    (its own network namespace) and the listener accepts nothing, it is pid 2 under bwrap's
    pid 1 and cannot signal this process's pid, the environment has no API key, and a file in
    the host's temporary directory is not there (``/tmp`` is its own: it holds its scratch
    directory and the mount points of what is bound, which may live under the host's
    ``/tmp``)."""
    assert os.getpid() > 2
    marker = tmp_path / "host-only.txt"
    marker.write_text("host")
    walled.supervisor.shutdown()
    monkeypatch.setenv("OPENAI_API_KEY", "sk-must-not-leak")
    server = LoopbackServer()
    try:
        raw = walled.run_raw(
            "import os, socket\n"
            "try:\n"
            f"    socket.create_connection(('127.0.0.1', {server.port}), timeout=1)\n"
            "    net = 'connected'\n"
            "except OSError as error:\n"
            "    net = error.strerror\n"
            f"try:\n    os.kill({os.getpid()}, 0)\n    host = 'reached'\n"
            "except OSError as error:\n    host = error.strerror\n"
            "result = [net, os.getpid(), host, 'OPENAI_API_KEY' in os.environ,"
            f" os.path.exists({str(marker)!r})]"
        )
    finally:
        server.close()
    assert raw.error is None, raw.error
    assert raw.value == ["Connection refused", 2, "No such process", False, False]
    assert (server.accepted, raw.log_fields["isolation_backend"]) == (0, "bwrap")


@needs_bwrap
def test_an_escaped_program_in_bubblewrap_does_not_see_the_project_checkout(
    walled: ProcessExecutor,
) -> None:
    """The files beside the ``recurgent`` package of this checkout stay outside the worker
    (the whole checkout was bound: ``pyproject.toml``, ``.git``, any ``.env``; ADR 0152)."""
    root = Path(recurgent.__file__).resolve().parent.parent
    beside = sorted(
        str(path) for path in root.iterdir() if path.name != "recurgent" and path.is_file()
    )
    if not beside:
        pytest.skip("recurgent is not installed from a source tree")
    raw = walled.run_raw(f"import os\nresult = [p for p in {beside!r} if os.path.exists(p)]")
    assert raw.error is None, raw.error
    assert raw.value == []


_REMOUNT = """
import ctypes
libc = ctypes.CDLL(None, use_errno=True)
outcome = []
try:
    open({path!r}, 'a').close()
    outcome.append('written')
except OSError as error:
    outcome.append(error.strerror)
# MS_REMOUNT | MS_BIND without MS_RDONLY: make the read-only bind writable.
outcome.append(libc.mount(None, {folder!r}.encode(), None, 32 | 4096, None))
try:
    with open({path!r}, 'w') as handle:
        handle.write('changed by the worker')
    outcome.append('written')
except OSError as error:
    outcome.append(error.strerror)
result = outcome
"""


@needs_bwrap
@pytest.mark.skipif(
    os.geteuid() != 0,
    reason="only root's capabilities are at stake (unprivileged, bubblewrap drops them)",
)
def test_an_escaped_program_cannot_write_through_a_read_only_bind(
    worker_paths: tuple[str, ...], tmp_path: Path
) -> None:
    """A host directory bound read-only stays unchanged whatever raw Python in the worker
    does: the plain write is refused (read-only file system), and so is the remount (run by
    root, bubblewrap kept every capability until ADR 0152 dropped them)."""
    folder = tmp_path / "bound"
    folder.mkdir()
    target = folder / "file.txt"
    target.write_text("original")
    worker = supervisor(
        isolation=confined(use_bwrap=True, network="deny"),
        host_paths=(*worker_paths, str(folder)),
        pool=WorkerPool(idle_timeout_seconds=None, reaper=False),
    )
    executor = ProcessExecutor(worker)
    try:
        raw = executor.run_raw(_REMOUNT.format(path=str(target), folder=str(folder)))
    finally:
        worker.shutdown()
    assert raw.error is None, raw.error
    assert raw.value[0] == "Read-only file system"
    assert target.read_text() == "original"


def test_a_confined_worker_cannot_write_files_of_any_size() -> None:
    """``RLIMIT_FSIZE`` of a confined worker is its ``max_file_bytes``, 64 MiB (it had none:
    code that escaped the policy could fill the host's disk, ADR 0152)."""
    worker = supervisor(
        isolation=confined(), pool=WorkerPool(idle_timeout_seconds=None, reaper=False)
    )
    executor = ProcessExecutor(worker)
    try:
        raw = executor.run_raw(
            "import resource\nresult = resource.getrlimit(resource.RLIMIT_FSIZE)[1]"
        )
    finally:
        worker.shutdown()
    assert raw.error is None, raw.error
    assert raw.value == 64 * 1024**2


# --- Found on the way: in-place nesting and a shared value fanned out ---------------------

DEEPEN = (
    "x = context['deep']\nwhile x:\n    x = x[0]\ny = []\nfor _ in range(60):\n"
    "    y = [y]\nx.append(y)\nreturn 1"
)


def _depth(value: Any) -> int:
    depth = 0
    while isinstance(value, list) and value:
        value, depth = value[0], depth + 1
    return depth


def test_a_worker_refuses_memory_nested_past_the_cap_in_place(
    worker_paths: tuple[str, ...],
) -> None:
    """Two calls each append a 61-level list at the innermost list of memory: the first
    leaves 61 levels, the second (122 levels) is ``non_serializable_result`` naming the 64-level
    cap, and memory keeps 61 levels."""
    agent = _agent("process", {"deepen": DEEPEN})
    agent.deep = []
    try:
        first, second = agent.deepen(), agent.deepen()
    finally:
        _shutdown(agent)
    assert (first.status, second.error_type) == ("ok", "non_serializable_result")
    assert "is nested more than 64 levels deep" in (second.error_message or "")
    assert _depth(agent.runtime_context["deep"]) == 61


def test_in_process_memory_is_not_nested_past_the_cap_in_place() -> None:
    """The in-process agent refuses the second deepening as the worker does: the nesting cap
    counts from memory's top, not from where a call attaches its value (each call could add 61
    levels in place, until reads of the key failed with ``RecursionError``; ADR 0152)."""
    agent = _agent("in_process", {"deepen": DEEPEN})
    agent.deep = []
    first, second = agent.deepen(), agent.deepen()
    assert (first.status, second.error_type) == ("ok", "non_serializable_result")
    assert "is nested more than 64 levels deep" in (second.error_message or "")
    assert _depth(agent.runtime_context["deep"]) == 61


def test_a_shared_value_fanned_out_stops_at_the_message_cap_without_growing_the_host(
    worker_paths: tuple[str, ...],
) -> None:
    """``[s] * 500`` of one million-character string is 1 MB in process but 500 MB as a
    tree on the pipe: the parent stops reading at its 64 MiB message cap (``worker_crash``),
    its own peak grows by less than 256 MiB, and the next call answers."""
    programs = {
        "fan": "s = 'a' * 10**6\nreturn [s] * 500",
        "one": "return 1",
    }
    agent = _agent("process", programs, timeout=10.0)
    try:
        assert agent.one().value == 1
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        outcome = agent.fan()
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        following = agent.one()
    finally:
        _shutdown(agent)
    assert outcome.error_type == "worker_crash"
    assert "worker sent a message over 67108864 bytes" in (outcome.error_message or "")
    assert after - before < 256 * 1024  # KiB
    assert following.value == 1


def test_a_large_memory_does_not_spend_the_programs_deadline(
    worker_paths: tuple[str, ...],
) -> None:
    """With six million items in memory, ``return 1`` answers within a 3 s deadline in a
    worker, as in process. It timed out: every run encoded the whole of memory after the
    program and compared it key by key (about 4 s of this memory inside the deadline); now
    only the keys the run changed are encoded, and lists of plain scalars cross at C speed
    both ways (about 0.5 s; ADR 0152)."""
    agent = _agent("process", {"one": "return 1"}, timeout=3.0)
    agent.big = [7] * 6_000_000
    try:
        outcome = agent.one()
    finally:
        _shutdown(agent)
    assert (outcome.status, outcome.value) == ("ok", 1)
