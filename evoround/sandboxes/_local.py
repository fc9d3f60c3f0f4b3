"""Local sandbox: a directory per attempt, commands as host subprocesses.

It exists because it is fast (no container) and needs nothing installed. Two levels:

- **Hardened** (bubblewrap, else ``unshare``; see ``_isolation``): every command runs in
  its own pid and mount namespace (and network namespace unless the task allows network).
  The task directories, the snapshot store, ``EVOROUND_HOME``, the job directory and every
  other sandbox are out of sight, ``/proc`` shows only the command's own processes, and
  when the command ends the kernel kills every process it left behind (``setsid`` and
  double forks included). Sandboxes live in a fresh random ``0700`` directory.
- **Trusted only** (no namespaces): plain host subprocesses that can read the rest of the
  host; ``evoround`` says so when it starts.

Either way the environment is clean (an allow-list plus what the caller passes: no
``EVOROUND_*``, no API keys) and a timeout or Ctrl-C kills the command's whole tree.
"""

from __future__ import annotations

import contextlib
import errno
import os
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from evoround.sandboxes._capture import CappedOutput
from evoround.sandboxes._cgroup import Cgroup, cgroups_available, make_cgroup, sweep_cgroups
from evoround.sandboxes._confine import copy_tree, read_path, write_new, write_path
from evoround.sandboxes._folder import WrittenFolder
from evoround.sandboxes._isolation import (
    bwrap_argv,
    choose_isolation,
    namespaces_available,
    unshare_argv,
)
from evoround.sandboxes._protocol import (
    READ_LIMIT,
    ExecResult,
    Sandbox,
    SandboxError,
    SandboxProvider,
    UnsafeFile,
    check_content,
)
from evoround.sandboxes._seccomp import STARTED, filter_fd, launcher_argv
from evoround.snapshots import Snapshot, SnapshotLabel, SnapshotStore
from evoround.tasks import Task, resolve_host_env

BACKEND = "local"

RECYCLE_MIN_BYTES = 16 << 20
"""A closed sandbox's workspace is recycled (see :meth:`LocalProvider._recycle`) only when
its snapshot is at least this big: a smaller one is written whole as fast as a difference."""
MAX_RECYCLED = 2
"""Recycled workspace folders a provider keeps (the oldest goes first)."""

ENV_ALLOW = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ", "USER", "LOGNAME", "SHELL")
"""Host variables a sandboxed command inherits; everything else must be passed explicitly."""


def _below(p: Path, root: Path) -> bool:
    """Whether ``p`` is ``root`` or inside it, by name (no link resolved)."""
    return p == root or root in p.parents


def _contains(inner: Path, outer: Path) -> bool:
    """Whether covering ``inner`` would cover ``outer`` (``inner`` is ``outer`` or above it)."""
    try:
        outer.resolve().relative_to(inner)
    except ValueError:
        return False
    return True


def safe_read(path: Path, *, limit: int = READ_LIMIT, follow_symlinks: bool = False) -> bytes:
    """Read an agent-controlled file: no symlink at the last step, regular files only
    (a FIFO is refused without blocking: ``O_NONBLOCK``), at most ``limit`` bytes."""
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0)
    if not follow_symlinks:
        flags |= os.O_NOFOLLOW
    try:
        fd = os.open(path, flags)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise UnsafeFile(f"{path}: is a symbolic link; not followed") from None
        raise
    with os.fdopen(fd, "rb", buffering=0) as f:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise UnsafeFile(f"{path}: not a regular file")
        if st.st_size > limit:
            raise UnsafeFile(f"{path}: {st.st_size} bytes, over the {limit}-byte limit")
        data = f.read(limit + 1)
        if len(data) > limit:  # grew while we read
            raise UnsafeFile(f"{path}: over the {limit}-byte limit")
        return data


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(proc.pid, signal.SIGKILL)


