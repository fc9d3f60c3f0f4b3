"""One deadline for the harness work of a round: snapshot, copy and verification.

Why a module of its own: the engine sets the deadline, but the loops that a hostile
workspace can make slow live below it (the snapshot store's capture and restore, the
Docker archive streams), and none of them may import the engine. The deadline travels in
a context variable of the round's thread; each loop calls :func:`check` once per entry,
so the work stops within one file of the deadline instead of holding the round.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from contextvars import ContextVar

_deadline: ContextVar[float | None] = ContextVar("evoround_deadline", default=None)


class DeadlineExceeded(Exception):
    """The round's harness work ran past its deadline (``what`` names the step)."""

    def __init__(self, what: str) -> None:
        super().__init__(f"{what} ran past the round's verification deadline")
        self.what = what


@contextlib.contextmanager
def deadline(at: float | None) -> Iterator[None]:
    """Within this block, :func:`check` raises once ``time.monotonic()`` passes ``at``."""
    token = _deadline.set(at)
    try:
        yield
    finally:
        _deadline.reset(token)


def remaining() -> float | None:
    """Seconds left before the current deadline (None: no deadline)."""
    at = _deadline.get()
    return None if at is None else at - time.monotonic()


def check(what: str) -> None:
    """Raise :class:`DeadlineExceeded` if the current deadline has passed."""
    at = _deadline.get()
    if at is not None and time.monotonic() > at:
        raise DeadlineExceeded(what)
