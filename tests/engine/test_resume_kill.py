"""Kill-9 safety: a job SIGKILLed anywhere and resumed ends with exactly the results of an
uninterrupted run (no round lost, none duplicated), and no container is left behind.

The CLI runs as a subprocess with a scripted agent on the counter fixture and a 2-round
copy of it (whose round 2 fails, so fail-stop is exercised too). Kill points are chosen
by watching results.jsonl (after N durable records) or a marker file a script step
touches before sleeping (inside a round, before its record). Runs that are not killed or
signalled (the baseline, each resume to the end, ``cleanup``) run in the test's own
interpreter through ``evoround_cli`` (the same entry point, without ~4 s of start-up each):
what is proven about a kill is the killed process's, and a resume reads only the job folder.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from evoround.results import read_results
from tests.helpers import COUNTER, evoround_cli

SCRIPT = """\
name: killable
tasks:
  counter:
    "1": [oracle, {{run: "touch {marks}/counter-r1.$$; sleep {nap}"}}]
    "2": [oracle, {{run: "touch {marks}/counter-r2.$$; sleep {nap}"}}]
    "3": [oracle, {{run: "touch {marks}/counter-r3.$$; sleep {nap}"}}]
    "4": [oracle]
  mini:
    "1": [oracle]
    "2": [{{say: "I will not do round 2"}}]
"""


def make_suite(root: Path, nap: float = 0.4) -> tuple[Path, Path, Path]:
    """counter (4 rounds) + mini (2 rounds, round 2 failed by the script), and the script."""
    tasks = root / "tasks"
    shutil.copytree(COUNTER, tasks / "counter")
    mini = tasks / "mini"
    shutil.copytree(COUNTER, mini)
    for r in ("03", "04"):
        shutil.rmtree(mini / "rounds" / r)
    toml = (mini / "task.toml").read_text().replace('name = "counter"', 'name = "mini"')
    parts = toml.split("[[rounds]]")
    (mini / "task.toml").write_text("[[rounds]]".join(parts[:3]))
    marks = root / "marks"
    marks.mkdir()
    script = root / "killable.yaml"
    script.write_text(SCRIPT.format(marks=marks, nap=nap))
    return tasks, script, marks


def cli(*args: str | Path) -> list[str]:
    return [sys.executable, "-c", "from evoround.cli import main; main()", *map(str, args)]


def job_args(tasks: Path, script: Path, out: Path, *extra: str, job: str = "job") -> list[str]:
    """``evoround run``'s arguments for the suite (without the program)."""
    return [
        "run", str(tasks), "--agent", "scripted", "--script", str(script), "--out", str(out),
        "--job", job, "--mode", "both", "-k", "1", *extra,
    ]  # fmt: skip


def run_args(tasks: Path, script: Path, out: Path, *extra: str, job: str = "job") -> list[str]:
    return cli(*job_args(tasks, script, out, *extra, job=job))


def env(home: Path) -> dict[str, str]:
    # the agent signals through marker files on the host: no local isolation here
    return {**os.environ, "EVOROUND_HOME": str(home), "COLUMNS": "120",
            "EVOROUND_LOCAL_ISOLATION": "none"}  # fmt: skip


def canonical(job: Path) -> dict[tuple, tuple]:
    """What must be identical between an interrupted+resumed run and an uninterrupted one."""
    records, problems = read_results(job / "results.jsonl")
    keys = [r.key for r in records]
    assert len(keys) == len(set(keys)), f"duplicated rounds: {sorted(keys)}"
    return {
        r.key: (r.passed, r.status.value, r.tests_passed, r.tests_total, dict(r.failure_classes))
        for r in records
    }


def n_records(job: Path) -> int:
    path = job / "results.jsonl"
    if not path.exists():
        return 0
    return sum(1 for line in path.read_bytes().splitlines() if line.endswith(b"}"))


