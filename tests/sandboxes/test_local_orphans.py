"""kill -9 skips every ``close``: the next run sweeps the local sandboxes of dead engines."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

from evoround.sandboxes import LocalProvider
from evoround.snapshots import SnapshotStore
from tests.helpers import COUNTER

CLI = [sys.executable, "-m", "evoround.cli"]


def test_resume_after_kill_9_leaves_no_sandbox_folders(tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    script = tmp_path / "s.yaml"
    slow = f"touch {marks}/r2; [ -e {marks}/go ] || sleep 60"
    script.write_text(yaml.safe_dump({"tasks": {"counter": {
        "2": ["oracle", {"run": slow}], "*": ["oracle"]}}}))  # fmt: skip
    tmp = tmp_path / "tmp"  # the engine's tempdir: its sandboxes, and nobody else's
    tmp.mkdir()
    # the agent signals through files on the host: no isolation (sweeping is the point here)
    env = {**os.environ, "TMPDIR": str(tmp), "EVOROUND_HOME": str(tmp_path / "home"),
           "EVOROUND_LOCAL_ISOLATION": "none"}  # fmt: skip
    args = [*CLI, "run", str(COUNTER), "--agent", "scripted", "--script", str(script),
            "--mode", "mt", "--out", str(tmp_path / "runs"), "--job", "j"]  # fmt: skip
    proc = subprocess.Popen(args, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 120
    while not (marks / "r2").exists():
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.1)
    proc.send_signal(signal.SIGKILL)
    proc.wait(timeout=30)
    boxes = tmp / "evoround-sandboxes"
    assert [p for p in boxes.iterdir()], "the killed engine left no sandbox (test is moot)"
    (marks / "go").touch()
    res = subprocess.run([*CLI, "run", "--resume", str(tmp_path / "runs" / "j"), "--script",
                          str(script)], env=env, capture_output=True, text=True, timeout=300)  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    assert list(boxes.iterdir()) == []


def test_sweep_keeps_live_and_unowned_folders(tmp_path: Path) -> None:
    base = tmp_path / "sandboxes"  # the provider's parent folder: one job-* folder per run
    dead = subprocess.Popen(["true"])
    dead.wait()
    for name, owner in (("dead", str(dead.pid)), ("live", str(os.getpid())), ("odd", "x")):
        (base / name).mkdir(parents=True)
        (base / name / "owner.pid").write_text(owner)
    (base / "unowned").mkdir()
    LocalProvider(SnapshotStore(tmp_path / "store"), base_dir=base).close()  # swept by then
    left = sorted(p.name for p in base.iterdir() if not p.name.startswith("job-"))
    assert left == ["live", "odd", "unowned"]
