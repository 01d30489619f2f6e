"""Red team R5: issue 22's surfaces (ADRs 0104 to 0106) attacked as an attacker would.

- **K3 (fixed)**: ``email.utils.quote`` and ``formataddr`` escape each backslash and double
  quote with a backslash, in one C call (``str.replace``, a substitution): text under the item
  cap came back up to twice past it, and quoting the result again doubled it again.
- K1 and K2 (a map's batch sandbox) are in ``specs/map/test_red_team_map.py``.

The attacks that held are pinned below with their exact outcome: the stop is not swallowed by
the program's own or contextlib's exit handlers, ``__name__`` cannot be rebound, class bases
cannot be widened, a runtime-checkable protocol reads no private name of a host object, the
sandbox's ``JSONEncoder`` never takes the one-shot C encoder, and ``graphlib`` runs a program's
hostile ``__eq__`` only within the deadline.
"""

from __future__ import annotations

import pytest

from recurgent._sandbox import SandboxLimits
from recurgent.errors import InvalidCodeError
from specs.sandbox.support import Host, error_of, execute, value_of

_SHORT = SandboxLimits(timeout_seconds=0.5)


class TestEmailQuoting:
    """K3 (fixed): the escaped text's size is checked before it is built."""

    def test_quote_of_text_that_doubles_past_the_item_cap_is_refused(self) -> None:
        """Eight million characters, half backslashes and half quotes, would escape to
        sixteen million: refused before the call."""
        error_type, message = error_of(
            "from email import utils\nresult = len(utils.quote('\\\\\"' * 4_000_000))"
        )

        assert error_type == "resource_limit"
        assert "email.utils.quote() would create 16000000 items" in message

    def test_formataddr_of_a_name_that_doubles_past_the_item_cap_is_refused(self) -> None:
        """A six-million-character name of quotes and backslashes: twelve million escaped."""
        error_type, message = error_of(
            "from email import utils\n"
            "result = len(utils.formataddr(('\"\\\\' * 3_000_000, 'a@b.example')))"
        )

        assert error_type == "resource_limit"
        assert "email.utils.formataddr() would create 12000016 items" in message

    def test_quote_and_formataddr_still_escape_as_the_library_does(self) -> None:
        """Within the cap both answer exactly what ``email.utils`` answers."""
        value = value_of(
            "from email import utils\n"
            "result = [utils.quote('a\"b\\\\c'), utils.formataddr(('A \"B\"', 'a@b.example'))]"
        )

        assert value == ['a\\"b\\\\c', '"A \\"B\\"" <a@b.example>']


class TestTheStopIsNotSwallowed:
    """Held: exit handlers that swallow everything do not swallow the attempt's stop."""

    @pytest.mark.parametrize(
        "source",
        [
            "import contextlib\n"
            "n = 0\n"
            "with contextlib.suppress(BaseException):\n"
            "    while True:\n"
            "        n += 1\n",
            "import contextlib\n"
            "def swallow(*exc):\n"
            "    return True\n"
            "n = 0\n"
            "for _ in range(100):\n"
            "    with contextlib.ExitStack() as stack:\n"
            "        stack.push(swallow)\n"
            "        while True:\n"
            "            n += 1\n",
            "import contextlib\n"
            "@contextlib.contextmanager\n"
            "def quiet():\n"
            "    try:\n"
            "        yield\n"
            "    except BaseException:\n"
            "        pass\n"
            "n = 0\n"
            "for _ in range(1000):\n"
            "    with quiet():\n"
            "        while True:\n"
            "            n += 1\n",
        ],
        ids=["suppress", "exit-stack-push", "contextmanager"],
    )
    def test_a_swallowing_exit_handler_still_ends_in_timeout(self, source: str) -> None:
        """Each loops forever inside a handler that swallows any exception: a timeout."""
        error_type, _ = error_of(source, limits=_SHORT)

        assert error_type == "timeout"


class TestMainNameIsFixed:
    """Held (ADR 0106): ``__name__`` reads ``"__main__"`` and no binding form can change it."""

    @pytest.mark.parametrize(
        "source",
        [
            "for __name__ in ['x']:\n    pass",
            "import json as __name__",
            "try:\n    1 / 0\nexcept Exception as __name__:\n    pass",
            "match 1:\n    case __name__:\n        pass",
            "def f():\n    global __name__\n    __name__ = 'x'\nf()\nresult = 1",
        ],
        ids=["for", "import-as", "except-as", "match-capture", "global"],
    )
    def test_binding_the_name_is_refused_at_compile_time(self, source: str) -> None:
        with pytest.raises(InvalidCodeError, match='"__name__" is an invalid variable name'):
            execute(source)

    def test_the_name_reads_main(self) -> None:
        assert value_of("result = __name__ == '__main__'") is True


