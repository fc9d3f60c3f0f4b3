"""Configuration invariance, the cheap legs (DESIGN "Configuration invariance"): one fixed
job gives the same figures, every one of ``report --json`` (tests/invariance.py), with one
worker or two, killed with SIGKILL mid-job then resumed, in the local sandbox under
unshare instead of bubblewrap, with stderr a terminal (live progress) instead of a pipe,
and in Docker (each snapshot mode: workspace, archive, commit, recorded in job.json): the
diff-based process checks, the judge checks, CSR, ISR and the compliance decay included.

The job, one of each kind issue 33 names, rounds 1-3, one attempt, MT and SR, in the local
sandbox (bubblewrap) as the baseline:

- the bundled ``pricing`` task (process checks of several kinds, so CSR, ISR and the
  compliance decay are figures too);
- ``checkkinds`` (tests/fixtures/invariance): two tiny rounds with one check of every rule
  of the checklist registry and two judge checks, which the replay server answers over
  HTTP through litellm (``--judge-model``; the verdict cache is the job's ``--out``, so the
  server answers each new piece of evidence once);
- a Harbor multi-step task (tests/fixtures/harbor/multi-step-greet, 3 steps, a script
  verifier) imported by ``evoround tasks import``; Docker builds it on the local base image
  (``--base-image-map``: no registry);
- the agent: the bundled ``scripted:regressor`` (round 3 of ``pricing`` regresses in MT only:
  a failure class, a state penalty, a Gap) with a ``checkkinds`` entry that leaves evidence
  for every rule (tests/fixtures/invariance/regressor.yaml).

The baseline, the -j2 leg and Docker's default snapshot mode (workspace) run the whole set;
the other legs (unshare, a terminal, kill and resume, Docker archive and commit) run it
without the imported task, against a baseline of that set: the imported task costs a Docker
leg an image and three more containers a round, and goes through the same paths as the
others. The multi-node Ray legs are in tests/engine/test_cluster.py."""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from evoround.sandboxes.docker import default_base_image
from evoround.scaffolds import serve
from evoround.tasks import library_path
from evoround.verifiers.checklist import RULES
from tests.engine.test_resume_kill import cli, n_records, run_and_kill
from tests.helpers import FIXTURES, evoround_cli
from tests.invariance import (
    GREET,
    GREET_NAME,
    JUDGE,
    differences,
    figures,
    figures_only,
    verdicts,
)

pytestmark = pytest.mark.slow

CHECKKINDS = FIXTURES / "invariance" / "checkkinds"
AGENT = FIXTURES / "invariance" / "regressor.yaml"
J2 = ("-j", "2")
"""The legs after the baseline run two attempts at once (the -j 2 leg shows that this
changes no figure): the set is 16 rounds, and most of a leg is waiting on a sandbox."""


FULL = "full"
"""The whole set, with the imported Harbor task: the baseline, -j2 and Docker's default
snapshot mode run it."""
SMALL = "small"
"""``pricing`` and ``checkkinds`` (every rule kind, the judge): the other legs run it
against a baseline of their own. The imported task's share of a Docker leg is an image
built on the base image and three more containers a round; it goes through the same
import, sandbox and verifier paths as the two others, so one Docker leg carries it."""


@pytest.fixture(scope="module")
def suite(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[Path, dict[str, list[str]]]]:
    """The job's folder and its ``run`` arguments per set (tasks, agent, rounds, modes,
    judge); the replay server answers the judge while the module's tests run."""
    root = tmp_path_factory.mktemp("invariance")
    res = evoround_cli("tasks", "import", str(GREET), str(root / "tasks" / "greet"))
    assert res.returncode == 0, res.stderr[-3000:]
    with serve(JUDGE) as judge:
        common = [
            "--agent", "scripted", "--script", str(AGENT), "--rounds", "1-3", "--mode", "both",
            "--judge-model", "openai/replay-judge", "--judge-api-base", judge.url,
        ]  # fmt: skip
        small = [str(library_path() / "pricing"), str(CHECKKINDS)]
        yield root, {SMALL: small + common, FULL: [*small, str(root / "tasks" / "greet"), *common]}


