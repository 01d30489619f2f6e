"""Patches of host objects (ADR 0057): applied in place, and never sent over a worker's pipe."""

from __future__ import annotations

import collections
import io
import random
import xml.etree.ElementTree as ElementTree
from typing import Any

import pytest

from recurgent._journal import Journal, Patch
from recurgent._journal._writes import MISSING
from recurgent._sandbox import rebuild
from recurgent.errors import NonSerializableResultError
from specs.sandbox.support import Host, execute


class TestHostPatches:
    """Each patch kind writes into the host's own object."""

    def test_a_rebound_wrapper_attribute_is_set_on_the_original(self) -> None:
        """A wrapper whose ``data`` the attempt rebound gets the new (rebuilt) data in place."""
        table: collections.UserDict[str, Any] = collections.UserDict(a=1)
        journal = Journal({"t": table})
        journal.view["t"].data = {"b": [2]}

        writes = journal.prepare(rebuild)
        writes.apply({"t": table})

        assert ([patch.kind for patch in writes.patches], table.data) == (["attrs"], {"b": [2]})

    def test_a_removed_wrapper_attribute_is_removed(self) -> None:
        """An attribute the attempt deleted from the wrapper is deleted from the original."""
        table = collections.UserDict(a=1)
        table.note = "x"  # type: ignore[attr-defined]
        journal = Journal({"t": table})
        del journal.view["t"].note

        journal.prepare(rebuild).apply({"t": table})

        assert (hasattr(table, "note"), dict(table)) == (False, {"a": 1})

    def test_state_patches_restore_exactly(self) -> None:
        """A Random gets the copy's state; a StringIO its value, newline mode and position."""
        rng, buf = random.Random(1), io.StringIO("ab", newline="\r\n")
        target_rng, target_buf = random.Random(2), io.StringIO("zzz")

        Patch(target_rng, ("r",), "state", state=rng.getstate()).apply()
        Patch(target_buf, ("b",), "state", state=buf.__getstate__()).apply()

        assert (target_rng.getstate(), target_buf.__getstate__()) == (
            rng.getstate(),
            ("ab", "\r\n", 0, None),
        )

    def test_an_element_patch_keeps_the_attribute_dict(self) -> None:
        """New attributes are written into the element's own attribute dict."""
        element = ElementTree.Element("e", {"a": "1"})
        attributes = element.attrib
        unchanged: Any = MISSING
        parts = {
            "tag": unchanged,
            "text": "t",
            "tail": unchanged,
            "attrib": {"b": "2"},
            "children": [ElementTree.Element("c")],
        }

        Patch(element, ("e",), "element", state=parts).apply()

        assert (element.attrib is attributes, ElementTree.tostring(element)) == (
            True,
            b'<e b="2">t<c /></e>',
        )

    @pytest.mark.parametrize("kind", ["state", "element", "attrs"])
    def test_host_patches_do_not_cross_a_pipe(self, kind: str) -> None:
        """as_plain refuses a patch of a host object (a worker's memory is plain data)."""
        with pytest.raises(TypeError, match=f"a '{kind}' patch of a host object cannot cross"):
            Patch(object(), ("x",), kind).as_plain()  # type: ignore[arg-type]


class TestElementCommitsAreRebuilt:
    """What an attempt leaves in an element must be strings and elements, rebuilt for the host."""

    def test_a_non_string_attribute_is_refused(self) -> None:
        """An attribute value that is not a string fails the commit; memory is unchanged."""
        element = ElementTree.Element("e")
        journal = Journal({"e": element})
        journal.view["e"].attrib = {"a": [1]}

        with pytest.raises(
            NonSerializableResultError, match=r"context\['e'\]\.attrib\['a'\] is list"
        ):
            journal.prepare(rebuild)

        assert dict(element.attrib) == {}

    def test_a_new_child_is_a_fresh_host_element(self) -> None:
        """A child the attempt made is rebuilt: a new element holding the same strings."""
        element = ElementTree.Element("e")
        journal = Journal({"e": element})
        made = ElementTree.SubElement(journal.view["e"], "c", {"k": "v"})

        journal.prepare(rebuild).apply({"e": element})

        assert (element[0] is made, ElementTree.tostring(element)) == (
            False,
            b'<e><c k="v" /></e>',
        )

    def test_a_refusal_message_runs_no_code_the_program_made(self) -> None:
        """A key whose class overrides __repr__ is named by its plain text in the refusal."""
        element = ElementTree.Element("e")
        source = (
            "class Key(str):\n"
            "    def __repr__(self):\n"
            "        raise RuntimeError('program code ran in the host')\n"
            "context['e'].attrib = {Key('a'): 5}\n"
            "result = 1"
        )

        result = execute(source, host=Host(memory={"e": element}))

        assert result.error is not None
        assert (result.error.error_type, dict(element.attrib)) == ("non_serializable_result", {})
        assert "context['e'].attrib['a'] is int" in str(result.error)
