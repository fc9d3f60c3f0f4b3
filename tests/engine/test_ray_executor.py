"""The Ray executor against a real local head (127.0.0.1, 2 CPUs so 2 worker processes run
units at once) gives the same metrics as the local executor; only the driver writes."""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import ray

from evoround.engine import RunOptions, run_job
from evoround.results import Mode, load_job
from evoround.scaffolds import ScriptedScaffold, load_script
from evoround.snapshots import SnapshotStore
from evoround.tasks import load_tasks
from tests.engine.test_resume_kill import canonical, make_suite, n_records
from tests.helpers import COUNTER


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def _head(env: dict[str, str] | None = None) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``ray start --head --block`` in its own session; torn down by killing that session."""
    tmp = Path("/tmp") / f"evoray-{os.getpid()}-{_free_port()}"  # short: Ray's socket paths
    port = _free_port()
    proc = subprocess.Popen(
        [
            shutil.which("ray") or "ray", "start", "--head", "--block",
            "--node-ip-address=127.0.0.1", f"--port={port}", "--num-cpus=2",
            "--include-dashboard=false", "--disable-usage-stats",
            "--object-store-memory=100000000", f"--temp-dir={tmp}",
        ],
        start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        env={**os.environ, **(env or {})},
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
    try:
        yield address, proc
    finally:
        if ray.is_initialized():
            ray.shutdown()
        # `ray start --block` stops what it started (about 2 s). Not a SIGTERM to its whole
        # session: with its children signalled at once it waited, and each module's
        # teardown ran into the 30 s below before the SIGKILL.
        with contextlib.suppress(ProcessLookupError):
            proc.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            proc.wait(timeout=30)
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)  # whatever is left of its session
        proc.wait()
        shutil.rmtree(tmp, ignore_errors=True)


@pytest.fixture(scope="module")
def ray_head() -> Iterator[str]:
    """A local Ray head (127.0.0.1, 2 CPUs) for the module's tests."""
    with _head() as (address, _):
        yield address


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
    # units ran in >= 2 worker processes, none of which wrote results.jsonl (only the driver);
    # each left its log in the job folder, and every record names the host
    logs = {p.stem: p.read_text() for p in (on_ray / ".workers").glob("*.log")}
    assert len(logs) >= 2, logs
    assert str(os.getpid()) not in {w.rsplit("-", 1)[1] for w in logs}
    assert all(": started (" in text for text in logs.values()), logs
    # each unit left its done file (the folder is made only for them) and the driver, once
    # the unit's end item came, removed it
    done = on_ray / ".workers" / "done"
    assert done.is_dir() and not list(done.iterdir())
    assert {r.host for r in load_job(on_ray).records} == {socket.gethostname()}
    # workers harden the local sandbox as the local runner does, and say how
    assert load_job(on_ray).isolation() == load_job(local).isolation() is not None


def _cli(*args: str | Path) -> list[str]:
    return [sys.executable, "-c", "from evoround.cli import main; main()", *map(str, args)]


def test_a_job_folder_the_workers_cannot_see(tmp_path: Path, ray_head: str) -> None:
    """The driver writes its job folder where no worker sees it (a tmpfs mounted in the
    driver's own mount namespace): one line naming the folder and the node, before any work,
    and no job folder left behind."""
    if subprocess.run(["unshare", "-m", "true"], capture_output=True).returncode != 0:
        pytest.skip("unshare -m is not permitted here (needs CAP_SYS_ADMIN)")
    private = tmp_path / "private"
    private.mkdir()
    home = tmp_path / "home"
    run = _cli(
        "run", COUNTER, "--mode", "mt", "--out", private / "runs", "--job", "hidden",
        "--executor", "ray", "--ray-address", ray_head,
    )  # fmt: skip
    script = f'mount -t tmpfs tmpfs "{private}" && exec "$@"'
    res = subprocess.run(
        ["unshare", "-m", "--propagation", "private", "sh", "-c", script, "sh", *run],
        capture_output=True, text=True, timeout=300,
        env={**os.environ, "EVOROUND_HOME": str(home)},
    )  # fmt: skip
    assert res.returncode == 2, res.stderr[-3000:]
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, res.stderr
    assert f"the job folder {private}/runs/hidden is not visible on Ray node" in lines[0]
    assert "Traceback" not in res.stderr


