"""Walking an agent-controlled tree without ever following a link.

Why not ``os.walk``: it opens every folder by path, so a folder the agent swapped for a
symbolic link (the workspace folder itself included, which the agent can rename away
in a local sandbox whose root it may write) is followed, and the engine, with its own
rights, copies whatever the link points at (the host's ``/``, a hidden task folder) into
the snapshot. Here every folder is opened relative to its parent's descriptor with
``O_NOFOLLOW | O_DIRECTORY`` and every file with ``O_NOFOLLOW | O_NONBLOCK`` and checked
with ``fstat`` on the open descriptor, so what is read is what was listed, a link is
only ever recorded as a link, and a FIFO never blocks. The walk is iterative (a deep
tree cannot overflow the stack) and holds one descriptor per level, so depth is capped.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Iterator
from dataclasses import dataclass

MAX_DEPTH = 256
"""Deepest folder nesting captured: one open descriptor per level while walking."""
MAX_PATH_BYTES = 3584
"""Longest relative path captured: ``PATH_MAX`` (4096) less room for the folder a clone
is restored into, so every captured path can be written back (else the round would be
lost at restore time instead of refused at capture time)."""

_DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)


class TreeError(OSError):
    """A tree that cannot be walked safely (a linked top, too deep, unreadable)."""


@dataclass
class Entry:
    """One entry of the tree: ``kind`` is ``file``, ``link`` or ``dir`` (an empty folder).

    For a file, ``fd`` is an open descriptor (valid only until the walk resumes) and
    ``st`` its ``fstat``; for a link, ``target`` is what it points at."""

    rel: str
    kind: str
    fd: int = -1
    st: os.stat_result | None = None
    target: str = ""


def open_top(directory: str | os.PathLike[str]) -> int:
    """A descriptor of ``directory``, refused if it is a link or not a folder."""
    try:
        return os.open(directory, _DIR_FLAGS)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENOTDIR):
            raise TreeError(e.errno, f"{directory}: not a folder (a symbolic link?)") from None
        raise


def _open_file(name: str, dir_fd: int) -> int | None:
    """A descriptor of regular file ``name`` in ``dir_fd``; None if it is not one."""
    try:
        fd = os.open(name, _FILE_FLAGS, dir_fd=dir_fd)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENXIO, errno.EOPNOTSUPP, errno.ENOENT):
            return None  # became a link, a socket, or vanished since it was listed
        raise
    return fd


def _checked(rel: str) -> str:
    if len(os.fsencode(rel)) > MAX_PATH_BYTES:
        raise TreeError(errno.ENAMETOOLONG, f"{rel[:80]}...: a path over {MAX_PATH_BYTES} bytes")
    return rel


def walk(directory: str | os.PathLike[str], *, max_entries: int | None = None) -> Iterator[Entry]:
    """Yield every file, link and empty folder under ``directory`` (each folder's files
    and links before its subfolders, names sorted).

    Raises :class:`TreeError` for a linked or missing top, a tree deeper than
    :data:`MAX_DEPTH`, more than ``max_entries`` files and links or more than
    ``max_entries`` folders (each counted before anything is read: a folder is as cheap to
    make as a file and costs the engine as much to store, write back and remove) and any
    unreadable folder (``OSError`` with the path).
    """
    top = open_top(directory)
    stack: list[tuple[int, str, Iterator[str]]] = []
    seen = folders = 0
    try:
        pending: tuple[int, str] | None = (top, "")
        while pending is not None or stack:
            if pending is not None:
                fd, rel = pending
                pending = None
                stack.append((fd, rel, iter(())))  # closed by the finally from here on
                if len(stack) > MAX_DEPTH:
                    raise TreeError(errno.ELOOP, f"{rel}: more than {MAX_DEPTH} nested folders")
                try:
                    names = os.listdir(fd)
                except OSError as e:
                    raise OSError(e.errno, e.strerror, rel or str(directory)) from None
                if max_entries is not None and len(names) > 2 * max_entries:
                    raise TreeError(errno.EFBIG, f"more than {max_entries} files")  # unsorted
                names.sort()
                kinds: list[tuple[str, os.stat_result]] = []
                subdirs: list[str] = []
                for name in names:
                    try:
                        st = os.stat(name, dir_fd=fd, follow_symlinks=False)
                    except FileNotFoundError:
                        continue
                    if stat.S_ISDIR(st.st_mode):
                        subdirs.append(name)
                    else:
                        kinds.append((name, st))
                seen += len(kinds)
                folders += len(subdirs)
                if max_entries is not None and max(seen, folders) > max_entries:
                    raise TreeError(errno.EFBIG, f"more than {max_entries} files or folders")
                recorded = 0
                for name, st in kinds:
                    path = _checked(f"{rel}{name}")
                    if stat.S_ISLNK(st.st_mode):
                        recorded += 1
                        yield Entry(path, "link", target=os.readlink(name, dir_fd=fd))
                    elif stat.S_ISREG(st.st_mode):
                        ffd = _open_file(name, fd)
                        if ffd is None:
                            continue
                        try:
                            fst = os.fstat(ffd)
                            if stat.S_ISREG(fst.st_mode):
                                recorded += 1
                                yield Entry(path, "file", fd=ffd, st=fst)
                        finally:
                            os.close(ffd)
                if not subdirs and not recorded and rel:
                    yield Entry(rel.rstrip("/"), "dir")
                stack[-1] = (fd, rel, iter(subdirs))
                continue
            fd, rel, it = stack[-1]
            name = next(it, None)
            if name is None:
                os.close(fd)
                stack.pop()
                continue
            sub = _checked(rel + name)
            try:
                child = os.open(name, _DIR_FLAGS, dir_fd=fd)
            except OSError as e:
                if e.errno in (errno.ELOOP, errno.ENOTDIR, errno.ENOENT):
                    continue  # swapped for a link or removed since it was listed
                raise OSError(e.errno, e.strerror, f"{rel}{name}") from None
            pending = (child, f"{sub}/")
    finally:
        for fd, _, _ in stack:
            os.close(fd)
