"""Applying a round's reference solution to a sandbox: what the oracle does each round, and
what the engine replays to build reference states. Also the round's own set-up (Harbor's
step ``workdir/``, ``setup.sh`` and healthcheck), which runs before the agent's turn and
before a reference solution alike, so SR reference states include it.
"""

from __future__ import annotations

import posixpath
import shutil
import tempfile
import time
from pathlib import Path

from evoround.sandboxes import ExecResult, Sandbox, SandboxError
from evoround.tasks import HealthcheckSpec, Round, Task, resolve_host_env


class ReferenceSolutionError(SandboxError):
    """A task's own reference solution failed: the task is broken, not the agent."""


class RoundSetupError(Exception):
    """The round's set-up script or healthcheck failed before the agent's turn.

    Not a SandboxError: retrying does not help a broken set-up; the round is recorded as
    ``setup_error`` and the attempt ends (Harbor aborts the trial there too)."""


def _solution_dest(sandbox: Sandbox, round_: Round) -> str:
    return f"{sandbox.scratch.rstrip('/')}/solution-{round_.index:02d}"


def stage_solutions(sandbox: Sandbox, rounds: list[Round]) -> set[int]:
    """Copy the ``solution/`` folders of ``rounds`` that have a solve.sh into the sandbox's
    scratch in one transfer; the round indexes staged.

    A reference chain applies many solutions in one sandbox: on Docker each copy is an
    archive round trip (about 0.1 s) and each clean-up an exec, so the chain stages them all
    up front and leaves them to the sandbox's removal (scratch is never in a snapshot)."""
    staged = [r for r in rounds if (r.solution_dir / "solve.sh").is_file()]
    if not staged:
        return set()
    with tempfile.TemporaryDirectory(prefix="evoround-solutions-") as tmp:
        for r in staged:
            shutil.copytree(
                r.solution_dir,
                Path(tmp) / posixpath.basename(_solution_dest(sandbox, r)),
                symlinks=True,
            )
        sandbox.copy_in(tmp, sandbox.scratch)
    return {r.index for r in staged}


def reference_apply(
    sandbox: Sandbox,
    round_: Round,
    timeout: float = 300.0,
    env: dict[str, str] | None = None,
    *,
    staged: bool = False,
) -> ExecResult | None:
    """Apply one round's reference delta: the files/ overlay, then solve.sh.

    ``env`` is the task's ``[solution] env`` (Harbor runs solve.sh with it). ``staged``: the
    solution folder is already in scratch (:func:`stage_solutions`): not copied, not removed.
    """
    sol = round_.solution_dir
    if (sol / "files").is_dir():
        sandbox.copy_in(str(sol / "files"), sandbox.workdir)
    if not (sol / "solve.sh").is_file():
        return None
    dest = _solution_dest(sandbox, round_)
    if not staged:
        sandbox.copy_in(str(sol), dest)
    try:
        res = sandbox.exec(
            ["bash", f"{dest}/solve.sh"],
            timeout=timeout,
            cwd=sandbox.workdir,
            env={
                "DEBIAN_FRONTEND": "noninteractive",
                **(env or {}),
                "SOLUTION_DIR": dest,
                "EVOROUND_WORKDIR": sandbox.workdir,  # Harbor's /app, as imported scripts say
            },
        )
    finally:
        if not staged:
            sandbox.exec(["rm", "-rf", dest], timeout=60)
    if not res.ok:
        raise ReferenceSolutionError(
            f"{round_.dir}/solution/solve.sh exited {res.exit_code}: "
            f"{(res.stderr.strip() or res.stdout.strip())[-500:]}"
        )
    return res


def solution_env(task: Task) -> dict[str, str]:
    return resolve_host_env(task.config.solution.env)


def _healthcheck(sandbox: Sandbox, hc: HealthcheckSpec, label: str) -> None:
    """Harbor's healthcheck: after ``start_period_sec`` (probing every ``start_interval_sec``
    meanwhile), ``retries`` consecutive failures, ``interval_sec`` apart, fail it."""
    start = time.monotonic()
    failures = 0
    last = ""
    while True:
        res = sandbox.exec(
            hc.command,
            timeout=hc.timeout_sec,
            cwd=sandbox.workdir,
            env={"EVOROUND_WORKDIR": sandbox.workdir},
        )
        if res.ok:
            return
        last = (res.stderr.strip() or res.stdout.strip())[-300:]
        in_start = time.monotonic() - start < hc.start_period_sec
        if not in_start:
            failures += 1
            if failures >= hc.retries:
                raise RoundSetupError(
                    f"{label}: healthcheck failed {failures} times ({hc.command!r}"
                    f"{': ' + last if last else ''})"
                )
        time.sleep(hc.start_interval_sec if in_start else hc.interval_sec)


def prepare_round(sandbox: Sandbox, task: Task, round_: Round) -> None:
    """The round's set-up: copy ``rounds/NN/workdir/`` into the workspace, run its
    ``setup.sh`` there (removed afterwards if it did not remove itself), then the healthcheck.
    """
    label = f"{task.name} round {round_.index}"
    wd = round_.workdir_dir
    if wd.is_dir() and any(wd.iterdir()):
        sandbox.copy_in(str(wd), sandbox.workdir)
        if (wd / "setup.sh").is_file():
            script = posixpath.join(sandbox.workdir, "setup.sh")
            res = sandbox.exec(
                ["bash", script],
                timeout=task.config.environment.agent_timeout_sec,
                cwd=sandbox.workdir,
                env={"EVOROUND_WORKDIR": sandbox.workdir},
            )
            sandbox.exec(["rm", "-f", script], timeout=60)
            if not res.ok:
                tail = (res.stderr.strip() or res.stdout.strip())[-300:]
                raise RoundSetupError(f"{label}: workdir/setup.sh exited {res.exit_code}: {tail}")
    if round_.spec.healthcheck is not None:
        _healthcheck(sandbox, round_.spec.healthcheck, label)


MAX_ARTIFACT_BYTES = 10 * 1024 * 1024


def collect_artifacts(sandbox: Sandbox, paths: list[str], dest: Path) -> list[str]:
    """Copy the listed sandbox files into ``dest`` (Harbor's ``artifacts``); returns problems.

    Only regular files are read, through the sandbox's own (link-refusing, size-capped)
    read; a directory or a missing path is noted in ``dest/problems.txt``, never fatal."""
    problems: list[str] = []
    for p in dict.fromkeys(paths):
        try:
            data = sandbox.read_file(p)
        except (OSError, KeyError, SandboxError) as e:
            problems.append(f"{p}: not collected ({type(e).__name__}: {e})"[:300])
            continue
        if len(data) > MAX_ARTIFACT_BYTES:
            problems.append(f"{p}: larger than {MAX_ARTIFACT_BYTES} bytes, not collected")
            continue
        rel = p.lstrip("/") or "root"
        target = dest / rel
        if ".." in Path(rel).parts:
            problems.append(f"{p}: refused (..)")
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    if problems:
        dest.mkdir(parents=True, exist_ok=True)
        (dest / "problems.txt").write_text("\n".join(problems) + "\n", encoding="utf-8")
    return problems
