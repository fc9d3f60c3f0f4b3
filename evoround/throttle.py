"""The limit on model API calls in flight, and the one a process's calls wait for.

Why a module of its own: agents (scaffolds) and the LLM judge (verifiers) both take a
slot, and the job (engine) sizes it; none of them may import the others.

Why the process holds one: agents and the judge take their slot deep inside a request
(:func:`model_slot`), in whichever worker thread runs the unit, while the job that sizes the
limit only knows them as a scaffold and a judge config. So the job makes a
:class:`ModelLimit` and installs it (:func:`use_model_limit`) before any unit starts; a Ray
worker process installs none and is unlimited, as before.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field


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


@dataclass
class _Installed:
    """The process's current limit (one box, replaced whole, never a ``global`` rebind)."""

    limit: ModelLimit = field(default_factory=ModelLimit)


_PROCESS = _Installed()


def use_model_limit(limit: ModelLimit) -> None:
    """Make ``limit`` the one every model call of this process waits for."""
    _PROCESS.limit = limit


def set_model_connections(n: int | None) -> None:
    """Size the process-wide model connection limit (None: unlimited)."""
    use_model_limit(ModelLimit(n))


@contextlib.contextmanager
def model_slot() -> Iterator[None]:
    """Hold one model connection of the process's limit for the duration of a call (LLM
    agents and the judge wrap requests in it)."""
    with _PROCESS.limit.slot():
        yield
