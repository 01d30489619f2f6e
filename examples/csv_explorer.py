"""Explore a messy sales CSV: load it into the agent's memory once, then ask questions of it.

The sandbox has no file system, so the example reads ``data/sales_2024.csv`` and passes its
text to ``load``; later methods work on the rows ``load`` stored in memory.
"""

from __future__ import annotations

from pathlib import Path

from _offline import log_path, show, start

from acceptance.programs.data import CSV_ROLE
from recurgent import Agent

SALES_CSV = Path(__file__).resolve().parent / "data" / "sales_2024.csv"


def main() -> None:
    """Load the file and print every answer."""
    explorer = Agent(CSV_ROLE, provider=start("CSV explorer"), log=log_path())
    show("load(<sales_2024.csv>)", explorer.load(SALES_CSV.read_text("utf-8")))
    show("row_count()", explorer.row_count())
    show("column_names()", explorer.column_names())
    show("total_revenue()", explorer.total_revenue())
    show("top_sellers(n=3)", explorer.top_sellers(n=3))
    show("revenue_by_category()", explorer.revenue_by_category())
    show("revenue_by_quarter()", explorer.revenue_by_quarter())
    report = explorer.data_quality_report()
    if report.is_ok and isinstance(report.value, dict):
        print("data_quality_report():")
        for key, value in report.value.items():
            print(f"  {key}: {value}")
    else:
        show("data_quality_report()", report)
    print(f"Log: {log_path()}")


if __name__ == "__main__":
    main()