def _pump(stream: Any, sink: CappedOutput) -> None:
    with contextlib.suppress(OSError, ValueError):
        while chunk := stream.read1(1 << 16) if hasattr(stream, "read1") else stream.read(1 << 16):
            sink.feed(chunk)


def local_run(
    cmd: str | list[str],
    *,
    cwd: Path,
    timeout: float | None,
    stdin: str | bytes | None,
    env: dict[str, str],
    pass_fds: tuple[int, ...] = (),
) -> ExecResult:
    """Run a command in a new session; on timeout (or interrupt) kill its process group.

    Output is read by two threads into capped sinks (bounded memory, see ``_capture``);
    once the command and its process group are gone the readers get a short grace, so a
    pipe held open by an escaped background process cannot hang the engine.
    """
    argv = ["bash", "-c", cmd] if isinstance(cmd, str) else list(cmd)
    data = stdin.encode() if isinstance(stdin, str) else stdin
    start = time.monotonic()
    proc = subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE if data is not None else subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,
        pass_fds=pass_fds,
    )
    out, err = CappedOutput(), CappedOutput()
    readers = [
        threading.Thread(target=_pump, args=(proc.stdout, out), daemon=True),
        threading.Thread(target=_pump, args=(proc.stderr, err), daemon=True),
    ]
    for t in readers:
        t.start()
    if data is not None and proc.stdin is not None:

        def feed() -> None:
            with contextlib.suppress(OSError, ValueError):
                proc.stdin.write(data)  # type: ignore[union-attr]
            with contextlib.suppress(OSError, ValueError):
                proc.stdin.close()  # type: ignore[union-attr]

        threading.Thread(target=feed, daemon=True).start()
    timed_out = False
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        timed_out = True
        _kill_group(proc)
        proc.wait()
    except BaseException:
        _kill_group(proc)
        proc.wait()
        raise
    finally:
        # Background children the command left behind die with it: a round ends clean.
        _kill_group(proc)
        for t in readers:
            t.join(timeout=2)
        for f in (proc.stdout, proc.stderr):
            with contextlib.suppress(OSError):
                f.close()  # type: ignore[union-attr]
    return ExecResult(
        exit_code=124 if timed_out else proc.returncode,
        stdout=out.value().decode(errors="replace"),
        stderr=err.value().decode(errors="replace"),
        duration_sec=time.monotonic() - start,
        timed_out=timed_out,
        truncated_bytes=out.dropped + err.dropped,
    )


