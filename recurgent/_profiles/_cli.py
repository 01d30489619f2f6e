"""``recurgent tools namespace-pressure ROLE``: a role's state-key telemetry (ADR 0084).

Called by the ``recurgent tools`` command (:mod:`recurgent._store._cli`), which parses the
arguments and escapes everything printed (ADR 0071). Read-only: a damaged file is reported,
never moved.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, TextIO

from recurgent._cli_shared import refuse
from recurgent._profiles._namespace import load_namespace, namespace_path, pressure

__all__ = ["namespace_pressure"]


def _line(label: str, value: Any) -> str:
    return f"  {label}: {value}\n"


def namespace_pressure(role: str, root: Path, *, as_json: bool, out: TextIO, err: TextIO) -> int:
    """Print the namespace pressure of ``role``; 1 when nothing is recorded for it."""
    path = namespace_path(root, role)
    record = load_namespace(root, role, quarantine_corrupt=False)
    if not record:
        why = f"no state-key telemetry for {role} under {root}"
        return refuse("namespace-pressure", "not_found", why, as_json=as_json, out=out, err=err)
    figures = {**pressure(record, role), "path": str(path)}
    if as_json:
        out.write(json.dumps(figures, indent=2, ensure_ascii=False) + "\n")
        return 0
    out.write(f"namespace pressure of {role}\n")
    out.write(_line("key collisions", figures["namespace_key_collision_count"]))
    out.write(_line("multi-lifetime keys", figures["namespace_multi_lifetime_key_count"]))
    out.write(_line("continuity violations", figures["namespace_continuity_violation_count"]))
    dominant = figures["dominant_key"]
    ratio = figures["state_key_consistency_ratio"]
    out.write(
        _line(
            "state key consistency",
            f"{ratio:g}" + (f" (dominant key {dominant!r})" if dominant else ""),
        )
    )
    out.write("  methods:\n")
    shapes, signatures = figures["method_return_shapes"], figures["method_signatures"]
    for method, keys in figures["method_state_keys"].items():
        primary = figures["method_primary_keys"].get(method, "-")
        details = [f"primary {primary}", f"keys [{', '.join(keys)}]"]
        if method in signatures:
            details.append(signatures[method])
        if method in shapes:
            details.append(f"returns {shapes[method]}")
        out.write(f"    {method}: {'; '.join(details)}\n")
    if figures["state_key_lifetimes"]:
        out.write("  key lifetimes:\n")
        for key, lifetimes in figures["state_key_lifetimes"].items():
            out.write(f"    {key}: {', '.join(lifetimes)}\n")
    events = figures["continuity_violations"]
    if events:
        out.write("  recent continuity violations:\n")
        for event in events[-10:]:
            out.write(
                f"    {event.get('at')}  {event.get('method')}  {event.get('kind')}  "
                f"{event.get('detail')}\n"
            )
    return 0
