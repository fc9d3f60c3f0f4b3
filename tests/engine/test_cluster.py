"""A real multi-node Ray cluster with Docker sandboxes gives the figures of one machine
(issue 33; DESIGN "Configuration invariance"; docs/cluster.md).

The cluster: a head and two workers, each a container of the local base image on a
private Docker network of its own (no registry: the image is the one `evoround images
bootstrap` built). Every node runs this machine's interpreter and this checkout, bind-
mounted read-only at the same paths, with `--init` as docs/cluster.md asks; the job folder
and EVOROUND_HOME are one shared folder at the same path on every node and on this host;
sandboxes are Docker containers started through the host engine's socket, siblings of the
nodes. The driver (`evoround run --executor ray`) runs on the head, which has no CPUs for
units, so every round runs on a worker.

The job: the bundled ``pricing`` task (process checks of several kinds) and ``checkkinds``
(tests/fixtures/invariance: one check of every rule kind of the checklist registry) under
the invariance check's agent (``scripted:regressor`` plus steps that leave evidence for every
rule; tests/engine/test_invariance.py), rounds 1-3, two attempts, MT and SR. Its two judge
checks are answered by the replay server through litellm over HTTP, from the workers (the
server listens on this host, which they reach through their network's gateway). The
all-up leg adds an imported Harbor multi-step task (tests/fixtures/harbor/multi-step-greet,
a script verifier; Docker builds its image on the nodes' shared engine from the base image
named by ``--base-image-map``) against a baseline with it. Its figures,
every one of ``report --json`` but those that name the configuration (tests/invariance.py),
must equal the same job run on this host in the local sandbox: with all nodes up, with a worker
killed mid-job (and a second run of the job from another node refused meanwhile), with a worker cut off the network for 30 s, and with the head killed
mid-job (the driver, on a worker, stops with the resume command; the cluster restarted,
that command finishes the job). Afterwards no sandbox container of the job is left on the
engine, nor a Ray task on any node.

A worker cut off the network for 30 s mid-job (then reconnected) gives the same figures
too. Before the Ray executor watched the head's node table itself (NodeWatch), that job
took about 7 minutes (the driver learned that the node's tasks were lost only minutes after
Ray marked the node dead); with it, about 65 s after the cut.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from evoround.sandboxes.docker import default_base_image
from evoround.scaffolds import serve
from evoround.tasks import library_path
from tests.engine.test_resume_kill import n_records
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

pytestmark = [pytest.mark.docker, pytest.mark.slow]

REPO = Path(__file__).resolve().parents[2]
PYTHON = Path(sys.executable).resolve()
PREFIXES = sorted({Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()})
"""The interpreter's tree and its packages (a virtualenv's and its base interpreter's)."""
TASKS = (str(library_path() / "pricing"), str(FIXTURES / "invariance" / "checkkinds"))
JOB = (
    "--agent", "scripted", "--script", str(FIXTURES / "invariance" / "regressor.yaml"),
    "--rounds", "1-3", "--mode", "both", "-k", "2",
)  # fmt: skip
"""The job's options; its tasks are TASKS, and in the all-up leg the imported GREET too."""


@dataclass
class Cluster:
    network: str
    head: str
    workers: list[str]
    shared: Path
    judge: str = ""
    """The replay judge's URL as the nodes reach it (this host, on the network's gateway)."""

    @property
    def address(self) -> str:
        return f"{self.head}:6379"


def _docker(*args: str, check: bool = True, timeout: float = 120) -> str:
    res = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)
    if check and res.returncode != 0:
        pytest.fail(f"docker {' '.join(args[:3])}: {res.stderr.strip()[-1000:]}")
    return res.stdout.strip()


def _node(cluster: Cluster, name: str, ray_args: list[str]) -> None:
    """One node: a container of the base image running `ray start --block`."""
    bin_dir = PYTHON.parent
    _docker(
        "run", "-d", "--init", "--name", name, "--hostname", name,
        "--network", cluster.network, "--shm-size=512m",
        "--label", f"evoround-test-cluster={cluster.network}",
        *[a for p in PREFIXES for a in ("-v", f"{p}:{p}:ro")], "-v", f"{REPO}:{REPO}:ro",
        "-v", f"{cluster.shared}:{cluster.shared}",
        "-v", "/var/run/docker.sock:/var/run/docker.sock",
        "-e", f"PYTHONPATH={REPO}", "-e", f"EVOROUND_HOME={cluster.shared / 'home'}",
        "-e", f"PATH={bin_dir}:/usr/local/bin:/usr/bin:/bin",
        "-e", "RAY_raylet_start_wait_time_s=120",  # a busy machine starts raylets slowly
        default_base_image(),
        str(bin_dir / "ray"), "start", "--block", "--disable-usage-stats", *ray_args,
    )  # fmt: skip


