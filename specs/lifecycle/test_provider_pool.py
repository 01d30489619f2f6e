"""The provider pool starts a worker for every job no idle worker can take at once."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

from recurgent._lifecycle._workers import ProviderPool, _Done, _Job


class TestDispatch:
    """Jobs dispatched back to back never queue behind a job that waits for them."""

    def test_two_jobs_that_wait_for_each_other_both_finish(self) -> None:
        """With one idle worker, a second job dispatched before it wakes gets its own worker."""
        pool = ProviderPool(max_workers=4)
        assert pool.run(object(), lambda: "warm", timeout=5) == "warm"
        while pool._idle != 1:  # the warm worker is back waiting for work
            time.sleep(0.001)
        both = threading.Barrier(2, timeout=5)

        def after_both(name: str) -> Callable[[], object]:
            return lambda: both.wait() >= 0 and name

        jobs = [_Job(after_both(name), key=i) for i, name in enumerate("ab")]
        with pool._lock:  # both dispatched before the idle worker can wake and take one
            for job in jobs:
                pool._dispatch(job)
        for job in jobs:
            job.done.wait(10)

        assert ([job.reply for job in jobs], pool.workers) == (["a", "b"], 2)


def test_done_flag_waits_until_set_from_another_thread() -> None:
    """A job's completion flag times out while unset and wakes its waiter once set elsewhere."""
    done = _Done()
    assert (done.is_set(), done.wait(0), done.wait(-1)) == (False, False, False)

    setter = threading.Thread(target=done.set)
    setter.start()
    woke = done.wait(10)
    setter.join()

    assert (woke, done.is_set(), done.wait(0), done.wait()) == (True, True, True, True)
