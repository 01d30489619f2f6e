"""Reuse by behaviour (ADR 0078): a program's answer depends on its inputs by data flow, not by
the presence of the name ``args``.

``input_flow`` says ``unread`` (never loads the inputs), ``ignored`` (loads them, nothing it
answers or does depends on them), ``used`` or ``unknown`` (the bounded walk gave up).
"""

from __future__ import annotations

import pytest

from recurgent._store._cacheability import Cacheability, classify
from recurgent._store._dataflow import input_flow

IGNORED = Cacheability(False, "arg_ignored_code", True)
STABLE = Cacheability(True, "stable_method_default", False)


class TestReadButIgnored:
    """The issue's examples: the inputs are read, then a constant answers."""

    @pytest.mark.parametrize(
        "code",
        [
            "_ = args\nresult = 5.65",
            "n = len(args)\nresult = 5.65",
            "if args:\n    pass\nresult = 5.65",
            "for a in args:\n    pass\nresult = 5.65",
            "x = args[0]\ny = x\nresult = 5.65",
            "x = args[0]\nresult = 5",
            "_ = args\nreturn 5.65",
            "result = args\nresult = 5",
            "x = args[0]\n5",
            "print(args)\nresult = 5",
            "x = args[0]\ndel x\nresult = 3",
        ],
    )
    def test_a_constant_after_reading_the_inputs_is_ignored(self, code: str) -> None:
        """Each reads ``args`` and answers a constant: ``ignored``, classified
        ``arg_ignored_code`` (not reused) for a call with inputs."""
        assert input_flow(code) == "ignored"
        assert classify("sqrt", code, (32,), {}, contracted=False) == IGNORED

    @pytest.mark.parametrize(
        "code",
        [
            "squares = [a * a for a in args]\nresult = 5",
            "i = 0\nwhile i < len(args):\n    i += 1\nresult = 5",
            "def helper(x):\n    return 5\nn = helper(args)\nresult = 7",
            "def compute():\n    _ = args\n    return 5\nresult = compute()",
            "f = lambda x: 5\nn = f(args[0])\nresult = 1",
            "n = 0\nfor a in args:\n    if a < 0:\n        break\n    n += 1\nresult = 5",
            "for x in [1, 2]:\n    for a in args:\n        if a:\n            break\n    y = 5\n"
            "result = y",
            "import math\ny = math.sqrt(args[0])\nresult = math.pi",
            "x = context.get('count', 0) + 1\ncontext['count'] = x\n_ = args\nresult = x",
        ],
    )
    def test_taint_that_never_reaches_a_sink_is_ignored(self, code: str) -> None:
        """A comprehension, a loop, a helper and a memory write all touch the inputs or
        memory, but no tainted value reaches the answer, memory or a forwarded call."""
        assert input_flow(code) == "ignored"


class TestAnswersComputedFromInputs:
    """Data flow from the inputs to the answer."""

    @pytest.mark.parametrize(
        "code",
        [
            "result = args[0] * 2",
            "return args[0] ** 0.5",
            "args[0] + 1",
            "result = len(args)",
            "total = 0\nfor a in args:\n    total += a\nresult = total",
            "out = []\nfor a in args:\n    out.append(a)\nresult = out",
            "data = list(args)\ndata.sort()\nresult = data[0]",
            "result = [a * 2 for a in args]",
            "result = sum(1 for _ in args)",
            "result = {k: v for k, v in kwargs.items()}",
            "result = f'{args[0]}!'",
            "x = (y := args[0])\nresult = y",
            "a, *rest = args\nresult = rest",
            "i = 0\ntotal = 0\nwhile i < len(args):\n    total += args[i]\n    i += 1\nresult = total",
            "with_key = sorted(args, key=lambda a: -a)\nresult = with_key",
            "import random\nrandom.seed(args[0])\nresult = random.random()",
        ],
    )
    def test_an_answer_computed_from_the_inputs_is_used(self, code: str) -> None:
        """Assignments, augmented assignments, loops, comprehensions, unpacking, the walrus,
        f-strings and a stateful module carry the inputs to the answer."""
        assert input_flow(code) == "used"
        assert classify("f", code, (3,), {}, contracted=False) == STABLE

    def test_a_dependency_only_through_kwargs_get(self) -> None:
        """``kwargs.get("x")`` is a read of the inputs like ``args[0]``."""
        code = "x = kwargs.get('x')\nresult = x + 1"
        assert input_flow(code) == "used"
        assert classify("f", code, (), {"x": 3}, contracted=False) == STABLE

    def test_the_count_of_the_inputs_is_an_answer_from_them(self) -> None:
        """``result = len(args)`` answers other inputs rightly (their count): reused."""
        assert classify("count", "result = len(args)", (1, 2), {}, contracted=False) == STABLE


class TestHelpers:
    """The program's own functions, lambdas, methods and classes."""

    @pytest.mark.parametrize(
        "code",
        [
            "def double(v):\n    return v * 2\nresult = double(args[0])",
            "def compute():\n    return args[0] * 2\nresult = compute()",
            "x = args[0]\ndef f():\n    return x * 2\nresult = f()",
            "f = lambda x: x * 2\nresult = f(args[0])",
            "def fact(n):\n    return 1 if n <= 1 else n * fact(n - 1)\nresult = fact(args[0])",
            "out = []\ndef add(v):\n    out.append(v)\nadd(args[0])\nresult = out",
            "def f(lst, v):\n    lst.append(v)\nout = []\nf(out, args[0])\nresult = out",
            "def g(x):\n    global result\n    result = x\ng(args[0])",
            "class Acc:\n    def __init__(self, v):\n        self.v = v\n    def get(self):\n"
            "        return self.v * 2\nresult = Acc(args[0]).get()",
            "class C:\n    def go(self):\n        return args[0]\nresult = C().go()",
        ],
    )
    def test_taint_through_the_programs_own_code(self, code: str) -> None:
        """Parameters, closures, recursion, a helper that fills a list, ``global result``
        and instance state all carry the inputs."""
        assert input_flow(code) == "used"


