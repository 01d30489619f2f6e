"""Whether a program's answer depends on its inputs: a def-use (taint) walk of its syntax tree.

Cacheability (ADR 0037, 0078) reuses a program for other inputs only when what it does depends on
them. "Depends" is decided by data flow from ``args``/``kwargs``, never by the presence of the
name: ``_ = args``, ``n = len(args)``, ``if args: pass`` and ``for a in args: pass`` followed by a
constant read the inputs and ignore them.

The walk marks names *tainted* when their value may come from the inputs, and reports the
program as dependent when a tainted value (or a choice made on one) reaches a **sink**:

* the answer: a top-level ``return``, ``result`` at the end, the last expression when it is the
  inferred result, an ``Outcome.ok(...)`` built from a tainted value;
* memory: a write or mutating call on ``context``/``memory`` or anything taken from them
  (``context[k] = v``, ``context.update``, ``store = context.setdefault(...); store.append(v)``);
* forwarded calls: ``tool``, ``delegate``, ``remember`` and the handles they return;
* the network: ``urlopen``/``urlretrieve``/``open``.

It follows assignments (plain, augmented, annotated, unpacking, ``for`` and comprehension
targets, ``with ... as``, the walrus), attribute and subscript reads, calls (a call with a
tainted argument or receiver gives a tainted value and may mutate its receiver and arguments),
the program's own functions, lambdas and methods (analysed at each call with the callers'
taint, memoised), and control dependence: an assignment or sink under a branch or loop chosen
by a tainted value depends on the input, and so does code after a ``return``/``break``/
``continue`` that such a choice took.

Errors are not answers here: ``raise`` and an ``Outcome.error(...)`` carry no dependence, and a
branch that only refuses (``if not args: raise ...``) is a guard, not a choice: the code after
it does not depend on the input through it. So a program that validates its input and then
answers a constant is not reused (a wrong reuse is the harm; a missed one costs a request).

Everything is over-approximated towards "dependent" except where that would reuse a program
that ignores its input; a walk that runs past its budget (``unknown``) is treated as not
reusable by the caller. Python's print output is not a sink: it is not part of the answer.
"""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterable
from typing import Literal

from recurgent._parsing import parse_python
from recurgent._scopes import bound_names, scope_nodes
from recurgent._store._flow_calls import CallFlow, FlowState
from recurgent._store._flow_syntax import (
    FORWARDERS,
    FUNCTIONS,
    INPUT_WORDS,
    INPUTS,
    MEMORY,
    STATEFUL_MODULES,
    Aliases,
    Function,
    Signature,
    is_error,
    refuses,
    target_names,
    value_roots,
)

__all__ = ["Flow", "input_flow"]

Flow = Literal["unread", "ignored", "used", "unknown"]
"""``unread``: the code never loads ``args``/``kwargs``; ``ignored``: it loads them but no sink
depends on them; ``used``: a sink does; ``unknown``: the walk gave up (its budget ran out)."""

#: Node visits one walk may make; a 6,000-node program (the reply cap) with loops and helpers
#: needs a few tens of thousands.
_BUDGET = 200_000
#: Rounds of a loop's fixpoint; each round that changes anything taints one more name.
_LOOP_ROUNDS = 64


class _GiveUp(Exception):
    """The walk ran past its budget or its loop rounds."""


@functools.lru_cache(maxsize=256)
def input_flow(code: str) -> Flow:
    """How ``code`` uses its inputs (cached by source: it runs on every generation).

    Code that does not parse is ``used``: it never ran, so it never answered anything, and
    classifying it as reusable changes nothing (ADR 0073 repairs it if it is ever stored).
    """
    if not INPUT_WORDS.search(code):
        return "unread"
    try:
        tree = parse_python(code, "<dataflow>")
    except (SyntaxError, ValueError, RecursionError, MemoryError):
        return "used"
    if not any(
        isinstance(node, ast.Name) and node.id in INPUTS and isinstance(node.ctx, ast.Load)
        for node in ast.walk(tree)
    ):
        return "unread"
    try:
        return "used" if _Walk(tree).run() else "ignored"
    except (_GiveUp, RecursionError, MemoryError):
        return "unknown"
    except Exception:  # noqa: BLE001 - a construct the walk cannot follow is never reused
        return "unknown"


