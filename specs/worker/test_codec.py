"""Values on the worker pipe: what the in-process boundary keeps crosses as itself (ADR 0094).

A program under ``isolation="process"`` returns, stores and receives the same values as in
process: each kind round-trips to an equal value of the same exact type, nested kinds too, and
a decoder refuses every malformed envelope instead of guessing.
"""

from __future__ import annotations

import collections
import datetime
import decimal
import fractions
import json
import math
import zoneinfo
from typing import Any

import pytest

from recurgent._worker._codec import Unencodable, _plain_scalars, from_wire, to_wire
from recurgent._worker._protocol import RunResult, dump_line, parse_line
from recurgent.outcome import Outcome

PARIS = zoneinfo.ZoneInfo("Europe/Paris")
PLUS_TWO = datetime.timezone(datetime.timedelta(hours=2), "CEST")


def _no_agents(_: object) -> None:
    return None


def _no_agent_for(number: int, role: str) -> object:
    raise AssertionError(f"no agent reference expected, got #{number} {role}")


def _defaultdict() -> collections.defaultdict[str, list[int]]:
    made: collections.defaultdict[str, list[int]] = collections.defaultdict(list)
    made["a"].append(1)
    return made


def _through_the_pipe(value: Any) -> Any:
    """Encode, write as a protocol line, parse, decode: what the other side holds."""
    line = dump_line(RunResult(call_id="c", status="ok", value=to_wire(value, "v", _no_agents)))
    return from_wire(parse_line(line).value, _no_agent_for)


KINDS: list[Any] = [
    (1, "a", None),
    {1, 2, 3},
    frozenset({"x", "y"}),
    b"\x00\xffbytes",
    {1: "int key", (2, 3): "tuple key", None: "none key"},
    {"__recurgent_outcome__": "a user's dict shaped like an envelope"},
    math.inf,
    -math.inf,
    10**5000,
    -(10**5000) - 7,
    3 + 4j,
    range(2, 20, 3),
    datetime.date(2024, 2, 29),
    datetime.datetime(2024, 3, 31, 2, 30, 15, 123456),
    datetime.datetime(2024, 10, 27, 2, 30, tzinfo=PARIS, fold=1),
    datetime.datetime(2024, 1, 1, tzinfo=datetime.UTC),
    datetime.datetime(2024, 1, 1, tzinfo=PLUS_TWO),
    datetime.time(23, 59, 59, 999999, tzinfo=datetime.timezone(datetime.timedelta(minutes=-90))),
    datetime.timedelta(days=-3, seconds=5, microseconds=7),
    PLUS_TWO,
    decimal.Decimal("-1.2300E+5"),
    decimal.Decimal("sNaN"),
    fractions.Fraction(-7, 3),
    collections.deque([1, 2], maxlen=5),
    collections.Counter("abracadabra"),
    collections.OrderedDict([("b", 1), ("a", 2)]),
    _defaultdict(),
    ValueError("bad", 3),
    Outcome.ok({"when": datetime.date(2024, 1, 1), "ids": {1, 2}}),
]


@pytest.mark.parametrize("value", KINDS, ids=lambda value: type(value).__name__)
def test_each_kind_arrives_as_the_same_type_and_value(value: Any) -> None:
    """The exact type, the value, and for times the zone and fold, survive the pipe."""
    back = _through_the_pipe(value)

    assert type(back) is type(value)
    if isinstance(value, BaseException):
        assert back.args == value.args
    elif isinstance(value, decimal.Decimal):
        assert str(back) == str(value)
    else:
        assert back == value
    if isinstance(value, datetime.datetime | datetime.time):
        assert (back.tzinfo, back.fold) == (value.tzinfo, value.fold)
    if isinstance(value, collections.deque):
        assert back.maxlen == value.maxlen
    if isinstance(value, collections.defaultdict):
        assert back.default_factory is list
    if isinstance(value, dict):
        assert list(back) == list(value)


def test_nan_crosses_as_nan() -> None:
    """NaN is not equal to itself, so it is pinned apart: it arrives as a float NaN."""
    back = _through_the_pipe([math.nan])
    assert type(back[0]) is float and math.isnan(back[0])


def test_nested_kinds_keep_their_types_all_the_way_down() -> None:
    """A tuple inside a set inside a dict with int keys inside a list: every level kept."""
    value = [{7: {(1, b"x"), (2, b"y")}}, (datetime.date(2020, 1, 1), {"k": (None,)})]
    back = _through_the_pipe(value)
    assert back == value
    assert type(back[1]) is tuple and type(back[0][7]) is set and type(back[1][1]["k"]) is tuple


def test_set_members_are_written_in_one_order_whatever_the_hash_seed() -> None:
    """Sets are sorted by their encoded text: the same set gives the same line in any process,
    so a worker (another hash seed) does not make an untouched set look written."""
    first = to_wire({"b", "a", "c", "aa"}, "v", _no_agents)
    second = to_wire({"aa", "c", "a", "b"}, "v", _no_agents)
    assert first == second == {"__recurgent_set__": ["a", "aa", "b", "c"]}


