"""Choose a sandbox backend by name (``--sandbox``)."""

from __future__ import annotations

import hashlib
import logging
from pathlib import Path

from evoround.sandboxes.common import SandboxProvider
from evoround.sandboxes.local import LocalProvider
from evoround.snapshots import SnapshotStore

BACKENDS = ("local", "docker")
log = logging.getLogger(__name__)


def job_folder_key(job_dir: Path) -> str:
    """A short key of the job folder's absolute path: the same on every node of a cluster
    (the folder is on shared storage at one path), different for two folders of one name."""
    return hashlib.sha256(str(job_dir.resolve()).encode()).hexdigest()[:16]


def sweep_job_folder(name: str, job_dir: Path) -> list[str]:
    """After a run's units are over (its job lock still held): remove the sandboxes of
    ``job_dir`` that are still there, which only a lost cluster node leaves (a node's
    Docker sandboxes are siblings on the engine and outlive it); their names. Never
    raises: a sweep that cannot reach the engine is a warning, not the job's failure."""
    if name != "docker":
        return []  # a local sandbox is a folder on its node: that node's sweep collects it
    try:
        from evoround.sandboxes.docker import connect, remove_job_folder_containers

        client = connect(timeout=60)
        try:
            report = remove_job_folder_containers(client, job_folder_key(job_dir))
        finally:
            client.close()
    except Exception as e:  # no engine now, a refused call: evoround cleanup still can
        log.warning("%s: could not remove leftover sandboxes: %s", job_dir, e)
        return []
    for error in report.errors:
        log.warning("%s: could not remove a leftover sandbox: %s", job_dir, error)
    return report.containers


def docker_reachable(timeout: float = 5.0) -> bool:
    """Whether a Docker engine answers a ping (the SDK installed, the daemon up, allowed):
    decides where a model-backed agent runs when ``--sandbox`` is not given."""
    try:
        import docker

        client = docker.from_env(timeout=int(max(1, timeout)))
        try:
            return bool(client.ping())
        finally:
            client.close()
    except Exception:  # no SDK, no daemon, no permission, a malformed DOCKER_HOST
        return False


def make_provider(
    name: str,
    store: SnapshotStore,
    *,
    job: str,
    keep_snapshots: bool = False,
    agent_mounts: dict[str, str] | None = None,
    base_image_map: dict[str, str] | None = None,
    hidden: list[Path] | None = None,
    harden: bool | None = None,
    persistent: bool = False,
    job_folder: str | None = None,
    snapshot_mode: str | None = None,
) -> SandboxProvider:
    """``agent_mounts``: the scaffold's read-only host folders (containers only);
    ``hidden``: host paths a hardened local sandbox covers (the job directory); ``harden``:
    None = harden the local sandbox as ``EVOROUND_LOCAL_ISOLATION`` says, False = do not;
    ``persistent``: the agent keeps processes between commands (see ``LocalProvider``);
    ``job_folder``: :func:`job_folder_key` of the job, labelled on Docker containers;
    ``snapshot_mode``: Docker's (None: ``EVOROUND_DOCKER_SNAPSHOT``, else workspace)."""
    if name == "local":
        return LocalProvider(store, hidden=hidden, harden=harden, persistent=persistent)
    if name == "docker":
        from evoround.sandboxes.docker import DockerProvider  # needs the docker SDK/engine

        return DockerProvider(
            store,
            job=job,
            keep_snapshots=keep_snapshots,
            agent_mounts=agent_mounts,
            base_image_map=base_image_map,
            job_folder=job_folder,
            snapshot_mode=snapshot_mode,
        )
    raise ValueError(f"unknown sandbox {name!r}: choose one of {', '.join(BACKENDS)}")