def _wait_for_nodes(cluster: Cluster, n: int, timeout: float = 240) -> None:
    probe = "import ray; ray.init(address='auto'); print(sum(1 for x in ray.nodes() if x['Alive']))"
    deadline = time.monotonic() + timeout
    seen = ""
    while time.monotonic() < deadline:
        try:  # on a busy machine one probe (a Ray driver starting) can take a minute
            res = subprocess.run(
                ["docker", "exec", cluster.head, str(PYTHON), "-c", probe],
                capture_output=True, text=True, timeout=max(1.0, deadline - time.monotonic()),
            )  # fmt: skip
        except subprocess.TimeoutExpired:
            break
        seen = res.stdout.strip().splitlines()[-1] if res.stdout.strip() else res.stderr[-300:]
        if seen == str(n):
            return
        time.sleep(2)
    pytest.fail(f"the cluster did not reach {n} live nodes: {seen}")


def _start(c: Cluster) -> None:
    """The head, then the workers; back when all three are live."""
    _node(c, c.head, ["--head", "--port=6379", "--num-cpus=0", "--include-dashboard=false"])
    _wait_for_nodes(c, 1)  # a worker started before the head's GCS answers gives up
    for w in c.workers:
        _node(c, w, [f"--address={c.address}", "--num-cpus=2"])
    _wait_for_nodes(c, 3)


@pytest.fixture(scope="module")
def judge() -> Iterator[Any]:
    """The replay server judging ``checkkinds``, on every address of this host: the nodes
    reach it through their network's gateway, the baseline on loopback."""
    with serve(JUDGE, host="0.0.0.0") as server:
        yield server


def _judge_args(url: str) -> list[str]:
    return ["--judge-model", "openai/replay-judge", "--judge-api-base", url]


@pytest.fixture
def cluster(tmp_path: Path, docker_client: Any, judge: Any) -> Iterator[Cluster]:
    tag = uuid.uuid4().hex[:8]
    shared = Path("/tmp") / f"evoround-cluster-{tag}"  # short and the same on every node
    (shared / "home").mkdir(parents=True)
    c = Cluster(f"evoround-cluster-{tag}", f"head-{tag}", [f"w1-{tag}", f"w2-{tag}"], shared)
    _docker("network", "create", c.network)
    gateway = _docker("network", "inspect", "-f", "{{(index .IPAM.Config 0).Gateway}}", c.network)
    c.judge = f"http://{gateway}:{judge.port}/v1"
    try:
        _start(c)
        yield c
    finally:
        names = [c.head, *c.workers]
        _docker("rm", "-f", *names, check=False)
        _docker("network", "rm", c.network, check=False)
        # the nodes wrote as root into the shared folder: remove it with a container too
        subprocess.run(["rm", "-rf", str(shared)], check=False, timeout=120)


def _job(cluster: Cluster, name: str) -> str:
    """A job name no other test's job has (the leftover check goes by the job's label)."""
    return f"{name}-{cluster.network.rsplit('-', 1)[-1]}"


