"""Escape and abuse payloads: each is blocked and leaves the host exactly as it was."""

from __future__ import annotations

import builtins
import collections.abc
import datetime
import functools
import json
import math
import numbers
import os
import string
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from recurgent import Agent
from recurgent._sandbox import SandboxLimits
from recurgent.errors import InvalidCodeError, ProviderError
from recurgent.outcome import Outcome

from .support import SECRET_KEY, FakeClock, Host, execute

CANARY_ENV = "RECURGENT_SANDBOX_CANARY_TOKEN"
CANARY_VALUE = "canary-value-7f3a9c"

CLASS_WALKING = [
    ("walk-subclasses", "result = ().__class__.__bases__[0].__subclasses__()", "invalid_code"),
    ("walk-getattr-computed", "result = getattr((), '__ba' + 'ses__')", "execution"),
    ("walk-getattr-subclasses", "result = getattr(type(()), '__subclasses__')()", "execution"),
    (
        "walk-mro-object",
        "base = type(()).mro()[-1]\nresult = getattr(base, '__subcl' + 'asses__')()",
        "execution",
    ),
    ("walk-type-mro", "result = type.mro(type(()))", "execution"),
    (
        "walk-metaclass-three-arg",
        "meta = type(type(0))\nX = meta('X', (), {'y': 1})\nresult = 1",
        "execution",
    ),
    (
        "walk-abcmeta-three-arg",
        "import collections.abc\nmeta = type(collections.abc.Sized)\nX = meta('X', (), {})",
        "execution",
    ),
    ("walk-model-metaclass", "meta = type(Outcome)\nX = meta('X', (Outcome,), {})", "execution"),
    ("format-class", "result = '{0.__class__.__base__}'.format(())", "execution"),
    ("format-unbound", "result = str.format('{0.__class__.__base__}', 1)", "execution"),
    ("format-map-class", "result = '{x.__class__.__base__}'.format_map({'x': ()})", "execution"),
    ("format-globals", "def f():\n    pass\nresult = '{0.__globals__}'.format(f)", "execution"),
    ("format-nested-field", "result = '{0:{1.__class__}}'.format(1, 2)", "execution"),
    ("fstring-conversion", "x = ()\nresult = f'{x.__class__.__base__!r}'", "invalid_code"),
    ("fstring-format-call", "result = f'{\"{0.__class__.__base__}\".format(1)!r}'", "execution"),
    (
        "string-formatter",
        "import string\nresult = string.Formatter().get_field('0.__class__', [1], {})",
        "execution",
    ),
    ("type-three-arg", "X = type('X', (), {})", "execution"),
    ("class-metaclass-keyword", "class X(metaclass=type):\n    pass", "invalid_code"),
    ("class-derives-outcome", "class X(Outcome):\n    pass", "execution"),
    (
        "class-derives-host-class",
        "import csv\nclass X(csv.DictReader):\n    pass",
        "execution",
    ),
    ("super-misuse", "s = super(int, 1)\nresult = s.bit_length()", "execution"),
    ("super-dunder-host", "result = super(int, 1).__init__", "execution"),
    (
        "match-class-keyword",
        "match ():\n    case tuple(real=r):\n        result = r",
        "invalid_code",
    ),
    (
        "class-getattr-hook",
        "class X:\n    def __getattr__(self, n):\n        return n",
        "invalid_code",
    ),
    ("class-del-hook", "class X:\n    def __del__(self):\n        pass", "invalid_code"),
    (
        "super-getattribute",
        "class A:\n    def f(self):\n        return super().__getattribute__('x')",
        "invalid_code",
    ),
    ("instance-dict", "result = Outcome.ok(1).__dict__", "execution"),
    (
        "catch-warnings-walk",
        "for cls in {}.__class__.__base__.__subclasses__():\n    pass",
        "invalid_code",
    ),
]

