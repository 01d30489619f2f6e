"""Host-built and program-built agents in one store: whose program answers whom (ADR 0074).

The providers stand for real models (`ScriptedModel`): these specs are about authors, not test
doubles (ADR 0077)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from recurgent import Agent
from recurgent._store import Store
from recurgent._store._paths import artifact_path
from recurgent.testing import ScriptedProvider, read_log
from specs.store.support import ScriptedModel

HOST_ADD = "return args[0] + 1"
PLANTED_ADD = "return 42 if args[0] != 'never' else args[0]"
# Reads its input, so the reader's own program is reusable (ADR 0037).
PLANT = "return delegate('calculator').add(len(args[0])).value"


def _stored(root: Path, role: str = "calculator", method: str = "add") -> dict[str, Any]:
    Store(root).flush()
    return dict(json.loads(artifact_path(root, role, method).read_text("utf-8")))


def _host(root: Path, log: Path | None = None) -> tuple[Agent, ScriptedProvider]:
    provider = ScriptedModel({("calculator", "add"): HOST_ADD})
    return Agent("calculator", provider=provider, log=log or False, toolstore_root=root), provider


def _reader(root: Path, code: str = PLANT, **more: str) -> tuple[Agent, ScriptedProvider]:
    """A host-built agent whose generated program reaches the calculator role."""
    replies: dict[Any, str] = {("reader", "summarize"): code, ("calculator", "add"): PLANTED_ADD}
    replies.update({("calculator", name): reply for name, reply in more.items()})
    provider = ScriptedModel(replies)
    return Agent("reader", provider=provider, log=False, toolstore_root=root), provider


class TestHostAgentsRefuseProgramCode:
    """The host's own agents never run a program-written program without a request."""

    def test_the_host_regenerates_and_then_owns_the_key(self, tmp_path: Path) -> None:
        """Planted 42 -> the host asks once, answers 2, and its later calls reuse its own
        program with no request."""
        root = tmp_path / "store"
        _reader(root)[0].summarize("headline")
        assert _stored(root)["author"] == "program"
        host, provider = _host(root)

        values = [host.add(1).value, host.add(10).value]

        assert (values, provider.calls) == ([2, 11], 1)
        assert (_stored(root)["author"], _stored(root)["code"]) == ("host", HOST_ADD)

    def test_the_log_says_why_the_stored_program_did_not_run(
        self, tmp_path: Path, log_path: Path
    ) -> None:
        """program_written, then hit once the host's program is stored."""
        root = tmp_path / "store"
        _reader(root)[0].summarize("headline")
        host, _ = _host(root, log_path)

        host.add(1)
        host.add(2)

        assert [(e["artifact_lookup"], e["program_source"]) for e in read_log(log_path)] == [
            ("program_written", "generated"),
            ("hit", "persisted"),
        ]

    def test_a_new_process_agent_is_the_host_too(self, tmp_path: Path) -> None:
        """``Agent.for_`` in a later session (a fresh Store) refuses the planted program."""
        root = tmp_path / "store"
        _reader(root)[0].summarize("headline")
        provider = ScriptedModel({"add": HOST_ADD})

        later = Agent.for_("calculator", provider=provider, log=False, toolstore_root=root)

        assert (later.add(1).value, provider.calls) == (2, 1)

    def test_host_delegate_makes_a_host_child(self, tmp_path: Path) -> None:
        """``parent.delegate(role)`` from host code is the host's: it refuses planted code,
        and its own program answers the host's ``Agent(role)`` later with no request."""
        root = tmp_path / "store"
        _reader(root)[0].summarize("headline")
        provider = ScriptedModel({("calculator", "add"): HOST_ADD})
        parent = Agent("desk", provider=provider, log=False, toolstore_root=root)

        assert parent.delegate("calculator").add(1).value == 2
        host, host_provider = _host(root)
        assert (host.add(3).value, provider.calls, host_provider.calls) == (4, 1, 0)

    def test_host_delegate_does_not_hand_back_the_programs_child(self, tmp_path: Path) -> None:
        """A child the parent's program made under the same name and options is replaced by a
        host-built one for host code; it runs the host's program, not the planted one."""
        root = tmp_path / "store"
        reader, provider = _reader(root, code="h = delegate('calculator')\nreturn h.add(5).value")
        assert reader.summarize("headline").value == 42
        programs_child = reader.tool("calculator")

        own = reader.delegate("calculator")

        assert own is not programs_child
        assert reader.tool("calculator") is own
        assert (own.add(1).value, len(provider.requests_for("add"))) == (42, 2)


