"""Docker workspaces as host folders, bind-mounted into their containers.

In ``workspace`` snapshot mode (the default when the daemon runs on this machine) every
container's workdir is a host folder ``<store>/docker-workspaces/<job>-<id>/ws``. A snapshot
pauses the container and walks that folder with the snapshot store's stat cache, so a round
boundary costs what the round changed, not what the workspace holds; a clone's folder is
written from the store, only the difference to what a prestarted spare already holds.

Hostile-file safety, since the host now reads what an untrusted root process wrote:

- the walk never follows a link (``lstat``, links stored as links) and keeps regular files,
  directories and links only; the container is frozen while it runs, so nothing can swap a
  directory for a link between the walk and a read;
- modes are masked to ``0o755``: no setuid, setgid or sticky bit (nor group/other write) is
  carried into a snapshot, the same bits the archive path's ``tar`` filter drops;
- containers run without ``CAP_MKNOD``, so no device node can appear in the folder, and the
  ``docker-workspaces`` folder is ``0700``: no other host user can reach what is inside;
- a hard link cannot cross into the bind mount from the container's own filesystem
  (``EXDEV``), and mounts made in the container do not propagate to the host;
- a folder is written by the host only before its container starts or while it is
  untouched (a spare), or after its container is gone: a clone's folder is then *recycled*
  (:meth:`WrittenFolder.repair`, shared with local sandboxes): every entry whose ``lstat``
  differs from what the host wrote (ctime included, which no one can set back) is removed
  and rewritten from the store,
  anything new is removed, so the folder again holds exactly the snapshot and serves the
  next clone, which then writes only what the next round changed. Writes never go through
  an existing entry (it may be a hard link the container made); ``rmtree`` never follows
  links.

A SIGKILLed engine leaves folders that name their owner (host, boot, pid and its start time:
``owner.json``); the next provider on the same store removes those whose owner is provably
dead (:func:`sweep_workspaces`), never a live engine's on another host sharing the store.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import shutil
import tarfile
import tempfile
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import docker.errors

from evoround.sandboxes.common import (
    SandboxUnavailable,
    WrittenFolder,
    remove_tree,
    sweep_orphans,
    write_owner,
)
from evoround.sandboxes.docker._archive import extract_workspace
from evoround.snapshots import Snapshot, SnapshotStore

SUBDIR = "docker-workspaces"
MODE_MASK = 0o755
"""File mode bits a snapshot of an untrusted host folder keeps."""


def workspaces_root(store_root: Path) -> Path:
    """The (private, ``0700``) parent of every host workspace of a store."""
    root = store_root / SUBDIR
    root.mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o700)
    return root


def sweep_workspaces(store_root: Path) -> list[Path]:
    """Remove host workspaces whose engine is dead (killed with -9: nothing closed them)."""
    root = store_root / SUBDIR
    return sweep_orphans(root) if root.is_dir() else []


def daemon_is_local(base_url: str) -> bool:
    """Whether bind mounts of host folders reach the daemon: a unix socket on this machine."""
    # docker-py names a unix-socket daemon "http+docker://localhost" (ssh: ".../ssh")
    return base_url in ("http+docker://localhost", "http+docker://localunixsocket")


Owner = tuple[int, int, int]
"""uid, gid and mode bits of a directory."""


def image_workspace(
    api: docker.APIClient,
    store: SnapshotStore,
    image: str,
    workdir: str,
    labels: dict[str, str],
    *,
    max_files: int | None = None,
    max_bytes: int | None = None,
) -> tuple[str, Owner]:
    """The manifest of what ``image`` ships in ``workdir`` ("" when nothing) and the owner
    and mode of that directory. A bind mount hides both, so a host workspace starts from a
    copy of the files and takes the directory's owner and mode: read from a created (never
    started) container, as the archive path would have seen them. Also how a commit-mode
    snapshot image's workspace is read (only the workdir's tar, never the whole image),
    with the task's ``max_files``/``max_bytes`` (:class:`WorkspaceRejected` past them)."""
    cid = api.create_container(image, command=["true"], labels=labels)["Id"]
    tmp = Path(tempfile.mkdtemp(prefix="evoround-imagews-"))
    owner: Owner = (0, 0, 0o755)
    stream: Any = None
    try:
        try:
            stream, _ = api.get_archive(cid, workdir)
        except docker.errors.NotFound:
            return "", owner
        chunks = iter(stream)
        head = b""
        for chunk in chunks:
            head += chunk
            if len(head) >= 512:
                break
        with contextlib.suppress(tarfile.TarError, ValueError):
            top = tarfile.TarInfo.frombuf(head[:512], "utf-8", "surrogateescape")
            if top.isdir():
                owner = (top.uid, top.gid, top.mode & 0o777)
        extract_workspace(
            itertools.chain([head], chunks), tmp, max_files=max_files, max_bytes=max_bytes
        )
        manifest = (
            store.capture_dir(tmp, max_files=max_files, max_bytes=max_bytes, mode_mask=MODE_MASK)[0]
            if any(tmp.iterdir())
            else ""
        )
        return manifest, owner
    finally:
        close = getattr(stream, "close", None)  # a stream abandoned over a limit: dropped
        if close is not None:
            with contextlib.suppress(Exception):
                close()
        shutil.rmtree(tmp, ignore_errors=True)
        with contextlib.suppress(Exception):
            api.remove_container(cid, force=True, v=True)


