"""Tool-building programs: the observability demo's builder and tools, and the HTTP client."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from acceptance.programs import ProgramKey

BUILDER_ROLE = "observability_demo_tool_builder"
FINANCE_TOOL = "stable_finance_tool"
PLACES_TOOL = "flaky_places_tool"
REASONING_TOOL = "stable_reasoning_tool"
HTTP_ROLE = "HTTP client"

BUILDER_RUN = """\
plan = [
    ("stable_finance_tool", "quarterly revenue trend"),
    ("flaky_places_tool", "coffee shops near the office"),
    ("stable_reasoning_tool", "whether to open a second office"),
]
tools = {}
for role, topic in plan:
    tools[role] = delegate(
        role,
        purpose=f"analyze {topic} and report one signal",
        deliverable={"type": "object", "required": ["tool", "topic", "signal"]},
        acceptance=[{"assert": "signal is a short verdict about the topic"}],
        failure_policy={"on_error": "continue_with_partials"},
    )


def summarize(role, outcome):
    if outcome.ok:
        return {"role": role, "status": "ok", "signal": outcome.value["signal"]}
    return {
        "role": role,
        "status": "error",
        "type": outcome.error_type,
        "retriable": outcome.retriable,
        "message": outcome.error_message,
    }


all_outcomes = [summarize(role, tools[role].analyze(topic)) for role, topic in plan]
for retry in range(2):
    all_outcomes.append(
        summarize("flaky_places_tool", tools["flaky_places_tool"].analyze(plan[1][1]))
    )
context["all_outcomes"] = all_outcomes
failures = [
    {key: entry[key] for key in ("role", "type", "retriable", "message")}
    for entry in all_outcomes
    if entry["status"] == "error"
]
result = {
    "ok_count": len(all_outcomes) - len(failures),
    "error_count": len(failures),
    "failures": failures,
    "synthesis": "continued_despite_partial_failure",
}
"""

FINANCE_ANALYZE = """\
topic = args[0] if args else kwargs.get("topic", "")
result = {"tool": "stable_finance_tool", "topic": topic, "signal": "revenue steady, margins up"}
"""

REASONING_ANALYZE = """\
topic = args[0] if args else kwargs.get("topic", "")
result = {"tool": "stable_reasoning_tool", "topic": topic, "signal": "wait one more quarter"}
"""

_HTTP_PREAMBLE = """\
import json
import urllib.error
import urllib.request
from datetime import datetime, timezone

url = args[0] if args else kwargs.get("url", "")


def provenance_for(uri):
    return {
        "sources": [
            {
                "uri": uri,
                "fetched_at": datetime.now(timezone.utc).isoformat(),
                "retrieval_tool": "urllib.request",
                "retrieval_mode": "fixture" if "127.0.0.1" in uri else "live",
            }
        ]
    }


"""

HTTP_GET = (
    _HTTP_PREAMBLE
    + """\
try:
    with urllib.request.urlopen(url, timeout=10) as response:
        text = response.read().decode("utf-8")
        status = response.status
except urllib.error.URLError as error:
    return Outcome.error(
        error_type="network_error", error_message=f"GET {url} failed: {error}", retriable=True
    )
result = {"status": status, "json": json.loads(text), "provenance": provenance_for(url)}
"""
)

# An error status is the answer here, not a failure of the call.
HTTP_STATUS = (
    _HTTP_PREAMBLE
    + """\
try:
    with urllib.request.urlopen(url, timeout=10) as response:
        status, reason = response.status, response.reason
except urllib.error.HTTPError as error:
    status, reason = error.code, error.reason
except urllib.error.URLError as error:
    return Outcome.error(
        error_type="network_error", error_message=f"GET {url} failed: {error}", retriable=True
    )
result = {"status": status, "reason": reason, "provenance": provenance_for(url)}
"""
)

HTTP_HEADERS = (
    _HTTP_PREAMBLE
    + """\
try:
    with urllib.request.urlopen(url, timeout=10) as response:
        headers = dict(response.headers.items())
        status = response.status
except urllib.error.URLError as error:
    return Outcome.error(
        error_type="network_error", error_message=f"GET {url} failed: {error}", retriable=True
    )
result = {"status": status, "headers": headers, "provenance": provenance_for(url)}
"""
)

HTTP_POST = (
    _HTTP_PREAMBLE
    + """\
body = kwargs.get("body", args[1] if len(args) > 1 else "")
request = urllib.request.Request(
    url, data=body.encode("utf-8"), headers={"Content-Type": "application/json"}, method="POST"
)
try:
    with urllib.request.urlopen(request, timeout=10) as response:
        text = response.read().decode("utf-8")
        status = response.status
except urllib.error.URLError as error:
    return Outcome.error(
        error_type="network_error", error_message=f"POST {url} failed: {error}", retriable=True
    )
result = {"status": status, "json": json.loads(text), "provenance": provenance_for(url)}
"""
)

PROGRAMS: dict[ProgramKey, str | None] = {
    (BUILDER_ROLE, "run"): BUILDER_RUN,
    (FINANCE_TOOL, "analyze"): FINANCE_ANALYZE,
    # A tool whose model keeps answering with no program at all.
    (PLACES_TOOL, "analyze"): None,
    (REASONING_TOOL, "analyze"): REASONING_ANALYZE,
    (HTTP_ROLE, "get"): HTTP_GET,
    (HTTP_ROLE, "status"): HTTP_STATUS,
    (HTTP_ROLE, "headers"): HTTP_HEADERS,
    (HTTP_ROLE, "post"): HTTP_POST,
}
