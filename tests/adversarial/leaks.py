"""Leak probes for the adversarial suite: containers of a job, processes of a sandbox."""

from __future__ import annotations

import os
from pathlib import Path

from evoround.sandboxes import job_folder_key


def job_containers(client, job: str, job_dir: Path | None = None) -> list[str]:  # noqa: ANN001
    """Names of every container (running or not) labelled with ``job`` (and, given
    ``job_dir``, with that job folder's key: another run of a job of the same name on the
    same engine, such as a second suite beside this one, is not this job's leak)."""
    labels = [f"evoround.job={job}"]
    if job_dir is not None:
        labels.append(f"evoround.job_folder={job_folder_key(job_dir)}")
    found = client.api.containers(all=True, filters={"label": labels})
    return [c["Names"][0] for c in found]


def processes_with(marker: str) -> list[int]:
    """Pids of live processes whose command line or environment mentions ``marker``."""
    pids = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit() or int(d.name) == os.getpid():
            continue
        try:
            blob = (d / "cmdline").read_bytes() + (d / "environ").read_bytes()
            state = (d / "stat").read_text().split(")")[-1].split()[0]
        except OSError:
            continue
        if marker.encode() in blob and state != "Z":
            pids.append(int(d.name))
    return pids
