"""``re`` as generated code imports it: the ``regex`` engine, bounded by the attempt's deadline.

The standard ``re`` engine cannot be interrupted: ``re.match(r"(a|aa)+$", "a" * 60 + "b")``
backtracks for hours inside one C call, and no tick runs meanwhile. The ``regex`` package
matches with the same syntax and API and accepts a ``timeout``; every match here passes the
time left to the running attempt, and a timeout becomes the attempt's deadline error (ADR 0023).

``regex`` measures its timeout in process CPU time, which runs slower than the wall clock on a
loaded machine; matches whose replacement does not call generated code therefore run in
doubling CPU slices, checking the wall-clock deadline between slices.

Three checks come before matching: the pattern's length is capped (compiling is one
uninterruptible call); ``regex`` compiles exact repeats by unrolling them
(``a{1000000}`` takes seconds and ``(?:a{100000}){100000}`` exhausts memory) and its first
match through a long sequence costs far more than the timeout allows, so the longest unrolled
sequence of a pattern is capped; and flags outside the ``re`` set are refused (``DEBUG`` prints to
the host's stdout).
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Iterator
from typing import Any

import regex

from recurgent._sandbox._checked_methods import (
    STANDARD_PATTERN_MATCHING,
    checked_expand,
    checked_sub,
)
from recurgent._sandbox._limits import DeadlineExceeded, SizeLimitExceeded, enclosing_remaining

__all__ = [
    "MAX_PATTERN_LENGTH",
    "MAX_UNROLLED",
    "Match",
    "Pattern",
    "module_names",
    "on_the_sandbox_engine",
]

#: Longest pattern text: compiling is one uninterruptible call, about linear in the length
#: (10 000 characters take 0.1 s; 200 000 take several seconds).
MAX_PATTERN_LENGTH = 10_000
#: Longest sequence of pattern nodes, exact repeats unrolled (``(?:ab{9}){50}`` is 500). The
#: engine's first match through a sequence of n nodes costs about n**2.5 and ignores the
#: timeout: 500 nodes take 0.1 s, 1000 take 1 s, 2000 take 10 s.
MAX_UNROLLED = 500
#: Flags generated code may pass: the ``re`` flags that only change how text matches.
_ALLOWED_FLAGS = int(re.I | re.L | re.M | re.S | re.X | re.A | re.U)
# Matches that run no generated code start with this CPU slice and double it.
_FIRST_SLICE = 0.05
# A leaked pattern called by host code after its attempt still ends.
_OUTSIDE_ATTEMPT_TIMEOUT = 10.0
_REPEATS = frozenset(
    getattr(re._constants, name)  # type: ignore[attr-defined]
    for name in ("MAX_REPEAT", "MIN_REPEAT", "POSSESSIVE_REPEAT")
    if hasattr(re._constants, name)  # type: ignore[attr-defined]
)
_BRANCH = re._constants.BRANCH  # type: ignore[attr-defined]
_TEXT_REPEAT = re.compile(r"\{\s*(\d+)")
_TEXT_REPEAT_BYTES = re.compile(rb"\{\s*(\d+)")


def _weight(items: Any) -> int:
    """The longest sequence of nodes through a parsed (sub)pattern, exact repeats unrolled."""
    total = 0
    for op, av in items:
        if op in _REPEATS:
            low, _high, sub = av
            total += max(int(low), 1) * _weight(sub)
        elif op == _BRANCH:
            total += max((_weight(branch) for branch in av[1]), default=0)
        else:
            total += 1 + max((_weight(part) for part in _subpatterns(av)), default=0)
        if total > MAX_UNROLLED:
            return total
    return total


def _subpatterns(av: Any) -> Iterator[Any]:
    if isinstance(av, re._parser.SubPattern):  # type: ignore[attr-defined]
        yield av
    elif isinstance(av, tuple | list):
        for part in av:
            yield from _subpatterns(part)


def _textual_weight(pattern: str | bytes) -> int:
    """A conservative bound for patterns only ``regex`` parses: length times all counts."""
    finder = _TEXT_REPEAT if isinstance(pattern, str) else _TEXT_REPEAT_BYTES
    total = len(pattern)
    for digits in finder.findall(pattern):  # type: ignore[arg-type]
        if len(digits) > 9:
            return MAX_UNROLLED + 1
        total *= max(int(digits), 1)
        if total > MAX_UNROLLED:
            break
    return total


@functools.lru_cache(maxsize=512)
def _compile(pattern: str | bytes, flags: int) -> Any:
    if len(pattern) > MAX_PATTERN_LENGTH:
        raise SizeLimitExceeded(
            f"a regular expression of {len(pattern)} characters exceeds the sandbox limit of "
            f"{MAX_PATTERN_LENGTH}; match keywords with a set or split the pattern"
        )
    if flags & ~_ALLOWED_FLAGS:
        raise ValueError(
            f"regular expression flags {flags & ~_ALLOWED_FLAGS:#x} are not available in the "
            "sandbox; use re.I, re.M, re.S, re.X, re.A or re.U"
        )
    try:
        weight = _weight(re._parser.parse(pattern, flags))  # type: ignore[attr-defined]
    except (re.error, RecursionError, OverflowError, ValueError, TypeError):
        weight = _textual_weight(pattern)
    if weight > MAX_UNROLLED:
        raise SizeLimitExceeded(
            f"the regular expression has a sequence of more than {MAX_UNROLLED} items (exact "
            "repeats like x{n} count n times); the sandbox limit is "
            f"{MAX_UNROLLED}; match in parts, use str methods, or a range like x{{1,n}}"
        )
    return regex.compile(pattern, flags)


def _compiled(pattern: Any, flags: Any = 0) -> Any:
    if isinstance(pattern, Pattern):
        if flags:
            raise ValueError("cannot process flags argument with a compiled pattern")
        return pattern._compiled
    if not isinstance(pattern, str | bytes):
        raise TypeError(f"first argument must be string or compiled pattern, not {type(pattern)}")
    # A str or bytes subclass could answer the checks and the engine differently.
    plain = str.__str__(pattern) if isinstance(pattern, str) else bytes(pattern)
    return _compile(plain, int.__index__(flags))


def _timed_out() -> DeadlineExceeded:
    return DeadlineExceeded("the attempt's deadline passed during a regular expression match")


def _bounded(run: Callable[[float | None], Any], *, repeatable: bool) -> Any:
    """``run(timeout)`` within the running attempt's deadline; a timeout is that deadline."""
    try:
        return _sliced(run, repeatable=repeatable)
    except DeadlineExceeded as stop:
        if str(stop):
            raise
        # The attempt's stop, delivered between two slices (ADR 0089): named as a match's.
        raise _timed_out() from None


