"""Red team R17: the value bounds changed since 1bc7514d (``outgrows``, ``KEPT_TYPES``), from a
hostile program.

Tried, and what happened (BROKEN = failed before the fix of this round; the figures are one run
on the shared 2-core machine):

1. BROKEN, fixed: "fixed-size" kinds that are not. ``rebuild`` keeps ``datetime.timezone``,
   ``datetime.datetime``, ``datetime.time`` and ``range`` as they are, and ``outgrows`` counted
   each as one character, but a timezone's name is any text (``timezone(timedelta(0), 'x' *
   1_000_000)``, whose ``repr`` is a million characters; a datetime or time writes its
   timezone's, and ``zoneinfo.ZoneInfo.from_file`` takes any ``key``) and a range's ints may have 4 300 digits each (``range(n, n + 1)`` of ``n = 10
   ** 4000`` is 8 011 characters; the sandbox bounds a range's length, not its ints).
   ``delegate('helper', junk=[tz] * 100)`` answered ``ok`` after 1.15 s and 335 MB (the kept
   child's key wrote 100 million characters); ``raise ValueError([tz] * 100)`` took 27 s and
   430 MB (``exception_text`` judged the arguments short and wrote them in full, then the
   lifecycle's correction patterns searched the 100-million-character text). ``outgrows``
   counts a timezone's name, a datetime's or time's timezone, and a range's digits: 0.01 s
   and 0.32 s.
2. BROKEN, fixed: ``safe_repr``'s bounded repr (``_BoundedRepr``) bounded each string and each
   container's length but not the total: a result ``{((('x' * 60_000,) * 100,) * 100,) * 30:
   [len]}`` is refused, and the refusal's path writes the key with ``safe_repr(key, limit=200)``:
   300 000 strings of 1 224 characters, 6.31 s and 1.1 GB after the deadline (linear in the
   outer count; the program holds 60 KB). The bounded repr writes ``...`` for every part
   reached once its limit is written: 0.29 s end to end.
3. BROKEN, fixed: ``safe_repr``'s shortcut (``_fits``) counted any kind it does not walk as four
   characters, so ``[{'x' * 60_000}] * 1000`` (a set) was written by the plain ``repr``, 60
   million characters for a 200-character limit. A kind whose text is not known short makes
   ``_fits`` false: the bounded repr writes it.

4. BROKEN, fixed: the tool registry's keys. A program writes ``context['tools']``, whose keys
   may be tuples: ``{((('x' * 6_000,) * 100,) * 100,) * 3: 1}``. The registry's integrity check
   (``_registry._executable_paths``, before and after every call) wrote every key's ``repr``
   into a path on the way down, 180 million characters per check (the writing call: 0.96 s and
   391 MB), and walked a shared list once per reference (``{'a': [[[0] * 100] * 100] * 100}``:
   0.42 s per check, a hundred times that a level deeper). ``tool('nope')`` then listed the
   known tools with ``str`` of each key, 180 million characters in the host's section: 6.78 s
   and 734 MB (linear in the outer count). The check visits each container once and writes a
   bounded key only for a path it reports (at most 20); the unknown-tool message lists at most
   50 names of at most 80 characters each: 0.03 s and 0.02 s.

Held (pinned below where cheap): a program cannot derive a class from ``datetime.tzinfo``
(so no datetime carries a timezone whose ``utcoffset`` or ``__repr__`` is program code); the
content store's ``json.dumps`` refuses a timezone at once and keeps the bounded fallback; the
R15 bounds on bytes, sets, Decimals and agents.
"""

from __future__ import annotations

import datetime

from recurgent import Agent
from recurgent._repr import _BoundedRepr, _fits, safe_repr
from recurgent._values import outgrows
from recurgent.testing import ScriptedProvider

_TZ = "import datetime\ntz = datetime.timezone(datetime.timedelta(0), 'x' * 1_000_000)\n"
_NAMED = datetime.timezone(datetime.timedelta(0), "x" * 1_000_000)
_HUGE = 10**4000


def _agent(**programs: str) -> Agent:
    provider = ScriptedProvider(
        {("tester", name): code for name, code in programs.items()}
        | {("helper", "work"): "result = 2"}
    )
    return Agent("tester", provider=provider, guardrail_recovery_budget=0, log=False)


