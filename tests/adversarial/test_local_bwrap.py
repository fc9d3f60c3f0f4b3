"""The local sandbox under bubblewrap: only the workspace is writable, the host's /tmp (every
other sandbox, every verifier clone) and the Docker socket are out of reach, network is off
unless the task allows it, and the job folder says which mechanism ran the agent.

Each attack is a scripted agent (or a command in a bare sandbox) that implements nothing;
the assertion is on the host, after the fact.
"""

from __future__ import annotations

import os
import shutil
import socket
import tempfile
import threading
import uuid
from pathlib import Path

import pytest

from evoround.reports import job_json
from evoround.results import Mode
from evoround.sandboxes import LocalProvider
from evoround.sandboxes.local._isolation import SYSTEM_DIRS, bwrap_available, docker_sockets
from evoround.snapshots import SnapshotStore
from evoround.tasks import load_task
from tests.adversarial.attacks import STUB
from tests.adversarial.leaks import processes_with
from tests.adversarial.test_local_sandbox import scripted, unique_task
from tests.helpers import COUNTER, run

pytestmark = pytest.mark.skipif(
    not bwrap_available() and os.environ.get("CI") != "true",
    reason="bubblewrap does not work here",
)


@pytest.fixture(autouse=True)
def _bwrap(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EVOROUND_LOCAL_ISOLATION", "bwrap")


def test_only_the_workspace_is_writable(tmp_path: Path) -> None:
    outside = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="evoround-outside-"))
    try:
        provider = LocalProvider(SnapshotStore(tmp_path / "store"), tmp_path / "sb")
        with provider.create(load_task(COUNTER), "t/w") as sb:
            res = sb.exec(f"echo pwned > {outside}/f; echo x > {Path.home()}/.evoround-pwn; "
                          "echo mine > inside.txt; echo $?", timeout=30)  # fmt: skip
            assert res.stdout.strip().endswith("0"), res.stderr
            assert sb.read_file("inside.txt") == b"mine\n"
        assert not (outside / "f").exists()
        assert not (Path.home() / ".evoround-pwn").exists()
        assert provider.isolation == "bwrap"
    finally:
        (outside / "f").unlink(missing_ok=True)
        outside.rmdir()