def _sliced(run: Callable[[float | None], Any], *, repeatable: bool) -> Any:
    remaining = enclosing_remaining()
    if remaining is None:
        try:
            return run(_OUTSIDE_ATTEMPT_TIMEOUT)
        except TimeoutError:
            raise _timed_out() from None
    if not repeatable:
        try:
            return run(max(remaining, 0.001))
        except TimeoutError:
            raise _timed_out() from None
    budget = _FIRST_SLICE
    while remaining is not None and remaining > 0:
        try:
            return run(min(budget, remaining))
        except TimeoutError:
            budget *= 2
            remaining = enclosing_remaining()
    raise _timed_out()


class Match:
    """A match as generated code sees it: ``re.Match``'s reading API over a ``regex`` match."""

    __slots__ = ("_match", "_pattern")
    _sandbox_public_ = frozenset(
        {
            "group",
            "groups",
            "groupdict",
            "span",
            "start",
            "end",
            "expand",
            "string",
            "re",
            "pos",
            "endpos",
            "lastindex",
            "lastgroup",
            "regs",
        }
    )

    def __init__(self, match: Any, pattern: Pattern) -> None:
        if not isinstance(pattern, Pattern):
            raise TypeError("Match objects cannot be created by generated code")
        self._match = match
        self._pattern = pattern

    def group(self, *groups: Any) -> Any:
        """``Match.group``."""
        return self._match.group(*groups)

    def __getitem__(self, group: Any) -> Any:
        return self._match[group]

    def groups(self, default: Any = None) -> tuple[Any, ...]:
        """``Match.groups``."""
        return tuple(self._match.groups(default))

    def groupdict(self, default: Any = None) -> dict[str, Any]:
        """``Match.groupdict``."""
        return dict(self._match.groupdict(default))

    def span(self, group: Any = 0) -> tuple[int, int]:
        """``Match.span``."""
        return tuple(self._match.span(group))

    def start(self, group: Any = 0) -> int:
        """``Match.start``."""
        return int(self._match.start(group))

    def end(self, group: Any = 0) -> int:
        """``Match.end``."""
        return int(self._match.end(group))

    def expand(self, template: Any) -> Any:
        """``Match.expand`` with the expansion's size checked first."""
        return checked_expand(self._match, template)

    @property
    def string(self) -> Any:
        """The string matched against."""
        return self._match.string

    @property
    def re(self) -> Pattern:
        """The pattern that produced this match."""
        return self._pattern

    @property
    def pos(self) -> int:
        """``Match.pos``."""
        return int(self._match.pos)

    @property
    def endpos(self) -> int:
        """``Match.endpos``."""
        return int(self._match.endpos)

    @property
    def lastindex(self) -> int | None:
        """``Match.lastindex``."""
        return self._match.lastindex  # type: ignore[no-any-return]

    @property
    def lastgroup(self) -> str | None:
        """``Match.lastgroup``: the name of the ``lastindex`` group, as ``re`` reports it."""
        last = self._match.lastindex
        for name, index in self._pattern._compiled.groupindex.items():
            if index == last:
                return name  # type: ignore[no-any-return]
        return None

    @property
    def regs(self) -> tuple[tuple[int, int], ...]:
        """``Match.regs``."""
        return tuple(tuple(span) for span in self._match.regs)

    def __bool__(self) -> bool:
        return True

    def __repr__(self) -> str:
        # As CPython's match_repr: the match's repr cut to fifty characters (%.50R), so a
        # match of a million characters is not written whole (red team R32: repr([m] * 100)
        # wrote 100 004 800 characters, a match estimated as a small object).
        return f"<re.Match object; span={self.span()!r}, match={_shown(self._match.group(0))}>"


