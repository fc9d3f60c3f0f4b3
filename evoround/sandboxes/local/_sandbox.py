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
import dataclasses
import errno
import json
import logging
import os
import select
import shutil
import signal
import stat
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

from evoround.sandboxes.common import (
    READ_LIMIT,
    CappedOutput,
    ExecResult,
    Sandbox,
    SandboxError,
    UnsafeFile,
    VerifierPython,
    WrittenFolder,
    local_bytecode,
    remove_tree,
)
from evoround.sandboxes.local._cgroup import Cgroup
from evoround.sandboxes.local._client import (
    MAX_REQUEST,
    ExecServer,
    NotStarted,
    ServerFailed,
    ServerUnable,
    feed,
    pump,
)
from evoround.sandboxes.local._confine import copy_tree, read_path, write_new, write_path
from evoround.sandboxes.local._interpreter import site_path
from evoround.sandboxes.local._isolation import (
    bwrap_argv,
    default_signals,
    shown_dirs,
    unshare_argv,
)
from evoround.sandboxes.local._seccomp import STARTED, filter_fd, launcher_argv
from evoround.snapshots import Snapshot, SnapshotLabel, SnapshotStore

BACKEND = "local"

ENV_ALLOW = ("PATH", "LANG", "LC_ALL", "LC_CTYPE", "TERM", "TZ", "USER", "LOGNAME", "SHELL")
"""Host variables a sandboxed command inherits; everything else must be passed explicitly."""


def _below(p: Path, root: Path) -> bool:
    """Whether ``p`` is ``root`` or inside it, by name (no link resolved)."""
    return p == root or root in p.parents


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


def _drain(fd: int) -> bytes:
    """Everything written to a pipe whose writers are all closed (never blocks)."""
    os.set_blocking(fd, False)
    status = b""
    with contextlib.suppress(BlockingIOError):
        while chunk := os.read(fd, 4096):
            status += chunk
    return status


def _poll_ms(left: float) -> int:
    """``poll``'s timeout for ``left`` seconds: whole milliseconds, rounded up, at most an
    hour a call (a bigger one overflows poll's int; the loop asks again)."""
    return max(0, min(int(left * 1000) + 1, 3_600_000))


