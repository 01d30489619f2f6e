"""Host objects in memory (ADR 0057): copied and committed in place, shared, or withheld.

Every attack here runs through the real sandbox (policy, journal, commit): a failed attempt
must leave memory exactly as it was, object identities included; a successful one writes its
change into the host's own objects.
"""

from __future__ import annotations

import array
import collections
import datetime
import functools
import io
import random
import xml.etree.ElementTree as ElementTree
from collections.abc import Callable
from typing import Any

import pytest

from recurgent import Agent
from recurgent.testing import ScriptedProvider
from specs.sandbox.support import FakeAgent, Host, execute


def _tree() -> ElementTree.Element:
    root = ElementTree.Element("root", {"a": "1"})
    root.text = "t"
    ElementTree.SubElement(root, "child", {"b": "2"}).tail = "x"
    return root


def _snapshot(value: Any) -> Any:
    """Everything observable about a host object, as comparable plain data."""
    kind = type(value)
    if kind is io.StringIO or kind is io.BytesIO:
        return (kind.__name__, value.closed or value.__getstate__())
    if kind is ElementTree.Element:
        return ("Element", ElementTree.tostring(value), id(value.attrib), [id(c) for c in value])
    if kind is ElementTree.ElementTree:
        return ("ElementTree", _snapshot(value.getroot()), id(value.getroot()))
    if kind is random.Random:
        return ("Random", value.getstate())
    if kind is array.array:
        return ("array", value.typecode, value.tolist())
    if kind in (collections.UserDict, collections.UserList, collections.UserString):
        return (kind.__name__, id(value.data), _snapshot(value.data))
    if kind is collections.ChainMap:
        return ("ChainMap", id(value.maps), [(id(m), _snapshot(m)) for m in value.maps])
    if kind is dict:
        return {key: _snapshot(item) for key, item in value.items()}
    if kind is list:
        return [_snapshot(item) for item in value]
    if kind in (set, frozenset):
        return sorted((repr(_snapshot(item)) for item in value), key=str)
    return value


# (memory, mutation, the changed object's snapshot once the mutation commits)
Case = tuple[Callable[[], dict[str, Any]], str, Callable[[Any], Any]]

_CASES: dict[str, Case] = {
    "StringIO write": (
        lambda: {"obj": io.StringIO("abc")},
        "context['obj'].write('ZZ')",
        lambda obj: ("StringIO", ("ZZc", "\n", 2, None)),
    ),
    "StringIO newline mode": (
        lambda: {"obj": io.StringIO("a", newline="\r\n")},
        "context['obj'].seek(0, 2)\ncontext['obj'].write('\\nb')",
        lambda obj: ("StringIO", ("a\r\nb", "\r\n", 4, None)),
    ),
    "StringIO close": (
        lambda: {"obj": io.StringIO("abc")},
        "context['obj'].close()",
        lambda obj: ("StringIO", True),
    ),
    "BytesIO write": (
        lambda: {"obj": io.BytesIO(b"abc")},
        "context['obj'].seek(1)\ncontext['obj'].write(b'Z')",
        lambda obj: ("BytesIO", (b"aZc", 2, None)),
    ),
    "Element attribute": (
        lambda: {"obj": _tree()},
        "context['obj'].set('owned', '1')",
        lambda obj: (
            "Element",
            b'<root a="1" owned="1">t<child b="2" />x</root>',
            id(obj.attrib),
            [id(obj[0])],
        ),
    ),
    "Element child attribute": (
        lambda: {"obj": _tree()},
        "context['obj'][0].set('b', '3')",
        lambda obj: (
            "Element",
            b'<root a="1">t<child b="3" />x</root>',
            id(obj.attrib),
            [id(obj[0])],
        ),
    ),
    "Element new child": (
        lambda: {"obj": _tree()},
        "import xml.etree.ElementTree as ET\nET.SubElement(context['obj'], 'new', c='3').text = 'n'",
        lambda obj: (
            "Element",
            b'<root a="1">t<child b="2" />x<new c="3">n</new></root>',
            id(obj.attrib),
            [id(child) for child in obj],
        ),
    ),
    "Element text, tag, attrib and children rebound": (
        lambda: {"obj": _tree()},
        "e = context['obj']\ne.text = 'T'\ne.tag = 'top'\ne.attrib = {'z': '9'}\ne.remove(e[0])",
        lambda obj: ("Element", b'<top z="9">T</top>', id(obj.attrib), []),
    ),
    "ElementTree root": (
        lambda: {"obj": ElementTree.ElementTree(_tree())},
        "context['obj'].getroot().set('k', 'v')",
        lambda obj: (
            "ElementTree",
            (
                "Element",
                b'<root a="1" k="v">t<child b="2" />x</root>',
                id(obj.getroot().attrib),
                [id(obj.getroot()[0])],
            ),
            id(obj.getroot()),
        ),
    ),
    "Random seed": (
        lambda: {"obj": random.Random(1)},
        "context['obj'].seed(5)",
        lambda obj: ("Random", random.Random(5).getstate()),
    ),
    "Random draw": (
        lambda: {"obj": random.Random(1)},
        "context['obj'].random()",
        lambda obj: ("Random", _drawn_state()),
    ),
    "array operator": (
        lambda: {"obj": array.array("i", [1, 2])},
        "import operator\nx = context['obj']\nx += x\noperator.setitem(x, 0, 9)",
        lambda obj: ("array", "i", [9, 2, 1, 2]),
    ),
    "UserDict update": (
        lambda: {"obj": collections.UserDict(a=1)},
        "context['obj'].update(b=2)",
        lambda obj: ("UserDict", id(obj.data), {"a": 1, "b": 2}),
    ),
    "UserList append": (
        lambda: {"obj": collections.UserList([1])},
        "context['obj'].append(2)",
        lambda obj: ("UserList", id(obj.data), [1, 2]),
    ),
    "UserList in place": (
        lambda: {"obj": collections.UserList([3, 1])},
        "x = context['obj']\nx += [2]\nx.sort()",
        lambda obj: ("UserList", id(obj.data), [1, 2, 3]),
    ),
    "ChainMap": (
        lambda: {"obj": collections.ChainMap({"a": 1}, {"b": 2})},
        "context['obj'].update(z=3)\ncontext['obj'].maps.append({'q': 4})",
        lambda obj: (
            "ChainMap",
            id(obj.maps),
            [(id(m), _snapshot(m)) for m in obj.maps[:2]] + [(id(obj.maps[2]), {"q": 4})],
        ),
    ),
}