FRAMES = [
    (
        "generator-gi-frame",
        "def g():\n    yield 1\nresult = g().gi_frame.f_globals",
        "invalid_code",
    ),
    (
        "generator-getattr-frame",
        "def g():\n    yield 1\nresult = getattr(g(), 'gi_' + 'frame')",
        "execution",
    ),
    ("generator-gi-code", "def g():\n    yield 1\nresult = getattr(g(), 'gi_code')", "execution"),
    (
        "traceback-frame",
        "try:\n    1 / 0\nexcept Exception as e:\n    result = e.__traceback__.tb_frame",
        "invalid_code",
    ),
    (
        "traceback-getattr",
        "try:\n    1 / 0\nexcept Exception as e:\n    result = getattr(e, '__trace' + 'back__')",
        "execution",
    ),
    ("sys-getframe", "import sys\nresult = sys._getframe(0).f_globals", "invalid_code"),
    ("coroutine-frame", "async def f():\n    pass\nresult = f().cr_frame", "invalid_code"),
    (
        "function-globals",
        "def f():\n    pass\nresult = getattr(f, '__glo' + 'bals__')",
        "execution",
    ),
]

IMPORTS = [
    ("dunder-import", "result = __import__('os').environ", "invalid_code"),
    ("importlib", "import importlib\nresult = importlib.import_module('os')", "execution"),
    ("from-os-import-system", "from os import system\nresult = system('true')", "execution"),
    ("relative-import", "from . import support\nresult = support", "execution"),
    ("star-import", "from os import *", "invalid_code"),
    ("builtins-dunder", "result = __builtins__['open']", "invalid_code"),
    ("builtins-module", "import builtins\nresult = builtins.open", "invalid_code"),
    ("builtins-module-alias", "import builtins as b\nresult = b.open", "invalid_code"),
    ("json-decoder-walk", "import json\nresult = json.decoder.re", "execution"),
    ("collections-abc-sys", "import collections.abc\nresult = collections.abc.sys", "execution"),
    ("statistics-sys", "import statistics\nresult = statistics.sys.modules['os']", "execution"),
    ("random-os", "import random\nresult = random._os.environ", "execution"),
    ("random-os-getattr", "import random\nresult = getattr(random, '_' + 'os')", "execution"),
    (
        "attribute-error-obj",
        "import json\ntry:\n    json.missing\nexcept AttributeError as e:\n"
        "    mod = e.obj\nresult = mod.codecs.sys.modules['os'].environ",
        "execution",
    ),
    ("dotted-unlisted", "import xml.dom.minidom", "execution"),
    ("typing-sys", "import typing\nresult = typing.sys", "execution"),
    (
        "operator-attrgetter",
        "import operator\nresult = operator.attrgetter('__globals__')(len)",
        "execution",
    ),
    (
        "partial-getattr",
        "import functools\nresult = functools.partial(getattr, 1, '__globals__')()",
        "execution",
    ),
    ("import-sys", "import sys\nresult = sys.modules", "execution"),
    ("import-gc", "import gc\nresult = gc.get_objects()", "execution"),
    ("import-inspect", "import inspect\nresult = inspect.stack()", "execution"),
    ("import-ctypes", "import ctypes", "execution"),
    ("import-pickle", "import pickle\nresult = pickle.loads(b'')", "execution"),
    ("import-subprocess", "import subprocess\nresult = subprocess.run(['true'])", "execution"),
    ("import-socket", "import socket\nresult = socket.socket()", "execution"),
    ("import-time-tzset", "import time\ntime.tzset()", "execution"),
    ("import-queue-threading", "import queue\nresult = queue.threading", "execution"),
    ("import-weakref", "import weakref", "execution"),
    ("import-signal", "import signal", "execution"),
    ("random-module-dict", "import random\nresult = random.__dict__['_os']", "execution"),
    (
        "map-getattr-module",
        "import statistics\nresult = list(map(getattr, [statistics], ['sys']))",
        "execution",
    ),
    (
        "filter-partial-getattr",
        "import functools, statistics\n"
        "result = list(filter(functools.partial(getattr, statistics), ['sys']))",
        "execution",
    ),
    ("string-formatter-class", "import string\nresult = string.Formatter", "execution"),
]

