"""Values on the worker pipe: JSON plus tagged envelopes for what the in-process boundary keeps.

The in-process sandbox lets a program return, store and receive more than JSON can carry:
tuples, sets, bytes, dicts with non-string keys, NaN, huge integers, dates and times, Decimals,
Fractions, deques, Counters, builtin exceptions (``_sandbox._boundary``, ADR 0029). Each of them
crosses the pipe as a one-key envelope ``{"__recurgent_<tag>__": payload}`` and arrives as the
same type with the same value (ADR 0094), so a program behaves the same in a worker as in
process. An ``Outcome`` and an agent reference keep their envelopes of ADR 0040.

Decoding never runs code a value names: every envelope is checked against its one expected
shape, and anything else is a ``ValueError`` (a ``worker_crash`` when the worker sent it). What
still differs from the in-process boundary: a value crosses as a tree, so two references to one
container arrive as two equal containers, and a cyclic value is refused.
"""

from __future__ import annotations

import base64
import builtins
import collections
import datetime
import decimal
import fractions
import json
import math
import zoneinfo
from collections.abc import Callable, Iterable
from typing import Any

from recurgent._journal._shared import plain_factory
from recurgent._where import Location, Where
from recurgent.outcome import Outcome

__all__ = ["AGENT_KEY", "MAX_DEPTH", "OUTCOME_KEY", "Unencodable", "from_wire", "to_wire"]

OUTCOME_KEY = "__recurgent_outcome__"
AGENT_KEY = "__recurgent_agent__"
#: Containers nested deeper than this do not cross (the in-process boundary's limit too).
MAX_DEPTH = 64
# Integers past this many bits cross as hexadecimal text: decimal text of more than 4,300
# digits is refused by CPython's conversion limit, hexadecimal is not.
_HEX_BITS = 10_000
# The largest integer a worker may send: the sandbox's own cap is a million bits.
_MAX_HEX_DIGITS = 300_000
_PREFIX, _SUFFIX = "__recurgent_", "__"
_FACTORIES: dict[str, Any] = {
    "none": None,
    "list": list,
    "dict": dict,
    "set": set,
    "int": int,
    "float": float,
    "str": str,
    "tuple": tuple,
    "bool": bool,
    "bytes": bytes,
}
_FACTORY_NAMES = {id(factory): name for name, factory in _FACTORIES.items()}


class Unencodable(Exception):
    """A value that cannot cross the pipe; the message says where and what."""


def _tag(name: str) -> str:
    return f"{_PREFIX}{name}{_SUFFIX}"


def _looks_like_envelope(key: str) -> bool:
    return key.startswith(_PREFIX) and key.endswith(_SUFFIX)


def _canonical(wire: Any) -> str:
    # Set members in a fixed order: the worker's string hashes differ from the parent's, and
    # memory is compared by its wire text to find what a run changed.
    return json.dumps(wire, sort_keys=True, separators=(",", ":"))


def to_wire(
    value: Any,
    where: str,
    agent_id: Callable[[object], tuple[int, str] | None],
    reaching: set[str] | None = None,
) -> Any:
    """Encode a value for the pipe.

    JSON values cross as they are; every other value the in-process boundary keeps crosses in
    its envelope; an ``Outcome`` and an agent (``agent_id`` returns its number and role) in
    theirs. ``reaching`` collects the qualified names of values whose methods reach module
    state (``datetime.datetime``, ``zoneinfo.ZoneInfo``; ADR 0093).

    Raises:
        Unencodable: a function, class, module, iterator or other object; a container nested
            more than :data:`MAX_DEPTH` levels (a cyclic one too); a tz-aware time whose zone
            is neither a fixed offset nor a named ``ZoneInfo``.
    """
    return _Encoder(agent_id, set() if reaching is None else reaching).walk(value, where, 0)


