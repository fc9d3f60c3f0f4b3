"""The exit-code contract a CI job relies on, and the resume command evoround prints.

0: every attempt evaluated; 1: the job finished but some rounds were not evaluated
(infra, model_api, judge errors, task errors); 2: usage or task error, nothing ran; 130: interrupted.
The CLI in-process through its entry point (real processes where a signal or the printed
resume command needs one), the real replay server over HTTP, real pytest verification.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from evoround.results import RoundStatus, read_results
from evoround.scaffolds import serve
from tests.helpers import COUNTER, CliResult, copy_counter, evoround_cli

CLI = [sys.executable, "-m", "evoround.cli"]


def _last_line(stderr: str) -> str:
    """evoround's last line on stderr. A Python warning that a library (or multiprocessing's
    resource tracker, a process of its own) prints at interpreter exit may follow it: seen
    once in CI as a trailing ``  warnings.warn(``; it is not evoround's line."""
    lines = stderr.strip().splitlines()
    while len(lines) > 1 and (
        re.search(r":\d+: \w*Warning: ", lines[-1]) or lines[-1].startswith("  ")
    ):
        lines.pop()
    return lines[-1]


def evoround(*args: str, env: dict | None = None, cwd: Path | None = None) -> CliResult:
    """The command in-process, through its entry point (tests/helpers.py); the resume and
    missing-extra tests below start interpreters of their own."""
    return evoround_cli(*args, env=env, cwd=cwd)


def _statuses(job: Path) -> set[RoundStatus]:
    return {r.status for r in read_results(job / "results.jsonl")[0]}


def _broken_round_2(tmp_path: Path, log: Path | None = None) -> Path:
    """The counter task whose round-2 reference solution fails (solve.sh exits 3), each run
    noted in ``log`` (a host file: the test runs without local isolation)."""
    root = copy_counter(tmp_path)
    sol = root / "rounds" / "02" / "solution"
    shutil.rmtree(sol / "files")
    note = f"echo ran >> {log}\n" if log else ""
    (sol / "solve.sh").write_text(f"#!/bin/bash\n{note}echo broken >&2\nexit 3\n")
    return root


def _by_round(job: Path) -> dict[tuple[str, int], RoundStatus]:
    return {(r.mode.value, r.round): r.status for r in read_results(job / "results.jsonl")[0]}


def test_a_failing_reference_solution_is_a_task_error_not_infra(tmp_path: Path) -> None:
    """The oracle's turn (MT and SR round 2) and the reference states SR rounds 3 and 4
    start from all need round 2's broken solve.sh: every one is ``setup_error`` (a task
    error), recorded at once (never retried as infra), and the job exits 1 pointing at
    `evoround tasks validate`."""
    root = _broken_round_2(tmp_path)
    job = tmp_path / "runs" / "j"
    res = evoround("run", str(root), "--out", str(tmp_path / "runs"), "--job", "j",
                   env={"EVOROUND_INFRA_RETRIES": "5", "EVOROUND_HOME": str(tmp_path / "h")})  # fmt: skip
    assert res.returncode == 1, res.stderr[-2000:]
    broken = RoundStatus.setup_error
    assert _by_round(job) == {
        ("mt", 1): RoundStatus.passed, ("mt", 2): broken,
        ("sr", 1): RoundStatus.passed, ("sr", 2): broken, ("sr", 3): broken, ("sr", 4): broken,
    }  # fmt: skip
    assert "retry" not in res.stderr and "infra" not in res.stderr
    line = _last_line(res.stderr)
    assert "4 setup_error" in line and "task errors" in line, line
    assert "rounds/02/solution/solve.sh exited 3" in line, line
    assert "evoround tasks validate" in line, line
    assert "Traceback" not in res.stderr


def test_a_broken_reference_is_run_once_per_job_and_charged_to_the_task(tmp_path: Path) -> None:
    """nop in SR: round 2 starts from round 1's reference (the agent's own failure); rounds
    3 and 4 need round 2's broken one: both task errors, from one run of it."""
    ran = tmp_path / "ran"
    root = _broken_round_2(tmp_path, ran)
    res = evoround("run", str(root), "--agent", "nop", "--mode", "sr", "--out",
                   str(tmp_path / "runs"), "--job", "j",
                   env={"EVOROUND_LOCAL_ISOLATION": "none", "EVOROUND_HOME": str(tmp_path / "h")})  # fmt: skip
    assert res.returncode == 1, res.stderr[-2000:]
    assert _by_round(tmp_path / "runs" / "j") == {
        ("sr", 1): RoundStatus.failed, ("sr", 2): RoundStatus.failed,
        ("sr", 3): RoundStatus.setup_error, ("sr", 4): RoundStatus.setup_error,
    }  # fmt: skip
    assert ran.read_text().splitlines() == ["ran"]


def test_a_failing_round_set_up_under_a_reference_state_is_a_task_error(tmp_path: Path) -> None:
    """Round 2's workdir/setup.sh fails: SR round 2 (its own set-up) and SR rounds 3, 4 (the
    reference states they start from replay it) are ``setup_error``; exit 1, not 3."""
    root = copy_counter(tmp_path)
    (root / "rounds" / "02" / "workdir").mkdir()
    (root / "rounds" / "02" / "workdir" / "setup.sh").write_text("echo no >&2\nexit 1\n")
    res = evoround("run", str(root), "--mode", "sr", "--out", str(tmp_path / "runs"),
                   "--job", "j", env={"EVOROUND_HOME": str(tmp_path / "h")})  # fmt: skip
    assert res.returncode == 1, res.stderr[-2000:]
    statuses = _by_round(tmp_path / "runs" / "j")
    assert statuses.pop(("sr", 1)) is RoundStatus.passed
    assert set(statuses.values()) == {RoundStatus.setup_error} and len(statuses) == 3
    assert "evoround bug" not in res.stderr and "Traceback" not in res.stderr


def test_every_round_model_api_is_exit_1(tmp_path: Path) -> None:
    """The endpoint answers (the preflight passes) but every model call fails with 503.
    MT only: each round spends the agent's backoff on its 4 retries (7.5 s); with SR too,
    five rounds took 43 s for the same verdict."""
    script = {"faults": [{"status": 503, "times": 10_000}], "rounds": []}
    with serve(script) as srv:
        res = evoround("run", str(COUNTER), "--agent", "evoround-agent", "--model",
                       "openai/replay", "--api-base", srv.url, "--out", str(tmp_path / "runs"),
                       "--job", "j", "--max-steps", "2", "--sandbox", "local", "--mode", "mt")  # fmt: skip
    assert res.returncode == 1, res.stderr[-2000:]
    assert _statuses(tmp_path / "runs" / "j") == {RoundStatus.model_api}
    line = _last_line(res.stderr)
    assert "nothing was evaluated" in line and "model_api" in line, line


def test_unreachable_api_base_fails_fast_before_anything(tmp_path: Path) -> None:
    t0 = time.monotonic()
    res = evoround("run", str(COUNTER), "--agent", "claude-code", "--api-base",
                   "http://127.0.0.1:9", "--sandbox", "local", "--out", str(tmp_path / "runs"))  # fmt: skip
    assert res.returncode == 2 and time.monotonic() - t0 < 30
    assert "--api-base http://127.0.0.1:9: unreachable" in res.stderr
    assert not (tmp_path / "runs").exists()


def test_all_evaluated_is_exit_0_even_when_everything_fails(tmp_path: Path) -> None:
    """A score of zero is a result: nop fails every attempt and the job still exits 0."""
    res = evoround("run", str(COUNTER), "--agent", "nop", "--out", str(tmp_path / "runs"))
    assert res.returncode == 0, res.stderr[-2000:]
    assert "running: -" not in res.stderr


def test_printed_resume_command_works_for_a_scripted_job(tmp_path: Path) -> None:
    """SIGTERM mid-job, then run exactly the command evoround printed."""
    marks = tmp_path / "marks"
    marks.mkdir()
    script = tmp_path / "slow.yaml"
    slow = f"touch {marks}/r2; [ -e {marks}/go ] || sleep 60"
    script.write_text(yaml.safe_dump({"tasks": {"counter": {
        "1": ["oracle"], "2": ["oracle", {"run": slow}], "*": ["oracle"]}}}))  # fmt: skip
    work = tmp_path / "work"
    work.mkdir()
    # the agent signals through marker files on the host: no local isolation here
    host_env = {**os.environ, "COLUMNS": "400", "EVOROUND_LOCAL_ISOLATION": "none"}
    proc = subprocess.Popen(
        [*CLI, "run", str(COUNTER), "--agent", "scripted", "--script", "../slow.yaml",
         "--mode", "mt", "--job", "j", "--grace", "0"],  # default relative --out
        cwd=work, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=host_env,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while not (marks / "r2").exists():
        assert proc.poll() is None and time.monotonic() < deadline, proc.communicate()
        time.sleep(0.1)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err[-2000:]
    printed = err.split("continue with: ", 1)[1].strip().splitlines()[0]
    argv = shlex.split(printed)
    assert argv[:4] == ["evoround", "run", "--resume", "runs/j"], printed
    assert argv[4:] == ["--script", str(script)], printed  # absolute: resumable from anywhere
    (marks / "go").touch()
    res = subprocess.run([*CLI, *argv[1:]], cwd=work, capture_output=True, text=True,
                         timeout=300, env=host_env)  # fmt: skip
    assert res.returncode == 0, res.stderr[-2000:]
    records = read_results(work / "runs" / "j" / "results.jsonl")[0]
    assert [r.round for r in records] == [1, 2, 3, 4] and all(r.passed for r in records)


def test_max_error_rate_tolerates_some_unevaluated_rounds() -> None:
    from collections import Counter

    from evoround.api import Outcome

    some = Outcome(rounds=4, not_evaluated=Counter({"model_api": 1}), first_error="x")
    assert some.code == 1 and some.code_at(0.0) == 1 and some.code_at(0.25) == 0
    assert some.code_at(0.2) == 1
    nothing = Outcome(rounds=2, not_evaluated=Counter({"infra": 2}), first_error=None)
    assert nothing.code_at(1.0) == 1
    assert nothing.summary() == "nothing was evaluated: all 2 rounds (2 infra)"
    clean = Outcome(rounds=3, not_evaluated=Counter(), first_error=None)
    assert clean.code_at(0.0) == 0 and clean.summary() is None


@pytest.mark.docker
def test_a_failing_reference_solution_in_docker_is_a_task_error(tmp_path: Path, docker_client):
    """The same in a container: SR rounds 2..4 need round 2's broken reference."""
    root = _broken_round_2(tmp_path)
    res = evoround("run", str(root), "--sandbox", "docker", "--mode", "sr", "--out",
                   str(tmp_path / "runs"), "--job", "j", env={"EVOROUND_HOME": str(tmp_path / "h")})  # fmt: skip
    assert res.returncode == 1, res.stderr[-2000:]
    assert _by_round(tmp_path / "runs" / "j") == {
        ("sr", 1): RoundStatus.passed, ("sr", 2): RoundStatus.setup_error,
        ("sr", 3): RoundStatus.setup_error, ("sr", 4): RoundStatus.setup_error,
    }  # fmt: skip
    assert "evoround tasks validate" in _last_line(res.stderr)


@pytest.mark.docker
def test_dockerfile_that_does_not_build_is_exit_1(tmp_path: Path, docker_client) -> None:
    root = copy_counter(tmp_path)
    (root / "environment" / "Dockerfile").write_text(
        "FROM evoround-base:bookworm\nRUN echo broken-on-purpose && false\n"
    )
    res = evoround("run", str(root), "--sandbox", "docker", "--mode", "mt", "--out",
                   str(tmp_path / "runs"), "--job", "j", "--retry-on-error", "0",
                   env={"EVOROUND_HOME": str(tmp_path / "h")})  # fmt: skip
    assert res.returncode == 1, res.stderr[-2000:]
    assert _statuses(tmp_path / "runs" / "j") == {RoundStatus.infra}
    line = _last_line(res.stderr)
    assert "nothing was evaluated" in line and "infra" in line, line


def _without(module: str, *args: str) -> subprocess.CompletedProcess:
    """The CLI as if ``module`` were not installed (a lean ``pip install evoround``)."""
    code = f"import sys; sys.modules[{module!r}] = None; from evoround.cli import main; main()"
    return subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          timeout=120, env={**os.environ, "COLUMNS": "200"})  # fmt: skip


def test_a_missing_extra_is_one_line_naming_the_pip_command(tmp_path: Path) -> None:
    out = str(tmp_path / "runs")
    cases = [
        ("ray", ["--executor", "ray"], "pip install 'evoround[ray]'"),
        ("minisweagent", ["--agent", "mini-swe-agent", "--model", "openai/x"],
         "pip install 'evoround[mini-swe]'"),
    ]  # fmt: skip
    for module, args, words in cases:
        res = _without(module, "run", str(COUNTER), *args, "--out", out)
        lines = [ln for ln in res.stderr.splitlines() if ln.strip()]
        assert res.returncode == 2 and len(lines) == 1 and words in lines[0], res.stderr
    res = evoround("run", str(COUNTER), "--agent", "claude-code", "--sandbox", "local", "--out", out,
                   env={"EVOROUND_CLAUDE_BIN": str(tmp_path / "nope")})  # fmt: skip
    assert res.returncode == 2 and "EVOROUND_CLAUDE_BIN" in res.stderr
    assert not (tmp_path / "runs").exists()


@pytest.mark.parametrize("status", ["verifier_error", "setup_error"])
def test_a_job_of_task_errors_exits_1_and_names_them(status: str) -> None:
    """A job where the task's verifier gave no verdict (or its set-up failed) in every
    round is not a clean score of 0: exit 1, and the line says it is the task's fault."""
    from collections import Counter

    from evoround.api import Outcome

    every = Outcome(rounds=3, not_evaluated=Counter({status: 3}), first_error=None)
    assert every.code_at(0.0) == 1 and every.code_at(1.0) == 1  # never a job of nothing
    line = every.summary()
    assert line is not None and "all 3 rounds" in line and "task errors" in line
    some = Outcome(rounds=4, not_evaluated=Counter({status: 1}), first_error=None)
    assert some.code_at(0.0) == 1 and some.code_at(0.5) == 0


@pytest.fixture
def read_only_dir(tmp_path: Path) -> Iterator[Path]:
    """A real read-only file system (a ro tmpfs): root ignores file modes, not EROFS."""
    ro = tmp_path / "ro"
    ro.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "ro,size=1m", "tmpfs", str(ro)],
                          capture_output=True)  # fmt: skip
    if done.returncode != 0:
        pytest.skip(f"cannot mount a read-only tmpfs here: {done.stderr.decode().strip()}")
    yield ro
    subprocess.run(["umount", str(ro)], check=True)


