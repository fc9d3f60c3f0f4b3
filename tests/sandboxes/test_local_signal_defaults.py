"""A local sandbox's commands start with every signal at its default, however the engine
was started: a signal its parent ignored (``nohup``: SIGHUP; a script's ``&``: SIGINT and
SIGQUIT) must not reach the agent's commands or the verifier's tests ignored, as Docker
never lets it. Before the reset, a suite launched from a background job failed a Ctrl-C
test: the command never saw SIGINT (``SigIgn 0x6``)."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest

from evoround.sandboxes import LocalProvider, LocalSandbox
from evoround.sandboxes.local._isolation import bwrap_available, namespaces_available
from evoround.snapshots import SnapshotStore
from evoround.tasks import load_task
from tests.helpers import COUNTER

IGNORED = (signal.SIGHUP, signal.SIGINT, signal.SIGQUIT, signal.SIGUSR1)
CI = os.environ.get("CI") == "true"


@pytest.fixture
def ignoring() -> Iterator[None]:
    """This process ignores :data:`IGNORED` (and blocks SIGUSR2) while the test runs."""
    before = {sig: signal.getsignal(sig) for sig in IGNORED}
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGUSR2})
    try:
        for sig in IGNORED:
            signal.signal(sig, signal.SIG_IGN)
        yield
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def _status(box: LocalSandbox, field: str) -> int:
    res = box.exec(f"grep '^{field}:' /proc/self/status", timeout=30)
    assert res.ok, res.stderr
    return int(res.stdout.split()[1], 16)


def _sandbox(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, isolation: str) -> LocalSandbox:
    if isolation == "bwrap" and not bwrap_available() and not CI:
        pytest.skip("bubblewrap does not work here")
    if isolation == "unshare" and not namespaces_available() and not CI:
        pytest.skip("namespaces do not work here")
    monkeypatch.setenv("EVOROUND_LOCAL_ISOLATION", isolation)
    provider = LocalProvider(SnapshotStore(tmp_path / "store"), tmp_path / "sb")
    box = provider.create(load_task(COUNTER), "t/signals")
    assert isinstance(box, LocalSandbox)
    return box


@pytest.mark.parametrize("isolation", ["bwrap", "unshare", "none"])
def test_per_command_path_resets_ignored_signals(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ignoring: None, isolation: str
) -> None:
    monkeypatch.setenv("EVOROUND_LOCAL_SERVER", "off")
    box = _sandbox(tmp_path, monkeypatch, isolation)
    try:
        assert _status(box, "SigIgn") == 0
    finally:
        box.close()


def test_exec_server_resets_ignored_and_blocked_signals(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, ignoring: None
) -> None:
    """Through the exec server, which is started with what this process ignores and
    blocks: its init resets both before each command (``_server._enter``)."""
    monkeypatch.setenv("EVOROUND_LOCAL_SERVER", "always")
    box = _sandbox(tmp_path, monkeypatch, "bwrap")
    try:
        assert _status(box, "SigIgn") == 0
        assert _status(box, "SigBlk") == 0
        assert box.server_pid is not None  # the commands went through the server
    finally:
        box.close()
