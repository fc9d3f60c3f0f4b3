"""Docker sandbox: one container per attempt, isolated verification containers.

This is the backend for untrusted agents. How it maps the :class:`Sandbox` contract:

- **Container per attempt.** ``sleep infinity`` under ``--init`` (zombies reaped),
  labels ``evoround=1`` / job / task / attempt for discovery and ``evoround cleanup``,
  the task's cpus / memory (no swap) / pids limits, ``network=none`` unless the task
  opts in, never privileged, ``no-new-privileges``.
- **exec** runs ``timeout -k`` *inside* the container under a tiny ``sh`` wrapper
  that, like the local backend, kills the command's whole process group when it
  ends, so neither a timeout nor a finished command leaves children running.
  Timeout, OOM kill (cgroup ``oom_kill`` counter) and a dead container
  (:class:`SandboxUnavailable`) are told apart.
- **scratch** (``/evoround/scratch``) is an anonymous volume: outside the
  workspace, reachable by ``put_archive``/``get_archive`` (a tmpfs is not: the
  daemon would write *under* it), never part of a ``docker commit``, removed with
  the container.
- **Snapshots** have two modes (``snapshot_mode``):

  ``workspace`` (default) streams the workspace out with ``get_archive`` and stores
  it content-addressed in the :class:`SnapshotStore` (the same manifests as the
  local backend, so diffs between rounds work the same on both). A clone is a
  fresh container of the *pristine task image* with that workspace put back, so
  nothing the agent changed outside the workspace (site-packages, ``.pth`` files,
  a patched pytest) can reach the verifier. It costs ~0.1 s.

  ``commit`` runs ``docker commit`` on the live container (paused, never stopped)
  and clones start from that image: the whole filesystem is kept. On storage
  drivers without a native diff (fuse-overlayfs, vfs: Docker-in-Docker) the
  daemon walks both trees, which takes seconds per boundary; on overlay2 it is
  fast. Use it when agents must install things outside the workspace.

- **Prestarted containers.** Starting a container is the slowest step left
  (~0.4 s here), so the provider keeps one started, untouched spare container per
  task image and configuration, refilled in the background; a clone takes the
  spare and only has its workspace put in. Spares carry ``evoround.attempt=spare``
  (labels cannot change later); the container is renamed to its real name.
- **Cleanup.** ``close()`` hands removal to a background thread (off the round's
  hot path); :meth:`DockerProvider.close` (also run at interpreter exit) waits for
  it and removes spares, live containers, and ``commit``-mode agent snapshot images
  unless ``keep_snapshots``. Reference snapshot images are a cache across runs and
  stay. A SIGKILLed engine leaves labelled containers for ``evoround cleanup``.
"""

from __future__ import annotations

import contextlib
import os
import re
import socket
import tarfile
import tempfile
import threading
import time
import uuid
from collections.abc import Callable
from pathlib import Path, PurePosixPath
from typing import Any, Protocol
from urllib.parse import urlsplit

import docker
import docker.errors

from evoround.deadline import DeadlineExceeded
from evoround.sandboxes.common import (
    READ_LIMIT,
    CappedOutput,
    ExecResult,
    Sandbox,
    SandboxError,
    SandboxUnavailable,
    UnsafeFile,
    VerifierPython,
    remove_tree,
)
from evoround.sandboxes.docker._archive import (
    IterReader,
    extract_workspace,
    stream_chunks,
    tar_of_dir,
    tar_of_file,
)
from evoround.sandboxes.docker._config import (
    BACKEND,
    LABEL,
    LABEL_ATTEMPT,
    LABEL_JOB,
    LABEL_TASK,
    SCRATCH,
    SNAPSHOT_REPOSITORY,
    SnapshotMode,
    is_ip,
    safe_name,
)
from evoround.sandboxes.docker._exec import (
    CONT_HARNESS,
    EXEC_WRAPPER,
    HOST_SLACK_SEC,
    KILL_GRACE_SEC,
    OOM_PROBE,
    PRISTINE_WRAPPER,
    FramesTimeout,
    read_frames,
)
from evoround.sandboxes.docker._hostws import MODE_MASK, HostFolder
from evoround.sandboxes.docker._images import (
    ROLE_LABEL,
    TaskImage,
)
from evoround.sandboxes.docker._pristine import PristinePython
from evoround.sandboxes.docker._relay import EndpointRelay
from evoround.sandboxes.docker._wedge import WEDGE_SLACK_SEC, WedgeBreaker, kill_members
from evoround.snapshots import (
    Snapshot,
    SnapshotKind,
    SnapshotLabel,
    SnapshotStore,
    WorkspaceRejected,
)
from evoround.tasks import Task

