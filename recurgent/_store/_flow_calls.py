"""Calls in the input-flow walk (ADR 0078): what a call taints, the sinks a call is, the
program's own functions, methods and classes walked at each call with the callers' taint
(memoised), and what a call may change. Also the walk's state at one point of the program.

:class:`CallFlow` is the base of the walk in :mod:`._dataflow`, which supplies statements and
expressions.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from dataclasses import dataclass, field

from recurgent._store._flow_syntax import (
    FUNCTIONS,
    NETWORK_CALLS,
    PURE_BUILTINS,
    READERS,
    STATEFUL_MODULES,
    Function,
    Signature,
    is_outcome,
    signature_of,
    value_roots,
)

__all__ = ["CALL_DEPTH", "CallFlow", "FlowState"]

#: Nested analyses of the program's own functions (f calls g calls h ...).
CALL_DEPTH = 8


@dataclass(slots=True)
class FlowState:
    """The taint at one point of the program.

    Attributes:
        tainted: Names whose value may come from the inputs here.
        pc: Whether reaching this point was chosen by a tainted value (control dependence).
        function: Whether this is a function body (its ``return`` is the function's value,
            not the program's answer).
        escaped: Names tainted at a ``break``/``continue``/``return`` (for the loop's join).
        loop_choice: A ``break``/``continue`` was taken under a tainted choice.
        returned: The function returned a tainted value (or returned under a tainted choice).
        exited: A ``return`` under a tainted choice was passed: the code after depends on it.
    """

    tainted: set[str]
    pc: bool = False
    function: bool = False
    escaped: set[str] = field(default_factory=set)
    loop_choice: bool = False
    returned: bool = False
    exited: bool = False

    def fork(self, *, pc: bool | None = None) -> FlowState:
        return FlowState(
            set(self.tainted),
            self.pc if pc is None else pc,
            self.function,
            set(),
            False,
            False,
            self.exited,
        )

    def absorb(self, other: FlowState) -> None:
        """Take over what a branch learned besides its names (those are joined by the caller)."""
        self.escaped |= other.escaped
        self.loop_choice |= other.loop_choice
        self.returned |= other.returned
        if other.exited and not self.exited:
            self.exited = True
            self.pc = True


class CallFlow:
    """The calls of one walk. The walk sets the attributes and supplies ``_expr``, ``_block``
    and ``_mutate``."""

    sink: bool
    _functions: dict[str, list[Function]]
    _methods: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]]
    _classes: dict[str, list[ast.ClassDef]]
    _modules: dict[str, str]
    _memory: set[str]
    _forwards: set[str]
    _signatures: dict[int, Signature]
    _memo: dict[tuple[object, ...], tuple[bool, frozenset[str], frozenset[str]]]
    _active: list[Function]

    def _expr(self, node: ast.AST | None, state: FlowState) -> bool:
        raise NotImplementedError

    def _block(self, body: list[ast.stmt], state: FlowState) -> bool:
        raise NotImplementedError

    def _mutate(self, names: Iterable[str], state: FlowState) -> None:
        raise NotImplementedError

    def _call(self, node: ast.Call, state: FlowState) -> bool:
        func = node.func
        if isinstance(func, ast.Attribute):
            callee = self._expr(func.value, state)
        elif isinstance(func, ast.Name):
            callee = func.id in state.tainted
        else:
            callee = self._expr(func, state)
        positional = [self._expr(arg, state) for arg in node.args]
        keywords = {k.arg: self._expr(k.value, state) for k in node.keywords}
        given = any(positional) or any(keywords.values())
        roots = value_roots(func)
        effect = given or state.pc or callee
        # --- sinks
        name = func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", None)
        if effect and (roots & self._forwards or name in NETWORK_CALLS):
            self.sink = True
        if given and is_outcome(node, frozenset({"ok", "call"})):
            self.sink = True
        # A call with a tainted argument or receiver gives a tainted value (conservative for
        # the program's own functions too, whose bodies are walked for what else they do).
        value = given or callee
        mutated = False
        arguments: list[ast.expr | None] = list(node.args)
        if isinstance(func, ast.Name) and func.id in self._functions:
            for function in self._functions[func.id]:
                returned, changed = self._invoke(
                    function, arguments, positional, keywords, node, state
                )
                value |= returned
                mutated |= changed
        elif isinstance(func, ast.Name) and func.id in self._classes:
            value |= self._construct(func.id, node, positional, keywords, state)
        elif isinstance(func, ast.Attribute) and func.attr in self._methods:
            for method in self._methods[func.attr]:
                returned, changed = self._invoke(
                    method, [func.value, *arguments], [callee, *positional], keywords, node, state
                )
                value |= returned
                mutated |= changed
        # Functions handed over as values (callbacks of map, sorted, ...) run with the inputs.
        for argument in [*node.args, *(k.value for k in node.keywords)]:
            if isinstance(argument, ast.Name) and argument.id in self._functions:
                for function in self._functions[argument.id]:
                    value |= self._function(function, {"*": given}, state, ((), ()))[0]
            elif isinstance(argument, ast.Lambda):
                value |= self._function(argument, {"*": given}, state, ((), ()))[0]
        # --- what the call may change: its receiver, and the objects of its arguments
        module = self._modules.get(next(iter(roots))) if len(roots) == 1 else None
        stateful = module is not None and module.split(".")[0] in STATEFUL_MODULES
        if effect:
            if isinstance(func, ast.Attribute) and (
                stateful or (module is None and func.attr not in READERS)
            ):
                self._mutate(roots, state)
            unknown = isinstance(func, ast.Name) and not (
                func.id in PURE_BUILTINS or func.id in self._classes or func.id in self._functions
            )
            mutated |= unknown or stateful
        if mutated:
            for argument in [*node.args, *(k.value for k in node.keywords)]:
                self._mutate(value_roots(argument), state)
        return value

    def _construct(
        self,
        name: str,
        node: ast.Call,
        positional: list[bool],
        keywords: dict[str | None, bool],
        state: FlowState,
    ) -> bool:
        """A program class called: its ``__init__`` runs; the instance is tainted when the
        constructor stored a tainted value on it."""
        tainted = False
        for klass in self._classes[name]:
            for item in klass.body:
                if isinstance(item, FUNCTIONS) and item.name == "__init__":
                    returned, _ = self._invoke(
                        item,
                        [None, *node.args],
                        [False, *positional],
                        keywords,
                        node,
                        state,
                        instance=True,
                    )
                    tainted |= returned
        return tainted

    def _invoke(
        self,
        function: Function,
        arguments: list[ast.expr | None],
        positional: list[bool],
        keywords: dict[str | None, bool],
        node: ast.Call,
        state: FlowState,
        *,
        instance: bool = False,
    ) -> tuple[bool, bool]:
        """Walk a call of the program's own function with the taint of its arguments:
        (its value tainted, an argument's object changed). ``arguments``/``positional`` are
        aligned with the parameters (a bound method's receiver first). ``instance``: the
        value is the first parameter (``self`` of ``__init__``), tainted when the body
        stored a tainted value on it."""
        signature = self._signature_of(function)
        params = signature.params
        spread = any(isinstance(a, ast.Starred) for a in node.args) or any(
            k.arg is None for k in node.keywords
        )
        named = {k.arg: k.value for k in node.keywords if k.arg is not None}
        flood = spread and (any(positional) or any(keywords.values()))
        taints: dict[str, bool] = dict.fromkeys(params, flood)
        given: dict[str, ast.expr | None] = {}
        for index, param in enumerate(params):
            if index < len(positional):
                taints[param] = positional[index] or flood
                given[param] = arguments[index] if index < len(arguments) else None
            elif param in named:
                taints[param] = keywords.get(param, False) or flood
                given[param] = named[param]
        if signature.vararg:
            taints[signature.vararg] = any(positional[len(params) :]) or flood
        if signature.kwarg:
            taints[signature.kwarg] = flood or any(
                tainted for key, tainted in keywords.items() if key not in params
            )
        # Parameters given memory or a handle are memory or handles inside the function.
        memory = tuple(
            p for p, a in given.items() if a is not None and value_roots(a) & self._memory
        )
        forwards = tuple(
            p for p, a in given.items() if a is not None and value_roots(a) & self._forwards
        )
        returned, changed = self._function(function, taints, state, (memory, forwards))
        if instance and params:
            returned |= params[0] in changed
        return returned, bool(changed)

    def _signature_of(self, function: Function) -> Signature:
        signature = self._signatures.get(id(function))
        if signature is None:
            signature = self._signatures[id(function)] = signature_of(function)
        return signature

    def _function(
        self,
        function: Function,
        taints: dict[str, bool],
        state: FlowState,
        roles: tuple[tuple[str, ...], tuple[str, ...]],
    ) -> tuple[bool, frozenset[str]]:
        """Walk a function body under the caller's taint: (its value tainted, the parameters
        and outer names it tainted). ``{"*": t}`` taints every parameter alike."""
        signature = self._signature_of(function)
        everything = taints.get("*")
        if everything is not None:
            taints = {
                p: everything for p in (*signature.params, signature.vararg, signature.kwarg) if p
            }
        entering = frozenset(p for p, t in taints.items() if t)
        outer = frozenset(state.tainted & signature.free)
        key = (id(function), entering, outer, state.pc, roles)
        memo = self._memo.get(key)
        if memo is not None:
            returned, tainted_outer, changed = memo
            state.tainted |= tainted_outer
            return returned, changed
        if function in self._active or len(self._active) >= CALL_DEPTH:
            # Recursion, or too deep: the value depends on what flows in; effects unseen.
            return bool(entering or outer), frozenset()
        memory, forwards = roles
        saved = (set(self._memory), set(self._forwards))
        self._memory.update(memory)
        self._forwards.update(forwards)
        self._active.append(function)
        try:
            inner = FlowState((state.tainted - signature.local) | set(entering), state.pc, True)
            if isinstance(function, ast.Lambda):
                inner.returned = self._expr(function.body, inner)
            else:
                self._block(function.body, inner)
        finally:
            self._active.pop()
            self._memory, self._forwards = saved
        reached = inner.tainted | inner.escaped
        tainted_outer = frozenset(reached - signature.local - state.tainted)
        # Parameters that hold a tainted value only after the body ran: the body stored one
        # into the object the caller handed over (or rebound the name: over-approximated).
        changed = frozenset((reached & set(signature.params)) - entering)
        self._memo[key] = (inner.returned, tainted_outer, changed)
        state.tainted |= tainted_outer
        return inner.returned, changed
