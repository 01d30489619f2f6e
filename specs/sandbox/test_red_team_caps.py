"""Red-team findings, size caps: methods of host objects and streams that build huge values.

Each attack builds a huge value in one C call that the size caps did not see. Themes and
conventions: see ``test_red_team.py``.
"""

from __future__ import annotations

import io
import random

import pytest

from specs.sandbox.support import Host, execute


class TestMethodsOfCopiedHostObjectsAreCapped:
    """Finding 16 (fixed): a host ``random.Random`` in memory bypassed the size caps.

    Payload: ``context['rng'].randbytes(2 * 10**8)`` (200 MB in one C call), ``getrandbits(10**8)``,
    ``choices([1], k=2 * 10**7)`` (2 s, uninterruptible). The journal's copy is a plain
    ``random.Random`` (ADR 0057), not the sandbox's checked ``SandboxRandom``; the policy now
    applies the checked methods to any ``random.Random``.
    """

    @pytest.mark.parametrize(
        ("call", "message"),
        [
            ("getrandbits(10**8)", "getrandbits() would create a number of about 100000000 bits"),
            ("randbytes(2 * 10**8)", "randbytes() would create 200000000 items"),
            ("choices([1], k=2 * 10**7)", "choices() would create 20000000 items"),
            ("sample([1], 2 * 10**7, counts=[2 * 10**7])", "sample() would create 20000000 items"),
        ],
    )
    def test_a_huge_request_is_a_resource_limit(self, call: str, message: str) -> None:
        """Each call past its cap is refused before the work; the generator is unchanged."""
        rng = random.Random(1)
        state = rng.getstate()
        host = Host(memory={"rng": rng})

        result = execute(f"result = context['rng'].{call}", host=host)

        assert result.error is not None and result.error.error_type == "resource_limit"
        assert message in str(result.error)
        assert rng.getstate() == state

    def test_calls_within_the_caps_match_a_plain_generator_and_commit(self) -> None:
        """Values equal ``random.Random``'s own; the advanced state commits into the host's."""
        rng = random.Random(3)
        expected = random.Random(3)
        want = [
            expected.getrandbits(8),
            expected.randbytes(4),
            expected.choices([1, 2], k=3),
            expected.sample(range(10), 2),
        ]
        host = Host(memory={"rng": rng})
        source = (
            "r = context['rng']\n"
            "result = [r.getrandbits(8), r.randbytes(4), r.choices([1, 2], k=3), "
            "r.sample(range(10), 2)]"
        )

        result = execute(source, host=host)

        assert (result.error, result.value) == (None, want)
        assert host.memory["rng"] is rng and rng.getstate() == expected.getstate()


class TestStreamsCannotSeekPastTheCap:
    """Finding 17 (fixed): ``seek`` then ``write`` padded a stream to any size in one C call.

    Payload: ``s = io.StringIO(); s.seek(2 * 10**8); s.write('x')``: 2.5 GB of resident memory
    from a program's own stream or the journal's copy of a host's. ``seek`` of ``StringIO`` and
    ``BytesIO`` is now checked against the item cap (``SIZE_CAPS['items']``).
    """

    @pytest.mark.parametrize(
        "seek",
        [
            "s.seek(2 * 10**8)",
            "type(s).seek(s, 2 * 10**8)",
            "s.seek(0, 2)\ns.seek(2 * 10**8, 1)",
        ],
    )
    @pytest.mark.parametrize("stream", ["io.BytesIO()", "context['buf']"])
    def test_seeking_past_the_cap_is_a_resource_limit(self, seek: str, stream: str) -> None:
        """The seek is refused, the position is where it was, memory's stream is unchanged."""
        host = Host(memory={"buf": io.BytesIO(b"abc")})
        if "1)" in seek and stream == "io.BytesIO()":
            seek = seek.replace("(0, 2)", "(0, 0)")

        result = execute(f"import io\ns = {stream}\n{seek}\ns.write(b'x')", host=host)

        assert result.error is not None and result.error.error_type == "resource_limit"
        assert "BytesIO.seek() would create 200000" in str(result.error)
        assert host.memory["buf"].getvalue() == b"abc"

    def test_seeking_within_the_cap_behaves_as_usual(self) -> None:
        """Absolute and relative seeks return the new position; a write pads with zeros."""
        source = (
            "import io\ns = io.BytesIO(b'abc')\n"
            "result = [s.seek(0, 2), s.seek(-1, 1), s.read(), s.seek(5), s.write(b'z'), "
            "s.getvalue()]"
        )

        assert execute(source).value == [3, 2, b"c", 5, 1, b"abc\x00\x00z"]