def test_a_read_only_evoround_home_exits_2_naming_the_path(
    read_only_dir: Path, tmp_path: Path
) -> None:
    """An environment problem, not "an evoround bug" (exit 3): one line, the path, exit 2."""
    from tests.helpers import COUNTER, evoround_cli

    home = read_only_dir / "home"
    res = evoround_cli(
        "run", "--agent", "oracle", "--out", str(tmp_path / "runs"), str(COUNTER),
        env={"EVOROUND_HOME": str(home)},
    )  # fmt: skip
    assert res.returncode == 2, res
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and str(home) in lines[0] and "read-only" in lines[0], lines
    assert "evoround bug" not in res.stderr and "Traceback" not in res.stderr


def test_litellms_pydantic_readonly_warnings_are_not_printed() -> None:
    """litellm makes pydantic warn about TypedDict ``ReadOnly`` items when it is first
    imported, at any moment of a run (CI once saw it after the job's last line). The CLI
    drops exactly that warning; others still show."""
    import subprocess
    import sys

    code = (
        "import warnings\n"
        "from evoround.cli._app import _quiet_library_warnings\n"
        "_quiet_library_warnings()\n"
        "warnings.warn(\"Item 'login' on TypedDict class '_G' is using the `ReadOnly` "
        'qualifier. Pydantic will not protect items", UserWarning)\n'
        "warnings.warn('something else', UserWarning)\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert "ReadOnly" not in res.stderr and "something else" in res.stderr, res.stderr
