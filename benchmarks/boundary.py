"""Round-boundary overhead by workspace size: evoround's sandboxes (and harbor_multiturn's).

For each workspace size (default 1, 50 and 500 MB of data files) an N-round task is
solved by the oracle in one attempt sandbox; every round's solution appends a function
and rewrites a 1 MB data file (1 MB changed per round). Each round's cumulative suite has
five tests per round so far (30 at round 6), graded by the engine's own verifier. At
every boundary we time the engine's phases as the controller and verifier run them:

    snapshot   sandbox.snapshot()                       (freeze the workspace)
    start      provider.create(task, verify, snapshot)  (isolated clone ready)
    copy       run_pytest minus pytest's own run        (suite and config in, report out)
    test       pytest itself: reported, NOT engine overhead
    teardown   clone.close()

Nothing waits for background work (spare containers being started and filled, removals)
before a boundary: a real job does not either, and an agent turn here is only as long as
the oracle's. Medians, min/max, and the ratio of each size's median to the 1 MB one.

``--harbor`` adds harbor_multiturn's round boundary on a compose service of the same image
(needs ``docker-compose`` to create the service; off by default), in its two forms (see
:func:`harbor_compose`): ``harbor`` verifies in the agent's own container (its default),
``harbor-state`` also captures the round's state snapshot (its ``multiround_state_cache_policy``
``all``/``success``: stop, commit, save, start again).

    python benchmarks/boundary.py
    python benchmarks/boundary.py --sizes 1,50 --backends local,docker,docker-archive
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path

from _synth import write_calc_rounds  # noqa: E402,I001  (run as a script: benchmarks/ is on sys.path)

from evoround.sandboxes import LocalProvider, Sandbox, SandboxProvider
from evoround.scaffolds import reference_apply
from evoround.snapshots import Snapshot, SnapshotKind, SnapshotLabel, SnapshotStore
from evoround.tasks import Task, active_tests, load_task
from evoround.verifiers import run_pytest

PHASES = ("snapshot", "start", "copy", "teardown")

DOCKERFILE = """ARG BASE_IMAGE=python:3.12-slim
FROM ${BASE_IMAGE}
RUN python3 -c "import pytest" 2>/dev/null || pip install --no-cache-dir pytest
WORKDIR /workspace
"""

TESTS = """from calc import f{i}


def test_value():
    assert f{i}() == {i}


def test_type():
    assert isinstance(f{i}(), int)


def test_repeatable():
    assert f{i}() == f{i}()


def test_data_changed():
    import os
    assert os.path.getsize("data/churn.bin") == 1 << 20


def test_param_sum():
    assert sum(f{i}() for _ in range(3)) == 3 * {i}
