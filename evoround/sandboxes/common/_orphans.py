"""Sandbox folders a killed engine left behind, and how the next run finds them.

A run killed with SIGKILL closes nothing: its sandbox folders stay. Each folder names the
engine that made it (:data:`OWNER_RECORD`, see :mod:`._owner`), so the next provider on the
same parent removes exactly those whose engine is provably dead and leaves a concurrent
run's alone: another job, another user, or another host sharing the folder (a Ray cluster
with a shared ``EVOROUND_HOME``). Shared by local sandboxes and Docker host-folder
workspaces. Whatever a dead agent left in a folder, the sweep completes: folders go through
:func:`remove_tree`, and a failure is logged, never raised.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path

from pydantic import ValidationError

from evoround.sandboxes.common._owner import (
    LEGACY_OWNER_FILE,
    OWNER_LEASE_S,
    OWNER_RECORD,
    Here,
    OwnerRecord,
    owner_dead,
    process_start,
    renew,
    same_kernel,
)
from evoround.sandboxes.common._remove import remove_tree

log = logging.getLogger(__name__)


def sweep_orphans(base_dir: Path, *, lease_s: float = OWNER_LEASE_S) -> list[Path]:
    """Remove the folders of ``base_dir`` whose owner is provably dead (killed with -9:
    nothing closed them). A folder naming no owner is left alone; so is one whose owner
    lives, or may live elsewhere and refreshed its record within ``lease_s``. Never raises."""
    here = Here.read()
    removed: list[Path] = []
    try:
        with os.scandir(base_dir) as listing:
            folders = [Path(e.path) for e in listing if e.is_dir(follow_symlinks=False)]
    except OSError as e:
        log.warning("cannot sweep %s: %s", base_dir, e)
        return removed
    for folder in folders:
        try:
            if orphaned(folder, here, lease_s) and remove_tree(folder):
                removed.append(folder)
        except Exception as e:  # noqa: BLE001 - one odd folder never stops a run
            log.warning("sweeping %s: %s: %s", folder, type(e).__name__, e)
    return removed


def orphaned(folder: Path, here: Here, lease_s: float = OWNER_LEASE_S) -> bool:
    """Whether ``folder``'s owner is provably dead (an owner proved alive here gets its
    lease renewed, for the hosts that cannot check it)."""
    record = folder / OWNER_RECORD
    try:
        st = os.stat(record, follow_symlinks=False)
    except FileNotFoundError:
        return _legacy_orphaned(folder / LEGACY_OWNER_FILE)
    age = time.time() - st.st_mtime
    try:
        rec = OwnerRecord.model_validate_json(record.read_bytes())
    except (OSError, ValidationError):
        return age > lease_s  # unreadable (written atomically, so not half-written)
    started = process_start(rec.pid) if same_kernel(rec, here) else None
    if owner_dead(rec, here, started, age, lease_s):
        return True
    if same_kernel(rec, here):
        renew(record)
    return False


def _legacy_orphaned(owner: Path) -> bool:
    """An earlier version's bare pid: dead when no process has that pid here (as before)."""
    try:
        pid = int(owner.read_text(encoding="utf-8").strip())
    except (OSError, ValueError):
        return False
    return pid > 0 and pid != os.getpid() and _gone(pid)


def _gone(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:  # someone else's live process
        return False
    return False
