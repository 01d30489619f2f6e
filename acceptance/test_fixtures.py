"""Pin the offline fixtures themselves: the synthetic feeds, the loopback feed server, the CSV.

The acceptance suite asserts agent answers against these fixtures, so any edit to them must
keep these oracle values true (or update them here, deliberately).
"""

from __future__ import annotations

import csv
import http.client
import re
import time
import urllib.error
import urllib.request
import xml.etree.ElementTree as ET
from collections import defaultdict
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import date, datetime
from decimal import Decimal
from pathlib import Path

import pytest

from acceptance.feed_server import FEEDS_DIR, HIT_KEYS, SOURCES, FeedServer

REPO_ROOT = Path(__file__).resolve().parent.parent
SALES_CSV = REPO_ROOT / "examples" / "data" / "sales_2024.csv"

FEED_FILES = {
    "google": FEEDS_DIR / "google_news.xml",
    "yahoo": FEEDS_DIR / "yahoo_news.xml",
    "nyt": FEEDS_DIR / "nyt_homepage.xml",
}
ITEM_COUNTS = {"google": 8, "yahoo": 7, "nyt": 6}

DC = "{http://purl.org/dc/elements/1.1/}"
MEDIA = "{http://search.yahoo.com/mrss/}"
ATOM = "{http://www.w3.org/2005/Atom}"
NYT_DES = "http://www.nytimes.com/namespaces/keywords/des"

RFC822_GMT = re.compile(r"^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} GMT$")
RFC822_UTC = re.compile(r"^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} \d{2}:\d{2}:\d{2} \+0000$")
ISO_8601_Z = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z$")
GOOGLE_LINK = re.compile(r"^https://news\.google\.com/rss/articles/CBMi[A-Za-z0-9_-]+\?oc=5$")

# Urllib must never be routed through an environment proxy when talking to loopback.
_OPENER = urllib.request.build_opener(urllib.request.ProxyHandler({}))
_TIMEOUT = 10.0


def parse_feed(source: str) -> ET.Element:
    return ET.fromstring(FEED_FILES[source].read_bytes())


def titles(root: ET.Element) -> list[str]:
    return [item.findtext("title") or "" for item in root.iter("item")]


@dataclass
class Fetched:
    status: int
    headers: http.client.HTTPMessage
    body: bytes
    url: str


def fetch(url: str) -> Fetched:
    assert url.startswith("http://127.0.0.1:"), url
    with _OPENER.open(url, timeout=_TIMEOUT) as response:
        return Fetched(response.status, response.headers, response.read(), response.url)


def fetch_error(url: str) -> urllib.error.HTTPError:
    assert url.startswith("http://127.0.0.1:"), url
    with pytest.raises(urllib.error.HTTPError) as excinfo:
        fetch(url)
    error = excinfo.value
    error.body = error.read()  # type: ignore[attr-defined]
    error.close()
    return error


@pytest.fixture
def server() -> Iterator[FeedServer]:
    with FeedServer() as running:
        yield running


# --------------------------------------------------------------------------- feeds


class TestFeedFiles:
    """Shape shared by the three synthetic feeds."""

    @pytest.mark.parametrize("source", SOURCES)
    def test_parses_with_expected_item_count(self, source: str) -> None:
        """Each feed parses with ElementTree and `.//item` finds every item."""
        root = parse_feed(source)
        assert root.tag == "rss"
        assert root.get("version") == "2.0"
        assert len(root.findall(".//item")) == ITEM_COUNTS[source]
        assert len(root.findall("./channel/item")) == ITEM_COUNTS[source]

    @pytest.mark.parametrize("source", SOURCES)
    def test_every_item_has_title_link_and_pubdate(self, source: str) -> None:
        """Every item carries a non-empty title, link and pubDate."""
        for item in parse_feed(source).iter("item"):
            for tag in ("title", "link", "pubDate"):
                assert (item.findtext(tag) or "").strip(), (source, tag)

    @pytest.mark.parametrize("source", SOURCES)
    def test_some_title_has_non_ascii(self, source: str) -> None:
        """At least one title in each feed contains a non-ASCII character."""
        assert any(not title.isascii() for title in titles(parse_feed(source)))

    @pytest.mark.parametrize("source", SOURCES)
    def test_some_title_has_latin1_e_acute(self, source: str) -> None:
        """Each feed has an 'é' in a title, so the latin1 fault has a Latin-1 byte to show."""
        assert any("é" in title for title in titles(parse_feed(source)))

    @pytest.mark.parametrize("source", SOURCES)
    def test_file_is_utf8_with_declaration(self, source: str) -> None:
        """Each file is UTF-8 and starts with an XML declaration saying so."""
        raw = FEED_FILES[source].read_bytes()
        raw.decode("utf-8")
        assert raw.startswith(b'<?xml version="1.0" encoding="UTF-8"')


