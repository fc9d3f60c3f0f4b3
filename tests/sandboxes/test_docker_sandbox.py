"""Docker backend specifics: limits and labels, OOM vs timeout vs dead container,
commit snapshots and the cache policy, isolation of verification, crash cleanup."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from evoround.sandboxes import SandboxError, SandboxUnavailable
from evoround.sandboxes.docker import (
    LABEL_JOB,
    DockerProvider,
    DockerSandbox,
    SnapshotMode,
    cleanup_docker,
)
from evoround.scaffolds import reference_apply
from evoround.snapshots import SnapshotKind, SnapshotLabel, SnapshotStore
from evoround.tasks import Task, active_tests, load_task
from evoround.verifiers import run_pytest

pytestmark = pytest.mark.docker
REPO = Path(__file__).resolve().parents[2]


@pytest.fixture
def store(tmp_path: Path) -> SnapshotStore:
    return SnapshotStore(tmp_path / "store")


@pytest.fixture
def provider_factory(
    docker_client, store: SnapshotStore, request: pytest.FixtureRequest
) -> Iterator[Callable[..., DockerProvider]]:
    made: list[DockerProvider] = []
    job = f"t-{request.node.name[:40]}-{os.getpid()}"

    def make(**kw: object) -> DockerProvider:
        p = DockerProvider(store, job=kw.pop("job", job), client=docker_client, **kw)  # type: ignore[arg-type]
        made.append(p)
        return p

    yield make
    for p in made:
        p.close()


@pytest.fixture
def task(make_task: Callable[..., Path]) -> Task:
    return load_task(make_task())


def containers(client, job: str) -> list[dict]:
    return client.api.containers(all=True, filters={"label": f"{LABEL_JOB}={job}"})


def label(task: Task, round_: int = 1, kind: SnapshotKind = SnapshotKind.agent) -> SnapshotLabel:
    return SnapshotLabel(
        task=task.name, task_digest=task.digest, kind=kind, round=round_, attempt="a"
    )


def test_container_has_labels_limits_init_and_no_network(
    docker_client, provider_factory, make_task
):
    task = load_task(make_task(environment="cpus = 0.5\nmemory_mb = 300\npids = 99\n"))
    p = provider_factory(prestart=False)
    sb = p.create(task, "tiny/mt-01")
    assert isinstance(sb, DockerSandbox)
    info = docker_client.api.inspect_container(sb.container_id)
    labels = info["Config"]["Labels"]
    assert labels["evoround"] == "1"
    assert (labels["evoround.job"], labels["evoround.task"]) == (p.job, "tiny")
    assert labels["evoround.attempt"] == "tiny/mt-01"
    hc = info["HostConfig"]
    assert hc["NanoCpus"] == 500_000_000
    assert hc["Memory"] == hc["MemorySwap"] == 300 * 1024 * 1024
    assert hc["PidsLimit"] == 99
    assert hc["NetworkMode"] == "none" and not hc["Init"] and hc["Privileged"] is False
    assert sb.exec("ls /sys/class/net").stdout.split() == ["lo"]
    assert sb.exec("ps -o comm= -p 1").stdout.strip() == "sh"  # _exec.KEEPALIVE


def test_network_is_opt_in(docker_client, provider_factory, make_task):
    task = load_task(make_task(environment="network = true\n"))
    sb = provider_factory(prestart=False).create(task, "tiny/net")
    info = docker_client.api.inspect_container(sb.container_id)
    assert info["HostConfig"]["NetworkMode"] == "bridge"


def test_oom_kill_is_reported_and_told_apart_from_timeout(provider_factory, make_task):
    task = load_task(make_task(environment="memory_mb = 64\n"))
    sb = provider_factory().create(task, "tiny/oom")
    res = sb.exec([sb.python, "-c", "b = bytearray(400 * 1024 * 1024); print('alive')"], timeout=60)
    assert res.oom_killed and not res.timed_out and res.exit_code == 137
    assert sb.exec("echo still here").stdout == "still here\n"  # the sandbox survives
    killed = sb.exec("kill -9 $$", timeout=60)
    assert killed.exit_code == 137 and not killed.oom_killed and not killed.timed_out
    slow = sb.exec("sleep 30", timeout=0.5)
    assert slow.timed_out and not slow.oom_killed and slow.exit_code == 124


def test_dead_or_removed_container_raises_sandbox_unavailable(
    docker_client, provider_factory, task
):
    p = provider_factory()
    sb = p.create(task, "tiny/dead")
    docker_client.api.kill(sb.container_id)
    with pytest.raises(SandboxUnavailable, match="exited|not running|no longer"):
        sb.exec("true")
    # files of a stopped container stay readable (docker cp semantics); commands do not run
    assert sb.read_file("README.md") == b"tiny task\n"
    other = p.create(task, "tiny/removed")
    docker_client.api.remove_container(other.container_id, force=True, v=True)
    with pytest.raises(SandboxUnavailable, match="no longer exists"):
        other.exec("true")
    with pytest.raises(SandboxUnavailable, match="no longer exists"):
        other.read_file("README.md")
    with pytest.raises(SandboxUnavailable, match="no longer exists"):
        other.write_file("x.txt", "x")
    sb.close()
    other.close()  # closing a vanished container is fine


def test_container_killed_during_exec_is_unavailable(docker_client, provider_factory, task):
    sb = provider_factory().create(task, "tiny/dies")
    killer = subprocess.Popen(
        ["sh", "-c", f"sleep 1; docker kill {sb.container_id} >/dev/null"],
    )
    try:
        with pytest.raises(SandboxUnavailable):
            sb.exec("sleep 30", timeout=20)
    finally:
        killer.wait()


def test_close_removes_the_container_and_provider_close_removes_everything(
    docker_client, provider_factory, task
):
    p = provider_factory()
    a = p.create(task, "tiny/a")
    b = p.create(task, "tiny/b")
    a.close()
    p.wait_idle()
    ids = {c["Id"] for c in containers(docker_client, p.job)}
    assert a.container_id not in ids and b.container_id in ids
    p.close()
    assert containers(docker_client, p.job) == []  # live sandbox and prestarted spare gone


def test_a_container_started_while_the_provider_closes_is_removed(
    docker_client, provider_factory, task, monkeypatch
):
    """A creation in flight when ``close()`` ran (another thread's): before, its container
    was registered after close() had removed every live one, and outlived the job."""
    p = provider_factory(prestart=False)
    start = p._start_container

    def start_then_close(*args, **kw):  # noqa: ANN002, ANN003
        cid = start(*args, **kw)
        p.close()  # what another thread's close() does at this moment
        return cid

    monkeypatch.setattr(p, "_start_container", start_then_close)
    with pytest.raises(SandboxError, match="closed"):
        p.create(task, "tiny/late")
    assert containers(docker_client, p.job) == []


def test_exception_in_with_block_removes_the_container(docker_client, provider_factory, task):
    p = provider_factory(prestart=False)
    with pytest.raises(KeyboardInterrupt), p.create(task, "tiny/interrupted") as sb:
        raise KeyboardInterrupt
    p.wait_idle()
    assert sb.container_id not in {c["Id"] for c in containers(docker_client, p.job)}


def test_workspace_snapshot_restores_exactly_even_over_an_image_workdir(
    provider_factory, make_task
):
    dockerfile = (
        "ARG BASE_IMAGE=python:3.12-slim\nFROM ${BASE_IMAGE}\n"
        "WORKDIR /workspace\nRUN echo baked > baked.txt\n"
    )
    task = load_task(make_task(name="baked", dockerfile=dockerfile))
    p = provider_factory()
    with p.create(task, "baked/mt") as sb:
        assert sb.read_file("baked.txt") == b"baked\n"
        sb.exec("rm baked.txt && echo new > new.txt")
        snap = sb.snapshot(label(task))
    assert not snap.locator.startswith("sha256:")
    assert {e["path"] for e in p.store.manifest(snap.locator)} == {"README.md", "new.txt"}
    with p.create(task, "baked/verify", snap) as clone:
        assert clone.exec("ls -A").stdout.split() == ["README.md", "new.txt"]


def test_agent_changes_outside_the_workspace_do_not_reach_verification(provider_factory, task):
    """Workspace snapshots clone into the pristine image: a patched site does not leak."""
    p = provider_factory()
    with p.create(task, "tiny/mt") as sb:
        sb.exec(
            "echo 'import os; os._exit(0)' > "
            "$(python3 -c 'import site; print(site.getsitepackages()[0])')/evil.pth"
        )
        assert sb.exec([sb.python, "-c", "print('hi')"]).stdout == ""
        snap = sb.snapshot(label(task))
    with p.create(task, "tiny/verify", snap) as clone:
        assert clone.exec([clone.python, "-c", "print('hi')"]).stdout == "hi\n"


def test_commit_snapshots_keep_the_filesystem_with_lineage_labels(
    docker_client, provider_factory, task
):
    p = provider_factory(snapshot_mode=SnapshotMode.commit)
    with p.create(task, "tiny/mt") as sb:
        sb.exec("echo sys > /opt/outside.txt && echo ws > ws.txt")
        sb.write_file(f"{sb.scratch}/secret.txt", "scratch")
        parent = sb.snapshot(label(task, 1))
        snap = sb.snapshot(
            SnapshotLabel(
                task=task.name,
                task_digest=task.digest,
                kind=SnapshotKind.agent,
                round=2,
                attempt="job/mt-01",
                parent=parent.id,
            )
        )
    assert snap.locator.startswith("sha256:")
    labels = docker_client.api.inspect_image(snap.locator)["Config"]["Labels"]
    assert labels["evoround"] == "1" and labels["evoround.role"] == "snapshot"
    assert (labels["evoround.round"], labels["evoround.parent"]) == ("2", parent.id)
    assert labels["evoround.attempt"] == "job/mt-01"
    assert labels["evoround.task_digest"] == task.digest
    with p.create(task, "tiny/verify", snap) as clone:
        assert clone.read_file("/opt/outside.txt") == b"sys\n"
        assert clone.read_file("ws.txt") == b"ws\n"
        assert clone.exec(["test", "-e", f"{clone.scratch}/secret.txt"]).exit_code == 1
    assert p.has_snapshot(snap)


def test_cache_policy_removes_agent_snapshot_images_but_keeps_references(
    docker_client, provider_factory, task
):
    p = provider_factory(snapshot_mode="commit")
    with p.create(task, "tiny/ref") as sb:
        agent = sb.snapshot(label(task, 1))
        ref = sb.snapshot(label(task, 1, SnapshotKind.reference))
    p.close()
    assert not p.has_snapshot(agent)
    assert p.has_snapshot(ref)
    kept = provider_factory(snapshot_mode="commit", keep_snapshots=True)
    with kept.create(task, "tiny/keep") as sb:
        agent2 = sb.snapshot(label(task, 1))
    kept.close()
    assert kept.has_snapshot(agent2)
    for image in (ref.locator, agent2.locator):
        docker_client.api.remove_image(image, force=True)
    with pytest.raises(Exception, match="gone"):
        provider_factory().create(task, "tiny/late", agent)


def test_verification_is_isolated_from_the_agent_container(provider_factory, task):
    """A background forger in the agent's container cannot make a failing round pass,
    and the agent finds no tests to read."""
    p = provider_factory()
    forger = textwrap.dedent(
        """
        import os, time
        XML = '<testsuites><testsuite tests="1"><testcase classname="test_r1" name="test_f1" file="test_r1.py"/></testsuite></testsuites>'
        while True:
            for root, dirs, files in os.walk('/', topdown=True):
                dirs[:] = [d for d in dirs if d not in ('proc', 'sys', 'dev', 'usr')]
                for f in files:
                    if f.endswith('.xml') or f.startswith('test_'):
                        try:
                            open(os.path.join(root, f), 'w').write(XML if f.endswith('.xml') else 'def test_ok(): pass\\n')
                        except OSError:
                            pass
            time.sleep(0.05)
        """
    )
    with p.create(task, "tiny/mt") as sb:
        sb.write_file("/opt/forger.py", forger)
        sb.exec("setsid nohup python3 /opt/forger.py >/dev/null 2>&1 & sleep 0.3")
        assert sb.exec("pgrep -f forger.py").ok  # it survives the command
        snap = sb.snapshot(label(task))
        with p.create(task, "tiny/verify-01", snap) as clone:
            verdict = run_pytest(clone, active_tests(task, 1), 1, timeout=60)
        assert not verdict.passed  # calc.py does not exist: the round fails
        found = sb.exec("find / -xdev \\( -name 'test_r*.py' -o -name '*.xml' \\) 2>/dev/null")
        assert "test_r1.py" not in found.stdout and "junit" not in found.stdout
        assert sb.exec(f"ls {sb.scratch}").stdout == ""
        # the oracle's state passes in the same conditions
        reference_apply(sb, task.round(1))
        snap = sb.snapshot(label(task))
        with p.create(task, "tiny/verify-01b", snap) as clone:
            assert run_pytest(clone, active_tests(task, 1), 1, timeout=60).passed


def test_sigkilled_engine_leaves_containers_that_cleanup_removes(docker_client, tmp_path, task):
    job = f"crash-{os.getpid()}"
    script = tmp_path / "crash.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import sys, time
            from evoround.sandboxes.docker import DockerProvider
            from evoround.snapshots import SnapshotStore
            from evoround.tasks import load_task
            p = DockerProvider(SnapshotStore({str(tmp_path / "s")!r}), job={job!r})
            sb = p.create(load_task({str(task.path)!r}), "tiny/mt-01")
            print("ready", flush=True)
            sb.exec("sleep 600")
            """
        )
    )
    proc = subprocess.Popen(
        [sys.executable, str(script)],
        stdout=subprocess.PIPE,
        cwd=REPO,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},  # this checkout, whatever is installed
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        time.sleep(0.5)
        proc.send_signal(signal.SIGKILL)
        proc.wait(30)
        assert containers(docker_client, job), "a SIGKILLed engine cannot clean up"
        folders = tmp_path / "s" / "docker-workspaces"
        assert list(folders.glob(f"{job}-*")), "its host workspaces are left too"
        report = cleanup_docker(docker_client, job=job)
        assert report.containers and not report.errors
        assert containers(docker_client, job) == []
        # the next provider on the same store sweeps the dead engine's host workspaces
        DockerProvider(SnapshotStore(tmp_path / "s"), job="next", client=docker_client).close()
        assert not list(folders.glob(f"{job}-*"))
    finally:
        proc.kill()
        cleanup_docker(docker_client, job=job)


