"""Configuration invariance, the cheap legs (DESIGN "Configuration invariance"): one fixed
job gives the same figures, every one of ``report --json`` (tests/invariance.py), with one
worker or two, killed with SIGKILL mid-job then resumed, in the local sandbox under
unshare instead of bubblewrap, with stderr a terminal (live progress) instead of a pipe,
and in Docker (each snapshot mode: workspace, archive, commit): the diff-based process checks, CSR, ISR and the compliance decay included.

The job: the bundled ``pricing`` task (process checks of several kinds, so CSR, ISR and the
compliance decay are figures too) under the bundled ``scripted:regressor`` agent (round 3
regresses in MT only: a failure class, a state penalty, a Gap), rounds 1-3, one attempt,
MT and SR, in the local sandbox (bubblewrap) as the baseline. The multi-node Ray leg is
not here yet."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from evoround.tasks import library_path
from tests.engine.test_resume_kill import cli, n_records, run_and_kill
from tests.helpers import evoround_cli
from tests.invariance import differences, figures, figures_only

pytestmark = pytest.mark.slow

JOB = ("--agent", "scripted:regressor", "--rounds", "1-3", "--mode", "both")


def _run(root: Path, job: str, *extra: str, env: dict[str, str] | None = None) -> Path:
    res = evoround_cli(
        "run", str(library_path() / "pricing"), *JOB, "--out", str(root / "runs"),
        "--job", job, *extra, env={**_env(root), **(env or {})},
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    return root / "runs" / job


def _env(root: Path) -> dict[str, str]:
    return {"EVOROUND_HOME": str(root / "home")}


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Any]:
    root = tmp_path_factory.mktemp("invariance")
    job = _run(root, "job-one", "-j", "1")
    got = figures(job, env=_env(root))
    metrics = got["jobs"][0]["metrics"]
    assert metrics["mt_at_k"] < metrics["sr"] == 1.0  # the regression is in the figures
    assert got["jobs"][0]["compliance"]["checks"] > 0  # and so are the process checks
    return root, got


def test_two_workers_change_no_figure(baseline: tuple[Path, Any]) -> None:
    root, one = baseline
    two = _run(root, "job-two", "-j", "2")
    assert differences(one, figures(two, env=_env(root))) == []


def test_unshare_instead_of_bubblewrap_changes_no_figure(baseline: tuple[Path, Any]) -> None:
    root, one = baseline
    job = _run(root, "job-unshare", env={"EVOROUND_LOCAL_ISOLATION": "unshare"})
    other = figures(job, env=_env(root))
    assert other["jobs"][0]["isolation"] == "unshare"  # the leg ran what it says
    assert differences(figures_only(one), figures_only(other)) == []


def test_stderr_a_terminal_changes_no_figure(baseline: tuple[Path, Any]) -> None:
    """The same job with stdin, stdout and stderr on a pseudo-terminal (live progress)."""
    import pty

    root, one = baseline
    job = root / "runs" / "job-tty"
    argv = cli("run", library_path() / "pricing", *JOB, "--out", root / "runs", "--job", "job-tty")
    env = {**os.environ, **_env(root), "TERM": "xterm", "COLUMNS": "120"}
    out = bytearray()

    def read(fd: int) -> bytes:
        data = os.read(fd, 65536)
        out.extend(data)
        return data

    pid, fd = pty.fork()
    if pid == 0:  # the child: exec the CLI on the terminal pty.fork gave it
        try:
            os.execvpe(argv[0], argv, env)
        finally:
            os._exit(127)  # never back into pytest in a forked child
    with contextlib.suppress(OSError):  # EIO once the child closed the terminal
        while read(fd):
            pass
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0, out.decode(errors="replace")[-3000:]
    assert b"\x1b[" in out  # it did draw for a terminal
    assert differences(one, figures(job, env=_env(root))) == []


@pytest.mark.docker
@pytest.mark.parametrize("snapshots", ["workspace", "archive", "commit"])
def test_docker_changes_no_figure(
    baseline: tuple[Path, Any], snapshots: str, docker_client: Any
) -> None:
    """Docker gives the figures of the local baseline, process checks included (before
    diffs were read through the provider, every diff-based check was n/a in Docker)."""
    root, one = baseline
    job = _run(
        root, f"job-docker-{snapshots}", "--sandbox", "docker",
        env={"EVOROUND_DOCKER_SNAPSHOT": snapshots},
    )  # fmt: skip
    other = figures(job, env=_env(root))
    assert other["jobs"][0]["config"]["sandbox"] == "docker"
    # the leg ran the snapshot mode it says: commit snapshots are images (sha256 locators)
    metas = [json.loads(m.read_text()) for m in (root / "home/store/meta").glob("agent-*.json")]
    mine = [m for m in metas if m["attempt"].startswith(f"job-docker-{snapshots}/")]
    assert mine and {m["backend"] for m in mine} == {"docker"}
    assert all(m["locator"].startswith("sha256:") == (snapshots == "commit") for m in mine)
    assert other["jobs"][0]["compliance"]["checks"] > 0  # diff-based checks are scored
    assert differences(figures_only(one), figures_only(other)) == []


def test_kill_and_resume_change_no_figure(baseline: tuple[Path, Any]) -> None:
    root, one = baseline
    job = root / "runs" / "job-killed"
    env = {**os.environ, **_env(root)}
    cmd = cli(
        "run", library_path() / "pricing", *JOB, "--out", root / "runs", "--job", "job-killed"
    )
    assert run_and_kill(cmd, env, lambda: n_records(job) >= 4), "finished before the kill"
    res = subprocess.run(
        cli("run", "--resume", job), env=env, capture_output=True, text=True, timeout=600
    )
    assert res.returncode == 0, res.stderr[-3000:]
    assert differences(one, figures(job, env=_env(root))) == []


def test_a_changed_record_is_named_where_it_changes_a_figure(
    baseline: tuple[Path, Any], tmp_path: Path
) -> None:
    """The check can fail, and says where: one MT round turned from passed to failed."""
    root, one = baseline
    job = tmp_path / "job-edited"
    shutil.copytree(root / "runs" / "job-one", job)
    results = job / "results.jsonl"
    records = [json.loads(ln) for ln in results.read_text().splitlines()]
    flipped = next(r for r in records if (r["mode"], r["round"], r["passed"]) == ("mt", 2, True))
    flipped.update(passed=False, status="failed")
    results.write_text("".join(json.dumps(r) + "\n" for r in records))
    diff = differences(one, figures(job, env=_env(root)))
    assert any(d.startswith("jobs[0].metrics.mt_at_k: ") for d in diff), diff
    assert not any(".config." in d for d in diff), diff  # a copy under another name
    assert any(d.startswith("jobs[0].metrics.by_round[1].mt_pass_rate: ") for d in diff), diff