@pytest.mark.slow
def test_a_lost_head_ends_with_the_resume_command(tmp_path: Path) -> None:
    """The Ray head killed mid-job: the driver stops within EVOROUND_RAY_HEAD_TIMEOUT (not
    after Ray's silent 60 s), says why and how to resume, keeps what was recorded (exit 1)."""
    tasks, script, _ = make_suite(tmp_path, nap=6)
    runs = tmp_path / "runs"
    env = {**os.environ, "EVOROUND_HOME": str(tmp_path / "home"), "EVOROUND_RAY_HEAD_TIMEOUT": "5"}
    with _head() as (address, head):
        driver = subprocess.Popen(
            _cli("run", tasks / "counter", "--agent", "scripted", "--script", script,
                 "--mode", "mt", "--out", runs, "--job", "headless",
                 "--executor", "ray", "--ray-address", address),
            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        try:
            deadline = time.monotonic() + 240
            while n_records(runs / "headless") < 1:
                assert driver.poll() is None, driver.stderr.read() if driver.stderr else ""
                assert time.monotonic() < deadline, "no round recorded in 240 s"
                time.sleep(0.2)
            os.killpg(head.pid, signal.SIGKILL)
            killed = time.monotonic()
            _, err = driver.communicate(timeout=120)
            took = time.monotonic() - killed
        finally:
            if driver.poll() is None:
                driver.kill()
                driver.wait()
    assert driver.returncode == 1, err[-3000:]
    assert took < 45, f"the driver took {took:.0f} s to stop"
    last = err.strip().splitlines()[-1]
    assert "the Ray head at " in last and "unreachable for 5 s: the job stopped" in last
    assert f"continue with: evoround run --resume {runs / 'headless'}" in last
    assert "--executor ray --ray-address " in last
    assert n_records(runs / "headless") >= 1
    assert not (runs / "headless" / "job.lock").exists()  # released: a resume may start


def test_the_node_watch_reads_the_heads_table_at_most_every_few_seconds() -> None:
    """A node the head marks dead is seen as dead (the runner then gives its unit up); the
    table is asked at most every ``every_s``, and a table that cannot be read keeps the last
    answer (the head being gone is HeadWatch's case)."""
    from evoround.engine._cluster import NodeWatch

    tables: list[Any] = [
        [{"NodeID": "a", "Alive": True}, {"NodeID": "b", "Alive": True}],
        [{"NodeID": "a", "Alive": True}, {"NodeID": "b", "Alive": False}],
        RuntimeError("the head does not answer"),
    ]
    asked: list[int] = []

    def table() -> list[dict[str, Any]]:
        asked.append(1)
        answer = tables[min(len(asked), len(tables)) - 1]
        if isinstance(answer, Exception):
            raise answer
        return answer

    watch = NodeWatch(table, every_s=0.2)
    assert not watch.dead("b") and not watch.dead("b")  # the second asks nothing
    assert len(asked) == 1
    time.sleep(0.25)
    assert watch.dead("b") and not watch.dead("a")
    time.sleep(0.25)
    assert watch.dead("b") and len(asked) == 3  # unreadable: the last answer stands


def test_the_probe_sees_a_shared_store_and_a_store_of_its_own(tmp_path: Path) -> None:
    """What a node answers the driver's probe (run here, without Ray): the token the driver
    wrote in the job folder and in the snapshot store is found where the driver wrote it.
    (It once looked for the store's token under the job's sub-folder name, so every
    cluster warned that its store was not shared.) A store the node does not share, or a
    token that differs, is said."""
    from evoround.engine._cluster import Tokens, probe_node

    tokens = Tokens(tmp_path / "job", tmp_path / "store")
    tokens.write()
    seen = probe_node(str(tokens.job_file), str(tokens.store_file), tokens.value, [str(COUNTER)])
    assert seen["job_dir"] is True and seen["store"] is True and seen["missing_tasks"] == []
    other = Tokens(tmp_path / "job", tmp_path / "elsewhere")
    seen = probe_node(str(tokens.job_file), str(other.store_file), tokens.value, [])
    assert seen["job_dir"] is True and seen["store"] is False
    tokens.store_file.write_text("not the token")
    seen = probe_node(str(tokens.job_file), str(tokens.store_file), tokens.value, [])
    assert seen["store"] is False
    tokens.remove()
    assert not tokens.job_file.exists() and not tokens.store_file.exists()


def _round(i: int) -> str:
    from evoround.results import RoundResult, RoundStatus

    return RoundResult(
        job="job", task="counter", task_digest="d", n_rounds=4, mode=Mode.mt, attempt=1,
        round=i, agent="scripted", sandbox="local", passed=True, status=RoundStatus.passed,
        started_at="2026-11-27T00:00:00+00:00",
    ).model_dump_json()  # fmt: skip


@pytest.mark.parametrize("left", ["whole", "torn"])
def test_a_stream_that_stalls_after_its_unit_ended_is_read_from_the_done_file(
    tmp_path: Path, ray_head: str, monkeypatch: pytest.MonkeyPatch, left: str
) -> None:
    """Ray's stream stops for good at an item lost in a network cut, though the unit ended
    (not seen, but the same family as the lost stream end of the 30 s cut). The worker
    leaves every round it yielded in ``.workers/done/<key>.jsonl`` before its last item;
    a driver whose stream gives nothing for STALL_GRACE_S after that file appeared takes
    the unit's rounds from it (the executor drops those already recorded) and returns,
    instead of waiting forever. A file it cannot read is an infra failure (retried), never
    a hang. Files no unit of the run took away are removed when the runner closes. Real Ray streaming; only the worker's function is this test's: it yields its
    first round, leaves the done file, then stalls as a stream with a lost item does."""
    import evoround.engine._ray as R
    from evoround.engine._units import Unit
    from evoround.results import RoundResult
    from evoround.sandboxes import SandboxUnavailable
    from evoround.scaffolds import NopScaffold
    from evoround.tasks import load_task

    monkeypatch.setattr(R, "STALL_GRACE_S", 2.0)
    rounds = [_round(i) for i in (1, 2, 3)]
    written = "".join(f"{r}\n" for r in rounds) if left == "whole" else rounds[0][:40]

    def stalls(scaffold: Any, call: Any) -> Iterator[str]:
        import time as t

        import ray as r

        yield "node:" + r.get_runtime_context().get_node_id()
        yield rounds[0]
        done = Path(call.job_dir) / ".workers" / "done" / f"{call.key}.jsonl"
        done.parent.mkdir(parents=True, exist_ok=True)
        done.write_text(written)
        t.sleep(300)  # the items after the first never come

    runner = R.RayRunner(
        NopScaffold(), job_dir=tmp_path / "job", sandbox="local",
        store_root=tmp_path / "store", judge=None, keep_snapshots=False, address=ray_head,
    )  # fmt: skip
    runner._remote = ray.remote(num_returns="streaming", max_retries=0, num_cpus=1)(stalls)
    stale = tmp_path / "job" / ".workers" / "done" / "earlier-driver.jsonl"
    stale.parent.mkdir(parents=True)
    stale.write_text(rounds[2])  # a unit of a killed driver ended: nobody reads it
    got: list[RoundResult] = []
    start = time.monotonic()
    try:
        if left == "whole":
            runner(Unit(load_task(COUNTER), Mode.mt, 1), [], got.append)
            # the first round from the stream, then all three from the file
            assert [r.round for r in got] == [1, 1, 2, 3]
        else:
            with pytest.raises(SandboxUnavailable, match="cannot be read"):
                runner(Unit(load_task(COUNTER), Mode.mt, 1), [], got.append)
            assert [r.round for r in got] == [1]
    finally:
        runner.close()
    assert time.monotonic() - start < 60
    # the unit's file removed when it was read, the stale one when the runner closed
    assert not list(stale.parent.iterdir())