def wait_exit(proc: subprocess.Popen[bytes], timeout: float | None) -> None:
    """``proc.wait(timeout)`` that hears the end at once: Popen's own sleeps in steps of up
    to 50 ms between checks, so every command that ran longer than that was seen to end
    ~25 ms late on average (a tenth of a small verification). A pidfd becomes readable
    when the process ends; without one (old kernels) Popen's loop is used.
    Raises :class:`subprocess.TimeoutExpired` as ``wait`` does."""
    try:
        fd = os.pidfd_open(proc.pid)
    except (AttributeError, OSError):
        proc.wait(timeout=timeout)
        return
    try:
        poller = select.poll()
        poller.register(fd, select.POLLIN)
        end = None if timeout is None else time.monotonic() + timeout
        while not poller.poll(None if end is None else _poll_ms(end - time.monotonic())):
            if end is not None and time.monotonic() >= end:
                raise subprocess.TimeoutExpired(proc.args, timeout or 0)
    finally:
        os.close(fd)
    proc.wait()


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

    Output is read by two threads into capped sinks (bounded memory, see ``common._capture``);
    once the command and its process group are gone the readers get a short grace, so a
    pipe held open by an escaped background process cannot hang the engine.
    """
    argv = [*default_signals(), *(["bash", "-c", cmd] if isinstance(cmd, str) else cmd)]
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
        threading.Thread(target=pump, args=(proc.stdout, out), daemon=True),
        threading.Thread(target=pump, args=(proc.stderr, err), daemon=True),
    ]
    for t in readers:
        t.start()
    if data is not None and proc.stdin is not None:
        threading.Thread(target=feed, args=(proc.stdin, data), daemon=True).start()
    timed_out = False
    try:
        wait_exit(proc, timeout)
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
            if f is not None:  # both are pipes: never None
                with contextlib.suppress(OSError):
                    f.close()
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
        self.shown: tuple[Path, ...] = ()
        """Host folders bound read-only into every command's view (the bytecode cache)."""
        Path(self.workdir).mkdir(parents=True, exist_ok=True)
        Path(self.scratch).mkdir(parents=True, exist_ok=True)
        self._closed = False
        self.served = self.isolation == "bwrap" and pid_namespace
        """Whether commands go through the sandbox's exec server (``_client``), started
        once; False: each command sets its bubblewrap up itself (unshare, a persistent
        agent's sandbox, or a host where the server cannot give commands namespaces)."""
        self._server: ExecServer | None = None
        self._server_view: tuple[bool, frozenset[Path]] = (False, frozenset())
        self._needs: dict[tuple[str, str], frozenset[Path]] = {}
        self._execs = -1  # not yet counted: EVOROUND_LOCAL_SERVER is read at the first
        self._server_lock = threading.Lock()  # concurrent commands start one server

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
        full_env = {**inherited, "HOME": str(self.root / "home"), **self.base_env, **(env or {})}
        Path(full_env["HOME"]).mkdir(exist_ok=True)
        argv = ["bash", "-c", cmd] if isinstance(cmd, str) else list(cmd)
        where = self._resolve(cwd or self.workdir)
        if self.hidden is not None and (self.isolation == "bwrap" or self.pid_namespace):
            served = self._exec_served(argv, where, timeout, stdin, full_env)
            if served is not None:
                return served
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
            wrapped = self._isolated_argv(argv, where, env, info_w, rules)
            res = local_run(
                wrapped,
                cwd=where,
                timeout=timeout,
                stdin=stdin,
                env=env,
                pass_fds=(info_w, rules) if bwrap else (info_w,),
            )
            os.close(info_w)
            info_w = -1
            started = (b'"exit-code"' if bwrap else STARTED) in _drain(info_r)
        finally:
            for fd in (info_r, rules, info_w):
                if fd >= 0:
                    os.close(fd)
        if not started and not res.timed_out:
            raise self._not_started(res, bwrap)
        return res

    def _exec_served(
        self,
        argv: list[str],
        where: Path,
        timeout: float | None,
        stdin: str | bytes | None,
        env: dict[str, str],
    ) -> ExecResult | None:
        """Run through the sandbox's exec server; None: take the per-command path (the
        sandbox's first command: a verification clone runs one, and a server costs more
        to start than one bubblewrap; no server here; a request too big for one message;
        a folder that is not there, which fails there as it always did)."""
        if not self.served or not where.is_dir() or len(json.dumps([argv, env])) > MAX_REQUEST:
            return None
        with self._server_lock:
            if self._execs < 0:  # read here, not per sandbox: settings() reads files
                from evoround.settings import settings

                how = settings().local_server
                self.served = self.served and how != "off"
                self._execs = 1 if how == "always" else 0
            self._execs += 1
            if not self.served or self._execs == 1:  # a sandbox's only command (a
                return None  # verification) pays no server
            server = self._live_server(self._need(argv, env.get("PATH", "")))
        if server is None:
            return None
        data = stdin.encode() if isinstance(stdin, str) else stdin
        try:
            return server.run(argv, env, str(where), data, timeout)
        except ServerUnable as e:
            self._unable(e)
            return None
        except NotStarted as e:
            raise SandboxError(
                f"sandbox {self.root.name}: bubblewrap could not start the command: {e}"
            ) from None

    def _need(self, argv: list[str], path: str) -> frozenset[Path]:
        """The folders a command's view shows besides the system folders (bubblewrap
        builds the view around the program and ``PATH``, see ``shown_dirs``)."""
        key = (argv[0] if argv and argv[0].startswith("/") else "", path)
        if key not in self._needs:
            shown = shown_dirs([key[0]] if key[0] else [], path, self.hidden or ())
            self._needs[key] = frozenset([*shown, *self.shown])
        return self._needs[key]

    def _live_server(self, need: frozenset[Path]) -> ExecServer | None:
        """The sandbox's server, (re)started when there is none, it is gone or stopped,
        or its view lacks what this command needs (another network, another folder)."""
        s = self._server
        net, view = self._server_view
        if s is not None and s.usable() and net == self.network and need <= view:
            return s
        self._stop_server()
        view = view | need | frozenset(self.shown)
        try:
            self._server = ExecServer(lambda a, fd: self._server_argv(a, view))
        except ServerUnable as e:
            self._unable(e)
            return None
        except ServerFailed as e:
            raise SandboxError(
                f"sandbox {self.root.name}: bubblewrap could not start the command: {e}"
            ) from None
        self._server_view = (self.network, view)
        return self._server

    def _server_argv(
        self, argv: list[str], view: frozenset[Path]
    ) -> tuple[list[str], tuple[int, ...]]:
        """The server's command line: a command's bubblewrap (the filter's descriptor
        inherited) showing ``view``, keeping the capabilities it drops for each command."""
        rules = filter_fd()
        wrapped = bwrap_argv(
            self.root,
            self.hidden or (),
            argv,
            network=self.network,
            cwd=str(self.root),
            search_path=os.pathsep.join(sorted(map(str, view))),
            seccomp_fd=rules,
            show=self.shown,
            keep_caps=True,
        )
        return (self.cgroup.wrap(wrapped) if self.cgroup is not None else wrapped), (rules,)

    def _unable(self, why: Exception) -> None:
        """No server for this sandbox any more: each command sets bubblewrap up itself."""
        logging.getLogger(__name__).warning(
            "local sandbox: the exec server cannot make a command's namespaces here (%s): "
            "each command sets bubblewrap up itself (slower, as safe)",
            why,
        )
        self._stop_server()
        self.served = False

    @property
    def server_pid(self) -> int | None:
        """The exec server's pid on the host while one runs (None: none yet, or gone)."""
        s = self._server
        return s.pid if s is not None and s.usable() else None

    def _stop_server(self) -> None:
        if self._server is not None:
            self._server.stop()
            self._server = None

    def _isolated_argv(
        self, argv: list[str], where: Path, env: dict[str, str], info_w: int, rules: int
    ) -> list[str]:
        """``argv`` under this sandbox's mechanism (the status pipe ``info_w``; bwrap: the
        filter's descriptor ``rules``), inside its cgroup when it has one."""
        if self.isolation == "bwrap":
            wrapped = bwrap_argv(
                self.root,
                self.hidden or (),
                argv,
                network=self.network,
                cwd=str(where),
                pid_namespace=self.pid_namespace,
                info_fd=info_w,
                search_path=env.get("PATH", ""),
                seccomp_fd=rules,
                show=self.shown,
            )
        else:
            wrapped = unshare_argv(
                self.root,
                self.hidden or (),
                argv,
                network=self.network,
                launcher=launcher_argv(info_w),
                status_fd=info_w,
            )
        return self.cgroup.wrap(wrapped) if self.cgroup is not None else wrapped

    def _not_started(self, res: ExecResult, bwrap: bool) -> SandboxError:
        """The harness's error when the mechanism could not start the command, with the
        mechanism's own complaint from stderr when there is one."""
        tag = ("bwrap:",) if bwrap else ("evoround-seccomp:", "evoround-ns:")
        why = next((ln for ln in res.stderr.splitlines() if ln.startswith(tag)), "")
        return SandboxError(
            f"sandbox {self.root.name}: {'bubblewrap' if bwrap else 'unshare'} could not start the "
            f"command: {why or res.stderr.strip()[:300]}"
        )

    def verifier_python(self) -> VerifierPython:
        """The engine's Python, ``-I -S`` with the entries ``site`` would add put back after
        its own (see ``_interpreter``), and the harness's bytecode cache (see
        ``common._bytecode``) bound read-only into the view: bubblewrap, or a sandbox that is
        not hardened. Under unshare the cache's folder is covered, so the runner compiles
        from source as before."""
        site = site_path(self.python)
        plain = (
            VerifierPython((self.python, "-I", "-S"), path_last=site)
            if site is not None
            else super().verifier_python()
        )
        if self.hidden is not None and self.isolation != "bwrap":
            return plain
        from evoround.settings import evoround_home

        cache = local_bytecode(self.python, evoround_home())
        if cache is None:
            return plain
        self.shown = (cache,)
        return dataclasses.replace(plain, pycache=str(cache))

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
            self._stop_server()
            if self.cgroup is not None:
                self.cgroup.remove()  # what a persistent agent left running goes first
            if self.on_close is not None:
                self.on_close(self)
            remove_tree(self.root)
            self._store.forget(self.workdir)  # its hashes can never be asked for again
