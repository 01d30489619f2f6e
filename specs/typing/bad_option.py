"""A user's mistake ``mypy --strict`` must flag: a string where a number is declared (ADR 0099)."""

from __future__ import annotations

from recurgent import Agent

calc = Agent.for_("calculator", execution_timeout_seconds="slow")
