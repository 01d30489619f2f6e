"""Descriptive statistics over a list stored in the agent's memory by a setter."""

from __future__ import annotations

from _offline import log_path, show, start

from acceptance.programs.data import STATS_DATA, STATS_ROLE
from recurgent import Agent


def main() -> None:
    """Store the sample, then print each statistic."""
    stats = Agent(STATS_ROLE, provider=start("statistics"), log=log_path())
    stats.data = STATS_DATA
    print(f"{'data = ' + str(STATS_DATA):<36}    (a memory write: no call)")
    show("mean()", stats.mean())
    show("median()", stats.median())
    show("mode()", stats.mode())
    show("standard_deviation()", stats.standard_deviation())
    show("percentile(90)", stats.percentile(90))
    show("outliers()", stats.outliers())
    histogram = stats.histogram(buckets=5)
    counts = histogram.value.get("counts") if histogram.is_ok else None
    show("histogram(buckets=5)", counts if counts is not None else histogram)
    show("summary()", stats.summary())
    print(f"Log: {log_path()}")


if __name__ == "__main__":
    main()
