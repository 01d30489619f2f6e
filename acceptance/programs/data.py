"""Data programs: the CSV explorer over the messy sales file, statistics, and Fibonacci."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from acceptance.programs import ProgramKey

CSV_ROLE = (
    "CSV data explorer for sales_2024.csv; the data is messy (mixed date formats, blank and "
    "non-numeric quantities, missing sales reps, stray spaces), so validate before computing"
)
STATS_ROLE = "statistics calculator"
FIB_ROLE = "fibonacci_calculator"

STATS_DATA = [12, 15, 18, 22, 15, 30, 18, 15, 25, 42]

CSV_LOAD = """\
import csv
import io

text = args[0] if args else kwargs.get("text", "")
if not isinstance(text, str) or not text.strip():
    return Outcome.error(
        error_type="missing_input",
        error_message="load(text) needs the CSV file's contents",
        retriable=False,
    )
reader = csv.DictReader(io.StringIO(text))
rows = [dict(row) for row in reader]
context["columns"] = list(reader.fieldnames or [])
context["rows"] = rows
result = {"loaded_rows": len(rows), "columns": context["columns"]}
"""

CSV_ROW_COUNT = """\
result = len(context.get("rows", []))
"""

CSV_COLUMN_NAMES = """\
result = list(context.get("columns", []))
"""

# Revenue is qty x unit price; rows whose quantity is blank or not a number were not billed.
CSV_TOTAL_REVENUE = """\
from decimal import Decimal

total = Decimal("0")
for row in context.get("rows", []):
    quantity = (row.get("Qty") or "").strip()
    if not quantity.isdigit():
        continue
    total += int(quantity) * Decimal((row.get("Unit Price") or "0").strip())
result = float(total.quantize(Decimal("0.01")))
"""

CSV_TOP_SELLERS = """\
from collections import defaultdict
from decimal import Decimal

limit = int(kwargs.get("n", args[0] if args else 3))
by_product = defaultdict(Decimal)
for row in context.get("rows", []):
    quantity = (row.get("Qty") or "").strip()
    if quantity.isdigit():
        price = Decimal((row.get("Unit Price") or "0").strip())
        by_product[row["Product"].strip()] += int(quantity) * price
ranked = sorted(by_product.items(), key=lambda pair: pair[1], reverse=True)[:limit]
result = [
    {"product": product, "revenue": float(revenue.quantize(Decimal("0.01")))}
    for product, revenue in ranked
]
"""

CSV_REVENUE_BY_CATEGORY = """\
from decimal import Decimal

totals = {}
for row in context.get("rows", []):
    quantity = (row.get("Qty") or "").strip()
    if quantity.isdigit():
        category = row["Category"].strip()
        price = Decimal((row.get("Unit Price") or "0").strip())
        totals[category] = totals.get(category, Decimal("0")) + int(quantity) * price
result = {
    category: float(amount.quantize(Decimal("0.01")))
    for category, amount in sorted(totals.items())
}
"""

_CSV_DATES = """\
import re

month_numbers = {
    name: number
    for number, name in enumerate(
        ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"],
        start=1,
    )
}
date_patterns = [
    ("YYYY-MM-DD", r"(?P<year>\\d{4})-(?P<month>\\d{2})-(?P<day>\\d{2})"),
    ("MM/DD/YYYY", r"(?P<month>\\d{1,2})/(?P<day>\\d{1,2})/(?P<year>\\d{4})"),
    ("Mon D YYYY", r"(?P<month>[A-Z][a-z]{2}) (?P<day>\\d{1,2}) (?P<year>\\d{4})"),
]


def read_date(text):
    \"\"\"(format label, month number) of a date in any of the file's formats, else None.\"\"\"
    for label, pattern in date_patterns:
        match = re.fullmatch(pattern, text.strip())
        if match is not None:
            month = match.group("month")
            number = month_numbers.get(month) if month.isalpha() else int(month)
            if number:
                return label, number
    return None


"""

CSV_REVENUE_BY_QUARTER = (
    _CSV_DATES
    + """\
from decimal import Decimal

totals = {}
unparsed = []
for row in context.get("rows", []):
    quantity = (row.get("Qty") or "").strip()
    if not quantity.isdigit():
        continue
    parsed = read_date(row.get("Date") or "")
    if parsed is None:
        unparsed.append(row.get("Date"))
        continue
    quarter = f"Q{(parsed[1] - 1) // 3 + 1}"
    price = Decimal((row.get("Unit Price") or "0").strip())
    totals[quarter] = totals.get(quarter, Decimal("0")) + int(quantity) * price
if unparsed:
    return Outcome.error(
        error_type="parse_error",
        error_message=f"Unrecognised dates: {unparsed}",
        retriable=False,
    )
result = {
    quarter: float(amount.quantize(Decimal("0.01"))) for quarter, amount in sorted(totals.items())
}
"""
)

CSV_DATA_QUALITY_REPORT = (
    _CSV_DATES
    + """\