REFLECTION = [
    ("vars", "result = vars()", "execution"),
    ("dir", "result = dir(Outcome)", "execution"),
    ("globals", "result = globals()['_getattr_']", "execution"),
    ("locals", "result = locals()", "execution"),
    ("exec", "exec('import os')", "invalid_code"),
    ("eval", "result = eval('1')", "invalid_code"),
    ("compile", "result = compile('1', 'x', 'eval')", "execution"),
    ("eval-alias", "e = eval\nresult = e('1')", "execution"),
    ("getattr-host-class", "result = getattr(Outcome, 'model_construct')", "execution"),
    ("shadow-getattr-guard", "_getattr_ = getattr", "invalid_code"),
    ("shadow-write-guard", "def _write_(x):\n    return x", "invalid_code"),
    ("shadow-positional-only", "def f(_getattr_, /):\n    return _getattr_", "invalid_code"),
    ("shadow-lambda-arg", "f = lambda _write_: _write_", "invalid_code"),
    ("shadow-import-as", "import json as _getattr_", "invalid_code"),
    ("shadow-for-target", "for _getiter_ in []:\n    pass", "invalid_code"),
    ("shadow-walrus", "result = (_tick_ := 1)", "invalid_code"),
    (
        "shadow-next-parameter",
        "def spin(next=lambda *a: True):\n    while True:\n        pass\nspin()",
        "timeout",
    ),
    (
        "shadow-next-lambda",
        "f = lambda next: [sorted(range(100)) for _ in range(10**7)]\nf(lambda *a: True)",
        "timeout",
    ),
    ("shadow-except-name", "try:\n    pass\nexcept Exception as _tick_:\n    pass", "invalid_code"),
    ("print-file-context", "print('x', file=context)", "execution"),
    ("print-file-handle", "print('x', file=delegate('helper'))", "execution"),
    ("try-star", "try:\n    pass\nexcept* ValueError:\n    pass", "invalid_code"),
    ("object-setattr", "object.__setattr__(Outcome, 'ok', 1)", "invalid_code"),
]

FORWARDED = [
    ("delegate-init", "result = delegate('helper').__init__", "invalid_code"),
    ("handle-ops", "result = getattr(delegate('helper'), '_handle' + '_ops')", "execution"),
    ("handle-provider-key", "result = delegate('helper').provider.api_key", "execution"),
    ("handle-type-constructor", "T = type(delegate('helper'))\nresult = T(context)", "execution"),
    (
        "module-type-constructor",
        "import json\nF = type(json)\nresult = F('x', Outcome, None, None)",
        "execution",
    ),
    ("forwarded-self", "result = getattr(tool, '__self__')", "execution"),
    ("host-partial-func", "result = context['formatter'].func", "execution"),
    ("forwarded-closure", "result = getattr(delegate, '__clo' + 'sure__')", "execution"),
    ("outcome-model-construct", "result = Outcome.model_construct(status='ok')", "execution"),
    ("outcome-model-config", "Outcome.model_config['frozen'] = False", "execution"),
    ("outcome-instance-config", "result = Outcome.ok(1).model_config", "execution"),
    ("outcome-instance-write", "o = Outcome.ok(1)\no.value = 2", "execution"),
    ("outcome-flag-type", "T = type(Outcome.ok(1).ok)\nresult = T(False)", "execution"),
    (
        "iterator-type-constructor",
        "import itertools\nT = type(itertools.count())\nresult = T(iter([]), print)",
        "execution",
    ),
    (
        "provider-error-context",
        "try:\n    delegate('broken')\nexcept Exception as e:\n    result = getattr(e, '__context__')",
        "execution",
    ),
    (
        "outcome-metadata-function",
        "result = Outcome.error(error_type='x', error_message='y', metadata={'f': lambda: 1})",
        "non_serializable_result",
    ),
    ("result-generator", "result = (x for x in range(3))", "non_serializable_result"),
    ("result-sealed-type", "result = type(delegate('helper'))", "non_serializable_result"),
    (
        "provider-error-attributes",
        "try:\n    delegate('broken')\nexcept Exception as e:\n    result = e.response.request.headers",
        "execution",
    ),
]

