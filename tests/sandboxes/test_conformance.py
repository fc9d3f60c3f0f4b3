"""The Sandbox contract, once, for every backend (local and docker).

A new backend is added to ``BACKENDS`` and must pass this module unchanged. The
engine (controller, verifier, reference builder) relies on exactly these
behaviours, so a backend that passes here can run a job.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from evoround.sandboxes import LocalProvider, Sandbox, SandboxError, SandboxProvider, UnsafeFile
from evoround.sandboxes.local._isolation import namespaces_available
from evoround.snapshots import SnapshotKind, SnapshotLabel, SnapshotStore
from evoround.tasks import Task, load_task
from tests.conftest import write_task

BACKENDS = [
    "local",  # the best isolation that works here (bubblewrap where it does)
    "local-unshare",  # util-linux unshare and the seccomp launcher
    pytest.param("docker", marks=pytest.mark.docker),  # host-folder workspaces (default)
    pytest.param("docker-archive", marks=pytest.mark.docker),  # workspaces streamed as tars
    pytest.param("docker-commit", marks=pytest.mark.docker),  # `docker commit` snapshots
]

BINARY = bytes(range(256)) * 64 + b"\x00\xff\r\n"
UNICODE_PATH = "données/ünïcødé 日本語/file – ß.txt"


@pytest.fixture(scope="module")
def task(tmp_path_factory: pytest.TempPathFactory) -> Task:
    root = tmp_path_factory.mktemp("tasks")
    path = write_task(
        root,
        "conformance",
        rounds=1,
        workspace={"README.md": "hello\n", "pkg/mod.py": "X = 1\n", "héllo.txt": "unicode\n"},
    )
    return load_task(path)


@pytest.fixture(scope="module", params=BACKENDS)
def provider(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[SandboxProvider]:
    store = SnapshotStore(tmp_path_factory.mktemp("store"))
    if request.param == "local":
        p: SandboxProvider = LocalProvider(store, base_dir=tmp_path_factory.mktemp("sandboxes"))
    elif request.param == "local-unshare":
        if not namespaces_available() and os.environ.get("CI") != "true":
            pytest.skip("no Linux namespaces here")
        with pytest.MonkeyPatch.context() as mp:  # read once, when the provider is made
            mp.setenv("EVOROUND_LOCAL_ISOLATION", "unshare")
            p = LocalProvider(store, base_dir=tmp_path_factory.mktemp("sandboxes"))
        assert p.isolation == "unshare"
    else:
        request.getfixturevalue("docker_client")
        from evoround.sandboxes.docker import DockerProvider

        mode = {"docker": "workspace", "docker-archive": "archive"}.get(request.param, "commit")
        p = DockerProvider(store, job=f"conformance-{mode}", snapshot_mode=mode)
    yield p
    p.close()


@pytest.fixture
def sb(provider: SandboxProvider, task: Task) -> Iterator[Sandbox]:
    sandbox = provider.create(task, "conformance/attempt")
    yield sandbox
    sandbox.close()


def label(task: Task, round_: int = 1, parent: str | None = None) -> SnapshotLabel:
    return SnapshotLabel(
        task=task.name,
        task_digest=task.digest,
        kind=SnapshotKind.agent,
        round=round_,
        attempt="conformance/attempt",
        parent=parent,
    )


def exists(sb: Sandbox, path: str) -> bool:
    return sb.exec(["test", "-e", path]).exit_code == 0


# ---- exec ------------------------------------------------------------------------


def test_starts_with_the_task_workspace_in_workdir(sb: Sandbox):
    assert sb.read_file("README.md") == b"hello\n"
    assert sb.read_file("pkg/mod.py") == b"X = 1\n"
    assert sb.read_file("héllo.txt") == b"unicode\n"
    res = sb.exec("pwd")
    assert res.ok and res.stdout.strip() == sb.workdir
    assert not sb.scratch.startswith(sb.workdir.rstrip("/") + "/")


def test_exit_codes_and_streams(sb: Sandbox):
    res = sb.exec("echo out; echo err >&2; exit 3")
    assert (res.exit_code, res.stdout, res.stderr) == (3, "out\n", "err\n")
    assert not res.ok and not res.timed_out and not res.oom_killed
    assert sb.exec([sb.python, "-c", "import sys; sys.exit(5)"]).exit_code == 5
    assert sb.exec(["true"]).ok
    assert sb.exec("exit 124", timeout=30).timed_out is False


def test_signals_start_at_their_defaults(sb: Sandbox):
    """A writer whose reader went away dies of SIGPIPE quietly, as in a terminal (a
    launcher that left SIGPIPE ignored would make it fail with "Broken pipe")."""
    res = sb.exec('yes | head -n 1; echo "${PIPESTATUS[0]}"', timeout=30)
    assert (res.stdout, res.stderr) == ("y\n141\n", "")


def test_python_runs_pytest(sb: Sandbox):
    res = sb.exec([sb.python, "-P", "-c", "import pytest, sys; print(sys.version_info[0])"])
    assert res.ok, res.stderr
    assert res.stdout.strip() == "3"


def test_stdin_text_bytes_and_large(sb: Sandbox):
    assert sb.exec("cat", stdin="héllo\n").stdout == "héllo\n"
    assert sb.exec(["wc", "-c"], stdin=BINARY).stdout.strip() == str(len(BINARY))
    big = b"x" * (3 * 1024 * 1024)
    res = sb.exec("wc -c; head -c 10 /dev/zero | wc -c", stdin=big)
    assert res.stdout.split() == [str(len(big)), "10"]
    assert sb.exec("cat").stdout == ""  # no stdin: EOF at once, never a hang


def test_large_output(sb: Sandbox):
    res = sb.exec("head -c 2000000 /dev/zero | tr '\\0' a; echo done >&2")
    assert len(res.stdout) == 2_000_000 and res.stderr == "done\n"


def test_cwd_and_env(sb: Sandbox):
    sb.write_file("sub/dir/x.txt", "x")
    assert sb.exec("pwd", cwd="sub/dir").stdout.strip() == f"{sb.workdir}/sub/dir"
    assert sb.exec('printf %s "$EVO_X"', env={"EVO_X": "yes ñ"}).stdout == "yes ñ"


def test_timeout_kills_the_whole_tree(sb: Sandbox):
    start = time.monotonic()
    res = sb.exec("(sleep 2; echo late > marker-a) & sleep 60", timeout=1)
    assert res.timed_out and res.exit_code == 124 and not res.ok
    assert time.monotonic() - start < 15
    time.sleep(2.5)
    assert not exists(sb, "marker-a")


def test_timeout_kills_commands_that_ignore_sigterm(sb: Sandbox):
    start = time.monotonic()
    res = sb.exec("trap '' TERM; while :; do sleep 0.1; done", timeout=0.5)
    assert res.timed_out and time.monotonic() - start < 20


def test_background_children_do_not_outlive_the_command(sb: Sandbox):
    # (a child that keeps the command's stdout open is waited for by the local backend)
    res = sb.exec("(sleep 1; echo late > marker-b) >/dev/null 2>&1 & echo started")
    assert res.ok and res.stdout == "started\n"
    time.sleep(2)
    assert not exists(sb, "marker-b")


# ---- files -----------------------------------------------------------------------


def test_text_binary_and_unicode_round_trips(sb: Sandbox):
    sb.write_file("t.txt", "héllo wörld\n")
    sb.write_file("bin/blob.bin", BINARY)
    sb.write_file(UNICODE_PATH, "ünï\n")
    sb.write_file(f"{sb.workdir}/abs.txt", b"abs")
    assert sb.read_file("t.txt") == "héllo wörld\n".encode()
    assert sb.read_file("bin/blob.bin") == BINARY
    assert sb.read_file(UNICODE_PATH) == "ünï\n".encode()
    assert sb.read_file("abs.txt") == b"abs"
    assert sb.exec(["cat", UNICODE_PATH]).stdout == "ünï\n"
    assert (
        sb.exec(["sha256sum", "bin/blob.bin"]).stdout.split()[0]
        == __import__("hashlib").sha256(BINARY).hexdigest()
    )
    sb.write_file("t.txt", "replaced")
    assert sb.read_file("t.txt") == b"replaced"


def test_read_sees_what_commands_wrote(sb: Sandbox):
    sb.exec("mkdir -p out && printf 'a\\0b' > out/x && ln -s out/x link")
    assert sb.read_file("out/x") == b"a\x00b"
    assert sb.read_file("link", follow_symlinks=True) == b"a\x00b"


def test_read_refuses_links_fifos_and_oversize_by_default(sb: Sandbox):
    """The harness reads agent-controlled paths: no link followed, no FIFO opened, capped."""
    sb.exec("printf abc > f && ln -s /etc/passwd link && mkfifo fifo")
    with pytest.raises(UnsafeFile):
        sb.read_file("link")
    with pytest.raises(UnsafeFile):
        sb.read_file("fifo")
    with pytest.raises(UnsafeFile):
        sb.read_file("f", limit=2)
    assert sb.read_file("f", limit=3) == b"abc"


def test_read_missing_file_raises_file_not_found(sb: Sandbox):
    with pytest.raises(FileNotFoundError):
        sb.read_file("no/such/file.txt")


def test_scratch_is_usable_and_outside_the_workspace(sb: Sandbox):
    sb.write_file(f"{sb.scratch}/deep/r.xml", "<x/>")
    assert sb.read_file(f"{sb.scratch}/deep/r.xml") == b"<x/>"
    assert sb.exec(["cat", f"{sb.scratch}/deep/r.xml"]).stdout == "<x/>"
    assert not exists(sb, "deep/r.xml")


def test_copy_in_keeps_tree_bytes_names_and_exec_bits(sb: Sandbox, tmp_path: Path):
    src = tmp_path / "src"
    (src / "a" / "b").mkdir(parents=True)
    (src / "a" / "b" / "blob.bin").write_bytes(BINARY)
    (src / "ünï.txt").write_text("u", encoding="utf-8")
    (src / "empty").write_bytes(b"")
    (src / "run.sh").write_text("#!/bin/sh\necho ran\n")
    (src / "run.sh").chmod(0o755)
    sb.copy_in(str(src), "dest")
    assert sb.read_file("dest/a/b/blob.bin") == BINARY
    assert sb.read_file("dest/ünï.txt") == b"u"
    assert sb.read_file("dest/empty") == b""
    assert sb.exec(["./dest/run.sh"]).stdout == "ran\n"
    sb.copy_in(str(src), f"{sb.scratch}/suite")
    assert sb.read_file(f"{sb.scratch}/suite/a/b/blob.bin") == BINARY


# ---- snapshots -------------------------------------------------------------------


def _populate(sb: Sandbox) -> None:
    sb.write_file("bin/blob.bin", BINARY)
    sb.write_file(UNICODE_PATH, "ünï\n")
    sb.write_file("tool.sh", "#!/bin/sh\necho tool\n")
    sb.exec(
        "chmod +x tool.sh && mkdir -p empty-dir && ln -s bin/blob.bin blob-link"
        " && ln bin/blob.bin hard.bin && rm README.md"
    )
    sb.write_file(f"{sb.scratch}/private.txt", "engine only")


def test_snapshot_then_clone_sees_the_same_files(
    provider: SandboxProvider, task: Task, sb: Sandbox
):
    _populate(sb)
    snapshot = sb.snapshot(label(task))
    assert snapshot.backend == provider.name and snapshot.task_digest == task.digest
    with provider.create(task, "conformance/clone", snapshot) as clone:
        assert clone.read_file("bin/blob.bin") == BINARY
        assert clone.read_file(UNICODE_PATH) == "ünï\n".encode()
        assert clone.read_file("pkg/mod.py") == b"X = 1\n"
        assert clone.exec(["./tool.sh"]).stdout == "tool\n"
        assert clone.exec(["test", "-d", "empty-dir"]).ok
        assert clone.exec(["test", "-L", "blob-link"]).ok
        assert clone.read_file("blob-link", follow_symlinks=True) == BINARY
        assert clone.read_file("hard.bin") == BINARY
        assert not exists(clone, "README.md")  # deletions are part of the state
        assert not exists(clone, f"{clone.scratch}/private.txt")  # scratch never is


def test_snapshot_lineage_is_registered(provider: SandboxProvider, task: Task, sb: Sandbox):
    store: SnapshotStore = provider.store  # type: ignore[attr-defined]
    first = sb.snapshot(label(task, 1))
    sb.write_file("r2.txt", "2")
    second = sb.snapshot(label(task, 2, parent=first.id))
    assert store.get(second.id).parent == first.id
    assert [s.id for s in store.lineage(second.id)] == [second.id, first.id]
    assert (second.round, second.kind, second.attempt) == (
        2,
        SnapshotKind.agent,
        "conformance/attempt",
    )


def test_clones_are_isolated(provider: SandboxProvider, task: Task, sb: Sandbox):
    sb.write_file("shared.txt", "v1")
    snapshot = sb.snapshot(label(task))
    sb.write_file("shared.txt", "original-after")
    with (
        provider.create(task, "conformance/c1", snapshot) as c1,
        provider.create(task, "conformance/c2", snapshot) as c2,
    ):
        assert c1.read_file("shared.txt") == b"v1"
        c1.write_file("shared.txt", "c1")
        c1.write_file("only-c1.txt", "c1")
        assert c2.read_file("shared.txt") == b"v1"
        assert not exists(c2, "only-c1.txt")
        assert sb.read_file("shared.txt") == b"original-after"
        assert not exists(sb, "only-c1.txt")
    # a clone's processes cannot see or touch the original's files
    assert sb.read_file("shared.txt") == b"original-after"


def test_clone_of_a_clone(provider: SandboxProvider, task: Task, sb: Sandbox):
    sb.write_file("gen.txt", "1")
    s1 = sb.snapshot(label(task, 1))
    with provider.create(task, "conformance/g2", s1) as c:
        c.write_file("gen.txt", "2")
        s2 = c.snapshot(label(task, 2, parent=s1.id))
    with provider.create(task, "conformance/g3", s2) as c3:
        assert c3.read_file("gen.txt") == b"2"


# ---- lifecycle -------------------------------------------------------------------


def test_close_is_idempotent_and_final(provider: SandboxProvider, task: Task):
    sandbox = provider.create(task, "conformance/closing")
    sandbox.close()
    sandbox.close()
    with pytest.raises(SandboxError):
        sandbox.exec("true")
    with pytest.raises(SandboxError):
        sandbox.read_file("README.md")


def test_context_manager_closes_on_exception(provider: SandboxProvider, task: Task):
    with pytest.raises(RuntimeError), provider.create(task, "conformance/raising") as s:
        raise RuntimeError("boom")
    with pytest.raises(SandboxError):
        s.exec("true")