class TestGoogleFeed:
    """Google News: one line, NFE generator, "Headline - Publisher" titles."""

    def test_single_line(self) -> None:
        """The Google document contains no newline or carriage return at all."""
        raw = FEED_FILES["google"].read_bytes()
        assert b"\n" not in raw
        assert b"\r" not in raw

    def test_generator(self) -> None:
        """The channel generator is NFE/5.0."""
        assert parse_feed("google").findtext("./channel/generator") == "NFE/5.0"

    def test_exactly_one_nyt_title(self) -> None:
        """Exactly one title ends with ' - The New York Times'."""
        matching = [t for t in titles(parse_feed("google")) if t.endswith(" - The New York Times")]
        assert matching == [
            "Astronomers name comet after retired schoolteacher who spotted it from her garden"
            " - The New York Times"
        ]

    def test_titles_end_with_source_publisher(self) -> None:
        """Each title is 'Headline - Publisher' where Publisher is the item's <source>."""
        for item in parse_feed("google").iter("item"):
            publisher = item.findtext("source")
            assert publisher
            assert (item.findtext("title") or "").endswith(" - " + publisher)
            assert (item.find("source").get("url") or "").startswith("https://")  # type: ignore[union-attr]

    def test_links_guids_and_dates(self) -> None:
        """Links are news.google.com CBMi tokens, guids opaque, pubDates RFC-822 GMT."""
        for item in parse_feed("google").iter("item"):
            assert GOOGLE_LINK.match(item.findtext("link") or "")
            guid = item.find("guid")
            assert guid is not None
            assert guid.get("isPermaLink") == "false"
            assert (guid.text or "").startswith("CBMi")
            assert RFC822_GMT.match(item.findtext("pubDate") or "")

    def test_description_is_escaped_ordered_list(self) -> None:
        """Descriptions are entity-escaped <ol> lists of linked headlines with a grey outlet."""
        raw = FEED_FILES["google"].read_text(encoding="utf-8")
        assert "&lt;ol&gt;&lt;li&gt;&lt;a href=" in raw
        assert '&amp;nbsp;&amp;nbsp;&lt;font color="#6f6f6f"&gt;' in raw
        for item in parse_feed("google").iter("item"):
            html = item.findtext("description") or ""
            assert html.startswith("<ol><li><a href=")
            assert html.endswith("</font></li></ol>")
            assert 'target="_blank"' in html
            assert '&nbsp;&nbsp;<font color="#6f6f6f">' in html


class TestYahooFeed:
    """Yahoo News: media namespace, ISO-8601 dates, no descriptions."""

    def test_iso_8601_pubdates(self) -> None:
        """Every Yahoo pubDate is ISO-8601 UTC like 2026-11-28T01:25:28Z."""
        dates = [item.findtext("pubDate") or "" for item in parse_feed("yahoo").iter("item")]
        assert dates[0] == "2026-11-28T01:25:28Z"
        assert all(ISO_8601_Z.match(value) for value in dates)

    def test_media_content_and_source(self) -> None:
        """Every item has a 130x86 media:content image and a <source url=...>."""
        raw = FEED_FILES["yahoo"].read_text(encoding="utf-8")
        assert 'xmlns:media="http://search.yahoo.com/mrss/"' in raw
        for item in parse_feed("yahoo").iter("item"):
            media = item.find(f"{MEDIA}content")
            assert media is not None
            assert (media.get("medium"), media.get("width"), media.get("height")) == (
                "image",
                "130",
                "86",
            )
            source = item.find("source")
            assert source is not None
            assert source.text
            assert (source.get("url") or "").startswith("https://")

    def test_no_descriptions(self) -> None:
        """Yahoo items carry no <description> element."""
        assert parse_feed("yahoo").findall(".//item/description") == []