format_counts = {}
unparsed_dates = []
missing_quantity = []
non_numeric_quantity = []
missing_sales_rep = []
stray_whitespace = []
for number, row in enumerate(context.get("rows", []), start=1):
    date_text = (row.get("Date") or "").strip()
    parsed = read_date(date_text)
    if parsed is None:
        unparsed_dates.append({"row": number, "value": date_text})
    else:
        format_counts[parsed[0]] = format_counts.get(parsed[0], 0) + 1
    quantity = row.get("Qty") or ""
    if not quantity.strip():
        missing_quantity.append({"row": number, "date": date_text})
    elif not quantity.strip().isdigit():
        non_numeric_quantity.append({"row": number, "date": date_text, "value": quantity})
    if not (row.get("Sales Rep") or "").strip():
        missing_sales_rep.append({"row": number, "date": date_text})
    for column, value in row.items():
        if value and value != value.strip():
            stray_whitespace.append({"row": number, "column": column, "value": value})

result = {
    "rows": len(context.get("rows", [])),
    "mixed_date_formats": len(format_counts) > 1,
    "date_formats": format_counts,
    "unparsed_dates": unparsed_dates,
    "missing_quantity": missing_quantity,
    "non_numeric_quantity": non_numeric_quantity,
    "missing_sales_rep": missing_sales_rep,
    "stray_whitespace": stray_whitespace,
    "rows_excluded_from_revenue": len(missing_quantity) + len(non_numeric_quantity),
}
"""
)

STATS_MEAN = """\
import statistics

result = statistics.mean(context["data"])
"""

STATS_MEDIAN = """\
import statistics

result = statistics.median(context["data"])
"""

STATS_MODE = """\
import statistics

result = statistics.mode(context["data"])
"""

STATS_STANDARD_DEVIATION = """\
import statistics

data = context["data"]
result = {
    "population": round(statistics.pstdev(data), 4),
    "sample": round(statistics.stdev(data), 4),
}
"""

# Linear interpolation between closest ranks (statistics' "inclusive" method).
STATS_PERCENTILE = """\
import statistics

p = args[0] if args else kwargs.get("p", 50)
if not 0 < p < 100:
    return Outcome.error(
        error_type="invalid_input", error_message=f"percentile must be in (0, 100), got {p}"
    )
cuts = statistics.quantiles(context["data"], n=100, method="inclusive")
result = round(cuts[int(p) - 1], 4)
"""

STATS_OUTLIERS = """\
import statistics

data = context["data"]
q1, middle, q3 = statistics.quantiles(data, n=4, method="inclusive")
spread = q3 - q1
low, high = q1 - 1.5 * spread, q3 + 1.5 * spread
result = sorted(x for x in data if x < low or x > high)
"""

STATS_HISTOGRAM = """\
data = context["data"]
buckets = int(kwargs.get("buckets", args[0] if args else 5))
low, high = min(data), max(data)
width = (high - low) / buckets
counts = [0] * buckets
for x in data:
    index = min(int((x - low) / width), buckets - 1)
    counts[index] += 1
result = {
    "width": width,
    "buckets": [
        {"from": low + i * width, "to": low + (i + 1) * width, "count": counts[i]}
        for i in range(buckets)
    ],
    "counts": counts,
}
"""

STATS_SUMMARY = """\
import statistics

data = context["data"]
result = {
    "count": len(data),
    "min": min(data),
    "max": max(data),
    "mean": statistics.mean(data),
    "median": statistics.median(data),
    "mode": statistics.mode(data),
    "population_stdev": round(statistics.pstdev(data), 4),
}
"""

FIBONACCI = """\
n = args[0] if args else kwargs.get("n", 0)
if not isinstance(n, int) or n < 0:
    return Outcome.error(
        error_type="invalid_input", error_message=f"n must be a non-negative integer, got {n!r}"
    )
previous, current = 0, 1
for step in range(n):
    previous, current = current, previous + current
result = previous
"""

PROGRAMS: dict[ProgramKey, str | None] = {
    (CSV_ROLE, "load"): CSV_LOAD,
    (CSV_ROLE, "row_count"): CSV_ROW_COUNT,
    (CSV_ROLE, "column_names"): CSV_COLUMN_NAMES,
    (CSV_ROLE, "total_revenue"): CSV_TOTAL_REVENUE,
    (CSV_ROLE, "top_sellers"): CSV_TOP_SELLERS,
    (CSV_ROLE, "revenue_by_category"): CSV_REVENUE_BY_CATEGORY,
    (CSV_ROLE, "revenue_by_quarter"): CSV_REVENUE_BY_QUARTER,
    (CSV_ROLE, "data_quality_report"): CSV_DATA_QUALITY_REPORT,
    (STATS_ROLE, "mean"): STATS_MEAN,
    (STATS_ROLE, "median"): STATS_MEDIAN,
    (STATS_ROLE, "mode"): STATS_MODE,
    (STATS_ROLE, "standard_deviation"): STATS_STANDARD_DEVIATION,
    (STATS_ROLE, "percentile"): STATS_PERCENTILE,
    (STATS_ROLE, "outliers"): STATS_OUTLIERS,
    (STATS_ROLE, "histogram"): STATS_HISTOGRAM,
    (STATS_ROLE, "summary"): STATS_SUMMARY,
    (FIB_ROLE, "fibonacci"): FIBONACCI,
}