class TestOutgrowsCountsTheTextOfKindsWithoutAFixedSize:
    def test_a_timezone_counts_its_name(self) -> None:
        """Eleven references to a timezone named by a million characters are 11 million
        characters of ``repr`` (before: 22 counted); five are under ten million."""
        assert outgrows([_NAMED] * 11, 10_000_000) is True
        assert outgrows([_NAMED] * 5, 10_000_000) is False

    def test_a_datetime_and_a_time_count_their_timezone(self) -> None:
        """A datetime or a time with that timezone writes its name in its ``repr``."""
        moment = datetime.datetime(2026, 12, 3, tzinfo=_NAMED)
        clock = datetime.time(1, tzinfo=_NAMED)
        assert len(repr(moment)) > 1_000_000
        assert outgrows([moment] * 11, 10_000_000) is True
        assert outgrows([clock] * 11, 10_000_000) is True

    def test_a_range_counts_the_digits_of_its_ints(self) -> None:
        """``range(n, n + 1)`` of a 4 001-digit ``n`` is 8 011 characters; its count is a lower
        bound (9 plus at least 1 200 digits for each int, 0.3 per bit): 2 000 references
        outgrow ten million (before: 4 001 counted), 1 000 do not."""
        wide = range(_HUGE, _HUGE + 1)
        assert len(repr(wide)) == 8011
        assert outgrows([wide] * 2_000, 10_000_000) is True
        assert outgrows([wide] * 1_000, 10_000_000) is False

    def test_the_counts_stay_lower_bounds_of_short_values(self) -> None:
        """``range(0, 3)`` is 11 characters and counts 11; ``range(0, 9, 2)`` is 14 and counts
        14; a plain datetime and UTC still count little."""
        assert outgrows(range(3), 11) is False
        assert outgrows(range(3), 10) is True
        assert outgrows(range(0, 9, 2), 14) is False
        assert outgrows(range(0, 9, 2), 13) is True
        plain = [datetime.datetime(2026, 12, 3), datetime.time(1), datetime.UTC]
        assert outgrows(plain, 20) is False


