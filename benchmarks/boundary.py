"""Round-boundary cost by workspace size, and what verification adds to a plain pytest run.

Two measurements, interleaved in one run (each repetition runs every configuration once, in
turn, so the shared machine's noise falls on all of them alike); medians with [min-max]:

**Boundary** (pytest excluded), for each workspace size (default 1, 50 and 500 MB of data
files; every round's solution appends a function and rewrites a 1 MB data file, so 1 MB
changes per round) and backend, per round of an N-round oracle attempt:

    snapshot   sandbox.snapshot()                       (freeze the workspace)
    start      provider.create(task, verify, snapshot)  (isolated clone ready)
    teardown   clone.close()
    BOUNDARY   their sum
    floor      the least any isolated copy costs here: local ``cp -a`` of the workspace;
               Docker: create and start a container of the task image, put the workspace
               into it as one archive, remove it

**Verification extra** over plain ``python -m pytest`` of the same files in the same clone
(same interpreter, one sandbox command each, order alternating): the suite and config copied
in, the runner, the guard, controls, twins, the fresh copy, the report read back, the
cross-checks. Suites: 20 tests, 200 tests (10 files) and a slow one (25 tests of 1 s).

Targets (issue 32): extra <= +0.3 s for 20 tests and <= 1.1x for the slow suite; boundary
<= 1.2x the floor at 1 MB, and at the largest size <= 0.5 s on Docker, <= 0.1 s local.

``--harbor`` adds harbor_multiturn's round boundary on a compose service of the same image
(needs ``docker-compose`` to create the service; off by default), in its two forms (see
:func:`harbor_compose`): ``harbor`` verifies in the agent's own container (its default),
``harbor-state`` also captures the round's state snapshot (its ``multiround_state_cache_policy``
``all``/``success``: stop, commit, save, start again).

    python benchmarks/boundary.py
    python benchmarks/boundary.py --sizes 1,50 --suites 20,200 --backends local --repeats 3
    python benchmarks/boundary.py --code /path/to/other/checkout   # time another checkout
"""

from __future__ import annotations

import argparse
import io
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import uuid
from collections.abc import Callable
from pathlib import Path


def _code_first() -> None:
    """``--code DIR``: import evoround from that checkout (read before evoround is imported)."""
    if "--code" in sys.argv[:-1]:
        sys.path.insert(0, str(Path(sys.argv[sys.argv.index("--code") + 1]).resolve()))


_code_first()

from _synth import write_calc_rounds  # noqa: E402,I001  (run as a script: benchmarks/ is on sys.path)

from evoround.sandboxes import LocalProvider, Sandbox, SandboxProvider  # noqa: E402
from evoround.scaffolds import reference_apply  # noqa: E402
from evoround.snapshots import Snapshot, SnapshotKind, SnapshotLabel, SnapshotStore  # noqa: E402
from evoround.tasks import Task, active_tests, load_task  # noqa: E402
from evoround.verifiers import run_pytest  # noqa: E402

PHASES = ("snapshot", "start", "teardown")

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
        + "".join(
            f'\n[[rounds]]\ntitle = "Round {i}"\nchange_types = ["extension"]\n'
            for i in range(1, rounds + 1)
        )
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
    """One round boundary, phase by phase, as the controller + verifier do it (the
    verification runs, to check the oracle state and leave the clone as a real one is left,
    but is not counted here: see :func:`extra`)."""
    label = SnapshotLabel(
        task=task.name, task_digest=task.digest, kind=SnapshotKind.agent, round=i,
        attempt="bench", parent=parent.id,
    )  # fmt: skip
    t: dict[str, float] = {}
    t["snapshot"], snap = timed(lambda: sb.snapshot(label))
    t["start"], clone = timed(lambda: provider.create(task, f"bench/verify-{i:02d}", snap))  # type: ignore[arg-type]
    assert isinstance(clone, Sandbox)
    outcome = run_pytest(clone, active_tests(task, i), i, timeout=300)
    if not outcome.passed:
        raise SystemExit(f"{task.name} round {i}: the oracle state failed: {outcome}")
    t["teardown"], _ = timed(clone.close)
    t["boundary"] = sum(t[p] for p in PHASES)
    return t, snap  # type: ignore[return-value]


