"""Removing a tree an agent wrote, whatever it left there.

``shutil.rmtree`` recurses once per folder level (Python 3.11; ``os.walk`` too, until
3.12), so a workspace holding a 20,000-deep chain of folders raised ``RecursionError`` out
of every later run's orphan sweep. :func:`remove_tree` keeps its own stack instead and
works relative to open folder descriptors, one at a time (a deep tree needs no more
descriptors and no path longer than one name), and it never raises.

What it copes with: any depth; folders without read, write or search permission (the
owner's ``rwx`` is given back before it descends; as root none of that matters); links
(removed, never followed); fifos, sockets and device nodes (unlinked, never opened); long
names, names with newlines or bytes that are not UTF-8 (names go back to the system as
they came, ``surrogateescape``); a folder with millions of entries (listed as a stream:
files are unlinked as they are listed and at most :data:`BATCH` subfolder names are held
per level). What it leaves, logged once per call: an entry the engine's user may not remove
(a file a container's root made in a sticky folder; an immutable or append-only file,
which needs ``CAP_LINUX_IMMUTABLE`` to set: no sandbox has it, bubblewrap and Docker drop
it), and a folder on another file system (a mount point: never entered).

It never removes anything outside the folder: every name is removed relative to a folder
it opened without following a link, and going back up goes through ``..`` only after
checking it is the very folder it came down from (device and inode); if not (someone moved
a folder while it worked: nothing that could still runs when a tree is removed) it stops.
"""

from __future__ import annotations

import errno
import logging
import os
import stat
from dataclasses import dataclass, field
from pathlib import Path

log = logging.getLogger(__name__)

BATCH = 1 << 16
"""Subfolder names one listing of a folder hands out (the next listing finds the rest): a
folder of a million subfolders is listed some 16 times, and no more than this many names
are held per level (never more than the tree has folders)."""
_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_O_PATH = getattr(os, "O_PATH", 0)


class _Moved(Exception):
    """A folder is not where the removal left it: stop rather than go anywhere else."""


@dataclass
class _Level:
    """One folder on the way down: its name in the folder above, and its identity."""

    name: str
    dev: int
    ino: int
    pending: list[str] = field(default_factory=list)
    """Subfolders the last listing found, not yet entered."""
    failed: set[str] = field(default_factory=set)
    """Entries that could not be removed: later listings skip them."""


