"""A calculator whose methods are written on first call and share one running value.

``calc.value = 5`` is a plain memory write; every other method is a dynamic call whose program
reads and updates ``context["value"]``. ``history()`` reads the conversation history the
runtime keeps for the agent. Run: ``python examples/calculator.py`` (or ``make demo``).
"""

from __future__ import annotations

from _offline import call_text, log_path, show, start

from recurgent import Agent


def main() -> None:
    """Run the calculator journey and print each Outcome."""
    calc = Agent("calculator", provider=start("calculator"), log=log_path())

    calc.value = 5
    print(f"{'calc.value = 5':<36}    (a memory write: no call, no log line)")
    show("add(3)", calc.add(3))
    multiplied = calc.multiply(4)
    show("multiply(4)", multiplied)
    show(f"sqrt({multiplied.value_or(0)})", calc.sqrt(multiplied.value_or(0)))
    memory = calc.runtime_context
    value = memory.get("value") if memory.get("value") is not None else memory.get("memory")
    print(f"{'value (read from memory)':<36} -> {value}")
    show("sqrt(144)", calc.sqrt(144))
    show("factorial(10)", calc.factorial(10))
    show(
        "convert(100, from='celsius', to='fahrenheit')",
        calc.convert(100, **{"from": "celsius", "to": "fahrenheit"}),
    )
    show("solve('2x + 5 = 17')", calc.solve("2x + 5 = 17"))

    history = calc.history()
    records = history.value if history.is_ok and isinstance(history.value, list) else None
    if records is None:
        records = calc.runtime_context.get("conversation_history", [])
    print(f"history() -> {len(records)} earlier calls")
    for number, record in enumerate(records, start=1):
        if isinstance(record, dict):
            method = str(record.get("method") or record.get("method_name"))
            call = call_text(method, record.get("args"), record.get("kwargs"))
            print(f"  {number}. {call} -> {record.get('value')}")
        else:
            print(f"  {number}. {record}")
    print(f"Log: {log_path()}")


if __name__ == "__main__":
    main()
