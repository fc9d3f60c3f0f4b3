"""Content-addressed snapshot store with lineage metadata and a reference-state cache.

Files are stored once by sha256 (``blobs/``), a snapshot's tree is a manifest
(``manifests/``) and its lineage a metadata record (``meta/``). Backends that keep
their own bytes (Docker images) register metadata only. Reference snapshots are
indexed by (backend, task digest, round) under ``refs/`` so SR builds each
reference state once per machine.
"""

from __future__ import annotations

import contextlib
import errno
import hashlib
import json
import os
import shutil
import stat
import threading
import uuid
from collections import OrderedDict
from pathlib import Path

from evoround.deadline import check as check_deadline
from evoround.fileio import atomic_write, file_lock, temp_beside
from evoround.snapshots._model import ManifestEntry, Snapshot, SnapshotKind, SnapshotLabel
from evoround.snapshots._tree import READ_CAP, SnapshotTree, read_capped
from evoround.snapshots._walk import TreeError, walk

HASH_CACHE_ENTRIES = 100_000
"""Files whose hash is remembered (about 30 MB at most): more than a large workspace holds."""


def _sha256_fd(fd: int) -> str:
    """The sha256 of an open file, read from its start (the descriptor is not closed)."""
    h = hashlib.sha256()
    os.lseek(fd, 0, os.SEEK_SET)
    while chunk := os.read(fd, 1 << 20):
        h.update(chunk)
    return h.hexdigest()


def _copy_fd(fd: int, dest: Path) -> None:
    """Copy an open file from its start into a new file ``dest``."""
    os.lseek(fd, 0, os.SEEK_SET)
    with open(dest, "xb") as out:
        while chunk := os.read(fd, 1 << 20):
            out.write(chunk)


class WorkspaceRejected(ValueError):
    """The agent's workspace cannot be captured: over its size or file-count limit, or a
    path the filesystem cannot hold. The agent's failure, never silently dropped."""


def _walk_error(e: OSError) -> None:
    raise WorkspaceRejected(f"{e.filename or 'workspace'}: unreadable: {e.strerror or e}") from e


