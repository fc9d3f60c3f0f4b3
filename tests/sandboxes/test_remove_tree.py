"""Nothing an agent leaves in a folder breaks its removal (issue 34): depth past the
recursion limit, folders without permissions, links, special files, odd names, many
entries; and a removal never touches anything outside its folder, nor raises."""

from __future__ import annotations

import logging
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from evoround.sandboxes.common import remove_tree

DEPTH = 20_000


def chain(top: Path, depth: int, name: str | bytes = "d") -> int:
    """``depth`` nested folders below ``top``; returns a descriptor of the deepest."""
    fd = os.open(top, os.O_RDONLY | os.O_DIRECTORY)
    for _ in range(depth):
        os.mkdir(name, dir_fd=fd)
        sub = os.open(name, os.O_RDONLY | os.O_DIRECTORY, dir_fd=fd)
        os.close(fd)
        fd = sub
    return fd


def outside(base: Path) -> tuple[Path, Path]:
    """A folder and a file next to the tree, which must survive its removal."""
    keep = base / "keep"
    keep.mkdir()
    (keep / "precious.txt").write_text("keep me")
    return keep, keep / "precious.txt"


def test_a_20000_deep_tree_is_removed_without_recursion(scratch: Path) -> None:
    keep, precious = outside(scratch)
    tree = scratch / "ws"
    tree.mkdir()
    t0 = time.monotonic()
    fd = chain(tree, DEPTH)
    os.symlink(str(keep), "up", dir_fd=fd)  # a link at the bottom: never followed
    os.mkfifo("fifo", dir_fd=fd)
    with open(os.open("f", os.O_WRONLY | os.O_CREAT, 0o644, dir_fd=fd), "w") as f:
        f.write("x")
    os.close(fd)
    built = time.monotonic() - t0
    with pytest.raises(RecursionError):  # what the sweep used to do (Python < 3.12)
        shutil.rmtree(tree)
    t0 = time.monotonic()
    assert remove_tree(tree) is True
    took = time.monotonic() - t0
    print(f"{DEPTH}-deep tree on {scratch}: built in {built:.1f}s, removed in {took:.1f}s")
    assert not tree.exists()
    assert precious.read_text() == "keep me"
    assert sorted(p.name for p in scratch.iterdir()) == ["keep"]


def test_links_special_files_and_odd_names(scratch: Path) -> None:
    keep, precious = outside(scratch)
    tree = scratch / "ws"
    tree.mkdir()
    (tree / "to-dir").symlink_to(keep)
    (tree / "to-file").symlink_to(precious)
    (tree / "to-root").symlink_to("/")
    (tree / "dangling").symlink_to(scratch / "nowhere")
    os.mkfifo(tree / "fifo")  # opening it would block: it is only unlinked
    sock = socket.socket(socket.AF_UNIX)
    sock.bind(str(tree / "sock"))
    if os.geteuid() == 0:
        os.mknod(tree / "null", 0o600 | stat.S_IFCHR, os.makedev(1, 3))
    raw = os.fsencode(tree)
    os.mkdir(raw + b"/new\nline\xff\xfe")  # a newline and bytes that are not UTF-8
    (Path(os.fsdecode(raw + b"/new\nline\xff\xfe")) / "x").write_text("x")
    fd = chain(tree, 40, "n" * 255)  # a path far past PATH_MAX
    os.symlink("/", "r", dir_fd=fd)
    os.close(fd)
    hard = tree / "hard"
    os.link(precious, hard)  # a hard link to a file outside: the file stays
    try:
        assert remove_tree(tree) is True
    finally:
        sock.close()
    assert not tree.exists()
    assert precious.read_text() == "keep me"
    assert os.stat(precious).st_nlink == 1
    assert sorted(p.name for p in keep.iterdir()) == ["precious.txt"]