class TestControlDependence:
    """A choice made on the inputs makes what it chooses depend on them."""

    @pytest.mark.parametrize(
        "code",
        [
            "if args[0] > 3:\n    result = 1\nelse:\n    result = 2",
            "if args[0] > 3:\n    return 1\nreturn 2",
            "for a in args:\n    result = 5",
            "for a in args:\n    if a < 0:\n        return 'neg'\nreturn 'pos'",
            "match args[0]:\n    case 1:\n        result = 'one'\n    case _:\n        result = 'other'",
            "try:\n    v = float(args[0])\nexcept ValueError:\n    v = 0\nreturn v",
            "result = 1 if args else 2",
        ],
    )
    def test_a_branch_or_loop_chosen_by_the_inputs(self, code: str) -> None:
        """Assignments and returns under a tainted test, loop or caught exception depend on the
        inputs."""
        assert input_flow(code) == "used"

    @pytest.mark.parametrize(
        "code",
        [
            "if not args:\n    raise ValueError('no input')\nreturn 5.65",
            "if args[0] < 0:\n    return Outcome.error('invalid_input', f'{args[0]} < 0')\n"
            "return 5.65",
            "if args[0]:\n    pass\nelse:\n    raise ValueError\nresult = 2",
            "try:\n    v = float(args[0])\nexcept ValueError:\n    return Outcome.error('bad', 'x')\n"
            "return 5.65",
            "assert args, 'need input'\nresult = 5.65",
            "return Outcome.error('not_found', f'no {args[0]}')",
        ],
    )
    def test_a_guard_that_only_refuses_is_not_a_choice(self, code: str) -> None:
        """Errors are not answers: a branch that raises or returns ``Outcome.error`` guards, and
        the constant after it does not depend on the input (validate-then-constant is not
        reused)."""
        assert input_flow(code) == "ignored"

    def test_a_guard_before_an_answer_from_the_input_is_used(self) -> None:
        """The guard does not hide the data flow of the real answer."""
        code = "a, b = args\nif b == 0:\n    return Outcome.error('division_by_zero', 'x')\n"
        assert input_flow(code + "return a / b") == "used"


class TestEffects:
    """Memory writes, forwarded calls and network calls that depend on the inputs."""

    @pytest.mark.parametrize(
        "code",
        [
            "context['last'] = args[0]\nresult = 'saved'",
            "memory.update(last=args[0])\nresult = 'saved'",
            "store = context.setdefault('items', [])\nstore.append(args[0])\nresult = 'ok'",
            "for item in context['items']:\n    item['x'] = args[0]\nresult = 'ok'",
            "if args:\n    context['seen'] = True\nresult = 1",
            "def save(store, v):\n    store['k'] = v\nsave(context, args[0])\nresult = 1",
            "remember(last=args[0])\nresult = 1",
            "tool('x').run(args[0])\nresult = 'ok'",
            "h = delegate('x')\nh.run(args[0])\nresult = 'ok'",
            "import urllib.request\nurllib.request.urlopen('http://x/' + str(args[0]))\n"
            "result = 'sent'",
            "Outcome.ok(args[0])\nresult = 5",
        ],
    )
    def test_an_effect_of_the_inputs_is_a_use(self, code: str) -> None:
        """The answer is a constant, but what the program did depends on the input: reusing it
        does the same with the new input."""
        assert input_flow(code) == "used"

    def test_a_memory_read_under_a_choice_is_not_a_write(self) -> None:
        """``context.get`` under ``if args`` reads memory; nothing changes."""
        assert input_flow("if args:\n    y = context.get('x')\nresult = 1") == "ignored"


class TestUnreadAndBounds:
    """What the walk does not start, and where it stops."""

    def test_the_word_in_a_comment_is_unread(self) -> None:
        """``# args`` is not a read (ADR 0070)."""
        assert input_flow("result = 5  # args") == "unread"
        assert input_flow("return 1") == "unread"

    def test_calls_without_inputs_are_unaffected(self) -> None:
        """With no args and no kwargs, an ignoring program is a stable method as before."""
        assert classify("answer", "_ = args\nreturn 42", (), {}, contracted=False) == STABLE

    def test_code_that_does_not_parse_keeps_the_old_rule(self) -> None:
        """Unparsable code never answered: classified as using its inputs, as before."""
        assert input_flow("return args[0] +") == "used"

    def test_a_walk_past_its_budget_is_unknown_and_not_reused(self) -> None:
        """A loop that taints one more name per round (900 names) runs past the round cap:
        ``unknown``, classified ``input_flow_unknown`` (not reusable)."""
        names = 900
        code = (
            "v0 = args[0]\n"
            + "\n".join(f"v{i} = 0" for i in range(1, names))
            + "\nwhile True:\n"
            + "\n".join(f"    v{i} = v{i - 1}" for i in range(names - 1, 0, -1))
            + "\nresult = v899"
        )
        assert input_flow(code) == "unknown"
        assert classify("f", code, (1,), {}, contracted=False) == Cacheability(
            False, "input_flow_unknown", True
        )
