"""Names the Docker backend shares: labels, paths, snapshot modes."""

from __future__ import annotations

import ipaddress
import re
from enum import StrEnum

BACKEND = "docker"
SCRATCH = "/evoround/scratch"
SNAPSHOT_REPOSITORY = "evoround-snap"

LABEL = "evoround"
LABEL_JOB = "evoround.job"
LABEL_TASK = "evoround.task"
LABEL_ATTEMPT = "evoround.attempt"
LABEL_JOB_FOLDER = "evoround.job_folder"
"""A key of the job folder's path (same on every node of a cluster): the containers of one
run of one job folder, whatever the job's name (names repeat across folders)."""


class SnapshotMode(StrEnum):
    workspace = "workspace"
    """Workspace contents in the snapshot store; host-folder workspaces when the daemon runs
    on this machine (see ``_hostws``), else ``archive``."""
    archive = "archive"
    """Workspace contents in the snapshot store, streamed through the Docker API as tars."""
    commit = "commit"
    """``docker commit`` of the whole container."""


def safe_name(text: str) -> str:
    return re.sub(r"[^a-zA-Z0-9_.-]+", "-", text).strip("-.")[:80] or "x"


def is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


def is_image_locator(locator: str) -> bool:
    return locator.startswith("sha256:")


# ---- tar helpers -----------------------------------------------------------------