def _shown(matched: Any) -> str:
    """``repr(matched)[:50]``, written from its first fifty characters (a repr of the whole
    could be ten times its length), quoted as the whole's repr is."""
    head = matched[:50]
    single, double = ("'", '"') if isinstance(matched, str) else (b"'", b'"')
    quoted_double = single in matched and double not in matched
    if quoted_double != (single in head and double not in head):
        head += single if quoted_double else double  # past the fifty characters shown
    return repr(head)[:50]


def _wrap(match: Any, pattern: Pattern) -> Match | None:
    return None if match is None else Match(match, pattern)


def _bounds(pos: Any, endpos: Any) -> tuple[int, int | None]:
    return int.__index__(pos), None if endpos is None else int.__index__(endpos)


class Pattern:
    """A compiled pattern as generated code sees it: every method runs under the deadline."""

    __slots__ = ("_compiled",)
    # The engine's methods (the same names a host's standard pattern is served by on this
    # engine, ADR 0090) and the pattern's plain attributes.
    _sandbox_public_ = frozenset(
        {*STANDARD_PATTERN_MATCHING, "pattern", "flags", "groups", "groupindex"}
    )

    def __init__(self, compiled: Any) -> None:
        if not isinstance(compiled, regex.Pattern):
            raise TypeError("use re.compile(pattern) to make a pattern")
        self._compiled = compiled

    def _matching(self, method: str, string: Any, pos: Any, endpos: Any) -> Match | None:
        start, end = _bounds(pos, endpos)
        bound = getattr(self._compiled, method)
        found = _bounded(
            lambda timeout: bound(string, start, end, timeout=timeout), repeatable=True
        )
        return _wrap(found, self)

    def match(self, string: Any, pos: Any = 0, endpos: Any = None) -> Match | None:
        """``Pattern.match``."""
        return self._matching("match", string, pos, endpos)

    def search(self, string: Any, pos: Any = 0, endpos: Any = None) -> Match | None:
        """``Pattern.search``."""
        return self._matching("search", string, pos, endpos)

    def fullmatch(self, string: Any, pos: Any = 0, endpos: Any = None) -> Match | None:
        """``Pattern.fullmatch``."""
        return self._matching("fullmatch", string, pos, endpos)

    def findall(self, string: Any, pos: Any = 0, endpos: Any = None) -> list[Any]:
        """``Pattern.findall``."""
        start, end = _bounds(pos, endpos)
        compiled = self._compiled
        return _bounded(  # type: ignore[no-any-return]
            lambda timeout: compiled.findall(string, start, end, timeout=timeout),
            repeatable=True,
        )

    def finditer(self, string: Any, pos: Any = 0, endpos: Any = None) -> Iterator[Match]:
        """``Pattern.finditer``: each step runs under the attempt's deadline."""
        start, end = _bounds(pos, endpos)
        compiled = self._compiled
        found = _bounded(
            lambda timeout: compiled.finditer(string, start, end, timeout=timeout),
            repeatable=False,
        )
        return self._iterate(found)

    def _iterate(self, found: Any) -> Iterator[Match]:
        while True:
            item = _bounded(lambda _timeout: next(found, None), repeatable=False)
            if item is None:
                return
            yield Match(item, self)

    def split(self, string: Any, maxsplit: Any = 0) -> list[Any]:
        """``Pattern.split``."""
        compiled = self._compiled
        count = int.__index__(maxsplit)
        return _bounded(  # type: ignore[no-any-return]
            lambda timeout: compiled.split(string, count, timeout=timeout), repeatable=True
        )

    def _substitute(self, repl: Any, string: Any, count: Any, with_count: bool) -> Any:
        times = int.__index__(count)
        if callable(repl):
            user = repl

            def replacement(match: Any) -> Any:
                return user(Match(match, self))

            return _bounded(
                lambda timeout: checked_sub(
                    self._compiled,
                    replacement,
                    string,
                    times,
                    with_count=with_count,
                    timeout=timeout,
                ),
                repeatable=False,
            )
        return _bounded(
            lambda timeout: checked_sub(
                self._compiled, repl, string, times, with_count=with_count, timeout=timeout
            ),
            repeatable=True,
        )

    def sub(self, repl: Any, string: Any, count: Any = 0) -> Any:
        """``Pattern.sub`` with the result's size capped."""
        return self._substitute(repl, string, count, with_count=False)

    def subn(self, repl: Any, string: Any, count: Any = 0) -> Any:
        """``Pattern.subn`` with the result's size capped."""
        return self._substitute(repl, string, count, with_count=True)

    @property
    def pattern(self) -> Any:
        """The pattern text."""
        return self._compiled.pattern

    @property
    def flags(self) -> int:
        """The pattern's flags."""
        return int(self._compiled.flags)

    @property
    def groups(self) -> int:
        """Number of capturing groups."""
        return int(self._compiled.groups)

    @property
    def groupindex(self) -> dict[str, int]:
        """Group names to numbers (a copy)."""
        return dict(self._compiled.groupindex)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Pattern) and other._compiled == self._compiled

    def __hash__(self) -> int:
        return hash(self._compiled)

    def __copy__(self) -> Pattern:
        return self

    def __deepcopy__(self, memo: Any) -> Pattern:
        return self

    def __repr__(self) -> str:
        return f"re.compile({self._compiled.pattern!r})"