class LocalSandbox(Sandbox):
    def __init__(
        self,
        root: Path,
        store: SnapshotStore,
        base_env: dict[str, str] | None = None,
        *,
        hidden: tuple[Path, ...] | None = None,
        network: bool = True,
        limits: tuple[int, int] | None = None,
        isolation: str = "unshare",
        pid_namespace: bool = True,
        cgroup: Cgroup | None = None,
    ) -> None:
        self.root = root
        self.cgroup = cgroup  # caps every command's processes and memory (None: no caps)
        self.base_env = dict(base_env or {})
        """The task's ``[environment] env``: under every command, like a container's env."""
        self.limits = limits
        """(max files, max bytes) of a snapshot of the workspace; None: unlimited."""
        self._store = store
        self.hidden = hidden
        """Paths covered in every command's mount namespace; None: not hardened (trusted)."""
        self.network = network
        self.isolation = isolation if hidden is not None else "none"
        """How commands are isolated: ``bwrap``, ``unshare`` or ``none`` (see ``_isolation``)."""
        self.pid_namespace = pid_namespace
        self.folder: WrittenFolder | None = None
        """The workspace as the provider wrote it from a snapshot (None: not from one)."""
        self.on_close: Callable[[LocalSandbox], None] | None = None
        """The provider's chance to keep the workspace (recycling) before the rest goes."""
        self.workdir = str(root / "workspace")
        self.scratch = str(root / "scratch")
        self.python = sys.executable
        Path(self.workdir).mkdir(parents=True, exist_ok=True)
        Path(self.scratch).mkdir(parents=True, exist_ok=True)
        self._closed = False

    def _resolve(self, path: str) -> Path:
        """The host path of ``path`` as a command sees it: relative to the workspace; under
        bubblewrap, ``/tmp`` is the sandbox's own ``tmp`` folder."""
        p = Path(os.path.normpath(Path(self.workdir) / path))
        if self.hidden is not None and self.isolation == "bwrap":
            tmp = Path("/tmp")
            if (p == tmp or tmp in p.parents) and not _below(p, self.root):
                return self.root / "tmp" / p.relative_to(tmp)
        return p

    def _writable(self, target: Path, shown: str) -> Path | None:
        """``target`` if the engine may write it for a hardened sandbox: below the sandbox
        (returned), or, under unshare, where the command could write itself (None: write
        it plainly); else :class:`UnsafeFile`."""
        if _below(target, self.root) or self.isolation == "bwrap":
            return write_path(self.root, target, shown)
        read_path(self.root, target, self.hidden or (), shown, follow=True)  # not hidden
        return None

    def _check_open(self) -> None:
        if self._closed:
            raise SandboxError(f"sandbox {self.root} is closed")

    def exec(
        self,
        cmd: str | list[str],
        *,
        timeout: float | None = None,
        stdin: str | bytes | None = None,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
    ) -> ExecResult:
        self._check_open()
        inherited = {k: os.environ[k] for k in ENV_ALLOW if k in os.environ}
        full_env = {
            **inherited, "HOME": str(self.root / "home"), **self.base_env, **(env or {})
        }  # fmt: skip
        Path(full_env["HOME"]).mkdir(exist_ok=True)
        argv = ["bash", "-c", cmd] if isinstance(cmd, str) else list(cmd)
        where = self._resolve(cwd or self.workdir)
        if self.hidden is not None and (self.isolation == "bwrap" or self.pid_namespace):
            return self._exec_isolated(argv, where, timeout, stdin, full_env)
        argv = self.cgroup.wrap(argv) if self.cgroup is not None else argv
        return local_run(argv, cwd=where, timeout=timeout, stdin=stdin, env=full_env)

    def _exec_isolated(
        self,
        argv: list[str],
        where: Path,
        timeout: float | None,
        stdin: str | bytes | None,
        env: dict[str, str],
    ) -> ExecResult:
        """Run under bubblewrap or unshare with the keyring filter (``_seccomp``). Nothing on
        the status pipe (bwrap: the command's ``exit-code``; unshare: the launcher's
        :data:`STARTED`, filter on) means a namespace or the filter could not be set up:
        the harness's error, not the command's (which never holds the pipe)."""
        info_r, info_w = os.pipe()
        bwrap = self.isolation == "bwrap"
        rules = filter_fd() if bwrap else -1
        try:
            if bwrap:
                wrapped = bwrap_argv(self.root, self.hidden or (), argv, network=self.network,
                                     cwd=str(where), pid_namespace=self.pid_namespace,
                                     info_fd=info_w, search_path=env.get("PATH", ""),
                                     seccomp_fd=rules)  # fmt: skip
            else:
                wrapped = unshare_argv(self.root, self.hidden or (), argv, network=self.network,
                                       launcher=launcher_argv(info_w))  # fmt: skip
            wrapped = self.cgroup.wrap(wrapped) if self.cgroup is not None else wrapped
            res = local_run(wrapped, cwd=where, timeout=timeout, stdin=stdin, env=env,
                            pass_fds=(info_w, rules) if bwrap else (info_w,))  # fmt: skip
            os.close(info_w)
            info_w = -1
            os.set_blocking(info_r, False)
            status = b""
            with contextlib.suppress(BlockingIOError):
                while chunk := os.read(info_r, 4096):
                    status += chunk
            started = (b'"exit-code"' if bwrap else STARTED) in status
        finally:
            for fd in (info_r, rules, info_w):
                if fd >= 0:
                    os.close(fd)
        if not started and not res.timed_out:
            tag = ("bwrap:", "bubblewrap") if bwrap else ("evoround-seccomp:", "unshare")
            why = next((ln for ln in res.stderr.splitlines() if ln.startswith(tag[0])), "")
            raise SandboxError(f"sandbox {self.root.name}: {tag[1]} could not start the "
                               f"command: {why or res.stderr.strip()[:300]}")  # fmt: skip
        return res

    def expose_endpoint(self, url: str) -> str:
        """A host endpoint is reachable only through the host's network: keep it."""
        self.network = True
        return url

    def read_file(
        self, path: str, *, limit: int = READ_LIMIT, follow_symlinks: bool = False
    ) -> bytes:
        self._check_open()
        target = self._resolve(path)
        if self.hidden is not None:  # hardened: nothing hidden, no planted link (_confine)
            target = read_path(self.root, target, self.hidden, path, follow=follow_symlinks)
        return safe_read(target, limit=limit, follow_symlinks=follow_symlinks)

    def write_file(self, path: str, data: str | bytes) -> None:
        self._check_open()
        target = self._resolve(path)
        raw = data.encode() if isinstance(data, str) else data
        if self.hidden is not None:  # hardened: below the sandbox, through no link
            inside = self._writable(target, path)
            if inside is not None:
                write_new(self.root, inside, raw)
                return
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(raw)

    def copy_in(self, src_dir: str, dest: str) -> None:
        self._check_open()
        target = self._resolve(dest)
        if self.hidden is not None:
            inside = self._writable(target, dest)
            if inside is not None:
                copy_tree(self.root, Path(src_dir), inside)
                return
        shutil.copytree(src_dir, target, dirs_exist_ok=True, symlinks=True)

    def snapshot(self, label: SnapshotLabel) -> Snapshot:
        self._check_open()
        max_files, max_bytes = self.limits or (None, None)
        with self.cgroup.frozen() if self.cgroup is not None else contextlib.nullcontext():
            manifest, size, files = self._store.capture_dir(
                Path(self.workdir), max_files=max_files, max_bytes=max_bytes
            )
        return self._store.register(label, BACKEND, manifest, size_bytes=size, files=files)

    def close(self) -> None:
        if not self._closed:
            self._closed = True
            if self.cgroup is not None:
                self.cgroup.remove()  # what a persistent agent left running goes first
            if self.on_close is not None:
                self.on_close(self)
            shutil.rmtree(self.root, ignore_errors=True)
            self._store.forget(self.workdir)  # its hashes can never be asked for again