def test_other_copies_of_the_task_are_invisible(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The job runs a copy of the task: the folder it was copied from (a benchmark's
    checkout, a test suite's fixtures, someone's home) is not in the view, hidden tests and
    reference solutions included, while a tool installed there on ``PATH`` still runs and
    ``EVOROUND_LOCAL_SHOW`` brings a folder back."""
    other = Path(tempfile.mkdtemp(dir=Path.home(), prefix=".evoround-checkout-"))
    tools = Path(tempfile.mkdtemp(dir=Path.home(), prefix=".evoround-tools-"))
    try:
        shutil.copytree(COUNTER, other / "counter")
        (tools / "bin").mkdir()
        tool = tools / "bin" / "evoround-probe-tool"
        tool.write_text("#!/bin/sh\necho tool-ran\n")
        tool.chmod(0o755)
        (tools / "next-to-the-tool.txt").write_text("private\n")
        monkeypatch.setenv("PATH", f"{tools / 'bin'}{os.pathsep}{os.environ['PATH']}")
        task = load_task(shutil.copytree(COUNTER, tmp_path / "counter"))
        provider = LocalProvider(SnapshotStore(tmp_path / "store"), tmp_path / "sb")
        probe = (
            f"cat {other}/counter/rounds/*/solution/files/*; cat {other}/counter/rounds/*/tests/*;"
            f" cat {tools}/next-to-the-tool.txt; evoround-probe-tool;"
            " find / -path /proc -prune -o -path /sys -prune -o -name task.toml -print"
        )
        with provider.create(task, "t/copies") as sb:
            res = sb.exec(probe, timeout=120)
        assert "tool-ran" in res.stdout, res.stderr
        assert "count_words" not in res.stdout and "private" not in res.stdout, res.stdout
        assert str(other) not in res.stdout, res.stdout
        if COUNTER.parts[1] not in SYSTEM_DIRS:  # the suite's own fixtures too
            assert str(COUNTER) not in res.stdout, res.stdout
        monkeypatch.setenv("EVOROUND_LOCAL_SHOW", str(other))
        with provider.create(task, "t/shown") as sb:
            res = sb.exec(f"cat {other}/counter/task.toml", timeout=30)
        assert res.exit_code == 0 and "counter" in res.stdout, res.stderr
    finally:
        shutil.rmtree(other, ignore_errors=True)
        shutil.rmtree(tools, ignore_errors=True)


def test_other_sandboxes_and_the_host_tmp_are_invisible(tmp_path: Path) -> None:
    provider = LocalProvider(SnapshotStore(tmp_path / "store"), tmp_path / "sb")
    task = load_task(COUNTER)
    with provider.create(task, "t/a") as a, provider.create(task, "t/b") as b:
        secret = f"evoround-secret-{uuid.uuid4().hex}"
        b.write_file(f"tests_clone/{secret}.py", "def test_x(): pass")
        res = a.exec(f"find / \\( -path /proc -o -path /sys \\) -prune -o -name '{secret}*' "
                     "-print 2>/dev/null; ls -a /tmp", timeout=120)  # fmt: skip
        assert secret not in res.stdout and b.workdir not in res.stdout, res.stdout
        assert str(tmp_path) not in res.stdout.replace(a.workdir, "")


def test_the_docker_socket_is_masked(tmp_path: Path) -> None:
    socks = docker_sockets()
    if not socks:
        pytest.skip("no Docker socket on this host")
    provider = LocalProvider(SnapshotStore(tmp_path / "store"), tmp_path / "sb")
    probe = (
        "import socket,sys\ns=socket.socket(socket.AF_UNIX)\n"
        "try:\n s.connect(sys.argv[1]); print('CONNECTED')\nexcept OSError as e: print('no', e)"
    )
    with provider.create(load_task(COUNTER), "t/d") as sb:
        for sock in socks:
            res = sb.exec(["python3", "-c", probe, sock], timeout=30)
            assert "CONNECTED" not in res.stdout, (sock, res.stdout, res.stderr)


def test_network_is_off_unless_the_task_allows_it(tmp_path: Path) -> None:
    srv = socket.create_server(("127.0.0.1", 0))
    port = srv.getsockname()[1]
    accepted: list[bool] = []
    threading.Thread(target=lambda: (srv.accept(), accepted.append(True)), daemon=True).start()
    provider = LocalProvider(SnapshotStore(tmp_path / "store"), tmp_path / "sb")
    probe = (f"import socket\ntry:\n socket.create_connection(('127.0.0.1', {port}), 3)"
             "; print('CONNECTED')\nexcept OSError as e: print('no', e)")  # fmt: skip
    with provider.create(load_task(COUNTER), "t/n") as sb:
        assert not sb.network
        res = sb.exec(["python3", "-c", probe], timeout=30)
        assert "CONNECTED" not in res.stdout and not accepted, res.stdout
    srv.close()


def test_a_round_records_bwrap_and_leaves_no_process(tmp_path: Path) -> None:
    marker = f"evoround-bg-{uuid.uuid4().hex[:8]}"
    steps = [{"write": {"path": "counter.py", "content": STUB}},
             {"run": f"setsid nohup sh -c 'sleep 300 # {marker}' >/dev/null 2>&1 &"}]  # fmt: skip
    view = run(tmp_path, scripted(tmp_path, "bg", steps), tasks=[load_task(unique_task(tmp_path))],
               modes=(Mode.mt,))  # fmt: skip
    (r1,) = view.records
    assert not r1.passed
    assert processes_with(marker) == []
    note = (view.path / "sandbox.txt").read_text()
    assert "local isolation: bwrap; pids and memory_mb by cgroup" in note.splitlines()[-1], note
    assert view.isolation() == "bwrap"
    assert job_json(view)["isolation"] == "bwrap"


def test_the_cache_and_its_store_are_out_of_sight(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """EVOROUND_HOME outside /tmp with the snapshot store inside it (the default layout):
    both covered, the command still runs."""
    home = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="evoround-home-"))
    try:
        monkeypatch.setenv("EVOROUND_HOME", str(home))
        (home / "store").mkdir()
        (home / "secret.txt").write_text("reference solution")
        provider = LocalProvider(SnapshotStore(home / "store"), tmp_path / "sb")
        with provider.create(load_task(COUNTER), "t/h") as sb:
            res = sb.exec(f"cat {home}/secret.txt; ls {home}/store; echo ran", timeout=30)
        assert res.stdout.strip().endswith("ran"), res.stderr
        assert "reference solution" not in res.stdout
    finally:
        shutil.rmtree(home, ignore_errors=True)
