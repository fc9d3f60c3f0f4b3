"""Traps left in a workspace, the job killed with SIGKILL, then a fresh job of ANOTHER
user (another ``EVOROUND_HOME``) on the same machine (issue 34, item 5).

The killed job's sandbox folder is an orphan full of traps: a 5,000-deep folder (a path
past PATH_MAX, deeper than Python's recursion limit: what broke the recursive
``shutil.rmtree``; 20,000 and 50,000 entries were measured to behave the same, slower),
10,000 entries in one folder, names with newlines, invalid UTF-8 and 255 bytes,
mode-000 and no-x folders, links to ``/`` and to host files, hard links, a FIFO, a
listening socket, a 64 GiB sparse file, extended attributes. The fresh job shares only
the machine's sandbox parent folder (``TMPDIR``): it must run as usual (every round
passes), collect the orphan, and leave nothing behind.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

import pytest
import yaml

from evoround.sandboxes.local._isolation import bwrap_available
from tests.helpers import COUNTER

CLI = [sys.executable, "-c", "from evoround.cli import main; main()"]

TRAPS = r"""
import os, socket
os.makedirs('wide')
for i in range(10000):
    os.close(os.open('wide/%d' % i, os.O_CREAT | os.O_WRONLY))
os.mkdir('deep'); fd = os.open('deep', os.O_RDONLY)
for _ in range(5000):
    os.mkdir('d', dir_fd=fd); sub = os.open('d', os.O_RDONLY, dir_fd=fd); os.close(fd); fd = sub
os.mkfifo('p', dir_fd=fd); os.symlink('/', 'root', dir_fd=fd); os.close(fd)
for n in [b'a\nb', b'\xff\xfe', b'A' * 255, b'\x1b[31m', b'-rf']:
    open(n, 'wb').write(b'x')
os.symlink('/', 'to-root'); os.symlink('/etc/passwd', 'passwd'); os.symlink('loop', 'loop')
os.link('counter.py', 'hard')
os.mkfifo('fifo')
s = socket.socket(socket.AF_UNIX); s.bind('sock')
with open('sparse', 'wb') as f:
    f.truncate(64 << 30)
try:
    os.setxattr('.', 'user.trap', b'x' * 1000); os.setxattr('counter.py', 'user.t', b'y')
except OSError:
    pass
