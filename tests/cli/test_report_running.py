"""``report`` on a job whose run is in progress says so, naming the run (host, pid, since)
in the text and in the JSON, and marks its figures partial; once that run is gone (killed:
its job.lock stays behind) the report is an ordinary one again. A real run in a subprocess
(a scripted agent that naps in each round), the report in-process."""

from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

from evoround.engine import LOCK_FILE, job_holder
from evoround.view import JobIndex
from tests.engine.test_resume_kill import cli, make_suite, n_records
from tests.helpers import evoround_cli


def _report(job: Path, env: dict[str, str]) -> tuple[dict, str]:
    res = evoround_cli("report", "--json", "--no-html", "--resamples", "0", str(job), env=env)
    assert res.returncode == 0, res.stderr
    text = evoround_cli("report", "--no-html", "--resamples", "0", str(job), env=env)
    assert text.returncode == 0, text.stderr
    return json.loads(res.stdout)["jobs"][0], text.stdout


def _viewer_says_running(job: Path) -> bool:
    """What ``evoround view`` shows: the CLI hands the viewer the engine's holder check."""
    index = JobIndex([job], running=lambda p: job_holder(p) is not None)
    try:
        entry = index.entry(0)
        assert entry is not None
        return entry.running
    finally:
        index.close()


def test_report_on_a_running_job(tmp_path: Path) -> None:
    tasks, script, _ = make_suite(tmp_path, nap=4)
    env = {"EVOROUND_HOME": str(tmp_path / "home")}
    job = tmp_path / "runs" / "job-live"
    proc = subprocess.Popen(
        cli("run", tasks / "counter", "--agent", "scripted", "--script", script, "--mode", "mt",
            "--out", tmp_path / "runs", "--job", "job-live"),
        env={**os.environ, **env}, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 120
        while n_records(job) < 1:
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            assert time.monotonic() < deadline, "no round recorded in 120 s"
            time.sleep(0.1)
        data, text = _report(job, env)
        assert proc.poll() is None, "the run ended before the report: nap longer"
        running = data["running"]
        assert (running["pid"], running["host"]) == (proc.pid, socket.gethostname())
        assert data["partial"] is True
        line = next(ln for ln in text.splitlines() if ln.startswith("running:"))
        assert f"job job-live is running (pid {proc.pid} on host " in line
        assert "its figures are partial" in line
        assert _viewer_says_running(job)
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    assert (job / LOCK_FILE).exists()  # a killed run leaves its lock: its holder is dead
    data, text = _report(job, env)
    assert data["running"] is None and data["partial"] is False
    assert "running:" not in text
    assert not _viewer_says_running(job)  # the stale lock is not a running job
