"""A job is its content, not its folder (issue 33): a job folder copied or moved elsewhere
resumes and reports the figures of the original; ``--resume -k N`` with more attempts
extends the job to the figures of a fresh run with ``-k N``; fewer attempts are refused;
every record names the host that ran it. Real runs: a scripted agent on a 2-round task
(round 2 fails, so the figures are not all 100) in the local sandbox, CLI in-process."""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path

import pytest

from evoround.results import RoundResult, read_results
from tests.engine.test_resume_kill import make_suite
from tests.helpers import evoround_cli
from tests.invariance import assert_invariant, differences, figures


def _run(env: dict[str, str], *args: str | Path) -> str:
    res = evoround_cli(*map(str, args), env=env)
    assert res.returncode == 0, res.stderr[-3000:]
    return res.stderr


@pytest.mark.slow
def test_moved_job_resumes_and_more_attempts_extend_it(tmp_path: Path) -> None:
    tasks, script, _ = make_suite(tmp_path / "suite", nap=0)
    env = {"EVOROUND_HOME": str(tmp_path / "home")}
    runs = tmp_path / "runs"
    common = ("--agent", "scripted", "--script", script, "--mode", "both", "--out", runs)
    _run(env, "run", tasks / "mini", *common, "--job", "job-orig", "-k", "1")
    base = runs / "job-orig"
    base_figures = figures(base, env=env)
    assert base_figures["jobs"][0]["metrics"]["mt_at_k"] == 0.5  # round 2 fails

    # An interrupted job (its MT attempt recorded round 1 only) moved to another path under
    # another name; the original folder is gone, so nothing can be read from it.
    moved = tmp_path / "elsewhere" / "deeper" / "job-moved"
    shutil.copytree(base, moved)
    shutil.move(base, tmp_path / "attic")
    results = moved / "results.jsonl"
    lines = results.read_text().splitlines(keepends=True)
    keys = [RoundResult.model_validate_json(ln).key for ln in lines]
    results.write_text(lines[keys.index(("mini", "mt", 1, 1))])
    _run(env, "run", "--resume", moved, "--script", script)
    assert json.loads((moved / "job.json").read_text())["job"] == "job-moved"
    records, problems = read_results(results)
    assert problems == [] and len(records) == 4
    mt2 = next(r for r in records if r.key == ("mini", "mt", 1, 2))
    assert mt2.resumed_from == 1  # continued from the moved folder's round 1, not re-run
    assert not differences(base_figures, figures(moved, env=env))

    # More attempts extend the job: attempt 1 kept as recorded, attempt 2 runs.
    before = {r.key: r.finished_at for r in records}
    _run(env, "run", "--resume", moved, "--script", script, "-k", "2")
    records, _ = read_results(results)
    assert len(records) == 8
    assert all(r.finished_at == before[r.key] for r in records if r.attempt == 1)
    assert json.loads((moved / "job.json").read_text())["attempts"] == 2
    _run(env, "run", tasks / "mini", *common, "--job", "job-fresh", "-k", "2")
    assert_invariant(moved, runs / "job-fresh", env=env)

    # Fewer attempts than recorded: one line, nothing run, the lock unchanged.
    res = evoround_cli("run", "--resume", str(moved), "--script", str(script), "-k", "1", env=env)
    assert res.returncode == 2
    assert "records 2 attempts per task: a resume cannot run fewer (-k 1)" in res.stderr
    assert "Traceback" not in res.stderr
    assert json.loads((moved / "job.json").read_text())["attempts"] == 2

    # Every record names the host that ran it; a record from before the field reads as None.
    assert {r.host for r in records} == {socket.gethostname()}
    old = json.loads(records[0].model_dump_json())
    del old["host"]
    assert RoundResult.model_validate(old).host is None


def test_the_docker_snapshot_mode_is_part_of_the_job(tmp_path: Path) -> None:
    """The snapshot mode is locked like the sandbox: a job.json from before it was recorded
    adopts the mode of its next run; once recorded, another mode is refused in one line.
    (The resume through the CLI, with a real Docker job, is in test_invariance.py.)"""
    from evoround.engine import JobConfigMismatch, snapshot_mode, write_job_config
    from evoround.results import JobConfig

    old = {"job": "j", "agent": "oracle", "attempts": 1, "modes": ["mt"], "sandbox": "docker",
           "tasks": {}}  # fmt: skip
    (tmp_path / "job.json").write_text(json.dumps(old))
    commit = JobConfig(**old, docker_snapshot=snapshot_mode("docker", "commit"))
    write_job_config(tmp_path, commit)  # an older lock: the mode is written down
    assert json.loads((tmp_path / "job.json").read_text())["docker_snapshot"] == "commit"
    with pytest.raises(JobConfigMismatch, match="docker_snapshot: 'commit' -> 'workspace'"):
        write_job_config(tmp_path, commit.model_copy(update={"docker_snapshot": "workspace"}))
    assert snapshot_mode("local", "commit") is None  # the local sandbox has no such mode
