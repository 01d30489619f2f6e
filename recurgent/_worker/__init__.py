"""The worker room: dependency environments and process-isolated execution (ADR 0039-0042).

A program that declares pip packages, or any program of an agent with ``isolation="process"``,
runs in a long-lived worker process instead of the in-process sandbox. The parent keeps the
forwarded operations (``tool``, ``delegate``, ``remember``, handle calls), the budgets and the
log; the worker only computes. This package never imports the lifecycle.
"""

from __future__ import annotations
