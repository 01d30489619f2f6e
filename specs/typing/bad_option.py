"""A user's mistakes ``mypy --strict`` must flag: a string where a number is declared (ADR 0099),
and an executor ``Agent.map`` does not have (ADR 0110)."""

from __future__ import annotations

from recurgent import Agent

calc = Agent.for_("calculator", execution_timeout_seconds="slow")
outcomes = calc.map("double", [1, 2], executor="gpu")