Suite = tuple[Path, list[str]]
"""The module's folder and one set's ``run`` arguments."""


def _run(suite: Suite, job: str, *extra: str, env: dict[str, str] | None = None) -> Path:
    root, args = suite
    res = evoround_cli(
        "run", *args, "--out", str(root / "runs"), "--job", job, *extra,
        env={**_env(root), **(env or {})},
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    return root / "runs" / job


def _env(root: Path) -> dict[str, str]:
    return {"EVOROUND_HOME": str(root / "home"), "OPENAI_API_KEY": "replay"}


def _baseline(suite: Suite, job: str, tasks: set[str]) -> tuple[Suite, Any]:
    root, _ = suite
    path = _run(suite, job, "-j", "1")
    got = figures(path, env=_env(root))
    metrics = got["jobs"][0]["metrics"]
    assert metrics["mt_at_k"] < metrics["sr"] == 1.0  # the regression is in the figures
    assert got["jobs"][0]["compliance"]["checks"] > 0  # and so are the process checks
    _assert_the_set_ran(path, tasks)
    return suite, got


@pytest.fixture(scope="module")
def baseline(suite: tuple[Path, dict[str, list[str]]]) -> tuple[Suite, Any]:
    """The whole set, local (bubblewrap), one worker."""
    root, sets = suite
    return _baseline((root, sets[FULL]), "job-one", {"pricing", "checkkinds", GREET_NAME})


@pytest.fixture(scope="module")
def small_baseline(suite: tuple[Path, dict[str, list[str]]]) -> tuple[Suite, Any]:
    """The set without the imported task, local (bubblewrap), one worker."""
    root, sets = suite
    return _baseline((root, sets[SMALL]), "job-one-small", {"pricing", "checkkinds"})


def _assert_the_set_ran(job: Path, tasks: set[str]) -> None:
    """Every task of the set has its rounds recorded, every rule of the registry was scored
    (a verdict, not an error), and the judge answered both ways."""
    records = [json.loads(ln) for ln in (job / "results.jsonl").read_text().splitlines()]
    assert {r["task"] for r in records} == tasks
    task = json.loads((job / "job.json").read_text())["tasks"]["checkkinds"]
    assert task["n_rounds"] == 2
    got = verdicts(job, "checkkinds")
    assert all("error" not in v for v in got.values()), got
    assert got["judge-explains"] == {"pass"} and got["judge-usage"] == {"fail"}
    spec = tomllib.loads((CHECKKINDS / "task.toml").read_text())
    checks = spec["checks"] + [c for r in spec["rounds"] for c in r.get("checks", [])]
    assert {c["rule"] for c in checks if c["kind"] == "rule"} == set(RULES)  # every rule kind
    scored = {v for vs in got.values() for v in vs}
    assert {"pass", "fail"} <= scored


def test_two_workers_change_no_figure(baseline: Any) -> None:
    suite, one = baseline
    two = _run(suite, "job-two", "-j", "2")
    assert differences(one, figures(two, env=_env(suite[0]))) == []


def test_unshare_instead_of_bubblewrap_changes_no_figure(small_baseline: Any) -> None:
    suite, one = small_baseline
    job = _run(suite, "job-unshare", *J2, env={"EVOROUND_LOCAL_ISOLATION": "unshare"})
    other = figures(job, env=_env(suite[0]))
    assert other["jobs"][0]["isolation"] == "unshare"  # the leg ran what it says
    assert differences(figures_only(one), figures_only(other)) == []


def test_stderr_a_terminal_changes_no_figure(small_baseline: Any) -> None:
    """The same job with stdin, stdout and stderr on a pseudo-terminal (live progress)."""
    import pty

    suite, one = small_baseline
    root, args = suite
    job = root / "runs" / "job-tty"
    argv = cli("run", *args, *J2, "--out", root / "runs", "--job", "job-tty")
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
    request: pytest.FixtureRequest, snapshots: str, docker_client: Any
) -> None:
    """Docker gives the figures of the local baseline, process checks included (before
    diffs were read through the provider, every diff-based check was n/a in Docker). The
    snapshot mode is recorded in job.json, and a resume under another mode is refused
    (the job's earlier snapshots, which MT continues from, are of the recorded kind). The
    default mode runs the whole set, the two others the set without the imported task."""
    suite, one = request.getfixturevalue(
        "baseline" if snapshots == "workspace" else "small_baseline"
    )
    root = suite[0]
    name = f"job-docker-{snapshots}"
    job = _run(
        suite, name, *J2, "--sandbox", "docker",
        "--base-image-map", f"ubuntu:24.04={default_base_image()}",
        env={"EVOROUND_DOCKER_SNAPSHOT": snapshots},
    )  # fmt: skip
    other = figures(job, env=_env(root))
    assert other["jobs"][0]["config"]["sandbox"] == "docker"
    assert json.loads((job / "job.json").read_text())["docker_snapshot"] == snapshots
    # the leg ran the snapshot mode it says: commit snapshots are images (sha256 locators)
    metas = [json.loads(m.read_text()) for m in (root / "home/store/meta").glob("agent-*.json")]
    mine = [m for m in metas if m["attempt"].startswith(f"{name}/")]
    assert mine and {m["backend"] for m in mine} == {"docker"}
    assert all(m["locator"].startswith("sha256:") == (snapshots == "commit") for m in mine)
    assert other["jobs"][0]["compliance"]["checks"] > 0  # diff-based checks are scored
    assert differences(figures_only(one), figures_only(other)) == []
    _assert_resume_keeps_the_mode(job, snapshots)


