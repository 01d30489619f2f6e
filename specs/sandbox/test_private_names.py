"""Single-underscore names and read-only dunders: allowed on the program's own objects only."""

from __future__ import annotations

import pytest

from recurgent._sandbox._names import is_private_name
from specs.sandbox.support import error_of, value_of


class TestPrivateNamesOnOwnObjects:
    """What a model writes in a class or a helper module works as in plain Python."""

    def test_instance_state_and_helper_methods(self) -> None:
        """``self._items`` and a ``_peek`` method on a class the program defines."""
        source = (
            "class Stack:\n"
            "    def __init__(self):\n"
            "        self._items = []\n"
            "    def push(self, x):\n"
            "        self._items.append(x)\n"
            "        self._count = len(self._items)\n"
            "    def _peek(self):\n"
            "        return self._items[-1]\n"
            "s = Stack()\n"
            "s.push(1)\n"
            "s.push(2)\n"
            "result = [s._peek(), s._count]"
        )
        assert value_of(source) == [2, 2]

    def test_private_function_and_variable_names(self) -> None:
        """``def _helper(_value)`` and ``_cache = {}`` are ordinary names."""
        source = "_cache = {}\ndef _helper(_value):\n    return _value * 2\nresult = _helper(3)"
        assert value_of(source) == 6

    def test_augmented_assignment_and_setattr(self) -> None:
        """``self._n += 1`` and ``setattr(obj, '_n', ...)`` on the program's own object."""
        source = (
            "class C:\n"
            "    def __init__(self):\n"
            "        self._n = 0\n"
            "c = C()\n"
            "c._n += 2\n"
            "setattr(c, '_m', 5)\n"
            "result = [c._n, getattr(c, '_m')]"
        )
        assert value_of(source) == [2, 5]


class TestPrivateNamesOnHostObjects:
    """The same names on anything the program did not make stay refused."""

    @pytest.mark.parametrize(
        "source",
        [
            "import json\nresult = json._default_encoder",
            "result = (1)._x",
            "import random\nresult = random._inst",
            "result = getattr('abc', '_x')",
            "result = Outcome.ok(1)._fields",
        ],
    )
    def test_host_private_attribute_is_refused(self, source: str) -> None:
        """A private attribute of a module, a plain value or an Outcome is an execution error."""
        kind, message = error_of(source)
        assert (kind, "private in the sandbox" in message) == ("execution", True)

    def test_setattr_of_a_private_name_on_a_host_object_is_refused(self) -> None:
        """``setattr(dict_obj, '_x', 1)`` is refused before it reaches the object."""
        kind, message = error_of("d = {}\nsetattr(d, '_x', 1)")
        assert (kind, "names starting with '_' are private" in message) == ("execution", True)

    @pytest.mark.parametrize(
        ("name", "private"),
        [
            ("_items", True),
            ("_x", True),
            ("_peek2", True),
            ("__init__", False),
            ("__x", False),
            ("_getattr_", False),
            ("_write_", False),
            ("_print", False),
            ("_tmp0", False),
            ("_", False),
            ("_x_", False),
        ],
    )
    def test_which_names_are_private_names(self, name: str, private: bool) -> None:
        """Guard names (trailing ``_``), temporaries and dunders are never private names."""
        assert is_private_name(name) is private


class TestReadableDunders:
    """``__class__``, ``__name__``, ``__doc__`` and ``__dict__`` read as plain Python reads them."""

    def test_exception_class_name(self) -> None:
        """``e.__class__.__name__`` in an ``except`` gives the exception's class name."""
        source = "try:\n    1 / 0\nexcept Exception as e:\n    result = e.__class__.__name__"
        assert value_of(source) == "ZeroDivisionError"

    def test_own_object_dict_and_doc(self) -> None:
        """An own instance's ``__dict__`` is a copy of its state; a class's ``__doc__`` its docstring."""
        source = (
            "class A:\n"
            "    '''An A.'''\n"
            "    def __init__(self):\n"
            "        self.x = 1\n"
            "a = A()\n"
            "state = a.__dict__\n"
            "state['x'] = 99\n"
            "result = [a.__dict__, A.__doc__, a.x]"
        )
        assert value_of(source) == [{"x": 1}, "An A.", 1]

    def test_host_object_dict_is_refused(self) -> None:
        """``__dict__`` of an object the program did not make is refused."""
        kind, message = error_of("result = Outcome.ok(1).__dict__")
        assert (kind, "private in the sandbox" in message) == ("execution", True)


class TestTheRefusalSaysWhoseNamesAreReadable:
    """A refused single-underscore name says which objects the exception covers: a model that
    called ``map()`` does not take the map object for its own (the text said "except on objects
    your code created")."""

    def test_a_builtins_result_is_not_the_programs_own(self) -> None:
        """``map(str, [1])._x``: refused, naming the program's classes, instances and functions."""
        assert error_of("result = map(str, [1])._x") == (
            "execution",
            "Execution error in tester.run: AttributeError: '_x' is not accessible: names "
            "starting with '_' are private in the sandbox; single-underscore names are readable "
            "on your own classes, their instances and your functions",
        )

    def test_the_abc_modules_state_on_an_own_instance_says_whose_it_is(self) -> None:
        """``D()._abc_impl`` of the program's ABC-based class: the abc module's state."""
        source = (
            "from collections import UserDict\nclass D(UserDict):\n    pass\nresult = D()._abc_impl"
        )
        assert error_of(source) == (
            "execution",
            "Execution error in tester.run: AttributeError: '_abc_impl' is not accessible: it "
            "is the abc module's own state, private in the sandbox even on your classes",
        )

    def test_an_own_single_underscore_name_still_reads(self) -> None:
        """The control: ``_x`` of the program's own class reads as in Python."""
        assert value_of("class A:\n    _x = 1\nresult = [A._x, A()._x]") == [1, 1]


class TestVars:
    """``vars(obj)`` is ``obj.__dict__``: a copy for the program's own objects, refused otherwise."""

    def test_vars_of_an_own_object(self) -> None:
        """``vars(p)`` of a program-made instance is a copy of its attributes."""
        source = "class P:\n    def __init__(self):\n        self.a = 1\nresult = vars(P())"
        assert value_of(source) == {"a": 1}

    def test_vars_of_a_host_object_is_refused(self) -> None:
        """``vars(Outcome.ok(1))`` is refused like its ``__dict__``."""
        kind, message = error_of("result = vars(Outcome.ok(1))")
        assert (kind, "private in the sandbox" in message) == ("execution", True)