"""


def write_task(root: Path, rounds: int, size_mb: int) -> Task:
    task = root / f"boundary-{size_mb}mb"
    (task / "environment").mkdir(parents=True)
    (task / "environment" / "Dockerfile").write_text(DOCKERFILE)
    data = task / "workspace" / "data"
    data.mkdir(parents=True)
    (task / "workspace" / "README.md").write_text("Benchmark task.\n")
    chunk = bytes(range(256)) * 4096  # 1 MiB
    for k in range(size_mb):
        (data / f"blob-{k:04d}.bin").write_bytes(chunk[k % 256 :] + chunk[: k % 256])
    (task / "task.toml").write_text(
        f'[task]\nname = "boundary-{size_mb}mb"\nactivity = "construction"\n'
        "[environment]\nmax_workspace_mb = 2048\n"
    )
    write_calc_rounds(
        task, rounds, solve_extra="head -c 1048576 /dev/urandom > data/churn.bin\n",
        test_file="test_r{i:02d}.py", test=TESTS,
    )  # fmt: skip
    return load_task(task)


def timed(fn: Callable[[], object]) -> tuple[float, object]:
    t = time.perf_counter()
    out = fn()
    return time.perf_counter() - t, out


def boundary(
    provider: SandboxProvider, sb: Sandbox, task: Task, i: int, parent: Snapshot
) -> tuple[dict[str, float], Snapshot]:
    """One round boundary, phase by phase, as the controller + verifier do it."""
    label = SnapshotLabel(
        task=task.name, task_digest=task.digest, kind=SnapshotKind.agent, round=i,
        attempt="bench", parent=parent.id,
    )  # fmt: skip
    t: dict[str, float] = {}
    t["snapshot"], snap = timed(lambda: sb.snapshot(label))
    t["start"], clone = timed(lambda: provider.create(task, f"bench/verify-{i:02d}", snap))  # type: ignore[arg-type]
    assert isinstance(clone, Sandbox)
    wall, outcome = timed(lambda: run_pytest(clone, active_tests(task, i), i, timeout=300))
    if not outcome.passed:  # type: ignore[attr-defined]
        raise SystemExit(f"{task.name} round {i}: the oracle state failed: {outcome}")
    t["test"] = outcome.duration_sec  # type: ignore[attr-defined]
    t["copy"] = wall - t["test"]
    t["teardown"], _ = timed(clone.close)
    t["overhead"] = sum(t[p] for p in PHASES)
    return t, snap  # type: ignore[return-value]


def make_provider(name: str, store: SnapshotStore, tmp: Path) -> SandboxProvider:
    if name == "local":
        return LocalProvider(store, base_dir=tmp / "local")
    from evoround.sandboxes.docker import DockerProvider

    mode = {"docker": "workspace", "docker-archive": "archive"}[name]
    return DockerProvider(store, job=f"bench-{name}", snapshot_mode=mode)


def run_config(name: str, task: Task, rounds: int, tmp: Path) -> list[dict[str, float]]:
    store = SnapshotStore(tmp / f"store-{name}-{task.name}")
    provider = make_provider(name, store, tmp)
    rows: list[dict[str, float]] = []
    try:
        with provider.create(task, "bench/mt-01") as sb:
            snap = sb.snapshot(
                SnapshotLabel(task=task.name, task_digest=task.digest, kind=SnapshotKind.initial,
                              round=0, attempt="bench")
            )  # fmt: skip
            for i in range(1, rounds + 1):
                reference_apply(sb, task.round(i))  # the agent's turn; nothing waited for
                row, snap = boundary(provider, sb, task, i, snap)
                rows.append(row)
    finally:
        provider.close()
    return rows


HARBOR_TEST_SH = """#!/bin/bash
# the round's test.sh as harbor tasks write it: pytest, then the reward file; pytest's own
# time is written beside it, so the boundary's overhead excludes it (as evoround's "test")
cd /workspace
t0=$(date +%s.%N)
python3 -m pytest -q -p no:cacheprovider /tests > /dev/null 2>&1; rc=$?
echo "$(date +%s.%N) $t0" | awk '{print $1 - $2}' > /logs/verifier/pytest-sec.txt
if [ $rc -eq 0 ]; then reward=1; else reward=0; fi
echo $reward > /logs/verifier/reward.txt
"""


def harbor_compose(
    task: Task, rounds: int, image: str, tmp: Path, *, state: bool
) -> list[dict[str, float]]:
    """harbor_multiturn's round boundary, on a compose service ``main`` of the same image.

    What UniPat-AI/harbor_multiturn does between two rounds of one trial
    (``src/harbor/trial/single_step.py``, ``SingleStepTrial._execute_multiround``; a
    ``[[steps]]`` task's boundary in ``src/harbor/trial/multi_step.py`` has the same shape in
    its default ``shared`` verifier mode: ``_reset_shared_step_verifier_dirs`` then
    ``_run_shared_verifier``, in the agent's own environment, and no stop):

    ``_verify_round`` runs the round's tests **inside the agent's own container** (no
    isolation from what the agent changed, no snapshot): ``reset_dirs`` of ``/tests`` (one
    ``exec`` as root: ``rm -rf``, ``mkdir -p``, ``chmod 777``), ``upload_dir`` of the round's
    tests, one ``exec`` removing the old ``reward.txt``/``reward.json``, ``chmod +x`` of the
    test script, one ``exec`` of the script with its stdout into ``/logs/verifier``; the
    reward is then read on the host from the bind-mounted ``/logs/verifier`` (the Docker
    environment is ``mounted``). That is the whole boundary by default
    (``multiround_state_cache_policy`` is ``off``): config ``harbor``.

    With a state cache policy (``all``/``success``, needed to resume a trial at a later
    round) ``_capture_environment_state_snapshot`` follows, i.e.
    ``DockerEnvironment.capture_state_snapshot`` (``src/harbor/environments/docker/
    docker.py``): ``exec sync``, ``docker compose stop -t 30 main``, ``ps -a -q main``,
    ``docker commit`` of the stopped container, ``docker image inspect``, ``docker save -o``
    of the image into the trial folder (``archive_path`` is always passed), then ``docker
    compose up --detach --wait`` to go on: config ``harbor-state`` (its ``state`` phase).

    Harbor calls these through ``docker compose`` (v2, a Go binary: each call is about one
    ``docker`` CLI call). This machine has only ``docker-compose`` v1, whose Python start-up
    costs about 1 s per call, which would overstate harbor's cost; so the service is created
    with it, and each per-round call is made with the ``docker`` CLI on the service's
    container (``exec``, ``cp``, ``stop -t 30``, ``commit``, ``save``, ``start``): the same
    daemon calls compose v2 makes. The ``ps``/``inspect`` look-ups are left out (they only
    read state). Overhead excludes pytest's own run, as evoround's ``test`` does.
    """
    project = f"evoround-bench-{uuid.uuid4().hex[:6]}"
    logs = tmp / f"{project}-verifier"
    logs.mkdir()
    logs.chmod(0o777)
    compose = tmp / f"{project}.yml"
    compose.write_text(
        f"version: '2.4'\nservices:\n  main:\n    image: {image}\n"
        "    command: [sleep, infinity]\n    init: true\n    network_mode: none\n"
        f"    volumes: ['{logs}:/logs/verifier']\n"
    )
    dc = ["docker-compose", "-p", project, "-f", str(compose)]

    def docker(*args: str, stdin: Path | None = None) -> str:
        out = subprocess.run(
            ["docker", *args], check=True, capture_output=True, text=stdin is None,
            stdin=stdin.open("rb") if stdin else None,
        ).stdout  # fmt: skip
        return out.strip() if isinstance(out, str) else ""

    rows: list[dict[str, float]] = []
    subprocess.run([*dc, "up", "-d"], check=True, capture_output=True)
    saved = tmp / f"{project}-state.tar"
    try:
        cid = subprocess.run(
            [*dc, "ps", "-q", "main"], check=True, capture_output=True, text=True
        ).stdout.strip()
        docker("cp", f"{task.workspace_dir}/.", f"{cid}:/workspace")
        for i in range(1, rounds + 1):
            docker("exec", "-i", "-w", "/workspace", cid, "bash",
                   stdin=task.round(i).solution_dir / "solve.sh")  # the agent's turn  # fmt: skip
            tests = tmp / f"{project}-tests-{i:02d}"
            tests.mkdir()
            for j in range(1, i + 1):  # the cumulative suite, as evoround's verifier runs it
                for f in task.round(j).tests_dir.iterdir():
                    shutil.copy(f, tests / f.name)
            (tests / "test.sh").write_text(HARBOR_TEST_SH)
            t: dict[str, float] = {}
            t0 = time.perf_counter()
            docker("exec", "-u", "root", cid, "bash", "-c",
                   "rm -rf /tests && mkdir -p /tests && chmod 777 /tests")  # fmt: skip
            docker("cp", f"{tests}/.", f"{cid}:/tests")
            docker("exec", "-u", "root", cid, "bash", "-c",
                   "rm -f /logs/verifier/reward.txt /logs/verifier/reward.json")  # fmt: skip
            docker("exec", "-u", "root", cid, "chmod", "+x", "/tests/test.sh")
            docker("exec", "-w", "/workspace", cid, "bash", "-c",
                   "/tests/test.sh > /logs/verifier/test-stdout.txt 2>&1")  # fmt: skip
            if (logs / "reward.txt").read_text().strip() != "1":
                raise SystemExit(f"harbor {task.name} round {i}: the oracle state failed")
            t["test"] = float((logs / "pytest-sec.txt").read_text())
            t["verify"] = time.perf_counter() - t0 - t["test"]
            t["state"] = 0.0
            if state:
                t1 = time.perf_counter()
                docker("exec", cid, "sync")
                docker("stop", "-t", "30", cid)
                img = docker("commit", cid, f"{project}-round-{i}")
                docker("save", "-o", str(saved), img)
                docker("start", cid)
                t["state"] = time.perf_counter() - t1
                subprocess.run(["docker", "rmi", "-f", img], capture_output=True)
                saved.unlink(missing_ok=True)
            t["overhead"] = t["verify"] + t["state"]
            rows.append(t)
            shutil.rmtree(tests, ignore_errors=True)
    finally:
        subprocess.run([*dc, "down", "-v", "-t", "1"], capture_output=True)
        shutil.rmtree(logs, ignore_errors=True)
    return rows


def med(rows: list[dict[str, float]], key: str) -> float:
    return statistics.median(r[key] for r in rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--sizes", default="1,50,500", help="workspace sizes in MB")
    ap.add_argument("--backends", default="local,docker")
    ap.add_argument("--harbor", action="store_true", help="add the harbor_multiturn procedure")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    configs = [c for c in args.backends.split(",") if c]
    tmp = Path(tempfile.mkdtemp(prefix="evoround-bench-"))
    results: dict[tuple[str, int], list[dict[str, float]]] = {}
    try:
        for size in sizes:
            task = write_task(tmp, args.rounds, size)
            for name in configs:
                print(f"running {name}, {size} MB...", file=sys.stderr, flush=True)
                results[(name, size)] = run_config(name, task, args.rounds, tmp)
            if args.harbor:
                from evoround.sandboxes.docker import DockerProvider

                with DockerProvider(SnapshotStore(tmp / "store-harbor"), job="bench-h") as p:
                    image = p.task_image(task).image_id
                for name, state in (("harbor", False), ("harbor-state", True)):
                    print(f"running {name}, {size} MB...", file=sys.stderr, flush=True)
                    results[(name, size)] = harbor_compose(
                        task, args.rounds, image, tmp, state=state
                    )
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    print(f"\nseconds per round boundary, {args.rounds} rounds, 1 MB changed per round")
    print("median, with [min-max] of the overhead; ratio = median / the 1 MB median\n")
    head = (
        f"{'config':<15}{'MB':>5}" + "".join(f"{p:>10}" for p in PHASES)
        + f"{'OVERHEAD':>10}{'[min-max]':>16}{'ratio':>7}{'test*':>8}"
    )  # fmt: skip
    print(head)
    print("-" * len(head))
    for (name, size), rows in results.items():
        base = results.get((name, sizes[0]))
        ratio = med(rows, "overhead") / med(base, "overhead") if base else float("nan")
        lo, hi = min(r["overhead"] for r in rows), max(r["overhead"] for r in rows)
        if name.startswith("harbor"):
            what = "verify in place" + (
                f" + state {med(rows, 'state'):.3f}" if name != "harbor" else ""
            )
            cells = f"{what:>40}"
            test = f"{med(rows, 'test'):>8.3f}"
        else:
            cells = "".join(f"{med(rows, p):>10.3f}" for p in PHASES)
            test = f"{med(rows, 'test'):>8.3f}"
        print(
            f"{name:<15}{size:>5}{cells}{med(rows, 'overhead'):>10.3f}"
            f"{f'[{lo:.3f}-{hi:.3f}]':>16}{ratio:>6.2f}x{test}"
        )
    print("* pytest itself; not engine overhead")
    big = max(sizes)
    if ("docker", big) in results and ("docker", sizes[0]) in results:
        value = med(results[("docker", big)], "overhead")
        ratio = value / med(results[("docker", sizes[0])], "overhead")
        ok = value <= 1.0 and ratio <= 1.5
        print(f"\ntarget: docker at {big} MB <= 1.0 s and <= 1.5x the {sizes[0]} MB boundary: "
              f"{value:.3f} s, {ratio:.2f}x  {'ok' if ok else 'MISSED'}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
