"""Calculator programs: every method keeps its running number in the one state key ``value``."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from acceptance.programs import ProgramKey

ROLE = "calculator"

ADD = """\
amount = args[0] if args else kwargs.get("amount", 0)
context["value"] = context.get("value", 0) + amount
result = context["value"]
"""

MULTIPLY = """\
factor = args[0] if args else kwargs.get("factor", 1)
context["value"] = context.get("value", 0) * factor
result = context["value"]
"""

# With an argument sqrt is a pure function; without one it applies to the running value.
SQRT = """\
import math

number = args[0] if args else context.get("value", 0)
if number < 0:
    return Outcome.error(
        error_type="invalid_input",
        error_message=f"cannot take the real square root of {number}",
        retriable=False,
    )
root = math.sqrt(number)
if not args:
    context["value"] = root
result = root
"""

FACTORIAL = """\
import math

n = args[0] if args else context.get("value", 0)
if not isinstance(n, int) or n < 0:
    return Outcome.error(
        error_type="invalid_input",
        error_message=f"factorial needs a non-negative integer, got {n!r}",
        retriable=False,
    )
result = math.factorial(n)
"""

CONVERT = """\
amount = args[0] if args else kwargs.get("value", context.get("value", 0))
source = str(kwargs.get("from", "")).strip().lower()
target = str(kwargs.get("to", "")).strip().lower()
to_celsius = {
    "celsius": lambda degrees: degrees,
    "fahrenheit": lambda degrees: (degrees - 32) * 5 / 9,
    "kelvin": lambda degrees: degrees - 273.15,
}
from_celsius = {
    "celsius": lambda degrees: degrees,
    "fahrenheit": lambda degrees: degrees * 9 / 5 + 32,
    "kelvin": lambda degrees: degrees + 273.15,
}
if source not in to_celsius or target not in from_celsius:
    return Outcome.error(
        error_type="invalid_input",
        error_message=f"cannot convert from {source!r} to {target!r}",
        retriable=False,
        metadata={"supported_units": sorted(to_celsius)},
    )
result = from_celsius[target](to_celsius[source](amount))
"""

SOLVE = """\
import re

equation = str(args[0] if args else kwargs.get("equation", "")).replace(" ", "")
match = re.fullmatch(r"([+-]?\\d*\\.?\\d*)([a-z])([+-]\\d*\\.?\\d+)?=([+-]?\\d*\\.?\\d+)", equation)
if match is None:
    return Outcome.error(
        error_type="invalid_format",
        error_message=f"expected a linear equation such as '2x + 5 = 17', got {equation!r}",
        retriable=False,
    )
coefficient_text, variable, offset_text, total_text = match.groups()
if coefficient_text in ("", "+", "-"):
    coefficient_text += "1"
coefficient = float(coefficient_text)
if coefficient == 0:
    return Outcome.error(
        error_type="invalid_input", error_message="the equation has no unique solution"
    )
offset = float(offset_text) if offset_text else 0.0
result = (float(total_text) - offset) / coefficient
"""

HISTORY = """\
calls = []
for record in context.get("conversation_history", []):
    summary = record.get("outcome_summary") or {}
    calls.append(
        {
            "call_id": record.get("call_id"),
            "timestamp": record.get("timestamp"),
            "speaker": record.get("speaker"),
            "method": record.get("method_name"),
            "args": record.get("args"),
            "kwargs": record.get("kwargs"),
            "status": summary.get("status"),
            "value": summary.get("value_preview"),
        }
    )
result = calls
"""

PROGRAMS: dict[ProgramKey, str | None] = {
    (ROLE, "add"): ADD,
    (ROLE, "multiply"): MULTIPLY,
    (ROLE, "sqrt"): SQRT,
    (ROLE, "factorial"): FACTORIAL,
    (ROLE, "convert"): CONVERT,
    (ROLE, "solve"): SOLVE,
    (ROLE, "history"): HISTORY,
}
