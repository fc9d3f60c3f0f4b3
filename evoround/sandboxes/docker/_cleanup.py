"""Clean-up of what crashed runs left: labelled containers and agent snapshot images."""

from __future__ import annotations

from typing import Any

import docker
import docker.errors

from evoround.sandboxes.docker._config import LABEL, LABEL_JOB, LABEL_JOB_FOLDER, safe_name
from evoround.sandboxes.docker._images import (
    ROLE_LABEL,
)

# ---- crash cleanup ---------------------------------------------------------------


class CleanupReport:
    """What :func:`cleanup_docker` removed (or would remove, with ``dry_run``)."""

    def __init__(self) -> None:
        self.containers: list[str] = []
        self.images: list[str] = []
        self.errors: list[str] = []


def _labelled_images(client: docker.DockerClient, role: str) -> list[dict[str, Any]]:
    return list(client.api.images(filters={"label": f"{ROLE_LABEL}={role}"}))


def cleanup_docker(
    client: docker.DockerClient,
    *,
    job: str | None = None,
    include_cache: bool = False,
    dry_run: bool = False,
) -> CleanupReport:
    """Remove what crashed runs left: every ``evoround=1`` container and agent snapshot image.

    Reference snapshot images and task images are caches and stay unless
    ``include_cache``; the base image always stays (rebuilding it needs a mirror).
    """
    report = CleanupReport()
    _remove_containers(client, report, job=job, dry_run=dry_run)
    _remove_images(client, report, job=job, include_cache=include_cache, dry_run=dry_run)
    return report


def remove_job_folder_containers(client: docker.DockerClient, key: str) -> CleanupReport:
    """Remove every container labelled with job folder ``key`` (names and errors in the
    report).

    Called by the run that holds the job's lock once its units are over: no live unit of
    that folder can own one then, so what is left was left by a lost node (a killed Ray
    worker's sandboxes are siblings on the engine and outlive it)."""
    report = CleanupReport()
    _remove_labelled(client, report, [f"{LABEL_JOB_FOLDER}={key}"], dry_run=False)
    return report


def _remove_containers(
    client: docker.DockerClient, report: CleanupReport, *, job: str | None, dry_run: bool
) -> None:
    """Every labelled container (of ``job`` only, when given), running or not."""
    extra = [f"{LABEL_JOB}={safe_name(job)}"] if job else []
    _remove_labelled(client, report, extra, dry_run=dry_run)


def _remove_labelled(
    client: docker.DockerClient, report: CleanupReport, labels: list[str], *, dry_run: bool
) -> None:
    """Every ``evoround=1`` container that also has ``labels``, running or not."""
    filters: dict[str, Any] = {"label": [f"{LABEL}=1", *labels]}
    for c in client.api.containers(all=True, filters=filters):
        name = (c.get("Names") or [c["Id"][:12]])[0].lstrip("/")
        report.containers.append(name)
        if not dry_run:
            try:
                client.api.remove_container(c["Id"], force=True, v=True)
            except docker.errors.NotFound:
                pass
            except docker.errors.APIError as e:
                report.errors.append(f"container {name}: {e}")


def _doomed_images(
    client: docker.DockerClient, *, job: str | None, include_cache: bool
) -> list[dict[str, Any]]:
    """The images to remove, snapshots first (env images are their parents): agent
    snapshots of ``job`` (any job when None); reference snapshots and, for every job, task
    images only with ``include_cache``."""

    def doomed(img: dict[str, Any]) -> bool:
        labels = img.get("Labels") or {}
        if not include_cache and labels.get("evoround.kind") == "reference":
            return False
        return not job or labels.get(LABEL_JOB) == safe_name(job)

    out = [img for img in _labelled_images(client, "snapshot") if doomed(img)]
    if include_cache and not job:
        out += _labelled_images(client, "env")
    return out


def _remove_images(
    client: docker.DockerClient,
    report: CleanupReport,
    *,
    job: str | None,
    include_cache: bool,
    dry_run: bool,
) -> None:
    for img in _doomed_images(client, job=job, include_cache=include_cache):
        ref = (img.get("RepoTags") or [img["Id"]])[0]
        report.images.append(ref)
        if not dry_run:
            try:
                client.api.remove_image(img["Id"], force=True)
            except docker.errors.NotFound:
                pass
            except docker.errors.APIError as e:
                report.errors.append(f"image {ref}: {e}")