class _Encoder:
    __slots__ = ("_agent_id", "_reaching")

    def __init__(
        self, agent_id: Callable[[object], tuple[int, str] | None], reaching: set[str]
    ) -> None:
        self._agent_id = agent_id
        self._reaching = reaching

    def walk(self, item: Any, path: Location, depth: int) -> Any:
        kind = type(item)
        if item is None or kind is bool or kind is str:
            return item
        if kind is int:
            if item.bit_length() > _HEX_BITS:
                return {_tag("int"): hex(item)}
            return item
        if kind is float:
            if math.isfinite(item):
                return item
            return {_tag("float"): "nan" if math.isnan(item) else ("inf" if item > 0 else "-inf")}
        if depth >= MAX_DEPTH:
            raise Unencodable(f"{path} is nested more than {MAX_DEPTH} levels deep")
        if kind is list:
            return self.items(item, path, depth)
        if kind is dict:
            return self.mapping(item, path, depth)
        if kind is tuple:
            return {_tag("tuple"): self.items(item, path, depth)}
        if kind is set or kind is frozenset:
            members = [self.walk(member, Where(path, " member"), depth + 1) for member in item]
            return {_tag(kind.__name__): sorted(members, key=_canonical)}
        if kind is bytes:
            return {_tag("bytes"): base64.b64encode(item).decode("ascii")}
        if isinstance(item, Outcome):
            fields = item.model_dump(mode="python")
            fields["value"] = self.walk(item.value, Where(path, ".value"), depth + 1)
            fields["metadata"] = self.walk(item.metadata, Where(path, ".metadata"), depth + 1)
            return {OUTCOME_KEY: fields}
        reference = self._agent_id(item)
        if reference is not None:
            return {AGENT_KEY: {"id": reference[0], "role": reference[1]}}
        encoded = self.kept(item, path, depth)
        if encoded is not None:
            return encoded
        raise Unencodable(f"{path} holds a {kind.__name__}, which is not plain data")

    def items(self, items: Iterable[Any], path: Location, depth: int) -> list[Any]:
        if type(items) is list and _plain_scalars(items):
            return list(items)  # crosses as it is: no item needs an envelope
        return [self.walk(child, Where(path, i), depth + 1) for i, child in enumerate(items)]

    def pairs(self, mapping: Any, path: Location, depth: int) -> list[Any]:
        flat: list[Any] = []
        for key, child in dict.items(mapping):
            flat.append(self.walk(key, Where(path, " key"), depth + 1))
            flat.append(self.walk(child, Where(path, (key,)), depth + 1))
        return flat

    def mapping(self, item: dict[Any, Any], path: Location, depth: int) -> Any:
        keys = list(item)
        if all(type(key) is str for key in keys) and not (
            len(keys) == 1 and _looks_like_envelope(keys[0])
        ):
            return {
                key: self.walk(child, Where(path, (key,)), depth + 1) for key, child in item.items()
            }
        # Non-string keys, or a user's dict shaped like an envelope: key-value pairs.
        return {_tag("dict"): self.pairs(item, path, depth)}

    def kept(self, item: Any, path: Location, depth: int) -> Any:
        """The envelope of a value the in-process boundary keeps, or ``None``."""
        kind = type(item)
        if isinstance(item, datetime.datetime):
            self._reaching.add("datetime.datetime")
            naive = datetime.datetime.replace(item, tzinfo=None)
            zone = self.zone(item.tzinfo, path)
            return {_tag("datetime"): [naive.isoformat(), zone, item.fold]}
        if isinstance(item, datetime.date):
            return {_tag("date"): datetime.date.isoformat(item)}
        if isinstance(item, datetime.time):
            naive_time = datetime.time.replace(item, tzinfo=None)
            return {_tag("time"): [naive_time.isoformat(), self.zone(item.tzinfo, path), item.fold]}
        if kind is datetime.timedelta:
            return {_tag("timedelta"): [item.days, item.seconds, item.microseconds]}
        if kind is datetime.timezone or kind is zoneinfo.ZoneInfo:
            return self.zone(item, path)
        if isinstance(item, decimal.Decimal):
            return {_tag("decimal"): decimal.Decimal.__str__(item)}
        if isinstance(item, fractions.Fraction):
            return {
                _tag("fraction"): [
                    self.walk(item.numerator, path, depth + 1),
                    self.walk(item.denominator, path, depth + 1),
                ]
            }
        if kind is complex:
            return {
                _tag("complex"): [
                    self.walk(item.real, path, depth + 1),
                    self.walk(item.imag, path, depth + 1),
                ]
            }
        if kind is range:
            bounds = (item.start, item.stop, item.step)
            return {_tag("range"): [self.walk(bound, path, depth + 1) for bound in bounds]}
        if kind is collections.deque:
            return {_tag("deque"): [item.maxlen, *self.items(list(item), path, depth)]}
        if kind is collections.Counter or kind is collections.OrderedDict:
            return {_tag(kind.__name__.lower()): self.pairs(item, path, depth)}
        if kind is collections.defaultdict:
            name = _FACTORY_NAMES.get(id(plain_factory(item.default_factory)))
            if name is None:
                raise Unencodable(f"{path} holds a defaultdict whose default factory is a function")
            return {_tag("defaultdict"): [name, *self.pairs(item, path, depth)]}
        if isinstance(item, BaseException) and kind.__module__ == "builtins":
            raw_args = BaseException.__dict__["args"].__get__(item, kind)
            return {_tag("exception"): [kind.__name__, *self.items(raw_args, path, depth)]}
        return None

    def zone(self, tzinfo: Any, path: Location) -> Any:
        if tzinfo is None:
            return None
        if type(tzinfo) is datetime.timezone:
            offset = tzinfo.utcoffset(None)
            named = tzinfo.tzname(None)
            name = None if named == datetime.timezone(offset).tzname(None) else named
            return {_tag("timezone"): [offset.days, offset.seconds, offset.microseconds, name]}
        if type(tzinfo) is zoneinfo.ZoneInfo and type(tzinfo.key) is str:
            self._reaching.add("zoneinfo.ZoneInfo")
            return {_tag("zoneinfo"): tzinfo.key}
        raise Unencodable(f"{path} holds a time zone ({type(tzinfo).__name__}) that cannot cross")


