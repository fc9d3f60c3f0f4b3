"""Choose a sandbox backend by name (``--sandbox``)."""

from __future__ import annotations

from pathlib import Path

from evoround.sandboxes.common import SandboxProvider
from evoround.sandboxes.local import LocalProvider
from evoround.snapshots import SnapshotStore

BACKENDS = ("local", "docker")


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
) -> SandboxProvider:
    """``agent_mounts``: the scaffold's read-only host folders (containers only);
    ``hidden``: host paths a hardened local sandbox covers (the job directory); ``harden``:
    None = harden the local sandbox as ``EVOROUND_LOCAL_ISOLATION`` says, False = do not;
    ``persistent``: the agent keeps processes between commands (see ``LocalProvider``)."""
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
        )
    raise ValueError(f"unknown sandbox {name!r}: choose one of {', '.join(BACKENDS)}")