def _drawn_state() -> Any:
    drawn = random.Random(1)
    drawn.random()
    return drawn.getstate()


class TestCopiedHostObjects:
    """Copied on first touch: rollback leaves the original as it was, commit writes into it."""

    @pytest.mark.parametrize("case", list(_CASES), ids=list(_CASES))
    def test_mutate_then_fail_leaves_exactly_the_old_state(self, case: str) -> None:
        """After the failure memory holds the same object, in exactly its old state."""
        make, mutation, _ = _CASES[case]
        memory = make()
        original = memory["obj"]
        before = _snapshot(original)

        result = execute(f"{mutation}\nraise ValueError('boom')", host=Host(memory=memory))

        assert (result.error is not None, result.error and result.error.error_type) == (
            True,
            "execution",
        )
        assert memory["obj"] is original
        assert _snapshot(original) == before

    @pytest.mark.parametrize("case", list(_CASES), ids=list(_CASES))
    def test_mutate_then_succeed_writes_into_the_hosts_object(self, case: str) -> None:
        """After success memory holds the same object, now holding the attempt's change."""
        make, mutation, expected = _CASES[case]
        memory = make()
        original = memory["obj"]

        result = execute(f"{mutation}\nresult = 1", host=Host(memory=memory))

        assert (result.error, result.value) == (None, 1)
        assert memory["obj"] is original
        assert _snapshot(original) == expected(original)

    def test_commit_keeps_the_identity_of_inner_objects(self) -> None:
        """Attribute dicts, child elements, a wrapper's data and a ChainMap's maps stay the same."""
        root, tree = _tree(), ElementTree.ElementTree(_tree())
        table, chain = collections.UserDict(a=1), collections.ChainMap({"a": 1}, {"b": 2})
        inner = [
            root.attrib,
            root[0],
            root[0].attrib,
            tree.getroot(),
            table.data,
            chain.maps,
            chain.maps[0],
        ]
        source = (
            "context['root'].set('a', '2')\ncontext['root'][0].set('b', '3')\n"
            "context['tree'].getroot().set('c', '4')\ncontext['table'].update(z=1)\n"
            "context['chain'].update(z=1)\nresult = 1"
        )

        result = execute(
            source, host=Host(memory={"root": root, "tree": tree, "table": table, "chain": chain})
        )

        assert result.error is None
        after = [root.attrib, root[0], root[0].attrib, tree.getroot(), table.data, chain.maps]
        assert [a is b for a, b in zip([*after, chain.maps[0]], inner, strict=True)] == [True] * 7
        top = tree.getroot()
        assert top is not None
        assert (root.get("a"), root[0].get("b"), top.get("c")) == ("2", "3", "4")
        assert (dict(table), chain.maps[0]) == ({"a": 1, "z": 1}, {"a": 1, "z": 1})

    def test_the_attempt_sees_its_own_changes(self) -> None:
        """Within the attempt, the copy behaves like the object: writes are read back."""
        memory = {"buf": io.StringIO("abc"), "tree": _tree(), "rows": collections.UserList([1])}
        source = (
            "context['buf'].write('Z')\ncontext['tree'][0].set('b', '5')\n"
            "context['rows'].append(2)\n"
            "result = [context['buf'].getvalue(), context['tree'][0].get('b'), "
            "list(context['rows'])]\nraise ValueError(repr(result))"
        )

        result = execute(source, host=Host(memory=memory))

        assert result.error is not None
        assert "['Zbc', '5', [1, 2]]" in str(result.error)

    def test_one_element_reached_two_ways_is_one_copy(self) -> None:
        """An element held by the tree and by another key stays the same object in the attempt."""
        root = _tree()
        child = root[0]
        memory = {"tree": root, "node": child}

        result = execute(
            "context['node'].set('b', '7')\nresult = context['tree'][0] is context['node']",
            host=Host(memory=memory),
        )

        assert (result.error, result.value) == (None, True)
        assert (root[0] is child, child.get("b")) == (True, "7")

    def test_a_host_write_made_meanwhile_survives_rollback(self) -> None:
        """Rollback drops the copies: a host write to the original during the attempt stays."""
        root = _tree()
        memory: dict[str, Any] = {"tree": root, "hook": None}

        def host_write() -> int:
            root.set("host", "yes")
            return 1

        memory["hook"] = host_write
        result = execute(
            "context['tree'].set('a', 'attempt')\ncontext['hook']()\nraise ValueError('x')",
            host=Host(memory=memory),
        )

        assert result.error is not None
        assert dict(root.attrib) == {"a": "1", "host": "yes"}