def floor(name: str, provider: SandboxProvider, task: Task, tmp: Path) -> float:
    """The least an isolated copy of the workspace costs here (see the module docstring)."""
    if name == "local":
        dest = tmp / f"floor-{uuid.uuid4().hex[:8]}"
        t0 = time.perf_counter()
        subprocess.run(["cp", "-a", str(task.workspace_dir), str(dest)], check=True)
        took = time.perf_counter() - t0
        shutil.rmtree(dest)
        return took
    api = provider.client.api  # type: ignore[attr-defined]
    image = provider.task_image(task).image_id  # type: ignore[attr-defined]
    t0 = time.perf_counter()
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(str(task.workspace_dir), arcname=".")
    cid = api.create_container(
        image, entrypoint=["sleep"], command=["infinity"],
        host_config=api.create_host_config(network_mode="none", init=True),
    )["Id"]  # fmt: skip
    api.start(cid)
    api.put_archive(cid, "/workspace", buf.getvalue())
    api.remove_container(cid, force=True)
    return time.perf_counter() - t0


def make_provider(name: str, store: SnapshotStore, tmp: Path) -> SandboxProvider:
    if name == "local":
        return LocalProvider(store, base_dir=tmp / "local")
    from evoround.sandboxes.docker import DockerProvider

    mode = {"docker": "workspace", "docker-archive": "archive"}[name]
    return DockerProvider(store, job=f"bench-{name}", snapshot_mode=mode)


def run_config(
    provider: SandboxProvider, task: Task, rounds: int, tmp: Path, name: str
) -> list[dict[str, float]]:
    """One oracle attempt of ``rounds`` rounds: its boundaries, each with a floor beside it."""
    rows: list[dict[str, float]] = []
    with provider.create(task, "bench/mt-01") as sb:
        snap = sb.snapshot(
            SnapshotLabel(task=task.name, task_digest=task.digest, kind=SnapshotKind.initial,
                          round=0, attempt="bench")
        )  # fmt: skip
        for i in range(1, rounds + 1):
            reference_apply(sb, task.round(i))  # the agent's turn; nothing waited for
            row, snap = boundary(provider, sb, task, i, snap)
            row["floor"] = floor(name, provider, task, tmp)
            rows.append(row)
    return rows


def suite_task(root: Path, kind: str) -> Task:
    """A one-round task whose suite is ``kind``: ``20`` or ``200`` quick tests, or ``slow``
    (25 tests of 1 s each)."""
    task = root / f"suite-{kind}"
    (task / "environment").mkdir(parents=True)
    (task / "environment" / "Dockerfile").write_text(DOCKERFILE)
    (task / "workspace").mkdir()
    (task / "workspace" / "README.md").write_text("Benchmark task.\n")
    (task / "task.toml").write_text(f'[task]\nname = "suite-{kind}"\nactivity = "construction"\n')
    write_calc_rounds(task, 1, test_file="test_00.py", test="from calc import f1\n")
    tests = task / "rounds" / "01" / "tests"
    files, per = {"20": (1, 20), "200": (10, 20), "slow": (1, 25)}[kind]
    for k in range(files):
        lines = ["import time", "", "from calc import f1", ""]
        for n in range(per):
            wait = "    time.sleep(1)\n" if kind == "slow" else ""
            lines.append(f"\ndef test_{k}_{n}():\n{wait}    assert f1() == 1\n")
        (tests / f"test_{k:02d}.py").write_text("\n".join(lines))
    return load_task(task)


