"""Crash-safe file primitives shared by the store, the job runner, reports and agents.

A file the engine writes whole (a config lock, a manifest, a report, an agent's saved
conversation) is written to a unique temporary name, fsynced and renamed over the
target, so a kill at any moment leaves either the old file or the new one, never half.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import uuid
from collections.abc import Iterator
from pathlib import Path


def named(e: OSError, path: Path) -> OSError:
    """``e``, made to name ``path`` when it names no file (a write that hit a full disk names
    none) or only a temporary one (whose name says nothing to the user): the CLI's one line
    for an environment error names the file that could not be written."""
    if e.filename is None or str(e.filename).endswith(".tmp"):
        e.filename = str(path)
        e.filename2 = None
    return e


@contextlib.contextmanager
def temp_beside(path: Path) -> Iterator[Path]:
    """A unique temporary name beside ``path`` (the same file system, so renaming it over
    ``path`` is atomic) that does not outlive a failure: if the block raises (a full disk, a
    read-only folder, an interrupt), whatever was written there is removed and an OSError
    names ``path``. The block renames it into place itself."""
    tmp = path.with_name(f".{path.name}.{uuid.uuid4().hex}.tmp")
    try:
        yield tmp
    except BaseException as e:
        with contextlib.suppress(OSError):
            tmp.unlink()
        if isinstance(e, OSError):
            named(e, path)
        raise


def atomic_write(path: Path, data: str | bytes) -> None:
    """Replace ``path`` with ``data`` all at once (parents are created); on a failure the
    old file (if any) stays, no temporary file is left and the OSError names ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)  # an OSError of mkdir names the folder
    with temp_beside(path) as tmp:
        with open(tmp, "wb") as f:
            f.write(data.encode() if isinstance(data, str) else data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)


@contextlib.contextmanager
def file_lock(lock_dir: Path | str, name: str) -> Iterator[None]:
    """An exclusive inter-process (and inter-thread: one open file each) lock."""
    path = Path(lock_dir) / f"{name}.lock"
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)
