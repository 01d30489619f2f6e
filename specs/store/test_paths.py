"""Store root resolution and the safe path segment (persistence.md 1.1, 1.2.1)."""

from __future__ import annotations

from pathlib import Path

import pytest

from recurgent._store._paths import artifact_path, default_root, registry_path, safe_segment


@pytest.mark.parametrize(
    ("raw", "segment"),
    [
        ("calculator", "calculator-d2d4a592"),
        ("add", "add-7e9e5ac3"),
        ("answer", "answer-0db52f40"),
        ("Web Fetcher", "web_fetcher-7a58c75f"),
        (
            "personal assistant that remembers conversation history",
            "personal_assistant_that_remembers_conversation_h-6337db1a",
        ),
        ("", "item-e3b0c442"),
        ("!!!", "item-e84c538e"),
    ],
)
def test_safe_segment_matches_the_reference_examples(raw: str, segment: str) -> None:
    """The segment is byte-identical to the Ruby store's for the reference table."""
    assert safe_segment(raw) == segment


def test_unicode_is_lowercased_and_collapsed_but_hashed_raw() -> None:
    """Non-ASCII letters collapse to '_' after lowercasing; the hash uses the raw text."""
    assert safe_segment("Café Über") == "caf_ber-" + safe_segment("Café Über")[-8:]
    assert safe_segment("Café Über") != safe_segment("café über")


def test_names_that_collapse_alike_get_different_segments() -> None:
    """'Web Fetcher' and 'web_fetcher' share a prefix but not a hash."""
    assert safe_segment("web_fetcher").startswith("web_fetcher-")
    assert safe_segment("web_fetcher") != safe_segment("Web Fetcher")


def test_lone_surrogates_do_not_crash() -> None:
    """A name holding an undecodable byte still gets a segment."""
    assert safe_segment("a\udcff").startswith("a-")


def test_artifact_and_registry_paths() -> None:
    """Artifacts live at artifacts/<seg role>/<seg method>.json; the registry at the root."""
    root = Path("/r")
    assert artifact_path(root, "calculator", "add") == Path(
        "/r/artifacts/calculator-d2d4a592/add-7e9e5ac3.json"
    )
    assert registry_path(root) == Path("/r/registry.json")


class TestDefaultRoot:
    """RECURGENT_TOOLSTORE_ROOT, then XDG_STATE_HOME, then ~/.local/state."""

    def test_explicit_root_wins(self) -> None:
        """RECURGENT_TOOLSTORE_ROOT is used as is."""
        env = {"RECURGENT_TOOLSTORE_ROOT": "/y", "XDG_STATE_HOME": "/x"}
        assert default_root(env) == Path("/y")

    def test_xdg_state_home(self) -> None:
        """Without the explicit root, $XDG_STATE_HOME/recurgent/tools."""
        assert default_root({"XDG_STATE_HOME": "/x"}) == Path("/x/recurgent/tools")

    def test_unset_falls_back_to_home(self) -> None:
        """With neither set, ~/.local/state/recurgent/tools."""
        assert default_root({}) == Path.home() / ".local/state/recurgent/tools"

    def test_empty_values_count_as_unset(self) -> None:
        """Blank variables are ignored (Ruby gave /recurgent/tools for an empty XDG value)."""
        env = {"RECURGENT_TOOLSTORE_ROOT": " ", "XDG_STATE_HOME": ""}
        assert default_root(env) == Path.home() / ".local/state/recurgent/tools"

    def test_reads_the_process_environment_by_default(
        self, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
    ) -> None:
        """Called without a mapping it reads os.environ."""
        monkeypatch.setenv("RECURGENT_TOOLSTORE_ROOT", str(tmp_path / "store"))
        assert default_root() == tmp_path / "store"