class SnapshotStore:
    def __init__(self, root: Path | str) -> None:
        self.root = Path(root)
        for sub in ("blobs", "manifests", "meta", "refs"):
            (self.root / sub).mkdir(parents=True, exist_ok=True)
        # path -> ((size, mtime_ns, ctime_ns, inode), sha256): unchanged files are not re-hashed.
        # ctime is in the stamp because nobody can set it: an agent that rewrites a file in
        # place and restores its size and mtime still changes its ctime. Keyed by path, so a
        # rewritten file replaces its entry instead of leaving a dead one (a recycled Docker
        # workspace folder is re-snapshotted every round: dead entries grew the engine).
        self._hash_cache: OrderedDict[str, tuple[tuple[int, int, int, int], str]] = OrderedDict()
        self._hash_lock = threading.Lock()  # attempts on executor threads share one store

    # ---- metadata -------------------------------------------------------------
    def register(
        self,
        label: SnapshotLabel,
        backend: str,
        locator: str,
        *,
        size_bytes: int = 0,
        files: int = 0,
    ) -> Snapshot:
        snap = Snapshot(
            id=f"{label.kind.value}-{uuid.uuid4().hex[:16]}",
            backend=backend,
            locator=locator,
            task=label.task,
            task_digest=label.task_digest,
            kind=label.kind,
            round=label.round,
            attempt=label.attempt,
            parent=label.parent,
            size_bytes=size_bytes,
            files=files,
        )
        atomic_write(self.root / "meta" / f"{snap.id}.json", snap.model_dump_json().encode())
        return snap

    def get(self, snapshot_id: str) -> Snapshot:
        path = self.root / "meta" / f"{snapshot_id}.json"
        try:
            return Snapshot.model_validate_json(path.read_bytes())
        except FileNotFoundError:
            raise KeyError(f"unknown snapshot {snapshot_id} in {self.root}") from None

    def lineage(self, snapshot_id: str) -> list[Snapshot]:
        """The snapshot and its ancestors, newest first (ancestors may live in other stores)."""
        chain: list[Snapshot] = []
        current: str | None = snapshot_id
        while current:
            try:
                snap = self.get(current)
            except KeyError:
                break
            chain.append(snap)
            current = snap.parent
        return chain

    def all(self) -> list[Snapshot]:
        return sorted(
            (
                Snapshot.model_validate_json(p.read_bytes())
                for p in (self.root / "meta").glob("*.json")
            ),
            key=lambda s: s.created_at,
        )

    # ---- reference cache -------------------------------------------------------
    def _ref_path(self, backend: str, task_digest: str, round_index: int) -> Path:
        return self.root / "refs" / backend / task_digest / f"round-{round_index:02d}"

    def reference(self, backend: str, task_digest: str, round_index: int) -> Snapshot | None:
        path = self._ref_path(backend, task_digest, round_index)
        if not path.is_file():
            return None
        try:
            return self.get(path.read_text().strip())
        except KeyError:
            return None

    def set_reference(self, snap: Snapshot) -> None:
        if snap.kind is not SnapshotKind.reference:
            raise ValueError("only reference snapshots go into the reference cache")
        atomic_write(self._ref_path(snap.backend, snap.task_digest, snap.round), snap.id.encode())

    def drop_reference(self, backend: str, task_digest: str, round_index: int) -> None:
        self._ref_path(backend, task_digest, round_index).unlink(missing_ok=True)

    def lock(self, name: str) -> contextlib.AbstractContextManager[None]:
        """An inter-process lock, so two attempts never build the same thing at once."""
        return file_lock(self.root / "locks", name)

    # ---- content (local directories) ------------------------------------------
    def _blob(self, digest: str) -> Path:
        return self.root / "blobs" / digest[:2] / digest

    def _cached_hash(self, key: tuple[str, int, int, int, int], fd: int) -> str:
        """The file's sha256, from a bounded LRU keyed by path and checked against its stat:
        every attempt works in a new folder, so an unbounded cache would grow with the job."""
        path, stamp = key[0], key[1:]
        with self._hash_lock:
            hit = self._hash_cache.get(path)
            if hit is not None and hit[0] == stamp:
                self._hash_cache.move_to_end(path)
                return hit[1]
        digest = _sha256_fd(fd)
        with self._hash_lock:
            self._hash_cache[path] = (stamp, digest)
            self._hash_cache.move_to_end(path)
            if len(self._hash_cache) > HASH_CACHE_ENTRIES:
                self._hash_cache.popitem(last=False)
        return digest

    def remember(self, path: str, stamp: tuple[int, int, int, int], digest: str) -> None:
        """Seed the hash cache: the host just wrote ``path`` from blob ``digest`` and its
        ``(size, mtime_ns, ctime_ns, inode)`` is ``stamp``. The next snapshot of a workspace
        written from the store (an SR round's, a clone's) then hashes only what changed
        since, not the whole tree once more. Safe for the reason the cache is: no one can
        change the content without changing the ctime."""
        with self._hash_lock:
            self._hash_cache[path] = (stamp, digest)
            self._hash_cache.move_to_end(path)
            if len(self._hash_cache) > HASH_CACHE_ENTRIES:
                self._hash_cache.popitem(last=False)

    def forget(self, directory: Path | str) -> None:
        """Drop the remembered hashes of files under ``directory`` (a workspace being deleted).

        Why: a finished attempt's folder never comes back, so its entries can never hit again;
        kept until the LRU bound pushed them out, they grew the controller by about half a
        kilobyte per round until the 100,000-entry bound (about 30 MB; issue 14).
        """
        prefix = os.path.join(str(directory), "")
        with self._hash_lock:
            dead = [k for k in self._hash_cache if k.startswith(prefix)]
            for k in dead:
                del self._hash_cache[k]

    def capture_dir(
        self,
        directory: Path,
        *,
        max_files: int | None = None,
        max_bytes: int | None = None,
        mode_mask: int = 0o7777,
    ) -> tuple[str, int, int]:
        """Store a directory tree; returns (manifest digest, total bytes, file count).

        ``mode_mask`` is applied to file modes: an untrusted tree (a Docker workspace on
        the host) passes ``0o755`` so no setuid, setgid, sticky or group/other write bit
        is carried (the same bits the ``tar`` extraction filter drops).

        Raises :class:`WorkspaceRejected` when the tree has more than ``max_files`` entries
        or ``max_bytes`` of file content (checked before anything big is read), or when a
        part of it cannot be read or written back (a path over ``MAX_PATH_BYTES``, more
        than ``MAX_DEPTH`` nested folders): nothing vanishes without an error. The tree is
        walked by descriptor without following any link (see :mod:`._walk`): a workspace
        folder the agent swapped for a link is refused, not followed.
        """
        entries: list[ManifestEntry] = []
        total = 0
        try:
            for e in walk(directory, max_entries=max_files):
                check_deadline("the snapshot")  # a hostile tree never outlasts the round
                if e.kind != "file":
                    entries.append(
                        {"path": e.rel, "type": e.kind, "target": e.target}
                        if e.kind == "link"
                        else {"path": e.rel, "type": "dir"}
                    )
                    continue
                st = e.st
                assert st is not None
                if max_bytes is not None and total + st.st_size > max_bytes:
                    raise WorkspaceRejected(
                        f"the workspace holds more than {max_bytes >> 20} MiB "
                        f"(at {e.rel}; the task's max_workspace_mb)"
                    )
                key = (
                    os.path.join(directory, e.rel),
                    st.st_size,
                    st.st_mtime_ns,
                    st.st_ctime_ns,
                    st.st_ino,
                )
                digest = self._cached_hash(key, e.fd)
                blob = self._blob(digest)
                if not blob.exists():
                    blob.parent.mkdir(parents=True, exist_ok=True)
                    with temp_beside(blob) as tmp:  # a full disk leaves no partial blob
                        _copy_fd(e.fd, tmp)
                        os.replace(tmp, blob)
                mode = stat.S_IMODE(st.st_mode) & mode_mask
                entries.append({"path": e.rel, "type": "file", "sha256": digest, "mode": mode})
                total += st.st_size
        except TreeError as e:
            if e.errno == errno.EFBIG:
                raise WorkspaceRejected(
                    f"the workspace has more than {max_files} files or folders (the task's "
                    "max_workspace_files)"
                ) from None
            raise WorkspaceRejected(f"{e.strerror}") from None
        except OSError as e:
            _walk_error(e)
        entries.sort(key=lambda x: str(x["path"]))
        body = json.dumps({"entries": entries}, sort_keys=True).encode()
        manifest = hashlib.sha256(body).hexdigest()
        path = self.root / "manifests" / f"{manifest}.json"
        if not path.exists():
            atomic_write(path, body)
        return manifest, total, sum(1 for e in entries if e["type"] == "file")

    def manifest(self, manifest_digest: str) -> list[ManifestEntry]:
        path = self.root / "manifests" / f"{manifest_digest}.json"
        return json.loads(path.read_bytes())["entries"]

    def tree(self, manifest_digest: str, *, limit: int = READ_CAP) -> SnapshotTree:
        """The files of a stored manifest, read from the store's blobs (each capped at
        ``limit`` bytes). Raises ``FileNotFoundError`` when the manifest is gone."""
        files = {
            str(e["path"]): str(e["sha256"])
            for e in self.manifest(manifest_digest)
            if e.get("type") == "file"
        }

        def read(path: str) -> bytes | None:
            digest = files.get(path)
            return None if digest is None else read_capped(self._blob(digest), limit)

        return SnapshotTree(files=files, read=read)

    def materialize(
        self,
        manifest_digest: str,
        dest: Path,
        *,
        over: str | None = None,
        stale: frozenset[str] = frozenset(),
    ) -> set[str]:
        """Recreate a captured tree in ``dest`` (which must be empty or absent); returns the
        paths written or removed.

        With ``over``, ``dest`` holds the tree of manifest ``over`` (as this method wrote it,
        except the ``stale`` paths, which are rewritten) and only the difference is written:
        a clone of the next round's snapshot costs what the round changed.
        """
        want = {str(e["path"]): e for e in self.manifest(manifest_digest)}
        have = {str(e["path"]): e for e in self.manifest(over)} if over else {}
        for path in stale:
            have.pop(path, None)
        touched: set[str] = set()
        dest.mkdir(parents=True, exist_ok=True)
        if have:
            want_dirs = _dirs_of(want)
            for path in sorted(set(have) - set(want), reverse=True):
                _remove(dest / path)
                touched.add(path)
            for d in sorted(_dirs_of(have) - want_dirs, reverse=True):
                _remove(dest / d)
                touched.add(d)
        for path, e in want.items():
            check_deadline("the verification copy")
            old = have.get(path)
            if old == e:
                continue
            target = dest / path
            touched.add(path)
            if os.path.lexists(target):
                _remove(target)  # never write through what is there (it may be a hard link)
            target.parent.mkdir(parents=True, exist_ok=True)
            if e["type"] == "dir":
                target.mkdir(exist_ok=True)
            elif e["type"] == "link":
                os.symlink(str(e["target"]), target)
            else:
                shutil.copyfile(self._blob(str(e["sha256"])), target)
                os.chmod(target, int(e["mode"]))
        return touched


def _dirs_of(entries: dict[str, ManifestEntry]) -> set[str]:
    """Every directory a manifest's tree holds (its dir entries and its files' parents)."""
    out: set[str] = set()
    for path, e in entries.items():
        if e["type"] == "dir":
            out.add(path)
        parent = os.path.dirname(path)
        while parent and parent not in out:
            out.add(parent)
            parent = os.path.dirname(parent)
    return out


def _remove(path: Path) -> None:
    """Remove a file, link or directory tree; links are removed, never followed."""
    if path.is_symlink() or not path.is_dir():
        path.unlink(missing_ok=True)
    else:
        shutil.rmtree(path, ignore_errors=True)