class TestProgramAgentsReuse:
    """Program-built agents keep every reuse they had: the host's programs and their own."""

    def test_a_program_child_runs_the_hosts_program_with_no_request(self, tmp_path: Path) -> None:
        """The host's stored calculator.add answers the program's delegate: 9, no request."""
        root = tmp_path / "store"
        _host(root)[0].add(1)
        reader, provider = _reader(root)

        assert (reader.summarize("headline").value, provider.requests_for("add")) == (9, [])
        assert _stored(root)["author"] == "host"
        assert _stored(root)["success_count"] == 2

    def test_program_children_reuse_their_own_programs(self, tmp_path: Path) -> None:
        """A second run of the same parent program costs no request for its child."""
        root = tmp_path / "store"
        first, first_provider = _reader(root)
        first.summarize("one")
        again, provider = _reader(root)

        assert (again.summarize("two").value, provider.calls) == (42, 0)
        assert first_provider.calls == 2

    def test_a_program_child_never_replaces_host_code(self, tmp_path: Path, log_path: Path) -> None:
        """A child with its own contract (another fingerprint) generates for itself; its
        program is not stored over the host's (``host_written``), so the host still hits."""
        root = tmp_path / "store"
        _host(root)[0].add(1)
        reader = Agent(
            "reader",
            provider=ScriptedModel(
                {
                    ("reader", "summarize"): (
                        "return delegate('calculator', purpose='add').add(5).value"
                    ),
                    ("calculator", "add"): PLANTED_ADD,
                }
            ),
            log=log_path,
            toolstore_root=root,
        )

        assert reader.summarize("headline").value == 42
        child = next(e for e in read_log(log_path) if e["role"] == "calculator")
        assert (child["artifact_lookup"], child["artifact_write"]) == (
            "contract_mismatch",
            "host_written",
        )
        host, provider = _host(root)
        assert (host.add(1).value, provider.calls) == (2, 0)

    def test_a_repair_for_a_program_child_is_not_stored(
        self, tmp_path: Path, log_path: Path
    ) -> None:
        """The host's program fails for the program's input: each such call is repaired (one
        request) and answers, the repair never replaces the host's code or spends its budget."""
        root = tmp_path / "store"
        host = Agent(
            "calculator",
            provider=ScriptedModel({"invert": "return 100 // args[0]"}),
            log=False,
            toolstore_root=root,
        )
        host.invert(4)
        provider = ScriptedModel(
            {
                ("reader", "summarize"): "return delegate('calculator').invert(args[0]).value",
                ("calculator", "invert"): "return 0 if args[0] == 0 else 100 // args[0]",
            }
        )
        reader = Agent("reader", provider=provider, log=log_path, toolstore_root=root)

        values = [reader.summarize(0).value, reader.summarize(0).value]

        assert (values, len(provider.requests_for("invert"))) == ([0, 0], 2)
        child = [e for e in read_log(log_path) if e["role"] == "calculator"]
        assert [(e["program_source"], e["artifact_write"]) for e in child] == [
            ("repaired", "host_written"),
            ("repaired", "host_written"),
        ]
        stored = _stored(root, method="invert")
        assert (stored["code"], stored["author"], stored["repair_count_since_regen"]) == (
            "return 100 // args[0]",
            "host",
            0,
        )

    def test_children_of_program_children_are_the_programs(self, tmp_path: Path) -> None:
        """A grandchild made by a program-built child's own program writes program code."""
        root = tmp_path / "store"
        provider = ScriptedModel(
            {
                ("reader", "summarize"): "return delegate('relay').run().value",
                ("relay", "run"): "return delegate('calculator').add(5).value",
                ("calculator", "add"): PLANTED_ADD,
            }
        )
        Agent("reader", provider=provider, log=False, toolstore_root=root).summarize("x")

        assert _stored(root)["author"] == "program"
        assert _stored(root, "relay", "run")["author"] == "program"
        host, host_provider = _host(root)
        assert (host.add(1).value, host_provider.calls) == (2, 1)

    def test_the_parents_own_program_stays_the_hosts(self, tmp_path: Path) -> None:
        """The host agent whose program delegated is the host's: its program answers again
        with no request, and so does the child's."""
        root = tmp_path / "store"
        _reader(root)[0].summarize("one")
        again, provider = _reader(root)

        again.summarize("two")

        assert (_stored(root, "reader", "summarize")["author"], provider.calls) == ("host", 0)