def _driver(
    cluster: Cluster, job: str, node: str | None = None, tasks: tuple[str, ...] = TASKS
) -> subprocess.Popen[str]:
    """`evoround run --executor ray` on the head (or ``node``), into the shared folder; it
    stops the job once the head has been unreachable for 5 s (EVOROUND_RAY_HEAD_TIMEOUT)."""
    return subprocess.Popen(
        ["docker", "exec", "-e", "EVOROUND_RAY_HEAD_TIMEOUT=5", node or cluster.head,
         str(PYTHON), "-m", "evoround.cli", "run", *tasks,
         *JOB, *_judge_args(cluster.judge), "-j", "4", "--sandbox", "docker",
         "--base-image-map", f"ubuntu:24.04={default_base_image()}",
         "--executor", "ray", "--ray-address", cluster.address,
         "--out", str(cluster.shared / "runs"), "--job", job, "--progress", "plain"],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip


def _finish(proc: subprocess.Popen[str], timeout: float = 600, code: int = 0) -> str:
    try:
        out, _ = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        out, _ = proc.communicate()
        pytest.fail(f"the job did not end in {timeout} s: {out[-3000:]}")
    assert proc.returncode == code, out[-3000:]
    return out


def _imported(folder: Path) -> str:
    """GREET imported into ``folder``; its path."""
    res = evoround_cli("tasks", "import", str(GREET), str(folder))
    assert res.returncode == 0, res.stderr[-3000:]
    return str(folder)


def _local(root: Path, url: str, tasks: tuple[str, ...]) -> Any:
    """The figures of the job on this host, local sandbox, one worker."""
    env = {"EVOROUND_HOME": str(root / "home")}
    res = evoround_cli(
        "run", *tasks, *JOB, *_judge_args(url), "--out", str(root / "runs"),
        "--job", "base", env=env,
    )  # fmt: skip
    assert res.returncode == 0, res.stderr[-3000:]
    return figures(root / "runs" / "base", env=env)


@pytest.fixture(scope="module")
def baseline(tmp_path_factory: pytest.TempPathFactory, judge: Any) -> Any:
    """The same job on this host, local sandbox, one worker."""
    return _local(tmp_path_factory.mktemp("cluster-baseline"), judge.url, TASKS)


@pytest.fixture(scope="module")
def full_baseline(tmp_path_factory: pytest.TempPathFactory, judge: Any) -> Any:
    """The same, with the imported Harbor task (the all-up leg's job)."""
    root = tmp_path_factory.mktemp("cluster-baseline-full")
    return _local(root, judge.url, (*TASKS, _imported(root / "tasks" / "greet")))


def _check(cluster: Cluster, job: str, baseline: Any, docker_client: Any) -> list[dict]:
    """Figures equal to the baseline's; every round ran on a worker, once; nothing left."""
    path = cluster.shared / "runs" / job
    got = figures(path, env={"EVOROUND_HOME": str(cluster.shared / "home")})
    assert got["jobs"][0]["config"]["sandbox"] == "docker"
    assert differences(figures_only(baseline), figures_only(got)) == []
    records = [json.loads(ln) for ln in (path / "results.jsonl").read_text().splitlines()]
    keys = [(r["task"], r["mode"], r["attempt"], r["round"]) for r in records]
    assert len(keys) == len(set(keys))  # no round recorded twice
    assert {r["host"] for r in records} <= set(cluster.workers)
    left = docker_client.containers.list(all=True, filters={"label": f"evoround.job={job}"})
    assert [c.name for c in left] == []
    return records


def _when(pred: Callable[[], bool], timeout: float = 300) -> None:
    deadline = time.monotonic() + timeout
    while not pred():
        assert time.monotonic() < deadline, "the job did not get there in time"
        time.sleep(0.2)


def test_three_node_cluster_with_docker_sandboxes_gives_the_figures_of_one_machine(
    cluster: Cluster, full_baseline: Any, docker_client: Any
) -> None:
    job = _job(cluster, "all-up")
    greet = _imported(cluster.shared / "tasks" / "greet")
    out = _finish(_driver(cluster, job, tasks=(*TASKS, greet)))
    assert "is not shared with Ray node" not in out  # one folder, shared by every node
    records = _check(cluster, job, full_baseline, docker_client)
    assert {r["host"] for r in records} == set(cluster.workers)  # both workers ran rounds
    # the imported task ran there too: every SR round of it (3 steps, 2 attempts)
    greet_sr = [r for r in records if r["task"] == GREET_NAME and r["mode"] == "sr"]
    assert len(greet_sr) == 6
    # every rule kind and the judge were scored on the workers (a verdict, not an error)
    got = verdicts(cluster.shared / "runs" / job, "checkkinds")
    assert all("error" not in v for v in got.values()), got
    assert got["judge-explains"] == {"pass"} and got["judge-usage"] == {"fail"}, got


def test_a_worker_killed_mid_job_changes_no_figure(
    cluster: Cluster, baseline: Any, docker_client: Any
) -> None:
    """The killed worker's sandboxes (siblings on the engine) outlive it: the run that
    holds the job removes them at its end (they carry the job folder's label). Before the
    kill, a second run of the job from another host (the other worker, same shared folder)
    is refused in one line naming the head's run."""
    name = _job(cluster, "killed")
    job = cluster.shared / "runs" / name
    proc = _driver(cluster, name)
    _when(lambda: n_records(job) >= 2 or proc.poll() is not None)
    assert proc.poll() is None, "the job ended before the kill"
    second = _driver(cluster, name, node=cluster.workers[1])
    lines = _finish(second, timeout=120, code=2).strip().splitlines()
    assert len(lines) == 1 and f"job {name} is being run by pid " in lines[0], lines
    assert f" on host {cluster.head} since " in lines[0], lines[0]
    _docker("kill", cluster.workers[0])
    out = _finish(proc)
    assert "infra retry" in out  # the kill hit a running unit, which ran again elsewhere
    _check(cluster, name, baseline, docker_client)


def test_a_worker_cut_off_the_network_for_30_s_changes_no_figure(
    cluster: Cluster, baseline: Any, docker_client: Any
) -> None:
    """A worker disconnected from the cluster's network for 30 s mid-job, then reconnected:
    either Ray kept the node (its unit goes on once it is back) or the head marked it dead
    and the driver (which watches the head's node table) gave its unit up as an infra
    failure, run again on the other worker; which one depends on timing. Either way the
    figures are those of one machine, no round is recorded twice, and the job ends within
    minutes of the cut (about 7 minutes before the driver watched the node table)."""
    name = _job(cluster, "partition")
    job = cluster.shared / "runs" / name
    proc = _driver(cluster, name)
    _when(lambda: n_records(job) >= 2 or proc.poll() is not None)
    assert proc.poll() is None, "the job ended before the cut"
    cut = cluster.workers[0]
    _docker("network", "disconnect", cluster.network, cut)
    cut_at = time.monotonic()
    try:
        time.sleep(30)
    finally:
        _docker("network", "connect", cluster.network, cut)
    out = _finish(proc, timeout=400)
    took = time.monotonic() - cut_at
    assert took < 150, f"the job ended {took:.0f} s after the cut: {out[-3000:]}"
    _check(cluster, name, baseline, docker_client)


def test_a_killed_head_stops_the_job_resumably_and_the_resume_changes_no_figure(
    cluster: Cluster, baseline: Any, docker_client: Any
) -> None:
    """The head's container killed mid-job: the driver (on a worker, since the head's
    death would take a driver on the head with it) ends within seconds with evoround's one
    line and the command that resumes it (exit 1), holding no lock. The cluster restarted
    (the same three containers), that command, run as printed, gives the local figures;
    no round is lost or recorded twice, and nothing of the job is left running."""
    name = _job(cluster, "headless")
    job = cluster.shared / "runs" / name
    proc = _driver(cluster, name, node=cluster.workers[0])
    _when(lambda: n_records(job) >= 2 or proc.poll() is not None)
    assert proc.poll() is None, "the job ended before the kill"
    _docker("kill", cluster.head)
    killed = time.monotonic()
    last = _finish(proc, timeout=120, code=1).strip().splitlines()[-1]
    assert time.monotonic() - killed < 45, "the driver did not stop in time"
    assert "the Ray head at " in last and "the job stopped" in last, last
    command = last.split("continue with: ", 1)[1]
    assert command.startswith(f"evoround run --resume {job} "), command
    assert not (job / "job.lock").exists()  # released: the resume may start
    # the cluster back: new containers of the same names (a fresh head at the same address;
    # the workers' raylets, which lost the head, end themselves)
    _docker("rm", "-f", cluster.head, *cluster.workers)
    _start(cluster)
    resume = subprocess.Popen(
        ["docker", "exec", cluster.workers[0], "sh", "-c", command],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
    )  # fmt: skip
    _finish(resume)
    _check(cluster, name, baseline, docker_client)
    for node in (cluster.head, *cluster.workers):  # a busy Ray worker is titled ray::<task>
        tasks = [ln for ln in _docker("exec", node, "ps", "-eo", "args").splitlines()
                 if ln.startswith(("ray::_remote_unit", "ray::probe_node"))]  # fmt: skip
        assert tasks == [], f"{node}: {tasks}"
