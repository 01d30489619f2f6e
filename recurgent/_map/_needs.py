"""What a program needs from its executor, read from its syntax tree (ADR 0112).

A map checks these against the executor's ``Capabilities.serves`` after the program is known and
before any batch runs: an executor that cannot answer a forwarded call the program makes is a
``UsageError`` at once, not thousands of failed items. The reading is static and generous: a
name the program loads counts as a use, whether or not the run would reach it.
"""

from __future__ import annotations

import ast

__all__ = ["program_needs"]

_FORWARDERS = frozenset({"delegate", "tool", "remember", "content"})
_NETWORK_MODULES = frozenset({"urllib", "urllib.request", "urllib.error", "http", "http.client"})


def program_needs(tree: ast.AST) -> frozenset[str]:
    """The forwarded calls (``delegate``, ``tool``, ``remember``, ``content``) and ``network``
    (an import of ``urllib``/``http``) the program may make."""
    needs: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and node.id in _FORWARDERS:
            needs.add(node.id)
        elif isinstance(node, ast.Import):
            if any(alias.name.split(".")[0] in ("urllib", "http") for alias in node.names):
                needs.add("network")
        elif isinstance(node, ast.ImportFrom) and (node.module or "") in _NETWORK_MODULES:
            needs.add("network")
    return frozenset(needs)
