"""``recurgent tools namespace-pressure ROLE`` (recurgent/_profiles/_cli.py, ADR 0084)."""

from __future__ import annotations

import io
import json
from pathlib import Path
from typing import Any

from recurgent import Agent
from recurgent._cli import main as recurgent_main
from recurgent._profiles import load_namespace, namespace_path
from recurgent._store import checksum
from recurgent._store._cli import main
from recurgent.testing import ScriptedProvider

ADD = "context['value'] = context.get('value', 0) + args[0]\nresult = context['value']"
INCREMENT = "context['memory'] = context.get('memory', 0) + 1\nresult = context['memory']"
RECORD = "context['value'].append(args[0])\nresult = len(context['value'])"


def _store(tmp_path: Path) -> Path:
    root = tmp_path / "store"
    agent = Agent(
        "calculator",
        provider=ScriptedProvider({"add": ADD, "increment": INCREMENT, "record": RECORD}),
        log=False,
        toolstore_root=root,
    )
    agent.add(1)
    agent.increment()
    agent.remember(value=[])
    agent.record(5)
    return root


def _run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    code = main(list(argv), out=out, err=err)
    return code, out.getvalue(), err.getvalue()


class TestNamespacePressure:
    """The command's text and JSON."""

    def test_text(self, tmp_path: Path) -> None:
        """The figures, each method's keys and the drift, as text."""
        root = _store(tmp_path)
        when = load_namespace(root, "calculator")["continuity_violations"][0]["at"]

        code, out, err = _run("namespace-pressure", "calculator", "--root", str(root))

        assert (code, err) == (0, "")
        assert out == (
            "namespace pressure of calculator\n"
            "  key collisions: 2\n"
            "  multi-lifetime keys: 1\n"
            "  continuity violations: 1\n"
            "  state key consistency: 0.6667 (dominant key 'value')\n"
            "  methods:\n"
            "    add: primary value; keys [value]; args:0|kwargs:none; returns numeric\n"
            "    increment: primary memory; keys [memory]; args:none|kwargs:none; returns numeric\n"
            "    record: primary value; keys [value]; args:0|kwargs:none; returns numeric\n"
            "  key lifetimes:\n"
            "    value: role, session\n"
            "    memory: role\n"
            "  recent continuity violations:\n"
            f"    {when}  increment  divergent_key  increment uses 'memory'; most use 'value'\n"
        )

    def test_json(self, tmp_path: Path) -> None:
        """--json prints the figures as one document, with the file's path."""
        root = _store(tmp_path)

        code, out, _ = _run("namespace-pressure", "calculator", "--root", str(root), "--json")

        document: dict[str, Any] = json.loads(out)
        assert code == 0
        assert {k: document[k] for k in list(document)[:6]} == {
            "role": "calculator",
            "namespace_key_collision_count": 2,
            "namespace_multi_lifetime_key_count": 1,
            "namespace_continuity_violation_count": 1,
            "state_key_consistency_ratio": 0.6667,
            "dominant_key": "value",
        }
        assert document["method_primary_keys"] == {
            "add": "value",
            "increment": "memory",
            "record": "value",
        }
        assert document["continuity_violations"][0]["code_checksum"] == checksum(INCREMENT)
        assert document["path"] == str(namespace_path(root, "calculator"))

    def test_an_unknown_role_exits_1(self, tmp_path: Path) -> None:
        """A role with no telemetry is an error on stderr, exit status 1."""
        code, out, err = _run("namespace-pressure", "nobody", "--root", str(tmp_path))

        assert (code, out) == (1, "")
        assert err == f"recurgent tools: no state-key telemetry for nobody under {tmp_path}\n"

    def test_through_the_recurgent_command(self, tmp_path: Path, capsys: Any) -> None:
        """`recurgent tools namespace-pressure ROLE --json` reaches the same command."""
        root = _store(tmp_path)

        assert (
            recurgent_main(
                ["tools", "namespace-pressure", "calculator", "--root", str(root), "--json"]
            )
            == 0
        )
        assert json.loads(capsys.readouterr().out)["namespace_key_collision_count"] == 2

    def test_a_damaged_file_is_reported_and_left(self, tmp_path: Path) -> None:
        """Read-only: a corrupt telemetry file is not moved by the command."""
        root = _store(tmp_path)
        path = namespace_path(root, "calculator")
        path.write_text("{", "utf-8")

        code, _, _ = _run("namespace-pressure", "calculator", "--root", str(root))

        assert code == 1
        assert path.read_text("utf-8") == "{"

    def test_forget_drops_the_roles_telemetry(self, tmp_path: Path) -> None:
        """`forget ROLE` removes the role's telemetry with its artifacts."""
        root = _store(tmp_path)

        assert _run("forget", "calculator", "--root", str(root))[0] == 0
        assert not namespace_path(root, "calculator").exists()


def test_an_unknown_role_with_json_prints_the_error_as_json(tmp_path: Path) -> None:
    """``namespace-pressure`` of a role with no telemetry: exit 1 and, with ``--json``, one
    JSON error document on stdout (ADR 0128)."""
    root = tmp_path / "store"
    code, out, err = _run("namespace-pressure", "nobody", "--root", str(root), "--json")

    why = f"no state-key telemetry for nobody under {root}"
    assert (code, err) == (1, f"recurgent tools: {why}\n")
    assert json.loads(out) == {
        "command": "namespace-pressure",
        "status": "error",
        "error_type": "not_found",
        "error_message": why,
    }
