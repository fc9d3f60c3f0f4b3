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
  untouched (a spare), and only removed (``rmtree`` never follows links) after.

A SIGKILLed engine leaves folders that name their owner's pid; the next provider on the same
store removes those whose owner is dead (:func:`sweep_workspaces`).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

from evoround.sandboxes._local import OWNER_FILE, sweep_orphans

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
    return base_url.startswith(("http+unix://", "unix://"))


class HostFolder:
    """One container's workspace folder and what it holds (a manifest, or None: unknown)."""

    def __init__(self, root: Path, job: str) -> None:
        self.path = Path(tempfile.mkdtemp(prefix=f"{job}-", dir=root))
        (self.path / OWNER_FILE).write_text(str(os.getpid()), encoding="utf-8")
        self.ws = self.path / "ws"
        self.ws.mkdir()
        self.holds: str | None = ""
        """The manifest the folder holds exactly as the host wrote it ("" = empty), or None
        once a container may have changed it (then only emptying it first is safe)."""

    def clear(self) -> None:
        """Empty the workspace; the folder itself stays (it is the container's mount)."""
        for child in os.scandir(self.ws):
            if child.is_dir(follow_symlinks=False):
                shutil.rmtree(child.path, ignore_errors=True)
            else:
                os.unlink(child.path)
        self.holds = ""

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