def extra(provider: SandboxProvider, task: Task, flip: bool) -> dict[str, float]:
    """Plain ``python -m pytest`` of the suite and the verifier, in one clone of the oracle
    state (``flip``: the verifier first)."""
    with provider.create(task, "bench/suite") as sb:
        reference_apply(sb, task.round(1))
        snap = sb.snapshot(
            SnapshotLabel(task=task.name, task_digest=task.digest, kind=SnapshotKind.agent,
                          round=1, attempt="bench")
        )  # fmt: skip
    tests = active_tests(task, 1)
    t: dict[str, float] = {}
    with provider.create(task, "bench/suite-verify", snap) as clone:
        dest = f"{clone.scratch.rstrip('/')}/plain-{uuid.uuid4().hex[:8]}"
        staged = Path(tempfile.mkdtemp(prefix="evoround-plain-"))
        for test in tests:
            (staged / test.path).parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(test.source, staged / test.path)

        def plain() -> None:
            clone.copy_in(str(staged), dest)  # one archive in, as the verifier does
            res = clone.exec(
                [clone.python, "-m", "pytest", "-q", "-p", "no:cacheprovider", dest],
                timeout=600, cwd=clone.workdir,
                env={"PYTHONDONTWRITEBYTECODE": "1", "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1"},
            )  # fmt: skip
            if res.exit_code != 0:
                raise SystemExit(f"plain pytest failed on {task.name}: {res.stdout[-500:]}")

        def verify() -> None:
            out = run_pytest(clone, tests, 1, timeout=600)
            if not out.passed:
                raise SystemExit(f"{task.name}: the oracle state failed: {out}")

        for what, fn in [("verifier", verify), ("plain", plain)][:: 1 if flip else -1]:
            t[what], _ = timed(fn)
    shutil.rmtree(staged, ignore_errors=True)
    t["extra"] = t["verifier"] - t["plain"]
    return t


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


def _ok(met: bool) -> str:
    return "ok" if met else "MISSED"


def med(rows: list[dict[str, float]], key: str) -> float:
    return statistics.median(r[key] for r in rows)


def spread(rows: list[dict[str, float]], key: str) -> str:
    return f"[{min(r[key] for r in rows):.3f}-{max(r[key] for r in rows):.3f}]"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3, help="rounds per attempt (boundaries)")
    ap.add_argument("--repeats", type=int, default=3, help="interleaved repetitions")
    ap.add_argument("--sizes", default="1,50,500", help="workspace sizes in MB")
    ap.add_argument("--suites", default="20,200,slow", help="suites for the verification extra")
    ap.add_argument("--backends", default="local,docker")
    ap.add_argument("--code", type=Path, default=None, help="the checkout whose code runs")
    ap.add_argument("--harbor", action="store_true", help="add the harbor_multiturn procedure")
    args = ap.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",") if s]
    suites = [s for s in args.suites.split(",") if s]
    configs = [c for c in args.backends.split(",") if c]
    tmp = Path(tempfile.mkdtemp(prefix="evoround-bench-"))
    import evoround

    print(f"code: {Path(evoround.__file__).parent}", flush=True)
    bounds: dict[tuple[str, int], list[dict[str, float]]] = {}
    extras: dict[tuple[str, str], list[dict[str, float]]] = {}
    providers = {n: make_provider(n, SnapshotStore(tmp / f"store-{n}"), tmp) for n in configs}
    try:
        tasks = {size: write_task(tmp, args.rounds, size) for size in sizes}
        stasks = {kind: suite_task(tmp, kind) for kind in suites}
        for rep in range(args.repeats):
            for name, provider in providers.items():
                for kind, task in stasks.items():
                    print(f"rep {rep + 1}: {name} suite {kind}...", file=sys.stderr, flush=True)
                    row = extra(provider, task, flip=bool(rep % 2))
                    extras.setdefault((name, kind), []).append(row)
                for size, task in tasks.items():
                    print(f"rep {rep + 1}: {name} {size} MB...", file=sys.stderr, flush=True)
                    rows = run_config(provider, task, args.rounds, tmp, name)
                    bounds.setdefault((name, size), []).extend(rows)
        if args.harbor:
            harbor_all(tasks, args.rounds, tmp, bounds)
    finally:
        for provider in providers.values():
            provider.close()
        shutil.rmtree(tmp, ignore_errors=True)
    print_extras(extras)
    print_bounds(bounds, sizes, args.rounds)
    return 0