SECRETS = [
    ("os-environ", "import os\nresult = os.environ", "execution"),
    ("open-proc-environ", "result = open('/proc/self/environ').read()", "execution"),
    ("open-dotenv", "result = open('.env').read()", "execution"),
    ("io-open", "import io\nresult = io.open('.env').read()", "execution"),
    ("pathlib", "import pathlib\nresult = pathlib.Path('.env').read_text()", "execution"),
    (
        "element-tree-parse-file",
        "import xml.etree.ElementTree as ET\nresult = ET.parse('/etc/passwd')",
        "execution",
    ),
    (
        "urlopen-file-scheme",
        "import urllib.request\nresult = urllib.request.urlopen('file:///etc/passwd').read()",
        "execution",
    ),
]

HOST_MUTATION = [
    ("outcome-ok-assign", "Outcome.ok = lambda *a: 1", "tool_registry_violation"),
    ("setattr-outcome", "setattr(Outcome, 'ok', 1)", "tool_registry_violation"),
    ("delattr-outcome", "delattr(Outcome, 'ok')", "tool_registry_violation"),
    ("math-pi", "import math\nmath.pi = 3", "tool_registry_violation"),
    ("json-dumps", "import json\njson.dumps = lambda x: 'evil'", "tool_registry_violation"),
    ("functools-reduce", "import functools\nfunctools.reduce = None", "tool_registry_violation"),
    ("string-constant", "import string\nstring.ascii_letters = 'x'", "tool_registry_violation"),
    (
        "host-class-attribute",
        "import json\njson.JSONDecoder.parse_float = None",
        "tool_registry_violation",
    ),
    ("datetime-now", "import datetime\ndatetime.datetime.now = 1", "tool_registry_violation"),
    ("str-method", "str.upper = 1", "tool_registry_violation"),
    ("textwrap-wrapper-class", "import textwrap\nresult = textwrap.TextWrapper", "execution"),
    ("abc-register", "import numbers\nnumbers.Number.register(str)", "execution"),
    # The attempt's own context (ADR 0048): allowed, and the host's context stays unchanged.
    ("decimal-context", "import decimal\ndecimal.getcontext().prec = 1", "none"),
    ("csv-dialect", "import csv\ncsv.register_dialect('x', delimiter=';')", "execution"),
    (
        "operator-setitem-class",
        "import operator\noperator.setitem(Outcome.model_config, 'frozen', False)",
        "execution",
    ),
]

