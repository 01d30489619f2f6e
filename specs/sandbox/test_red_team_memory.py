"""Red-team findings, memory: host objects in memory and the journal's copies of them.

Each attack changes, or reads out, a value held in the agent's memory so that it survives the
attempt's rollback (ADRs 0027, 0057). Themes and conventions: see ``test_red_team.py``.
"""

from __future__ import annotations

import collections
import io
import random
import xml.etree.ElementTree as ElementTree
from typing import Any

import pytest

from specs.sandbox.support import Host, execute

Point = collections.namedtuple("Point", "items")


class TestJournalCopiesHostNamedtuples:
    """Finding 2 (fixed): a list inside a namedtuple in memory escaped rollback.

    Payload: ``context['rec'].items.append('x'); raise ValueError()``. The journal copied exact
    tuples only, so a namedtuple came back as the original and its list was appended in place.
    """

    def test_a_failed_attempt_leaves_the_inner_list_alone(self) -> None:
        """The append made before the failure is not in memory."""
        host = Host(memory={"rec": Point([1])})

        result = execute("context['rec'].items.append(2)\nraise ValueError('boom')", host=host)

        assert result.error is not None and result.error.error_type == "execution"
        assert host.memory["rec"] == Point([1])

    def test_a_successful_attempt_commits_into_the_same_list(self) -> None:
        """The append commits in place: the namedtuple and its list keep their identity."""
        record = Point([1])
        inner = record.items
        host = Host(memory={"rec": record})

        result = execute("context['rec'].items.append(2)\nresult = context['rec'].items", host=host)

        assert result.error is None and result.value == [1, 2]
        assert host.memory["rec"] is record and record.items is inner and inner == [1, 2]


_VIEW_READS = [
    "context.__class__.get(context, 'lst')",
    "type(context).get(context, 'lst')",
    "dict.get(context, 'lst')",
    "dict.setdefault(context, 'lst')",
    "dict.pop(context, 'lst')",
    "[v for v in dict.values(context) if type(v) is list][0]",
    "[v for k, v in reversed(context.items()) if k == 'lst'][0]",
    "dict(context)['lst']",
    "{**context}['lst']",
    "(context | {})['lst']",
    "({} | context)['lst']",
    "collections.ChainMap(context)['lst']",
    "collections.OrderedDict(context)['lst']",
    "collections.defaultdict(None, context)['lst']",
    "operator.itemgetter('lst')(context)",
    "sorted(context.items())[1][1]",
    "context['nested']['lst']",
]


class TestViewReadsThatHeld:
    """Regression pins: every way of reaching a memory list hands out the attempt's copy."""

    @pytest.mark.parametrize("reach", _VIEW_READS)
    def test_mutation_after_the_read_rolls_back(self, reach: str) -> None:
        """Appending to what the read returned, then failing, leaves memory as it was."""
        host = Host(memory={"lst": [1], "nested": {"lst": [1]}})
        source = (
            "import collections, operator\n"
            f"target = {reach}\n"
            "target.append(2)\n"
            "raise ValueError('boom')"
        )

        result = execute(source, host=host)

        assert result.error is not None and result.error.error_type == "execution"
        assert host.memory == {"lst": [1], "nested": {"lst": [1]}}


def _open_types_memory() -> dict[str, Any]:
    return {
        "buf": io.StringIO("abc"),
        "tree": ElementTree.Element("root"),
        "table": collections.UserDict(a=1),
        "rows": collections.UserList([1]),
        "rng": random.Random(1),
    }


def _state(memory: dict[str, Any]) -> list[Any]:
    return [
        memory["buf"].getvalue(),
        dict(memory["tree"].attrib),
        dict(memory["table"]),
        list(memory["rows"]),
        memory["rng"].getstate(),
    ]


