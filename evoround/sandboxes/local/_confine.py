"""File operations the engine does *for* a hardened local sandbox, kept inside it.

Why: the engine reads and writes a local sandbox's files from the host, with its own
rights, outside the namespace its commands run in. Without care, a path the agent chose
(an LLM agent's ``read_file("/abs/path")`` tool call, a Harbor agent's upload) or a link
the agent planted (``data -> /etc``, a workspace folder renamed away and replaced by a
link, ``AGENTS.md -> <hidden task>/rounds/02/solution/...``) makes the engine read a
hidden reference solution or write anywhere on the host. So, for a hardened sandbox:

- writes go only below the sandbox folder, never through a link at any level, and never
  into an existing inode (a hard link the agent made is replaced, not written through);
- reads below the sandbox folder never pass a link in a folder component; reads outside
  it (the host, which the agent's commands see read-only anyway) are refused under the
  covered paths (task folders, snapshot store, ``EVOROUND_HOME``, the job folder), also
  when reached through a link.

Checks use ``lstat`` on each component: with bubblewrap or unshare no process of the agent
is alive between its commands, so nothing can swap a component between check and use.
"""

from __future__ import annotations

import os
import shutil
import stat
from pathlib import Path

from evoround.sandboxes.common import UnsafeFile, remove_tree


def _inside(p: Path, root: Path) -> bool:
    return p == root or root in p.parents


def _no_links_below(root: Path, p: Path, shown: str) -> None:
    cur = root
    for part in p.relative_to(root).parts[:-1]:
        cur = cur / part
        if cur.is_symlink():
            raise UnsafeFile(f"{shown}: {cur.name} is a symbolic link; not followed")


def _refuse_hidden(p: Path, hidden: tuple[Path, ...], shown: str) -> None:
    real = Path(os.path.realpath(p))
    for h in hidden:
        if _inside(real, h) or _inside(p, h):
            raise UnsafeFile(f"{shown}: hidden from the sandbox")


def read_path(root: Path, p: Path, hidden: tuple[Path, ...], shown: str, *, follow: bool) -> Path:
    """``p`` (absolute, normalised) if the sandbox may have the engine read it."""
    if _inside(p, root):
        _no_links_below(root, p, shown)
        if follow and p.is_symlink():
            real = Path(os.path.realpath(p))
            if not _inside(real, root):
                _refuse_hidden(real, hidden, shown)
        return p
    _refuse_hidden(p, hidden, shown)
    return p


def write_path(root: Path, p: Path, shown: str) -> Path:
    """``p`` (absolute, normalised) if below ``root``; links met on the way are refused."""
    if not _inside(p, root) or p == root:
        raise UnsafeFile(f"{shown}: outside the sandbox; not written")
    return p


def _clear(target: Path) -> int | None:
    """Remove what is at ``target`` unless it is a folder; the old file's mode, if any."""
    try:
        st = os.lstat(target)
    except FileNotFoundError:
        return None
    if stat.S_ISDIR(st.st_mode):
        raise IsADirectoryError(f"{target}: is a folder")
    os.unlink(target)
    return stat.S_IMODE(st.st_mode) if stat.S_ISREG(st.st_mode) else None


def make_dirs(root: Path, d: Path) -> None:
    """Create ``d`` below ``root``; a link or file in the way is replaced by a folder."""
    cur = root
    for part in d.relative_to(root).parts:
        cur = cur / part
        try:
            st = os.lstat(cur)
        except FileNotFoundError:
            os.mkdir(cur)
            continue
        if not stat.S_ISDIR(st.st_mode):
            os.unlink(cur)
            os.mkdir(cur)


def write_new(root: Path, target: Path, data: bytes) -> None:
    """Write ``data`` as a new file at ``target`` (keeping an old file's mode)."""
    make_dirs(root, target.parent)
    mode = _clear(target)
    fd = os.open(target, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o644)
    with os.fdopen(fd, "wb") as f:
        f.write(data)
    if mode is not None:
        os.chmod(target, mode)


def copy_tree(root: Path, src: Path, dest: Path) -> None:
    """Copy the host tree ``src`` (trusted) into ``dest`` below ``root``, links as links,
    never writing through anything the agent left at the destination."""
    make_dirs(root, dest)
    for dirpath, dirnames, filenames in os.walk(src):
        rel = Path(dirpath).relative_to(src)
        for name in sorted(dirnames + filenames):
            s, t = Path(dirpath, name), dest / rel / name
            if s.is_symlink():
                if t.is_dir() and not t.is_symlink():
                    remove_tree(t)
                _clear(t)
                os.symlink(os.readlink(s), t)
            elif s.is_dir():
                make_dirs(root, t)
            else:
                if t.is_dir() and not t.is_symlink():
                    remove_tree(t)
                _clear(t)
                shutil.copyfile(s, t, follow_symlinks=False)
                shutil.copymode(s, t)
        dirnames[:] = [d for d in dirnames if not Path(dirpath, d).is_symlink()]