def harbor_all(
    tasks: dict[int, Task],
    rounds: int,
    tmp: Path,
    out: dict[tuple[str, int], list[dict[str, float]]],
) -> None:
    from evoround.sandboxes.docker import DockerProvider

    for size, task in tasks.items():
        with DockerProvider(SnapshotStore(tmp / "store-harbor"), job="bench-h") as p:
            image = p.task_image(task).image_id
        for name, state in (("harbor", False), ("harbor-state", True)):
            print(f"running {name}, {size} MB...", file=sys.stderr, flush=True)
            rows = harbor_compose(task, rounds, image, tmp, state=state)
            for r in rows:
                r["boundary"], r["floor"] = r["overhead"], float("nan")
            out[(name, size)] = rows


def print_extras(extras: dict[tuple[str, str], list[dict[str, float]]]) -> None:
    print("\nverification extra over plain `python -m pytest` of the same files, same clone")
    print("seconds, median [min-max]; ratio = verifier / plain (medians)\n")
    head = f"{'backend':<10}{'suite':>6}{'plain':>22}{'verifier':>22}{'EXTRA':>22}{'ratio':>7}"
    print(head)
    print("-" * len(head))
    for (name, kind), rows in extras.items():
        cells = "".join(
            f"{med(rows, k):>8.3f} {spread(rows, k):>13}" for k in ("plain", "verifier", "extra")
        )
        print(f"{name:<10}{kind:>6}{cells}{med(rows, 'verifier') / med(rows, 'plain'):>6.2f}x")
    for (name, kind), rows in extras.items():
        if kind == "20":
            ok = med(rows, "extra") <= 0.3
            print(f"target: {name} 20 tests extra <= +0.3 s: {med(rows, 'extra'):+.3f} s  "
                  f"{'ok' if ok else 'MISSED'}")  # fmt: skip
        if kind == "slow":
            ratio = med(rows, "verifier") / med(rows, "plain")
            print(f"target: {name} slow suite <= 1.1x: {ratio:.2f}x  {_ok(ratio <= 1.1)}")


def print_bounds(
    bounds: dict[tuple[str, int], list[dict[str, float]]], sizes: list[int], rounds: int
) -> None:
    print(f"\nseconds per round boundary (pytest excluded), {rounds} rounds an attempt, "
          "1 MB changed per round")  # fmt: skip
    print("median; BOUNDARY with [min-max]; floor = the least an isolated copy costs here\n")
    head = (
        f"{'config':<15}{'MB':>5}" + "".join(f"{p:>10}" for p in PHASES)
        + f"{'BOUNDARY':>10}{'[min-max]':>16}{'floor':>8}{'x floor':>8}"
    )  # fmt: skip
    print(head)
    print("-" * len(head))
    for (name, size), rows in bounds.items():
        cells = "".join(f"{med(rows, p):>10.3f}" for p in PHASES if p in rows[0])
        if name.startswith("harbor"):
            cells = f"{'verify in place':>30}"
        b, fl = med(rows, "boundary"), med(rows, "floor")
        print(f"{name:<15}{size:>5}{cells}{b:>10.3f}{spread(rows, 'boundary'):>16}"
              f"{fl:>8.3f}{b / fl:>7.2f}x")  # fmt: skip
    small, big = min(sizes), max(sizes)
    for name in ("local", "docker"):
        if (name, small) in bounds:
            rows = bounds[(name, small)]
            x = med(rows, "boundary") / med(rows, "floor")
            print(f"target: {name} at {small} MB <= 1.2x floor: {x:.2f}x  {_ok(x <= 1.2)}")
        if (name, big) in bounds:
            limit = 0.5 if name == "docker" else 0.1
            v = med(bounds[(name, big)], "boundary")
            print(f"target: {name} at {big} MB <= {limit} s: {v:.3f} s  {_ok(v <= limit)}")


if __name__ == "__main__":
    sys.exit(main())
