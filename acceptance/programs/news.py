"""News-assistant programs: the headline journey, its source follow-up and the movies boundary.

``{FEED_BASE}`` in a program stands for the loopback feed server's base URL; the router
substitutes it. The recorded Ruby runs fetched the real feeds at the same paths.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from acceptance.programs import ProgramKey

ROLE = "personal assistant that remembers conversation history"
FETCHER = "http_fetcher"
PARSER = "rss_parser"

NEWS_QUESTION = "What's the top news items in Google News, Yahoo! News, and NY Times"
SOURCE_QUESTION = "What's the source?"
FORMAT_QUESTION = "Format that answer as markdown"
MOVIES_QUESTION = "What's are the action adventure movies playing in theaters"
RECIPE_QUESTION = "What's a good recipe for Jaffna Kool"

FEED_PATHS = {
    "Google News": "/google/rss?hl=en-US&gl=US&ceid=US:en",
    "Yahoo! News": "/yahoo/rss/",
    "NY Times": "/nyt/services/xml/rss/nyt/HomePage.xml",
}
"""The feeds the news program reads, by the name it files their items under."""

ASK_NEWS = """\
from datetime import datetime, timezone

feeds = [
    ("Google News", "{FEED_BASE}/google/rss?hl=en-US&gl=US&ceid=US:en"),
    ("Yahoo! News", "{FEED_BASE}/yahoo/rss/"),
    ("NY Times", "{FEED_BASE}/nyt/services/xml/rss/nyt/HomePage.xml"),
]
per_source = 5

fetcher = delegate(
    "http_fetcher",
    purpose="fetch content from HTTP/HTTPS URLs with redirect handling",
    deliverable={"type": "object", "required": ["status", "body"]},
    acceptance=[{"assert": "status is the final HTTP status and body the response text"}],
    failure_policy={"on_error": "return_error"},
)
parser = delegate(
    "rss_parser",
    purpose="parse RSS/Atom feed XML into items with title, link, publication date and source",
    deliverable={"type": "object", "required": ["items"]},
    acceptance=[{"assert": "items is a list of {title, link, published, source}"}],
    failure_policy={"on_error": "return_error"},
)


def headline_entries(source_name, parsed_items):
    entries = []
    for item in parsed_items[:per_source]:
        entries.append(
            {
                "source": source_name,
                "title": item.get("title", ""),
                "link": item.get("link", ""),
                "published": item.get("published", ""),
                "publisher": item.get("source", ""),
            }
        )
    return entries


items = []
by_source = {}
errors = []
sources = []
for source_name, url in feeds:
    fetched = fetcher.fetch(url)
    if not fetched.ok:
        errors.append(
            {
                "source": source_name,
                "uri": url,
                "stage": "fetch",
                "error_type": fetched.error_type,
                "error_message": fetched.error_message,
            }
        )
        continue
    parsed = parser.parse(fetched.value["body"])
    if not parsed.ok:
        errors.append(
            {
                "source": source_name,
                "uri": url,
                "stage": "parse",
                "error_type": parsed.error_type,
                "error_message": parsed.error_message,
            }
        )
        continue
    entries = headline_entries(source_name, parsed.value["items"])
    by_source[source_name] = entries
    items.extend(entries)
    fetch_sources = (fetched.value.get("provenance") or {}).get("sources") or [{}]
    sources.append(
        {
            "uri": url,
            "fetched_at": fetch_sources[0].get("fetched_at")
            or datetime.now(timezone.utc).isoformat(),
            "retrieval_tool": "http_fetcher + rss_parser",
            "retrieval_mode": "fixture",
            "item_count": len(entries),
        }
    )

if not items:
    return Outcome.error(
        error_type="low_utility",
        error_message="None of the requested news feeds could be read",
        retriable=False,
        metadata={"errors": errors},
    )