class TestAProgramCannotSmuggleLongTextInATimezoneOrARange:
    def test_delegate_options_holding_a_named_timezone_are_refused(self) -> None:
        """``delegate('helper', junk=[tz] * 100)`` answered ``ok`` 1.15 s and 335 MB later (the
        child's key wrote 100 million characters): refused inside the program's call."""
        outcome = _agent(run=_TZ + "h = delegate('helper', junk=[tz] * 100)\nresult = 1").run()

        assert (outcome.status, outcome.error_type) == ("error", "execution")
        assert outcome.error_message == (
            "Execution error in tester.run: UsageError: delegate options: more than 10000000 "
            "characters"
        )

    def test_delegate_options_holding_a_datetime_in_that_timezone_are_refused(self) -> None:
        """The same through ``datetime(2020, 1, 1, tzinfo=tz)``."""
        code = _TZ + (
            "d = datetime.datetime(2020, 1, 1, tzinfo=tz)\n"
            "h = delegate('helper', junk=[d] * 100)\nresult = 1"
        )
        outcome = _agent(run=code).run()

        assert outcome.error_message == (
            "Execution error in tester.run: UsageError: delegate options: more than 10000000 "
            "characters"
        )

    def test_delegate_options_holding_a_datetime_in_a_zoneinfo_with_a_long_key_are_refused(
        self,
    ) -> None:
        """``zoneinfo.ZoneInfo.from_file`` takes any ``key``: a datetime in a zone read from a
        52-byte TZif with a million-character key writes the key in its ``repr``. Counted as
        one before (the datetime's kind), it is its zone's ``repr`` now."""
        code = (
            "import io, zoneinfo, datetime\n"
            "data = b'TZif' + bytes(35) + bytes([1, 0, 0, 0, 4]) + bytes(6) + b'UTC' + bytes(1)\n"
            "z = zoneinfo.ZoneInfo.from_file(io.BytesIO(data), key='k' * 1_000_000)\n"
            "d = datetime.datetime(2020, 1, 1, tzinfo=z)\n"
            "h = delegate('helper', junk=[d] * 100)\nresult = 1"
        )
        outcome = _agent(run=code).run()

        assert outcome.error_message == (
            "Execution error in tester.run: UsageError: delegate options: more than 10000000 "
            "characters"
        )

    def test_delegate_options_holding_wide_ranges_are_refused(self) -> None:
        """``[range(n, n + 1)] * 2000`` of a 4 001-digit ``n``: 16 million characters of key."""
        code = "n = 10 ** 4000\nh = delegate('helper', junk=[range(n, n + 1)] * 2000)\nresult = 1"
        outcome = _agent(run=code).run()

        assert outcome.error_message == (
            "Execution error in tester.run: UsageError: delegate options: more than 10000000 "
            "characters"
        )

    def test_an_exception_holding_a_named_timezone_is_formatted_from_a_bounded_copy(
        self,
    ) -> None:
        """``raise ValueError([tz] * 100)`` took 27 s and 430 MB (the message was 100 million
        characters); its arguments now outgrow the message bound, so they are formatted from
        the bounded copy: each timezone is its bounded text, and the stored message is cut."""
        outcome = _agent(run=_TZ + "raise ValueError([tz] * 100)").run()

        assert (outcome.status, outcome.error_type) == ("error", "execution")
        assert outcome.error_message is not None
        assert outcome.error_message.startswith(
            'Execution error in tester.run: ValueError: ["datetime.timezone('
            "datetime.timedelta(0), 'xxx"
        )
        assert len(outcome.error_message) == 10_000

    def test_options_with_short_timezones_and_ranges_still_make_one_kept_child(self) -> None:
        """UTC, a named timezone of a few characters and ``range(5)`` are keyed as before: the
        same options twice give the same child, whose answer comes back."""
        code = (
            "import datetime\n"
            "z = [datetime.UTC, datetime.timezone(datetime.timedelta(hours=1), 'CET'), range(5)]\n"
            "first = delegate('helper', junk=z)\n"
            "second = delegate('helper', junk=list(z))\n"
            "first.mark = 7\n"
            "result = [second.mark, second.work(1).value]"
        )
        outcome = _agent(run=code).run()

        assert (outcome.status, outcome.value) == ("ok", [7, 2])

    def test_a_program_cannot_derive_a_tzinfo(self) -> None:
        """Held: no datetime leaves with a timezone whose methods are program code."""
        code = "import datetime\nclass Z(datetime.tzinfo):\n    pass\nresult = 1"
        outcome = _agent(run=code).run()

        assert (outcome.status, outcome.error_type) == ("error", "execution")
        assert outcome.error_message is not None
        assert "class Z may not derive from tzinfo" in outcome.error_message


class TestTheBoundedReprIsBoundedInTotal:
    def test_nested_shared_strings_are_written_up_to_the_limit(self) -> None:
        """``[[['x' * 60_000] * 100] * 100]`` wrote 10 000 strings of 60 000 characters (4.9 s)
        before the cut; now the text is the limit and its marker, written in far less than the
        600 million characters (bounded: the call returns, the spec times nothing)."""
        text = safe_repr([[["x" * 60_000] * 100] * 100])

        class Counting(_BoundedRepr):
            written = 0

            def repr_str(self, x: str, level: int) -> str:
                self.written += 1
                return super().repr_str(x, level)

        counting = Counting(65_536 + 1_024)
        counting.repr([[["x" * 60_000] * 100] * 100])
        assert counting.written == 2  # before: 10 000

        assert len(text) == 65_536 + len("...<1024 more chars>")
        assert text.startswith("[[['xxx")
        assert text.endswith("...<1024 more chars>")

    def test_a_list_of_shared_sets_is_written_by_the_bounded_repr(self) -> None:
        """``[{'x' * 60_000}] * 1000`` was judged short by ``_fits`` (four per set) and written
        in full (60 million characters) for a 65 536-character text (the default limit; at 200 the
        four per set already added up past the limit)."""
        text = safe_repr([{"x" * 60_000}] * 1000, limit=200)

        assert _fits([{"x" * 60_000}] * 1000, 66_560) is False  # before: True
        assert _fits([{"x"}] * 10, 66_560) is True

        assert text == "[{'" + "x" * 197 + "...<1024 more chars>"

    def test_small_values_look_as_before(self) -> None:
        """Held: short containers of every kind are their plain ``repr``."""
        value = [1, "a", {2}, None, 1.5, datetime.date(2020, 1, 1), (3,), {"k": b"v"}]
        assert safe_repr(value) == repr(value)

    def test_a_refused_result_keyed_by_nested_shared_strings_is_named_briefly(self) -> None:
        """``{((('x' * 60_000,) * 100,) * 100,) * 30: [len]}`` took 6.31 s and 1.1 GB to name
        the refused value's path; the path now writes a bounded key."""
        code = "k = ((('x' * 60000,) * 100,) * 100,) * 30\nresult = {k: [len]}"
        outcome = _agent(run=code).run()

        assert (outcome.status, outcome.error_type) == ("error", "non_serializable_result")
        assert outcome.error_message is not None
        assert outcome.error_message.startswith("the result[((('xxx")
        assert "holds a function" in outcome.error_message


