"""What a program shows of the role's shared names (recurgent/_profiles/_observe.py, ADR 0084)."""

from __future__ import annotations

from collections import OrderedDict
from decimal import Decimal
from typing import Any

import pytest

from recurgent._profiles import ProgramShape, observe_program, return_shape


def _lifetimes(code: str) -> dict[str, tuple[str, ...]]:
    return dict(observe_program(code).lifetimes)


class TestStateKeys:
    """Memory keys read and written, by every form generated code uses."""

    @pytest.mark.parametrize(
        ("code", "keys", "written"),
        [
            ("result = context['value']", ["value"], []),
            ("context['value'] = 1", ["value"], ["value"]),
            ("result = memory.get('total', 0)", ["total"], []),
            ("memory.setdefault('items', [])", ["items"], ["items"]),
            ("context.pop('stale', None)", ["stale"], ["stale"]),
            ("context.update({'a': 1}, b=2)", ["a", "b"], ["a", "b"]),
            ("remember(mode='x')", ["mode"], ["mode"]),
            ("result = 'seen' in context", ["seen"], []),
            ("del context['old']", ["old"], ["old"]),
            ("context['grid'][0] = 1", ["grid"], ["grid"]),
            ("context['log'].append(args[0])", ["log"], ["log"]),
        ],
    )
    def test_forms(self, code: str, keys: list[str], written: list[str]) -> None:
        """Each form names its key, and the writing forms mark it written."""
        shape = observe_program(code)

        assert (list(shape.state_keys), list(shape.written_keys)) == (keys, written)

    def test_runtime_keys_are_not_the_roles_state(self) -> None:
        """tools and conversation_history are left out (they are the runtime's)."""
        code = (
            "n = len(context['conversation_history'])\nt = context['tools']\ncontext['value'] = n"
        )

        assert observe_program(code).state_keys == ("value",)

    def test_other_names_and_computed_keys_are_ignored(self) -> None:
        """Only str constants on context/memory count."""
        code = "k = 'x'\nresult = context[k]\nother = {'y': 1}\nz = other['y']"

        assert observe_program(code).state_keys == ()

    def test_primary_key_prefers_a_written_key(self) -> None:
        """The primary key is the smallest written key, else the smallest read key."""
        assert observe_program("a = context['alpha']\ncontext['zeta'] = a").primary_key == "zeta"
        assert observe_program("a = context['beta'] + context['alpha']").primary_key == "alpha"
        assert observe_program("result = 1").primary_key is None

    def test_unparseable_code_has_the_empty_shape(self) -> None:
        """Code that does not parse shows nothing."""
        assert observe_program("def (") == ProgramShape()

    def test_the_same_text_is_observed_once(self) -> None:
        """A second observation of the same code returns the cached shape."""
        code = "context['cached_key'] = 1"

        assert observe_program(code) is observe_program(code)


class TestLifetimes:
    """How a key is used suggests how long it lives."""

    def test_plain_write_is_role(self) -> None:
        """A key written without more is a role key."""
        assert _lifetimes("context['value'] = 1") == {"value": ("role",)}

    def test_append_is_session(self) -> None:
        """Appending to a key (directly or through setdefault) makes it a session key."""
        assert _lifetimes("context['log'].append(1)") == {"log": ("session",)}
        assert _lifetimes("context.setdefault('log', []).append(1)") == {"log": ("session",)}

    def test_read_modify_write_is_role(self) -> None:
        """+= and an assignment from the same key are role keys."""
        assert _lifetimes("context['n'] += 1") == {"n": ("role",)}
        assert _lifetimes("context['n'] = context.get('n', 0) + 1") == {"n": ("role",)}

    def test_scratch_names_are_attempt_keys(self) -> None:
        """tmp_/temp_/scratch_/attempt_/working_ names live for one attempt."""
        assert _lifetimes("context['tmp_rows'] = []") == {"tmp_rows": ("attempt",)}

    def test_durable_names(self) -> None:
        """The original's durable names keep that lifetime."""
        assert _lifetimes("context['patterns'] = 1") == {"patterns": ("durable",)}

    def test_one_key_with_two_uses_has_two_lifetimes(self) -> None:
        """Appending and read-modify-write on one key give both lifetimes."""
        code = "context['value'].append(1)\ncontext['value'] += [2]"

        assert _lifetimes(code) == {"value": ("role", "session")}


class TestSignature:
    """How a program takes its arguments."""

    @pytest.mark.parametrize(
        ("code", "signature"),
        [
            ("result = 1", "args:none|kwargs:none"),
            ("result = args[0] + args[2]", "args:0,2|kwargs:none"),
            ("a, b = args\nresult = a + b", "args:0,1|kwargs:none"),
            ("first, *rest = args", "args:0|kwargs:none"),
            ("result = kwargs['x'] + kwargs.get('y', 0)", "args:none|kwargs:x,y"),
            ("result = args[0] * kwargs['scale']", "args:0|kwargs:scale"),
        ],
    )
    def test_signature_family(self, code: str, signature: str) -> None:
        """args indices and kwargs names, sorted, 'none' for an empty side."""
        assert observe_program(code).signature == signature


class TestReturnShape:
    """The return shape family of an answer, in the original's words."""

    @pytest.mark.parametrize(
        ("value", "shape"),
        [
            (None, "nil"),
            (True, "boolean"),
            (3, "numeric"),
            (2.5, "numeric"),
            (Decimal("1.5"), "numeric"),
            ("x", "string"),
            ([1], "array"),
            ((1, 2), "array"),
            ({"b": 1, "a": 2}, "hash:a,b"),
            (OrderedDict(z=1), "hash:z"),
            ({str(i): i for i in range(33)}, "hash:*"),
            ({1, 2}, "set"),
        ],
    )
    def test_families(self, value: Any, shape: str) -> None:
        """Each value falls in its family; a mapping with many keys is hash:*."""
        assert return_shape(value) == shape
