"""The Docker backend: images, containers and their pool, exec, archives and snapshots,
the one-endpoint network relay, and clean-up of what a run left behind.
"""

from evoround.sandboxes.docker._cleanup import (
    CleanupReport,
    cleanup_docker,
    remove_job_folder_containers,
)
from evoround.sandboxes.docker._config import LABEL_JOB, SnapshotMode
from evoround.sandboxes.docker._images import (
    DEFAULT_SUITE,
    ENV_REPOSITORY,
    ROLE_LABEL,
    BaseChoice,
    ImageError,
    bootstrap_base_image,
    connect,
    context_hash,
    default_base_image,
    dockerfile_base,
    dockerfile_bases,
    ensure_task_image,
    image_id,
    resolve_base,
    resolve_bases,
    split_tag,
    trim_rootfs,
)
from evoround.sandboxes.docker._provider import DockerProvider
from evoround.sandboxes.docker._sandbox import DockerSandbox

__all__ = [
    "BaseChoice",
    "DEFAULT_SUITE",
    "CleanupReport",
    "DockerProvider",
    "DockerSandbox",
    "ENV_REPOSITORY",
    "ImageError",
    "LABEL_JOB",
    "ROLE_LABEL",
    "SnapshotMode",
    "bootstrap_base_image",
    "cleanup_docker",
    "connect",
    "remove_job_folder_containers",
    "context_hash",
    "default_base_image",
    "dockerfile_base",
    "dockerfile_bases",
    "ensure_task_image",
    "image_id",
    "resolve_base",
    "resolve_bases",
    "split_tag",
    "trim_rootfs",
]
