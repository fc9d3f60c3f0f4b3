"""The job lock: one run of a job folder at a time; a dead holder's lock is taken over, a
lock from another host is honoured. Real processes, the real CLI."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path

import pytest

from evoround.engine import LOCK_FILE, JobLocked, JobLockRecord, job_lock
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
    other = OwnerRecord(host="elsewhere", machine_id="m" * 32, boot_id="b" * 32, pid=4242)
    since = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)
    text = JobLockRecord(owner=other, since=since).model_dump_json()
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