class TestClassBasesHold:
    """Held (ADR 0104): what a program's class may not do with typing's bases."""

    @pytest.mark.parametrize(
        ("source", "message"),
        [
            (
                "import typing\nclass P(typing.NamedTuple):\n    a: int\n    _make = 1",
                "AttributeError: Cannot overwrite NamedTuple attribute _make",
            ),
            (
                "import typing\nclass P(typing.NamedTuple, typing.Protocol):\n    a: int",
                "a NamedTuple class can only derive from NamedTuple (and Generic)",
            ),
            (
                "import typing\nresult = typing.runtime_checkable(typing.SupportsInt)",
                "@runtime_checkable can be only applied to protocol classes your code defines",
            ),
            (
                "import typing\nclass P(typing.Protocol):\n    def f(self): ...\nresult = P()",
                "Protocols cannot be instantiated",
            ),
        ],
        ids=["namedtuple-reserved", "namedtuple-protocol", "checkable-host", "protocol-call"],
    )
    def test_refused(self, source: str, message: str) -> None:
        error_type, text = error_of(source)

        assert error_type == "execution"
        assert message in text

    def test_a_protocol_check_reads_no_private_name_of_host_objects(self) -> None:
        """A protocol naming a private member is never satisfied by memory, a handle, a
        builtin or a module (their private names are not looked at), and a property of the
        program's own class is found statically, without running."""
        value = value_of(
            "import typing\n"
            "hits = []\n"
            "@typing.runtime_checkable\n"
            "class Private(typing.Protocol):\n"
            "    _journal: int\n"
            "    def call(self): ...\n"
            "@typing.runtime_checkable\n"
            "class Named(typing.Protocol):\n"
            "    def f(self): ...\n"
            "class Q:\n"
            "    @property\n"
            "    def f(self):\n"
            "        hits.append(1)\n"
            "        return 1\n"
            "result = [isinstance(memory, Private), isinstance(delegate('x'), Private),\n"
            "          isinstance(print, Private), isinstance(typing, Private),\n"
            "          isinstance(Q(), Named), hits]"
        )

        assert value == [False, False, False, False, True, []]


class TestLibraryCodeHolds:
    def test_a_json_encoder_subclass_never_takes_the_one_shot_c_encoder(self) -> None:
        """``iterencode(o, True)`` asks for the C encoder's whole text in one call; the
        sandbox's encoder builds it in pieces, so sixty million characters end at the
        deadline."""
        error_type, _ = error_of(
            "import json\n"
            "class E(json.JSONEncoder):\n"
            "    pass\n"
            "result = len(''.join(E().iterencode([[0] * 10**4] * 2000, True)))",
            limits=_SHORT,
        )

        assert error_type == "timeout"

    def test_graphlib_runs_a_hostile_eq_only_within_the_deadline(self) -> None:
        """Three thousand nodes that all hash alike and equal nothing: quadratic in the
        program's ``__eq__``, stopped at the deadline."""
        error_type, _ = error_of(
            "import graphlib\n"
            "class N:\n"
            "    def __init__(self, i):\n"
            "        self.i = i\n"
            "    def __hash__(self):\n"
            "        return 1\n"
            "    def __eq__(self, other):\n"
            "        return False\n"
            "ts = graphlib.TopologicalSorter({N(i): [N(i + 1)] for i in range(3000)})\n"
            "result = len(list(ts.static_order()))",
            limits=_SHORT,
        )

        assert error_type == "timeout"

    def test_json_dumps_cls_cannot_be_a_host_class(self) -> None:
        """``cls=`` of ``json.dumps`` given memory's type is refused, not constructed."""
        error_type, text = error_of("import json\nresult = json.dumps([1], cls=type(memory))")

        assert error_type == "execution"
        assert "memory views are made by the runtime" in text


def test_host_memory_is_untouched_by_the_pins() -> None:
    """The protocol check against memory leaves memory as it was."""
    host = Host(memory={"a": 1})
    result = execute(
        "import typing\n"
        "@typing.runtime_checkable\n"
        "class P(typing.Protocol):\n"
        "    def keys(self): ...\n"
        "result = isinstance(memory, P)",
        host=host,
    )

    assert result.error is None
    assert host.memory == {"a": 1}