class ImageFacts:
    """What host workspaces need to know of a task image's workdir, asked once per image."""

    def __init__(
        self, api: Callable[[], docker.APIClient], store: SnapshotStore, labels: dict[str, str]
    ) -> None:
        self._api, self._store, self._labels = api, store, labels
        self._lock = threading.Lock()
        self._known: dict[str, tuple[str, Owner]] = {}

    def _get(self, image: str, workdir: str) -> tuple[str, Owner]:
        key = f"{image}:{workdir}"
        with self._lock:
            if key in self._known:
                return self._known[key]
        value = image_workspace(self._api(), self._store, image, workdir, self._labels)
        with self._lock:
            self._known[key] = value
        return value

    def workspace(self, image: str, workdir: str) -> str:
        """The manifest of what the image ships in ``workdir`` ("" when nothing)."""
        return self._get(image, workdir)[0]

    def adopt_owner(self, image: str, workdir: str, folder: Path) -> None:
        """Give a host workspace the owner and mode of the image's workdir (an image that
        runs as another user can write where it could without the bind mount).

        A folder that is gone was removed under its owner (by an orphan sweep that took it
        for a dead engine's, or by hand): the workspace written into it is lost, so this is
        the sandbox's failure, said plainly; making the folder again would hand the
        container an empty workspace as if it were the snapshot."""
        uid, gid, mode = self._get(image, workdir)[1]
        try:
            os.chown(folder, uid, gid)
            os.chmod(folder, mode)
        except FileNotFoundError as e:
            raise SandboxUnavailable(
                f"workspace folder {folder} was removed while in use (another engine's "
                "orphan sweep on a shared folder? see owner.json): the sandbox cannot start"
            ) from e


class HostFolder(WrittenFolder):
    """One container's workspace folder (``<path>/ws``, bind-mounted at the workdir)."""

    def __init__(self, root: Path, job: str) -> None:
        self.path = Path(tempfile.mkdtemp(prefix=f"{job}-", dir=root))
        write_owner(self.path)
        super().__init__(self.path / "ws")
        self.ws.mkdir()

    def fill(
        self, store: SnapshotStore, snapshot: Snapshot | None, image_ws: str, workspace: Path
    ) -> None:
        """Before its container is used: the snapshot, or the image's workdir (manifest
        ``image_ws``) plus the task's ``workspace``; only the difference to what it holds."""
        if self.holds is None:
            self.clear()
        if snapshot is not None:
            self.write(store, snapshot.locator, self.holds or None)
            self.written_bytes = snapshot.size_bytes
        else:
            self.written = None  # not a snapshot: nothing to recycle it to
            if image_ws or self.holds:
                want = image_ws or _empty_manifest(store)
                store.materialize(want, self.ws, over=self.holds or None)
            if workspace.is_dir():
                shutil.copytree(workspace, self.ws, dirs_exist_ok=True, symlinks=True)
        self.holds = None  # the container may change it from now on

    def remove(self) -> None:
        remove_tree(self.path)


def _empty_manifest(store: SnapshotStore) -> str:
    tmp = Path(tempfile.mkdtemp(prefix="evoround-empty-"))
    try:
        return store.capture_dir(tmp)[0]
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
