"""The job lock: one run of a job folder at a time; a dead holder's lock is taken over, a
lock from another host is honoured while it beats (or when it has no beat), and taken over
once it stayed silent. Real processes, the real CLI."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
import threading
import time
from collections import Counter
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from evoround.engine import LOCK_FILE, JobLocked, JobLockRecord, _joblock, job_holder, job_lock
from evoround.results import read_results
from evoround.sandboxes import Here, OwnerRecord, process_start, this_owner
from tests.helpers import copy_counter

CLI = [sys.executable, "-m", "evoround.cli"]


def _slow_counter(tmp_path: Path) -> Path:
    """The counter task with a reference solution that takes a moment per round."""
    root = copy_counter(tmp_path)
    for sol in (root / "rounds").glob("*/solution"):
        (sol / "solve.sh").write_text("#!/bin/bash\nsleep 1\n")
    return root


def test_a_second_run_of_a_job_in_progress_is_refused_in_one_line(tmp_path: Path) -> None:
    root = _slow_counter(tmp_path)
    env = {**os.environ, "COLUMNS": "200", "EVOROUND_HOME": str(tmp_path / "h")}
    args = [*CLI, "run", str(root), "--out", str(tmp_path / "runs"), "--job", "j"]
    lock = tmp_path / "runs" / "j" / LOCK_FILE
    first = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        deadline = time.monotonic() + 120
        while not (lock.exists() and lock.stat().st_size) and time.monotonic() < deadline:
            assert first.poll() is None, first.communicate()
            time.sleep(0.05)
        holder = JobLockRecord.model_validate_json(lock.read_bytes())
        assert holder.owner.pid == first.pid
        second = subprocess.run(args, env=env, capture_output=True, text=True, timeout=120)
        assert second.returncode == 2, second.stderr
        lines = second.stderr.strip().splitlines()
        assert len(lines) == 1, second.stderr
        assert f"job j is being run by pid {first.pid} on host " in lines[0], lines[0]
        assert "Traceback" not in second.stderr
        out, err = first.communicate(timeout=300)
    finally:
        if first.poll() is None:
            first.kill()
    assert first.returncode == 0, err.decode()[-2000:]
    assert not lock.exists()  # released at the end
    records, problems = read_results(tmp_path / "runs" / "j" / "results.jsonl")
    assert problems == []
    keys = Counter(r.key for r in records)
    assert len(keys) == 8 and set(keys.values()) == {1}  # MT r1-4 and SR r1-4, once each


_OTHER = OwnerRecord(host="elsewhere", machine_id="m" * 32, boot_id="b" * 32, pid=4242)
"""A holder on another host (pid 4242 there)."""


def _dead_pid() -> int:
    child = subprocess.Popen(["true"])  # noqa: S607
    child.wait()
    return child.pid


def _record(**owner: object) -> JobLockRecord:
    return JobLockRecord(owner=this_owner().model_copy(update=owner), since=datetime.now(UTC))


def test_a_lock_left_by_a_dead_process_is_taken_over(tmp_path: Path) -> None:
    pid = _dead_pid()
    assert process_start(pid) is None
    (tmp_path / LOCK_FILE).write_text(_record(pid=pid).model_dump_json())
    with job_lock(tmp_path) as path:
        assert JobLockRecord.model_validate_json(path.read_bytes()).owner == this_owner()
    assert not (tmp_path / LOCK_FILE).exists()


def test_a_lock_of_a_reused_pid_is_taken_over(tmp_path: Path) -> None:
    """The pid lives, but it is another process (it started at another time)."""
    me = this_owner()
    (tmp_path / LOCK_FILE).write_text(_record(start=me.start + 1).model_dump_json())
    with job_lock(tmp_path) as path:
        assert JobLockRecord.model_validate_json(path.read_bytes()).owner.start == me.start


def test_a_lock_from_before_a_reboot_is_taken_over(tmp_path: Path) -> None:
    here = Here.read()
    if not here.boot_id or not here.machine_id:
        pytest.skip("no boot id or machine id to tell a reboot by")
    stale = _record(boot_id="0" * 32, pid=os.getpid())
    (tmp_path / LOCK_FILE).write_text(stale.model_dump_json())
    with job_lock(tmp_path):
        pass


def test_a_lock_from_another_host_is_honoured(tmp_path: Path) -> None:
    since = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    text = JobLockRecord(owner=_OTHER, since=since).model_dump_json()
    (tmp_path / LOCK_FILE).write_text(text)
    with pytest.raises(JobLocked) as e, job_lock(tmp_path):
        pytest.fail("took a lock another host holds")
    msg = str(e.value)
    assert msg.startswith(
        f"job {tmp_path.name} is being run by pid 4242 on host elsewhere "
        "since 2026-01-02 03:04:05 UTC;"
    ), msg
    assert f"delete {tmp_path / LOCK_FILE}" in msg and "\n" not in msg
    assert (tmp_path / LOCK_FILE).read_text() == text  # untouched


def test_a_live_holder_on_this_host_is_refused_and_the_lock_freed_on_error(
    tmp_path: Path,
) -> None:
    with job_lock(tmp_path):
        holder = subprocess.run(
            [sys.executable, "-c",
             "import sys; from pathlib import Path; from evoround.engine import job_lock\n"
             "with job_lock(Path(sys.argv[1])): pass", str(tmp_path)],
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert holder.returncode == 1
        assert f"is being run by pid {os.getpid()} on host" in holder.stderr
    with pytest.raises(RuntimeError), job_lock(tmp_path):
        raise RuntimeError("boom")
    assert not (tmp_path / LOCK_FILE).exists()
    with job_lock(tmp_path):  # free again
        pass


# -- a holder on another host: its heartbeat decides ------------------------------------


def _foreign(beat_age_s: float) -> JobLockRecord:
    now = datetime.now(UTC)
    return JobLockRecord(
        owner=_OTHER, since=now - timedelta(hours=5), beat=now - timedelta(seconds=beat_age_s)
    )


def _beaten(path: Path) -> JobLockRecord:
    """The record a holder beats into (read again while a beat is half written)."""
    rec = _joblock._read_record(path)
    assert rec is not None
    return rec


@pytest.fixture
def quick(monkeypatch: pytest.MonkeyPatch) -> None:
    """Beats, watches and settling in fractions of a second instead of a minute."""
    monkeypatch.setattr(_joblock, "BEAT_S", 0.1)
    monkeypatch.setattr(_joblock, "WATCH_S", 1.0)
    monkeypatch.setattr(_joblock, "SETTLE_S", 0.1)


def test_a_foreign_holder_that_beat_recently_is_refused_at_once(
    tmp_path: Path, quick: None
) -> None:
    (tmp_path / LOCK_FILE).write_text(_foreign(beat_age_s=30).model_dump_json())
    began = time.monotonic()
    with pytest.raises(JobLocked, match="pid 4242 on host elsewhere"), job_lock(tmp_path):
        pytest.fail("took a lock whose holder beat 30 s ago")
    assert time.monotonic() - began < 0.9  # no watch: the beat is recent
    assert job_holder(tmp_path) is not None


def test_a_foreign_holder_that_still_beats_is_not_taken_over(tmp_path: Path, quick: None) -> None:
    """Its beat looks old (clocks may differ), but the record changes while watched."""
    path = tmp_path / LOCK_FILE
    path.write_text(_foreign(beat_age_s=3600).model_dump_json())
    stop = threading.Event()

    def beat() -> None:
        n = 0
        while not stop.wait(0.3):
            n += 1  # its clock is an hour behind ours, and it still beats
            path.write_text(_foreign(beat_age_s=3600 - n).model_dump_json())

    beater = threading.Thread(target=beat)
    beater.start()
    try:
        with pytest.raises(JobLocked, match="pid 4242 on host elsewhere"), job_lock(tmp_path):
            pytest.fail("took the lock of a holder that still beats")
    finally:
        stop.set()
        beater.join()
    assert JobLockRecord.model_validate_json(path.read_bytes()).owner == _OTHER


def test_a_silent_foreign_holder_is_taken_over_after_the_watch(
    tmp_path: Path, quick: None, caplog: pytest.LogCaptureFixture
) -> None:
    path = tmp_path / LOCK_FILE
    path.write_text(_foreign(beat_age_s=3600).model_dump_json())
    assert job_holder(tmp_path) is None  # a report does not call it running
    began = time.monotonic()
    with caplog.at_level(logging.WARNING), job_lock(tmp_path):
        assert time.monotonic() - began >= 1.0  # watched first
        first = _beaten(path)
        assert first.owner == this_owner() and first.beat is not None
        time.sleep(0.5)
        later = _beaten(path)
        assert later.since == first.since and later.beat is not None
        assert later.beat > first.beat  # ours beats
    assert "taking the job over from pid 4242 on host elsewhere" in caplog.text
    assert not path.exists()


def test_a_holder_whose_lock_was_taken_stops_its_run(tmp_path: Path) -> None:
    """A real process holds the lock and beats; the file is then given to another host (as
    a takeover after a long stall would): the holder says so and stops (KeyboardInterrupt
    in its main thread, as Ctrl-C: its results are safe)."""
    code = (
        "import sys, time; from pathlib import Path\n"
        "from evoround.engine import _joblock as j\n"
        "j.BEAT_S = 0.1\n"
        "try:\n"
        "    with j.job_lock(Path(sys.argv[1])):\n"
        "        print('held', flush=True); time.sleep(60)\n"
        "except KeyboardInterrupt:\n"
        "    sys.exit(7)\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(tmp_path)],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert proc.stdout is not None and proc.stdout.readline() == "held\n"
        (tmp_path / LOCK_FILE).write_text(_foreign(beat_age_s=0).model_dump_json())
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 7, err
    assert "job.lock is no longer this run's (pid 4242 on host elsewhere" in err, err
    assert (tmp_path / LOCK_FILE).exists()  # the taker's record is left alone
    assert JobLockRecord.model_validate_json((tmp_path / LOCK_FILE).read_bytes()).owner == _OTHER


def test_a_beat_that_cannot_be_written_is_tried_again(
    tmp_path: Path, quick: None, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """A failed renewal (a full disk, a shared folder away for a moment) must not end the
    heartbeat: a holder that stopped beating would be taken over while it runs."""
    real, calls = _joblock._write_fd, []

    def flaky(fd: int, data: bytes) -> None:
        calls.append(1)
        if len(calls) in (2, 3):  # the first write is the record itself
            raise OSError(28, "No space left on device")
        real(fd, data)

    monkeypatch.setattr(_joblock, "_write_fd", flaky)
    with caplog.at_level(logging.WARNING), job_lock(tmp_path) as path:
        first = _beaten(path)
        deadline = time.monotonic() + 10
        while len(calls) < 5 and time.monotonic() < deadline:
            time.sleep(0.05)
        later = _beaten(path)
        assert later.beat is not None and first.beat is not None and later.beat > first.beat
    assert "could not renew job.lock: [Errno 28] No space left on device" in caplog.text
