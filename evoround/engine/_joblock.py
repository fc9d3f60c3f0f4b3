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
taken over. A holder on another host cannot be checked from here, so the holder proves it
lives: a heartbeat thread rewrites its record (``beat``, every :data:`BEAT_S`). A record
from another host is honoured while its beat is recent by this host's clock; one whose beat
is older than :data:`STALE_S` is watched for :data:`WATCH_S` more, and taken over only if it
did not change meanwhile (so a clock skew between the hosts can delay a takeover but never
take a live holder's job). A record with no beat (an earlier version) is honoured: if that
host is gone, delete the file. A holder that finds its record replaced or gone (it stalled
past the watch, or a person deleted the file) logs who took it and stops its run.
On release the file is removed if it still holds our record (under the flock; a process
that opened the old file meanwhile sees that the name now points elsewhere and tries again).
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import math
import os
import signal
import threading
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
BEAT_S = 20.0
"""How often a holder rewrites its record's ``beat``."""
STALE_S = 300.0
"""A beat older than this (by the reader's clock) makes a holder on another host suspect:
generous, since the two hosts' clocks may differ by minutes."""
WATCH_S = 3 * BEAT_S
"""How long a suspect record is watched; unchanged all along, its holder is gone."""
SETTLE_S = 2.0
"""After taking over a suspect record: how long to wait before checking the record is
still ours (two hosts that watched the same record take it at about the same time; the
later write wins and the earlier writer sees it)."""

_log = logging.getLogger(__name__)


class JobLockRecord(BaseModel):
    """Who runs a job and since when (UTC)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    owner: OwnerRecord
    since: datetime
    beat: datetime | None = None
    """The holder's last heartbeat (its clock, UTC); None from versions without one."""


class JobLocked(ValueError):
    """The job is being run by another process (one line naming it: nothing has run)."""


def _who(rec: JobLockRecord) -> str:
    since = rec.since.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    return f"pid {rec.owner.pid} on host {rec.owner.host or '?'} since {since}"


def _describe(job: str, rec: JobLockRecord | None, path: Path) -> str:
    who = "another process" if rec is None else _who(rec)
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
    """Whether the run named by ``rec`` is provably dead from here: only a holder on this
    machine can be (see :func:`suspect` for one on another host)."""
    h = here or Here.read()
    return owner_dead(rec.owner, h, process_start(rec.owner.pid), age_s=0.0, lease_s=math.inf)


def suspect(rec: JobLockRecord, now: datetime | None = None) -> bool:
    """Whether a holder (on another host) has not beaten for :data:`STALE_S` by our clock.
    A record without a beat never is (an earlier version: honoured)."""
    if rec.beat is None:
        return False
    age = ((now or datetime.now(UTC)) - rec.beat).total_seconds()
    return age > STALE_S


def _silent(path: Path, data: bytes) -> bool:
    """Whether ``path`` keeps exactly ``data`` for :data:`WATCH_S` (a live holder beats
    within it; a vanished file is no silence: someone released or took it)."""
    end = time.monotonic() + WATCH_S
    while True:
        try:
            if path.read_bytes() != data:
                return False
        except FileNotFoundError:
            return False
        left = end - time.monotonic()
        if left <= 0:
            return True
        time.sleep(min(1.0, left))


def job_holder(job_dir: Path) -> JobLockRecord | None:
    """Who runs the job in ``job_dir`` now: the record of ``job.lock`` unless there is
    none or its holder is provably dead (a run killed with SIGKILL leaves the file). Only
    reads: taking the flock, even for a moment, could refuse a run starting just then."""
    rec = _read_record(job_dir / LOCK_FILE)
    if rec is None or holder_dead(rec) or suspect(rec):
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


def _try_take(path: Path, job: str) -> _Held | None:
    """The lock on ``path`` with our record written; None to try again (the file was
    removed or replaced meanwhile); :class:`JobLocked` when someone else holds it."""
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
        old = _take_over(fd, path, job)
        return _write_ours(fd, path, job, old)
    except BaseException:
        with contextlib.suppress(OSError):
            os.close(fd)
        raise


def _take_over(fd: int, path: Path, job: str) -> JobLockRecord | None:
    """The live-looking holder we may take over (it beat last long ago and stayed silent
    while watched); None when the file holds no live holder; else :class:`JobLocked`."""
    raw = _read_fd(fd)
    old = _parse(raw)
    if old is None or holder_dead(old):
        return None
    if suspect(old) and _silent(path, raw):
        return old
    raise JobLocked(_describe(job, old, path))


def _write_ours(fd: int, path: Path, job: str, old: JobLockRecord | None) -> _Held:
    now = datetime.now(UTC)
    mine = JobLockRecord(owner=this_owner(), since=now, beat=now)
    data = mine.model_dump_json().encode()
    _write_fd(fd, data)
    if old is not None:
        _log.warning(
            "%s: taking the job over from %s (its heartbeat stopped)",
            job,
            _who(old),
        )
        time.sleep(SETTLE_S)
    if _read_fd(fd) != data or not _same_file(fd, path):  # re-check that we won
        raise JobLocked(_describe(job, _read_record(path), path))
    return _Held(fd, path, job, mine)


class _Held:
    """A lock this process holds, and the heartbeat that keeps its record fresh."""

    def __init__(self, fd: int, path: Path, job: str, mine: JobLockRecord) -> None:
        self.fd, self.path, self.job, self.mine = fd, path, job, mine
        self._stop = threading.Event()
        self._stop_main = threading.current_thread() is threading.main_thread()
        self._thread = threading.Thread(target=self._run, name="evoround-job-lock", daemon=True)
        self._thread.start()

    def _run(self) -> None:
        while not self._stop.wait(BEAT_S):
            try:
                ours = self.beat()
            except OSError as e:  # a full disk, a shared folder gone for a moment: retried
                _log.warning("%s: could not renew job.lock: %s", self.job, e)
                continue
            if not ours:
                self._lost()
                return

    def beat(self) -> bool:
        """Rewrite our record with a new beat; False when it is no longer ours."""
        if not self.ours():
            return False
        now = datetime.now(UTC)
        _write_fd(self.fd, self.mine.model_copy(update={"beat": now}).model_dump_json().encode())
        return True

    def _lost(self) -> None:
        taker = _read_record(self.path)
        _log.error(
            "%s: job.lock is no longer this run's (%s holds it now); stopping this run",
            self.job,
            _who(taker) if taker is not None else "nobody",
        )
        if self._stop_main and not self._stop.is_set():
            # as Ctrl-C: a real SIGINT to the main thread also ends a wait it is blocked in
            # (``_thread.interrupt_main`` would only be seen at its next bytecode)
            main = threading.main_thread().ident
            if main is not None:
                signal.pthread_kill(main, signal.SIGINT)

    def ours(self) -> bool:
        """Whether ``path`` still holds our record (not replaced nor rewritten by a taker)."""
        if not _same_file(self.fd, self.path):
            return False
        rec = _parse(_read_fd(self.fd))
        return rec is not None and rec.owner == self.mine.owner and rec.since == self.mine.since

    def release(self) -> None:
        """Stop beating; remove the file if it is still ours (a taker's record stays)."""
        self._stop.set()
        self._thread.join()
        with contextlib.suppress(OSError):
            if self.ours():
                os.unlink(self.path)
        with contextlib.suppress(OSError):
            os.close(self.fd)


@contextlib.contextmanager
def job_lock(job_dir: Path) -> Iterator[Path]:
    """Hold ``<job_dir>/job.lock`` for the duration of the block (see the module doc);
    raises :class:`JobLocked` when another live run holds it."""
    job_dir.mkdir(parents=True, exist_ok=True)
    path = job_dir / LOCK_FILE
    for _ in range(10):
        held = _try_take(path, job_dir.name)
        if held is not None:
            break
    else:
        raise JobLocked(_describe(job_dir.name, _read_record(path), path))
    try:
        yield path
    finally:
        held.release()
