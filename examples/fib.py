"""Fibonacci(1000): a big integer, computed exactly by a generated program."""

from __future__ import annotations

from _offline import log_path, show, start

from acceptance.programs.data import FIB_ROLE
from recurgent import Agent


def main() -> None:
    """Print the thousandth Fibonacci number."""
    calculator = Agent(FIB_ROLE, provider=start("fibonacci"), log=log_path())
    outcome = calculator.fibonacci(1000)
    show("fibonacci(1000)", outcome)
    if outcome.is_ok:
        print(f"{len(str(outcome.value))} digits")
    print(f"Log: {log_path()}")


if __name__ == "__main__":
    main()
