"""The local backend's provider: where its sandboxes live, what a hardened command must
not see, and the recycling of big workspaces (a closed sandbox's folder is repaired and
handed to the next sandbox of a child snapshot, so a round boundary writes only what the
round changed).
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
import threading
from pathlib import Path

from evoround.sandboxes.common import (
    Sandbox,
    SandboxError,
    SandboxProvider,
    WrittenFolder,
    check_content,
    remove_tree,
    sweep_orphans,
    write_owner,
)
from evoround.sandboxes.local._cgroup import cgroups_available, make_cgroup, sweep_cgroups
from evoround.sandboxes.local._isolation import choose_isolation, namespaces_available
from evoround.sandboxes.local._sandbox import BACKEND, LocalSandbox
from evoround.snapshots import Snapshot, SnapshotStore, SnapshotTree
from evoround.tasks import Task, resolve_host_env

RECYCLE_MIN_BYTES = 16 << 20
"""A closed sandbox's workspace is recycled (see :meth:`LocalProvider._recycle`) only when
its snapshot is at least this big: a smaller one is written whole as fast as a difference."""
MAX_RECYCLED = 2
"""Recycled workspace folders a provider keeps (the oldest goes first)."""


def _contains(inner: Path, outer: Path) -> bool:
    """Whether covering ``inner`` would cover ``outer`` (``inner`` is ``outer`` or above it)."""
    try:
        outer.resolve().relative_to(inner)
    except ValueError:
        return False
    return True


def git_dirs(path: Path) -> list[Path]:
    """The git folders of the checkout holding ``path`` (its ``.git``; for a worktree, also
    the main repository's), if any: they hold every tracked file of the checkout, hidden
    tests and reference solutions included (``git show HEAD:.../solution/...``)."""
    with contextlib.suppress(OSError, ValueError):
        for d in [path, *path.parents]:
            g = d / ".git"
            if g.is_dir():
                return [g]
            if g.is_file():
                text = g.read_text(encoding="utf-8", errors="replace").strip()
                if not text.startswith("gitdir:"):
                    return []
                gd = (d / text.split(":", 1)[1].strip()).resolve()
                common = gd / "commondir"
                if common.is_file():
                    return [gd, (gd / common.read_text(encoding="utf-8").strip()).resolve()]
                return [gd]
    return []


class LocalProvider(SandboxProvider):
    name = BACKEND

    def __init__(
        self,
        store: SnapshotStore,
        base_dir: Path | None = None,
        *,
        harden: bool | None = None,
        hidden: list[Path] | None = None,
        persistent: bool = False,
    ) -> None:
        """``harden``: None = as ``EVOROUND_LOCAL_ISOLATION`` says (default: the best
        mechanism that works here), False = not at all; ``hidden``: more paths the agent
        must not see (the job directory); ``persistent``: the agent keeps processes between
        commands (a tmux server), so no per-command pid namespace (bubblewrap only; with
        unshare such an agent runs unhardened)."""
        self.store = store
        self.parent = Path(base_dir or Path(tempfile.gettempdir()) / "evoround-sandboxes")
        self.parent.mkdir(parents=True, exist_ok=True)
        # unpredictable; and the common parent of every provider's sandboxes is covered
        # in hardened commands, so no sandbox sees another (or a verifier's clone)
        self.base_dir = Path(tempfile.mkdtemp(prefix="job-", dir=self.parent))
        # who owns these sandboxes: a run killed with -9 leaves them to the next run
        write_owner(self.base_dir)
        # in the background (this run's own folder, just recorded, is kept): a dead agent's
        # orphan (20,000 folders deep, 50,000 entries) took two minutes to remove on a disk,
        # which every later run on the machine waited for before its first round
        self._sweeper = threading.Thread(
            target=sweep_orphans, args=(self.parent,), name="evoround-orphan-sweep", daemon=True
        )
        self._sweeper.start()
        from evoround.settings import settings

        if harden is False:
            self.isolation = "none"
        else:
            self.isolation = choose_isolation(settings().local_isolation)
            if harden and self.isolation == "none":
                self.isolation = "unshare" if namespaces_available() else "none"
        if persistent and self.isolation == "unshare":
            self.isolation = "none"  # unshare's pid namespace would kill the tmux server
        self.harden = self.isolation != "none"
        self.persistent = persistent
        sweep_cgroups()
        self.limits_how = cgroups_available()  # how pids/memory_mb bind (None: they do not)
        self._hidden = [Path(p) for p in hidden or []]
        self._recycled: list[WrittenFolder] = []
        self._lock = threading.Lock()

    def hidden_paths(self, task: Task) -> tuple[Path, ...]:
        """What a hardened command must not see (existing paths only, outermost first)."""
        from evoround.settings import evoround_home
        from evoround.tasks import library_path

        cands = [
            self.parent,
            self.store.root,
            evoround_home(),
            library_path(),
            task.path.parent,
            task.path,
            *self._hidden,
            *git_dirs(library_path()),
            *git_dirs(task.path),
        ]
        out: list[Path] = []
        for c in cands:
            with contextlib.suppress(OSError):
                c = c.resolve()
                if c.is_dir() and c != Path("/") and c not in out:
                    out.append(c)
        # a covered path must not hide the sandbox's own root's ancestors above base_dir
        return tuple(p for p in out if not _contains(p, Path(tempfile.gettempdir())))

    def close(self) -> None:
        remove_tree(self.base_dir)
        self._sweeper.join()  # the run leaves nothing half-swept behind it

    def has_snapshot(self, snapshot: Snapshot) -> bool:
        return (self.store.root / "manifests" / f"{snapshot.locator}.json").is_file()

    def snapshot_tree(self, task: Task, snapshot: Snapshot) -> SnapshotTree | None:
        if snapshot.backend != BACKEND:
            return None
        try:
            return self.store.tree(snapshot.locator)
        except FileNotFoundError:
            return None

    def create(self, task: Task, name: str, snapshot: Snapshot | None = None) -> Sandbox:
        root = Path(tempfile.mkdtemp(prefix=name.replace("/", "_") + "-", dir=self.base_dir))
        env = task.config.environment
        sb = LocalSandbox(
            root,
            self.store,
            resolve_host_env(env.env),
            hidden=self.hidden_paths(task) if self.harden else None,
            isolation=self.isolation,
            pid_namespace=not self.persistent,
            cgroup=make_cgroup(env.pids, env.memory_mb) if self.limits_how else None,
            network=env.network,
            limits=(env.max_workspace_files, env.max_workspace_mb << 20),
        )
        try:  # a sandbox never handed out is closed here: its cgroup goes with it
            if snapshot is None and task.workspace_dir.is_dir():
                shutil.copytree(task.workspace_dir, sb.workdir, dirs_exist_ok=True, symlinks=True)
            elif snapshot is not None:
                if snapshot.backend != BACKEND:
                    raise SandboxError(f"snapshot {snapshot.id} is a {snapshot.backend} snapshot")
                check_content(self.store, snapshot)
                self._write_workspace(sb, snapshot)
        except BaseException:
            sb.close()
            raise
        return sb

    @property
    def recycles(self) -> bool:
        """Whether closed workspaces may be recycled: only with bubblewrap and a pid
        namespace per command, where nothing a command started outlives it and its own
        folder is the only place it can write (so no hard link into the workspace can be
        kept anywhere a later command reaches; unshare leaves the host writable)."""
        return self.isolation == "bwrap" and not self.persistent

    def _write_workspace(self, sb: LocalSandbox, snapshot: Snapshot) -> None:
        """The snapshot into the new sandbox's workspace: from a recycled folder holding it
        or its parent when one is kept (only the difference is written), else whole."""
        folder = self._take_recycled(snapshot)
        ws = Path(sb.workdir)
        ws.rmdir()
        if folder is None:
            folder = WrittenFolder(ws)
            ws.mkdir()
            folder.write(self.store, snapshot.locator, None)
        else:
            os.rename(folder.ws, ws)  # the same file system: entries and their stamps stay
            with contextlib.suppress(OSError):
                folder.ws.parent.rmdir()  # the empty recycled-* holder
            folder.ws = ws
            folder.write(self.store, snapshot.locator, folder.holds or None)
        folder.written_bytes = snapshot.size_bytes
        folder.holds = None  # the sandbox may change it from now on
        sb.folder = folder
        if self.recycles and snapshot.size_bytes >= RECYCLE_MIN_BYTES:
            sb.on_close = self._recycle

    def _take_recycled(self, snapshot: Snapshot) -> WrittenFolder | None:
        parent = None
        if snapshot.parent:
            with contextlib.suppress(KeyError):
                parent = self.store.get(snapshot.parent).locator
        with self._lock:
            for want in (snapshot.locator, parent):
                for f in self._recycled:
                    if want and f.holds == want:
                        self._recycled.remove(f)
                        return f
            return self._recycled.pop() if self._recycled else None

    def _recycle(self, sb: LocalSandbox) -> None:
        """A closed sandbox's workspace (its commands all dead: see :attr:`recycles`), moved
        out of the sandbox and repaired to its snapshot (:meth:`WrittenFolder.repair`), for
        the next sandbox of a child snapshot: a round boundary then writes what the round
        changed instead of the whole workspace, and deletes nothing big."""
        folder = sb.folder
        if folder is None:
            return
        keep: Path | None = None
        try:
            keep = Path(tempfile.mkdtemp(prefix="recycled-", dir=self.base_dir))
            os.rename(folder.ws, keep / "ws")
            folder.ws = keep / "ws"
            ok = folder.repair(self.store)
        except Exception:  # noqa: BLE001 - a round's deadline, a provider closed meanwhile
            ok = False  # never the close's failure: the folder is simply not kept
        if not ok:
            if keep is not None:
                remove_tree(keep)
            return
        with self._lock:
            self._recycled.append(folder)
            old = self._recycled[:-MAX_RECYCLED]
            del self._recycled[: len(old)]
        for f in old:
            remove_tree(f.ws.parent)