def test_many_entries_in_one_folder(scratch: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("evoround.sandboxes.common._remove.BATCH", 1000)
    tree = scratch / "ws"
    tree.mkdir()
    for i in range(5000):
        (tree / f"f{i}").touch()
    for i in range(2500):  # more subfolders than one listing hands out (BATCH)
        (tree / f"d{i}").mkdir()
    (tree / "d7" / "inner").mkdir()
    assert remove_tree(tree) is True
    assert not tree.exists()


def test_the_top_itself_a_link_or_a_file_or_nothing(scratch: Path) -> None:
    keep, precious = outside(scratch)
    link = scratch / "link"
    link.symlink_to(keep)
    assert remove_tree(link) is True
    assert not os.path.lexists(link)
    assert precious.read_text() == "keep me"
    f = scratch / "file"
    f.write_text("x")
    assert remove_tree(f) is True and not f.exists()
    assert remove_tree(scratch / "never-was") is True


def _as_nobody(tree: Path) -> int:
    """Remove ``tree`` in a child process that runs as ``nobody`` (root bypasses the
    permission bits this test is about); its exit status: 0 when it is gone."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 1
        try:
            os.setgid(65534)
            os.setuid(65534)
            code = 0 if remove_tree(tree) else 2
        finally:
            os._exit(code)
    return os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1])


def test_folders_without_permissions(tmp_path: Path) -> None:
    base = Path(tempfile.mkdtemp(prefix="evoround-perm-"))  # reachable by another user
    try:
        tree = base / "ws"
        for sub in ("a/b/c", "noread/x", "noexec/y", "nowrite/z"):
            (tree / sub).mkdir(parents=True)
            (tree / sub / "f").write_text("x")
        os.chmod(tree / "a" / "b", 0)
        os.chmod(tree / "a", 0o100)
        os.chmod(tree / "noread", 0o300)
        os.chmod(tree / "noexec", 0o600)
        os.chmod(tree / "nowrite", 0o500)
        os.chmod(tree, 0o500)
        if os.geteuid() == 0:
            os.chmod(base, 0o755)
            subprocess.run(["chown", "-R", "65534:65534", str(tree)], check=True)
            os.chown(base, 65534, 65534)
            assert _as_nobody(tree) == 0
        else:
            assert remove_tree(tree) is True
        assert not tree.exists()
    finally:
        subprocess.run(["chmod", "-R", "u+rwx", str(base)], check=False)
        shutil.rmtree(base, ignore_errors=True)


def test_what_cannot_go_is_logged_never_raised(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """An immutable file (``chattr +i`` needs CAP_LINUX_IMMUTABLE, which no sandbox has;
    root here can set it to play the worst case) stays; the rest goes; nothing raises."""
    tree = tmp_path / "ws"
    (tree / "a").mkdir(parents=True)
    stuck = tree / "a" / "stuck"
    stuck.write_text("x")
    (tree / "b").mkdir()
    (tree / "b" / "f").write_text("x")
    if shutil.which("chattr") is None:
        pytest.skip("no chattr")
    if subprocess.run(["chattr", "+i", str(stuck)], capture_output=True).returncode:
        pytest.skip("chattr +i not possible here (not root, or the file system has none)")
    try:
        with caplog.at_level(logging.WARNING):
            assert remove_tree(tree) is False
        assert stuck.exists() and not (tree / "b").exists()
        assert "could not be removed" in caplog.text and "stuck" in caplog.text
    finally:
        subprocess.run(["chattr", "-i", str(stuck)], check=False)
    assert remove_tree(tree) is True


def test_deep_tree_removal_in_a_subprocess_with_low_recursion_limit(scratch: Path) -> None:
    """The removal holds no Python frame per level: a recursion limit of 100 is enough."""
    tree = scratch / "ws"
    tree.mkdir()
    os.close(chain(tree, 3000))
    code = (
        "import sys\n"
        "from evoround.sandboxes.common import remove_tree\n"
        "sys.setrecursionlimit(100)\n"
        f"sys.exit(0 if remove_tree({str(tree)!r}) else 1)\n"
    )
    assert subprocess.run([sys.executable, "-c", code], check=False).returncode == 0
    assert not tree.exists()