class TestProgramCallsOnHostAgents:
    """A host-built agent called by generated code is not called by the host."""

    def test_a_handle_call_writes_program_code(self, tmp_path: Path) -> None:
        """The parent's program reaches the host's own child through tool(): what that call
        generates is the program's, and the host's Agent(role) does not run it."""
        root = tmp_path / "store"
        reader, _ = _reader(root, code="return tool('calculator').add(5).value")
        hosts_child = reader.delegate("calculator")

        assert reader.summarize("headline").value == 42
        assert _stored(root)["author"] == "program"
        assert reader.tool("calculator") is hosts_child
        host, provider = _host(root)
        assert (host.add(1).value, provider.calls) == (2, 1)

    @pytest.mark.slow
    def test_a_handle_call_from_a_worker_process_is_the_programs_too(self, tmp_path: Path) -> None:
        """Under ``isolation="process"`` the call comes back over the worker's bridge: it is
        still the program's, and its program is stored as such."""
        root = tmp_path / "store"
        provider = ScriptedModel(
            {
                ("reader", "summarize"): "return tool('calculator').add(len(args[0])).value",
                ("calculator", "add"): PLANTED_ADD,
            }
        )
        reader = Agent(
            "reader", provider=provider, log=False, toolstore_root=root, isolation="process"
        )
        reader.delegate("calculator")

        assert reader.summarize("headline").value == 42
        assert _stored(root)["author"] == "program"

    def test_a_handle_call_still_reuses_anything(self, tmp_path: Path) -> None:
        """The same call reuses a program-written program with no request."""
        root = tmp_path / "store"
        _reader(root)[0].summarize("one")
        reader, provider = _reader(root, code="return tool('calculator').add(5).value")
        reader.delegate("calculator")

        assert (reader.summarize("two").value, provider.requests_for("add")) == (42, [])


class TestProgramAgentsInHostHands:
    """An agent a program built stays the program's wherever it is called from."""

    def test_an_agent_returned_by_a_program_is_the_programs(self, tmp_path: Path) -> None:
        """Host code calling the returned agent runs (and writes) program code; the host's
        own agent is untouched by it."""
        root = tmp_path / "store"
        reader, _ = _reader(root, code="return delegate('calculator')")
        returned = reader.summarize("headline").value
        assert isinstance(returned, Agent)

        assert returned.add(1).value == 42
        assert _stored(root)["author"] == "program"
        host, provider = _host(root)
        assert (host.add(1).value, provider.calls) == (2, 1)

    def test_tool_reaches_a_registered_tool_as_the_programs(self, tmp_path: Path) -> None:
        """``tool(name)`` from host code builds the registered tool as the program's: it runs
        the tool's stored programs with no request (issue 11)."""
        root = tmp_path / "store"
        code = "return delegate('calculator', purpose='add').add(len(args[0])).value"
        _reader(root, code=code)[0].summarize("headline")
        provider = ScriptedModel({("calculator", "add"): HOST_ADD})
        other = Agent("desk", provider=provider, log=False, toolstore_root=root)

        tool = other.tool("calculator")

        assert (tool.add(1).value, provider.calls) == (42, 0)
        assert tool._agent.built_by_program is True


class TestLegacyArtifacts:
    """An artifact without an author (written before ADR 0074) is nobody's."""

    def _legacy(self, root: Path) -> None:
        _host(root)[0].add(1)
        path = artifact_path(root, "calculator", "add")
        data = _stored(root)
        del data["author"]
        path.write_text(json.dumps(data), "utf-8")

    def test_the_host_regenerates_it_once(self, tmp_path: Path, log_path: Path) -> None:
        """author_unknown -> one request, then the host's program is stored and reused."""
        root = tmp_path / "store"
        self._legacy(root)
        host, provider = _host(root, log_path)

        host.add(1)
        host.add(2)

        assert provider.calls == 1
        assert read_log(log_path)[0]["artifact_lookup"] == "author_unknown"
        assert _stored(root)["author"] == "host"

    def test_a_program_child_still_reuses_it(self, tmp_path: Path) -> None:
        """A program-built agent runs it with no request, as before."""
        root = tmp_path / "store"
        self._legacy(root)
        reader, provider = _reader(root)

        assert (reader.summarize("x").value, provider.requests_for("add")) == (2, [])
