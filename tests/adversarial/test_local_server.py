"""The exec server of a bubblewrap sandbox (one per sandbox, ``local/_server.py``): the
agent cannot see or signal it, and a server that is gone or stopped never makes the
agent's command the harness's error: the next command gets a fresh one."""

from __future__ import annotations

import os
import signal
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from evoround.sandboxes import LocalProvider, LocalSandbox
from evoround.sandboxes.local._isolation import bwrap_available
from evoround.snapshots import SnapshotStore
from evoround.tasks import load_task
from tests.helpers import COUNTER

pytestmark = pytest.mark.skipif(
    not bwrap_available() and os.environ.get("CI") != "true",
    reason="bubblewrap does not work here",
)


@pytest.fixture
def sb(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[LocalSandbox]:
    monkeypatch.setenv("EVOROUND_LOCAL_ISOLATION", "bwrap")
    provider = LocalProvider(SnapshotStore(tmp_path / "store"), tmp_path / "sb")
    box = provider.create(load_task(COUNTER), "t/server")
    assert isinstance(box, LocalSandbox)
    try:
        yield box
    finally:
        box.close()
        provider.close()


def _served(sb: LocalSandbox) -> int:
    """The server's pid once a command went through it (a sandbox's first command takes
    the per-command path unless ``EVOROUND_LOCAL_SERVER=always``)."""
    for _ in range(2):
        assert sb.exec("true", timeout=30).ok
    pid = sb.server_pid
    assert pid is not None
    return pid


def _gone(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0]
    except OSError:
        return True
    return state in ("Z", "X")


def test_commands_share_one_server_and_see_only_themselves(sb: LocalSandbox) -> None:
    pid = _served(sb)
    # its own pid namespace: pid 2 under an init, no process of the server in sight, and
    # signalling every process it can see (kill -1) reaches nothing outside it
    res = sb.exec("echo $$; ls /proc | grep -c '^[0-9]'; kill -9 -1; echo after", timeout=30)
    pid_seen, procs = res.stdout.split()[:2]
    assert pid_seen == "2" and 3 <= int(procs) <= 4, res  # init, bash, ls (and grep)
    assert sb.server_pid == pid, "the command reached the server"
    # its namespace's init holds the host's socket: not dumpable, so not to be had
    peek = sb.exec("ls /proc/1/fd; cat /proc/1/environ; grep CapEff /proc/1/status", timeout=30)
    assert "socket:" not in peek.stdout and "Permission denied" in peek.stderr, peek
    assert peek.stdout.split()[-1] == "0" * 16, peek  # no capability left in the init
    assert sb.exec("echo ok", timeout=30).stdout == "ok\n"
    assert sb.server_pid == pid  # the same server, not one per command


@pytest.mark.parametrize("how", [signal.SIGKILL, signal.SIGSTOP])
def test_a_dead_or_stopped_server_is_replaced(sb: LocalSandbox, how: signal.Signals) -> None:
    old = _served(sb)
    os.kill(old, how)
    deadline = time.monotonic() + 10
    while sb.server_pid == old and time.monotonic() < deadline:  # a stop takes a moment
        time.sleep(0.01)
    res = sb.exec("echo ok", timeout=30)
    assert (res.exit_code, res.stdout) == (0, "ok\n"), res
    assert sb.server_pid not in (None, old)
    if how == signal.SIGSTOP:
        assert _gone(old), "the stopped server was left behind"


def test_a_server_killed_mid_command_fails_that_command_only(sb: LocalSandbox) -> None:
    pid = _served(sb)

    def kill_soon() -> None:
        time.sleep(0.5)
        os.kill(pid, signal.SIGKILL)

    threading.Thread(target=kill_soon, daemon=True).start()
    res = sb.exec("echo started; sleep 30", timeout=60)
    assert res.exit_code == 137 and not res.timed_out, res  # the command's failure
    assert "exec server died" in res.stderr and res.stdout == "started\n"
    assert res.duration_sec < 20
    assert sb.exec("echo ok", timeout=30).stdout == "ok\n"


def test_the_first_command_starts_no_server(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A verification clone runs one command: it pays one bubblewrap, not a server."""
    monkeypatch.setenv("EVOROUND_LOCAL_ISOLATION", "bwrap")
    monkeypatch.delenv("EVOROUND_LOCAL_SERVER", raising=False)
    provider = LocalProvider(SnapshotStore(tmp_path / "store"), tmp_path / "sb")
    with provider.create(load_task(COUNTER), "t/first") as sb:
        assert isinstance(sb, LocalSandbox)
        assert sb.exec("true", timeout=30).ok
        assert sb.server_pid is None
        assert sb.exec("true", timeout=30).ok
        assert sb.server_pid is not None
    provider.close()


def test_close_leaves_no_server(sb: LocalSandbox) -> None:
    pid = _served(sb)
    sb.close()
    assert _gone(pid)