RESOURCE_BOMBS = [
    ("str-repeat", "result = len('a' * 10**10)", "resource_limit"),
    ("list-repeat", "result = len([0] * 10**10)", "resource_limit"),
    ("tuple-repeat-reversed", "result = len(10**10 * (0,))", "resource_limit"),
    ("chained-repeat", "result = len('x' * 10**5 * 10**5)", "resource_limit"),
    ("inplace-repeat", "x = [0]\nx *= 10**10", "resource_limit"),
    ("item-inplace-repeat", "d = {'k': 'ab'}\nd['k'] *= 10**10", "resource_limit"),
    (
        "deque-repeat",
        "import collections\nresult = len(collections.deque([0]) * 10**10)",
        "resource_limit",
    ),
    ("power", "result = 2 ** 10**10", "resource_limit"),
    ("shift", "result = 1 << 10**10", "resource_limit"),
    ("pow-builtin", "result = pow(10, 10**8)", "resource_limit"),
    (
        "pow-modular-huge",
        "e = 2 ** 100000 - 1\nresult = pow(3, e, e + 2)",
        "resource_limit",
    ),
    ("range", "result = len(range(10**12))", "resource_limit"),
    ("dict-fromkeys-range", "result = dict.fromkeys(range(10**12))", "resource_limit"),
    ("ljust", "result = 'x'.ljust(10**10)", "resource_limit"),
    ("center", "result = 'x'.center(10**10)", "resource_limit"),
    ("zfill", "result = '1'.zfill(10**10)", "resource_limit"),
    ("expandtabs", "result = ('\\t' * 1000).expandtabs(10**8)", "resource_limit"),
    ("format-width", "result = '{:>10000000000}'.format(1)", "resource_limit"),
    ("format-nested-width", "result = '{:{}}'.format(1, 10**10)", "resource_limit"),
    ("fstring-width", "result = f'{1:>{10**10}}'", "resource_limit"),
    ("format-builtin", "result = format(1, '>10000000000')", "resource_limit"),
    ("percent-star", "result = '%*d' % (10**10, 1)", "resource_limit"),
    ("percent-bytes-star", "result = b'%*d' % (10**10, 1)", "resource_limit"),
    ("bytes", "result = len(bytes(10**10))", "resource_limit"),
    ("bytearray", "result = len(bytearray(10**10))", "resource_limit"),
    ("int-to-bytes", "result = len((1).to_bytes(10**10, 'big'))", "resource_limit"),
    ("factorial", "import math\nresult = math.factorial(10**7)", "resource_limit"),
    ("math-prod", "import math\nresult = math.prod(range(1, 10**6))", "resource_limit"),
    ("math-lcm", "import math\nresult = math.lcm(*range(1, 10**6))", "resource_limit"),
    (
        "replace-empty",
        "s = 'ab' * 10**6\nresult = len(s.replace('', 'x' * 10**6))",
        "resource_limit",
    ),
    ("join-repeat", "result = len(('x' * 10**6).join(['a'] * 10**6))", "resource_limit"),
    ("random-getrandbits", "import random\nresult = random.getrandbits(10**10)", "resource_limit"),
    ("random-randbytes", "import random\nresult = len(random.randbytes(10**10))", "resource_limit"),
    (
        "random-choices",
        "import random\nresult = len(random.choices([1], k=10**10))",
        "resource_limit",
    ),
    (
        "random-instance-randbytes",
        "import random\nresult = len(random.Random(1).randbytes(10**10))",
        "resource_limit",
    ),
    (
        "secrets-token",
        "import secrets\nresult = len(secrets.token_bytes(10**10))",
        "resource_limit",
    ),
    (
        "hashlib-shake",
        "import hashlib\nresult = hashlib.shake_256(b'x').digest(10**10)",
        "execution",
    ),
    (
        "hashlib-pbkdf2",
        "import hashlib\nresult = hashlib.pbkdf2_hmac('sha256', b'p', b's', 10**12)",
        "resource_limit",
    ),
    (
        "decimal-precision",
        "import decimal\nctx = decimal.Context(prec=10**9)\nresult = ctx.sqrt(2)",
        "resource_limit",
    ),
    ("itertools-tee", "import itertools\nresult = len(itertools.tee([], 10**9))", "resource_limit"),
    (
        "counter-elements",
        "import collections\nresult = len(list(collections.Counter({'a': 10**10}).elements()))",
        "timeout",
    ),
    ("sum-of-lists", "result = len(sum([[0] * 10**6] * 10**4, []))", "resource_limit"),
    (
        "re-sub-empty",
        "import re\nresult = len(re.sub('', 'x' * 10**6, 'a' * 10**6))",
        "resource_limit",
    ),
    (
        "re-pattern-sub-groups",
        "import re\np = re.compile('(a+)')\nresult = len(p.sub('\\\\1' * 10**5, 'a' * 10**5))",
        "resource_limit",
    ),
    (
        "match-expand",
        "import re\nm = re.match('(a+)', 'a' * 10**6)\nresult = len(m.expand('\\\\1' * 10**6))",
        "resource_limit",
    ),
    ("format-repeat-field", "result = len(('{0}' * 10**6).format('x' * 10**6))", "resource_limit"),
    ("percent-repeat", "result = len(('%s' * 10**6) % (('x' * 10**6,) * 10**6))", "resource_limit"),
    (
        "template-repeat",
        "import string\nresult = len(string.Template('$a' * 10**6).substitute(a='x' * 10**6))",
        "resource_limit",
    ),
    (
        "decimal-exponent",
        "import decimal\nresult = int(decimal.Decimal('1e999999999'))",
        "resource_limit",
    ),
    (
        "fraction-exponent",
        "import fractions\nresult = fractions.Fraction('1e999999999')",
        "resource_limit",
    ),
    (
        "json-indent",
        "import json\nresult = json.dumps([[1]] * 1000, indent=10**7)",
        "resource_limit",
    ),
    (
        "textwrap-indent",
        "import textwrap\nresult = textwrap.indent('\\n' * 10**6, 'x' * 10**6)",
        "resource_limit",
    ),
    (
        "pprint-indent",
        "import pprint\nresult = pprint.pformat([[1]] * 100, indent=10**7)",
        "resource_limit",
    ),
    ("operator-mul", "import operator\nresult = operator.mul('a', 10**10)", "resource_limit"),
    ("operator-pow", "import operator\nresult = operator.pow(2, 10**10)", "resource_limit"),
    ("map-unbound-ljust", "result = list(map(str.ljust, ['x'], [10**10]))", "resource_limit"),
    ("bytearray-inplace", "b = bytearray(b'x')\nb *= 10**10", "resource_limit"),
    (
        "difflib-quadratic",
        "import difflib\nresult = difflib.SequenceMatcher(None, 'a' * 10**5, 'b' * 10**5).ratio()",
        "resource_limit",
    ),
    (
        "unicodedata-expansion",
        "import unicodedata\nresult = len(unicodedata.normalize('NFKD', '\\ufdfa' * 10**7))",
        "resource_limit",
    ),
    ("itertools-count", "import itertools\nresult = list(itertools.count())", "timeout"),
    ("iter-sentinel", "result = list(iter(int, 1))", "timeout"),
    ("sum-repeat", "import itertools\nresult = sum(itertools.repeat(1))", "timeout"),
    ("comprehension-count", "import itertools\nresult = [x for x in itertools.count()]", "timeout"),
    (
        "comprehension-busy",
        "result = [sorted(range(1000)) for _ in range(10**7) for _ in range(10**7)]",
        "timeout",
    ),
    ("while-true", "while True:\n    pass", "timeout"),
    ("lambda-exponential", "f = lambda n: n and (f(n - 1), f(n - 1))\nresult = f(60)", "timeout"),
    (
        "recursion-swallowed",
        "def f():\n    try:\n        f()\n    except RecursionError:\n        f()\nf()",
        "timeout",
    ),
    (
        "except-base-exception",
        "while True:\n    try:\n        while True:\n            pass\n    except BaseException:\n        pass",
        "timeout",
    ),
    (
        "generator-infinite",
        "def g():\n    n = 0\n    while True:\n        n += 1\n        yield n\nresult = sum(g())",
        "timeout",
    ),
    (
        "string-doubling",
        "s = 'a' * 1000\nwhile True:\n    s = s + s",
        "resource_limit",
    ),
    ("forwarded-call-flood", "for i in range(10**6):\n    delegate('helper')", "resource_limit"),
]