def git_dirs(path: Path) -> list[Path]:
    """The git folders of the checkout holding ``path`` (its ``.git``; for a worktree, also
    the main repository's), if any: they hold every tracked file of the checkout, hidden
    tests and reference solutions included (``git show HEAD:.../solution/...``)."""
    with contextlib.suppress(OSError, ValueError):
        for d in [path, *path.parents]:
            g = d / ".git"
            if g.is_dir():
                return [g]
            if g.is_file():
                text = g.read_text(encoding="utf-8", errors="replace").strip()
                if not text.startswith("gitdir:"):
                    return []
                gd = (d / text.split(":", 1)[1].strip()).resolve()
                common = gd / "commondir"
                if common.is_file():
                    return [gd, (gd / common.read_text(encoding="utf-8").strip()).resolve()]
                return [gd]
    return []


OWNER_FILE = "owner.pid"
"""In each sandbox folder: the pid of the engine that made it (a SIGKILL skips ``close``)."""


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:  # someone else's live process
        return True
    return True


def sweep_orphans(base_dir: Path) -> list[Path]:
    """Remove sandbox folders whose engine is gone (killed with -9: nothing closed them).

    Only folders that name their owner are touched, and only when that pid is dead, so a
    concurrent run (another job, another user) keeps its sandboxes.
    """
    removed: list[Path] = []
    for owner in base_dir.glob(f"*/{OWNER_FILE}"):
        try:
            pid = int(owner.read_text(encoding="utf-8").strip())
        except (OSError, ValueError):
            continue
        if pid != os.getpid() and not _alive(pid):
            shutil.rmtree(owner.parent, ignore_errors=True)
            removed.append(owner.parent)
    return removed


