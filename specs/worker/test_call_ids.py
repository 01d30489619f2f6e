"""The worker protocol trusts nothing: an answer under another call id is a crash (ADR 0095).

A real worker, and inside it a program that escaped the policy (the ``raw_exec`` test hook):
it finds the worker's protocol channel and writes its own lines to the parent before its run
ends: a result under a call id it made up, a result under the call id of the run before (a
stale answer), a forwarded call under another run's id. The parent takes none of them: each
is a ``WorkerCrashError``, the worker is killed, no forwarded call is answered, and the forged
value never reaches the caller. Without the parent's call-id check each of these specs fails.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from recurgent._worker._executor import ProcessExecutor
from recurgent._worker._pool import WorkerPool
from recurgent._worker._protocol import ForwardReply, ForwardRequest, RawExecRequest
from recurgent._worker._supervisor import WorkerSupervisor
from recurgent.errors import WorkerCrashError
from specs.worker.support import supervisor

pytestmark = pytest.mark.slow

_CHANNEL = """
import gc
from recurgent._worker._protocol import ForwardRequest, RunResult
channel = next(o for o in gc.get_objects() if type(o).__name__ == '_Channel')
"""


def _forged_result(call_id: str) -> str:
    return _CHANNEL + (
        f"channel.send(RunResult(call_id={call_id!r}, status='ok', value='forged'))\n"
        "result = 'honest'\n"
    )


@pytest.fixture
def worker() -> Iterator[WorkerSupervisor]:
    """A worker with test hooks in a pool of its own."""
    made = supervisor(pool=WorkerPool(idle_timeout_seconds=None, reaper=False))
    yield made
    made.shutdown()


def _refuse_forwarding(request: ForwardRequest) -> ForwardReply:
    raise AssertionError(f"the parent answered a forwarded call: {request!r}")


def test_a_result_under_a_made_up_call_id_is_a_crash(worker: WorkerSupervisor) -> None:
    """The escaped program's result comes first, under an id no run had: worker_crash, and
    the program's value never becomes the run's."""
    result = ProcessExecutor(worker).run_raw(_forged_result("feedfacefeedface"))

    assert isinstance(result.error, WorkerCrashError)
    assert "worker answered call 'feedfacefeedface' while" in result.error.message
    assert result.value is None
    assert not worker.running


def test_a_stale_result_from_the_run_before_is_a_crash(worker: WorkerSupervisor) -> None:
    """The run before ended under ``first-run``; a line under that id in the next run is not
    that run's answer."""
    first = worker.run(
        RawExecRequest(call_id="first-run", code="result = 'first'"),
        _refuse_forwarding,
        timeout_seconds=30.0,
    )
    assert (first.call_id, first.value) == ("first-run", "first")

    with pytest.raises(WorkerCrashError, match="answered call 'first-run' while 'second-run'"):
        worker.run(
            RawExecRequest(call_id="second-run", code=_forged_result("first-run")),
            _refuse_forwarding,
            timeout_seconds=30.0,
        )
    assert not worker.running


def test_a_forwarded_call_under_another_call_id_is_never_answered(
    worker: WorkerSupervisor,
) -> None:
    """A forwarded ``remember`` under another run's id: the parent runs nothing for it."""
    answered: list[ForwardRequest] = []

    def record(request: ForwardRequest) -> ForwardReply:
        answered.append(request)
        return ForwardReply(call_id=request.call_id, forward_id=request.forward_id, ok=True)

    forge = _CHANNEL + (
        "channel.send(ForwardRequest(call_id='someone-else', forward_id=1, op='remember', "
        "kwargs={'stolen': 1}))\n"
        "result = 'honest'\n"
    )
    with pytest.raises(WorkerCrashError, match="answered call 'someone-else'"):
        worker.run(RawExecRequest(call_id="mine", code=forge), record, timeout_seconds=30.0)
    assert answered == []