class TestTheToolRegistryIsCheckedAndListedBoundedly:
    def test_a_tuple_key_of_shared_strings_costs_its_bound(self) -> None:
        """The registry key ``((('x' * 6_000,) * 100,) * 100,) * 3`` (180 million characters of
        text) is stored (``ok``), and ``tool('nope')`` names it within the bound of a key: the
        message is the unknown tool, then the key's first 80 characters (and a marker of the text cut, not of all of it)."""
        provider = ScriptedProvider(
            {
                ("tester", "setup"): "k = ((('x' * 6000,) * 100,) * 100,) * 3\n"
                "context['tools'] = {k: 1}\nresult = 1",
                ("tester", "use"): "try:\n    tool('nope')\nexcept Exception as e:\n"
                "    result = str(e)",
            }
        )
        agent = Agent("tester", provider=provider, guardrail_recovery_budget=0, log=False)

        assert agent.setup().status == "ok"
        outcome = agent.use()

        assert outcome.status == "ok"
        assert outcome.value == (
            "Unknown tool 'nope' in tester.tool; known tools: ((('"
            + "x" * 76
            + "...<1024 more chars>"
        )

    def test_a_shared_list_in_the_registry_is_walked_once(self) -> None:
        """``{'a': [[[[0] * 100] * 100] * 100] * 100}`` was 100 million references to walk
        (0.42 s per check measured a level shallower); each container is visited once now, so
        a list holding an agent, shared three times, is reported at its first path only (before:
        three paths, one per reference), and the deep shared list leaves the call ``ok``."""
        from recurgent._registry import integrity_violation

        shared = [_agent()]
        violation = integrity_violation(
            {"tools": {"x": [shared] * 3}}, phase="after", role="r", method="m"
        )

        assert violation is not None
        assert violation.message.endswith("(after r.m): context['tools']['x'][0][0]")
        code = "context['tools'] = {'a': [[[[0] * 100] * 100] * 100] * 100}\nresult = 1"
        assert _agent(run=code).run().status == "ok"

    def test_an_agent_in_the_registry_is_still_named_by_its_path(self) -> None:
        """Held: an agent stored in an entry is refused, named by its path."""
        from recurgent._registry import integrity_violation

        agent = _agent()
        violation = integrity_violation(
            {"tools": {"x": {"meta": [1, agent]}}}, phase="after", role="r", method="m"
        )

        assert violation is not None
        assert violation.subtype == "executable_registry_metadata"
        assert violation.message.endswith("(after r.m): context['tools']['x']['meta'][1]")

    def test_many_names_are_listed_up_to_fifty(self) -> None:
        """Sixty registered names: the message lists fifty-one read, sorted, cut to fifty, then
        ``...``; long names are cut to 80 characters."""
        from recurgent._agent_children import _known_tools

        tools: dict[str, dict[str, int]] = {f"t{index:02d}": {} for index in range(60)}
        text = _known_tools(tools)
        assert text == ", ".join(f"t{index:02d}" for index in range(50)) + ", ..."
        assert _known_tools({"n" * 100: {}}) == "n" * 80 + "...<20 more chars>"
