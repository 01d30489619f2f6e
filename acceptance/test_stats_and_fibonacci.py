"""Scenario 6: small deterministic journeys, statistics over a fixed sample and Fibonacci(1000)."""

from __future__ import annotations

from acceptance.harness import Backend, log_shape, single_trace
from acceptance.programs.data import FIB_ROLE, STATS_DATA, STATS_ROLE

FIBONACCI_1000 = int(
    "43466557686937456435688527675040625802564660517371780402481729089536555417949051890403879840"
    "07925516929592259308032263477520968962323987332247116164299644090653318793829896964992851600"
    "3704476137795166849228875"
)


class TestStatistics:
    def test_summary_statistics_of_the_sample(self, provider: Backend) -> None:
        """Mean 21.2, median 18.0, mode 15, population stdev 8.6348, outlier 42."""
        stats = provider.agent(STATS_ROLE)
        stats.data = STATS_DATA
        mean, median, mode = stats.mean(), stats.median(), stats.mode()
        deviation = stats.standard_deviation()
        percentile, outliers = stats.percentile(90), stats.outliers()
        histogram = stats.histogram(buckets=5)
        entries = provider.log()

        single_trace(entries)
        methods = ["mean", "median", "mode", "standard_deviation", "percentile", "outliers"]
        assert [*methods, "histogram"] == [e["method"] for e in entries if e["depth"] == 0]
        if provider.live:
            return  # live value shapes vary

        assert [(0, STATS_ROLE, m, "ok", None) for m in [*methods, "histogram"]] == log_shape(
            entries
        )
        assert (mean.value, median.value, mode.value) == (21.2, 18.0, 15)
        assert deviation.value == {"population": 8.6348, "sample": 9.1019}
        assert percentile.value == 31.2
        assert outliers.value == [42]
        assert histogram.value["counts"] == [4, 3, 1, 1, 1]
        assert stats.data == STATS_DATA


class TestFibonacci:
    def test_the_thousandth_fibonacci_number_is_exact(self, provider: Backend) -> None:
        """fibonacci(1000) is the exact 209-digit integer, F(1) = F(2) = 1."""
        fibonacci = provider.agent(FIB_ROLE).fibonacci(1000)
        [entry] = provider.log()

        assert log_shape([entry])[0][:4] == (0, FIB_ROLE, "fibonacci", "ok")
        assert entry["execution_receiver"] == "sandbox"
        if provider.live:
            return  # a live model may return the number as text or inside a mapping

        assert fibonacci.value == FIBONACCI_1000
        assert len(str(fibonacci.value)) == 209
        assert entry["outcome_value_class"] == "int"
