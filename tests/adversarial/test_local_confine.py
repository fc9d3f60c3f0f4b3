"""The engine's own file work for a local sandbox never follows the agent's links.

Found by the red-team suite: a hardened local sandbox's ``read_file`` read a hidden task's
reference solution by absolute path or through an ``AGENTS.md`` link, ``write_file`` and
``copy_in`` wrote through planted links (and to absolute paths) anywhere on the host, and
the snapshot followed a workspace folder the agent had swapped for a link.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

import pytest

from evoround.sandboxes import LocalProvider, UnsafeFile
from evoround.sandboxes.local._isolation import bwrap_available
from evoround.snapshots import SnapshotStore, WorkspaceRejected
from evoround.tasks import load_task
from tests.helpers import COUNTER

pytestmark = pytest.mark.skipif(
    not bwrap_available() and os.environ.get("CI") != "true", reason="bubblewrap does not work here"
)


@pytest.fixture
def outside():
    """A task copy and a victim folder in a part of the host the sandbox can name."""
    base = Path(tempfile.mkdtemp(dir="/var/tmp", prefix="evoround-confine-"))
    shutil.copytree(COUNTER, base / "tasks" / "counter")
    (base / "victim").mkdir()
    (base / "victim" / "f.txt").write_text("orig")
    yield base
    shutil.rmtree(base, ignore_errors=True)


def test_reads_and_writes_stay_in_the_sandbox(tmp_path: Path, outside: Path, monkeypatch):
    monkeypatch.setenv("EVOROUND_LOCAL_ISOLATION", "bwrap")
    task = load_task(outside / "tasks" / "counter")
    sol = task.path / "rounds/02/solution/files/counter.py"
    victim = outside / "victim"
    provider = LocalProvider(SnapshotStore(tmp_path / "store"), tmp_path / "sb")
    with provider.create(task, "t/c") as sb:
        sb.exec(f"ln -s {sol} AGENTS.md; ln -s {victim} data; ln -s {victim}/f.txt out.txt",
                timeout=30)  # fmt: skip
        with pytest.raises(UnsafeFile, match="hidden"):
            sb.read_file(str(sol))
        with pytest.raises(UnsafeFile, match="hidden"):
            sb.read_file("AGENTS.md", follow_symlinks=True)
        with pytest.raises(UnsafeFile, match="symbolic link"):
            sb.read_file("data/f.txt")
        with pytest.raises(UnsafeFile, match="outside"):
            sb.write_file(str(victim / "g.txt"), "pwned")
        sb.write_file("data/f.txt", "mine")  # the link is replaced by a folder
        sb.write_file("out.txt", "mine")  # the link is replaced by a file
        sb.copy_in(str(COUNTER / "rounds/01/solution/files"), "data")
        assert sb.read_file("data/f.txt") == b"mine"
        assert b"count_words" in sb.read_file("data/counter.py")
        sb.exec("chmod 755 out.txt", timeout=30)
        sb.write_file("out.txt", "again")
        assert os.stat(Path(sb.workdir) / "out.txt").st_mode & 0o777 == 0o755  # mode kept
        sb.write_file("/tmp/note.sh", "echo hi")  # /tmp as the command sees it (its own)
        assert sb.exec("sh /tmp/note.sh", timeout=30).stdout == "hi\n"
    assert sorted(os.listdir(victim)) == ["f.txt"]
    assert (victim / "f.txt").read_text() == "orig"


def test_a_workspace_swapped_for_a_link_is_refused(tmp_path: Path, outside: Path, monkeypatch):
    monkeypatch.setenv("EVOROUND_LOCAL_ISOLATION", "bwrap")
    task = load_task(outside / "tasks" / "counter")
    provider = LocalProvider(SnapshotStore(tmp_path / "store"), tmp_path / "sb")
    with provider.create(task, "t/s") as sb:
        sol = task.path / "rounds/01/solution/files"
        sb.exec(f"mv {sb.workdir} {sb.workdir}.orig && ln -s {sol} {sb.workdir}", timeout=30)
        assert Path(sb.workdir).is_symlink()
        with pytest.raises(WorkspaceRejected, match="not a folder"):
            provider.store.capture_dir(Path(sb.workdir))


def test_snapshot_walk_limits(tmp_path: Path):
    store = SnapshotStore(tmp_path / "store")
    deep = tmp_path / "deep"
    p = deep
    for _ in range(300):
        p = p / "d"
    p.mkdir(parents=True)
    with pytest.raises(WorkspaceRejected, match="nested"):
        store.capture_dir(deep)
    flat = tmp_path / "flat"
    (flat / "sub").mkdir(parents=True)
    os.mkfifo(flat / "sub" / "pipe")
    os.symlink("/etc/passwd", flat / "link")
    (flat / "f.txt").write_text("x")
    manifest, _, files = store.capture_dir(flat)
    entries = {str(e["path"]): e["type"] for e in store.manifest(manifest)}
    assert entries == {"f.txt": "file", "link": "link", "sub": "dir"} and files == 1
