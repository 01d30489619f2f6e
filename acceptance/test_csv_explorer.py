"""Scenario 5: exploring the messy sales CSV, loaded once into memory and analysed per method."""

from __future__ import annotations

from pathlib import Path

from acceptance.harness import Backend, log_shape, single_trace
from acceptance.programs.data import CSV_ROLE
from recurgent import Outcome

SALES_CSV = Path(__file__).resolve().parent.parent / "examples" / "data" / "sales_2024.csv"
COLUMNS = ["Date", "Product", "Category", "Qty", "Unit Price", "Region", "Sales Rep", "Notes"]
QUESTIONS = [
    "row_count",
    "column_names",
    "total_revenue",
    "top_sellers",
    "revenue_by_category",
    "revenue_by_quarter",
    "data_quality_report",
]


def explore(provider: Backend) -> dict[str, Outcome]:
    explorer = provider.agent(CSV_ROLE)
    answers = {"load": explorer.load(SALES_CSV.read_text("utf-8"))}
    for method in QUESTIONS:
        kwargs = {"n": 3} if method == "top_sellers" else {}
        answers[method] = getattr(explorer, method)(**kwargs)
    return answers


class TestCsvExplorer:
    def test_loads_the_file_then_answers_every_question(self, provider: Backend) -> None:
        """Eight depth-0 calls; revenue figures exact to the cent, excluding unbilled rows."""
        answers = explore(provider)
        entries = provider.log()

        single_trace(entries)
        assert [(0, "load"), *((0, m) for m in QUESTIONS)] == [
            (e["depth"], e["method"]) for e in entries
        ]
        assert all(outcome.is_ok for outcome in answers.values())
        if provider.live:
            return  # live value shapes vary

        assert [(0, CSV_ROLE, m, "ok", None) for m in ["load", *QUESTIONS]] == log_shape(entries)
        assert answers["load"].value == {"loaded_rows": 29, "columns": COLUMNS}
        assert answers["row_count"].value == 29
        assert answers["column_names"].value == COLUMNS
        assert answers["total_revenue"].value == 17404.80
        assert answers["top_sellers"].value == [
            {"product": "Gadget Y", "revenue": 4186.00},
            {"product": "Gadget X", "revenue": 3737.50},
            {"product": "Widget A", "revenue": 3598.80},
        ]
        assert answers["revenue_by_category"].value == {
            "Electronics": 7923.50,
            "Hardware": 6098.30,
            "Services": 3383.00,
        }
        assert answers["revenue_by_quarter"].value == {
            "Q1": 2843.65,
            "Q2": 3630.15,
            "Q3": 3491.60,
            "Q4": 7439.40,
        }

    def test_the_quality_report_names_every_defect_of_the_file(
        self, offline_provider: Backend
    ) -> None:
        """Mixed dates, blank and N/A quantities, two missing reps and one stray space."""
        report = explore(offline_provider)["data_quality_report"].value

        assert report == {
            "rows": 29,
            "mixed_date_formats": True,
            "date_formats": {"YYYY-MM-DD": 9, "MM/DD/YYYY": 10, "Mon D YYYY": 10},
            "unparsed_dates": [],
            "missing_quantity": [{"row": 6, "date": "03/15/2024"}],
            "non_numeric_quantity": [{"row": 20, "date": "Sep 5 2024", "value": "N/A"}],
            "missing_sales_rep": [
                {"row": 3, "date": "Feb 14 2024"},
                {"row": 10, "date": "2024-05-20"},
            ],
            "stray_whitespace": [{"row": 5, "column": "Unit Price", "value": " 45.50"}],
            "rows_excluded_from_revenue": 2,
        }
