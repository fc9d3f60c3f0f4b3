"""What a Ray cluster must give a job, checked before any work, and the head watched during it.

Why: on a cluster the driver and the workers are different machines. A worker that cannot
see the driver's job folder (not on shared storage, or mounted at another path), or runs
another evoround, fails deep inside a unit with a remote traceback, after work has begun.
So before the first unit, :func:`probe_nodes` runs one tiny task on *every* node (pinned
to it) that reads a token the driver just wrote into the job folder, looks for the task
folders, and reports its evoround version; what is wrong is one line naming the node
(:class:`ClusterError`). A snapshot store the nodes do not share is a warning, not an error
(each node then builds its own reference states; an attempt interrupted on one node cannot
continue on another).

And when the Ray head is lost, Ray's driver process ends itself with exit 1 after its GCS
reconnect timeout (60 s), saying nothing a user can act on. :class:`HeadWatch` probes the
head's GCS port from a thread; once it has been unreachable for
``EVOROUND_RAY_HEAD_TIMEOUT`` (20 s), :meth:`HeadWatch.lost` says so and the executor stops the job
(:class:`evoround.engine._executor.RunnerLost`) before Ray does, so the run ends with an
evoround line and the command that resumes it.

Everything here but :func:`probe_node` runs in the driver; ``probe_node`` runs on a worker.
"""

from __future__ import annotations

import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path
from typing import Any

from evoround.settings import settings

PROBE_TIMEOUT_S = 120.0
"""How long the probe waits for every node to answer (a node starting a worker is slow)."""
WORKERS_DIR = ".workers"
"""In the job folder: the workers' logs (``<host>-<pid>.log``) and the probe's token."""


class ClusterError(ValueError):
    """The cluster cannot run this job (one line naming the node and what it lacks)."""


def _evoround_version() -> str:
    try:
        return version("evoround")
    except PackageNotFoundError:
        return "unknown"


def probe_node(job_file: str, store_file: str, token: str, tasks: list[str]) -> dict[str, Any]:
    """On a worker node: what it sees of the job (plain data, so any version can answer).
    ``job_file`` and ``store_file``: the token files of :class:`Tokens` (full paths)."""
    seen: dict[str, Any] = {"host": socket.gethostname(), "version": _evoround_version()}
    seen["job_dir"] = _holds(job_file, token)
    seen["missing_tasks"] = [t for t in tasks if not Path(t).is_dir()]
    seen["store"] = _holds(store_file, token)
    seen["package"] = str(Path(__file__).resolve().parents[1])
    return seen


def _holds(path: str, token: str) -> bool:
    """Whether the file at ``path`` can be read here and holds exactly ``token``."""
    try:
        return Path(path).read_text() == token
    except OSError:
        return False


@dataclass
class Tokens:
    """The files the probe reads: one in the job folder, one in the snapshot store."""

    job_dir: Path
    store: Path
    name: str = field(default_factory=lambda: f"probe-{secrets.token_hex(8)}")
    value: str = field(default_factory=lambda: secrets.token_hex(16))

    @property
    def job_file(self) -> Path:
        return self.job_dir / WORKERS_DIR / self.name

    @property
    def store_file(self) -> Path:
        return self.store / self.name

    def write(self) -> None:
        for path in (self.job_file, self.store_file):
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(self.value)

    def remove(self) -> None:
        for path in (self.job_file, self.store_file):
            path.unlink(missing_ok=True)


def verdict(node: str, seen: dict[str, Any], tokens: Tokens) -> str | None:
    """What is wrong with one node's answer (None: nothing), as one line."""
    mine = _evoround_version()
    if seen.get("version") != mine:
        return (
            f"Ray node {node} runs evoround {seen.get('version')} (at {seen.get('package')}), "
            f"this driver {mine}: install the same evoround on every node, or pass it in a "
            "Ray runtime_env (docs/cluster.md)"
        )
    if not seen.get("job_dir"):
        return (
            f"the job folder {tokens.job_dir} is not visible on Ray node {node}: every node "
            "must see it at the same path on shared storage (NFS, a bind mount of one "
            "volume); see docs/cluster.md"
        )
    missing = seen.get("missing_tasks") or []
    if missing:
        return (
            f"task folder {missing[0]} is not visible on Ray node {node}"
            + (f" (and {len(missing) - 1} more)" if len(missing) > 1 else "")
            + ": put the tasks on storage every node shares, at the same path"
        )
    return None