class TestHostObjectsInsideContainers:
    """Host objects hashed by identity, met as set members, dict keys or frozenset members."""

    @pytest.mark.parametrize(
        ("memory", "reach"),
        [
            ({"s": {ElementTree.Element("m")}}, "next(iter(context['s']))"),
            ({"d": {ElementTree.Element("m"): 1}}, "next(iter(context['d']))"),
            ({"f": frozenset({ElementTree.Element("m")})}, "next(iter(context['f']))"),
            ({"t": (io.StringIO("a"),)}, "context['t'][0]"),
        ],
        ids=["set member", "dict key", "frozenset member", "tuple item"],
    )
    def test_a_change_through_a_member_rolls_back(self, memory: dict[str, Any], reach: str) -> None:
        """Changing the member the attempt reached, then failing, leaves the original alone."""
        (container,) = memory.values()
        (member,) = container
        before = _snapshot(member)
        source = (
            f"m = {reach}\n"
            "if hasattr(m, 'set'):\n    m.set('k', 'v')\nelse:\n    m.write('Z')\n"
            "raise ValueError('boom')"
        )

        result = execute(source, host=Host(memory=memory))

        assert result.error is not None and result.error.error_type == "execution"
        assert _snapshot(member) == before and next(iter(container)) is member

    def test_a_member_changed_then_committed_is_the_same_object(self) -> None:
        """The set still holds the same element, and the element holds the change."""
        member = ElementTree.Element("m")
        members = {member}

        result = execute(
            "next(iter(context['s'])).set('k', 'v')\nresult = 1", host=Host(memory={"s": members})
        )

        assert result.error is None
        assert (members == {member}, member.get("k")) == (True, "v")

    def test_a_removed_copied_member_leaves_the_original_set(self) -> None:
        """Discarding the copy of a member removes the original member from memory's set."""
        member = ElementTree.Element("m")
        members = {member, "x"}

        result = execute(
            "s = context['s']\ns.discard(next(m for m in s if m != 'x'))\nresult = 1",
            host=Host(memory={"s": members}),
        )

        assert result.error is None and members == {"x"}

    def test_a_removed_copied_key_leaves_the_original_dict(self) -> None:
        """Deleting the copy of an element key deletes the original key from memory's dict."""
        key = ElementTree.Element("k")
        table = {key: 1, "x": 2}

        result = execute(
            "d = context['d']\ndel d[next(k for k in d if k != 'x')]\nresult = 1",
            host=Host(memory={"d": table}),
        )

        assert result.error is None and table == {"x": 2}


class _Opaque:
    """A host object of the user's own class: the journal cannot know what changes it."""

    def __init__(self) -> None:
        self.items: list[int] = []

    def __setitem__(self, key: int, value: int) -> None:
        self.items.append(value)

    def __iadd__(self, other: int) -> _Opaque:
        self.items.append(other)
        return self