def test_ctrl_c_mid_exec_removes_every_container(docker_client, tmp_path, task):
    job = f"sigint-{os.getpid()}"
    script = tmp_path / "interrupt.py"
    script.write_text(
        textwrap.dedent(
            f"""
            from evoround.sandboxes.docker import DockerProvider
            from evoround.snapshots import SnapshotStore
            from evoround.tasks import load_task
            p = DockerProvider(SnapshotStore({str(tmp_path / "s")!r}), job={job!r})
            sb = p.create(load_task({str(task.path)!r}), "tiny/mt-01")
            print("ready", flush=True)
            sb.exec("sleep 600")  # no with-block, no close: only atexit can help
            """
        )
    )
    proc = subprocess.Popen(
        [sys.executable, str(script)],
        stdout=subprocess.PIPE,
        cwd=REPO,
        text=True,
        env={**os.environ, "PYTHONPATH": str(REPO)},  # this checkout, whatever is installed
    )
    try:
        assert proc.stdout is not None and proc.stdout.readline().strip() == "ready"
        time.sleep(0.5)
        proc.send_signal(signal.SIGINT)
        proc.wait(60)
        assert containers(docker_client, job) == []
    finally:
        proc.kill()
        cleanup_docker(docker_client, job=job)


def test_provider_close_removes_chained_commit_snapshots(docker_client, provider_factory, task):
    p = provider_factory(snapshot_mode="commit")
    with p.create(task, "tiny/mt") as sb:
        s1 = sb.snapshot(label(task, 1))
    with p.create(task, "tiny/clone", s1) as clone:  # its commit's parent image is s1
        clone.snapshot(label(task, 2))
    p.close()
    left = docker_client.api.images(filters={"label": f"{LABEL_JOB}={p.job}"})
    assert left == []


