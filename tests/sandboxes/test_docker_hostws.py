"""Host-folder Docker workspaces: hostile files stay harmless on the host, snapshots see
every change (even one that keeps size and mtime), recycled clone folders are repaired to
exactly their snapshot, and verification is one archive in and one out."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from evoround.sandboxes.docker import DockerProvider
from evoround.sandboxes.docker import _provider as docker_provider
from evoround.snapshots import SnapshotKind, SnapshotLabel, SnapshotStore
from evoround.tasks import Task, active_tests, load_task
from evoround.verifiers import run_pytest

pytestmark = pytest.mark.docker

LISTING = "find . -mindepth 1 -printf '%p %y %m %s %l\\n' | sort; find . -type f | sort | xargs -r sha256sum"


@pytest.fixture
def provider(docker_client, tmp_path: Path, request) -> Iterator[DockerProvider]:
    p = DockerProvider(
        SnapshotStore(tmp_path / "store"),
        job=f"t-hostws-{os.getpid()}-{request.node.name[:20]}",
        client=docker_client,
    )
    assert p.host_workspaces, "the daemon is on this machine: workspaces are host folders"
    yield p
    p.close()


@pytest.fixture
def task(make_task: Callable[..., Path]) -> Task:
    return load_task(make_task())


def label(task: Task, round_: int, parent: str | None = None) -> SnapshotLabel:
    return SnapshotLabel(
        task=task.name, task_digest=task.digest, kind=SnapshotKind.agent, round=round_,
        attempt="a", parent=parent,
    )  # fmt: skip


def test_hostile_files_are_stored_as_harmless_data(provider: DockerProvider, task: Task):
    with provider.create(task, "tiny/mt-01") as sb:
        r = sb.exec(
            "cp /bin/true suid && chmod 4755 suid && ln -s /etc/passwd out && ln -s / root"
            " && mkfifo pipe && echo x > g && chmod 0666 g; mknod dev c 1 3; echo rc=$?"
        )
        assert "rc=0" not in r.stdout, "no device nodes in a host workspace"
        snap = sb.snapshot(label(task, 1))
    entries = {e["path"]: e for e in provider.store.manifest(snap.locator)}
    assert entries["out"] == {"path": "out", "type": "link", "target": "/etc/passwd"}
    assert entries["root"]["type"] == "link"
    assert int(entries["suid"]["mode"]) & 0o7000 == 0
    assert int(entries["g"]["mode"]) & 0o022 == 0
    assert "pipe" not in entries and "dev" not in entries
    with provider.create(task, "tiny/verify", snap) as clone:
        assert clone.exec(["test", "-L", "out"]).exit_code == 0
        assert clone.exec(["test", "-u", "suid"]).exit_code != 0


def test_in_place_rewrite_keeping_size_and_mtime_is_seen(provider: DockerProvider, task: Task):
    with provider.create(task, "tiny/mt-01") as sb:
        sb.exec("echo aaaa > f.txt && touch -d '2001-01-01' f.txt")
        first = sb.snapshot(label(task, 1))
        sb.exec("touch -r f.txt ref && echo bbbb > f.txt && touch -r ref f.txt && rm ref")
        second = sb.snapshot(label(task, 2, first.id))
    assert first.locator != second.locator
    with provider.create(task, "tiny/verify", second) as clone:
        assert clone.read_file("f.txt") == b"bbbb\n"


def test_recycled_clone_folders_are_repaired_to_their_snapshot(
    provider: DockerProvider, task: Task, monkeypatch: pytest.MonkeyPatch
):
    # a tiny workspace is recycled only when spares run short: here, whatever its size
    monkeypatch.setattr(docker_provider, "RECYCLE_MIN_BYTES", 0)
    with provider.create(task, "tiny/mt-01") as sb:
        sb.exec("mkdir -p d/e && echo 1 > d/e/x && echo 2 > y && ln y hard")
        snap = sb.snapshot(label(task, 1))
    with provider.create(task, "tiny/verify-1", snap) as clone:
        want = clone.exec(["sh", "-c", LISTING]).stdout
        clone.exec(
            "echo evil >> y; rm -rf d; ln -s /etc d; echo new > z; chmod 4777 hard;"
            " mkfifo q; touch -r /etc/hostname y"
        )
    provider.wait_idle()  # the folder is repaired and back in the pool
    assert any(
        s.folder is not None and s.folder.holds == snap.locator
        for spares in provider._pool._spares.values()
        for s in spares
    ), "the closed clone's folder was recycled"
    with provider.create(task, "tiny/verify-2", snap) as clone:
        assert clone.exec(["sh", "-c", LISTING]).stdout == want


def test_no_directory_attribute_reaches_the_next_container(
    provider: DockerProvider, task: Task, monkeypatch: pytest.MonkeyPatch
):
    """``user.*`` attributes of the workspace or a kept folder, set by the tested code in
    a verifier's clone, would reach the next sandbox of the recycled folder (old code:
    a fast-forward job's next agent read the previous round's hidden tests back)."""
    monkeypatch.setattr(docker_provider, "RECYCLE_MIN_BYTES", 0)
    with provider.create(task, "tiny/mt-01") as sb:
        sb.exec("mkdir -p keep && echo 1 > keep/x")
        snap = sb.snapshot(label(task, 1))
    with provider.create(task, "tiny/verify-1", snap) as clone:
        planted = clone.exec(
            ["python3", "-c", "import os\nfor d in ('.', 'keep'):\n"
             "    os.setxattr(d, 'user.loot', b'hidden test')\nos.chmod('keep', 0o777)\n"
             "print(os.getxattr('keep', 'user.loot'))"]
        )  # fmt: skip
        assert "hidden test" in planted.stdout, planted.stderr
    provider.wait_idle()
    with provider.create(task, "tiny/agent-2", snap) as sb:
        seen = sb.exec(["python3", "-c", "import os; print(os.listxattr('.'), "
                        "os.listxattr('keep'), oct(os.stat('keep').st_mode))"])  # fmt: skip
        assert seen.stdout.split()[:2] == ["[]", "[]"], (seen.stdout, seen.stderr)
        assert not seen.stdout.strip().endswith("777"), seen.stdout


def test_verification_is_one_archive_in_and_one_out(provider: DockerProvider, make_task):
    task = load_task(make_task())
    api = provider.client.api
    with provider.create(task, "tiny/mt-01") as sb:
        snap = sb.snapshot(label(task, 1))
    clone = provider.create(task, "tiny/verify", snap)
    calls: list[str] = []
    real_put, real_get = api.put_archive, api.get_archive

    def put(*a, **kw):  # noqa: ANN002, ANN003
        calls.append("put")
        return real_put(*a, **kw)

    def get(*a, **kw):  # noqa: ANN002, ANN003
        calls.append("get")
        return real_get(*a, **kw)

    api.put_archive, api.get_archive = put, get
    try:
        run_pytest(clone, active_tests(task, 1), 1, timeout=120)
    finally:
        api.put_archive, api.get_archive = real_put, real_get
        clone.close()
    assert calls == ["put", "get"]


def test_image_workdir_files_and_a_non_root_user_keep_working(provider: DockerProvider, make_task):
    """A bind mount hides what the image ships in its workdir: it is copied in first; and
    the workdir keeps its owner, so an image that runs as that user can still write it."""
    dockerfile = (
        "ARG BASE_IMAGE=python:3.12-slim\nFROM ${BASE_IMAGE}\nWORKDIR /workspace\n"
        "RUN echo shipped > from_image.txt && chown nobody /workspace\nUSER nobody\n"
    )
    task = load_task(make_task(name="nonroot", dockerfile=dockerfile))
    with provider.create(task, "nonroot/mt-01") as sb:
        assert sb.read_file("from_image.txt") == b"shipped\n"
        assert sb.exec("id -un && echo mine > new.txt").exit_code == 0
        snap = sb.snapshot(label(task, 1))
    paths = {e["path"] for e in provider.store.manifest(snap.locator)}
    assert {"from_image.txt", "new.txt"} <= paths


def _spares(provider: DockerProvider) -> list:
    return [s for spares in provider._pool._spares.values() for s in spares]


def test_announced_creations_are_started_ahead_and_small_folders_not_recycled(
    provider: DockerProvider, task: Task
):
    """SR rounds announced while their reference chain is built find started containers;
    a closed small clone's folder is removed, not given a new container, while spares
    suffice (starting containers is what SR set-up costs on Docker)."""
    with provider.create(task, "tiny/mt-01") as sb:
        snap = sb.snapshot(label(task, 1))
    provider.wait_idle()
    provider.expect(task, 5)
    provider.wait_idle()
    assert len(_spares(provider)) >= 5, "five announced creations have started spares"
    starts: list[str] = []
    real_start = provider.client.api.start

    def start(*a, **kw):  # noqa: ANN002, ANN003
        starts.append("start")
        return real_start(*a, **kw)

    provider.client.api.start = start
    try:
        for i in range(5):
            with provider.create(task, f"tiny/sr-r{i:02d}", snap) as clone:
                assert clone.exec(["true"]).ok
        provider.wait_idle()
    finally:
        provider.client.api.start = real_start
    assert len(starts) <= 1, f"clones took the started spares ({len(starts)} new starts)"
    assert not any(s.folder is not None and s.folder.holds for s in _spares(provider))
