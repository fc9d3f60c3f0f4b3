"""The Python API (``from evoround import run, load_tasks, report``) and the example script
that uses it, run as a user would run it."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

import evoround
from evoround import load_tasks, report, run
from evoround.results import read_job_config
from evoround.tasks import TaskFormatError
from tests.helpers import COUNTER

REPO = Path(__file__).resolve().parents[1]


def test_run_and_report_return_frozen_typed_results(tmp_path: Path) -> None:
    (task,) = load_tasks([COUNTER])
    res = run([task], agent="oracle", out=tmp_path, job="j", modes=["mt"])
    assert res.job_dir == tmp_path / "j" and res.exit_code == 0 and res.budget_stop is None
    assert res.rounds == 4 and res.metrics.mt_at_k == 1.0 and res.not_evaluated == {}
    assert str(res.cost) == "-"  # the oracle calls no model
    with pytest.raises(dataclasses.FrozenInstanceError):
        res.rounds = 0  # type: ignore[misc]
    again = report([tmp_path / "j"])
    (job,) = again.jobs
    assert job.metrics == res.metrics and job.attempts == res.attempts
    assert again.write_html(tmp_path / "r.html").is_file()


def test_load_tasks_of_nothing_is_an_error(tmp_path: Path) -> None:
    with pytest.raises(TaskFormatError, match="no tasks found"):
        load_tasks([tmp_path])


def test_the_package_exports_the_api_lazily() -> None:
    code = (
        "import sys, evoround.settings; assert 'evoround.engine' not in sys.modules; "
        "from evoround import run, load_tasks, report; print(run.__module__)"
    )
    res = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},
        timeout=120,
    )
    assert res.returncode == 0 and res.stdout.strip() == "evoround.api", res.stderr
    assert set(evoround.__all__) >= {"run", "load_tasks", "report"}


def test_the_example_script_runs(tmp_path: Path) -> None:
    res = subprocess.run(
        [sys.executable, str(REPO / "examples" / "run_and_report.py"), str(tmp_path / "out")],
        capture_output=True,
        text=True,
        timeout=600,
        env={**os.environ, "PYTHONPATH": str(REPO)},
    )
    assert res.returncode == 0, res.stderr[-2000:]
    lines = res.stdout.splitlines()
    assert lines[0].startswith("oracle   MT@k=1.00") and lines[1].startswith("nop      MT@k=0.00")
    assert "best: oracle" in res.stdout and (tmp_path / "out" / "report.html").is_file()


def test_model_agents_default_to_docker_and_refuse_the_host_without_an_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As the CLI: the API never quietly runs a model agent's unread code on the host."""
    from evoround import api

    monkeypatch.setattr(api, "docker_reachable", lambda: False)
    with pytest.raises(ValueError, match="sandbox='local'"):
        api._default_sandbox("evoround-agent", tmp_path / "new")
    assert api._default_sandbox("oracle", tmp_path / "new") == "local"
    monkeypatch.setattr(api, "docker_reachable", lambda: True)
    assert api._default_sandbox("claude-code", tmp_path / "new") == "docker"
    run([COUNTER], agent="oracle", out=tmp_path, job="j", modes=["mt"])
    assert read_job_config(tmp_path / "j" / "job.json").sandbox == "local"
    monkeypatch.setattr(api, "docker_reachable", lambda: False)
    assert api._default_sandbox("evoround-agent", tmp_path / "j") == "local"  # the job's own


def test_resume_takes_what_was_not_given_from_the_lock(tmp_path: Path) -> None:
    """``run(resume=...)`` reconciles with job.json as ``evoround run --resume`` does: the
    options not given are the recorded ones, a given one that differs is one line."""
    from evoround import api
    from evoround.results import Mode

    first = run([COUNTER], agent="oracle", out=tmp_path, job="j", modes=["mt"], attempts=2)
    again = run(resume=tmp_path / "j")  # agent, tasks, attempts and modes from the lock
    assert again.job_dir == first.job_dir and again.metrics == first.metrics
    decided = api.resolve(api.RunRequest(resume=tmp_path / "j"))
    assert (decided.agent, decided.attempts, decided.modes) == ("oracle", 2, (Mode.mt,))
    assert decided.out == tmp_path and decided.job == "j" and decided.resume is None
    assert api.resolve(decided) == decided  # resolving twice changes nothing
    with pytest.raises(api.ResumeError, match="--on-fail 'continue' differs from the 'stop'"):
        api.resolve(api.RunRequest(resume=tmp_path / "j", on_fail="continue"))
    with pytest.raises(api.ResumeError, match="no job.json"):
        api.resolve(api.RunRequest(resume=tmp_path / "nope"))
