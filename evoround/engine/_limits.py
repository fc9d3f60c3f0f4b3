"""Separate limits for the three scarce things a job uses at once.

Why separate: attempts, containers, image builds and model connections saturate at
different levels (a daemon chokes on parallel builds long before it minds 8 running
containers; an API rate limit is independent of both). Each is a semaphore; waiting
on one is the backpressure, nothing queues unboundedly.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from evoround.sandboxes import Sandbox, SandboxProvider
from evoround.snapshots import Snapshot, SnapshotTree
from evoround.tasks import Task


@dataclass(frozen=True)
class Limits:
    concurrency: int = 1
    """Attempts (MT attempts or SR rounds) running at once."""
    containers: int | None = None
    """Attempts holding a live sandbox at once (default: ``concurrency``). An attempt's
    transient verification clone does not take a second slot, so this cannot deadlock."""
    image_builds: int = 1
    """Task image builds at once (Docker)."""
    model_connections: int | None = None
    """Model API calls in flight at once (None: unlimited); agents take :func:`model_slot`."""


class LimitedProvider(SandboxProvider):
    """A provider whose ``create`` waits for a container slot (and whose image builds wait
    for a build slot), delegating everything else to the wrapped provider.

    The slot is per thread and re-entrant: an attempt's nested sandboxes (verification
    clone) ride on its slot, so N slots can never all wait on each other. A task's reference
    chain is built on a thread of its own and takes a slot of its own: every caller asks for
    its reference state before it opens a sandbox, so no slot is held while it waits.
    """

    def __init__(self, inner: SandboxProvider, limits: Limits) -> None:
        self.inner = inner
        self.name = inner.name
        self._slots = threading.BoundedSemaphore(limits.containers or limits.concurrency)
        self._local = threading.local()
        build = getattr(inner, "task_image", None)
        if build is not None:
            build_sem = threading.BoundedSemaphore(max(1, limits.image_builds))
            built: dict[str, Any] = {}

            def task_image(task: Task, _build: Callable[[Task], Any] = build) -> Any:
                # an image already had is returned without the build slot: every container
                # start asks for its image, and must not wait for another task's build
                hit = built.get(task.digest)
                if hit is not None:
                    return hit
                with build_sem:
                    img = _build(task)
                built[task.digest] = img
                return img

            # Instance attribute: the Docker provider's own create() calls it too. Only
            # providers that build images have one, so the base class does not declare it.
            inner.task_image = task_image  # type: ignore[attr-defined]  # checked above

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def base_images(self, tasks: list[Task]) -> dict[str, str]:
        return self.inner.base_images(tasks)

    def create(self, task: Task, name: str, snapshot: Snapshot | None = None) -> Sandbox:
        held = getattr(self._local, "held", 0)
        if held == 0:
            self._slots.acquire()
        self._local.held = held + 1
        released = False

        def release() -> None:
            nonlocal released
            if not released:
                released = True
                self._local.held -= 1
                if self._local.held == 0:
                    self._slots.release()

        try:
            sb = self.inner.create(task, name, snapshot)
        except BaseException:
            release()
            raise
        close = sb.close

        def close_and_release() -> None:
            try:
                close()
            finally:
                release()

        # The sandbox's own close, extended: every way it is closed (close(), its context
        # manager, the provider on abort) releases the slot.
        sb.close = close_and_release  # type: ignore[method-assign]  # see above
        return sb

    def has_snapshot(self, snapshot: Snapshot) -> bool:
        return self.inner.has_snapshot(snapshot)

    def snapshot_tree(self, task: Task, snapshot: Snapshot) -> SnapshotTree | None:
        return self.inner.snapshot_tree(task, snapshot)

    def initial_tree(self, task: Task) -> SnapshotTree:
        return self.inner.initial_tree(task)

    def close(self) -> None:
        self.inner.close()
