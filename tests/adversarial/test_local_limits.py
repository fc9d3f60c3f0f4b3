"""A local sandbox caps its commands' processes and memory with the task's ``pids`` and
``memory_mb`` (a cgroup per sandbox), as a Docker container does: a fork bomb or a memory
bomb is the agent's failure, the engine goes on to grade the round, nothing is left."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from evoround.results import Mode, RoundStatus
from evoround.sandboxes import LocalProvider, SandboxError
from evoround.sandboxes.local._cgroup import PREFIX, cgroups_available, make_cgroup
from evoround.snapshots import SnapshotKind, SnapshotLabel, SnapshotStore
from evoround.tasks import load_task
from tests.adversarial.leaks import processes_with
from tests.adversarial.test_local_sandbox import scripted, unique_task
from tests.helpers import run

pytestmark = pytest.mark.skipif(
    cgroups_available() is None and os.environ.get("CI") != "true",
    reason="no writable cgroup here",
)

FORK_BOMB = 'python3 -c "import os,time\nwhile True:\n  try: os.fork()\n  except OSError: time.sleep(0.01)" # evoround-forkbomb'  # noqa: E501
MEMORY_BOMB = "python3 -c \"b = bytearray(1 << 30); b[::4096] = b'x' * len(b[::4096])\""


def _limited_task(tmp_path: Path) -> Path:
    root = unique_task(tmp_path)
    toml = root / "task.toml"
    toml.write_text(toml.read_text().replace(
        "[environment]\n", "[environment]\npids = 64\nmemory_mb = 256\n"
    ))  # fmt: skip
    return root


def _groups() -> set[str]:
    out = set()
    for base in (
        Path("/sys/fs/cgroup"),
        Path("/sys/fs/cgroup/pids"),
        Path("/sys/fs/cgroup/memory"),
    ):
        out |= {str(p) for p in base.glob(f"{PREFIX}{os.getpid()}-*")}
    return out


@pytest.mark.parametrize("isolation", ["bwrap", "none"])
def test_fork_bomb_is_capped_and_leaves_nothing(tmp_path: Path, monkeypatch, isolation) -> None:
    monkeypatch.setenv("EVOROUND_LOCAL_ISOLATION", isolation)
    before = _groups()
    steps = [{"run": FORK_BOMB, "timeout": 4}, {"run": "echo alive > after.txt"}]
    view = run(tmp_path, scripted(tmp_path, "forkbomb", steps),
               tasks=[load_task(_limited_task(tmp_path))], modes=(Mode.mt,))  # fmt: skip
    (r1,) = view.records
    assert not r1.passed
    assert r1.status is not RoundStatus.infra, r1.error
    assert processes_with("evoround-forkbomb") == []
    assert _groups() == before
    assert "pids and memory_mb by cgroup" in (view.path / "sandbox.txt").read_text()


def test_memory_bomb_is_killed_inside_its_sandbox(tmp_path: Path) -> None:
    before = _groups()  # another test's leak is that test's failure, not this one's
    provider = LocalProvider(SnapshotStore(tmp_path / "store"), tmp_path / "sb")
    with provider.create(load_task(_limited_task(tmp_path)), "t/m") as sb:
        assert sb.cgroup is not None
        res = sb.exec(MEMORY_BOMB, timeout=60)
        assert res.exit_code != 0  # killed by the group's OOM killer (or a MemoryError)
        assert sb.exec("echo ok", timeout=30).stdout.strip() == "ok"
        capped = sb.exec("for i in $(seq 100); do sleep 3 & done; wait", timeout=30)
        assert "fork" in capped.stderr.lower() or capped.exit_code != 0, capped
    provider.close()
    assert _groups() == before


def test_a_background_writer_is_frozen_while_the_snapshot_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A persistent agent's processes outlive its commands (no pid namespace per command):
    one left writing must stand still while the workspace is read, as a paused container
    does, and go on afterwards."""
    store = SnapshotStore(tmp_path / "store")
    provider = LocalProvider(store, base_dir=tmp_path / "sb", persistent=True)
    task = load_task(unique_task(tmp_path))
    sb = provider.create(task, f"{task.name}/frozen")
    tick = Path(sb.workdir) / "tick"  # type: ignore[attr-defined]
    try:
        assert sb.cgroup is not None  # type: ignore[attr-defined]
        # The command waits for the first tick: the writer has left the command's process
        # group by then (``setsid``), so the group kill at the command's end cannot race it.
        res = sb.exec(
            "setsid -f sh -c 'while :; do date +%s%N > tick.new; mv tick.new tick; done' "
            ">/dev/null 2>&1; while [ ! -e tick ]; do sleep 0.01; done",
            timeout=30,
        )
        assert res.ok, res.stderr
        assert tick.exists()
        seen: list[tuple[bool, bool]] = []
        real = store.capture_dir

        def capture(*a, **kw):  # noqa: ANN002, ANN003, ANN202 - a spy on the real capture
            before = tick.read_text()
            time.sleep(0.3)
            seen.append((sb.cgroup.is_frozen(), before == tick.read_text()))  # type: ignore[attr-defined]
            return real(*a, **kw)

        monkeypatch.setattr(store, "capture_dir", capture)
        sb.snapshot(
            SnapshotLabel(task=task.name, task_digest=task.digest, kind=SnapshotKind.agent, round=1)
        )
        assert seen == [(True, True)], "the writer ran while the snapshot was read"
        before = tick.read_text()
        deadline = time.monotonic() + 30  # a loaded machine runs the writer's loop slowly
        while tick.read_text() == before and time.monotonic() < deadline:
            time.sleep(0.05)
        assert tick.read_text() != before, "the writer was left frozen"
    finally:
        sb.close()
        provider.close()


def test_a_group_that_forks_all_the_time_is_frozen_every_time() -> None:
    """Processes forking while the group freezes (four shell loops): each of 100 freezes
    must report frozen inside its block. A v1 freezer asked once stays FREEZING for good
    when a fork lands mid-freeze (1 in 7 here, 2 % on a loaded machine with one loop):
    the snapshot waited its 30 s and read a workspace still being written."""
    group = make_cgroup(256, 512)
    assert group is not None
    storm = subprocess.Popen(group.wrap(
        ["sh", "-c", "for i in 1 2 3 4; do (while :; do /bin/true; done) & done; wait"]
    ))  # fmt: skip
    try:
        time.sleep(0.2)
        missed = 0
        for _ in range(100):
            with group.frozen(wait=2.0):
                missed += not group.is_frozen()
            time.sleep(0.02)  # the loops run again between freezes
        assert missed == 0, f"{missed} of 100 freezes never completed"
    finally:
        storm.kill()
        group.remove()
        storm.wait()


def test_a_sandbox_that_fails_to_open_leaves_no_group(tmp_path: Path) -> None:
    """A sandbox whose workspace cannot be written (content gone, a deadline hit while
    copying) is never handed out, so nobody else can close it: its cgroup must go with the
    error (the deadline test's verification clone left one behind per round)."""
    store = SnapshotStore(tmp_path / "store")
    provider = LocalProvider(store, tmp_path / "sb")
    task = load_task(_limited_task(tmp_path))
    with provider.create(task, "t/a") as sb:
        snap = sb.snapshot(
            SnapshotLabel(task=task.name, task_digest=task.digest, kind=SnapshotKind.agent, round=1)
        )
    before = _groups()
    (store.root / "manifests" / f"{snap.locator}.json").unlink()
    with pytest.raises(SandboxError, match="content missing"):
        provider.create(task, "t/b", snap)
    provider.close()
    assert _groups() == before