_TEXTS = frozenset({str, bool, type(None)})


def _plain_scalars(items: list[Any]) -> bool:
    """Whether every item crosses the pipe as it is, told at C speed: strings, flags, ``None``,
    ints short enough to need no envelope, finite floats (a list of them is most of a large
    memory, and walking it item by item spent seconds of a worker's run; red team R25)."""
    kinds = set(map(type, items))
    if kinds <= _TEXTS:
        return True
    if kinds == {int}:
        largest: int = max(items)
        smallest: int = min(items)
        return largest.bit_length() <= _HEX_BITS and smallest.bit_length() <= _HEX_BITS
    if kinds == {float}:
        return all(map(math.isfinite, items))
    return False


def from_wire(value: Any, agent_for: Callable[[int, str], object]) -> Any:
    """Decode a value read from the pipe (envelopes back to their values, agents mapped).

    Raises:
        ValueError: a malformed envelope (what an honest peer never sends).
        TypeError, KeyError: a malformed Outcome or agent envelope (``agent_for``'s own).
    """
    kind = type(value)
    if kind is list:
        if _plain_scalars(value):
            return list(value)
        return [from_wire(child, agent_for) for child in value]
    if kind is not dict:
        return value
    if len(value) == 1:
        key = next(iter(value))
        if _looks_like_envelope(key):
            return _decode_envelope(key, value[key], agent_for)
    return {key: from_wire(child, agent_for) for key, child in value.items()}