def _assert_resume_keeps_the_mode(job: Path, recorded: str) -> None:
    """A finished job resumes (nothing left to run) with the mode unset, under the recorded
    mode; another mode is refused in one line before anything runs."""
    env = _env(job.parents[1])
    other = "archive" if recorded != "archive" else "commit"
    res = evoround_cli("run", "--resume", str(job), "--script", str(AGENT),
                       env={**env, "EVOROUND_DOCKER_SNAPSHOT": other})  # fmt: skip
    assert res.returncode == 2, res.stderr[-2000:]
    lines = [x for x in res.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and repr(other) in lines[0] and repr(recorded) in lines[0], lines
    res = evoround_cli("run", "--resume", str(job), "--script", str(AGENT), env=env)
    assert res.returncode == 0, res.stderr[-2000:]
    assert json.loads((job / "job.json").read_text())["docker_snapshot"] == recorded


def test_kill_and_resume_change_no_figure(small_baseline: Any) -> None:
    suite, one = small_baseline
    root, args = suite
    job = root / "runs" / "job-killed"
    env = {**os.environ, **_env(root)}
    cmd = cli("run", *args, *J2, "--out", root / "runs", "--job", "job-killed")
    assert run_and_kill(cmd, env, lambda: n_records(job) >= 4), "finished before the kill"
    res = subprocess.run(
        cli("run", "--resume", job, "--script", AGENT),
        env=env, capture_output=True, text=True, timeout=600,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    assert differences(one, figures(job, env=_env(root))) == []


def test_a_changed_record_is_named_where_it_changes_a_figure(baseline: Any, tmp_path: Path) -> None:
    """The check can fail, and says where: one MT round turned from passed to failed."""
    suite, one = baseline
    root = suite[0]
    job = tmp_path / "job-edited"
    shutil.copytree(root / "runs" / "job-one", job)
    results = job / "results.jsonl"
    records = [json.loads(ln) for ln in results.read_text().splitlines()]
    flipped = next(
        r
        for r in records
        if (r["task"], r["mode"], r["round"], r["passed"]) == ("pricing", "mt", 2, True)
    )
    flipped.update(passed=False, status="failed")
    results.write_text("".join(json.dumps(r) + "\n" for r in records))
    diff = differences(one, figures(job, env=_env(root)))
    assert any(d.startswith("jobs[0].metrics.mt_at_k: ") for d in diff), diff
    assert not any(".config." in d for d in diff), diff  # a copy under another name
    assert any(d.startswith("jobs[0].metrics.by_round[1].mt_pass_rate: ") for d in diff), diff