result = {
    "summary": f"Top headlines from {len(by_source)} of {len(feeds)} sources",
    "items": items,
    "by_source": by_source,
    "errors": errors,
    "provenance": {"sources": sources},
}
"""

ASK_SOURCE = """\
for record in reversed(context.get("conversation_history", [])):
    summary = record.get("outcome_summary") or {}
    uris = summary.get("source_uris") or []
    if summary.get("status") == "ok" and uris:
        return {
            "answer": f"Those headlines came from {len(uris)} RSS feeds, read in an earlier call.",
            "sources": uris,
            "source_count": summary.get("source_count", len(uris)),
            "retrieval_mode": summary.get("retrieval_mode"),
            "answered_from": "conversation_history",
            "call_id": record.get("call_id"),
        }
return Outcome.error(
    error_type="missing_input",
    error_message="No earlier answer in this conversation names its sources",
    retriable=False,
)
"""

# The follow-up protocol (ADR 0102): the newest kept answer, read whole through content(ref).
ASK_FORMAT = """\
history = context.get("conversation_history", [])
ref = None
for record in reversed(history):
    ref = (record.get("outcome_summary") or {}).get("content_ref")
    if ref:
        break
if ref is None:
    return Outcome.error(
        error_type="content_ref_not_found",
        error_message="No earlier answer in this conversation to format",
        retriable=False,
    )
earlier = content(ref)
if earlier is None:
    return Outcome.error(
        error_type="content_ref_not_found",
        error_message="The earlier answer is no longer kept (evicted)",
        retriable=False,
    )
if not isinstance(earlier, dict) or not earlier.get("by_source"):
    return Outcome.error(
        error_type="low_utility",
        error_message="The earlier answer has no headlines to format",
        retriable=False,
    )
lines = []
for source_name, entries in earlier["by_source"].items():
    lines.append(f"## {source_name}")
    for entry in entries:
        lines.append(f"- [{entry['title']}]({entry['link']})")
    lines.append("")
return "\\n".join(lines).rstrip()
"""

ASK_MOVIES = """\
tools = context.get("tools") or {}
result = Outcome.error(
    error_type="capability_unavailable",
    error_message=(
        "I can't see what is playing in theaters: none of my tools reaches a cinema listings "
        "service, and I won't make listings up."
    ),
    retriable=False,
    metadata={
        "requested_capability": "live_movie_showtimes",
        "available_capabilities": sorted(tools),
        "blocking_gap": "no movie listings or showtimes source is available",
        "suggested_workarounds": [
            "Check a cinema chain's website or app for today's showtimes",
            "Give me the URL of a listings page and ask me to summarize it",
        ],
    },
)
"""

# Answered from the model's own knowledge: nothing is fetched, so no provenance is due.
ASK_RECIPE = """\
result = {
    "dish": "Jaffna Kool",
    "description": "A thick Northern Sri Lankan seafood broth, thickened with palmyra root flour.",
    "ingredients": [
        "500 g mixed seafood (crab, prawns, squid, firm white fish)",
        "1/2 cup odiyal (palmyra root) flour",
        "1/4 cup jackfruit seeds, boiled and halved",
        "1 cup long beans, cut in short lengths",
        "1 cup spinach or murunga leaves",
        "2 tbsp tamarind pulp in 1 cup water",
        "1 tbsp Jaffna curry powder, 1 tsp turmeric, salt",
    ],
    "instructions": [
        "Soak the odiyal flour in water for an hour; pour off the bitter water.",
        "Simmer the seafood in 6 cups of water with turmeric and salt for 10 minutes.",
        "Add jackfruit seeds, long beans and tamarind water; cook 10 minutes more.",
        "Stir in the curry powder and the flour paste; simmer until it thickens.",
        "Fold in the greens, adjust salt, and serve hot in bowls.",
    ],
    "serving_notes": "Traditionally shared from one pot during the monsoon season.",
    "answered_from": "model knowledge",
}
"""

# What a model tempted to please writes: fetch-style code that returns a canned list as success.
ASK_MOVIES_FALLBACK = """\
import json
import urllib.error
import urllib.request

