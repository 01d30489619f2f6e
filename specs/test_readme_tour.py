"""The README's five-minute tour runs as written (ADR 0116).

Its Python blocks are read from README.md and run in order, in one namespace, through the real
OpenAI provider against a loopback fake of the OpenAI API (``OPENAI_BASE_URL``, no key): the fake
answers each method with the program a model would write. What the blocks print must be the
README's ``The tour prints:`` block exactly, and the persisted ``add`` must run without a request.
Editing the tour's code or its printed output without the other fails here.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from specs.providers.fake_openai_server import FakeOpenAIServer, FakeReply
from specs.providers.support import isolate_provider_env

README = Path(__file__).resolve().parent.parent / "README.md"
TOUR_HEADING = "## A five-minute tour"

# What a model writes for each (role, method) the tour calls.
PROGRAMS = {
    ("calculator", "add"): (
        'context["value"] = context.get("value", 0) + args[0]\nresult = context["value"]'
    ),
    ("calculator", "divide"): (
        "if args[1] == 0:\n"
        '    result = Outcome.error("division_by_zero", "cannot divide by zero")\n'
        "else:\n"
        "    result = args[0] / args[1]"
    ),
    ("calculator", "square"): "result = args[0] * args[0]",
    ("unit converter", "celsius_to_fahrenheit"): "result = args[0] * 9 / 5 + 32",
}


def tour_section(text: str) -> str:
    """The README's tour: from its heading to the next second-level heading."""
    start = text.index(TOUR_HEADING)
    end = text.find("\n## ", start + len(TOUR_HEADING))
    return text[start : end if end != -1 else len(text)]


def fenced_blocks(section: str, language: str) -> list[str]:
    """The bodies of the section's fenced blocks tagged ``language``, in order."""
    return re.findall(rf"^```{language}\n(.*?)^```$", section, flags=re.DOTALL | re.MULTILINE)


def _invocation(body: dict[str, Any]) -> tuple[str, str]:
    user = next(
        message["content"] for message in reversed(body["messages"]) if message["role"] == "user"
    )
    role = re.search(r"<role>(.*?)</role>", user)
    method = re.search(r"<method>(.*?)</method>", user)
    assert role is not None and method is not None, user
    return role.group(1), method.group(1)


def _answer(body: dict[str, Any]) -> FakeReply:
    return FakeReply.ok({"code": PROGRAMS[_invocation(body)], "dependencies": []})


@pytest.fixture
def fake_openai(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    isolate_provider_env(monkeypatch, tmp_path / "home")
    with FakeOpenAIServer(_answer) as server:
        monkeypatch.setenv("OPENAI_BASE_URL", server.base_url)
        monkeypatch.setenv("RECURGENT_MODEL", "gpt-4.1-mini")
        yield server


class TestTheTourRunsAsWritten:
    """README.md's tour, run block by block against the fake model."""

    def test_the_tour_has_its_parts(self) -> None:
        """Five Python blocks (construct, Outcome, persistence, aio, delegate) and one output."""
        section = tour_section(README.read_text("utf-8"))
        code = "\n".join(fenced_blocks(section, "python"))

        assert len(fenced_blocks(section, "python")) == 5
        assert len(fenced_blocks(section, "text")) == 1
        for needle in ("Agent.for_(", ".unwrap()", ".ok", ".aio.", ".delegate(", "calc.value ="):
            assert needle in code, needle

    def test_prints_what_the_readme_says(
        self, fake_openai: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """The blocks' stdout is the README's output block, line for line."""
        section = tour_section(README.read_text("utf-8"))
        namespace: dict[str, Any] = {"__name__": "tour"}

        for block in fenced_blocks(section, "python"):
            exec(compile(block, "README.md (tour)", "exec"), namespace)

        (expected,) = fenced_blocks(section, "text")
        assert capsys.readouterr().out == expected

    def test_the_stored_add_asks_no_model(
        self, fake_openai: FakeOpenAIServer, capsys: pytest.CaptureFixture[str]
    ) -> None:
        """``add`` is asked for once: the second agent's ``add`` ran the stored program. (The two
        concurrent ``square`` calls may both ask, or the second may find the first's program.)"""
        section = tour_section(README.read_text("utf-8"))
        namespace: dict[str, Any] = {"__name__": "tour"}

        for block in fenced_blocks(section, "python"):
            exec(compile(block, "README.md (tour)", "exec"), namespace)

        asked = [_invocation(request.body) for request in fake_openai.requests]
        assert asked.count(("calculator", "add")) == 1
        assert set(asked) == set(PROGRAMS)
        assert capsys.readouterr().out.splitlines()[5] == "3"
