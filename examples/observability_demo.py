"""Observability demo: a tool builder keeps going while one of its three tools keeps failing.

``run`` delegates three tools and calls ``analyze`` on each, then twice more on the flaky one.
The flaky tool's model never writes a program, so each of its calls ends as ``invalid_code``
after two generation attempts; the builder reports the partial result. The log (6 lines: five
tool calls at depth 1, then ``run`` at depth 0) is written fresh to
``$XDG_STATE_HOME/recurgent/observability_demo.jsonl``. Read it with ``recurgent watch``.
"""

from __future__ import annotations

import json

from _offline import log_path, start

from acceptance.programs.tools import BUILDER_ROLE, PLACES_TOOL
from recurgent import Agent, Provider, ProviderRequest
from recurgent.providers.openai import OpenAIProvider


class SilentFor:
    """A provider that never writes a program for one role and asks ``inner`` for the rest."""

    def __init__(self, role: str, inner: Provider) -> None:
        self._role = role
        self._inner = inner
        # A wrapper of a test double is a test double too: its programs stay out of the
        # user's tool store (ADR 0077).
        self.test_double = getattr(inner, "test_double", False) is True

    def generate_program(self, request: ProviderRequest) -> object:
        """``None`` (no program) for the silent role, the inner provider's reply otherwise."""
        if request.role == self._role:
            return None
        return self._inner.generate_program(request)


def main() -> None:
    """Run the builder once and print its outcome and log."""
    scripted = start("observability demo")
    provider = SilentFor(PLACES_TOOL, scripted if scripted is not None else OpenAIProvider())
    log = log_path("observability_demo.jsonl")
    log.unlink(missing_ok=True)
    builder = Agent(BUILDER_ROLE, provider=provider, log=log, debug=True, max_generation_attempts=2)
    outcome = builder.run()
    print(f"Outcome status: {outcome.status}")
    print(json.dumps(outcome.value, indent=2) if outcome.is_ok else outcome)
    entries = [json.loads(line) for line in log.read_text("utf-8").splitlines() if line]
    print(f"Log: {log} ({len(entries)} entries)")
    for entry in entries:
        indent = "  " * int(entry["depth"])
        failure = f" {entry['outcome_error_type']}" if entry["outcome_error_type"] else ""
        print(
            f"  {indent}{entry['role']}.{entry['method']} -> {entry['outcome_status']}{failure}"
            f" (generation attempt {entry['generation_attempt']})"
        )


if __name__ == "__main__":
    main()
