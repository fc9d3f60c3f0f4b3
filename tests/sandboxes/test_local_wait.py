"""``wait_exit``: the local backend's wait for a command's end (a pidfd, not Popen's
polling loop), with a timeout, and its fallback where no pidfd can be had."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from evoround.sandboxes.local._sandbox import wait_exit


def _start(code: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen([sys.executable, "-c", code])


@pytest.fixture(params=["pidfd", "popen"])
def way(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    if request.param == "popen":  # an old kernel: pidfd_open fails, Popen's loop is used

        def refused(pid: int, flags: int = 0) -> int:
            raise OSError(38, "Function not implemented")

        monkeypatch.setattr(os, "pidfd_open", refused)
    return str(request.param)


def test_the_exit_code_is_there_once_it_returns(way: str) -> None:
    proc = _start("import time, sys; time.sleep(0.2); sys.exit(7)")
    wait_exit(proc, 30)
    assert proc.returncode == 7


def test_no_timeout_waits_for_the_end(way: str) -> None:
    proc = _start("import sys; sys.exit(3)")
    wait_exit(proc, None)
    assert proc.returncode == 3


def test_a_command_past_its_timeout_raises_and_is_left_to_the_caller(way: str) -> None:
    proc = _start("import time; time.sleep(30)")
    try:
        with pytest.raises(subprocess.TimeoutExpired):
            wait_exit(proc, 0.2)
        assert proc.poll() is None  # still running: the caller kills it
    finally:
        proc.kill()
        proc.wait()


def test_an_ended_command_is_seen_even_with_no_time_left(way: str) -> None:
    proc = _start("pass")
    os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)  # ended, not yet reaped
    wait_exit(proc, 0)
    assert proc.returncode == 0


def test_a_timeout_of_years_is_taken(way: str) -> None:
    """(poll's timeout is a C int of milliseconds: a task may give its agent any time)"""
    proc = _start("pass")
    wait_exit(proc, 10.0**9)
    assert proc.returncode == 0