PAYLOADS = (
    CLASS_WALKING
    + FRAMES
    + IMPORTS
    + REFLECTION
    + FORWARDED
    + SECRETS
    + HOST_MUTATION
    + RESOURCE_BOMBS
)


_UNSAFE_MODULES = ("ctypes", "pickle", "socket", "subprocess", "importlib.util", "gc", "inspect")


def _host_fingerprint(tmp_path: Path) -> dict[str, Any]:
    """Everything an escape could change in the host, captured by value."""
    return {
        # Agent and its base (ADR 0067): an escape could patch a method on either.
        "agent_class": [dict(vars(cls)) for cls in Agent.__mro__],
        "outcome_class": dict(vars(Outcome)),
        "outcome_config": dict(Outcome.model_config),
        "math_pi": math.pi,
        "json_dumps": json.dumps,
        "functools_reduce": functools.reduce,
        "ascii_letters": string.ascii_letters,
        "whitespace_trans": dict(textwrap.TextWrapper.unicode_whitespace_trans),
        "datetime_now": datetime.datetime.now,
        "str_is_number": isinstance("x", numbers.Number),
        "dict_is_sequence": issubclass(dict, collections.abc.Sequence),
        "builtins": dict(vars(builtins)),
        "environ": os.environ.get(CANARY_ENV),
        "files": sorted(p.name for p in tmp_path.iterdir()),
        "cwd": os.getcwd(),
        "modules": sorted(name for name in _UNSAFE_MODULES if name in sys.modules),
    }