def _decode_envelope(key: str, payload: Any, agent_for: Callable[[int, str], object]) -> Any:
    if key == AGENT_KEY:
        _expect(type(payload) is dict, key)
        return agent_for(int(payload["id"]), str(payload["role"]))
    if key == OUTCOME_KEY:
        _expect(type(payload) is dict, key)
        fields = dict(payload)
        fields["value"] = from_wire(fields.get("value"), agent_for)
        fields["metadata"] = from_wire(fields.get("metadata") or {}, agent_for)
        return Outcome.model_validate(fields)
    decoder = _DECODERS.get(key[len(_PREFIX) : -len(_SUFFIX)])
    if decoder is None:
        raise ValueError(f"unknown envelope {key[:40]!r}")
    try:
        return decoder(payload, agent_for)
    except (ArithmeticError, LookupError, TypeError, ValueError) as error:
        # Fraction(1, 0), Decimal('x'), an out-of-range date, an unknown zone: malformed data,
        # one class of error for the receiver to handle.
        raise ValueError(f"malformed {key[:40]} envelope ({type(error).__name__})") from None


def _expect(condition: bool, what: str) -> None:
    if not condition:
        raise ValueError(f"malformed {what[:40]} envelope")


def _items(payload: Any, agent_for: Callable[[int, str], object], what: str) -> list[Any]:
    _expect(type(payload) is list, what)
    return [from_wire(child, agent_for) for child in payload]


def _pairs(payload: Any, agent_for: Callable[[int, str], object], what: str) -> list[Any]:
    flat = _items(payload, agent_for, what)
    _expect(len(flat) % 2 == 0, what)
    return list(zip(flat[0::2], flat[1::2], strict=True))


def _text(payload: Any, what: str) -> str:
    _expect(type(payload) is str, what)
    return str(payload)


def _int(payload: Any, what: str) -> int:
    _expect(type(payload) is int, what)
    return int(payload)


def _decode_zone(payload: Any, agent_for: Callable[[int, str], object]) -> Any:
    if payload is None:
        return None
    zone = from_wire(payload, agent_for)
    _expect(isinstance(zone, datetime.tzinfo), "tzinfo")
    return zone


def _float(payload: Any, _: Any) -> float:
    _expect(payload in ("nan", "inf", "-inf"), "float")
    return float(payload)


def _huge_int(payload: Any, _: Any) -> int:
    text = _text(payload, "int")
    _expect(text.lstrip("-").startswith("0x") and len(text) <= _MAX_HEX_DIGITS, "int")
    return int(text, 16)


def _timestamp(payload: Any, agent_for: Callable[[int, str], object], cls: Any) -> Any:
    _expect(type(payload) is list and len(payload) == 3, cls.__name__)
    iso, zone, fold = payload
    _expect(fold in (0, 1) and type(fold) is int, cls.__name__)
    naive = cls.fromisoformat(_text(iso, cls.__name__))
    _expect(naive.tzinfo is None, cls.__name__)
    return naive.replace(tzinfo=_decode_zone(zone, agent_for), fold=fold)


def _timezone(payload: Any, _: Any) -> datetime.timezone:
    _expect(type(payload) is list and len(payload) == 4, "timezone")
    days, seconds, micro, name = payload
    offset = datetime.timedelta(
        days=_int(days, "timezone"),
        seconds=_int(seconds, "timezone"),
        microseconds=_int(micro, "timezone"),
    )
    if name is None:
        return datetime.timezone(offset)
    return datetime.timezone(offset, _text(name, "timezone"))


def _timedelta(payload: Any, _: Any) -> datetime.timedelta:
    _expect(type(payload) is list and len(payload) == 3, "timedelta")
    days, seconds, micro = (_int(part, "timedelta") for part in payload)
    return datetime.timedelta(days=days, seconds=seconds, microseconds=micro)


def _decimal(payload: Any, _: Any) -> decimal.Decimal:
    text = _text(payload, "decimal")
    # Decimal's own text form, never an arithmetic: no context trap or precision applies.
    _expect(len(text) <= 100_000, "decimal")
    return decimal.Decimal(text)


