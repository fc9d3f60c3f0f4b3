"""A workspace folder the host wrote from the snapshot store, and how to put it back.

A host-written folder is *recycled* after its sandbox is gone instead of deleted and
written again: :meth:`WrittenFolder.repair` removes every entry whose ``lstat`` differs
from what the host wrote (ctime included, which no one can set back) and anything new,
then rewrites those from the store, so the folder again holds exactly the snapshot and the
next sandbox of a child snapshot gets it by writing only what that round changed. Writes
never go through an existing entry (it may be a hard link someone made); a removal never
follows links (:func:`remove_tree`). Used by Docker host-folder workspaces and by local
sandboxes (see the callers for when recycling is safe: nothing the sandbox ran may still be
alive, and nothing it could reach may hold a hard link into the folder).
"""

from __future__ import annotations

import contextlib
import os
import stat
from pathlib import Path

from evoround.sandboxes.common._remove import remove_tree
from evoround.snapshots import SnapshotStore

Stat = tuple[int, int, int, int, int]


class WrittenFolder:
    """A workspace folder and what it holds (a manifest, or None: unknown)."""

    def __init__(self, ws: Path) -> None:
        self.ws = ws
        self.holds: str | None = ""
        """The manifest the folder holds exactly as the host wrote it ("" = empty), or None
        once a sandbox may have changed it (then only emptying it first is safe)."""
        self.written: str | None = None
        """The manifest last written here (kept while a sandbox uses the folder)."""
        self.written_bytes = 0
        """The size of the snapshot last written (small ones are not worth recycling)."""
        self._stamp: dict[str, Stat] = {}
        """``lstat`` of every entry as the host left it (the evidence :meth:`repair` uses)."""

    def write(self, store: SnapshotStore, manifest: str, over: str | None) -> None:
        """Make the folder hold ``manifest`` (``over``: what it holds now, or None: empty)."""
        touched = store.materialize(manifest, self.ws, over=over)
        if over is None:
            self._stamp = {}
            touched = set(_walk(self.ws))
        self._restamp(touched)
        self.holds = self.written = manifest
        self._seed(store)

    def _seed(self, store: SnapshotStore) -> None:
        """Tell the store's hash cache what every file here holds (see ``remember``)."""
        if not self.written:
            return
        for e in store.manifest(self.written):
            st = self._stamp.get(str(e["path"]))
            if e["type"] == "file" and st is not None and stat.S_ISREG(st[0]):
                store.remember(os.path.join(self.ws, str(e["path"])), st[1:], str(e["sha256"]))

    def _restamp(self, paths: set[str]) -> None:
        for rel in paths:
            st = _lstat(self.ws / rel)
            if st is None:
                self._stamp.pop(rel, None)
            else:
                self._stamp[rel] = st
            parent = os.path.dirname(rel)
            while parent:  # a parent created on the way
                if parent not in self._stamp:
                    pst = _lstat(self.ws / parent)
                    if pst is not None:
                        self._stamp[parent] = pst
                parent = os.path.dirname(parent)

    def repair(self, store: SnapshotStore) -> bool:
        """After the container is gone: back to exactly ``written`` (see the module doc).
        Returns False when there is nothing known to go back to.

        Streams: what the sandbox added is removed as it is listed, never collected, so a
        tested code that filled its clone with a million files costs the engine no memory
        (only the stamps, bounded by the snapshot, are held)."""
        if not self.written:
            return False
        sweep = _Sweep(self.ws, self._stamp)
        sweep.run()
        _reset_dir(self.ws, None)  # the folder itself is in no stamp
        stale = sweep.stale | (set(self._stamp) - sweep.kept)
        del sweep
        for rel in stale:
            self._stamp.pop(rel, None)
        touched = store.materialize(
            self.written, self.ws, over=self.written, stale=frozenset(stale)
        )
        self._restamp(touched)
        self.holds = self.written
        return True

    def clear(self) -> None:
        """Empty the workspace; the folder itself stays (it is the container's mount)."""
        with os.scandir(self.ws) as listing:
            for child in listing:
                remove_tree(child.path)
        self.holds = ""


