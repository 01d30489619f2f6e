"""Random ids cut from blocks of OS randomness (ADRs 0126, 0144).

Pins: an id is ``2 * count`` hex digits of bytes the OS gave, never handed out twice (the block
advances, and is refilled when it runs out); ids of one length are cut in a batch and handed
out in the order cut; a forked child never repeats its parent's ids.
"""

from __future__ import annotations

import os
import re

import pytest

from recurgent import _ids


class _TakenAfterTheCheck(list[str]):
    """An empty batch that looked non-empty when checked."""

    def __bool__(self) -> bool:
        return True


class TestRandomHex:
    def test_an_id_is_the_hex_of_the_next_bytes_of_the_block(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        draws: list[int] = []

        def urandom(size: int) -> bytes:
            draws.append(size)
            return bytes(range(256)) * (size // 256)

        monkeypatch.setattr(os, "urandom", urandom)
        monkeypatch.setattr(_ids, "_POOL", _ids._Pool())
        assert _ids.random_hex(4) == "00010203"
        assert _ids.random_hex(4) == "04050607"
        # 64 ids of four bytes were cut (bytes 0-255): ids of two bytes start after them.
        assert _ids.random_hex(2) == "0001"
        assert _ids.random_hex(2) == "0203"
        assert draws == [4096]

    def test_ids_too_long_for_a_batch_are_cut_as_many_as_fit(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        draws: list[int] = []

        def urandom(size: int) -> bytes:
            draws.append(size)
            return bytes([len(draws)]) * size

        monkeypatch.setattr(os, "urandom", urandom)
        monkeypatch.setattr(_ids, "_POOL", _ids._Pool())
        assert _ids.random_hex(3000) == "01" * 3000
        assert _ids.random_hex(3000) == "02" * 3000
        assert draws == [4096, 4096]

    def test_a_thread_finding_the_batch_empty_cuts_a_new_one(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        monkeypatch.setattr(os, "urandom", lambda size: bytes(range(256)) * (size // 256))
        pool = _ids._Pool(per_draw=2)
        monkeypatch.setattr(_ids, "_POOL", pool)
        assert _ids.random_hex(1) == "00"
        assert pool.ready == {1: ["01"]}
        # Another thread takes the last id between the check and the pop.
        pool.ready[1] = _TakenAfterTheCheck()
        assert _ids.random_hex(1) == "02"
        assert _ids.random_hex(1) == "03"

    def test_a_block_that_runs_out_is_replaced_not_reused(
        self, monkeypatch: pytest.MonkeyPatch
    ) -> None:
        blocks = iter([b"\x01" * 4096, b"\x02" * 4096])
        monkeypatch.setattr(os, "urandom", lambda size: next(blocks))
        monkeypatch.setattr(_ids, "_POOL", _ids._Pool())
        taken = [_ids.random_hex(1024) for _ in range(4)]
        assert taken == ["01" * 1024] * 4
        assert _ids.random_hex(8) == "02" * 8

    def test_an_id_of_no_bytes_is_empty_text(self) -> None:
        assert (_ids.random_hex(0), _ids.random_hex(0)) == ("", "")

    def test_ids_are_hex_of_the_asked_length_and_all_different(self) -> None:
        ids = [_ids.random_hex(8) for _ in range(5000)]
        assert all(re.fullmatch(r"[0-9a-f]{16}", one) for one in ids)
        assert len(set(ids)) == 5000

    @pytest.mark.skipif(not hasattr(os, "fork"), reason="fork only")
    def test_a_forked_child_draws_its_own_block(self) -> None:
        _ids.random_hex(8)  # the parent holds a partly used block
        read, write = os.pipe()
        pid = os.fork()
        if pid == 0:  # pragma: no cover - the child
            os.close(read)
            os.write(write, _ids.random_hex(8).encode())
            os._exit(0)
        os.close(write)
        child = os.read(read, 64).decode()
        os.close(read)
        os.waitpid(pid, 0)
        parent_next = _ids.random_hex(8)
        assert len(child) == 16
        assert child != parent_next