def test_upload_is_cut_off_at_the_deadline(provider_factory, task, tmp_path: Path):
    """A copy into a container streams in pieces and stops within one piece of the round's
    deadline (a workspace built to be slow to upload cannot hold the round); the sandbox
    stays usable afterwards."""
    from evoround.deadline import DeadlineExceeded, deadline

    sb = provider_factory(prestart=False).create(task, "tiny/mt-01")
    src = tmp_path / "big"
    src.mkdir()
    (src / "blob").write_bytes(os.urandom(1 << 20) * 300)  # 300 MiB, one entry
    start = time.monotonic()
    with pytest.raises(DeadlineExceeded), deadline(time.monotonic() + 0.3):
        sb.copy_in(str(src), "/tmp/up")
    # the tar is spooled first (no deadline check per byte there), then cut off mid-upload
    assert time.monotonic() - start < 30
    assert sb.exec(["true"], timeout=30).exit_code == 0
    full = sb.exec(["sh", "-c", "test -s /tmp/up/blob && stat -c %s /tmp/up/blob"], timeout=30)
    assert full.stdout.strip() != str(300 << 20)


@pytest.mark.parametrize("mode", [None, SnapshotMode.archive])
def test_snapshot_of_a_paused_container_thaws_it(docker_client, provider_factory, task, mode):
    """A freeze the snapshot did not make (the daemon reporting a thaw it had not finished
    leaves one; here an outside ``docker pause``) is not the round's failure: the snapshot
    is taken and the container is running afterwards."""
    p = provider_factory(**({"snapshot_mode": mode} if mode else {}))
    with p.create(task, "paused/mt") as sb:
        sb.exec("echo mine > mine.txt")
        docker_client.api.pause(sb.container_id)
        snap = sb.snapshot(label(task))
        assert docker_client.api.inspect_container(sb.container_id)["State"]["Paused"] is False
        assert sb.exec("cat mine.txt").stdout == "mine\n"
    assert "mine.txt" in {e["path"] for e in p.store.manifest(snap.locator)}
