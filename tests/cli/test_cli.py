"""The evoround command as a user runs it (in-process through its entry point; the Ctrl-C
and resume-after-a-signal tests start real processes)."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from evoround.results import read_results
from tests.helpers import COUNTER, CliResult, copy_counter, evoround_cli

CLI = [sys.executable, "-m", "evoround.cli"]


def evoround(*args: str, env: dict | None = None, timeout: float = 300) -> CliResult:
    """The command in-process, through its entry point (tests/helpers.py); ``timeout`` is
    for the subprocess form these tests had (the Ctrl-C tests below still start one)."""
    return evoround_cli(*args, env=env)


def test_help_lists_commands():
    res = evoround("--help")
    assert res.returncode == 0
    for cmd in ("run", "report", "demo", "tasks"):
        assert cmd in res.stdout


def test_malformed_task_gives_one_clear_line(tmp_path: Path):
    root = copy_counter(tmp_path)
    toml = root / "task.toml"
    toml.write_text(toml.read_text().replace('["extension"]', '["extention"]', 1))
    res = evoround("run", str(root), "--out", str(tmp_path / "runs"))
    assert res.returncode == 2
    assert "Traceback" not in res.stderr
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert len(lines) == 1, res.stderr
    assert "task.toml" in lines[0] and "rounds[1].change_types[1]" in lines[0]
    assert "extention" in lines[0]


def test_run_json_and_report(tmp_path: Path):
    env = {"EVOROUND_HOME": str(tmp_path / "home")}
    res = evoround(
        "run",
        str(COUNTER),
        "--agent",
        "oracle",
        "--out",
        str(tmp_path / "runs"),
        "--job",
        "j1",
        "--json",
        env=env,
    )
    assert res.returncode == 0, res.stderr
    data = json.loads(res.stdout)
    assert data["metrics"]["mt_at_k"] == 1.0 and data["metrics"]["sr"] == 1.0
    rep = evoround("report", str(tmp_path / "runs" / "j1"), env=env)
    assert rep.returncode == 0 and "Leaderboard" in rep.stdout and "counter" in rep.stdout
    bad = evoround("report", str(tmp_path))
    assert bad.returncode == 2 and "not a job directory" in bad.stderr


def test_resume_with_different_config_is_refused(tmp_path: Path):
    env = {"EVOROUND_HOME": str(tmp_path / "home")}
    args = ["run", str(COUNTER), "--out", str(tmp_path / "runs"), "--job", "j", "--mode", "mt"]
    assert evoround(*args, env=env).returncode == 0
    res = evoround(*args, "--agent", "nop", env=env)
    assert res.returncode == 2 and "agent: 'oracle' -> 'nop'" in res.stderr


def test_resume_reuses_the_recorded_model_options(tmp_path: Path):
    """Killed while round 2 waits on the model, then resumed with no model option: the
    resumed rounds reach the recorded endpoint with the recorded model."""
    from evoround.scaffolds import serve
    from tests.engine.test_resume_kill import n_records
    from tests.scaffolds.test_llm_agent import SCRIPT

    (tmp_path / "tmp").mkdir()
    env = {"EVOROUND_HOME": str(tmp_path / "home"), "TMPDIR": str(tmp_path / "tmp")}
    job = tmp_path / "runs" / "j"
    # round 1 takes 3 requests; the 4th (round 2's first) hangs until the job is killed
    with serve({**SCRIPT, "faults": [{"at": 4, "delay_sec": 60}]}) as srv:
        proc = subprocess.Popen(
            [
                *CLI,
                "run",
                str(COUNTER),
                "--agent",
                "evoround-agent",
                "--model",
                "openai/replay-a",
                "--sandbox",
                "local",
                "--api-base",
                srv.url,
                "--max-steps",
                "7",
                "--mode",
                "mt",
                "--out",
                str(tmp_path / "runs"),
                "--job",
                "j",
            ],
            env={**os.environ, **env},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        deadline = time.monotonic() + 60
        while proc.poll() is None and (len(srv.requests) < 4 or n_records(job) < 1):
            assert time.monotonic() < deadline, "round 2 never started"
            time.sleep(0.05)
        assert proc.poll() is None, proc.communicate()[1]
        proc.kill()
        proc.communicate()
        lock = json.loads((job / "job.json").read_text())
        recorded = (lock["model"], lock["api_base"], lock["max_steps"])
        assert recorded == ("openai/replay-a", srv.url, 7)
        res = evoround("run", "--resume", str(job), env=env, timeout=60)
        # round 3 is not scripted (404): a model_api round, so the job exits 1
        assert res.returncode == 1, res.stderr
        assert "1 of 3 rounds could not be evaluated (1 model_api)" in res.stderr
        resumed = srv.requests[4:]
    assert resumed and {r["model"] for r in resumed} == {"replay-a"}
    assert resumed[0]["_round"] == 2
    records, _ = read_results(job / "results.jsonl")
    by_round = {r.round: r for r in records}
    assert by_round[2].passed and by_round[2].resumed_from == 1
    assert by_round[2].model == "openai/replay-a"

    res = evoround("run", "--resume", str(job), "--model", "openai/other", env=env, timeout=60)
    lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
    assert res.returncode == 2 and len(lines) == 1, res.stderr
    assert "--model 'openai/other'" in lines[0] and "'openai/replay-a'" in lines[0]


def test_an_older_job_json_takes_the_new_model_fields(tmp_path: Path):
    """A job.json from before api_base/max_steps were recorded still resumes, and records
    them from then on; what it did record stays locked."""
    import pytest

    from evoround.engine import JobConfigMismatch, write_job_config
    from evoround.results import JobConfig

    old = {
        "job": "j",
        "agent": "evoround-agent",
        "model": "openai/a",
        "attempts": 1,
        "modes": ["mt"],
        "sandbox": "local",
        "tasks": {},
    }
    (tmp_path / "job.json").write_text(json.dumps(old))
    new = JobConfig(**old, api_base="http://127.0.0.1:9/v1", max_steps=7)
    with pytest.raises(JobConfigMismatch, match="model: 'openai/a' -> 'openai/b'"):
        write_job_config(tmp_path, new.model_copy(update={"model": "openai/b"}))
    write_job_config(tmp_path, new)
    assert JobConfig.model_validate_json((tmp_path / "job.json").read_text()) == new
    with pytest.raises(JobConfigMismatch, match="max_steps: 7 -> 8"):
        write_job_config(tmp_path, new.model_copy(update={"max_steps": 8}))


def test_ctrl_c_keeps_results_valid_and_cleans_up(tmp_path: Path):
    script = tmp_path / "slow.yaml"
    script.write_text("default:\n  '*': [oracle, {run: 'sleep 1 & sleep 1'}]\n")
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = {**os.environ, "EVOROUND_HOME": str(tmp_path / "home"), "TMPDIR": str(tmp)}
    job = tmp_path / "runs" / "j"
    proc = subprocess.Popen(
        [
            *CLI,
            "run",
            str(COUNTER),
            "--agent",
            "scripted",
            "--script",
            str(script),
            "--out",
            str(tmp_path / "runs"),
            "--job",
            "j",
        ],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    results = job / "results.jsonl"
    deadline = time.time() + 120
    while time.time() < deadline and (not results.exists() or not results.read_text().strip()):
        time.sleep(0.1)
    time.sleep(0.5)  # land inside a later round
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stderr
    assert "interrupted" in stderr and "Traceback" not in stderr
    records, problems = read_results(results)
    assert records and not problems
    for line in results.read_text().splitlines():
        json.loads(line)
    left = (
        list((tmp / "evoround-sandboxes").iterdir())
        if (tmp / "evoround-sandboxes").exists()
        else []
    )
    assert left == []
