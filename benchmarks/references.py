"""SR set-up: reference states built once per task vs replaying the reference solutions.

An N-round task (default 15) whose workspace holds ``--workspace-mb`` of data; each
round's reference solution appends a function to ``calc.py``. SR runs every round
from the reference state before it. Measured side by side, per backend:

    replay     each SR round: a fresh sandbox, set-up and solutions 1..i-1 applied in it
               (what SR costs without reference states: N(N-1)/2 applications)
    first run  each SR round: ``reference_snapshot`` (the engine's, as ``run_sr_round``
               calls it; the chain is built once, in one sandbox) and the round's sandbox
               created from it
    re-run     the same with a new provider on the same store: every state is cached

and counted: the reference solutions each one applied (a re-run must apply none). Also
timed: how long until round 2 (the first round that starts from a reference state) has its
start state in its sandbox, from the start of the phase: the wait an SR job sees before its
second round can begin.
Like for like: both sides start the same N SR sandboxes (each opened and closed, from the
same provider), and each side's time runs until the provider is idle, so container starts,
removals and folder recycling set off in the background are counted, not left to the next
phase. Repeated ``--repeat`` times; medians, min/max and the ratio replay / first run.

    python benchmarks/references.py --backends local,docker
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from _synth import write_calc_rounds  # noqa: E402,I001  (run as a script: benchmarks/ is on sys.path)

from evoround.engine._reference import reference_snapshot
from evoround.sandboxes import LocalProvider, SandboxProvider
from evoround.scaffolds import prepare_round, reference_apply, solution_env
from evoround.snapshots import SnapshotKind, SnapshotStore
from evoround.tasks import Task, load_task

DOCKERFILE = """ARG BASE_IMAGE=python:3.12-slim
FROM ${BASE_IMAGE}
WORKDIR /workspace
"""


def write_task(root: Path, rounds: int, workspace_mb: int) -> Task:
    task = root / "references"
    (task / "environment").mkdir(parents=True)
    (task / "environment" / "Dockerfile").write_text(DOCKERFILE)
    (task / "workspace" / "data").mkdir(parents=True)
    (task / "workspace" / "README.md").write_text("Benchmark task.\n")
    for k in range(workspace_mb):
        (task / "workspace" / "data" / f"blob-{k:03d}.bin").write_bytes(os.urandom(1 << 20))
    (task / "task.toml").write_text('[task]\nname = "references"\nactivity = "construction"\n')
    write_calc_rounds(task, rounds)
    return load_task(task)


def make_provider(backend: str, store: SnapshotStore, tmp: Path, tag: str) -> SandboxProvider:
    if backend == "local":
        return LocalProvider(store, base_dir=tmp / f"local-{tag}")
    from evoround.sandboxes.docker import DockerProvider

    mode = "archive" if backend == "docker-archive" else "workspace"
    return DockerProvider(store, job=f"bench-refs-{tag}", snapshot_mode=mode)


def replay(task: Task, provider: SandboxProvider, ready: list[float]) -> int:
    """Every SR round's start state by replaying the solutions before it; applications.
    ``ready`` gets the time each round's sandbox holds its start state."""
    applied = 0
    for i in range(1, len(task.rounds) + 1):
        with provider.create(task, f"{task.name}/sr-replay-r{i:02d}") as sb:
            for j in range(1, i):
                prepare_round(sb, task, task.round(j))
                reference_apply(
                    sb, task.round(j), task.config.environment.agent_timeout_sec,
                    solution_env(task),
                )  # fmt: skip
                applied += 1
            ready.append(time.perf_counter())
    return applied


def from_references(
    task: Task, provider: SandboxProvider, store: SnapshotStore, ready: list[float]
) -> int:
    """Every SR round's start state as the engine gets it; returns references applied."""
    before = sum(1 for s in store.all() if s.kind is SnapshotKind.reference)
    last = len(task.rounds) - 1
    for i in range(1, len(task.rounds) + 1):
        start = reference_snapshot(task, i - 1, provider, store, upto=last)
        with provider.create(task, f"{task.name}/sr-r{i:02d}", start):
            ready.append(time.perf_counter())
    return sum(1 for s in store.all() if s.kind is SnapshotKind.reference) - before


