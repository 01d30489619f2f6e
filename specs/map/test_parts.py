"""The map's parts on their own: the repair rule, what a program needs, the remote runner's
plain-data round trip, and the lazy imports."""

from __future__ import annotations

import subprocess
import sys

import pytest

from recurgent._execution import FORWARDED
from recurgent._lifecycle._map_items import Tally
from recurgent._map._inprocess import InProcessBatches
from recurgent._map._needs import program_needs
from recurgent._map._ray import RayBatches
from recurgent._map._runner import BatchRunner, decode_result, encode_job
from recurgent._parsing import parse_python
from recurgent._sandbox import SandboxLimits
from recurgent.errors import ExecutionError, ExecutionTimeoutError, InvalidCodeError
from recurgent.outcome import Outcome


def _error(kind: str) -> Outcome:
    return Outcome(
        status="error", error_type=kind, error_message="x", tool_role="r", method_name="m"
    )


class TestRepairRule:
    @pytest.mark.parametrize(
        ("ran", "failed", "repair"),
        [(10, 2, False), (10, 3, True), (100, 9, False), (100, 10, True), (1000, 99, False)],
    )
    def test_three_failures_and_a_tenth_of_the_items(
        self, ran: int, failed: int, repair: bool
    ) -> None:
        """At least 3 intrinsic failures that are at least 10% of the items run (ADR 0110)."""
        tally = Tally()
        for _ in range(failed):
            tally.count(_error("execution"))
        for _ in range(ran - failed):
            tally.count(Outcome(status="ok", value=1))

        assert tally.needs_repair() is repair

    def test_timeouts_and_domain_errors_never_ask_for_a_repair(self) -> None:
        """A hung item is no sign of a wrong program, nor is an error the program chose."""
        tally = Tally()
        for _ in range(5):
            tally.count(_error("timeout"))
            tally.count(_error("not_found"))

        assert (tally.needs_repair(), tally.errors, tally.timeouts) == (False, 10, 5)


class TestNeeds:
    @pytest.mark.parametrize(
        ("code", "needs"),
        [
            ("result = args[0] + 1", set()),
            ("result = tool('x').run(args[0])", {"tool"}),
            ("h = delegate('helper')\nresult = content('ref-1')", {"delegate", "content"}),
            ("remember(a=1)", {"remember"}),
            ("import urllib.request\nresult = 1", {"network"}),
            ("from urllib.request import urlopen\nresult = 1", {"network"}),
        ],
    )
    def test_the_forwarded_calls_a_program_names(self, code: str, needs: set[str]) -> None:
        """Read from the tree: forwarders loaded, network modules imported."""
        assert set(program_needs(parse_python(code, "<spec>"))) == needs

    def test_ray_serves_only_the_network(self) -> None:
        """A Ray actor holds no agent: of the forwarded calls it serves only network requests;
        the in-process executor serves them all."""
        assert RayBatches.capabilities.serves == {"network"}
        assert InProcessBatches.capabilities.serves == FORWARDED


class TestRunner:
    def _runner(self, code: str, memory: dict[str, object] | None = None) -> BatchRunner:
        job = encode_job(
            code=code,
            role="r",
            method="m",
            memory=memory or {},
            limits=SandboxLimits(timeout_seconds=0.5),
            network="deny",
        )
        return BatchRunner(job)

    def test_results_cross_as_plain_data_and_come_back_typed(self) -> None:
        """A tuple value, a raised error and a memory write each survive the round trip."""
        runner = self._runner(
            "if args[0] == 0:\n    context['k'] = 1\nresult = (10 // args[0], context['base'])",
            {"base": 7},
        )

        wire = runner.run([[[2], {}], [[0], {}]])
        ok, failed = (decode_result(item) for item in wire)

        assert (ok.value, ok.error, ok.writes) == ((5, 7), None, None)
        assert isinstance(failed.error, ExecutionError)
        assert "ZeroDivisionError" in failed.error.message
        assert failed.writes is None

    def test_a_write_comes_back_named(self) -> None:
        """The keys an item wrote cross, so the driver can refuse them."""
        (wire,) = self._runner("context['k'] = args[0]\nresult = 1").run([[[3], {}]])

        result = decode_result(wire)

        assert result.writes is not None and list(result.writes.set) == ["k"]

    def test_each_item_has_its_own_deadline(self) -> None:
        """A looping item times out; the next one still answers."""
        runner = self._runner("while args[0]:\n    pass\nresult = 'done'")

        first, second = (decode_result(w) for w in runner.run([[[True], {}], [[False], {}]]))

        assert isinstance(first.error, ExecutionTimeoutError)
        assert second.value == "done"

    def test_the_sandbox_policy_runs_inside_the_runner(self) -> None:
        """A refused import is the item's execution error; code the policy refuses to compile
        is every item's invalid_code error."""
        (imported,) = self._runner("import os\nresult = 1").run([[[1], {}]])
        dunder = self._runner("result = type(args[0]).__subclasses__()").run([[[1], {}], [[2], {}]])

        error = decode_result(imported).error
        assert isinstance(error, ExecutionError)
        assert "ImportError: import of 'os' is not allowed" in error.message
        assert [type(decode_result(w).error) for w in dunder] == [InvalidCodeError] * 2


class TestImports:
    def test_importing_recurgent_loads_neither_ray_nor_tqdm(self) -> None:
        """Ray and tqdm are imported when a map asks for them, never by ``import recurgent``."""
        probe = (
            "import sys, recurgent\n"
            "from recurgent import Agent\n"
            "print(sorted(m for m in ('ray', 'tqdm') if m in sys.modules))"
        )

        finished = subprocess.run(
            [sys.executable, "-c", probe], capture_output=True, text=True, check=True
        )

        assert finished.stdout.strip() == "[]"


class TestItemOutcomes:
    def test_a_scalar_answer_is_the_outcome_coercion_would_build(self) -> None:
        """The fast path for scalars equals coerce_outcome's Outcome, field for field."""
        from recurgent._lifecycle import _outcome_from_error
        from recurgent._lifecycle._map_items import ItemChecks
        from recurgent._sandbox import ExecutionResult
        from recurgent.outcome import coerce_outcome

        checks = ItemChecks(
            role="r",
            method="m",
            code="result = args[0]",
            tree=parse_python("result = args[0]", "<spec>"),
            deliverable=None,
            error_outcome=_outcome_from_error,
        )
        for value in (3, 2.5, "text", True, None):
            built = checks.outcome(ExecutionResult(value=value), (value,), {})
            coerced = coerce_outcome(value, tool_role="r", method_name="m")

            assert built.model_dump() == {**coerced.model_dump(), "code": "result = args[0]"}
            assert (built.ok, built.error, built.value) == (True, False, value)
