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
from collections.abc import Generator, Iterator
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
    # One (descriptor, relative path, subfolders still to enter) per open folder: the
    # walk is iterative, so a deep tree costs descriptors (capped), never the stack.
    stack: list[tuple[int, str, Iterator[str]]] = []
    budget = _Budget(max_entries)
    try:
        pending: tuple[int, str] | None = (top, "")
        while pending is not None:
            fd, rel = pending
            stack.append((fd, rel, iter(())))  # closed by the finally from here on
            if len(stack) > MAX_DEPTH:
                raise TreeError(errno.ELOOP, f"{rel}: more than {MAX_DEPTH} nested folders")
            subdirs = yield from _folder(fd, rel, directory, budget)
            stack[-1] = (fd, rel, iter(subdirs))
            pending = _next_folder(stack)
    finally:
        for fd, _, _ in stack:
            os.close(fd)


@dataclass
class _Budget:
    """``max_entries`` over the whole walk: files and links, and folders, counted apart."""

    limit: int | None
    seen: int = 0
    folders: int = 0

    def check_listing(self, names: int) -> None:
        """Refuse a folder far over the limit before sorting or stat-ing its names."""
        if self.limit is not None and names > 2 * self.limit:
            raise TreeError(errno.EFBIG, f"more than {self.limit} files")  # unsorted

    def add(self, files: int, folders: int) -> None:
        self.seen += files
        self.folders += folders
        if self.limit is not None and max(self.seen, self.folders) > self.limit:
            raise TreeError(errno.EFBIG, f"more than {self.limit} files or folders")


def _folder(
    fd: int, rel: str, directory: str | os.PathLike[str], budget: _Budget
) -> Generator[Entry, None, list[str]]:
    """Yield one folder's files and links (or the folder itself when it holds nothing);
    return its subfolders' names, sorted."""
    kinds, subdirs = _listing(fd, rel, directory, budget)
    recorded = yield from _files_and_links(fd, rel, kinds)
    if not subdirs and not recorded and rel:
        yield Entry(rel.rstrip("/"), "dir")
    return subdirs


def _listing(
    fd: int, rel: str, directory: str | os.PathLike[str], budget: _Budget
) -> tuple[list[tuple[str, os.stat_result]], list[str]]:
    """A folder's names, sorted and split: (non-folders with their ``lstat``, subfolders)."""
    try:
        names = os.listdir(fd)
    except OSError as e:
        raise OSError(e.errno, e.strerror, rel or str(directory)) from None
    budget.check_listing(len(names))
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
    budget.add(len(kinds), len(subdirs))
    return kinds, subdirs


def _files_and_links(
    fd: int, rel: str, kinds: list[tuple[str, os.stat_result]]
) -> Generator[Entry, None, int]:
    """Yield the links and regular files among ``kinds``; return how many were yielded.

    A file is opened without following links and checked again on its descriptor: what
    was listed may have been swapped since. Sockets, FIFOs and devices are skipped."""
    recorded = 0
    for name, st in kinds:
        path = _checked(f"{rel}{name}")
        if stat.S_ISLNK(st.st_mode):
            recorded += 1
            yield Entry(path, "link", target=os.readlink(name, dir_fd=fd))
        elif stat.S_ISREG(st.st_mode):
            file_fd = _open_file(name, fd)
            if file_fd is None:
                continue
            try:
                fst = os.fstat(file_fd)
                if stat.S_ISREG(fst.st_mode):
                    recorded += 1
                    yield Entry(path, "file", fd=file_fd, st=fst)
            finally:
                os.close(file_fd)
    return recorded


def _next_folder(stack: list[tuple[int, str, Iterator[str]]]) -> tuple[int, str] | None:
    """The next subfolder to enter, depth first (opened, with its relative path); folders
    with nothing left are closed and popped. None: the walk is done."""
    while stack:
        fd, rel, subdirs = stack[-1]
        name = next(subdirs, None)
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
        return child, f"{sub}/"
    return None
