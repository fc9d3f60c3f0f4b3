"""``ast.parse`` for the engine's threads: one conversion at a time.

Why: CPython 3.11 counts the depth of its C-to-Python syntax-tree conversion in one
counter per interpreter, shared by every thread (python/cpython#106905, fixed in 3.12).
When two verifications parse test files at once (``-j 2``) and a garbage collection runs
Python code in the middle of one conversion, the other thread's conversion moves the
counter and the first ends with ``SystemError: AST constructor recursion depth mismatch``:
seen once on a Docker job with two workers, which lost the whole job as an internal error.
Every parse in the engine goes through :func:`parse`, under one lock (a parse of a test
file takes milliseconds; the lock costs nothing measurable).
"""

from __future__ import annotations

import ast
import threading
from typing import Literal, overload

_LOCK = threading.Lock()


@overload
def parse(
    source: str, mode: Literal["exec"] = "exec", filename: str = "<unknown>"
) -> ast.Module: ...
@overload
def parse(source: str, mode: Literal["eval"], filename: str = "<unknown>") -> ast.Expression: ...
def parse(source: str, mode: str = "exec", filename: str = "<unknown>") -> ast.AST:
    """``ast.parse(source, filename, mode)``, never two at once in this process."""
    with _LOCK:
        return ast.parse(source, filename=filename, mode=mode)