def timed(fn: Callable[[list[float]], int], provider: SandboxProvider) -> tuple[float, int, float]:
    """``fn``'s time until the provider's background work is done too (see the doc), its
    result, and the time until round 2 held its start state."""
    ready: list[float] = []
    t = time.perf_counter()
    n = fn(ready)
    wait_idle = getattr(provider, "wait_idle", None)
    if wait_idle is not None:
        wait_idle()
    return time.perf_counter() - t, n, ready[1] - t


def run_backend(backend: str, task: Task, tmp: Path, repeat: int) -> dict[str, list[float]]:
    rows: dict[str, list[float]] = {
        k: [] for k in ("replay", "first", "rerun", "applied", "replay2", "first2")
    }
    for r in range(repeat):
        store = SnapshotStore(tmp / f"store-{backend}-{r}")
        provider = make_provider(backend, store, tmp, f"{r}a")
        try:
            t, n, t2 = timed(lambda ready, p=provider: replay(task, p, ready), provider)  # type: ignore[misc]
            rows["replay"].append(t)
            rows["replay2"].append(t2)
            t, n, t2 = timed(
                lambda ready, p=provider, s=store: from_references(task, p, s, ready),  # type: ignore[misc]
                provider,
            )
            rows["first"].append(t)
            rows["first2"].append(t2)
        finally:
            provider.close()
        provider = make_provider(backend, store, tmp, f"{r}b")  # a new run, same machine
        try:
            t, n, _ = timed(
                lambda ready, p=provider, s=store: from_references(task, p, s, ready),  # type: ignore[misc]
                provider,
            )
            rows["rerun"].append(t)
            rows["applied"].append(float(n))
        finally:
            provider.close()
    return rows


def stats(xs: list[float]) -> str:
    return f"{statistics.median(xs):7.3f} [{min(xs):.3f}-{max(xs):.3f}]"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--workspace-mb", type=int, default=1)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--backends", default="local,docker")
    args = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="evoround-bench-refs-"))
    results: dict[str, dict[str, list[float]]] = {}
    try:
        task = write_task(tmp, args.rounds, args.workspace_mb)
        for backend in [b for b in args.backends.split(",") if b]:
            print(f"running {backend}...", file=sys.stderr, flush=True)
            results[backend] = run_backend(backend, task, tmp, args.repeat)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    n = args.rounds
    print(
        f"\nSR set-up of a {n}-round task ({args.workspace_mb} MB workspace), seconds: "
        f"median [min-max] over {args.repeat}\n"
    )
    head = f"{'backend':<15}{'replay':>22}{'first run':>22}{'re-run':>22}"
    head += f"{'ratio':>8}{'re-applied':>12}"
    print(head)
    print("-" * len(head))
    for backend, rows in results.items():
        ratio = statistics.median(rows["replay"]) / statistics.median(rows["first"])
        print(
            f"{backend:<15}{stats(rows['replay']):>22}{stats(rows['first']):>22}"
            f"{stats(rows['rerun']):>22}{ratio:>7.1f}x{int(max(rows['applied'])):>12}"
        )
    print("\nbeyond starting the SR sandboxes (what the re-run costs: it applies nothing):")
    for backend, rows in results.items():
        rerun = statistics.median(rows["rerun"])
        extra = statistics.median(rows["replay"]) - rerun
        chain = statistics.median(rows["first"]) - rerun
        print(f"  {backend:<13} replay {extra:.3f} s, reference chain {chain:.3f} s: "
              f"{extra / chain if chain > 0 else float('inf'):.1f}x")  # fmt: skip
    print("\nuntil round 2 holds its start state (the wait before an SR job's second round):")
    for backend, rows in results.items():
        print(
            f"  {backend:<13} replay {stats(rows['replay2'])} s, "
            f"first run {stats(rows['first2'])} s"
        )
    print(f"\nreplay applies {n * (n - 1) // 2} reference solutions; the first run {n - 1}")
    print(
        f"both sides open and close the same {n} SR sandboxes and are timed until the "
        "provider is idle (background starts, removals and recycling included)"
    )
    print("targets: first run >= 5x cheaper than replay; a re-run applies 0 references")
    return 0


if __name__ == "__main__":
    sys.exit(main())