class _Rows(list):  # type: ignore[type-arg]
    """A host subclass of list."""


class TestWithheldHostObjects:
    """Objects the journal can neither copy nor share reach the attempt as a stand-in."""

    @pytest.mark.parametrize(
        "attack",
        [
            "import operator\noperator.setitem(o, 0, 1)",
            "o += 1",
            "o.items.append(1)",
            "list.append(context['rows'], 1)",
            "context['push'](1)",
            "context['bound'](1)",
            "next(context['gen'])",
        ],
    )
    def test_no_route_changes_the_original(self, attack: str) -> None:
        """Operators, unbound methods, bound methods and iterators: all fail, nothing changes."""
        opaque, rows, inner = _Opaque(), _Rows([0]), [0]
        numbers = iter([1, 2])
        memory = {
            "o": opaque,
            "rows": rows,
            "inner": inner,
            "push": inner.append,
            "bound": functools.partial(list.append, inner),
            "gen": numbers,
        }

        result = execute(f"o = context['o']\n{attack}\nresult = 1", host=Host(memory=memory))

        assert result.error is not None
        assert (opaque.items, rows, inner, next(numbers)) == ([], [0], [0], 1)

    def test_the_stand_in_says_what_it_is(self) -> None:
        """repr() of a withheld object names its type and why it cannot be used."""
        result = execute("result = repr(context['o'])", host=Host(memory={"o": _Opaque()}))

        assert result.value == (
            "<withheld _Opaque object: the runtime cannot undo changes to it, so generated "
            "code cannot use it>"
        )

    def test_moving_it_in_memory_keeps_the_original(self) -> None:
        """Stored under another key, into a list, or returned inside memory: the same object."""
        opaque = _Opaque()
        memory: dict[str, Any] = {"o": opaque, "rows": []}

        result = execute(
            "context['copy'] = context['o']\ncontext['rows'].append(context['o'])\n"
            "result = context['o'] is context['copy']",
            host=Host(memory=memory),
        )

        assert (result.error, result.value) == (None, True)
        assert (memory["copy"] is opaque, memory["rows"][0] is opaque) == (True, True)


class TestSharedHostObjects:
    """Values nobody can change and host code reach the attempt as they are."""

    def test_immutable_values_functions_and_agents_are_the_originals(self) -> None:
        """A date, a host function, a partial over atoms and an agent are handed out as is."""
        when = datetime.date(2026, 12, 1)
        host = Host()
        helper = host.child("helper")
        host.memory.update(
            when=when,
            double=lambda n: n * 2,
            add_one=functools.partial(int.__add__, 1),
            helper=helper,
        )

        result = execute(
            "result = [context['when'].year, context['double'](4), context['add_one'](2), "
            "context['helper'].ping().is_ok]",
            host=host,
        )

        assert (result.error, result.value) == (None, [2026, 8, 3, True])
        assert isinstance(host.memory["helper"], FakeAgent) and helper.calls[0][0] == "ping"


class TestThroughAnAgent:
    """The lifecycle drops a failed attempt's copies and commits an accepted one's in place."""

    def test_every_failed_attempt_leaves_the_buffer_and_tree_alone(self) -> None:
        """Retried attempts that write and then fail leave both objects exactly as they were."""
        code = "context['buf'].write('ZZ')\ncontext['tree'].set('k', 'v')\nraise ValueError('no')"
        agent = Agent("t", provider=ScriptedProvider({"run": code}), log=False)
        buf, tree = io.StringIO("abc"), _tree()
        agent.remember(buf=buf, tree=tree)
        before = (_snapshot(buf), _snapshot(tree))

        outcome = agent.run()

        assert outcome.status == "error"
        assert (agent.buf is buf, agent.tree is tree) == (True, True)
        assert (_snapshot(buf), _snapshot(tree)) == before

    def test_an_accepted_attempt_writes_into_the_hosts_objects(self) -> None:
        """The accepted attempt's writes are in the same buffer and element the host holds."""
        code = "context['buf'].write('ZZ')\ncontext['tree'].set('k', 'v')\nresult = 1"
        agent = Agent("t", provider=ScriptedProvider({"run": code}), log=False)
        buf, tree = io.StringIO("abc"), _tree()
        agent.remember(buf=buf, tree=tree)

        outcome = agent.run()

        assert (outcome.status, outcome.value) == ("ok", 1)
        assert (agent.buf is buf, buf.getvalue(), tree.get("k")) == (True, "ZZc", "v")
