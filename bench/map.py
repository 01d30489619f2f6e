"""Map benchmark: one program over many items against a loop of ordinary calls (issue 24).

Prints, from one run:

* ``ms per item``: ``agent.map(method, items)`` in process, against a loop of the same number of
  ordinary calls ``agent.method(item)`` answered by the stored program (the store and the log
  on, as an agent has them by default): the ratio's target is 10 (map at least ten times
  cheaper per item);
* ``items/s`` on each executor (``in_process``, ``process``, ``ray`` when Ray is installed;
  Ray's start-up is timed apart and left out);
* ``provider requests`` for ``--items`` items of a cacheable method: the target is 1.

The provider is a scripted one answering ``result = args[0] * 2`` at once, so every figure is
runtime overhead. Timings are printed, never asserted; the exit status is 0 unless an answer is
wrong. Use ``--items 2000 --loop 500`` for a smoke run.
"""

from __future__ import annotations

import argparse
import gc
import tempfile
import time
from pathlib import Path
from typing import Any

from recurgent import Agent
from recurgent.providers import ProviderRequest
from recurgent.testing import FunctionProvider

PROGRAM = "result = args[0] * 2"
RATIO_TARGET = 10.0
REQUEST_TARGET = 1


def _agent(root: Path, name: str, provider: FunctionProvider, store: str = "store") -> Any:
    return Agent.for_(
        "bench mapper",
        provider=provider,
        log=root / f"{name}.jsonl",
        toolstore_root=root / store,
    )


def _provider() -> FunctionProvider:
    def reply(request: ProviderRequest) -> str:
        return PROGRAM

    return FunctionProvider(reply)


def _check(outcomes: list[Any], items: range) -> None:
    if [o.value for o in outcomes] != [2 * n for n in items]:
        raise SystemExit("WRONG RESULT OR FAILURE")


def _timed_map(agent: Any, items: range, **options: Any) -> float:
    gc.collect()
    started = time.perf_counter()
    outcomes = agent.map("double", items, **options)
    seconds = time.perf_counter() - started
    _check(outcomes, items)
    return seconds


def main() -> None:
    """Measure and print every figure with its target."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=20_000, help="items per map")
    parser.add_argument("--loop", type=int, default=2_000, help="ordinary calls in the loop")
    parser.add_argument("--no-ray", action="store_true", help="skip the Ray row")
    options = parser.parse_args()
    items = range(options.items)
    rows: list[tuple[str, float, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        provider = _provider()
        agent = _agent(root, "map", provider)
        agent.double(0)  # stored: the loop and the maps start from the same program
        requests_before = provider.calls

        loop = range(options.loop)
        gc.collect()
        started = time.perf_counter()
        for n in loop:
            if agent.double(n).value != 2 * n:
                raise SystemExit("WRONG RESULT OR FAILURE")
        loop_ms = (time.perf_counter() - started) * 1000 / options.loop

        # A new store: the map's first item asks the provider; no other item may.
        fresh = _provider()
        in_process = _timed_map(_agent(root, "requests", fresh, store="new-store"), items)
        requests = fresh.calls
        map_ms = in_process * 1000 / options.items
        rows.append(("in_process", options.items / in_process, "first request included"))

        # Fresh agents (small memory) over the loop's store: the stored program, no request.
        mapper = _agent(root, "process", provider)
        seconds = _timed_map(mapper, items, executor="process")
        rows.append(("process (2 workers)", options.items / seconds, "workers' start-up included"))
        if not options.no_ray:
            rows.append(_ray_row(_agent(root, "ray", provider), items))
        if provider.calls != requests_before:
            raise SystemExit("WRONG RESULT OR FAILURE: a stored program was asked for again")

    ratio = loop_ms / map_ms
    verdict = "ok" if ratio >= RATIO_TARGET else "TARGET MISSED"
    print(f"{'measurement':<34} {'value':>12}  target")
    print(f"{'ordinary call, ms per item':<34} {loop_ms:>12.4f}")
    print(f"{'map in process, ms per item':<34} {map_ms:>12.4f}")
    print(f"{'ratio (call / map)':<34} {ratio:>12.1f}  >= {RATIO_TARGET:g}: {verdict}")
    verdict = "ok" if requests == REQUEST_TARGET else "TARGET MISSED"
    label = f"provider requests per {options.items} items"
    print(f"{label:<34} {requests:>12}  == {REQUEST_TARGET}: {verdict}")
    for name, rate, note in rows:
        label = f"items/s, {name}"
        print(f"{label:<34} {rate:>12.0f}  {note}")


def _ray_row(agent: Any, items: range) -> tuple[str, float, str]:
    try:
        import ray
    except ImportError:
        return ("ray", 0.0, "unavailable: pip install 'recurgent[ray]'")
    started = time.perf_counter()
    if not ray.is_initialized():
        ray.init(include_dashboard=False, configure_logging=False, log_to_driver=False)
    start_s = time.perf_counter() - started
    _timed_map(agent, range(8), executor="ray")  # actors' first start, not timed
    seconds = _timed_map(agent, items, executor="ray")
    cpus = int(ray.cluster_resources().get("CPU", 0))
    ray.shutdown()
    return (f"ray ({cpus} CPUs)", len(items) / seconds, f"ray.init took {start_s:.1f}s, apart")


if __name__ == "__main__":
    main()
