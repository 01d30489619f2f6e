"""The resident-memory meter: one /proc/self/statm descriptor per process, a forked child's own."""

from __future__ import annotations

import os

import pytest

from recurgent._sandbox._memory import MemoryMeter

from .support import value_of


class TestMemoryMeter:
    """The resident-memory meter shares one /proc/self/statm descriptor per process (ADR 0063)."""

    @pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs /proc")
    def test_meters_share_one_descriptor_and_attempts_open_none(self) -> None:
        """Two meters read the same descriptor; 20 attempts leave the open-descriptor count as is."""
        first, second = MemoryMeter(), MemoryMeter()
        value_of("result = 1")
        before = len(os.listdir("/proc/self/fd"))

        for _ in range(20):
            assert value_of("result = [1] * 10") == [1] * 10

        assert first._fd is not None
        assert first._fd == second._fd
        assert len(os.listdir("/proc/self/fd")) == before

    @pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
    def test_a_forked_child_reads_its_own_process(self) -> None:
        """After fork the child's meter reads the child's statm, not the parent's (inherited) one."""
        assert MemoryMeter()._fd is not None
        read_end, write_end = os.pipe()
        pid = os.fork()
        if pid == 0:  # the child: report which file its meter reads, then leave at once
            meter = MemoryMeter()
            target = os.readlink(f"/proc/self/fd/{meter._fd}") if meter._fd is not None else ""
            os.write(write_end, target.encode())
            os._exit(0)
        os.close(write_end)
        report = os.read(read_end, 4096).decode()
        os.close(read_end)
        os.waitpid(pid, 0)

        assert report == f"/proc/{pid}/statm"
