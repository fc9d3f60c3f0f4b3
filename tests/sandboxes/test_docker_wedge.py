"""The host-side breaker of a wedged container (``sandboxes/docker/_wedge``), on a real pid
namespace made with ``unshare`` (no Docker needed): it kills every process of the
namespace but its init, and only when the daemon answers and the command is still open."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import time

import pytest

from evoround.sandboxes.docker._wedge import WedgeBreaker, namespace_members


def _namespace() -> subprocess.Popen[bytes]:
    """``unshare``'s child is the namespace's init: a shell with two stopped sleepers."""
    if shutil.which("unshare") is None or os.geteuid() != 0:
        pytest.skip("needs unshare and root")
    proc = subprocess.Popen(
        ["unshare", "--pid", "--fork", "--mount-proc", "sh", "-c",
         "sleep 300 & sleep 300 & sleep 0.3; kill -STOP $!; while :; do sleep 1; done"],
    )  # fmt: skip
    deadline = time.monotonic() + 10
    while _sleepers(proc) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    return proc


def _sleepers(proc: subprocess.Popen[bytes]) -> int:
    return sum("sleep\x00300" in _cmd(p) for p in _members(proc))


def _init_of(proc: subprocess.Popen[bytes]) -> int:
    with open(f"/proc/{proc.pid}/task/{proc.pid}/children") as f:
        return int(f.read().split()[0])


def _members(proc: subprocess.Popen[bytes]) -> list[int]:
    try:
        return namespace_members(_init_of(proc))
    except (OSError, IndexError):
        return []


def test_the_breaker_kills_all_but_init_when_the_daemon_answers() -> None:
    proc = _namespace()
    try:
        init = _init_of(proc)
        assert len(namespace_members(init)) >= 2  # the sleepers (one stopped), the loop's sleep
        with WedgeBreaker(init, 0.1, lambda: True, "t") as b:
            time.sleep(1)
        assert b.fired
        time.sleep(0.3)
        left = [p for p in namespace_members(init) if "sleep\x00300" in _cmd(p)]
        assert left == []
        os.kill(init, 0)  # init lives on: the container keeps running
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()


def test_the_breaker_holds_when_disarmed_or_the_daemon_is_silent() -> None:
    proc = _namespace()
    try:
        init = _init_of(proc)
        with WedgeBreaker(init, 0.1, lambda: False, "t") as silent:
            time.sleep(0.5)
        with WedgeBreaker(init, 0.5, lambda: True, "t") as done:
            pass  # the command returned in time
        time.sleep(0.7)
        assert not silent.fired and not done.fired
        assert _sleepers(proc) == 2
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()


def _cmd(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/cmdline") as f:
            return f.read()
    except OSError:
        return ""