def remove_tree(path: Path | str) -> bool:
    """Remove ``path`` and everything below it (a link or a file: just it). Never raises
    (what cannot be removed is logged); True when nothing is left at ``path``."""
    shown = os.fspath(path)
    parent, name = os.path.split(os.path.abspath(shown))
    if not name:
        return False  # the root folder
    try:
        top = os.open(parent, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except FileNotFoundError:
        return True
    except OSError as e:
        log.warning("cannot remove %r: %s", shown, e)
        return False
    remover = _Remover(top, shown)
    try:
        remover.run(name)
    except _Moved as e:
        remover.fail(f"stopped: {e}")
    except Exception as e:  # noqa: BLE001 - a removal never fails its caller
        remover.fail(f"{type(e).__name__}: {e}")
    finally:
        remover.close()
        os.close(top)
    gone = not os.path.lexists(shown)
    if remover.errors:
        log.warning(
            "removing %r: %d entr%s could not be removed (first: %s)%s",
            shown,
            remover.errors,
            "y" if remover.errors == 1 else "ies",
            remover.first,
            "" if gone else "; the folder stays",
        )
    return gone


class _Remover:
    """One :func:`remove_tree`: a stack of :class:`_Level` and the descriptor of the one
    on top (the levels above are found again through ``..``)."""

    def __init__(self, top: int, shown: str) -> None:
        self.top = top
        self.shown = shown
        self.fd = -1
        self.levels: list[_Level] = []
        self.errors = 0
        self.first = ""

    def fail(self, what: str) -> None:
        self.errors += 1
        if not self.first:
            self.first = what

    def close(self) -> None:
        if self.fd >= 0:
            os.close(self.fd)
            self.fd = -1

    def run(self, name: str) -> None:
        try:
            st = os.stat(name, dir_fd=self.top, follow_symlinks=False)
        except FileNotFoundError:
            return
        if not stat.S_ISDIR(st.st_mode):
            self.unlink(self.top, name, set())
            return
        if not self.enter(self.top, name, st.st_dev, set()):
            return
        while self.levels:
            level = self.levels[-1]
            if level.pending:
                self.enter(self.fd, level.pending.pop(), level.dev, level.failed)
                continue
            found, removed = self.list(level)
            if found:
                level.pending = found
            elif not removed:  # empty (or only what cannot go): remove it
                self.leave()
            # else: entries were removed while listing, which may have hidden others

    def list(self, level: _Level) -> tuple[list[str], int]:
        """Unlink every non-folder of the current folder; return (up to :data:`BATCH`
        of) its subfolders, and how many entries went."""
        found: list[str] = []
        removed = 0
        try:
            with os.scandir(self.fd) as listing:
                for entry in listing:
                    if entry.name in level.failed:
                        continue
                    try:
                        is_dir = entry.is_dir(follow_symlinks=False)
                    except OSError:
                        is_dir = False
                    if not is_dir:
                        removed += self.unlink(self.fd, entry.name, level.failed)
                    elif len(found) < BATCH:
                        found.append(entry.name)
        except OSError as e:
            self.fail(f"listing {level.name!r}: {e}")
        return found, removed

    def unlink(self, dir_fd: int, name: str, failed: set[str]) -> int:
        try:
            os.unlink(name, dir_fd=dir_fd)
        except FileNotFoundError:
            return 0
        except IsADirectoryError:
            return 0  # swapped for a folder since it was listed: the next listing finds it
        except OSError as e:
            failed.add(name)
            hint = " (immutable or append-only?)" if e.errno == errno.EPERM else ""
            self.fail(f"{name!r}: {e.strerror}{hint}")
            return 0
        return 1

    def enter(self, dir_fd: int, name: str, dev: int, failed: set[str]) -> bool:
        """Open the subfolder ``name`` of ``dir_fd`` (the owner's ``rwx`` given back when
        it lacks it) and make it the current level. False when it cannot be entered."""
        fd = _open_dir(dir_fd, name)
        if fd is None:
            kind = _kind_at(dir_fd, name)
            if kind == "other":  # swapped for a file or a link since it was listed
                self.unlink(dir_fd, name, failed)
            elif kind == "dir":
                failed.add(name)
                self.fail(f"cannot open folder {name!r}")
            return False
        st = os.fstat(fd)
        if st.st_dev != dev:
            os.close(fd)
            failed.add(name)
            self.fail(f"{name!r} is on another file system (a mount point): not entered")
            return False
        if st.st_mode & stat.S_IRWXU != stat.S_IRWXU:
            try:
                os.fchmod(fd, stat.S_IMODE(st.st_mode) | stat.S_IRWXU)
            except OSError as e:
                self.fail(f"chmod {name!r}: {e.strerror}")
        self.close()
        self.fd = fd
        self.levels.append(_Level(name, st.st_dev, st.st_ino))
        return True

    def leave(self) -> None:
        """Go up one level (to the folder it came from, checked) and remove the emptied one."""
        level = self.levels.pop()
        if self.levels:
            above = self.levels[-1]
            up = os.open("..", _DIR, dir_fd=self.fd)
            st = os.fstat(up)
            if (st.st_dev, st.st_ino) != (above.dev, above.ino):
                os.close(up)
                raise _Moved(f"the folder above {level.name!r} is not the one it came from")
        else:
            above, up = None, self.top
        self.close()
        if above is not None:
            self.fd = up
        try:
            os.rmdir(level.name, dir_fd=up)
        except FileNotFoundError:
            pass
        except OSError as e:
            if above is not None:
                above.failed.add(level.name)
            self.fail(f"rmdir {level.name!r}: {e.strerror}")


def _open_dir(dir_fd: int, name: str) -> int | None:
    """``name`` in ``dir_fd`` opened as a folder, never through a link; a folder without
    read permission gets the owner's ``rwx`` first. None when it cannot be opened."""
    try:
        return os.open(name, _DIR, dir_fd=dir_fd)
    except PermissionError:
        pass
    except OSError:
        return None
    try:
        _grant(dir_fd, name)
        return os.open(name, _DIR, dir_fd=dir_fd)
    except OSError:
        return None


def _grant(dir_fd: int, name: str) -> None:
    """Give the folder ``name`` (never a link's target) its owner's ``rwx``."""
    if _O_PATH and os.path.isdir("/proc/self/fd"):
        # a handle on the folder itself, whatever replaces the name meanwhile
        pfd = os.open(name, _O_PATH | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=dir_fd)
        try:
            mode = stat.S_IMODE(os.fstat(pfd).st_mode)
            os.chmod(f"/proc/self/fd/{pfd}", mode | stat.S_IRWXU)
        finally:
            os.close(pfd)
        return
    st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    if stat.S_ISDIR(st.st_mode):  # no /proc: a name swapped right now could misdirect this
        os.chmod(name, stat.S_IMODE(st.st_mode) | stat.S_IRWXU, dir_fd=dir_fd)


def _kind_at(dir_fd: int, name: str) -> str:
    """What ``name`` in ``dir_fd`` is now: "gone", "dir" or "other" (never followed)."""
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return "gone"
    except OSError:
        return "dir"  # cannot tell: counted as a folder that stays
    return "dir" if stat.S_ISDIR(st.st_mode) else "other"