os.makedirs('locked/inner'); open('locked/inner/f', 'w').write('s')
os.makedirs('nox/inner'); open('nox/inner/f', 'w').write('s')
os.chmod('locked/inner', 0); os.chmod('locked', 0); os.chmod('nox', 0o600); os.chmod('fifo', 0)
open('traps-done', 'w').close()
"""


def _found(root: Path, name: str, depth: int = 6) -> bool:
    """Whether ``name`` lies within ``depth`` folders of ``root`` (the traps are deeper)."""
    for d, dirs, files in os.walk(root):
        if name in files or name in dirs:
            return True
        if len(Path(d).relative_to(root).parts) >= depth:
            dirs.clear()
    return False


def _wait_for(name: str, root: Path, proc: subprocess.Popen[bytes], limit: float) -> None:
    deadline = time.monotonic() + limit
    while not _found(root, name):
        assert proc.poll() is None, "the first job ended before it was killed"
        assert time.monotonic() < deadline, f"no {name} after {limit}s"
        time.sleep(0.2)


@pytest.mark.skipif(
    not bwrap_available() and os.environ.get("CI") != "true", reason="bubblewrap does not work here"
)
def test_traps_then_kill_then_another_users_job(tmp_path: Path) -> None:
    # the machine's sandbox parent, shared by both users: on tmpfs where there is one (on a
    # busy disk the traps alone take a minute to make and to remove); outside pytest's
    # tmp_path, whose clean-up of old sessions (shutil.rmtree) recurses into a trap left over
    shm = Path("/dev/shm")
    where = shm if shm.is_dir() and os.access(shm, os.W_OK) else Path("/var/tmp")
    tmp = Path(tempfile.mkdtemp(prefix="evoround-traps-", dir=where))
    try:
        _kill_then_fresh_job(tmp_path, tmp)
    finally:  # whatever failed: no trap for pytest's own recursive clean-up of old tmp_paths
        subprocess.run(["rm", "-rf", str(tmp)], check=False)


def _kill_then_fresh_job(tmp_path: Path, tmp: Path) -> None:
    script = tmp_path / "traps.yaml"
    traps = {"run": f"python3 - <<'EOF'\n{TRAPS}\nEOF", "timeout": 120}
    script.write_text(yaml.safe_dump({"tasks": {"counter": {
        "1": ["oracle"], "2": ["oracle", traps, {"run": "sleep 120"}]}}}))  # fmt: skip
    env = {**os.environ, "TMPDIR": str(tmp), "EVOROUND_LOCAL_ISOLATION": "bwrap"}
    first = [*CLI, "run", str(COUNTER), "--agent", "scripted", "--script", str(script), "--mode", "mt",
             "--out", str(tmp_path / "runs-a"), "--job", "a"]  # fmt: skip
    proc = subprocess.Popen(first, env={**env, "EVOROUND_HOME": str(tmp_path / "home-a")},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)  # fmt: skip
    try:
        _wait_for("traps-done", tmp, proc, 150)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    boxes = tmp / "evoround-sandboxes"
    assert _found(boxes, "deep"), "the killed job left no trapped folder (test is moot)"
    start = time.monotonic()
    fresh = [*CLI, "run", str(COUNTER), "--agent", "oracle", "--mode", "mt", "--json",
             "--out", str(tmp_path / "runs-b"), "--job", "b"]  # fmt: skip
    second = subprocess.Popen(
        fresh,
        env={**env, "EVOROUND_HOME": str(tmp_path / "home-b")},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    out, err = second.communicate(timeout=300)
    assert second.returncode == 0, err.decode(errors="replace")[-3000:]
    wall = time.monotonic() - start
    print(f"fresh job after the orphan: {wall:.1f}s")
    lines = (tmp_path / "runs-b" / "b" / "results.jsonl").read_text().splitlines()
    statuses = [json.loads(line)["status"] for line in lines]
    assert statuses == ["passed"] * 4, statuses  # the figures as usual
    assert list(boxes.iterdir()) == [], list(boxes.iterdir())  # the orphan was collected
    assert wall < 90, wall  # the orphan neither fails nor hangs the fresh job


@pytest.mark.docker
def test_traps_in_docker_then_kill_then_a_fresh_job_and_cleanup(
    tmp_path: Path, docker_client
) -> None:  # noqa: ANN001
    """The Docker leg: the traps are made in a host-folder workspace (``workspace`` mode, the
    default on a local daemon) by the container's root, the engine is killed with -9, then a
    fresh job of the same user (the same store) runs as usual and sweeps the dead engine's
    workspace; ``evoround cleanup --job a`` removes what the killed job left on the engine."""
    # the store outside tmp_path: pytest's clean-up of old sessions (shutil.rmtree) would
    # recurse into a trap a failed run left there
    from evoround.sandboxes.docker import cleanup_docker

    home = Path(tempfile.mkdtemp(prefix="evoround-traps-home-", dir="/var/tmp"))
    jobs = [f"traps-{x}-{uuid.uuid4().hex[:6]}" for x in "ab"]  # names no other test uses
    try:
        _docker_kill_then_fresh_job(tmp_path, home, docker_client, *jobs)
    finally:  # whatever failed: no container of these jobs, no trap left behind
        for job in jobs:
            cleanup_docker(docker_client, job=job)
        subprocess.run(["rm", "-rf", str(home)], check=False)


def _docker_kill_then_fresh_job(
    tmp_path: Path,
    home: Path,
    docker_client,  # noqa: ANN001
    a: str,
    b: str,
) -> None:
    from tests.adversarial.leaks import job_containers

    script = tmp_path / "traps.yaml"
    traps = {"run": f"python3 - <<'EOF'\n{TRAPS}\nEOF", "timeout": 120}
    script.write_text(yaml.safe_dump({"tasks": {"counter": {
        "1": ["oracle"], "2": ["oracle", traps, {"run": "sleep 120"}]}}}))  # fmt: skip
    env = {**os.environ, "EVOROUND_HOME": str(home)}
    first = [*CLI, "run", str(COUNTER), "--agent", "scripted", "--script", str(script), "--mode", "mt",
             "--sandbox", "docker", "--out", str(tmp_path / "runs-a"), "--job", a]  # fmt: skip
    proc = subprocess.Popen(first, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    workspaces = home / "store" / "docker-workspaces"
    try:
        _wait_for("traps-done", workspaces, proc, 240)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait(timeout=30)
    assert _found(workspaces, "deep"), "the killed job left no trapped folder (test is moot)"
    start = time.monotonic()
    fresh = [*CLI, "run", str(COUNTER), "--agent", "oracle", "--mode", "mt", "--json",
             "--sandbox", "docker", "--out", str(tmp_path / "runs-b"), "--job", b]  # fmt: skip
    res = subprocess.run(fresh, env=env, capture_output=True, timeout=300)
    assert res.returncode == 0, res.stderr.decode(errors="replace")[-3000:]
    wall = time.monotonic() - start
    lines = (tmp_path / "runs-b" / b / "results.jsonl").read_text().splitlines()
    assert [json.loads(line)["status"] for line in lines] == ["passed"] * 4
    assert not _found(workspaces, "traps-done"), "the dead engine's workspace was not swept"
    assert wall < 120, wall
    assert job_containers(docker_client, b) == []
    done = subprocess.run([*CLI, "cleanup", "--job", a], env=env, capture_output=True, timeout=300)
    assert done.returncode == 0, done.stderr.decode(errors="replace")[-3000:]
    assert job_containers(docker_client, a) == []
