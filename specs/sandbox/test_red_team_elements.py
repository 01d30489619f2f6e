"""Red-team findings, XML elements: elements in memory and made by the attempt stay trees.

Each attack makes an element its own descendant, or gives it a non-string attribute, so that
the commit or serialization of the tree goes wrong. Themes and conventions: see
``test_red_team.py``.
"""

from __future__ import annotations

import xml.etree.ElementTree as ElementTree
from typing import Any

import pytest

from recurgent._journal import Journal
from recurgent._sandbox._boundary import rebuild
from recurgent.errors import NonSerializableResultError
from specs.sandbox.support import Host, execute


class TestMemoryElementsStayTrees:
    """Finding 18 (fixed): an attempt made a host XML element its own descendant.

    Payload: ``e = context['tree']; e.append(e)``. The commit replaced the host element's
    children with memory's own elements, so the host's tree held a cycle; the host's later
    ``ElementTree.tostring(tree)`` or ``tree.iter()`` then never ends (a loop in library code,
    after and outside any attempt). The attempt now fails when it adds the child (F19 below);
    the journal also refuses such a commit as ``non_serializable_result``.
    """

    @pytest.mark.parametrize(
        "cycle",
        [
            "e.append(e)",
            "e[0].append(e)",
            "n = ET.Element('n')\nn.append(e)\ne.append(n)",
            "e.extend([e[0], e])",
            "e[0] = e",
        ],
    )
    def test_a_cycle_through_a_memory_element_is_refused(self, cycle: str) -> None:
        """The attempt fails; the host's element keeps its one child, which has none."""
        tree = ElementTree.Element("root")
        ElementTree.SubElement(tree, "child")
        host = Host(memory={"tree": tree})
        source = f"import xml.etree.ElementTree as ET\ne = context['tree']\n{cycle}\nresult = 1"

        result = execute(source, host=host)

        assert result.error is not None and result.error.error_type == "execution"
        assert "an XML element cannot contain itself" in str(result.error)
        assert [child.tag for child in tree] == ["child"] and len(tree[0]) == 0

    def test_the_journal_refuses_a_cyclic_copy_at_commit(self) -> None:
        """A cycle made in the view past the policy (host code) fails ``prepare``, unwritten."""
        tree = ElementTree.Element("root")
        memory: dict[str, Any] = {"tree": tree}
        journal = Journal(memory)
        copy = journal.view["tree"]
        copy.append(copy)

        with pytest.raises(NonSerializableResultError, match="is its own descendant"):
            journal.prepare(rebuild)

        assert len(tree) == 0

    def test_a_shared_child_is_still_allowed(self) -> None:
        """The same child twice is a shared subtree, not a cycle: it commits."""
        tree = ElementTree.Element("root")
        child = ElementTree.SubElement(tree, "child")
        host = Host(memory={"tree": tree})

        result = execute("e = context['tree']\ne.append(e[0])\nresult = len(e)", host=host)

        assert (result.error, result.value) == (None, 2)
        assert list(tree) == [child, child]


class TestElementsTheAttemptMakesStayTrees:
    """Finding 19 (fixed): an element the attempt made its own descendant hung the host thread.

    Payload: ``a = ET.Element('a'); a.append(a); ET.tostring(a)`` looped forever in
    ElementTree's Python code, which never ticks (past a 1 s deadline, stopped only by killing
    the process); ``list(a.iter())`` grew memory in one C call until ``MemoryError`` (3.8 s,
    3 GB). Adding a child (``append``, ``extend``, ``insert``, ``e[i] = x``, ``e[a:b] = xs``,
    bound or unbound) now refuses a child whose subtree holds the parent.
    """

    @pytest.mark.parametrize(
        "cycle",
        [
            "a.append(a)",
            "ET.Element.append(a, a)",
            "a.extend([ET.Element('b'), a])",
            "a.insert(0, a)",
            "a.append(ET.Element('b'))\na[0] = a",
            "a[:] = [a]",
            "b = ET.SubElement(a, 'b')\nc = ET.SubElement(b, 'c')\nc.append(a)",
        ],
    )
    def test_a_cycle_is_refused_before_it_exists(self, cycle: str) -> None:
        """The attempt fails with the refusal; ``tostring`` after it is never reached."""
        source = (
            "import xml.etree.ElementTree as ET\n"
            f"a = ET.Element('a')\n{cycle}\n"
            "result = len(ET.tostring(a))"
        )

        result = execute(source)

        assert result.error is not None and result.error.error_type == "execution"
        assert "ValueError: an XML element cannot contain itself" in str(result.error)

    def test_trees_with_shared_subtrees_still_build(self) -> None:
        """Appending, replacing by index and slice, and sharing one child twice all work."""
        source = (
            "import xml.etree.ElementTree as ET\n"
            "e = ET.Element('a')\nb = ET.Element('b')\n"
            "e.append(b)\ne.append(b)\ne[0] = ET.Element('c')\ne[1:] = [b, b]\n"
            "e.insert(0, ET.Element('d'))\ne.extend([ET.Element('f')])\n"
            "e.tag = 'z'\ne.text = 't'\ne.set('k', 'v')\ndel e[0]\n"
            "result = ET.tostring(e)"
        )

        assert execute(source).value == b'<z k="v">t<c /><b /><b /><f /></z>'


class TestMemoryElementAttributesStayStrings:
    """Finding 20 (fixed): a memory element's attribute could be committed as a non-string.

    Payload: ``context['tree'].set('k', 5)`` (or ``[1, 2]``). The element's attribute dict is
    journaled as a plain dict (ADR 0057), so the commit wrote the int into the host's
    element, while an element the attempt makes with one is refused; the host's later
    ``ElementTree.tostring(tree)`` raised ``TypeError: cannot serialize 5``. The changed items
    of an element's attribute dict are now checked like a new element's (ADR 0066).
    """

    @pytest.mark.parametrize(
        "change", ["context['tree'].set('k', 5)", "context['tree'].attrib['k'] = [1, 2]"]
    )
    def test_a_non_string_attribute_is_refused(self, change: str) -> None:
        """The attempt fails as ``non_serializable_result``; the host's element serializes."""
        tree = ElementTree.Element("root")
        host = Host(memory={"tree": tree})

        result = execute(f"{change}\nresult = 1", host=host)

        assert result.error is not None and result.error.error_type == "non_serializable_result"
        assert ElementTree.tostring(tree) == b"<root />"

    def test_a_value_the_host_stored_may_stay_while_others_change(self) -> None:
        """A non-string the host put there itself is left; a new string attribute commits."""
        tree = ElementTree.Element("root")
        tree.attrib["n"] = [1]  # type: ignore[assignment]  # a non-str value, on purpose
        host = Host(memory={"tree": tree})

        result = execute("context['tree'].set('k', 'v')\nresult = 1", host=host)

        assert (result.error, tree.attrib) == (None, {"n": [1], "k": "v"})
