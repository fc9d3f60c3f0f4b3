"""Sandbox folders a killed engine left behind, and how the next run finds them.

A run killed with SIGKILL closes nothing: its sandbox folders stay. Each folder names the
pid of the engine that made it (:data:`OWNER_FILE`), so the next provider on the same
parent removes exactly those whose engine is dead and leaves a concurrent run's alone.
Shared by local sandboxes and Docker host-folder workspaces.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

OWNER_FILE = "owner.pid"
"""In each sandbox folder: the pid of the engine that made it (a SIGKILL skips ``close``)."""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def sweep_orphans(base_dir: Path) -> list[Path]:
    """Remove sandbox folders whose engine is gone (killed with -9: nothing closed them).

    Only folders that name their owner are touched, and only when that pid is dead, so a
    concurrent run (another job, another user) keeps its sandboxes.
    """
    removed: list[Path] = []
    for owner in base_dir.glob(f"*/{OWNER_FILE}"):
        try:
            pid = int(owner.read_text(encoding="utf-8").strip())
        except (OSError, ValueError):
            continue
        if pid != os.getpid() and not _alive(pid):
            shutil.rmtree(owner.parent, ignore_errors=True)
            removed.append(owner.parent)
    return removed