class TestHostObjectsTheJournalDoesNotCopy:
    """Finding 3 (fixed): mutable host objects in memory were changed in place, past rollback.

    Payload: ``context['buf'].write('ZZZ'); raise ValueError()``. The journal copied dicts,
    lists, sets, deques, bytearrays, tuples, namedtuples and Outcomes only; other objects a host
    stored (io.StringIO, ElementTree.Element, collections.UserDict/UserList/ChainMap,
    random.Random) came back as the originals. They are now copied on touch and committed in
    place, and host objects the journal cannot restore are withheld (ADR 0057;
    ``specs/journal/test_kinds.py`` pins each kind).
    """

    @pytest.mark.parametrize(
        "mutation",
        [
            "context['buf'].write('ZZZ')",
            "context['tree'].set('owned', '1')",
            "context['table'].update(b=2)",
            "context['rows'].append(2)",
            "context['rng'].seed(5)",
        ],
    )
    def test_mutation_in_a_failed_attempt_does_not_reach_memory(self, mutation: str) -> None:
        """The failed attempt's change is not visible in memory afterwards."""
        host = Host(memory=_open_types_memory())
        before = _state(host.memory)

        result = execute(f"{mutation}\nraise ValueError('boom')", host=host)

        assert result.error is not None
        assert _state(host.memory) == before

    @pytest.mark.parametrize(
        ("mutation", "changed", "expected"),
        [
            ("context['buf'].write('ZZZ')", 0, "ZZZ"),
            ("context['tree'].set('owned', '1')", 1, {"owned": "1"}),
            ("context['table'].update(b=2)", 2, {"a": 1, "b": 2}),
            ("context['rows'].append(2)", 3, [1, 2]),
            ("context['rng'].seed(5)", 4, random.Random(5).getstate()),
        ],
    )
    def test_mutation_in_a_successful_attempt_commits_into_the_same_objects(
        self, mutation: str, changed: int, expected: Any
    ) -> None:
        """Memory keeps every object it held; the one the attempt changed holds the change."""
        host = Host(memory=_open_types_memory())
        originals = dict(host.memory)
        before = _state(host.memory)
        before[changed] = expected

        result = execute(f"{mutation}\nresult = 1", host=host)

        assert (result.error, result.value) == (None, 1)
        assert all(host.memory[key] is originals[key] for key in originals)
        assert _state(host.memory) == before


class _HostList(collections.UserList):  # type: ignore[type-arg]
    """A host subclass of a copied kind: its own methods are out of the journal's reach."""


class TestHostObjectAttacksThatHeld:
    """Regression pins: attacks on memory's host objects (ADR 0057) that held."""

    def test_a_subclass_of_a_copied_kind_is_withheld(self) -> None:
        """``append`` on a host ``UserList`` subclass fails; the host's object is unchanged."""
        rows = _HostList([1])
        host = Host(memory={"rows": rows})

        result = execute("context['rows'].append(2)\nresult = 1", host=host)

        assert result.error is not None and "Withheld" in str(result.error)
        assert list(rows) == [1]

    @pytest.mark.parametrize(
        "change",
        ["class T:\n    pass\ne.tag = T()", "class T:\n    pass\ne.set('k', T())"],
    )
    def test_a_program_object_in_an_element_is_refused(self, change: str) -> None:
        """A program object as tag or attribute value fails the commit; the host's is as was."""
        tree = ElementTree.Element("root")
        host = Host(memory={"tree": tree})

        result = execute(f"e = context['tree']\n{change}\nresult = 1", host=host)

        assert result.error is not None and result.error.error_type == "non_serializable_result"
        assert (tree.tag, tree.attrib) == ("root", {})

    def test_a_str_subclass_attribute_key_arrives_as_a_str(self) -> None:
        """A key whose ``__hash__`` the program overrode is committed as a plain ``str``."""
        tree = ElementTree.Element("root")
        host = Host(memory={"tree": tree})
        source = (
            "class K(str):\n    def __hash__(self):\n        return 1\n"
            "e = context['tree']\ne.attrib[K('k')] = 'v'\nresult = 1"
        )

        result = execute(source, host=host)

        assert (result.error, tree.attrib, [type(key) for key in tree.attrib]) == (
            None,
            {"k": "v"},
            [str],
        )

    @pytest.mark.parametrize("method", ["write('/tmp/x.xml')", "parse('/etc/hostname')"])
    def test_a_memory_tree_cannot_touch_files(self, method: str) -> None:
        """``ElementTree.write``/``parse`` stay denied on the journal's copy of a host tree."""
        host = Host(memory={"doc": ElementTree.ElementTree(ElementTree.Element("r"))})

        result = execute(f"context['doc'].{method}\nresult = 1", host=host)

        assert result.error is not None and "is not available in the sandbox" in str(result.error)