class TestNytFeed:
    """NYT home page: dc/media/atom namespaces, creators, des categories."""

    def test_namespaces_and_self_link(self) -> None:
        """The root declares dc, media and atom, and the channel has an atom self link."""
        raw = FEED_FILES["nyt"].read_text(encoding="utf-8")
        assert raw.count("\n") > ITEM_COUNTS["nyt"]
        for declaration in (
            'xmlns:dc="http://purl.org/dc/elements/1.1/"',
            'xmlns:media="http://search.yahoo.com/mrss/"',
            'xmlns:atom="http://www.w3.org/2005/Atom"',
        ):
            assert declaration in raw
        link = parse_feed("nyt").find(f"./channel/{ATOM}link")
        assert link is not None
        assert link.get("rel") == "self"

    def test_items_have_creator_description_and_des_categories(self) -> None:
        """Every item has a dc:creator, a description and at least two des categories."""
        for item in parse_feed("nyt").iter("item"):
            assert (item.findtext(f"{DC}creator") or "").strip()
            assert (item.findtext("description") or "").strip()
            des = [c for c in item.findall("category") if c.get("domain") == NYT_DES]
            assert len(des) >= 2

    def test_pubdates(self) -> None:
        """NYT pubDates are RFC-822 with a +0000 offset."""
        dates = [item.findtext("pubDate") or "" for item in parse_feed("nyt").iter("item")]
        assert dates[0] == "Sat, 28 Nov 2026 11:00:04 +0000"
        assert all(RFC822_UTC.match(value) for value in dates)


# --------------------------------------------------------------------------- feed server


class TestFeedServer:
    """The loopback server serves the fixtures and injects faults on demand."""

    @pytest.mark.parametrize("source", SOURCES)
    def test_serves_each_feed(self, server: FeedServer, source: str) -> None:
        """A normal request returns the exact fixture bytes as UTF-8 RSS."""
        got = fetch(server.url(source))
        assert got.status == 200
        assert got.headers["Content-Type"] == "application/rss+xml; charset=UTF-8"
        assert got.body == FEED_FILES[source].read_bytes()
        assert len(ET.fromstring(got.body).findall(".//item")) == ITEM_COUNTS[source]

    def test_urls(self, server: FeedServer) -> None:
        """url() mirrors the real feed paths on the loopback base URL."""
        assert re.fullmatch(r"http://127\.0\.0\.1:\d+", server.base_url)
        assert server.url("google") == server.base_url + "/google/rss?hl=en-US&gl=US&ceid=US:en"
        assert server.url("yahoo") == server.base_url + "/yahoo/rss/"
        assert server.url("nyt") == server.base_url + "/nyt/services/xml/rss/nyt/HomePage.xml"
        with pytest.raises(ValueError, match="unknown feed source"):
            server.url("bing")

    def test_counts_hits(self, server: FeedServer) -> None:
        """Each request increments its route's counter, and only that one."""
        assert server.hits == dict.fromkeys(HIT_KEYS, 0)
        fetch(server.url("google"))
        fetch(server.url("google"))
        fetch(server.url("nyt"))
        fetch(server.base_url + "/yahoo/rss")
        hits = server.hits
        assert (hits["google"], hits["yahoo"], hits["nyt"], hits["unknown"]) == (2, 1, 1, 0)
        server.reset_hits()
        assert server.hits["google"] == 0

    def test_yahoo_redirect_is_followed(self, server: FeedServer) -> None:
        """Urllib follows the 308 from /yahoo/rss/ to /yahoo/news/rss and gets the feed."""
        server.set_fault("yahoo", "redirect")
        got = fetch(server.url("yahoo"))
        assert got.status == 200
        assert got.url == server.base_url + "/yahoo/news/rss"
        assert got.body == FEED_FILES["yahoo"].read_bytes()
        hits = server.hits
        assert (hits["yahoo"], hits["yahoo_redirect_target"]) == (1, 1)

    def test_redirect_status_and_location(self, server: FeedServer) -> None:
        """The redirect fault answers 308 with an absolute Location on the same server."""
        server.set_fault("yahoo", "redirect")
        conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=_TIMEOUT)
        try:
            conn.request("GET", "/yahoo/rss/")
            with conn.getresponse() as response:
                response.read()
                assert response.status == 308
                assert response.getheader("Location") == server.base_url + "/yahoo/news/rss"
        finally:
            conn.close()

    @pytest.mark.parametrize("source", ["google", "nyt"])
    def test_redirect_works_for_other_sources(self, server: FeedServer, source: str) -> None:
        """The redirect fault works for every source and lands on its feed."""
        server.set_fault(source, "redirect")
        got = fetch(server.url(source))
        assert got.url == server.redirect_target_url(source)
        assert got.body == FEED_FILES[source].read_bytes()
        assert server.hits[f"{source}_redirect_target"] == 1

    def test_forbidden(self, server: FeedServer) -> None:
        """The forbidden fault answers 403 with a small HTML body."""
        server.set_fault("nyt", "forbidden")
        error = fetch_error(server.url("nyt"))
        assert error.code == 403
        assert b"Forbidden" in error.body
        assert server.hits["nyt"] == 1

    def test_malformed_does_not_parse(self, server: FeedServer) -> None:
        """The malformed fault serves a 200 body that ElementTree rejects."""
        server.set_fault("google", "malformed")
        got = fetch(server.url("google"))
        assert got.status == 200
        with pytest.raises(ET.ParseError):
            ET.fromstring(got.body)

    @pytest.mark.parametrize("source", SOURCES)
    def test_latin1(self, server: FeedServer, source: str) -> None:
        """The latin1 fault serves ISO-8859-1 bytes that decode and parse to the same items."""
        server.set_fault(source, "latin1")
        got = fetch(server.url(source))
        assert got.headers["Content-Type"] == "application/rss+xml; charset=ISO-8859-1"
        assert got.body.startswith(b'<?xml version="1.0" encoding="ISO-8859-1"')
        assert "é".encode("iso-8859-1") in got.body
        with pytest.raises(UnicodeDecodeError):
            got.body.decode("utf-8")
        text = got.body.decode("iso-8859-1")
        assert "\u2019" not in text
        assert "\u2014" not in text
        root = ET.fromstring(got.body)
        assert len(root.findall(".//item")) == ITEM_COUNTS[source]
        assert any("é" in title for title in titles(root))

    def test_truncated(self, server: FeedServer) -> None:
        """The truncated fault promises the full length but sends half, then hangs up."""
        server.set_fault("yahoo", "truncated")
        full = len(FEED_FILES["yahoo"].read_bytes())
        with _OPENER.open(server.url("yahoo"), timeout=_TIMEOUT) as response:
            assert int(response.headers["Content-Length"]) == full
            with pytest.raises(http.client.IncompleteRead) as excinfo:
                response.read()
        assert len(excinfo.value.partial) == full // 2

    def test_slow(self, server: FeedServer) -> None:
        """The slow fault delays the response by at least slow_seconds, then serves the feed."""
        server.set_fault("google", "slow", slow_seconds=0.3)
        started = time.monotonic()
        got = fetch(server.url("google"))
        elapsed = time.monotonic() - started
        assert elapsed >= 0.3
        assert got.body == FEED_FILES["google"].read_bytes()

    def test_fault_can_be_cleared(self, server: FeedServer) -> None:
        """Setting the fault back to None heals the source."""
        server.set_fault("nyt", "forbidden")
        assert server.fault("nyt") == "forbidden"
        server.set_fault("nyt", None)
        assert fetch(server.url("nyt")).status == 200
        with pytest.raises(ValueError, match="unknown fault"):
            server.set_fault("nyt", "flaky")

    def test_unknown_route(self, server: FeedServer) -> None:
        """An unknown path answers 404 and is counted as 'unknown'."""
        error = fetch_error(server.base_url + "/bing/rss")
        assert error.code == 404
        assert server.hits["unknown"] == 1
        assert sum(server.hits.values()) == 1


