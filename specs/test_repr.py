"""safe_repr, SafeRepr and int_text: the bounded text of any value, which never raises."""

from __future__ import annotations

from recurgent._repr import SafeRepr, int_text, safe_repr


class TestSafeRepr:
    """safe_repr never raises."""

    def test_broken_repr_gives_a_marker(self) -> None:
        """An object whose repr raises gives <unrepresentable Class: Error>."""

        class Broken:
            def __repr__(self) -> str:
                raise ValueError("no")

        assert safe_repr(Broken()) == "<unrepresentable Broken: ValueError>"

    def test_repr_is_redacted(self) -> None:
        """A repr containing a key is masked."""
        assert safe_repr(["sk-abcdefgh12345"]) == "['[REDACTED]']"


class TestBounds:
    """safe_repr and int_text are bounded and total (ADR 0032)."""

    def test_safe_repr_slices_big_strings_and_containers(self) -> None:
        """safe_repr of a 10 MB string or a list of them is at most limit plus a marker."""
        big = "q" * 10_000_000

        assert len(safe_repr(big, limit=100)) < 140
        assert len(safe_repr([big, big], limit=100)) < 140
        assert safe_repr([1, "a"]) == "[1, 'a']"

    def test_safe_repr_of_huge_int(self) -> None:
        """safe_repr(10 ** 5000) is its leading digits and digit count."""
        assert safe_repr(10**5000) == "10000000000000000000...<5001 digits>"

    def test_int_text_of_an_int_past_a_hundred_thousand_bits(self) -> None:
        """An int over 100,000 bits becomes an approximate digit count, without its digits."""
        assert int_text(7 ** (10**6)).startswith("<int with about ")


class TestSafeReprClass:
    """SafeRepr: reprlib with ints that never raise."""

    def test_huge_int_in_a_container(self) -> None:
        """A memory view holding 10 ** 5000 renders instead of raising ValueError."""
        shortened = SafeRepr()
        shortened.maxlong = 400

        assert shortened.repr({"x": 10**5000, "y": 5}) == (
            "{'x': 10000000000000000000...<5001 digits>, 'y': 5}"
        )

    def test_long_int_text_is_cut_at_maxlong(self) -> None:
        """An int whose text exceeds maxlong is cut with '...'."""
        shortened = SafeRepr()
        shortened.maxlong = 10

        assert shortened.repr(10**30) == "1000000..."
