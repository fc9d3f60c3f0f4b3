"""The verifier's bytecode cache for a task image: a named volume, filled once per image by
a container that runs only the harness's filler (``common.PREPARE_BYTECODE``) on the
untouched image, then mounted **read-only** at :data:`BYTECODE` in every container of the
provider. No container of an attempt ever has it writable, so an agent cannot poison it;
its bytecode is checked-hash, so it only ever stands for the very source beside it (see
``evoround.sandboxes.common._bytecode``).

The filler writes each module twice: at its own path and under :data:`PRISTINE` for a
source under ``/usr`` (commit mode's verifier runs the pristine copy mounted there). A
marker under ``EVOROUND_HOME`` (the volume's name and creation time) says the volume was
filled to the end; a volume without one is filled again.
"""

from __future__ import annotations

import contextlib
import hashlib
import threading
import uuid
from pathlib import Path

import docker
import docker.errors
import requests

from evoround.sandboxes.common import PREPARE_BYTECODE
from evoround.sandboxes.docker._config import LABEL
from evoround.sandboxes.docker._pristine import PRISTINE

BYTECODE = "/evoround/bytecode"
"""Where the image's bytecode cache is mounted (read-only) in every container."""

BYTECODE_ROLE = "bytecode"

_LOCKS: dict[str, threading.Lock] = {}
_LOCKS_LOCK = threading.Lock()


def _marker(home: Path, volume: str, created: str) -> Path:
    tag = hashlib.sha256(f"{volume}\n{created}".encode()).hexdigest()[:16]
    return home / "bytecode" / f"{volume}-{tag}.filled"


def ensure_bytecode(client: docker.DockerClient, image_id: str, home: Path) -> str | None:
    """The name of ``image_id``'s bytecode volume, filled on first use; None when it cannot
    be made (the verifier then compiles from source, as it did before)."""
    volume = f"evoround-bytecode-{image_id.split(':')[-1][:20]}"
    api = client.api
    with _LOCKS_LOCK:
        lock = _LOCKS.setdefault(volume, threading.Lock())
    with lock:  # one filler per volume in this process (other images' fills go on)
        try:
            try:
                created = api.inspect_volume(volume).get("CreatedAt", "")
            except docker.errors.NotFound:
                labels = {LABEL: "1", "evoround.role": BYTECODE_ROLE}
                created = api.create_volume(volume, labels=labels).get("CreatedAt", "")
            marker = _marker(home, volume, created)
            if marker.is_file():
                return volume
            if not _fill(api, image_id, volume):
                return None
            marker.parent.mkdir(parents=True, exist_ok=True)
            marker.write_text(f"{image_id}\n", encoding="utf-8")
            return volume
        except (docker.errors.APIError, requests.exceptions.RequestException, OSError):
            return None


def _fill(api: docker.APIClient, image_id: str, volume: str) -> bool:
    """Run the filler in a container of the untouched image, the volume writable there."""
    cid = None
    try:
        cid = api.create_container(
            image_id,
            entrypoint=[
                "python3",
                "-I",
                "-B",
                "-c",
                PREPARE_BYTECODE,
                BYTECODE,
                f"/usr={PRISTINE}",
            ],  # noqa: E501
            user="0:0",
            working_dir="/",
            name=f"evoround-bytecode-fill-{uuid.uuid4().hex[:8]}",
            labels={LABEL: "1", "evoround.role": BYTECODE_ROLE},
            host_config=api.create_host_config(
                network_mode="none", binds={volume: {"bind": BYTECODE, "mode": "rw"}}
            ),
        )["Id"]
        api.start(cid)
        return api.wait(cid, timeout=300).get("StatusCode") == 0
    except (docker.errors.APIError, requests.exceptions.RequestException):
        return False
    finally:
        if cid is not None:
            with contextlib.suppress(docker.errors.APIError):
                api.remove_container(cid, force=True)
