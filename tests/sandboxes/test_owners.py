"""Who owns a sandbox folder, and when a sweep may take it (issue 33): on storage shared by
hosts, a sweep removes only folders whose owner is provably dead, so workers on other hosts
keep their live workspaces; an orphan of a dead host still goes once its lease ran out."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from evoround.sandboxes import LocalProvider
from evoround.sandboxes.common import (
    LEGACY_OWNER_FILE,
    OWNER_LEASE_S,
    OWNER_RECORD,
    Here,
    OwnerRecord,
    SandboxUnavailable,
    owner_dead,
    process_start,
    sweep_orphans,
    this_owner,
    write_owner,
)
from evoround.sandboxes.docker import _hostws
from evoround.snapshots import SnapshotStore
from evoround.tasks import load_task

HERE = Here(host="node-a", machine_id="m-a", boot_id="boot-1", pid_ns="pid:[1]")
REC = OwnerRecord(
    host="node-a", machine_id="m-a", boot_id="boot-1", pid_ns="pid:[1]", pid=42, start=1000
)
DAY = 24 * 3600.0


def dead(rec: OwnerRecord, started: int | None = 1000, age: float = 0.0) -> bool:
    return owner_dead(rec, HERE, started, age, lease_s=DAY)


# -- the decision, a pure function of a record and facts about here --


def test_same_kernel_the_pid_decides() -> None:
    assert not dead(REC, started=1000)  # running, the same start: the owner
    assert dead(REC, started=None)  # no such process
    assert dead(REC, started=1001)  # the pid was reused by another process
    assert not dead(REC, started=-1)  # alive, start unreadable: not provably dead
    assert not dead(REC.model_copy(update={"start": -1}), started=5)
    assert not dead(REC, started=1000, age=10 * DAY)  # a live owner needs no lease


def test_another_host_is_never_judged_by_its_pid() -> None:
    other = REC.model_copy(update={"host": "node-b", "machine_id": "m-b", "boot_id": "boot-9"})
    assert not dead(other, started=None, age=60)  # its pid means nothing here
    assert not dead(other, started=None, age=DAY - 1)
    assert dead(other, started=None, age=DAY + 1)  # a dead host's orphan: lease ran out


def test_a_reboot_of_this_machine_frees_its_folders() -> None:
    assert dead(REC.model_copy(update={"boot_id": "boot-0"}), age=60)
    # a hostname that names no machine in particular proves no reboot: lease only
    generic = HERE.__class__("localhost", "", "boot-1", "pid:[1]")
    rec = REC.model_copy(update={"host": "localhost", "machine_id": "", "boot_id": "boot-0"})
    assert not owner_dead(rec, generic, None, 60, DAY)
    # the same hostname on another machine (another machine-id) is another host
    assert not dead(REC.model_copy(update={"boot_id": "boot-0", "machine_id": "m-z"}), age=60)


def test_another_pid_namespace_on_this_kernel_uses_the_lease() -> None:
    """A container on this machine: the same boot id, pids of its own."""
    rec = REC.model_copy(update={"pid_ns": "pid:[2]", "host": "container-1"})
    assert not dead(rec, started=None, age=60)
    assert dead(rec, started=None, age=DAY + 1)


def test_without_boot_ids_the_hostname_decides_as_before() -> None:
    here = Here("mac", "", "", "")
    rec = OwnerRecord(host="mac", pid=42, start=-1)
    assert owner_dead(rec, here, None, 0, DAY)
    assert not owner_dead(rec, here, -1, 0, DAY)
    assert not owner_dead(rec.model_copy(update={"host": "mac2"}), here, None, 0, DAY)


def test_this_process_is_its_own_live_owner() -> None:
    here = Here.read()
    me = this_owner(here)
    assert me.pid == os.getpid() and me.boot_id == here.boot_id
    assert process_start(os.getpid()) == me.start
    assert not owner_dead(me, here, process_start(me.pid), 0)


# -- the sweep --


def _record(folder: Path, rec: OwnerRecord, age: float = 0.0) -> None:
    folder.mkdir(parents=True)
    (folder / OWNER_RECORD).write_text(rec.model_dump_json())
    if age:
        t = time.time() - age
        os.utime(folder / OWNER_RECORD, (t, t))


def _dead_pid() -> int:
    p = subprocess.Popen(["true"])
    p.wait()
    return p.pid


def test_sweep_keeps_other_hosts_and_removes_dead_ones_here(tmp_path: Path) -> None:
    base = tmp_path / "sandboxes"
    here = Here.read()
    me = this_owner(here)
    gone = _dead_pid()
    elsewhere = me.model_copy(update={"host": "node-b", "machine_id": "m-b", "boot_id": "b-9"})
    _record(base / "other-host-live", elsewhere.model_copy(update={"pid": gone}))
    _record(base / "other-host-stale", elsewhere, age=OWNER_LEASE_S + 60)
    _record(base / "dead-here", me.model_copy(update={"pid": gone}))
    _record(base / "pid-reused", me.model_copy(update={"start": me.start + 1}))
    _record(base / "rebooted", me.model_copy(update={"boot_id": "an-earlier-boot"}))
    _record(base / "live-here", me, age=3 * 3600)
    _record(base / "other-user-live", me.model_copy(update={"pid": 1, "start": -1}))
    (base / "legacy-dead").mkdir()
    (base / "legacy-dead" / LEGACY_OWNER_FILE).write_text(str(gone))
    (base / "legacy-live").mkdir()
    (base / "legacy-live" / LEGACY_OWNER_FILE).write_text(str(os.getpid()))
    (base / "garbled").mkdir()
    (base / "garbled" / OWNER_RECORD).write_text("{not json")
    (base / "unowned").mkdir()
    removed = sweep_orphans(base)
    left = sorted(p.name for p in base.iterdir())
    assert left == [
        "garbled",
        "legacy-live",
        "live-here",
        "other-host-live",
        "other-user-live",
        "unowned",
    ]
    assert sorted(p.name for p in removed) == [
        "dead-here",
        "legacy-dead",
        "other-host-stale",
        "pid-reused",
        "rebooted",
    ]
    # an owner proved alive here has its lease renewed for the hosts that cannot check it
    assert time.time() - (base / "live-here" / OWNER_RECORD).stat().st_mtime < 600


def test_a_sweep_with_a_hostile_orphan_completes(scratch: Path) -> None:
    """A dead agent's 20,000-deep, permissionless, link-filled folder: the sweep removes it
    (no RecursionError reaches the run) and nothing outside. (On tmpfs when there is one:
    on a busy disk the 20,000 rmdirs alone take about a minute, as with ``rm -rf``.)"""
    tmp_path = scratch
    base = tmp_path / "sandboxes"
    me = this_owner()
    _record(base / "orphan", me.model_copy(update={"pid": _dead_pid()}))
    keep = tmp_path / "keep"
    keep.mkdir()
    (keep / "f").write_text("keep")
    fd = os.open(base / "orphan", os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(20_000):
        os.mkdir("d", dir_fd=fd)
        sub = os.open("d", os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = sub
    os.symlink(str(keep), "k", dir_fd=fd)
    os.mkfifo("p", dir_fd=fd)
    os.close(fd)
    os.chmod(base / "orphan" / "d", 0)
    t0 = time.monotonic()
    assert [p.name for p in sweep_orphans(base)] == ["orphan"]
    print(f"sweep of a 20,000-deep orphan on {tmp_path}: {time.monotonic() - t0:.1f}s")
    assert list(base.iterdir()) == []
    assert (keep / "f").read_text() == "keep"


def test_write_owner_is_a_record_this_sweep_keeps(tmp_path: Path) -> None:
    folder = tmp_path / "base" / "job-1"
    folder.mkdir(parents=True)
    write_owner(folder)
    rec = OwnerRecord.model_validate_json((folder / OWNER_RECORD).read_text())
    assert rec == this_owner()
    assert [p.name for p in (folder).iterdir()] == [OWNER_RECORD]  # no temporary left
    assert sweep_orphans(tmp_path / "base") == []


def test_adopt_owner_of_a_removed_folder_says_so(tmp_path: Path) -> None:
    facts = _hostws.ImageFacts(lambda: None, SnapshotStore(tmp_path / "store"), {})  # type: ignore[arg-type,return-value]  # no daemon: the image's facts are known
    facts._known["img:/work"] = ("", (os.getuid(), os.getgid(), 0o755))
    with pytest.raises(SandboxUnavailable, match="removed while in use"):
        facts.adopt_owner("img", "/work", tmp_path / "gone" / "ws")


DEEP = (
    "import os\n"
    "os.mkdir('deep'); os.chdir('deep')\n"
    "for _ in range(20000):\n"
    "    os.mkdir('d'); os.chdir('d')\n"
    "os.mkfifo('p'); os.symlink('/', 'root')\n"
)


def test_an_agents_deep_folder_breaks_neither_close_nor_the_next_runs_sweep(
    scratch: Path, make_task: Callable[..., Path]
) -> None:
    """Issue 34: an agent left a 20,000-deep folder. Its sandbox closes cleanly, and a run
    killed with -9 (its record names a dead engine) leaves it to the next provider's sweep,
    which completes instead of failing every later run."""
    task = load_task(make_task())
    store = SnapshotStore(scratch / "store")
    parent = scratch / "sb"
    provider = LocalProvider(store, base_dir=parent, harden=False)
    with provider.create(task, "t/closed") as sb:
        assert sb.exec(["python3", "-c", DEEP]).exit_code == 0
        root = Path(sb.workdir)
    assert not root.exists()
    killed = provider.create(task, "t/killed")
    assert killed.exec(["python3", "-c", DEEP]).exit_code == 0
    record = provider.base_dir / OWNER_RECORD  # as if this engine had been killed with -9
    me = OwnerRecord.model_validate_json(record.read_text())
    record.write_text(me.model_copy(update={"pid": _dead_pid()}).model_dump_json())
    LocalProvider(store, base_dir=parent, harden=False).close()
    assert list(parent.iterdir()) == []


def test_the_heartbeat_renews_live_records_and_drops_removed_ones(tmp_path: Path) -> None:
    from evoround.sandboxes.common import _owner

    folder = tmp_path / "job-1"
    folder.mkdir()
    write_owner(folder)
    record = folder / OWNER_RECORD
    old = time.time() - 2 * OWNER_LEASE_S
    os.utime(record, (old, old))
    _owner._HEARTBEAT.beat()
    assert time.time() - record.stat().st_mtime < 600
    record.unlink()
    folder.rmdir()
    _owner._HEARTBEAT.beat()
    assert record not in _owner._HEARTBEAT._paths