# ----------------------------------------------------------------------------- the walk


class _Walk(CallFlow):
    """One walk of one program (see the module docstring)."""

    def __init__(self, tree: ast.Module) -> None:
        self._tree = tree
        self._budget = _BUDGET
        self.sink = False
        self._functions: dict[str, list[Function]] = {}
        self._methods: dict[str, list[ast.FunctionDef | ast.AsyncFunctionDef]] = {}
        self._classes: dict[str, list[ast.ClassDef]] = {}
        self._modules: dict[str, str] = {}
        self._aliases = Aliases()
        self._groups: dict[str, frozenset[str]] = {}
        self._memory: set[str] = set()
        self._forwards: set[str] = set()
        self._signatures: dict[int, Signature] = {}
        self._memo: dict[tuple[object, ...], tuple[bool, frozenset[str], frozenset[str]]] = {}
        self._active: list[Function] = []
        self.tainted_reads = 0
        self._survey()

    # ------------------------------------------------------------------- survey

    def _survey(self) -> None:
        """Definitions, imports and aliases, read once over the whole program."""
        for node in ast.walk(self._tree):
            if isinstance(node, ast.ClassDef):
                self._classes.setdefault(node.name, []).append(node)
                for item in node.body:
                    if isinstance(item, FUNCTIONS):
                        self._methods.setdefault(item.name, []).append(item)
            elif isinstance(node, FUNCTIONS):
                self._functions.setdefault(node.name, []).append(node)
            elif isinstance(node, ast.Import):
                for alias in node.names:
                    name = alias.asname or alias.name.split(".")[0]
                    self._modules[name] = alias.name if alias.asname else name
            elif isinstance(node, ast.ImportFrom):
                for alias in node.names:
                    self._modules[alias.asname or alias.name] = node.module or ""
            elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign | ast.NamedExpr):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if node.value is None:
                    continue
                if isinstance(node.value, ast.Lambda):
                    for target in targets:
                        if isinstance(target, ast.Name):
                            self._functions.setdefault(target.id, []).append(node.value)
                self._link(targets, node.value)
            elif isinstance(node, ast.For | ast.AsyncFor | ast.comprehension):
                self._link([node.target], node.iter)
            elif isinstance(node, ast.withitem) and node.optional_vars is not None:
                self._link([node.optional_vars], node.context_expr)
        self._groups = self._aliases.groups()
        self._memory = set().union(*(self._group(name) for name in MEMORY))
        self._forwards = set().union(*(self._group(name) for name in FORWARDERS))

    def _group(self, name: str) -> frozenset[str]:
        return self._groups.get(name) or frozenset({name})

    def _link(self, targets: Iterable[ast.AST], value: ast.AST) -> None:
        sources = value_roots(value)
        # ``obj.attr = context[...]`` is not followed: a missed alias only misses a sink (a
        # program not reused), while a wrong one could find a sink that is not there.
        for target in targets:
            for name in target_names(target):
                for source in sources:
                    self._aliases.link(name, source)

    def _spend(self) -> None:
        self._budget -= 1
        if self._budget < 0:
            raise _GiveUp

    # ------------------------------------------------------------------- program

    def run(self) -> bool:
        """Whether any sink of the program depends on its inputs."""
        state = FlowState(set(INPUTS))
        body = self._tree.body
        finished = not self._block(body, state)
        if finished and not self.sink:
            if "result" in state.tainted:
                self.sink = True
            last = body[-1] if body else None
            if isinstance(last, ast.Expr) and not is_error(last.value):
                self.sink |= self._expr(last.value, state) or state.pc
        return self.sink

    # ------------------------------------------------------------------- statements

    def _block(self, body: list[ast.stmt], state: FlowState) -> bool:
        """Walk statements in order; True when the block always leaves early (the rest of it,
        and what follows it, is not reached on this path)."""
        for statement in body:
            if self.sink and not state.function:
                return False
            if self._statement(statement, state):
                return True
        return False

    def _statement(self, node: ast.stmt, state: FlowState) -> bool:
        self._spend()
        if isinstance(node, ast.Expr):
            self._expr(node.value, state)
        elif isinstance(node, ast.Assign):
            value = self._expr(node.value, state)
            for target in node.targets:
                self._bind(target, value, state, node.value)
        elif isinstance(node, ast.AnnAssign):
            if node.value is not None:
                self._bind(node.target, self._expr(node.value, state), state, node.value)
        elif isinstance(node, ast.AugAssign):
            self._augment(node, state)
        elif isinstance(node, ast.Return):
            return self._return(node, state)
        elif isinstance(node, ast.If):
            return self._if(node, state)
        elif isinstance(node, ast.For | ast.AsyncFor | ast.While):
            self._loop(node, state)
        elif isinstance(node, ast.Try | ast.TryStar):
            return self._try(node, state)
        elif isinstance(node, ast.With | ast.AsyncWith):
            for item in node.items:
                value = self._expr(item.context_expr, state)
                if item.optional_vars is not None:
                    self._bind(item.optional_vars, value, state, item.context_expr)
            return self._block(node.body, state)
        elif isinstance(node, ast.Match):
            self._match(node, state)
        elif isinstance(node, ast.Raise):
            for part in (node.exc, node.cause):
                if part is not None:
                    self._expr(part, state)
            return True
        elif isinstance(node, ast.Break | ast.Continue):
            state.escaped |= state.tainted
            state.loop_choice |= state.pc
            return True
        elif isinstance(node, ast.Delete):
            for target in node.targets:
                if isinstance(target, ast.Name):
                    state.tainted.discard(target.id)
                else:
                    self._store_into(target, False, state)
        elif isinstance(node, (*FUNCTIONS, ast.ClassDef)):
            self._define(node, state)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                name = alias.asname or alias.name
                state.tainted.discard(name.split(".")[0])
        elif isinstance(node, ast.Assert):
            self._expr(node.test, state)
        else:  # Global, Nonlocal, Pass and statements without values
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr):
                    self._expr(child, state)
        return False

    def _return(self, node: ast.Return, state: FlowState) -> bool:
        value = node.value
        refusal = is_error(value)
        tainted = self._expr(value, state) if value is not None else False
        depends = tainted or (state.pc and not refusal)
        if state.function:
            state.returned |= depends
        elif depends:
            self.sink = True
        if state.pc and not refusal:
            state.exited = True
        state.escaped |= state.tainted
        return True

    def _if(self, node: ast.If, state: FlowState) -> bool:
        chosen = self._expr(node.test, state)
        body = state.fork(pc=state.pc or (chosen and not refuses(node.orelse)))
        orelse = state.fork(pc=state.pc or (chosen and not refuses(node.body)))
        body_left = self._block(node.body, body)
        orelse_left = self._block(node.orelse, orelse)
        self._join(state, [(body, body_left), (orelse, orelse_left)])
        return body_left and orelse_left

    def _join(self, state: FlowState, branches: list[tuple[FlowState, bool]]) -> None:
        """After a choice: the names of every branch that falls through, united."""
        falling = [branch for branch, left in branches if not left]
        names: set[str] = set()
        for branch in falling or [branch for branch, _ in branches]:
            names |= branch.tainted
        state.tainted = names
        for branch, _ in branches:
            state.absorb(branch)

    def _loop(self, node: ast.For | ast.AsyncFor | ast.While, state: FlowState) -> None:
        entry = set(state.tainted)
        seen = set(entry)
        choice = state.pc
        # A break or continue chooses for this loop only, not for one around it.
        enclosing_choice = state.loop_choice
        if isinstance(node, ast.For | ast.AsyncFor):
            choice |= self._expr(node.iter, state)
        for _ in range(_LOOP_ROUNDS):
            inner = state.fork(pc=choice)
            inner.tainted = set(seen)
            if isinstance(node, ast.While):
                inner.pc |= self._expr(node.test, inner)
            else:
                self._bind(node.target, inner.pc, inner, node.iter)
            self._block(node.body, inner)
            grown = seen | inner.tainted | inner.escaped
            again = inner.pc or inner.loop_choice
            state.absorb(inner)
            if grown == seen and again == choice:
                break
            seen, choice = grown, again
        else:
            raise _GiveUp
        state.loop_choice = enclosing_choice
        state.tainted = seen | entry
        if node.orelse:
            self._block(node.orelse, state)

    def _try(self, node: ast.Try | ast.TryStar, state: FlowState) -> bool:
        before = set(state.tainted)
        reads = self.tainted_reads
        body = state.fork()
        body_left = self._block(node.body, body)
        # An exception raised by a tainted value's evaluation is a choice the input made.
        raised = self.tainted_reads > reads
        branches: list[tuple[FlowState, bool]] = []
        if not body_left:
            branches.append((body, self._block(node.orelse, body)))
        else:
            branches.append((body, True))
        entry = before | body.tainted | body.escaped
        for handler in node.handlers:
            caught = state.fork(pc=state.pc or (raised and not refuses(handler.body)))
            caught.tainted = set(entry)
            if handler.type is not None:
                self._expr(handler.type, caught)
            if handler.name:
                caught.tainted.discard(handler.name)
                if caught.pc:
                    caught.tainted.add(handler.name)
            branches.append((caught, self._block(handler.body, caught)))
        self._join(state, branches)
        left = all(left for _, left in branches)
        if node.finalbody:
            left = self._block(node.finalbody, state) or left
        return left

    def _match(self, node: ast.Match, state: FlowState) -> None:
        chosen = self._expr(node.subject, state)
        branches: list[tuple[FlowState, bool]] = [(state.fork(), False)]
        for case in node.cases:
            inner = state.fork(pc=state.pc or chosen)
            for part in ast.walk(case.pattern):
                name = getattr(part, "name", None) or getattr(part, "rest", None)
                if isinstance(name, str):
                    inner.tainted.add(name) if inner.pc else inner.tainted.discard(name)
                if isinstance(part, ast.MatchValue | ast.MatchSingleton):
                    inner.pc |= isinstance(part, ast.MatchValue) and self._expr(part.value, inner)
            if case.guard is not None:
                inner.pc |= self._expr(case.guard, inner)
            branches.append((inner, self._block(case.body, inner)))
        self._join(state, branches)

    def _define(
        self, node: ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef, state: FlowState
    ) -> None:
        heads: list[ast.expr] = list(node.decorator_list)
        if isinstance(node, ast.ClassDef):
            heads += node.bases + [k.value for k in node.keywords]
        else:
            heads += node.args.defaults + [d for d in node.args.kw_defaults if d is not None]
        tainted = self._any(heads, state) or state.pc
        # A decorator is called with the definition: what the call returns (a program function
        # returning a tainted global) or changes is the decorator's, as at any call (red team
        # R21: ``@d`` whose body returned ``x = args[0]`` was judged to ignore the input).
        for decorator in node.decorator_list:
            call = ast.Call(func=decorator, args=[ast.Name(node.name, ast.Load())], keywords=[])
            tainted |= self._call(ast.copy_location(call, decorator), state)
        if isinstance(node, ast.ClassDef):
            # The class body runs now, in its own scope: what it taints makes the class tainted,
            # a name it binds again with a tainted value too (``x = x`` of a tainted ``x``).
            body = state.fork()
            self._block(node.body, body)
            state.absorb(body)
            tainted |= bool(body.tainted - state.tainted)
            tainted |= bool(bound_names(scope_nodes(node.body)) & body.tainted)
        self._bind_name(node.name, tainted, state)

    # ------------------------------------------------------------------- stores

    def _bind(
        self, target: ast.AST, tainted: bool, state: FlowState, value: ast.AST | None
    ) -> None:
        tainted = tainted or (state.pc and not is_error(value))
        if isinstance(target, ast.Name):
            self._bind_name(target.id, tainted, state)
        elif isinstance(target, ast.Tuple | ast.List):
            for element in target.elts:
                self._bind(element, tainted, state, None)
        elif isinstance(target, ast.Starred):
            self._bind(target.value, tainted, state, None)
        else:
            self._store_into(target, tainted, state)

    @staticmethod
    def _bind_name(name: str, tainted: bool, state: FlowState) -> None:
        if tainted:
            state.tainted.add(name)
        else:
            state.tainted.discard(name)

    def _store_into(self, target: ast.AST, tainted: bool, state: FlowState) -> None:
        """``obj[k] = v``, ``obj.attr = v``, ``del obj[k]``: a change of the object ``obj``."""
        changed = tainted or state.pc
        if isinstance(target, ast.Subscript):
            changed |= self._expr(target.slice, state)
        if isinstance(target, ast.Attribute | ast.Subscript):
            self._expr(target.value, state)
        if changed:
            self._mutate(value_roots(target), state)

    def _augment(self, node: ast.AugAssign, state: FlowState) -> None:
        value = self._expr(node.value, state)
        target = node.target
        if isinstance(target, ast.Name):
            tainted = value or state.pc or target.id in state.tainted
            if (value or state.pc) and target.id in self._memory:
                self.sink = True  # += on a list taken from memory extends it in place
            self._bind_name(target.id, tainted, state)
        else:
            self._store_into(target, value or self._expr(target, state), state)

    def _mutate(self, names: Iterable[str], state: FlowState) -> None:
        """The objects these names hold may now hold a tainted value."""
        for name in names:
            for alias in self._group(name):
                if alias in self._memory:
                    self.sink = True
                if alias not in self._modules or self._modules.get(alias) in STATEFUL_MODULES:
                    state.tainted.add(alias)

    # ------------------------------------------------------------------- expressions

    def _expr(self, node: ast.AST | None, state: FlowState) -> bool:
        """Whether the value of ``node`` may come from the inputs (evaluating its effects)."""
        if node is None:
            return False
        self._spend()
        if isinstance(node, ast.Name):
            if node.id in state.tainted:
                self.tainted_reads += 1
                return True
            return False
        if isinstance(node, ast.Constant):
            return False
        if is_error(node):
            # An error carries no dependence (the module docstring); its effects still count.
            self._call(node, state)  # type: ignore[arg-type]
            return False
        if isinstance(node, ast.Call):
            return self._call(node, state)
        if isinstance(node, ast.Lambda):
            # Its defaults run now, in this scope (a walrus in them binds here), and are its
            # parameters' values when a call leaves them out (red team R21).
            spec = node.args
            positional = [*spec.posonlyargs, *spec.args][
                len(spec.posonlyargs) + len(spec.args) - len(spec.defaults) :
            ]
            taints = {
                a.arg: self._expr(d, state) for a, d in zip(positional, spec.defaults, strict=True)
            }
            taints |= {
                a.arg: self._expr(d, state)
                for a, d in zip(spec.kwonlyargs, spec.kw_defaults, strict=True)
                if d is not None
            }
            return self._function(node, taints, state, ((), ()))[0]
        if isinstance(node, ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp):
            return self._comprehension(node, state)
        if isinstance(node, ast.NamedExpr):
            value = self._expr(node.value, state)
            self._bind(node.target, value, state, node.value)
            return value
        if isinstance(node, ast.IfExp):
            chosen = self._expr(node.test, state)
            return self._expr(node.body, state) | self._expr(node.orelse, state) | chosen
        if isinstance(node, ast.Yield | ast.YieldFrom | ast.Await):
            value = self._expr(node.value, state)
            if isinstance(node, ast.Yield | ast.YieldFrom):
                if state.function:
                    state.returned |= value or state.pc
                elif value:
                    self.sink = True
            return value
        return self._any(ast.iter_child_nodes(node), state)

    def _any(self, nodes: Iterable[ast.AST], state: FlowState) -> bool:
        """Whether any of ``nodes`` is tainted; every one is evaluated, for its effects."""
        tainted = False
        for node in nodes:
            tainted |= self._expr(node, state)
        return tainted

    def _comprehension(
        self, node: ast.ListComp | ast.SetComp | ast.GeneratorExp | ast.DictComp, state: FlowState
    ) -> bool:
        inner = state.fork()
        counted = False
        for generator in node.generators:
            source = self._expr(generator.iter, inner)
            counted |= source
            self._bind(generator.target, source, inner, generator.iter)
            for condition in generator.ifs:
                counted |= self._expr(condition, inner)
        if isinstance(node, ast.DictComp):
            element = self._expr(node.key, inner) | self._expr(node.value, inner)
        else:
            element = self._expr(node.elt, inner)
        # A walrus inside binds in the enclosing scope; the loop names leak harmlessly.
        state.tainted |= inner.tainted
        state.absorb(inner)
        return counted or element