fallback_movies = [
    {"title": "Skyline Pursuit", "genre": "action adventure", "showtimes": ["7:00 PM", "9:45 PM"]},
    {"title": "The Sunken Atlas", "genre": "action adventure", "showtimes": ["6:30 PM"]},
]
movies = []
try:
    with urllib.request.urlopen("{FEED_BASE}/movies/now-playing", timeout=10) as response:
        movies = json.loads(response.read().decode("utf-8")).get("movies", [])
except urllib.error.URLError:
    movies = []
result = {"movies": movies or fallback_movies, "source": "theater listings"}
"""

_FETCH_REQUEST = """\
import urllib.error
import urllib.request
from datetime import datetime, timezone

url = args[0] if args else kwargs.get("url")
if not isinstance(url, str) or not url.strip():
    return Outcome.error(
        error_type="missing_input", error_message="fetch(url) needs a URL", retriable=False
    )
request = urllib.request.Request(url, headers={"User-Agent": "recurgent-http-fetcher/1.0"})
try:
    with urllib.request.urlopen(request, timeout=10) as response:
        charset = response.headers.get_content_charset() or "utf-8"
        body = response.read().decode(charset, errors="replace")
        status = response.status
        final_url = response.geturl()
except urllib.error.HTTPError as error:
    return Outcome.error(
        error_type="http_error",
        error_message=f"HTTP {error.code} {error.reason} fetching {url}",
        retriable=error.code >= 500,
        metadata={"status_code": error.code, "url": url},
    )
except urllib.error.URLError as error:
    reason = str(error.reason)
    kind = "timeout" if "timed out" in reason else "network_error"
    return Outcome.error(
        error_type=kind,
        error_message=f"Could not fetch {url}: {reason}",
        retriable=True,
        metadata={"url": url},
    )
"""

FETCH = (
    _FETCH_REQUEST
    + """\
fetched_at = datetime.now(timezone.utc).isoformat()
result = {
    "status": status,
    "body": body,
    "url": final_url,
    "provenance": {
        "sources": [
            {
                "uri": final_url,
                "fetched_at": fetched_at,
                "retrieval_tool": "urllib.request",
                "retrieval_mode": "fixture",
            }
        ]
    },
}
"""
)

# The same fetch, forgetting provenance: the runtime must refuse it as external-data success.
FETCH_WITHOUT_PROVENANCE = (
    _FETCH_REQUEST
    + """\
result = {"status": status, "body": body, "url": final_url}
"""
)

PARSE = """\
import xml.etree.ElementTree as ET

text = args[0] if args else kwargs.get("xml", "")
if not isinstance(text, str) or not text.strip():
    return Outcome.error(
        error_type="missing_input", error_message="parse(xml) needs the feed text", retriable=False
    )
try:
    root = ET.fromstring(text)
except ET.ParseError as error:
    return Outcome.error(
        error_type="parse_error", error_message=f"Malformed feed XML: {error}", retriable=False
    )
channel_title = (root.findtext("channel/title") or "").strip()
items = []
for node in root.findall(".//item"):
    source = node.find("source")
    items.append(
        {
            "title": (node.findtext("title") or "").strip(),
            "link": (node.findtext("link") or "").strip(),
            "published": (node.findtext("pubDate") or "").strip(),
            "source": (source.text or "").strip() if source is not None else channel_title,
        }
    )
result = {"items": items, "feed_title": channel_title}
"""

PROGRAMS: dict[ProgramKey, str | None] = {
    (ROLE, "ask", "Google News"): ASK_NEWS,
    (ROLE, "ask", "source"): ASK_SOURCE,
    (ROLE, "ask", "markdown"): ASK_FORMAT,
    (ROLE, "ask", "movies"): ASK_MOVIES,
    (ROLE, "ask", "recipe"): ASK_RECIPE,
    (FETCHER, "fetch"): FETCH,
    (PARSER, "parse"): PARSE,
}