_IRREGULAR = (1 << 26) | (1 << 25) | (1 << 24) | (1 << 21) | (1 << 19)
"""Go FileMode bits of devices, named pipes, sockets, char devices and irregular files."""


def _discard(stream: Any) -> None:
    """Drop a ``get_archive`` stream without reading it (it may be huge)."""
    close = getattr(stream, "close", None)
    if close is not None:
        with contextlib.suppress(Exception):
            close()


_MODE_DIR = 1 << 31
"""Go's ``os.ModeDir`` in a ``get_archive`` stat."""
_MODE_SYMLINK = 1 << 27
"""Go's ``os.ModeSymlink``."""


def _unreadable(target: str, mode: int, size: int, limit: int) -> OSError | None:
    """Why the (not a link) path a ``get_archive`` stat describes is not read, if so:
    a directory, not a regular file, or over ``limit`` (refused before any transfer)."""
    if mode & _MODE_DIR:
        return IsADirectoryError(target)
    if mode & _IRREGULAR:
        return UnsafeFile(f"{target}: not a regular file")
    if size > limit:
        return UnsafeFile(f"{target}: {size} bytes, over the {limit}-byte limit")
    return None


def _only_file(stream: Any, target: str, limit: int) -> bytes:
    """The content of the one regular file a ``get_archive`` stream holds, at most
    ``limit`` bytes (it may have grown since the stat)."""
    with tarfile.open(fileobj=IterReader(stream), mode="r|") as tf:
        for member in tf:
            if not member.isreg():
                raise UnsafeFile(f"{target}: not a regular file")
            f = tf.extractfile(member)
            if f is not None:
                data = f.read(limit + 1)
                if len(data) > limit:
                    raise UnsafeFile(f"{target}: over the {limit}-byte limit")
                return data
    raise FileNotFoundError(target)


STOP_STRAYS = r"""keep=""; best=""
for d in /proc/[0-9]*; do
  read -r st < "$d/stat" 2>/dev/null || continue
  set -- ${st##*) }
  [ "$2" = 1 ] || continue
  if [ -z "$best" ] || [ "${20}" -lt "$best" ]; then best=${20}; keep=${d#/proc/}; fi
done
mine=" $$ "; p=$$
while [ "$p" -gt 1 ] && read -r st < "/proc/$p/stat" 2>/dev/null; do
  set -- ${st##*) }; p=$2; mine="$mine$p "
done
for pass in 1 2; do
  for d in /proc/[0-9]*; do
    p=${d#/proc/}
    case "$mine" in *" $p "*) continue ;; esac
    [ "$p" = 1 ] || [ "$p" = "$keep" ] || kill -KILL "$p" 2>/dev/null
  done
done
true
"""
"""Run by :meth:`DockerSandbox.stop_strays` (plain sh: the image may have nothing else)."""


class ContainerOwner(Protocol):
    """What a container needs of the provider that made it (:class:`DockerProvider`, which
    imports this module: a protocol here keeps the import one-way)."""

    store: SnapshotStore
    job: str
    snapshot_mode: SnapshotMode

    @property
    def client(self) -> docker.DockerClient: ...

    def track_image(self, image: str, kind: SnapshotKind) -> None:
        """Remember a snapshot image this run made (removed at close unless kept)."""

    def release_sandbox(self, sb: DockerSandbox) -> None:
        """Remove a closed sandbox's container."""