def run_and_kill(cmd: list[str], e: dict[str, str], when, timeout: float = 120) -> bool:
    """Start ``cmd``; SIGKILL it as soon as ``when()`` holds. False if it finished first."""
    proc = subprocess.Popen(cmd, env=e, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    deadline = time.monotonic() + timeout
    try:
        while proc.poll() is None:
            if when():
                proc.send_signal(signal.SIGKILL)
                proc.wait()
                return True
            if time.monotonic() > deadline:
                raise AssertionError("the job neither finished nor reached the kill point")
            time.sleep(0.02)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    return False


def resume(job: Path, script: Path, e: dict[str, str], *extra: str) -> None:
    res = evoround_cli("run", "--resume", str(job), "--script", str(script), *extra, env=e)
    assert res.returncode == 0, res.stderr[-3000:]


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> dict[tuple, tuple]:
    root = tmp_path_factory.mktemp("baseline")
    tasks, script, _ = make_suite(root, nap=0)
    res = evoround_cli(*job_args(tasks, script, root / "runs"), env=env(root / "home"))
    assert res.returncode == 0, res.stderr[-3000:]
    result = canonical(root / "runs" / "job")
    # counter: MT 4 + SR 4; mini: MT 2 (fails at 2) + SR 2
    assert len(result) == 12
    assert result[("mini", "mt", 1, 2)][0] is False
    return result


def _marker(marks: Path, prefix: str):
    return lambda: any(p.name.startswith(prefix) for p in marks.iterdir())


KILL_POINTS = {
    "before-any-record": lambda job, marks: lambda: (job / "job.json").exists(),
    "after-1-record": lambda job, marks: lambda: n_records(job) >= 1,
    "after-5-records": lambda job, marks: lambda: n_records(job) >= 5,
    "inside-round-2": lambda job, marks: _marker(marks, "counter-r2"),
    "inside-round-3": lambda job, marks: _marker(marks, "counter-r3"),
}


# every kill point sequentially, two of them with 2 attempts at once (keeps the suite fast)
CASES = [(p, "1") for p in KILL_POINTS] + [("after-1-record", "2"), ("inside-round-3", "2")]


@pytest.mark.parametrize(("point", "concurrency"), CASES)
def test_sigkill_then_resume_equals_uninterrupted(
    tmp_path: Path, baseline: dict, point: str, concurrency: str
) -> None:
    tasks, script, marks = make_suite(tmp_path)
    job = tmp_path / "runs" / "job"
    e = env(tmp_path / "home")
    cmd = run_args(tasks, script, tmp_path / "runs", "-j", concurrency)
    killed = run_and_kill(cmd, e, KILL_POINTS[point](job, marks))
    assert killed, "the job finished before the kill point"
    before = canonical(job)
    assert len(before) < len(baseline)
    resume(job, script, e, "-j", concurrency)
    assert canonical(job) == baseline
    records, _ = read_results(job / "results.jsonl")
    resumed = [r for r in records if r.resumed_from is not None]
    for r in resumed:  # lineage: the first round after a resume names the round it continued
        assert r.mode.value == "mt" and r.round == r.resumed_from + 1
        assert r.parent_snapshot_id == next(
            x.snapshot_id for x in records if x.key == (r.task, "mt", r.attempt, r.round - 1)
        )
    if point.startswith("inside-round") and concurrency == "1":
        # the counter MT attempt was cut mid-round: it continued, it did not restart
        assert [r.key for r in resumed] == [("counter", "mt", 1, int(point[-1]))]


def test_two_kills_and_a_torn_tail(tmp_path: Path, baseline: dict) -> None:
    """Killed twice, once mid-write (a torn last line), resumed each time: still exact."""
    tasks, script, marks = make_suite(tmp_path)
    job = tmp_path / "runs" / "job"
    e = env(tmp_path / "home")
    assert run_and_kill(run_args(tasks, script, tmp_path / "runs"), e, lambda: n_records(job) >= 2)
    with open(job / "results.jsonl", "ab") as f:  # what a kill during write() leaves
        f.write(b'{"schema_version": 1, "job": "job", "task": "coun')
    assert run_and_kill(
        cli("run", "--resume", job, "--script", script), e, _marker(marks, "counter-r3")
    )
    resume(job, script, e)
    assert canonical(job) == baseline


def test_resume_refuses_a_different_config(tmp_path: Path, baseline: dict) -> None:
    tasks, script, _ = make_suite(tmp_path, nap=0)
    job = tmp_path / "runs" / "job"
    e = env(tmp_path / "home")
    assert run_and_kill(run_args(tasks, script, tmp_path / "runs"), e, lambda: n_records(job) >= 1)
    res = evoround_cli("run", "--resume", str(job), "--script", str(script), "--mode", "mt", env=e)
    assert res.returncode == 2
    assert "modes: ['mt', 'sr'] -> ['mt']" in res.stderr
    assert json.loads((job / "job.json").read_text())["modes"] == ["mt", "sr"]


def test_sigint_grace_finishes_running_round(tmp_path: Path, baseline: dict) -> None:
    """Ctrl-C mid-round: the round finishes within the grace period and is recorded; the
    job exits 130, and a resume completes it exactly."""
    tasks, script, marks = make_suite(tmp_path, nap=1.0)
    job = tmp_path / "runs" / "job"
    e = env(tmp_path / "home")
    proc = subprocess.Popen(
        run_args(tasks, script, tmp_path / "runs", "--grace", "60"),
        env=e, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while not _marker(marks, "counter-r2")():
        assert proc.poll() is None and time.monotonic() < deadline
        time.sleep(0.02)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stderr.decode()[-2000:]
    got = canonical(job)
    assert ("counter", "mt", 1, 2) in got  # the running round finished and was recorded
    assert ("counter", "mt", 1, 3) not in got  # and nothing new started
    resume(job, script, e)
    assert canonical(job) == baseline


@pytest.mark.docker
def test_sigkill_docker_then_resume_and_cleanup(
    tmp_path: Path, baseline: dict, docker_client
) -> None:
    tasks, script, marks = make_suite(tmp_path, nap=0.2)
    name = f"kill-{uuid.uuid4().hex[:8]}"  # cleanup --job must not reach another test's job
    job = tmp_path / "runs" / name
    e = env(tmp_path / "home")
    # marker files are host paths: in a container the touch fails harmlessly (same verdicts)
    cmd = run_args(tasks, script, tmp_path / "runs", "--sandbox", "docker", "-j", "2", job=name)
    assert run_and_kill(cmd, e, lambda: n_records(job) >= 3, timeout=600)
    resume(job, script, e, "-j", "2")
    assert canonical(job) == baseline
    res = evoround_cli("cleanup", "--job", name, env=e)
    assert res.returncode == 0, res.stderr
    # The low-level list does not inspect each container: no race with background removal.
    mine = docker_client.api.containers(all=True, filters={"label": f"evoround.job={name}"})
    assert not mine, [c["Names"] for c in mine]
