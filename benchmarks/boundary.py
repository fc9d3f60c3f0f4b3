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

``--harbor`` adds harbor_multiturn's boundary on a compose service of the same image:
``docker-compose stop`` the service, ``docker commit`` it, ``docker-compose start`` it
(needs ``docker-compose``; off by default, as it costs seconds per round).

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


def harbor_compose(task: Task, rounds: int, image: str, tmp: Path) -> list[dict[str, float]]:
    """harbor_multiturn's boundary: stop the compose service, commit it, start it again."""
    project = f"evoround-bench-{uuid.uuid4().hex[:6]}"
    compose = tmp / f"{project}.yml"
    compose.write_text(
        f"version: '2.4'\nservices:\n  main:\n    image: {image}\n"
        "    command: [sleep, infinity]\n    init: true\n    network_mode: none\n"
    )
    dc = ["docker-compose", "-p", project, "-f", str(compose)]

    def run(*args: str) -> str:
        return subprocess.run(
            [*dc, *args], check=True, capture_output=True, text=True
        ).stdout.strip()

    rows: list[dict[str, float]] = []
    run("up", "-d")
    try:
        cid = run("ps", "-q", "main")
        subprocess.run(["docker", "cp", f"{task.workspace_dir}/.", f"{cid}:/workspace"], check=True)
        for i in range(1, rounds + 1):
            script = task.round(i).solution_dir / "solve.sh"
            subprocess.run(
                ["docker", "exec", "-i", "-w", "/workspace", cid, "bash"],
                stdin=script.open("rb"), check=True, capture_output=True,
            )  # fmt: skip
            t: dict[str, float] = {}
            t["stop"], _ = timed(lambda: run("stop", "main"))
            t["commit"], img = timed(
                lambda: subprocess.run(["docker", "commit", cid], check=True, capture_output=True,
                                       text=True).stdout.strip()
            )  # fmt: skip
            t["start"], _ = timed(lambda: run("start", "main"))
            t["overhead"] = t["stop"] + t["commit"] + t["start"]
            rows.append(t)
            subprocess.run(["docker", "rmi", "-f", str(img)], capture_output=True)
    finally:
        subprocess.run([*dc, "down", "-v", "-t", "1"], capture_output=True)
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
                print(f"running harbor_multiturn, {size} MB...", file=sys.stderr, flush=True)
                results[("harbor", size)] = harbor_compose(task, args.rounds, image, tmp)
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
        if name == "harbor":
            cells = f"{'stop+commit+start':>40}"
            test = f"{'-':>8}"
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