for _served in (Pattern, Match):
    _served.__qualname__ = _served.__name__


def on_the_sandbox_engine(pattern: re.Pattern[Any]) -> Pattern:
    """A standard-engine pattern (from the host's memory) compiled on the sandbox's engine."""
    return Pattern(_compiled(pattern.pattern, pattern.flags))


def _compile_public(pattern: Any, flags: Any = 0) -> Pattern:
    if isinstance(pattern, Pattern) and not flags:
        return pattern
    return Pattern(_compiled(pattern, flags))


def _module_function(method: str) -> Callable[..., Any]:
    def function(pattern: Any, string: Any, flags: Any = 0) -> Any:
        return getattr(_compile_public(pattern, flags), method)(string)

    function.__name__ = function.__qualname__ = method
    return function


def _module_split(pattern: Any, string: Any, maxsplit: Any = 0, flags: Any = 0) -> list[Any]:
    return _compile_public(pattern, flags).split(string, maxsplit)


def _module_sub(pattern: Any, repl: Any, string: Any, count: Any = 0, flags: Any = 0) -> Any:
    return _compile_public(pattern, flags).sub(repl, string, count)


def _module_subn(pattern: Any, repl: Any, string: Any, count: Any = 0, flags: Any = 0) -> Any:
    return _compile_public(pattern, flags).subn(repl, string, count)


def _unavailable(name: str) -> Callable[..., Any]:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AttributeError(f"re.{name} is not available in the sandbox")

    refuse.__name__ = name
    return refuse


def _purge() -> None:
    _compile.cache_clear()


_compile_public.__name__ = "compile"
_module_split.__name__ = "split"
_module_sub.__name__ = "sub"
_module_subn.__name__ = "subn"
_purge.__name__ = "purge"


def module_names() -> dict[str, Any]:
    """The names ``import re`` serves that are not the standard module's own.

    Flags and ``escape`` are the standard module's; every function that
    matches is replaced, and ``Scanner`` and ``template`` (which compile with the standard
    engine) are refused.
    """
    return {
        "compile": _compile_public,
        "match": _module_function("match"),
        "search": _module_function("search"),
        "fullmatch": _module_function("fullmatch"),
        "findall": _module_function("findall"),
        "finditer": _module_function("finditer"),
        "split": _module_split,
        "sub": _module_sub,
        "subn": _module_subn,
        "purge": _purge,
        "error": regex.error,
        "Pattern": Pattern,
        "Match": Match,
        "Scanner": _unavailable("Scanner"),
        "template": _unavailable("template"),
    }