class DockerSandbox(Sandbox):
    """One running container. Created by :meth:`DockerProvider.create`."""

    def __init__(
        self,
        provider: ContainerOwner,
        container_id: str,
        name: str,
        task: Task,
        image: TaskImage,
        pristine: PristinePython | None = None,
        folder: HostFolder | None = None,
    ) -> None:
        self._provider = provider
        self.folder = folder
        """The host folder mounted at the workdir (host-folder workspaces), else None."""
        self.pristine = pristine
        """Commit mode: the task image's untouched tools, mounted read-only (see _pristine)."""
        self.container_id = container_id
        self.name = name
        self.task = task
        self.image = image
        self.workdir = task.config.environment.workdir
        self.scratch = SCRATCH
        self.python = "python3"
        self.bytecode: str | None = None
        """Where the image's read-only bytecode cache is mounted (see ``_bytecode``)."""
        self._closed = False
        self._oom_kills = 0  # a fresh container's cgroup starts at zero
        self._lock = threading.Lock()
        self._relays: list[EndpointRelay] = []
        self._init_pid: int | None = None
        """Host pid of the container's init, read before the first command (see ``_wedge``)."""

    @property
    def _api(self) -> docker.APIClient:
        return self._provider.client.api

    def __repr__(self) -> str:
        return f"DockerSandbox({self.name!r}, {self.container_id[:12]})"

    # -- helpers --
    def _check_open(self) -> None:
        if self._closed:
            raise SandboxError(f"sandbox {self.name} is closed")

    def _resolve(self, path: str) -> str:
        p = PurePosixPath(path)
        full = p if p.is_absolute() else PurePosixPath(self.workdir) / p
        return os.path.normpath(str(full))

    def _state(self) -> dict[str, Any] | None:
        try:
            return dict(self._api.inspect_container(self.container_id)["State"])
        except docker.errors.NotFound:
            return None

    def _unavailable(self, what: str, cause: BaseException | None = None) -> SandboxUnavailable:
        state = self._state()
        if state is None:
            why = "the container no longer exists"
        elif not state.get("Running"):
            why = (
                f"the container is {state.get('Status')} (exit code {state.get('ExitCode')}, "
                f"OOMKilled={state.get('OOMKilled')}, error={state.get('Error') or '-'})"
            )
        else:
            why = f"the Docker daemon failed: {cause}"
        return SandboxUnavailable(f"sandbox {self.name}: {what}: {why}")

    def _api_call(self, what: str, fn: Callable[[], Any]) -> Any:
        """Run a daemon call; a vanished or stopped container becomes SandboxUnavailable."""
        try:
            return fn()
        except docker.errors.NotFound as e:
            if self._state() is None:
                raise self._unavailable(what, e) from e
            raise
        except docker.errors.APIError as e:
            state = self._state()
            if state is None or not state.get("Running"):
                raise self._unavailable(what, e) from e
            raise SandboxError(f"sandbox {self.name}: {what}: {e}") from e
        except (ConnectionError, OSError) as e:
            raise SandboxUnavailable(f"sandbox {self.name}: {what}: daemon unreachable: {e}") from e

    # -- exec --
    def _raw_exec(
        self,
        argv: list[str],
        *,
        stdin: bytes | None,
        cwd: str | None,
        env: dict[str, str] | None,
        host_deadline: float | None,
        guarded: bool = False,
    ) -> tuple[int | None, bytes, bytes, int]:
        """Run ``argv``; ``guarded``: a wrapped command (see :meth:`_read_guarded`)."""
        exec_id = self._api_call(
            "exec",
            lambda: self._api.exec_create(
                self.container_id,
                argv,
                stdin=stdin is not None,
                workdir=cwd,
                environment=env or None,
            )["Id"],
        )
        raw_sock = self._api_call("exec", lambda: self._api.exec_start(exec_id, socket=True))
        sock: socket.socket = getattr(raw_sock, "_sock", raw_sock)
        writer: threading.Thread | None = None
        try:
            if stdin is not None:

                def feed() -> None:
                    with contextlib.suppress(OSError):
                        sock.sendall(stdin)
                    with contextlib.suppress(OSError):
                        sock.shutdown(socket.SHUT_WR)

                writer = threading.Thread(target=feed, daemon=True)
                writer.start()
            try:
                if guarded:
                    out_sink, err_sink, code = self._read_guarded(sock, host_deadline)
                    if code is not None:
                        return code, out_sink.value(), err_sink.value(), 0
                else:
                    out_sink, err_sink = read_frames(sock, host_deadline)
            except TimeoutError:
                raise self._unavailable(
                    "exec did not return after its in-container timeout; the daemon or "
                    "container is hung",
                ) from None
            except OSError as e:
                raise self._unavailable("exec stream broke", e) from e
        finally:
            with contextlib.suppress(OSError):
                raw_sock.close()
            with contextlib.suppress(OSError):
                sock.close()
            if writer is not None:
                writer.join(timeout=5)
        info = self._api_call("exec", lambda: self._api.exec_inspect(exec_id))
        dropped = out_sink.dropped + err_sink.dropped
        return info.get("ExitCode"), out_sink.value(), err_sink.value(), dropped

    def _read_guarded(
        self, sock: socket.socket, host_deadline: float | None
    ) -> tuple[CappedOutput, CappedOutput, int | None]:
        """A wrapped command's stream. The wrapper and its ``timeout`` share the container
        with the command, which may SIGSTOP them: every :data:`TICK_SEC` stopped ones are
        continued, and a stream still open at the host's deadline in a container that answers
        at once is the command's doing (its timeout, exit 124, every process of the container
        but init killed), not a hung daemon. Third value: that 124, else None."""
        try:
            out, err = read_frames(sock, host_deadline, tick=self._continue_harness)
            return out, err, None
        except FramesTimeout as late:
            try:
                code, _, _, _ = self._raw_exec(
                    ["true"], stdin=None, cwd="/", env=None, host_deadline=time.monotonic() + 20
                )
            except SandboxError:
                code = None
            if code != 0:
                raise
            self.stop_strays()
            return late.out, late.err, 124

    def _continue_harness(self) -> None:
        """Continue stopped exec wrappers (see ``_exec.CONT_HARNESS``); best effort."""
        with contextlib.suppress(SandboxError):
            self._raw_exec(
                ["sh", "-c", CONT_HARNESS],
                stdin=None,
                cwd="/",
                env=None,
                host_deadline=time.monotonic() + 20,
            )

    def _oom_killed_since_last_check(self) -> bool:
        try:
            code, out, _, _ = self._raw_exec(
                ["sh", "-c", OOM_PROBE], stdin=None, cwd="/", env=None, host_deadline=None
            )
        except SandboxError:
            return False
        m = re.search(rb"oom_kill (\d+)", out)
        if code != 0 or m is None:
            return False
        count = int(m.group(1))
        new = count > self._oom_kills
        self._oom_kills = count
        return new

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
        argv = ["bash", "-c", cmd] if isinstance(cmd, str) else list(cmd)
        data = stdin.encode() if isinstance(stdin, str) else stdin
        start = time.monotonic()
        host_deadline = (
            None if timeout is None else start + timeout + KILL_GRACE_SEC + HOST_SLACK_SEC
        )
        with self._breaker(timeout) as breaker:
            try:
                code, out, err, dropped = self._raw_exec(
                    self._wrapped(argv, timeout),
                    stdin=data,
                    cwd=self._resolve(cwd) if cwd else self.workdir,
                    env=env,
                    host_deadline=host_deadline,
                    guarded=timeout is not None,
                )
            except SandboxError:
                if not breaker.fired:
                    raise
                code, out, err, dropped = 124, b"", b"", 0
        if breaker.fired:  # overran its timeout in a container its own processes wedged
            code = 124
        elapsed = time.monotonic() - start
        code = self._own_exit_code(code, argv)
        timed_out = timeout is not None and code in (124, 137) and elapsed >= timeout - 0.05
        oom = False
        if not timed_out and code == 137:
            oom = self._oom_killed_since_last_check()
        return ExecResult(
            exit_code=124 if timed_out else code,
            stdout=out.decode(errors="replace"),
            stderr=err.decode(errors="replace"),
            duration_sec=elapsed,
            timed_out=timed_out,
            oom_killed=oom,
            truncated_bytes=dropped,
        )

    def _breaker(self, timeout: float | None) -> WedgeBreaker:
        """The host-side breaker of a timed command (see ``_wedge``); none without a timeout."""
        pid = self._host_init_pid() if timeout is not None else 0
        delay = (timeout or 0) + KILL_GRACE_SEC + WEDGE_SLACK_SEC
        return WedgeBreaker(pid, delay, self._daemon_alive, self.name)

    def _host_init_pid(self) -> int:
        """Host pid of the container's init (0: unknown), read once, before anything the
        agent runs could wedge the daemon's answers about this container."""
        if self._init_pid is None:
            state = self._state() or {}
            self._init_pid = int(state.get("Pid") or 0)
        return self._init_pid

    def _daemon_alive(self) -> bool:
        """Whether the Docker daemon answers a ping (a call that takes no container's lock)."""
        try:
            return bool(self._api.ping())
        except Exception:  # noqa: BLE001 - any failure means: not known to be alive
            return False

    def _wrapped(self, argv: list[str], timeout: float | None) -> list[str]:
        """``argv`` under the in-container timeout wrapper (``_exec``); in commit mode the
        wrapper runs on the pristine tools, which the tested code cannot have replaced."""
        duration = "0" if timeout is None else f"{max(timeout, 0.001):.3f}"
        if self.pristine is None:
            wrapped = ["sh", "-c", EXEC_WRAPPER, "evoround-exec", str(KILL_GRACE_SEC), duration]
        else:
            pp = self.pristine
            wrapped = [
                *pp.run(pp.sh),
                "-c",
                PRISTINE_WRAPPER,
                "evoround-exec",
                str(KILL_GRACE_SEC),
                duration,
                pp.loader,
                pp.library_path,
                pp.timeout,
            ]
        return wrapped + argv

    def _own_exit_code(self, code: int | None, argv: list[str]) -> int:
        """``code`` once it is known to be the command's own, not its container's end: the
        exec can end a moment before the daemon marks a killed container as stopped, so a
        kill-like code (or none) is checked against the container's state for a while."""
        if code is None or code >= 125:
            for _ in range(10):
                state = self._state()
                if state is None or not state.get("Running"):
                    raise self._unavailable(f"container died while running {argv[:3]}")
                if code is not None and code < 137:
                    break
                time.sleep(0.2)
        if code is None:
            raise self._unavailable(f"exec of {argv[:3]} ended without an exit code")
        return code

    def verifier_python(self) -> VerifierPython:
        """The image's Python, ``-I``, with its read-only bytecode cache; commit mode: the
        pristine interpreter, ``-I -S``, pristine ``sys.path`` first."""
        if self.pristine is None:
            return VerifierPython(super().verifier_python().argv, pycache=self.bytecode)
        pp = self.pristine
        # The loader reads /etc/ld.so.preload whoever runs it: empty it in this clone first.
        self._put(tar_of_file("/etc/ld.so.preload", b""), "neutralise /etc/ld.so.preload")
        return VerifierPython(
            (*pp.run(pp.python), "-I", "-S"), pp.path_first, pp.path_last, pycache=self.bytecode
        )

    # -- files --
    def read_file(
        self, path: str, *, limit: int = READ_LIMIT, follow_symlinks: bool = False
    ) -> bytes:
        self._check_open()
        target = self._resolve(path)
        for _ in range(16):
            stream, stat = self._archive_of(target)
            mode = int(stat.get("mode", 0))
            if mode & _MODE_SYMLINK and not mode & _MODE_DIR:
                _discard(stream)
                target = self._link_target(target, stat, follow_symlinks)
                continue
            refused = _unreadable(target, mode, int(stat.get("size", 0)), limit)
            if refused is not None:
                _discard(stream)
                raise refused
            return _only_file(stream, target, limit)
        raise OSError(f"too many levels of symbolic links: {path}")

    def _archive_of(self, target: str) -> tuple[Any, dict[str, Any]]:
        """``get_archive`` of ``target``: its tar stream and its stat; a missing path is
        :class:`FileNotFoundError` unless the container itself is gone."""
        try:
            stream, stat = self._api.get_archive(self.container_id, target)
        except docker.errors.NotFound:
            if self._state() is None:
                raise self._unavailable(f"read {target}") from None
            raise FileNotFoundError(target) from None
        except docker.errors.APIError as e:
            raise self._unavailable(f"read {target}", e) from e
        return stream, stat

    def _link_target(self, target: str, stat: dict[str, Any], follow: bool) -> str:
        """Where the link ``target`` points (container path), if links may be followed."""
        if not follow:
            raise UnsafeFile(f"{target}: is a symbolic link; not followed")
        link = stat.get("linkTarget") or ""
        return self._resolve(
            link if link.startswith("/") else str(PurePosixPath(target).parent / link)
        )

    def write_file(self, path: str, data: str | bytes) -> None:
        self._check_open()
        target = self._resolve(path)
        payload = data.encode() if isinstance(data, str) else data
        self._put(tar_of_file(target, payload), f"write {target}")

    def copy_in(self, src_dir: str, dest: str) -> None:
        self._check_open()
        self._put(tar_of_dir(Path(src_dir), self._resolve(dest)), f"copy into {dest}")

    def _put(self, tar: Any, what: str) -> None:
        """Put a tar (bytes, or a file object from :func:`tar_of_dir`, closed after)."""
        body = stream_chunks(tar) if hasattr(tar, "read") else tar
        try:
            ok = self._api_call(what, lambda: self._api.put_archive(self.container_id, "/", body))
        finally:
            if hasattr(tar, "close"):
                tar.close()
        if not ok:
            raise SandboxError(f"sandbox {self.name}: {what}: put_archive refused")

    # -- stray processes --
    def stop_strays(self) -> None:
        """Kill every process in the container but init, the keep-alive (the oldest child
        of init) and the killer with its exec wrapper, twice (a stray may fork as it dies)."""
        with contextlib.suppress(SandboxError):
            self.exec(["sh", "-c", STOP_STRAYS], timeout=30, cwd="/")

    # -- snapshots --
    def snapshot(self, label: SnapshotLabel) -> Snapshot:
        self._check_open()
        if self.folder is not None:
            return self._capture_folder(label, self.folder)
        if self._provider.snapshot_mode is SnapshotMode.commit:
            return self._commit(label)
        store = self._provider.store
        tmp = Path(tempfile.mkdtemp(prefix="evoround-ws-"))
        env = self.task.config.environment
        # Frozen while read (the archive is produced as it streams): a background writer
        # the agent left cannot tear the snapshot.
        self._pause()
        try:
            stream, _ = self._api_call(
                "snapshot", lambda: self._api.get_archive(self.container_id, self.workdir)
            )
            try:
                extract_workspace(
                    stream,
                    tmp,
                    max_files=env.max_workspace_files,
                    max_bytes=env.max_workspace_mb << 20,
                )
            except (WorkspaceRejected, DeadlineExceeded):
                _discard(stream)
                raise
            except (tarfile.TarError, OSError) as e:
                raise SandboxError(f"sandbox {self.name}: unreadable workspace archive: {e}") from e
            finally:
                self._unpause()
            manifest, size, files = store.capture_dir(
                tmp,
                max_files=env.max_workspace_files,
                max_bytes=env.max_workspace_mb << 20,
            )
        finally:
            remove_tree(tmp)
            store.forget(tmp)  # a fresh folder per snapshot: its hashes can never hit again
        return store.register(label, BACKEND, manifest, size_bytes=size, files=files)

    def _capture_folder(self, label: SnapshotLabel, folder: HostFolder) -> Snapshot:
        """Walk the host workspace with the store's stat cache while the container is frozen
        (nothing can change a file, or swap a directory for a link, mid-walk)."""
        env = self.task.config.environment
        self._pause()
        try:
            manifest, size, files = self._provider.store.capture_dir(
                folder.ws,
                max_files=env.max_workspace_files,
                max_bytes=env.max_workspace_mb << 20,
                mode_mask=MODE_MASK,
            )
        finally:
            self._unpause()
        return self._provider.store.register(label, BACKEND, manifest, size_bytes=size, files=files)

    def _pause(self) -> None:
        """Freeze the container for a snapshot. A freeze the kernel could not complete
        ("unable to freeze", seen after agents that signal or stop every process they see)
        while the daemon answers is the container's doing: its processes but init are
        killed from the host (``_wedge.kill_members``) and the freeze is tried once more."""
        for last in (False, True):
            try:
                self._api_call("pause for snapshot", lambda: self._api.pause(self.container_id))
                return
            except SandboxError as e:  # a thaw the daemon reported but had not finished
                if "already paused" in str(e):
                    return
                if last or not self._daemon_alive() or isinstance(e, SandboxUnavailable):
                    raise
                kill_members(self._host_init_pid())

    def _unpause(self) -> None:
        """Thaw, retried until the state says thawed (under load the daemon refuses one
        mid-freeze or reports one done that is not); never raises over a snapshot's error."""
        for delay in (0.05, 0.1, 0.2, 0.4, 0.8, 0):
            try:
                self._api.unpause(self.container_id)
            except docker.errors.NotFound:
                return
            except docker.errors.APIError as e:
                if "is not paused" not in str(e):  # still freezing: again after the delay
                    time.sleep(delay)
                    continue
            with contextlib.suppress(docker.errors.APIError):
                if not (self._state() or {}).get("Paused"):
                    return
            time.sleep(delay)

    def _commit(self, label: SnapshotLabel) -> Snapshot:
        labels = {
            LABEL: "1",
            ROLE_LABEL: "snapshot",
            LABEL_JOB: self._provider.job,
            LABEL_TASK: label.task,
            "evoround.task_digest": label.task_digest,
            "evoround.kind": label.kind.value,
            "evoround.round": str(label.round),
            LABEL_ATTEMPT: label.attempt or "",
            "evoround.parent": label.parent or "",
        }
        tag = (
            f"{safe_name(label.task)}-{label.kind.value}-r{label.round:02d}-{uuid.uuid4().hex[:8]}"
        )
        res = self._api_call(
            "docker commit",
            lambda: self._api.commit(
                self.container_id,
                repository=SNAPSHOT_REPOSITORY,
                tag=tag,
                conf={"Labels": labels},
                pause=True,
            ),
        )
        image = str(res["Id"])
        info = self._api.inspect_image(image)
        parent_size = int(self._api.inspect_image(self.image.image_id).get("Size", 0))
        snap = self._provider.store.register(
            label,
            BACKEND,
            image,
            size_bytes=max(0, int(info.get("Size", 0)) - parent_size),
        )
        self._provider.track_image(image, label.kind)
        return snap

    # -- network --
    def expose_endpoint(self, url: str) -> str:
        """Open ``url``'s host and port, and only that, on the container's loopback.

        The container keeps ``network=none``; see :mod:`evoround.sandboxes.docker._relay`.
        A named host is mapped to ``127.0.0.1`` in the container's ``/etc/hosts``,
        so the URL (and TLS verification against its name) is unchanged.
        """
        self._check_open()
        parts = urlsplit(url)
        host = parts.hostname or "127.0.0.1"
        port = parts.port or (443 if parts.scheme == "https" else 80)
        with self._lock:
            if any(r.port == port for r in self._relays):
                return url
        state = self._state() or {}
        pid = int(state.get("Pid") or 0)
        if not pid:
            raise self._unavailable("expose endpoint")
        relay = EndpointRelay(pid=pid, port=port, target=(host, port)).start()
        with self._lock:
            self._relays.append(relay)
        if host != "localhost" and not is_ip(host):
            self.exec(["sh", "-c", f'echo "127.0.0.1 {host}" >> /etc/hosts'], timeout=30)
        return url

    def _close_relays(self) -> None:
        with self._lock:
            relays, self._relays = self._relays, []
        for r in relays:
            r.close()

    # -- lifecycle --
    def close(self) -> None:
        with self._lock:
            if self._closed:
                return
            self._closed = True
        self._close_relays()
        self._provider.release_sandbox(self)
