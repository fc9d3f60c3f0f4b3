"""Docker snapshots as trees of files, for the process checklist's diff.

``workspace`` and ``archive`` snapshots are manifests in the snapshot store, like local
ones: their tree is the store's. A ``commit`` snapshot is an image on the engine that took
it: its workdir is read once as a tar (``get_archive`` of a created, never started
container: the workspace folder, never the whole image), under the task's workspace
limits, into a store manifest; the image -> manifest answer is remembered (each snapshot
is the ``after`` of one round and the ``before`` of the next).

Where it runs: on the provider that took the snapshot, so on a cluster the worker that ran
the round reads its own engine's image (the store is the job's, shared).
"""

from __future__ import annotations

import tarfile
import threading
from collections import OrderedDict
from collections.abc import Callable

import docker
import docker.errors

from evoround.deadline import DeadlineExceeded
from evoround.sandboxes.common import SandboxError
from evoround.sandboxes.docker._config import BACKEND, is_image_locator
from evoround.sandboxes.docker._hostws import image_workspace
from evoround.snapshots import Snapshot, SnapshotStore, SnapshotTree, WorkspaceRejected
from evoround.tasks import Task

REMEMBERED_IMAGES = 256
"""Commit-mode images whose workspace manifest is remembered (a few hundred bytes each)."""


class ImageTrees:
    """The trees of one provider's snapshots (see the module docstring)."""

    def __init__(
        self,
        api: Callable[[], docker.APIClient],
        store: SnapshotStore,
        labels: dict[str, str],
    ) -> None:
        self._api, self._store, self._labels = api, store, labels
        self._lock = threading.Lock()
        self._known: OrderedDict[str, str] = OrderedDict()

    def tree(self, task: Task, snapshot: Snapshot) -> SnapshotTree | None:
        if snapshot.backend != BACKEND:
            return None
        manifest: str | None = snapshot.locator
        if is_image_locator(snapshot.locator):
            manifest = self._image_manifest(task, snapshot.locator)
            if manifest == "":
                return SnapshotTree()  # nothing in the workdir
        if manifest is None:
            return None
        try:
            return self._store.tree(manifest)
        except FileNotFoundError:
            return None

    def _image_manifest(self, task: Task, image: str) -> str | None:
        """The store manifest of ``image``'s workdir ("" when empty); None when the image
        is gone or its workspace is over the task's limits."""
        with self._lock:
            if image in self._known:
                self._known.move_to_end(image)
                return self._known[image]
        env = task.config.environment
        try:
            manifest = image_workspace(
                self._api(),
                self._store,
                image,
                env.workdir,
                self._labels,
                max_files=env.max_workspace_files,
                max_bytes=env.max_workspace_mb << 20,
            )[0]
        except (WorkspaceRejected, DeadlineExceeded, SandboxError, docker.errors.DockerException):
            return None
        except (OSError, tarfile.TarError):  # an entry the host cannot extract, a torn tar
            return None
        with self._lock:
            self._known[image] = manifest
            while len(self._known) > REMEMBERED_IMAGES:
                self._known.popitem(last=False)
        return manifest
