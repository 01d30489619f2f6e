"""Red team R27: today's changes attacked (placeholder docstring, rewritten at the end)."""

from __future__ import annotations

import textwrap
from typing import Any, cast

from recurgent._sandbox import ExecutionSandbox, SandboxLimits, compile_program
from recurgent._worker import _child
from recurgent._worker._codec import from_wire, to_wire
from recurgent._worker._protocol import RunRequest, RunResult, WireLimits
from specs.sandbox.support import Host, execute

# --- 3. What a worker reports a run wrote (_child._written) ----------------------------------


def _worker_answer(memory: dict[str, Any], source: str) -> RunResult:
    """What a worker answers for ``source`` over ``memory``: the steps of ``run_request``
    after the program ran (commit to the worker's copy, then ``_finish``), in this process."""
    code = textwrap.dedent(source)
    limits = SandboxLimits(timeout_seconds=5.0)
    host = Host(memory=from_wire(to_wire(memory, "context", lambda _: None), lambda *_: None))
    sandbox = ExecutionSandbox(host.bridge(), limits=limits, commit_memory=False)
    done = sandbox.run(compile_program(code))
    patches = _child._commit(done, host.memory)
    request = RunRequest(
        call_id="c",
        role="probe",
        method_name="run",
        code=code,
        memory=to_wire(memory, "context", lambda _: None),
        args=[],
        kwargs={},
        limits=WireLimits(**{name: getattr(limits, name) for name in WireLimits.model_fields}),
    )
    forwarder = _child._Forwarder(cast(Any, None), "c")
    return _child._finish(request, forwarder, host.memory, done, patches)


def _in_process(memory: dict[str, Any], source: str) -> dict[str, Any]:
    host = Host(memory=dict(memory))
    result = execute(source, host=host)
    assert result.error is None, result.error
    return host.memory


def test_a_key_shaped_like_an_envelope_comes_back_as_that_key() -> None:
    """A run that wrote only ``context['__recurgent_bytes__']`` came back from a worker as
    ``memory_set == {'__recurgent_dict__': ['__recurgent_bytes__', 'abc']}``: the changed keys
    were encoded as one mapping, whose one envelope-shaped key made it a pairs envelope, and
    the parent stored the pairs under ``"__recurgent_dict__"``. In process the key is written."""
    source = "context['__recurgent_bytes__'] = 'abc'\nreturn 0"
    answer = _worker_answer({"x": 1}, source)

    assert (answer.status, answer.memory_set, answer.memory_deleted) == (
        "ok",
        {"__recurgent_bytes__": "abc"},
        [],
    )
    assert _in_process({"x": 1}, source) == {"x": 1, "__recurgent_bytes__": "abc"}


def test_a_value_with_an_envelope_in_it_still_crosses_in_its_envelope() -> None:
    """Each changed key's value is encoded on its own, with its envelopes: a tuple and a dict
    shaped like an envelope come back as themselves once decoded."""
    source = "context['t'] = (1, 2)\ncontext['d'] = {'__recurgent_int__': 'ff'}\nreturn 0"
    answer = _worker_answer({"x": 1}, source)

    assert answer.memory_set == {
        "t": {"__recurgent_tuple__": [1, 2]},
        "d": {"__recurgent_dict__": ["__recurgent_int__", "ff"]},
    }
    assert {key: from_wire(value, lambda *_: None) for key, value in answer.memory_set.items()} == {
        "t": (1, 2),
        "d": {"__recurgent_int__": "ff"},
    }


def test_a_key_that_is_not_a_string_is_refused_not_renamed() -> None:
    """``context[1] = 2`` came back as ``{'__recurgent_dict__': [1, 2]}`` (the parent wrote a
    list under ``"__recurgent_dict__"``); ``memory_set`` names keys by strings only, so the run
    is refused as one whose memory cannot cross, and nothing is written."""
    answer = _worker_answer({"x": 1}, "context[1] = 2\nreturn 0")

    assert answer.error is not None
    assert (answer.status, answer.memory_set, answer.memory_patches) == ("error", {}, {})
    assert (answer.error.error_type, answer.error.message) == (
        "non_serializable_result",
        "context has a key of type int; memory keys cross the worker boundary as strings only; "
        "only plain data (dicts, lists, strings, numbers, booleans, None, Outcomes) can cross "
        "the worker boundary",
    )


def test_only_the_touched_keys_come_back_and_a_deleted_key_is_reported() -> None:
    """The journal's keys, each encoded alone: an in-place change nested two levels deep, a
    ``setdefault`` and a delete come back; the untouched key does not."""
    source = """
    context['a']['b'].append(3)
    context.setdefault('n', []).append(1)
    del context['gone']
    return 0
    """
    memory = {"a": {"b": [1, 2]}, "left": [0] * 10, "gone": 1}
    answer = _worker_answer(memory, source)

    assert (answer.memory_set, answer.memory_deleted) == (
        {"a": {"b": [1, 2, 3]}, "n": [1]},
        ["gone"],
    )
    assert _in_process(memory, source) == {"a": {"b": [1, 2, 3]}, "left": [0] * 10, "n": [1]}
