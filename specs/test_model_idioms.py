"""What strong models write runs: each idiom as a whole program, through an Agent (issue 22).

Each program below is the kind of reply a code model gives to the runtime's prompt: an RSS date
parser with ``email.utils``, a build order with ``graphlib``, a ``NamedTuple`` record, a
``TypedDict`` payload, a ``Generic`` container, a ``Protocol``, a ``Counter`` subclass, a
``contextmanager``, ``shlex.split``, a ``JSONEncoder`` for dates and the ``__main__`` guard. A
:class:`~recurgent.testing.ScriptedProvider` replies with it; the call's Outcome carries the
exact value, on the first attempt. A refusal's feedback to the model quotes the real line.
"""

from __future__ import annotations

import textwrap
from typing import Any

import pytest

from recurgent import Agent
from recurgent.testing import ScriptedProvider

PROGRAMS: dict[str, tuple[str, tuple[Any, ...], Any]] = {
    "rss_dates": (
        """
        from email.utils import parsedate_to_datetime
        from datetime import timezone

        def to_iso(pub_date: str) -> str:
            return parsedate_to_datetime(pub_date).astimezone(timezone.utc).isoformat()

        result = [to_iso(d) for d in args[0]]
        """,
        (["Tue, 01 Dec 2026 10:30:00 +0200", "Wed, 02 Dec 2026 08:00:00 GMT"],),
        ["2026-12-01T08:30:00+00:00", "2026-12-02T08:00:00+00:00"],
    ),
    "build_order": (
        """
        from graphlib import TopologicalSorter, CycleError

        deps = args[0]
        try:
            order = list(TopologicalSorter(deps).static_order())
        except CycleError as exc:
            result = Outcome.error("cycle", f"cycle: {exc.args[1]}")
        else:
            result = order
        """,
        ({"app": ["lib", "log"], "lib": ["core"], "log": ["core"]},),
        ["core", "lib", "log", "app"],
    ),
    "named_tuple_record": (
        """
        from typing import NamedTuple

        class Employee(NamedTuple):
            name: str
            salary: float
            dept: str = "eng"

            def monthly(self) -> float:
                return round(self.salary / 12, 2)

        staff = [Employee(*row) for row in args[0]]
        top = max(staff, key=lambda e: e.salary)
        result = {"top": top._asdict(), "monthly": top.monthly(),
                  "raised": top._replace(salary=top.salary * 1.1).salary}
        """,
        ([["ann", 120000.0], ["bob", 90000.0, "ops"]],),
        {
            "top": {"name": "ann", "salary": 120000.0, "dept": "eng"},
            "monthly": 10000.0,
            "raised": 132000.00000000001,
        },
    ),
    "typed_dict": (
        """
        from typing import TypedDict, NotRequired

        class Summary(TypedDict):
            count: int
            mean: float
            note: NotRequired[str]

        def summarize(values: list[float]) -> Summary:
            return Summary(count=len(values), mean=sum(values) / len(values))

        result = summarize(args[0])
        """,
        ([1.0, 2.0, 6.0],),
        {"count": 3, "mean": 3.0},
    ),
    "generic_stack": (
        """
        from typing import Generic, TypeVar, Optional

        T = TypeVar("T")

        class Stack(Generic[T]):
            def __init__(self) -> None:
                self._items: list[T] = []

            def push(self, item: T) -> None:
                self._items.append(item)

            def pop(self) -> Optional[T]:
                return self._items.pop() if self._items else None

        s: Stack[str] = Stack[str]()
        for token in args[0].split():
            s.push(token)
        result = [s.pop(), s.pop(), len(s._items)]
        """,
        ("a b c",),
        ["c", "b", 1],
    ),
    "protocol": (
        """
        from typing import Protocol, runtime_checkable

        @runtime_checkable
        class Shape(Protocol):
            def area(self) -> float: ...

        class Rect:
            def __init__(self, w: float, h: float) -> None:
                self.w, self.h = w, h
            def area(self) -> float:
                return self.w * self.h

        class Circle:
            def __init__(self, r: float) -> None:
                self.r = r
            def area(self) -> float:
                return 3.0 * self.r ** 2

        shapes: list[Shape] = [Rect(2, 3), Circle(1)]
        result = {"total": sum(s.area() for s in shapes),
                  "all_shapes": all(isinstance(s, Shape) for s in shapes),
                  "int_is_shape": isinstance(4, Shape)}
        """,
        (),
        {"total": 9.0, "all_shapes": True, "int_is_shape": False},
    ),
    "counter_subclass": (
        """
        from collections import Counter

        class WordCounter(Counter):
            def add_text(self, text: str) -> None:
                self.update(w.strip(".,!").lower() for w in text.split())

            def top(self, n: int) -> list[tuple[str, int]]:
                return self.most_common(n)

        wc = WordCounter()
        wc.add_text(args[0])
        result = wc.top(2)
        """,
        ("The cat and the hat. The end!",),
        [("the", 3), ("cat", 1)],
    ),
    "context_manager": (
        """
        from contextlib import contextmanager, suppress

        events = []

        @contextmanager
        def step(name):
            events.append(f"start {name}")
            try:
                yield name
            finally:
                events.append(f"end {name}")

        with step("parse") as current:
            events.append(f"in {current}")
        with suppress(ValueError), step("convert"):
            int("not a number")
        result = events
        """,
        (),
        ["start parse", "in parse", "end parse", "start convert", "end convert"],
    ),
    "shlex_split": (
        """
        import shlex

        def parse_command(line: str) -> dict:
            parts = shlex.split(line)
            return {"cmd": parts[0], "args": parts[1:], "quoted": shlex.join(parts)}

        result = parse_command(args[0])
        """,
        ('grep -i "hello world" notes.txt',),
        {
            "cmd": "grep",
            "args": ["-i", "hello world", "notes.txt"],
            "quoted": "grep -i 'hello world' notes.txt",
        },
    ),
    "json_encoder": (
        """
        import json
        from datetime import datetime, date
        from decimal import Decimal

        class AppEncoder(json.JSONEncoder):
            def default(self, obj):
                if isinstance(obj, (datetime, date)):
                    return obj.isoformat()
                if isinstance(obj, Decimal):
                    return str(obj)
                return super().default(obj)

        payload = {"when": date(2026, 12, 2), "price": Decimal("9.99"), "tags": ["a"]}
        result = json.dumps(payload, cls=AppEncoder, sort_keys=True)
        """,
        (),
        '{"price": "9.99", "tags": ["a"], "when": "2026-12-02"}',
    ),
    "main_guard": (
        """
        def fib(n: int) -> int:
            a, b = 0, 1
            for _ in range(n):
                a, b = b, a + b
            return a

        def main():
            return [fib(n) for n in range(args[0])]

        if __name__ == "__main__":
            result = main()
        """,
        (8,),
        [0, 1, 1, 2, 3, 5, 8, 13],
    ),
}


@pytest.mark.parametrize("name", sorted(PROGRAMS))
def test_the_program_runs_on_the_first_reply(name: str) -> None:
    """The Outcome is ok with the exact value, after one request to the provider."""
    code, args, expected = PROGRAMS[name]
    provider = ScriptedProvider({name: textwrap.dedent(code)})
    agent = Agent.for_("idioms", provider=provider)
    outcome = getattr(agent, name)(*args)
    assert (outcome.ok, outcome.value, len(provider.requests)) == (True, expected, 1)


def test_a_refused_base_is_fed_back_with_its_line() -> None:
    """The model's second request quotes the ``class`` statement's line and the fix."""
    refused = "import csv\n\nclass Rows(csv.DictReader):\n    pass\n\nresult = 1\n"
    provider = ScriptedProvider({"rows": [refused, "result = 2"]})
    agent = Agent.for_("idioms", provider=provider)
    assert agent.rows().value == 2
    feedback = provider.requests[1].user_prompt
    assert "<failure_location>line 3: class Rows(csv.DictReader):</failure_location>" in feedback
    assert "hold a DictReader in an attribute instead (self.inner = ...)" in feedback
