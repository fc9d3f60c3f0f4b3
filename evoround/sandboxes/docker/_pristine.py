"""A pristine interpreter for ``commit``-mode verification.

In ``commit`` mode a verification clone starts from ``docker commit`` of the agent's
container: the agent (root there) may have changed *anything* outside the workspace — a
``.pth`` file or ``sitecustomize`` in site-packages, a patched ``_pytest``, the standard
library, ``/bin/sh``, ``timeout``, libc, ``/etc/ld.so.preload``. Running pytest with the
clone's own ``python3`` would run the agent's code before the verifier is in place.

So the task image's ``/usr`` is copied, once per image, into a named volume (Docker fills
an empty volume from the image at first mount) and mounted **read-only** at
:data:`PRISTINE` in every container of a commit-mode provider. The verifier and the exec
wrapper run the pristine dynamic loader on pristine binaries with the pristine library
directory first (``ld.so --library-path``), Python with ``-I -S`` (no site, no ``.pth``,
no environment) and ``sys.path`` set explicitly: the pristine entries first, the clone's
own entries after them, so an honest agent's installed dependencies are still importable
but nothing it changed can shadow the standard library or pytest. ``/etc/ld.so.preload``
is emptied in the clone before anything runs. The volume is a cache like the task image
(label ``evoround.role=pristine``).

Images whose Python, shell, ``timeout`` or loader live outside ``/usr`` (not merged-/usr)
are refused with a clear error: commit mode cannot be verified safely there.
"""

from __future__ import annotations

import contextlib
import json
import uuid
from dataclasses import dataclass

import docker
import docker.errors

from evoround.programs import program_text
from evoround.sandboxes.common import SandboxError
from evoround.sandboxes.docker._config import LABEL

PRISTINE = "/evoround/pristine"
"""Where the task image's pristine ``/usr`` is mounted (read-only) in commit-mode containers."""

PRISTINE_ROLE = "pristine"

_PROBE = program_text("evoround.sandboxes.docker", "pristine_probe.py")


@dataclass(frozen=True)
class PristinePython:
    """How to run the task image's own, untouched tools inside a commit-mode clone."""

    volume: str
    loader: str
    library_path: str
    python: str
    sh: str
    timeout: str
    path_first: tuple[str, ...]
    """The pristine interpreter's ``sys.path`` (under :data:`PRISTINE`)."""
    path_last: tuple[str, ...]
    """The same entries in the clone (the agent's installed packages), searched after."""

    def run(self, exe: str) -> list[str]:
        """argv prefix that runs pristine ``exe`` with the pristine loader and libraries."""
        return [self.loader, "--library-path", self.library_path, exe]


def _mapped(path: str) -> str:
    if not path.startswith("/usr/"):
        raise SandboxError(
            f"commit mode: {path} lies outside /usr in the task image, so no pristine copy "
            "of it can be mounted; use the default workspace snapshot mode for this task"
        )
    return PRISTINE + path[len("/usr") :]


def ensure_pristine(client: docker.DockerClient, image_id: str) -> PristinePython:
    """The pristine-``/usr`` volume of ``image_id`` (created on first use) and its layout."""
    volume = f"evoround-pristine-{image_id.split(':')[-1][:20]}"
    api = client.api
    name = f"evoround-pristine-probe-{uuid.uuid4().hex[:8]}"
    cid = None
    try:
        try:
            api.inspect_volume(volume)
        except docker.errors.NotFound:
            # Docker fills an empty named volume from the image's /usr at first mount (the
            # probe below); the probe then runs that very copy, so a bad copy fails loudly.
            api.create_volume(volume, labels={LABEL: "1", "evoround.role": PRISTINE_ROLE})
        cid = api.create_container(
            image_id,
            entrypoint=["python3", "-I", "-c", _PROBE],
            name=name,
            labels={LABEL: "1", "evoround.role": PRISTINE_ROLE},
            host_config=api.create_host_config(
                network_mode="none", binds={volume: {"bind": "/usr", "mode": "rw"}}
            ),
        )["Id"]
        api.start(cid)
        code = api.wait(cid, timeout=300).get("StatusCode")
        out = api.logs(cid, stdout=True, stderr=False).decode(errors="replace").strip()
        if code != 0:
            err = api.logs(cid, stdout=False, stderr=True).decode(errors="replace")[-500:]
            raise SandboxError(f"commit mode: probing the task image's Python failed: {err}")
        probe = json.loads(out.splitlines()[-1])
    except docker.errors.APIError as e:
        raise SandboxError(f"commit mode: cannot prepare the pristine interpreter: {e}") from e
    finally:
        if cid is not None:
            with contextlib.suppress(docker.errors.APIError):
                api.remove_container(cid, force=True)
    if not probe.get("loader"):
        raise SandboxError("commit mode: the task image's Python has no dynamic loader to pin")
    entries = [p for p in probe["sys_path"] if p]
    pp = PristinePython(
        volume=volume,
        loader=_mapped(probe["loader"]),
        library_path=":".join(_mapped(d) for d in probe["libdirs"]),
        python=_mapped(probe["python"]),
        sh=_mapped(probe["sh"]),
        timeout=_mapped(probe["timeout"]),
        path_first=tuple(_mapped(p) for p in entries if p.startswith("/usr/")),
        path_last=tuple(entries),
    )
    return pp
