"""The Ray executor against a real local head (127.0.0.1, 2 CPUs so 2 worker processes run
units at once) gives the same metrics as the local executor; only the driver writes."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest
import ray

from evoround.engine import RunOptions, run_job
from evoround.results import Mode, load_job
from evoround.scaffolds import ScriptedScaffold, load_script
from evoround.snapshots import SnapshotStore
from evoround.tasks import load_tasks
from tests.engine.test_resume_kill import canonical, make_suite


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def ray_head(tmp_path_factory: pytest.TempPathFactory):  # noqa: ANN201 - yields "host:port"
    """``ray start --head --block`` in its own session; torn down by killing that session."""
    tmp = Path("/tmp") / f"evoray-{os.getpid()}"  # short: Ray's socket paths have a length cap
    port = _free_port()
    proc = subprocess.Popen(
        [
            shutil.which("ray") or "ray", "start", "--head", "--block",
            "--node-ip-address=127.0.0.1", f"--port={port}", "--num-cpus=2",
            "--include-dashboard=false", "--disable-usage-stats",
            "--object-store-memory=100000000", f"--temp-dir={tmp}",
        ],
        start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    address = f"127.0.0.1:{port}"
    deadline = time.monotonic() + 120
    while True:
        if proc.poll() is not None:
            pytest.fail(f"ray head did not start: {proc.stderr.read().decode()[-2000:]}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                break
        except OSError:
            if time.monotonic() > deadline:
                pytest.fail("ray head did not open its port")
            time.sleep(0.5)
    time.sleep(2)
    yield address
    if ray.is_initialized():
        ray.shutdown()
    os.killpg(proc.pid, signal.SIGTERM)  # `ray start --block` stops what it started
    try:
        proc.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    shutil.rmtree(tmp, ignore_errors=True)


def _run(root: Path, tasks_dir: Path, script: Path, options: RunOptions) -> Path:
    tasks = load_tasks([tasks_dir])
    job = root / "runs" / "job"
    run_job(
        tasks, ScriptedScaffold(load_script(script)), job_dir=job, attempts=2,
        modes=[Mode.mt, Mode.sr], sandbox="local", store=SnapshotStore(root / "store"),
        options=options,
    )  # fmt: skip
    return job


def test_ray_matches_local(tmp_path: Path, ray_head: str) -> None:
    tasks_dir, script, _ = make_suite(tmp_path / "suite", nap=0)
    local = _run(tmp_path / "local", tasks_dir, script, RunOptions(concurrency=2))
    on_ray = _run(
        tmp_path / "ray", tasks_dir, script,
        RunOptions(concurrency=2, executor="ray", ray_address=ray_head),
    )  # fmt: skip
    assert canonical(on_ray) == canonical(local)
    assert load_job(on_ray).metrics() == load_job(local).metrics()
    # units ran in >= 2 worker processes, none of which wrote results.jsonl (only the driver)
    workers = {p.name for p in (on_ray / ".workers").iterdir()}
    assert len(workers) >= 2, workers
    assert str(os.getpid()) not in {w.rsplit("-", 1)[1] for w in workers}
    # workers harden the local sandbox as the local runner does, and say how
    assert load_job(on_ray).isolation() == load_job(local).isolation() is not None