def test_the_wire_form_is_plain_json() -> None:
    """Whatever the value, its wire form is JSON without NaN or huge decimal integers."""
    wire = to_wire(KINDS, "v", _no_agents)
    assert json.loads(json.dumps(wire, allow_nan=False)) == wire


def test_values_reaching_module_state_are_reported() -> None:
    """Encoding names the values whose methods reach process-wide caches (ADR 0093)."""
    reaching: set[str] = set()
    to_wire(
        {"d": datetime.date(2020, 1, 1), "t": datetime.time(1, tzinfo=PARIS)},
        "v",
        _no_agents,
        reaching,
    )
    assert reaching == {"zoneinfo.ZoneInfo"}
    to_wire([datetime.datetime(2020, 1, 1)], "v", _no_agents, reaching)
    assert reaching == {"zoneinfo.ZoneInfo", "datetime.datetime"}


class _OtherZone(datetime.tzinfo):
    def utcoffset(self, _: object) -> datetime.timedelta:
        return datetime.timedelta(0)

    def dst(self, _: object) -> None:
        return None

    def tzname(self, _: object) -> None:
        return None


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (collections.defaultdict(lambda: 0), "default factory is a function"),
        (datetime.datetime(2024, 1, 1, tzinfo=_OtherZone()), "time zone .*_OtherZone"),
        (type("Mine", (), {})(), "holds a Mine"),
    ],
)
def test_values_the_boundary_would_refuse_do_not_cross(value: Any, problem: str) -> None:
    """A factory function, a zone of the host's own class, an object: refused by name."""
    with pytest.raises(Unencodable, match=problem):
        to_wire({"k": value}, "v", _no_agents)


@pytest.mark.parametrize(
    "wire",
    [
        {"__recurgent_martian__": 1},
        {"__recurgent_tuple__": "not a list"},
        {"__recurgent_float__": "1e999"},
        {"__recurgent_int__": "12345"},
        {"__recurgent_bytes__": "not base64!"},
        {"__recurgent_dict__": [1, 2, 3]},
        {"__recurgent_dict__": [[1], 2]},
        {"__recurgent_set__": [[1, 2]]},
        {"__recurgent_date__": 20240101},
        {"__recurgent_datetime__": ["2024-01-01T00:00:00+01:00", None, 0]},
        {"__recurgent_datetime__": ["2024-01-01T00:00:00", {"__recurgent_tuple__": []}, 0]},
        {"__recurgent_datetime__": ["2024-01-01T00:00:00", None, 2]},
        {"__recurgent_zoneinfo__": "../../etc/passwd"},
        {"__recurgent_zoneinfo__": "Nowhere/Atlantis"},
        {"__recurgent_fraction__": [1, 0]},
        {"__recurgent_fraction__": [1.5, 2]},
        {"__recurgent_complex__": ["1", 2.0]},
        {"__recurgent_range__": [0, 10, 0]},
        {"__recurgent_deque__": [-1, 1]},
        {"__recurgent_defaultdict__": ["lambda", "k", 1]},
        {"__recurgent_exception__": ["open", "/etc/passwd"]},
        {"__recurgent_exception__": ["Warning_", 1]},
        {"__recurgent_decimal__": "1" * 100_001},
        {"__recurgent_outcome__": {"status": 5}},
        {"__recurgent_agent__": {"role": "x"}},
    ],
)
def test_a_malformed_envelope_is_refused(wire: Any) -> None:
    """Each envelope has one shape; anything else raises (the parent makes it a worker crash),
    and decoding never calls anything a worker names (``open`` is not an exception class)."""
    with pytest.raises((ValueError, TypeError, KeyError)):
        from_wire({"k": [wire]}, _no_agent_for)


@pytest.mark.parametrize(
    ("items", "fast"),
    [
        ([7] * 1000, True),
        (["a", None, True, "b"] * 250, True),
        ([1.5, -0.0, 1e308] * 300, True),
        ([], True),
        ([1, 2**10_001], False),
        ([1.5, math.inf], False),
        ([1.5, math.nan], False),
        ([1, True], False),
        ([1, 1.5], False),
        ([[1], 2], False),
    ],
)
def test_a_list_of_plain_scalars_crosses_whole(items: list[Any], fast: bool) -> None:
    """A list whose items all cross as they are is copied at C speed both ways; any item that
    needs an envelope (a long int, a non-finite float) or a mix of numbers and flags takes the
    item-by-item way. Either way the value arrives equal, with its types (red team R25)."""
    assert _plain_scalars(items) is fast
    back = _through_the_pipe(items)
    assert [(type(a), a) for a in back if a == a] == [(type(b), b) for b in items if b == b]
    assert len(back) == len(items)


def test_a_lines_writer_refuses_nan_and_writes_what_json_reads() -> None:
    """``dump_line`` writes with pydantic-core, falling back to the standard library for a lone
    surrogate and for any ``NaN``/``Infinity`` in the text, which it refuses as a number and
    keeps as text (red team R25)."""
    texts = RunResult(call_id="c", status="ok", value=["NaN", "Infinity", "é", "caf\udce9"])
    assert parse_line(dump_line(texts)) == texts
    with pytest.raises(ValueError, match="Out of range float values are not JSON compliant"):
        dump_line(RunResult(call_id="c", status="ok", value=[math.nan]))
