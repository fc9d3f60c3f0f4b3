"""The job lock: one process at a time runs a job folder.

Why: two ``evoround run --job X`` (a CI retry, a second terminal) would both run every
round and both append to results.jsonl. The first to start takes ``<job>/job.lock`` and
holds it until the job ends (normally, on Ctrl-C/SIGTERM or on an exception); a second
run is refused in one line naming the holder.

How: the file is opened (created if absent) and ``flock``-ed, then it holds the holder's
:class:`JobLockRecord` (who, from the sandboxes' :class:`OwnerRecord`, and since when).
The flock is what excludes another process of this host (the kernel drops it when its
holder dies, so a killed run never blocks the next); the record is what tells a second
run who holds the job, and what a run on *another* host sharing the folder honours (flock
on shared storage may not reach across hosts). A record whose holder is provably dead
(same kernel: the pid is gone or started at another time; same machine, another boot) is
taken over; a record from another host is honoured: if that host is gone, delete the file.
On release the file is removed (under the flock; a process that opened the old file
meanwhile sees that the name now points elsewhere and tries again).
"""

from __future__ import annotations

import contextlib
import fcntl
import math
import os
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from evoround.sandboxes import Here, OwnerRecord, owner_dead, process_start, this_owner

LOCK_FILE = "job.lock"
"""In each job folder while a run of it is in progress: its :class:`JobLockRecord`."""
_READ_TRIES = 20
"""How often (every 50 ms) a refused run re-reads a lock its holder may still be writing."""


class JobLockRecord(BaseModel):
    """Who runs a job and since when (UTC)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    owner: OwnerRecord
    since: datetime


class JobLocked(ValueError):
    """The job is being run by another process (one line naming it: nothing has run)."""


def _describe(job: str, rec: JobLockRecord | None, path: Path) -> str:
    if rec is None:
        who = "another process"
    else:
        since = rec.since.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        who = f"pid {rec.owner.pid} on host {rec.owner.host or '?'} since {since}"
    return (
        f"job {job} is being run by {who}; wait for it to end, or if that run is gone "
        f"(its host is down), delete {path} and run again"
    )


def _parse(data: bytes) -> JobLockRecord | None:
    try:
        return JobLockRecord.model_validate_json(data) if data.strip() else None
    except ValidationError:
        return None


def _read_record(path: Path) -> JobLockRecord | None:
    """The holder's record; a moment's patience for a holder still writing it."""
    for _ in range(_READ_TRIES):
        try:
            rec = _parse(path.read_bytes())
        except FileNotFoundError:
            return None
        if rec is not None:
            return rec
        time.sleep(0.05)
    return None


def holder_dead(rec: JobLockRecord, here: Here | None = None) -> bool:
    """Whether the run named by ``rec`` is provably dead. A holder on another host is
    never presumed dead (no lease: a job runs for days), only a holder on this machine."""
    h = here or Here.read()
    return owner_dead(rec.owner, h, process_start(rec.owner.pid), age_s=0.0, lease_s=math.inf)


def job_holder(job_dir: Path) -> JobLockRecord | None:
    """Who runs the job in ``job_dir`` now: the record of ``job.lock`` unless there is
    none or its holder is provably dead (a run killed with SIGKILL leaves the file). Only
    reads: taking the flock, even for a moment, could refuse a run starting just then."""
    rec = _read_record(job_dir / LOCK_FILE)
    if rec is None or holder_dead(rec):
        return None
    return rec


def _same_file(fd: int, path: Path) -> bool:
    try:
        return os.fstat(fd).st_ino == os.stat(path).st_ino
    except FileNotFoundError:
        return False


def _read_fd(fd: int) -> bytes:
    os.lseek(fd, 0, os.SEEK_SET)
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    return b"".join(chunks)


def _write_fd(fd: int, data: bytes) -> None:
    os.ftruncate(fd, 0)
    os.lseek(fd, 0, os.SEEK_SET)
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]
    os.fsync(fd)


def _try_take(path: Path, job: str) -> int | None:
    """The locked descriptor of ``path`` holding our record; None to try again (the file
    was removed or replaced meanwhile); :class:`JobLocked` when someone else holds it."""
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            if not _same_file(fd, path):  # its holder released it just now
                os.close(fd)
                return None
            raise JobLocked(_describe(job, _read_record(path), path)) from None
        if not _same_file(fd, path):
            os.close(fd)
            return None
        old = _parse(_read_fd(fd))
        if old is not None and not holder_dead(old):
            raise JobLocked(_describe(job, old, path))
        mine = JobLockRecord(owner=this_owner(), since=datetime.now(UTC))
        data = mine.model_dump_json().encode()
        _write_fd(fd, data)
        if _read_fd(fd) != data or not _same_file(fd, path):  # re-check that we won
            raise JobLocked(_describe(job, _read_record(path), path))
        return fd
    except BaseException:
        with contextlib.suppress(OSError):
            os.close(fd)
        raise


def _release(fd: int, path: Path) -> None:
    with contextlib.suppress(OSError):
        if _same_file(fd, path):
            os.unlink(path)
    with contextlib.suppress(OSError):
        os.close(fd)


@contextlib.contextmanager
def job_lock(job_dir: Path) -> Iterator[Path]:
    """Hold ``<job_dir>/job.lock`` for the duration of the block (see the module doc);
    raises :class:`JobLocked` when another live run holds it."""
    job_dir.mkdir(parents=True, exist_ok=True)
    path = job_dir / LOCK_FILE
    for _ in range(10):
        fd = _try_take(path, job_dir.name)
        if fd is not None:
            break
    else:
        raise JobLocked(_describe(job_dir.name, _read_record(path), path))
    try:
        yield path
    finally:
        _release(fd, path)