def node_name(node: dict[str, Any]) -> str:
    """A Ray node as a user knows it: hostname and address."""
    host = node.get("NodeManagerHostname") or "?"
    return f"{host} ({node.get('NodeManagerAddress') or '?'})"


def gcs_endpoint(address: str) -> tuple[str, int] | None:
    """``host:port`` of the head's GCS, or None when it cannot be told."""
    host, _, port = address.rpartition(":")
    try:
        return (host.strip("[]") or "127.0.0.1", int(port))
    except ValueError:
        return None


class HeadWatch:
    """A thread that connects to the head's GCS port every ``every_s``; :meth:`lost` is the
    reason to stop once it has failed for ``after_s`` in a row (None while it answers)."""

    def __init__(
        self, endpoint: tuple[str, int], *, after_s: float | None = None, every_s: float = 2.0
    ) -> None:
        self.endpoint = endpoint
        self.after_s = settings().ray_head_timeout if after_s is None else after_s
        self.every_s = every_s
        self._failing_since: float | None = None
        self._lost: str | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="evoround-ray-head", daemon=True)
        self._thread.start()

    def _reachable(self) -> bool:
        try:
            with socket.create_connection(self.endpoint, timeout=self.every_s):
                return True
        except OSError:
            return False

    def _run(self) -> None:
        while not self._stop.wait(self.every_s):
            if self._reachable():
                self._failing_since = None
                continue
            now = time.monotonic()
            self._failing_since = self._failing_since or now
            if now - self._failing_since >= self.after_s:
                host, port = self.endpoint
                self._lost = (
                    f"the Ray head at {host}:{port} has been unreachable for "
                    f"{self.after_s:.0f} s: the job stopped"
                )
                return

    def lost(self) -> str | None:
        return self._lost

    def close(self) -> None:
        self._stop.set()


class NodeWatch:
    """Which Ray nodes the head has marked dead, asked of it at most every ``every_s``.

    Why: the head marks a node that stopped answering (killed, or cut off the network) dead
    after Ray's health checks, about 30 s; but the driver's stream of a unit running there
    learned it only about 6 minutes later with a 30 s partition (docs/cluster.md). Reading
    the head's node table lets the runner give such a unit up (an infra failure, re-run on
    a live node) as soon as the head has."""

    def __init__(self, nodes: Callable[[], list[dict[str, Any]]], every_s: float = 2.0) -> None:
        self._nodes = nodes
        self.every_s = every_s
        self._dead: set[str] = set()
        self._asked = -float("inf")
        self._lock = threading.Lock()

    def dead(self, node_id: str) -> bool:
        with self._lock:
            if time.monotonic() - self._asked >= self.every_s:
                self._asked = time.monotonic()
                try:
                    table = self._nodes()
                except Exception:  # the head is busy or gone: HeadWatch has that case
                    return node_id in self._dead
                self._dead = {str(n.get("NodeID")) for n in table if not n.get("Alive")}
            return node_id in self._dead


def worker_log(job_dir: Path) -> logging.Handler | None:
    """On a worker: a handler that appends the engine's log to
    ``<job>/.workers/<host>-<pid>.log`` (None when the folder cannot be written)."""
    folder = job_dir / WORKERS_DIR
    try:
        folder.mkdir(parents=True, exist_ok=True)
        handler = logging.FileHandler(folder / f"{socket.gethostname()}-{os.getpid()}.log")
    except OSError:
        return None
    handler.setFormatter(
        logging.Formatter("%(asctime)s %(levelname)s %(name)s [%(threadName)s] %(message)s")
    )
    return handler