class LocalProvider(SandboxProvider):
    name = BACKEND

    def __init__(
        self,
        store: SnapshotStore,
        base_dir: Path | None = None,
        *,
        harden: bool | None = None,
        hidden: list[Path] | None = None,
        persistent: bool = False,
    ) -> None:
        """``harden``: None = as ``EVOROUND_LOCAL_ISOLATION`` says (default: the best
        mechanism that works here), False = not at all; ``hidden``: more paths the agent
        must not see (the job directory); ``persistent``: the agent keeps processes between
        commands (a tmux server), so no per-command pid namespace (bubblewrap only; with
        unshare such an agent runs unhardened)."""
        self.store = store
        self.parent = Path(base_dir or Path(tempfile.gettempdir()) / "evoround-sandboxes")
        self.parent.mkdir(parents=True, exist_ok=True)
        # unpredictable; and the common parent of every provider's sandboxes is covered
        # in hardened commands, so no sandbox sees another (or a verifier's clone)
        sweep_orphans(self.parent)
        self.base_dir = Path(tempfile.mkdtemp(prefix="job-", dir=self.parent))
        # who owns these sandboxes: a run killed with -9 leaves them to the next run
        (self.base_dir / OWNER_FILE).write_text(str(os.getpid()), encoding="utf-8")
        from evoround.settings import settings

        if harden is False:
            self.isolation = "none"
        else:
            self.isolation = choose_isolation(settings().local_isolation)
            if harden and self.isolation == "none":
                self.isolation = "unshare" if namespaces_available() else "none"
        if persistent and self.isolation == "unshare":
            self.isolation = "none"  # unshare's pid namespace would kill the tmux server
        self.harden = self.isolation != "none"
        self.persistent = persistent
        sweep_cgroups()
        self.limits_how = cgroups_available()  # how pids/memory_mb bind (None: they do not)
        self._hidden = [Path(p) for p in hidden or []]
        self._recycled: list[WrittenFolder] = []
        self._lock = threading.Lock()

    def hidden_paths(self, task: Task) -> tuple[Path, ...]:
        """What a hardened command must not see (existing paths only, outermost first)."""
        from evoround.settings import evoround_home
        from evoround.tasks import library_path

        cands = [
            self.parent,
            self.store.root,
            evoround_home(),
            library_path(),
            task.path.parent,
            task.path,
            *self._hidden,
            *git_dirs(library_path()),
            *git_dirs(task.path),
        ]
        out: list[Path] = []
        for c in cands:
            with contextlib.suppress(OSError):
                c = c.resolve()
                if c.is_dir() and c != Path("/") and c not in out:
                    out.append(c)
        # a covered path must not hide the sandbox's own root's ancestors above base_dir
        return tuple(p for p in out if not _contains(p, Path(tempfile.gettempdir())))

    def close(self) -> None:
        shutil.rmtree(self.base_dir, ignore_errors=True)

    def has_snapshot(self, snapshot: Snapshot) -> bool:
        return (self.store.root / "manifests" / f"{snapshot.locator}.json").is_file()

    def create(self, task: Task, name: str, snapshot: Snapshot | None = None) -> Sandbox:
        root = Path(tempfile.mkdtemp(prefix=name.replace("/", "_") + "-", dir=self.base_dir))
        env = task.config.environment
        sb = LocalSandbox(
            root,
            self.store,
            resolve_host_env(env.env),
            hidden=self.hidden_paths(task) if self.harden else None,
            isolation=self.isolation,
            pid_namespace=not self.persistent,
            cgroup=make_cgroup(env.pids, env.memory_mb) if self.limits_how else None,
            network=env.network,
            limits=(env.max_workspace_files, env.max_workspace_mb << 20),
        )
        try:  # a sandbox never handed out is closed here: its cgroup goes with it
            if snapshot is None and task.workspace_dir.is_dir():
                shutil.copytree(task.workspace_dir, sb.workdir, dirs_exist_ok=True, symlinks=True)
            elif snapshot is not None:
                if snapshot.backend != BACKEND:
                    raise SandboxError(f"snapshot {snapshot.id} is a {snapshot.backend} snapshot")
                check_content(self.store, snapshot)
                self._write_workspace(sb, snapshot)
        except BaseException:
            sb.close()
            raise
        return sb

    @property
    def recycles(self) -> bool:
        """Whether closed workspaces may be recycled: only with bubblewrap and a pid
        namespace per command, where nothing a command started outlives it and its own
        folder is the only place it can write (so no hard link into the workspace can be
        kept anywhere a later command reaches; unshare leaves the host writable)."""
        return self.isolation == "bwrap" and not self.persistent

    def _write_workspace(self, sb: LocalSandbox, snapshot: Snapshot) -> None:
        """The snapshot into the new sandbox's workspace: from a recycled folder holding it
        or its parent when one is kept (only the difference is written), else whole."""
        folder = self._take_recycled(snapshot)
        ws = Path(sb.workdir)
        ws.rmdir()
        if folder is None:
            folder = WrittenFolder(ws)
            ws.mkdir()
            folder.write(self.store, snapshot.locator, None)
        else:
            os.rename(folder.ws, ws)  # the same file system: entries and their stamps stay
            with contextlib.suppress(OSError):
                folder.ws.parent.rmdir()  # the empty recycled-* holder
            folder.ws = ws
            folder.write(self.store, snapshot.locator, folder.holds or None)
        folder.written_bytes = snapshot.size_bytes
        folder.holds = None  # the sandbox may change it from now on
        sb.folder = folder
        if self.recycles and snapshot.size_bytes >= RECYCLE_MIN_BYTES:
            sb.on_close = self._recycle

    def _take_recycled(self, snapshot: Snapshot) -> WrittenFolder | None:
        parent = None
        if snapshot.parent:
            with contextlib.suppress(KeyError):
                parent = self.store.get(snapshot.parent).locator
        with self._lock:
            for want in (snapshot.locator, parent):
                for f in self._recycled:
                    if want and f.holds == want:
                        self._recycled.remove(f)
                        return f
            return self._recycled.pop() if self._recycled else None

    def _recycle(self, sb: LocalSandbox) -> None:
        """A closed sandbox's workspace (its commands all dead: see :attr:`recycles`), moved
        out of the sandbox and repaired to its snapshot (:meth:`WrittenFolder.repair`), for
        the next sandbox of a child snapshot: a round boundary then writes what the round
        changed instead of the whole workspace, and deletes nothing big."""
        folder = sb.folder
        if folder is None:
            return
        keep: Path | None = None
        try:
            keep = Path(tempfile.mkdtemp(prefix="recycled-", dir=self.base_dir))
            os.rename(folder.ws, keep / "ws")
            folder.ws = keep / "ws"
            ok = folder.repair(self.store)
        except Exception:  # noqa: BLE001 - a round's deadline, a provider closed meanwhile
            ok = False  # never the close's failure: the folder is simply not kept
        if not ok:
            if keep is not None:
                shutil.rmtree(keep, ignore_errors=True)
            return
        with self._lock:
            self._recycled.append(folder)
            old = self._recycled[:-MAX_RECYCLED]
            del self._recycled[: len(old)]
        for f in old:
            shutil.rmtree(f.ws.parent, ignore_errors=True)
