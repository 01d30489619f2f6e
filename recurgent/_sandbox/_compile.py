"""Compiling generated code under the sandbox policy, with an LRU cache keyed by the source text.

The source is parsed within the caps of :func:`recurgent.program.parse_code` (ADR 0025) before
the policy transformer, whose cost grows with the tree, ever sees it.
"""

from __future__ import annotations

import ast
import functools
import types
from dataclasses import dataclass

from recurgent._parsing import compile_tree
from recurgent._sandbox._guards import GENERATED_FILENAME
from recurgent._sandbox._policy import SandboxPolicy
from recurgent._sandbox._qualnames import module_qualnames
from recurgent._sandbox._wrap import forgotten_result, wrap_in_main
from recurgent.errors import InvalidCodeError, RecurgentError
from recurgent.program import parse_code

__all__ = ["CompiledProgram", "compile_program"]


@dataclass(frozen=True, slots=True)
class CompiledProgram:
    """Generated code after the sandbox policy, ready to run in any number of attempts."""

    source: str
    code: types.CodeType
    tree: ast.Module
    result_inferred: bool = False


@functools.lru_cache(maxsize=256)
def compile_program(source: str) -> CompiledProgram:
    """Compile generated code under the sandbox policy (cached by source text).

    Raises:
        InvalidCodeError: a syntax error, or a construct the policy refuses (with RestrictedPython's
            ``Line N: ...`` messages, which models repair well), or any other failure while
            compiling (the sandbox's own, named as such: ADR 0148).
    """
    tree = parse_code(source, filename=GENERATED_FILENAME)
    original = parse_code(source, filename=GENERATED_FILENAME)
    forgotten = forgotten_result(original)
    if forgotten is not None:
        raise InvalidCodeError(f"Generated code produces no result: {forgotten}")
    tree.body = [
        node
        for node in tree.body
        if not (isinstance(node, ast.ImportFrom) and node.module == "__future__")
    ]
    errors: list[str] = []
    try:
        transformed = SandboxPolicy(errors, [], {}).visit(tree)
        if errors:
            raise InvalidCodeError("Generated code breaks the sandbox policy: " + "; ".join(errors))
        wrapped = wrap_in_main(transformed, original)
        code = compile_tree(wrapped.module, GENERATED_FILENAME)
        # Named as in a module (`f`, `A.m`), not `__recurgent_main__.<locals>.f` (ADR 0145).
        code = module_qualnames(code)
    except RecurgentError:
        raise
    except SyntaxError as error:
        raise InvalidCodeError(
            f"Generated code has invalid Python syntax: line {error.lineno}: {error.msg}"
        ) from None
    except ValueError as error:
        # CPython's compiler refuses some trees the policy produces from valid source
        # (`case Color.RED:` once its attribute read is guarded): the program's problem.
        raise InvalidCodeError(
            f"Generated code uses a construct the sandbox cannot compile: {error}; "
            "for a match on a constant, compare with == instead"
        ) from None
    except RecursionError:
        # The depth cap keeps ordinary stacks clear; a caller already deep in nested delegations
        # may still run out, and that is the program's size, not a host failure.
        raise InvalidCodeError(
            "Generated code is nested too deeply to compile; split long expressions into statements"
        ) from None
    except MemoryError:
        raise InvalidCodeError(
            "Generated code is too large to compile; write a shorter program"
        ) from None
    except Exception as error:
        # A bug of the policy or its compile steps on some valid program (red teams R20, R22
        # found two): the program cannot run as written, and the call says so, not that the
        # provider failed. Another way of writing it usually compiles (ADR 0148).
        raise InvalidCodeError(
            "Generated code could not be compiled by the sandbox (an internal error: "
            f"{type(error).__name__}: {str(error)[:300]}); write the failing statement another way"
        ) from error
    return CompiledProgram(
        source=source, code=code, tree=original, result_inferred=wrapped.result_inferred
    )
