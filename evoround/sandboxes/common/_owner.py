"""Who owns a sandbox folder, told so that a sweep on shared storage can trust it.

A bare pid (the ``owner.pid`` of earlier versions) means something on one machine only: on
a Ray cluster whose workers share ``EVOROUND_HOME``, a worker on another host found the pid
"dead" and removed live workspaces. An :class:`OwnerRecord` therefore names the host
(hostname, ``/etc/machine-id``), the running kernel (``boot_id``: new at every boot), the
pid namespace (a container's pids mean nothing outside it) and the process start time
(``/proc/<pid>/stat``: a reused pid is another process). :func:`owner_dead` decides, from a
record and facts about where it runs, whether the owner is *provably* dead:

- same kernel and pid namespace: dead when the pid is gone or started at another time;
- same machine, another boot id: dead (the machine rebooted since);
- anything else (another host, another container): dead only when the record's lease ran
  out, :data:`OWNER_LEASE_S` without a refresh of its mtime. The owner refreshes it (a
  heartbeat thread, every :data:`HEARTBEAT_S`), and so does every sweep that proves an
  owner alive; so an orphan of a dead host is still collected, a day later.
"""

from __future__ import annotations

import contextlib
import os
import socket
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, ConfigDict

from evoround.fileio import atomic_write

OWNER_RECORD = "owner.json"
"""In each sandbox folder: its :class:`OwnerRecord` (JSON, written atomically)."""
LEGACY_OWNER_FILE = "owner.pid"
"""Earlier versions' owner file, a bare pid: still honoured (same-host pid check)."""
OWNER_LEASE_S = 24 * 3600.0
"""A record no one could check (another host, another pid namespace) untouched this long
is an orphan: its owner would have refreshed it every :data:`HEARTBEAT_S`."""
HEARTBEAT_S = 3600.0
"""How often an owner refreshes the mtime of its records."""
UNKNOWN_START = -1
"""A process start time that could not be read (no ``/proc``)."""
GENERIC_HOSTNAMES = frozenset({"", "localhost", "localhost.localdomain"})
"""Hostnames that tell machines apart too poorly to conclude "this machine rebooted"."""


class OwnerRecord(BaseModel):
    """The engine process that made a sandbox folder."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    host: str
    machine_id: str = ""
    boot_id: str = ""
    pid_ns: str = ""
    pid: int
    start: int = UNKNOWN_START
    """The process start time in clock ticks after boot (field 22 of ``/proc/<pid>/stat``)."""


@dataclass(frozen=True)
class Here:
    """Facts about the host and pid namespace a sweep runs in."""

    host: str
    machine_id: str
    boot_id: str
    pid_ns: str

    @classmethod
    def read(cls) -> Here:
        pid_ns = ""
        with contextlib.suppress(OSError):
            pid_ns = os.readlink("/proc/self/ns/pid")
        return cls(
            socket.gethostname(),
            _read("/etc/machine-id"),
            _read("/proc/sys/kernel/random/boot_id"),
            pid_ns,
        )


def _read(path: str) -> str:
    try:
        return Path(path).read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return ""


def process_start(pid: int) -> int | None:
    """When process ``pid`` (as this pid namespace sees it) started, in clock ticks after
    boot; None when there is no such process; :data:`UNKNOWN_START` when it cannot be read."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
        return int(text.rsplit(")", 1)[1].split()[19])  # field 22; a name may hold ")"
    except FileNotFoundError:
        return None
    except (OSError, ValueError, IndexError):
        pass
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return None
    except PermissionError:  # someone else's live process
        return UNKNOWN_START
    return UNKNOWN_START


def this_owner(here: Here | None = None) -> OwnerRecord:
    """The record of this process."""
    h = here or Here.read()
    pid = os.getpid()
    start = process_start(pid)
    return OwnerRecord(
        host=h.host,
        machine_id=h.machine_id,
        boot_id=h.boot_id,
        pid_ns=h.pid_ns,
        pid=pid,
        start=UNKNOWN_START if start is None else start,
    )


def same_kernel(rec: OwnerRecord, here: Here) -> bool:
    """Whether the record's pid can be checked here: the same running kernel (boot id; with
    none known on either side, the same hostname) and the same pid namespace."""
    known = rec.boot_id or here.boot_id
    kernel = rec.boot_id == here.boot_id if known else rec.host == here.host
    return kernel and rec.pid_ns == here.pid_ns


def owner_dead(
    rec: OwnerRecord,
    here: Here,
    started: int | None,
    age_s: float,
    lease_s: float = OWNER_LEASE_S,
) -> bool:
    """Whether the owner named by ``rec`` is provably dead (see the module doc).

    ``started``: what :func:`process_start` says of ``rec.pid`` here (only used when the
    pid can be checked here); ``age_s``: seconds since the record was last refreshed."""
    if same_kernel(rec, here):
        if started is None:
            return True
        return UNKNOWN_START not in (started, rec.start) and started != rec.start
    if (
        rec.host == here.host
        and rec.host not in GENERIC_HOSTNAMES
        and rec.machine_id == here.machine_id
        and rec.boot_id
        and here.boot_id
        and rec.boot_id != here.boot_id
    ):
        return True  # this very machine, booted again since
    return age_s > lease_s


def write_owner(folder: Path) -> None:
    """Record this process as the owner of ``folder`` and keep the record fresh while it
    lives (:data:`HEARTBEAT_S`)."""
    path = folder / OWNER_RECORD
    atomic_write(path, this_owner().model_dump_json())
    _HEARTBEAT.add(path)


class _Heartbeat:
    """Refreshes the mtime of this process's records (removed ones are dropped)."""

    def __init__(self) -> None:
        self._paths: set[Path] = set()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def add(self, path: Path) -> None:
        with self._lock:
            self._paths.add(path)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(
                    target=self._run, name="evoround-owner-heartbeat", daemon=True
                )
                self._thread.start()

    def _run(self) -> None:
        while True:
            time.sleep(HEARTBEAT_S)
            self.beat()

    def beat(self) -> None:
        with self._lock:
            paths = list(self._paths)
        for p in paths:
            if not renew(p):
                with self._lock:
                    self._paths.discard(p)

    def forget_all(self) -> None:
        """In a forked child: the records are its parent's, not its own."""
        self._paths = set()
        self._lock = threading.Lock()
        self._thread = None


def renew(record: Path) -> bool:
    """Refresh a record's lease (its mtime); False when it is gone."""
    try:
        os.utime(record)
    except FileNotFoundError:
        return False
    except OSError:
        pass  # not ours to touch (another user's): its owner refreshes it
    return True


_HEARTBEAT = _Heartbeat()
os.register_at_fork(after_in_child=_HEARTBEAT.forget_all)
