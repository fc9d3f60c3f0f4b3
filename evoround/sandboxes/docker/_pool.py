"""Prestarted spare containers, and (host-folder workspaces) what each spare already holds.

Starting a container is the slowest step of a clone (~0.4 s here), so the provider keeps
started, untouched spares per task image and configuration and refills them in the
background. With host-folder workspaces a spare also comes with its folder already
written: after a clone of snapshot S is taken, a spare holding S is prepared off the hot
path, so the clone of the next round's snapshot (whose parent is S) writes only what that
round changed. When creations are announced (a task's SR rounds, while their reference
chain is built) the pool keeps up to that many spares, plus the one it always keeps ready,
so their starts overlap the chain instead of following it one by one, and the last
announced creation does not start the next ready spare behind it (after the chain: a start
on nothing's path but the machine's, which a 2-core machine pays in wall time).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass
from typing import Any

from evoround.sandboxes.docker._hostws import HostFolder

MAX_SPARES = 3
"""Spares kept per task image and configuration (the oldest goes first)."""
MAX_EXPECTED = 16
"""At most this many spares are kept for announced creations (:meth:`SparePool.expect`)."""


@dataclass
class Spare:
    container_id: str
    folder: HostFolder | None
    """The host workspace bind-mounted at the workdir (host-folder mode only)."""


class SparePool:
    """Spares by pool key; thread-safe. Filling and removing are the provider's."""

    def __init__(self) -> None:
        self._lock = threading.Condition()
        self._spares: dict[tuple[Any, ...], list[Spare]] = {}
        self._filling: dict[tuple[tuple[Any, ...], str | None], int] = {}
        self._recycling: dict[tuple[Any, ...], int] = {}
        self._expected: dict[tuple[Any, ...], int] = {}
        """Announced creations not yet made, per key (capped at MAX_EXPECTED)."""

    def expect(self, key: tuple[Any, ...], count: int) -> int:
        """Announce ``count`` creations of ``key`` soon; returns the spares to start for them
        and the one kept ready after them (the shortfall of ready, filling and recycling
        spares)."""
        with self._lock:
            want = min(max(self._expected.get(key, 0), count), MAX_EXPECTED)
            self._expected[key] = want
            return max(0, want + 1 - self._supply(key)) if want else 0

    def _supply(self, key: tuple[Any, ...]) -> int:
        filling = sum(n for (k, _), n in self._filling.items() if k == key)
        return len(self._spares.get(key) or []) + filling + self._recycling.get(key, 0)

    def take(
        self, key: tuple[Any, ...], want: str | None, parent: str | None, wait: float = 0.0
    ) -> Spare | None:
        """The best spare for a workspace of manifest ``want`` (None: the task's initial
        one): one holding it, else one holding its parent (a small difference), else one
        holding another snapshot (most often an older ancestor: a few rounds' difference),
        else an empty one. While only empty spares are ready and a folder of this key is
        being recycled, wait for it up to ``wait`` seconds."""

        def rank(s: Spare) -> int:
            holds = s.folder.holds if s.folder else ""
            if want is not None and holds == want:
                return 0
            if parent and holds == parent:
                return 1
            return 3 if holds == "" or want is None else 2

        deadline = time.monotonic() + wait
        with self._lock:
            while True:
                spares = self._spares.get(key) or []
                best = min(spares, key=rank) if spares else None
                left = deadline - time.monotonic()
                if (best is not None and rank(best) <= 2) or not self._recycling.get(key):
                    break
                if want is None or left <= 0:
                    break
                self._lock.wait(left)
            if best is not None:
                spares.remove(best)
            if self._expected.get(key):
                self._expected[key] -= 1
            return best

    def short(self, key: tuple[Any, ...]) -> bool:
        """Whether fewer spares are ready or coming than announced creations need (or none)."""
        with self._lock:
            return self._supply(key) < max(1, self._expected.get(key, 0))

    def holding(self, key: tuple[Any, ...]) -> int:
        """Folders of this key that hold a snapshot or soon will: ready, being recycled or
        being filled."""
        with self._lock:
            ready = sum(1 for s in self._spares.get(key) or [] if s.folder and s.folder.holds)
            filling = sum(1 for k, holds in self._filling if k == key and holds)
            return ready + self._recycling.get(key, 0) + filling

    def begin_recycle(self, key: tuple[Any, ...]) -> None:
        with self._lock:
            self._recycling[key] = self._recycling.get(key, 0) + 1

    def end_recycle(self, key: tuple[Any, ...]) -> None:
        with self._lock:
            self._recycling[key] -= 1
            if not self._recycling[key]:
                del self._recycling[key]
            self._lock.notify_all()

    def begin_fill(self, key: tuple[Any, ...], holds: str | None) -> bool:
        """Claim the preparation of a spare holding ``holds``; False if one is ready or
        being prepared already (an empty one: and announced creations have enough)."""
        with self._lock:
            expected = self._expected.get(key, 0) if holds is None else 0
            if expected and self._supply(key) >= expected + 1:
                return False
            if not expected:
                if self._filling.get((key, holds)):
                    return False
                for s in self._spares.get(key) or []:
                    if (s.folder.holds if s.folder else "") == (holds or ""):
                        return False
            self._filling[(key, holds)] = self._filling.get((key, holds), 0) + 1
            return True

    def end_fill(self, key: tuple[Any, ...], holds: str | None, spare: Spare | None) -> list[Spare]:
        """Add a prepared spare; returns the spares evicted to stay within MAX_SPARES."""
        with self._lock:
            self._filling[(key, holds)] -= 1
            if not self._filling[(key, holds)]:
                del self._filling[(key, holds)]
        return [] if spare is None else self.add(key, spare)

    def add(self, key: tuple[Any, ...], spare: Spare) -> list[Spare]:
        """Add a spare; returns the spares evicted to stay within MAX_SPARES."""
        with self._lock:
            spares = self._spares.setdefault(key, [])
            spares.append(spare)
            keep = max(MAX_SPARES, self._expected.get(key, 0) + 1)
            evicted = spares[:-keep] if len(spares) > keep else []
            del spares[: len(evicted)]
            self._lock.notify_all()
            return evicted

    def drain(self) -> list[Spare]:
        with self._lock:
            out = [s for spares in self._spares.values() for s in spares]
            self._spares.clear()
            return out

    def empty(self) -> bool:
        with self._lock:
            return not any(self._spares.values())