# --------------------------------------------------------------------------- sales CSV

DATE_FORMATS = ("%Y-%m-%d", "%m/%d/%Y", "%b %d %Y")
EXPECTED_COLUMNS = [
    "Date",
    "Product",
    "Category",
    "Qty",
    "Unit Price",
    "Region",
    "Sales Rep",
    "Notes",
]


def read_sales() -> list[dict[str, str]]:
    with SALES_CSV.open(newline="", encoding="utf-8") as handle:
        return list(csv.DictReader(handle))


def parse_date(value: str) -> date:
    for fmt in DATE_FORMATS:
        try:
            return datetime.strptime(value.strip(), fmt).date()
        except ValueError:
            continue
    raise ValueError(f"unrecognised date {value!r}")


def date_format(value: str) -> str:
    for fmt in DATE_FORMATS:
        try:
            datetime.strptime(value, fmt)
        except ValueError:
            continue
        return fmt
    raise ValueError(f"unrecognised date {value!r}")


@dataclass
class Totals:
    total: Decimal
    by_category: dict[str, Decimal]
    by_product: dict[str, Decimal]
    by_quarter: dict[int, Decimal]


def reference_totals(rows: list[dict[str, str]]) -> Totals:
    """Revenue = Qty x Unit Price, skipping rows whose Qty is blank or N/A."""
    by_category: dict[str, Decimal] = defaultdict(Decimal)
    by_product: dict[str, Decimal] = defaultdict(Decimal)
    by_quarter: dict[int, Decimal] = defaultdict(Decimal)
    total = Decimal("0")
    for row in rows:
        qty = row["Qty"].strip()
        if qty in ("", "N/A"):
            continue
        revenue = int(qty) * Decimal(row["Unit Price"].strip())
        total += revenue
        by_category[row["Category"]] += revenue
        by_product[row["Product"]] += revenue
        by_quarter[(parse_date(row["Date"]).month - 1) // 3 + 1] += revenue
    return Totals(total, dict(by_category), dict(by_product), dict(by_quarter))


class TestSalesCsv:
    """The messy sales dataset and the oracle figures the CSV explorer is graded on."""

    def test_shape(self) -> None:
        """29 data rows under exactly the 8 expected columns."""
        with SALES_CSV.open(newline="", encoding="utf-8") as handle:
            records = list(csv.reader(handle))
        assert records[0] == EXPECTED_COLUMNS
        assert len(records) == 30
        assert all(len(record) == 8 for record in records)
        assert len(read_sales()) == 29

    def test_excluded_quantities(self) -> None:
        """One blank Qty (03/15/2024) and one N/A Qty (a demo unit)."""
        rows = read_sales()
        blank = [row for row in rows if row["Qty"].strip() == ""]
        not_available = [row for row in rows if row["Qty"].strip() == "N/A"]
        assert [row["Date"] for row in blank] == ["03/15/2024"]
        assert len(not_available) == 1
        assert "demo unit" in not_available[0]["Notes"]

    def test_missing_sales_reps(self) -> None:
        """Exactly two rows lack a Sales Rep: Feb 14 2024 and 2024-05-20."""
        dates = [row["Date"] for row in read_sales() if not row["Sales Rep"].strip()]
        assert dates == ["Feb 14 2024", "2024-05-20"]

    def test_mixed_date_formats(self) -> None:
        """Dates mix ISO, US and 'Mon D YYYY' formats, several of each, all in 2024."""
        rows = read_sales()
        counts = dict.fromkeys(DATE_FORMATS, 0)
        for row in rows:
            counts[date_format(row["Date"])] += 1
            assert parse_date(row["Date"]).year == 2024
        assert counts == {"%Y-%m-%d": 9, "%m/%d/%Y": 10, "%b %d %Y": 10}

    def test_unit_prices(self) -> None:
        """Exactly one price has a leading space; all parse with at most two decimals."""
        prices = [row["Unit Price"] for row in read_sales()]
        assert [p for p in prices if p != p.strip()] == [" 45.50"]
        for price in prices:
            value = Decimal(price.strip())
            assert value > 0
            assert value == value.quantize(Decimal("0.01"))

    def test_quoted_fields_with_commas(self) -> None:
        """Notes containing commas are quoted and survive the csv module intact."""
        raw = SALES_CSV.read_text(encoding="utf-8")
        assert '"demo unit, not billed"' in raw
        notes = [row["Notes"] for row in read_sales() if "," in row["Notes"]]
        assert len(notes) >= 5

    def test_total_revenue(self) -> None:
        """Total revenue excluding the blank and N/A rows is 17404.80."""
        assert reference_totals(read_sales()).total == Decimal("17404.80")

    def test_revenue_by_category(self) -> None:
        """Revenue by category is Electronics 7923.50, Hardware 6098.30, Services 3383.00."""
        assert reference_totals(read_sales()).by_category == {
            "Electronics": Decimal("7923.50"),
            "Hardware": Decimal("6098.30"),
            "Services": Decimal("3383.00"),
        }

    def test_top_products(self) -> None:
        """The top three products are Gadget Y, Gadget X and Widget A, in that order."""
        by_product = reference_totals(read_sales()).by_product
        ranked = sorted(by_product.items(), key=lambda item: item[1], reverse=True)
        assert ranked[:3] == [
            ("Gadget Y", Decimal("4186.00")),
            ("Gadget X", Decimal("3737.50")),
            ("Widget A", Decimal("3598.80")),
        ]
        assert all(value < Decimal("3598.80") for _, value in ranked[3:])
        assert {name for name, _ in ranked[3:]} == {
            "Widget B",
            "Support Plan",
            "Installation",
            "Cable Kit",
        }

    def test_revenue_by_quarter(self) -> None:
        """Quarterly revenue is Q1 2843.65, Q2 3630.15, Q3 3491.60, Q4 7439.40."""
        assert reference_totals(read_sales()).by_quarter == {
            1: Decimal("2843.65"),
            2: Decimal("3630.15"),
            3: Decimal("3491.60"),
            4: Decimal("7439.40"),
        }
