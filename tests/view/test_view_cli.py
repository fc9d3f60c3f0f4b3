"""`evoround view` on the command line: bad input is one line, a real server answers."""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.helpers import evoround_cli
from tests.view.jobs import synthetic_job


@pytest.mark.parametrize(
    ("args", "expect"),
    [
        (["nowhere"], "nowhere: not a folder"),
        (["."], "not a job directory (no job.json)"),
        (["--port", "70000"], "--port"),
    ],
)
def test_bad_input_is_one_line(tmp_path: Path, args: list[str], expect: str) -> None:
    r = evoround_cli("view", *args, cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert expect in r.stderr and "Traceback" not in r.stderr


def test_port_in_use_is_one_line(tmp_path: Path) -> None:
    job = synthetic_job(tmp_path, "j", tasks=1, rounds=1, events=1)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = evoround_cli("view", str(job), "--port", str(port))
    assert (
        r.returncode == 2
        and f"--port {port}: cannot listen" in r.stderr
        and "Traceback" not in r.stderr
    )


def test_serves_a_folder_of_jobs_until_interrupted(tmp_path: Path) -> None:
    synthetic_job(tmp_path / "runs", "a", tasks=1, rounds=2, events=1)
    synthetic_job(tmp_path / "runs", "b", tasks=1, rounds=2, events=1)
    proc = subprocess.Popen(
        [sys.executable, "-m", "evoround.cli", "view", "--port", "0"],
        cwd=tmp_path,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, "COLUMNS": "200"},
    )
    try:
        assert proc.stderr is not None
        line = proc.stderr.readline()
        assert "2 job(s) at http://localhost:" in line
        url = line.split(" at ")[1].split()[0]
        with urllib.request.urlopen(url, timeout=30) as page:
            body = page.read().decode()
        assert ">a</a>" in body and ">b</a>" in body
    finally:
        proc.send_signal(signal.SIGINT)
        deadline = time.monotonic() + 30
        while proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode in (0, 130)
