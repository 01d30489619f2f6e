"""Capability tags read from a program's tree (ADR 0107): which signals give which tag, that
comments and strings never do, and the text heuristics for tools known only by their entry."""

from __future__ import annotations

from recurgent._patterns._extract import (
    MAX_SOURCE_CHARS,
    extract_capabilities,
    text_capabilities,
)

RSS_PROGRAM = """
import urllib.request
import xml.etree.ElementTree as ET
body = urllib.request.urlopen(args[0]).read()
root = ET.fromstring(body)
return [{"title": i.findtext("title"), "link": i.findtext("link")} for i in root.iter("item")]
"""


class TestTags:
    """Each tag and the signals that give it."""

    def test_a_feed_reader_is_fetch_rss_xml_and_headlines(self) -> None:
        """urllib + ElementTree over <item> elements, titles and links in a comprehension."""
        found = extract_capabilities(RSS_PROGRAM)

        assert found.tags == ("http_fetch", "rss_parse", "xml_parse", "news_headline_extract")
        assert found.evidence_dict() == {
            "http_fetch": ["urllib_request_import", "urlopen_call"],
            "rss_parse": ["rss_element_lookup"],
            "xml_parse": ["xml_library_import"],
            "news_headline_extract": ["iterates_collection_and_extracts_title_and_link"],
        }
        assert found.delegates is False

    def test_comments_and_strings_give_no_tag(self) -> None:
        """The original's regexes tagged ``# Net::HTTP``; a comment or a string is not a signal."""
        code = '# import urllib.request\n# from xml.etree import ElementTree\nreturn "urlopen rss"'

        assert extract_capabilities(code).tags == ()

    def test_imports_in_every_form(self) -> None:
        """``from urllib import request``, ``from html.parser import HTMLParser``, bs4, lxml."""
        code = (
            "from urllib import request\nfrom html.parser import HTMLParser\n"
            "import bs4\nfrom lxml import etree\nimport feedparser\nreturn 1"
        )

        found = extract_capabilities(code)

        assert found.tags == ("http_fetch", "rss_parse", "xml_parse", "html_extract")
        assert found.evidence["html_extract"] == ("beautifulsoup_import", "html_parser_import")
        assert found.evidence["rss_parse"] == ("feedparser_import",)

    def test_html_parser_subclass_and_regexes_over_markup(self) -> None:
        """A subclass of HTMLParser; ``re`` calls whose pattern matches anchors or headings."""
        code = (
            "import re\n"
            "class Links(HTMLParser):\n    pass\n"
            'anchors = re.findall(r\'<a\\s+href="([^"]+)"\', args[0])\n'
            "heads = re.compile('<h[1-6]>(.*?)</h')\n"
            "return anchors"
        )

        found = extract_capabilities(code)

        assert found.evidence_dict() == {
            "html_extract": ["html_anchor_regex", "html_heading_regex", "html_parser_subclass"]
        }

    def test_a_regex_over_other_tags_is_not_html_extraction(self) -> None:
        """``<abbr`` is not an anchor; a pattern handed to something that is not ``re`` counts
        for nothing."""
        code = (
            "import re\nx = re.findall('<abbr>', args[0])\ny = other.findall('<a href')\nreturn x"
        )

        assert extract_capabilities(code).tags == ()

    def test_json_and_csv_through_aliases(self) -> None:
        """``import json as j; j.loads``, ``from json import load``, ``csv.DictReader``."""
        code = (
            "import json as j\nfrom json import load\nimport csv, io\n"
            "a = j.loads(args[0])\nrows = list(csv.DictReader(io.StringIO(args[1])))\nreturn a"
        )

        found = extract_capabilities(code)

        assert found.evidence_dict() == {
            "json_parse": ["json_loads_call"],
            "csv_parse": ["csv_reader_call"],
        }

    def test_delegated_tools_named_for_a_capability(self) -> None:
        """``delegate("http_fetcher")`` fetches, ``tool("rss_parser")`` parses feeds; any
        delegate or tool call marks the program as making child agents."""
        code = (
            'f = delegate("http_fetcher", purpose="fetch")\np = tool("rss_parser")\n'
            't = tool("translator")\nreturn p.parse(f.fetch(args[0]).value).value'
        )

        found = extract_capabilities(code)

        assert found.evidence_dict() == {
            "http_fetch": ["fetcher_delegate_call"],
            "rss_parse": ["rss_tool_call"],
        }
        assert found.delegates is True

    def test_headlines_need_iteration_and_both_fields(self) -> None:
        """Titles without links, or fields read outside any loop, are not headline extraction;
        ``s.title()`` is a string method, not a field."""
        no_link = "return [x['title'] for x in args[0]]"
        no_loop = "return {'title': args[0]['title'], 'link': args[0]['link']}"
        method = "return [s.title() + s.link for s in args[0]]"
        attributes = "return [(e.title, e.link) for e in args[0]]"

        assert [
            extract_capabilities(code).tags for code in (no_link, no_loop, method, attributes)
        ] == [(), (), (), ("news_headline_extract",)]


class TestBounds:
    """What cannot be read gives nothing; results are cached by the text."""

    def test_blank_and_broken_code(self) -> None:
        """None, whitespace and a syntax error: no tags."""
        assert [extract_capabilities(c).tags for c in (None, "  \n", "def (:")] == [(), (), ()]

    def test_the_same_text_is_read_once(self) -> None:
        """Two calls with equal text return the same object."""
        first = extract_capabilities(RSS_PROGRAM + "\n# again")

        assert extract_capabilities(RSS_PROGRAM + "\n# again") is first

    def test_a_program_over_the_cap_is_not_read(self) -> None:
        """Past MAX_SOURCE_CHARS nothing is parsed, even an import on the first line; at the
        cap the program is read."""
        head = "import urllib.request\n"
        at_cap = head + "x = 1\n" * ((MAX_SOURCE_CHARS - len(head)) // 6)
        over = at_cap + "y = 2\n"

        assert (len(at_cap) <= MAX_SOURCE_CHARS, len(over) > MAX_SOURCE_CHARS) == (True, True)
        assert [extract_capabilities(c).tags for c in (at_cap, over)] == [("http_fetch",), ()]


class TestTextCapabilities:
    """Tags guessed from a registry entry's words."""

    def test_the_originals_example(self) -> None:
        """The original's tested purpose gives fetch, html extraction and movie listings."""
        tags = text_capabilities(
            "fetch and parse movie listings from theater/movie websites", ["fetch_url"], None
        )

        assert tags == ("http_fetch", "html_extract", "movie_listings")

    def test_methods_and_deliverable_count(self) -> None:
        """Underscored method names split into words; the deliverable's text is read too;
        ``parse`` alone is not HTML extraction (the original said it was)."""
        tags = text_capabilities(None, ["parse_rss_feed"], {"type": "object", "json": True})

        assert tags == ("rss_parse", "json_parse")