class _Sweep:
    """One pass of :meth:`WrittenFolder.repair` over the folder: an entry whose ``lstat``
    is what the host left is kept (a kept directory is reset and walked into); any other
    is purged, and remembered as stale when the host had written it."""

    def __init__(self, ws: Path, stamp: dict[str, Stat]) -> None:
        self.ws = ws
        self.stamp = stamp
        self.kept: set[str] = set()
        self.stale: set[str] = set()
        self.todo = [""]

    def run(self) -> None:
        while self.todo:
            top = self.todo.pop()
            again, passes = True, 0
            while again and passes < 3:  # entries removed while listing: list it again
                again, passes = self.list_once(top), passes + 1

    def list_once(self, top: str) -> bool:
        """Check every entry of folder ``top`` once; True when one was removed."""
        again = False
        try:
            listing = os.scandir(os.path.join(self.ws, top))
        except OSError:
            return False
        with listing:
            for entry in listing:
                rel = f"{top}/{entry.name}" if top else entry.name
                if rel not in self.kept and not self.keep(rel, Path(entry.path)):
                    remove_tree(entry.path)
                    again = True
                    if rel in self.stamp:
                        self.stale.add(rel)
        return again

    def keep(self, rel: str, path: Path) -> bool:
        """Whether the entry is as the host left it (a directory: walked into later)."""
        was = self.stamp.get(rel)
        st = _lstat(path)
        if was is not None and st is not None and _is_dir(st) and _is_dir(was):
            # a directory's times change with its entries (checked one by one); what
            # else it carries is put back: mode, times, attributes
            _reset_dir(path, was)
            self.kept.add(rel)
            self.todo.append(rel)
            return True
        if was is not None and st == was:
            self.kept.add(rel)
            return True
        return False


def _walk(root: Path) -> set[str]:
    """Every entry under ``root`` (relative paths); links are listed, never followed.
    Its own stack: ``os.walk`` recurses once per level before Python 3.12."""
    out: set[str] = set()
    todo = [""]
    while todo:
        top = todo.pop()
        with contextlib.suppress(OSError), os.scandir(root / top if top else root) as listing:
            for entry in listing:
                rel = f"{top}/{entry.name}" if top else entry.name
                out.add(rel)
                if entry.is_dir(follow_symlinks=False):
                    todo.append(rel)
    return out


def _lstat(path: Path) -> Stat | None:
    try:
        st = os.lstat(path)
    except OSError:
        return None
    return (st.st_mode, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_ino)


def _reset_dir(path: Path, was: Stat | None) -> None:
    """A kept directory back to what the host wrote: its mode and times, and no extended
    attribute.

    Changing any of them moves only its ctime, which its entries move too, so
    :meth:`repair` cannot tell; and each is a place to hand data to the folder's next
    sandbox (an attribute, ``user.*`` or an ACL: up to 64 KiB each, no privilege needed;
    the times of many folders): a verifier's clone, where the tested code reads the hidden
    suite, serves the next agent. ``security.*`` and ``trusted.*`` attributes need a
    privilege no sandbox has and are left alone. (Ownership is not reset: a container's
    root could encode a few bytes per folder in it.)
    """
    try:
        names = os.listxattr(path, follow_symlinks=False)
    except OSError:
        names = []
    for name in names:
        if not name.startswith(("security.", "trusted.")):
            with contextlib.suppress(OSError):
                os.removexattr(path, name, follow_symlinks=False)
    if was is not None:
        mode, mtime = was[0], was[2]
        with contextlib.suppress(OSError):
            now = os.lstat(path)
            if stat.S_ISDIR(now.st_mode):  # nothing runs in the sandbox any more
                if now.st_mode != mode:
                    os.chmod(path, stat.S_IMODE(mode))
                if (now.st_mtime_ns, now.st_atime_ns) != (mtime, mtime):
                    os.utime(path, ns=(mtime, mtime))


def _is_dir(st: Stat) -> bool:
    return stat.S_ISDIR(st[0])
