"""Run red-team attacks, each as a job of its own, in a process apart from pytest's; print
one JSON line per attack as it ends.

A process apart so the engine's peak RSS (``VmHWM``) is the jobs' alone, not pytest's; one
process for many attacks because starting an interpreter and importing the engine cost more
than most attacks' jobs (3-13 s against 3-5 s a job, measured under load). Before each job
the high-water mark is reset to the current RSS (``/proc/self/clear_refs``), so each
attack's figure is its own job's peak, the memory earlier jobs kept included (never less).
The task is a copy of the counter fixture in a git repository under ``/var/tmp`` (a part of
the host a local sandbox sees), with a random token in every hidden test and reference
file: any copy of the token in the round's snapshot is hidden material the agent reached.

Usage: ``python -m tests.adversarial.redteam_job BACKEND WORKDIR ATTACK [ATTACK ...]``
(each attack works in ``WORKDIR/ATTACK``).
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
import traceback
import uuid
from pathlib import Path

import yaml

from evoround.reports import job_json
from evoround.results import Mode
from evoround.scaffolds import ScriptedScaffold, load_script
from evoround.snapshots import SnapshotStore
from evoround.tasks import load_task
from tests.adversarial.leaks import processes_with
from tests.adversarial.redteam import ATTACKS
from tests.helpers import COUNTER, run


def peak_rss_mb() -> int:
    """This process's own peak RSS: ``VmHWM`` of its memory map. Not ``ru_maxrss``: Linux
    carries a forking parent's high-water mark over the exec into the child's, so a job
    started by a 400 MB pytest process "peaked" at 400 MB whatever it did."""
    for line in Path("/proc/self/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1]) // 1024
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss // 1024


def reset_peak_rss() -> None:
    """Start a new high-water mark at the current RSS (Linux 4.0+): the next job's peak is
    then what it reached, counted from what this process already holds."""
    Path("/proc/self/clear_refs").write_text("5")


def make_task(base: Path, tests: str, solutions: str, limits: dict[str, int]) -> Path:
    """The counter task, its hidden tests marked with token ``tests`` and its reference
    files with ``solutions``, committed in a git repository at ``base/repo``."""
    repo = base / "repo"
    task = repo / "tasks" / f"counter-{tests[-8:]}"
    shutil.copytree(COUNTER, task)
    for f in task.glob("rounds/*/*/**/*.py"):
        token = tests if "/tests/" in f.as_posix() else solutions
        f.write_text(f.read_text() + f"\n# {token}\n")
    toml = task / "task.toml"
    extra = "".join(f"\n{k} = {v}" for k, v in limits.items())
    toml.write_text(
        toml.read_text().replace("verifier_timeout_sec = 60", f"verifier_timeout_sec = 30{extra}")
    )
    git = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "task"], check=True)
    return task


def _holds(path: Path, token: bytes) -> bool:
    """Whether the file holds ``token`` (read in chunks: a blob may be hundreds of MB)."""
    tail = b""
    with open(path, "rb") as f:
        while chunk := f.read(1 << 20):
            if token in tail + chunk:
                return True
            tail = chunk[-len(token) :]
    return False


def leftovers(marker: str) -> list[Path]:
    """Files named with ``marker`` still in a local sandbox folder after the job."""
    base = Path(tempfile.gettempdir()) / "evoround-sandboxes"
    return list(base.glob(f"*/*/workspace/*{marker}*"))


def snapshot_leaks(store: SnapshotStore, snapshot_id: str | None, token: str) -> list[str]:
    """Paths in the snapshot whose content holds the token."""
    if not snapshot_id:
        return []
    out = []
    for e in store.manifest(store.get(snapshot_id).locator):
        if e["type"] == "file":
            blob = store.root / "blobs" / str(e["sha256"])[:2] / str(e["sha256"])
            if _holds(blob, token.encode()):
                out.append(str(e["path"]))
    return out


def main(name: str, backend: str, work: Path) -> dict:
    attack = ATTACKS[name]
    token = f"evoround-secret-{uuid.uuid4().hex}"  # in every hidden test
    sol_token = f"evoround-solution-{uuid.uuid4().hex}"  # in every reference file
    marker = f"evoround-rt-{uuid.uuid4().hex[:8]}"
    base = Path("/var/tmp") / f"evoround-rt-{uuid.uuid4().hex[:8]}"
    try:
        task = make_task(base, token, sol_token, attack.limits)
        os.environ.update(attack.env)

        def fill(steps: list) -> list:
            out = []
            for s in steps:
                if isinstance(s, dict) and "run" in s:
                    s = {**s, "run": s["run"].replace("{marker}", marker)
                         .replace("{task}", str(task)).replace("{token}", token)}  # fmt: skip
                out.append(s)
            return out

        rounds = {"1": fill(attack.steps)}
        if attack.later is not None:
            rounds["2"] = fill(attack.later)
        script = work / f"{name}.yaml"
        script.write_text(yaml.safe_dump({"name": name, "default": rounds}))
        job = f"rt-{name}-{uuid.uuid4().hex[:6]}"
        start = time.monotonic()
        view = run(work, ScriptedScaffold(load_script(script)), tasks=[load_task(task)],
                   modes=(Mode(attack.mode),), sandbox=backend, name=job)  # fmt: skip
        wall = time.monotonic() - start
        rss_mb = peak_rss_mb()
        json.dumps(job_json(view))  # the report of a hostile job still renders
        store = SnapshotStore(work / "store")
        oracle = {int(k) for k, steps in rounds.items() if "oracle" in steps}
        records = [
            {"round": r.round, "status": r.status.value, "passed": r.passed,
             "error": r.error or "", "integrity": bool(r.integrity_evidence),
             "leaked": snapshot_leaks(store, r.snapshot_id, token) + (
                 [] if oracle and r.round >= min(oracle)  # the oracle put it there
                 else snapshot_leaks(store, r.snapshot_id, sol_token))}
            for r in view.records
        ]  # fmt: skip
        time.sleep(0.5)
        containers: list[str] = []
        if backend == "docker":
            import docker

            from tests.adversarial.leaks import job_containers

            containers = job_containers(docker.from_env(), job)
        return {
            "attack": name,
            "backend": backend,
            "records": records,
            "wall": round(wall, 1),
            "rss_mb": rss_mb,
            "processes": processes_with(marker),
            "leftovers": [str(p) for p in leftovers(marker)],
            "containers": containers,
        }
    finally:
        shutil.rmtree(base, ignore_errors=True)


def main_many(backend: str, work: Path, names: list[str]) -> None:
    """Each attack in turn, its engine environment put back afterwards; an attack whose
    harness code raised is a line with its traceback (the test fails it), not the end."""
    for name in names:
        saved = os.environ.copy()
        reset_peak_rss()
        try:
            (work / name).mkdir(parents=True, exist_ok=True)
            out = main(name, backend, work / name)
        except Exception:
            out = {"attack": name, "backend": backend, "crash": traceback.format_exc()}
        finally:
            os.environ.clear()
            os.environ.update(saved)
        print(json.dumps(out), flush=True)


if __name__ == "__main__":
    main_many(sys.argv[1], Path(sys.argv[2]), sys.argv[3:])