@pytest.fixture
def host(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Host:
    """A host with a canary env var, a .env file and a child whose creation leaks a key."""
    monkeypatch.setenv(CANARY_ENV, CANARY_VALUE)
    monkeypatch.chdir(tmp_path)
    (tmp_path / ".env").write_text(f"OPENAI_API_KEY={SECRET_KEY}\n", "utf-8")
    leaky = ProviderError(f"401 Unauthorized: Authorization: Bearer {SECRET_KEY}")
    leaky.response = {"request": {"headers": {"authorization": f"Bearer {SECRET_KEY}"}}}  # type: ignore[attr-defined]
    memory = {"note": "kept", "formatter": functools.partial(os.getenv, CANARY_ENV)}
    return Host(memory=memory, delegate_errors={"broken": leaky})


class TestEscapePayloads:
    """Every payload is refused at compile time or fails with a typed error, host untouched."""

    def test_the_corpus_has_at_least_sixty_distinct_payloads(self) -> None:
        """The regression corpus holds 60+ payloads with unique ids and unique code."""
        ids = [name for name, _, _ in PAYLOADS]
        codes = [code for _, code, _ in PAYLOADS]
        assert (len(ids) >= 60, len(set(ids)), len(set(codes))) == (True, len(ids), len(codes))

    @pytest.mark.parametrize(
        ("code", "error_type"), [p[1:] for p in PAYLOADS], ids=[p[0] for p in PAYLOADS]
    )
    def test_payload_is_blocked_and_host_unchanged(
        self, host: Host, tmp_path: Path, code: str, error_type: str
    ) -> None:
        """The payload ends in its expected error type and nothing in the host changed."""
        before = _host_fingerprint(tmp_path)
        memory_before = dict(host.memory)
        try:
            result = execute(
                code,
                host=host,
                limits=SandboxLimits(
                    timeout_seconds=2.0, max_forwarded_calls=50, max_memory_bytes=256 * 2**20
                ),
                clock=FakeClock(step=0.01),
            )
        except InvalidCodeError as error:
            observed, leaked = error.error_type, str(error)
        else:
            assert result.value is None
            observed = result.error.error_type if result.error else "none"
            leaked = f"{result.error} {result.stdout}"
        assert (observed, _host_fingerprint(tmp_path), host.memory) == (
            error_type,
            before,
            memory_before,
        ), leaked
        assert SECRET_KEY not in leaked and CANARY_VALUE not in leaked
