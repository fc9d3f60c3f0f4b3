"""A snapshot's files as a reader sees them: path -> sha256 and the bytes of one file.

Why a type of its own: the process checklist diffs two workspace states, and those states
live in different places (the store's manifests and blobs, a task's workspace folder, a
Docker image on the engine that took it). Each backend gives a :class:`SnapshotTree` for
its snapshots, so the diff is computed the same way wherever the bytes are, and the
checklist never learns where that is.

Everything in a snapshot was written by the agent: a read is capped (:data:`READ_CAP`), a
file over it reads as None (what a check treats as "not text"), and the walk of a folder
never follows a link.
"""

from __future__ import annotations

import hashlib
import os
import stat
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from evoround.snapshots._walk import walk

READ_CAP = 8 << 20
"""Bytes a reader takes of one file at most; a larger file reads as None (checks look at
source text, not at multi-megabyte blobs an agent may have written to stall them)."""

_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


def _no_bytes(_path: str) -> bytes | None:
    return None


@dataclass(frozen=True)
class SnapshotTree:
    """The regular files of one workspace state."""

    files: Mapping[str, str] = field(default_factory=dict)
    """Relative path -> sha256 of every regular file (links and folders are not files)."""
    read: Callable[[str], bytes | None] = _no_bytes
    """The bytes of a file of ``files``; None when it is not one, unreadable or over the cap."""


def read_capped(path: str | os.PathLike[str], limit: int = READ_CAP) -> bytes | None:
    """A regular file's bytes, or None: a link, FIFO, device, missing file or one over
    ``limit`` bytes is never opened for reading past its ``fstat``."""
    try:
        fd = os.open(path, _FLAGS)
    except OSError:
        return None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > limit:
            return None
        with os.fdopen(os.dup(fd), "rb") as f:
            data = f.read(limit + 1)
        return data if len(data) <= limit else None
    except OSError:
        return None
    finally:
        os.close(fd)


def _sha256_of(fd: int) -> str:
    h = hashlib.sha256()
    os.lseek(fd, 0, os.SEEK_SET)
    while chunk := os.read(fd, 1 << 20):
        h.update(chunk)
    return h.hexdigest()


def dir_tree(root: Path, *, max_files: int | None = None) -> SnapshotTree:
    """The tree of a host folder (a task's initial workspace), walked without following a
    link; an absent folder is an empty tree. More than ``max_files`` entries raise
    ``TreeError`` (an ``OSError``) rather than hash without end."""
    if not root.is_dir():
        return SnapshotTree()
    files: dict[str, str] = {}
    for e in walk(root, max_entries=max_files):
        if e.kind == "file":
            files[e.rel] = _sha256_of(e.fd)

    def read(path: str) -> bytes | None:
        return read_capped(root / path) if path in files else None

    return SnapshotTree(files=files, read=read)


def overlay(base: SnapshotTree, top: SnapshotTree) -> SnapshotTree:
    """``top``'s files written over ``base``'s (a copy into a folder that already held
    ``base``: what a container whose image ships files in its workdir starts with)."""
    if not base.files:
        return top

    def read(path: str) -> bytes | None:
        return top.read(path) if path in top.files else base.read(path)

    return SnapshotTree(files={**base.files, **top.files}, read=read)