def _fraction(payload: Any, agent_for: Callable[[int, str], object]) -> fractions.Fraction:
    parts = _items(payload, agent_for, "fraction")
    _expect(len(parts) == 2 and all(type(part) is int for part in parts), "fraction")
    return fractions.Fraction(parts[0], parts[1])


def _complex(payload: Any, agent_for: Callable[[int, str], object]) -> complex:
    parts = _items(payload, agent_for, "complex")
    _expect(len(parts) == 2 and all(type(part) is float for part in parts), "complex")
    return complex(parts[0], parts[1])


def _range(payload: Any, agent_for: Callable[[int, str], object]) -> range:
    parts = _items(payload, agent_for, "range")
    _expect(len(parts) == 3 and all(type(part) is int for part in parts), "range")
    return range(parts[0], parts[1], parts[2])


def _deque(payload: Any, agent_for: Callable[[int, str], object]) -> collections.deque[Any]:
    _expect(type(payload) is list and len(payload) >= 1, "deque")
    maxlen = payload[0]
    _expect(maxlen is None or (type(maxlen) is int and maxlen >= 0), "deque")
    return collections.deque(_items(payload[1:], agent_for, "deque"), maxlen=maxlen)


def _defaultdict(
    payload: Any, agent_for: Callable[[int, str], object]
) -> collections.defaultdict[Any, Any]:
    _expect(type(payload) is list and len(payload) >= 1 and payload[0] in _FACTORIES, "defaultdict")
    built: collections.defaultdict[Any, Any] = collections.defaultdict(_FACTORIES[payload[0]])
    built.update(_pairs(payload[1:], agent_for, "defaultdict"))
    return built


def _exception(payload: Any, agent_for: Callable[[int, str], object]) -> BaseException:
    _expect(type(payload) is list and len(payload) >= 1 and type(payload[0]) is str, "exception")
    found = getattr(builtins, payload[0], None)
    if not (isinstance(found, type) and issubclass(found, BaseException)):
        raise ValueError("malformed exception envelope")
    cls: type[BaseException] = found
    args = _items(payload[1:], agent_for, "exception")
    try:
        return cls(*args)
    except Exception:  # noqa: BLE001 - a builtin that wants other arguments, as in process
        return cls()


_DECODERS: dict[str, Callable[[Any, Callable[[int, str], object]], Any]] = {
    "int": _huge_int,
    "float": _float,
    "tuple": lambda payload, agent_for: tuple(_items(payload, agent_for, "tuple")),
    "set": lambda payload, agent_for: set(_items(payload, agent_for, "set")),
    "frozenset": lambda payload, agent_for: frozenset(_items(payload, agent_for, "frozenset")),
    "bytes": lambda payload, _: base64.b64decode(_text(payload, "bytes"), validate=True),
    "dict": lambda payload, agent_for: dict(_pairs(payload, agent_for, "dict")),
    "counter": lambda payload, agent_for: collections.Counter(
        dict(_pairs(payload, agent_for, "counter"))
    ),
    "ordereddict": lambda payload, agent_for: collections.OrderedDict(
        _pairs(payload, agent_for, "ordereddict")
    ),
    "defaultdict": _defaultdict,
    "deque": _deque,
    "date": lambda payload, _: datetime.date.fromisoformat(_text(payload, "date")),
    "datetime": lambda payload, agent_for: _timestamp(payload, agent_for, datetime.datetime),
    "time": lambda payload, agent_for: _timestamp(payload, agent_for, datetime.time),
    "timedelta": _timedelta,
    "timezone": _timezone,
    "zoneinfo": lambda payload, _: zoneinfo.ZoneInfo(_text(payload, "zoneinfo")),
    "decimal": _decimal,
    "fraction": _fraction,
    "complex": _complex,
    "range": _range,
    "exception": _exception,
}
