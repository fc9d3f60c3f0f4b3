"""Tar streams in and out of containers: workspaces, single files, and their safe extraction."""

from __future__ import annotations

import io
import os
import tarfile
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from evoround.deadline import check as check_deadline
from evoround.snapshots import WorkspaceRejected


def _tarinfo(name: str, **kw: Any) -> tarfile.TarInfo:
    ti = tarfile.TarInfo(name)
    ti.uid = ti.gid = 0
    ti.uname = ti.gname = "root"
    ti.mtime = int(time.time())
    for k, v in kw.items():
        setattr(ti, k, v)
    return ti


def tar_of_dir(src: Path, dest: str) -> Any:
    """A PAX tar whose entries are ``src``'s contents under ``dest`` (relative to /), as a
    file object positioned at 0 (spooled to disk past 16 MiB: a big workspace never sits
    in memory whole; close it when done).

    Entries are root-owned and keep mode bits; symlinks stay symlinks. Parents that
    do not exist are created by the daemon when it extracts.
    """
    prefix = dest.strip("/")
    buf = tempfile.SpooledTemporaryFile(max_size=16 << 20)  # noqa: SIM115 - returned open
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT, encoding="utf-8") as tf:
        for dirpath, dirnames, filenames in os.walk(src):
            dirnames.sort()
            rel_dir = os.path.relpath(dirpath, src)
            for name in sorted(dirnames) + sorted(filenames):
                check_deadline("the workspace copy")
                full = os.path.join(dirpath, name)
                rel = name if rel_dir == "." else f"{rel_dir}/{name}"
                arc = f"{prefix}/{rel}" if prefix else rel
                st = os.lstat(full)
                if os.path.islink(full):
                    tf.addfile(_tarinfo(arc, type=tarfile.SYMTYPE, linkname=os.readlink(full)))
                elif os.path.isdir(full):
                    tf.addfile(_tarinfo(arc, type=tarfile.DIRTYPE, mode=st.st_mode & 0o7777))
                elif os.path.isfile(full):
                    with open(full, "rb") as f:
                        ti = _tarinfo(arc, size=st.st_size, mode=st.st_mode & 0o7777)
                        tf.addfile(ti, f)
    buf.seek(0)
    return buf


UPLOAD_CHUNK = 1 << 20


def stream_chunks(f: Any) -> Iterator[bytes]:
    """A spooled tar as 1 MiB pieces for a chunked upload, checking the round's deadline
    before each: a workspace built to be slow to upload is cut off within one piece of the
    deadline instead of holding the round for the whole transfer."""
    while True:
        check_deadline("the workspace upload")
        piece = f.read(UPLOAD_CHUNK)
        if not piece:
            return
        yield piece


def tar_of_file(path: str, data: bytes, mode: int = 0o644) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT, encoding="utf-8") as tf:
        tf.addfile(_tarinfo(path.strip("/"), size=len(data), mode=mode), io.BytesIO(data))
    return buf.getvalue()


def extract_workspace(
    stream: Any, dest: Path, *, max_files: int | None = None, max_bytes: int | None = None
) -> None:
    """Unpack a ``get_archive`` tar of the workspace into ``dest`` (top directory stripped).

    Only files (and hard links), directories and symlinks are kept (what snapshots
    capture), and the ``tar`` extraction filter refuses anything that would land
    outside ``dest``. Over ``max_files`` members or ``max_bytes`` of content the stream is
    abandoned at once (:class:`WorkspaceRejected`), before the rest is transferred.
    """
    fileobj = IterReader(stream)
    count = total = 0
    with tarfile.open(fileobj=fileobj, mode="r|", encoding="utf-8") as tf:
        for member in tf:
            check_deadline("the snapshot")  # the caller discards the rest of the stream
            count += 1
            total += member.size if member.isfile() else 0
            _within_limits(member, count, total, max_files, max_bytes)
            if _below_top(member, dest):
                _extract_safely(tf, member, dest)


def _within_limits(
    member: tarfile.TarInfo, count: int, total: int, max_files: int | None, max_bytes: int | None
) -> None:
    """Refuse the workspace as soon as it is over the task's limits (counted so far; the
    top directory is one member more than the files)."""
    if max_files is not None and count > max_files + 1:
        raise WorkspaceRejected(
            f"the workspace has more than {max_files} files (the task's max_workspace_files)"
        )
    if max_bytes is not None and total > max_bytes:
        raise WorkspaceRejected(
            f"the workspace holds more than {max_bytes >> 20} MiB (at "
            f"{member.name.split('/', 1)[-1]}; the task's max_workspace_mb)"
        )


def _below_top(member: tarfile.TarInfo, dest: Path) -> bool:
    """Rename ``member`` below the archive's top directory; False for what is not kept
    (the top directory itself, and any kind of entry a snapshot does not capture)."""
    parts = member.name.split("/", 1)
    if len(parts) < 2 or not parts[1]:
        return False  # the workspace directory itself
    if not (member.isfile() or member.isdir() or member.issym() or member.islnk()):
        return False
    member.name = parts[1]
    if member.islnk():  # hard links name their target with the same top directory
        member.linkname = member.linkname.split("/", 1)[-1]
    if len(os.fsencode(member.name)) + len(os.fsencode(str(dest))) >= 4096:
        raise WorkspaceRejected(f"{member.name[:200]}...: path too long to capture")
    return True


def _extract_safely(tf: tarfile.TarFile, member: tarfile.TarInfo, dest: Path) -> None:
    """Extract one member with the ``tar`` filter (nothing outside ``dest``)."""
    if hasattr(tarfile, "tar_filter"):
        tf.extract(member, dest, filter="tar")
    else:  # Python < 3.11.4: no extraction filters
        target = (dest / member.name).resolve()
        if str(target).startswith(str(dest.resolve())):
            tf.extract(member, dest)


class IterReader(io.RawIOBase):
    """A file object over an iterator of byte chunks (``get_archive`` streams)."""

    def __init__(self, chunks: Any) -> None:
        self._it = iter(chunks)
        self._buf = b""

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        while not self._buf:
            try:
                self._buf = next(self._it)
            except StopIteration:
                return 0
        n = min(len(b), len(self._buf))
        b[:n] = self._buf[:n]
        self._buf = self._buf[n:]
        return n


# ---- exec stream -----------------------------------------------------------------
