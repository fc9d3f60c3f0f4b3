"""The limit on model API calls in flight, and how a job's calls find it.

Why a module of its own: agents (scaffolds) and the LLM judge (verifiers) both take a
slot, and the job (engine) sizes it; none of them may import the others.

Why a context variable, not a process-wide value: agents and the judge take their slot deep
inside a request (:func:`model_slot`), in whichever worker thread runs the unit, while the
job that sizes the limit only knows them as a scaffold and a judge config. So the job makes
a :class:`ModelLimit` and runs its units inside :func:`model_limit`; the executor starts each
worker thread in a copy of that context (:func:`in_this_context`). Two jobs in one process
(two ``api.run`` calls on two threads) each keep their own limit, and nothing is left set
when a job ends. Code outside any job (a Ray worker process, a test) is unlimited.
"""

from __future__ import annotations

import contextlib
import contextvars
import threading
from collections.abc import Callable, Iterator
from typing import ParamSpec, TypeVar


class ModelLimit:
    """At most ``n`` model API calls in flight at once (None or 0: unlimited)."""

    def __init__(self, n: int | None = None) -> None:
        self.n = n
        self._sem = threading.BoundedSemaphore(n) if n else None

    @contextlib.contextmanager
    def slot(self) -> Iterator[None]:
        """Hold one connection for the duration of a call."""
        if self._sem is None:
            yield
            return
        with self._sem:
            yield


_UNLIMITED = ModelLimit()
_CURRENT: contextvars.ContextVar[ModelLimit] = contextvars.ContextVar(
    "evoround_model_limit", default=_UNLIMITED
)

P = ParamSpec("P")
R = TypeVar("R")


@contextlib.contextmanager
def model_limit(limit: ModelLimit) -> Iterator[ModelLimit]:
    """Make ``limit`` the one every model call made in this context waits for, until the
    block ends (the previous limit is back afterwards)."""
    token = _CURRENT.set(limit)
    try:
        yield limit
    finally:
        _CURRENT.reset(token)


def in_this_context(fn: Callable[P, R]) -> Callable[P, R]:
    """``fn`` bound to a copy of the caller's context: a thread started with it sees the
    caller's limit (threads do not inherit context variables in Python 3.11). One copy per
    call, since one context cannot be entered by two threads at once."""
    ctx = contextvars.copy_context()

    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        return ctx.run(fn, *args, **kwargs)

    return run


@contextlib.contextmanager
def model_slot() -> Iterator[None]:
    """Hold one model connection of the current limit for the duration of a call (LLM
    agents and the judge wrap requests in it)."""
    with _CURRENT.get().slot():
        yield
