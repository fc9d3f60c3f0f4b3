"""The host's side of a sandbox's exec server (``_server``): start it once inside the
sandbox's bubblewrap, send it each command, read what it reports.

Why: a command used to pay the whole set-up (bubblewrap, the view's mounts, the seccomp
filter, the cgroup) every time, tens of milliseconds; the server pays it once per
sandbox and a command then costs a few forks. The command's stdin, stdout and stderr are
pipes the host makes and passes with ``SCM_RIGHTS``, so output capture and its caps stay
here, as on the per-command path (``_sandbox.local_run``), whose result this matches.

A server that is gone or stopped is never the agent's round's ``infra``: before each
command the host checks it (its process, and its state in ``/proc``: ``T`` is stopped)
and starts a new one; a server that dies while a command runs (the OOM killer of the
sandbox's cgroup) ends that command with exit code 137 and a line on stderr saying so,
the command's own failure, and the next command starts a new server.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import select
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, Any

from evoround.sandboxes.common import CappedOutput, ExecResult

SERVER = Path(__file__).with_name("_server.py")
MAX_REQUEST = 150_000
"""Requests (argv and environment as JSON) larger than this take the per-command path:
a ``SOCK_SEQPACKET`` message must fit the socket's buffer."""
LOST = (
    "evoround: the sandbox's exec server died while this command ran (the command's "
    "memory or processes ended it); the next command starts a new one"
)
Wrap = Callable[[list[str], int], tuple[list[str], tuple[int, ...]]]
"""``wrap(argv, sock_fd)``: the confined command line running ``argv`` and the descriptors
it must inherit besides ``sock_fd``."""


class ServerUnable(Exception):
    """The server cannot give commands their namespaces here (this command did not
    start): the caller takes the per-command path."""


class ServerFailed(Exception):
    """bubblewrap could not start the server (its complaint is the message): the
    harness's error, as on the per-command path."""


class NotStarted(Exception):
    """The server could not start this command (bwrap's wording is the message)."""


def pump(stream: Any, sink: CappedOutput) -> None:
    """Read a command's output into its capped sink until every writer is gone."""
    with contextlib.suppress(OSError, ValueError):
        while chunk := stream.read1(1 << 16) if hasattr(stream, "read1") else stream.read(1 << 16):
            sink.feed(chunk)


def feed(pipe: IO[bytes], data: bytes) -> None:
    """Write a command's stdin on its own thread (a command that never reads it must not
    block the engine), then close it so the command sees the end."""
    with contextlib.suppress(OSError, ValueError):
        pipe.write(data)
    with contextlib.suppress(OSError, ValueError):
        pipe.close()


class ExecServer:
    """One live server: its bubblewrap process (in the sandbox's cgroup), the host's end
    of the socket pair, and a thread handing each report to the command waiting for it."""

    def __init__(self, wrap: Wrap) -> None:
        host, inside = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        host.setsockopt(socket.SOL_SOCKET, socket.SO_PASSCRED, 1)  # the server's pid
        self.sock = host
        self._waiting: dict[int, queue.Queue[dict[str, Any]]] = {}
        self._lock = threading.Lock()
        self._ids = 0
        self.alive = True
        self.pid = 0
        """The server's pid on the host (from the credentials of its first message)."""
        code = SERVER.read_text(encoding="utf-8")
        argv, fds = wrap([*_python(), "-c", code, str(inside.fileno())], inside.fileno())
        try:
            self.proc = subprocess.Popen(
                argv,
                stdin=subprocess.DEVNULL,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                pass_fds=(inside.fileno(), *fds),
                start_new_session=True,
                env={"PATH": os.environ.get("PATH", "/usr/bin:/bin")},
            )
        finally:
            inside.close()
            for fd in fds:
                os.close(fd)
        self._ready()
        threading.Thread(target=self._read, daemon=True).start()

    def _ready(self, wait: float = 60.0) -> None:
        """Wait for the server's first message: ``ready`` (and its pid), or why not."""
        end = time.monotonic() + wait
        while time.monotonic() < end and self.proc.poll() is None:
            got, _, _ = select.select([self.sock], [], [], 0.05)
            if got:
                data, anc, _, _ = self.sock.recvmsg(1 << 16, socket.CMSG_SPACE(12))
                msg = json.loads(data) if data else {}
                for level, kind, raw in anc:
                    if (level, kind) == (socket.SOL_SOCKET, socket.SCM_CREDENTIALS):
                        self.pid = struct.unpack("iII", raw[:12])[0]
                if msg.get("ev") == "ready":
                    assert self.proc.stderr is not None  # a pipe
                    threading.Thread(target=_discard, args=(self.proc.stderr,), daemon=True).start()
                    return
                self.stop()
                raise ServerUnable(str(msg.get("err", "the exec server did not start")))
        self.stop()
        err = self.proc.stderr.read().decode(errors="replace") if self.proc.stderr else ""
        raise ServerFailed(err.strip()[-500:] or "the exec server did not start")

    def usable(self) -> bool:
        """Whether the server can take a command now: alive, answering, not stopped."""
        if not self.alive or self.proc.poll() is not None:
            return False
        try:
            stat = Path(f"/proc/{self.pid}/stat").read_text()
        except OSError:
            return False
        return stat.rpartition(")")[2].split()[0] not in ("T", "t", "Z", "X")

    def _read(self) -> None:
        """Dispatch reports; at the end (the server gone) every waiting command hears so."""
        while True:
            try:
                data = self.sock.recv(1 << 16)
            except OSError:
                data = b""
            if not data:
                break
            msg = json.loads(data)
            with self._lock:
                q = self._waiting.get(msg.get("id"))
            if q is not None:
                q.put(msg)
        with self._lock:
            self.alive = False
            for q in self._waiting.values():
                q.put({"ev": "lost"})

    def run(
        self,
        argv: list[str],
        env: dict[str, str],
        cwd: str,
        stdin: bytes | None,
        timeout: float | None,
    ) -> ExecResult:
        """Run one command: its output capped, its namespace killed at the timeout."""
        with self._lock:
            self._ids += 1
            ident = self._ids
            q: queue.Queue[dict[str, Any]] = queue.Queue()
            self._waiting[ident] = q
            if not self.alive:  # gone since the caller's check: nobody else will say so
                q.put({"ev": "lost"})
        payload = json.dumps({"op": "run", "id": ident, "argv": argv, "env": env, "cwd": cwd})
        start = time.monotonic()
        out, err = CappedOutput(), CappedOutput()
        pipes = _Pipes(stdin)
        try:
            try:
                socket.send_fds(self.sock, [payload.encode()], pipes.child_ends())
            except OSError:
                q.put({"ev": "lost"})
            finally:
                pipes.close_child_ends()
            readers = pipes.start(out, err, stdin)
            msg, timed_out = self._wait(q, ident, timeout)
        finally:
            with self._lock:
                self._waiting.pop(ident, None)
        for t in readers:
            t.join(timeout=2)
        pipes.close()
        return _result(msg, timed_out, out, err, time.monotonic() - start)

    def _wait(
        self, q: queue.Queue[dict[str, Any]], ident: int, timeout: float | None
    ) -> tuple[dict[str, Any], bool]:
        try:
            return q.get(timeout=timeout), False
        except queue.Empty:
            self._kill(ident)
            return self._after_kill(q), True
        except BaseException:
            self._kill(ident)
            self._after_kill(q, wait=2)
            raise

    def _after_kill(self, q: queue.Queue[dict[str, Any]], wait: float = 10) -> dict[str, Any]:
        try:
            return q.get(timeout=wait)
        except queue.Empty:  # no answer: stop the server, every namespace goes with it
            self.stop()
            return {"ev": "lost"}

    def _kill(self, ident: int) -> None:
        with contextlib.suppress(OSError):
            self.sock.send(json.dumps({"op": "kill", "id": ident}).encode())

    def stop(self) -> None:
        """End the server and every command it runs (its pid namespace goes with it)."""
        self.alive = False
        with contextlib.suppress(OSError):
            self.sock.shutdown(socket.SHUT_RDWR)
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(self.proc.pid, signal.SIGKILL)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)
        with contextlib.suppress(OSError):
            self.sock.close()


def _python() -> list[str]:
    return [sys.executable or "python3", "-I", "-S"]


def _discard(stream: IO[bytes]) -> None:
    """Read what bubblewrap or the server writes after the start (nothing, normally), so
    neither blocks on a full pipe."""
    with contextlib.suppress(OSError, ValueError):
        while stream.read(1 << 12):
            pass
    with contextlib.suppress(OSError):
        stream.close()


class _Pipes:
    """A command's stdin, stdout and stderr: the child's ends go to the server."""

    def __init__(self, stdin: bytes | None) -> None:
        self.out_r, self.out_w = os.pipe()
        self.err_r, self.err_w = os.pipe()
        self.files: list[IO[bytes]] = []
        if stdin is None:
            self.in_w = -1
            self.child_in = os.open(os.devnull, os.O_RDONLY | os.O_CLOEXEC)
        else:
            self.child_in, self.in_w = os.pipe()

    def child_ends(self) -> list[int]:
        return [self.child_in, self.out_w, self.err_w]

    def close_child_ends(self) -> None:
        for fd in self.child_ends():
            with contextlib.suppress(OSError):
                os.close(fd)

    def start(
        self, out: CappedOutput, err: CappedOutput, data: bytes | None
    ) -> list[threading.Thread]:
        self.files = [os.fdopen(self.out_r, "rb", buffering=0), os.fdopen(self.err_r, "rb", 0)]
        readers = [
            threading.Thread(target=pump, args=(f, sink), daemon=True)
            for f, sink in zip(self.files, (out, err), strict=True)
        ]
        for t in readers:
            t.start()
        if data is not None:
            w = os.fdopen(self.in_w, "wb", buffering=0)
            threading.Thread(target=feed, args=(w, data), daemon=True).start()
        return readers

    def close(self) -> None:
        for f in self.files:
            with contextlib.suppress(OSError):
                f.close()


def _result(
    msg: dict[str, Any], timed_out: bool, out: CappedOutput, err: CappedOutput, took: float
) -> ExecResult:
    ev = msg.get("ev")
    if ev == "nostart" and not timed_out:
        raise NotStarted(str(msg.get("err", "")))
    if ev == "unable" and not timed_out:  # nothing of the command ran
        raise ServerUnable(str(msg.get("err", "")))
    stderr = err.value().decode(errors="replace")
    if timed_out:
        code = 124
    elif ev == "exit":
        code = int(msg.get("code", 255))
    else:  # lost: the server or the command's keeper died
        code = 137
        stderr = f"{stderr}{'' if stderr.endswith(chr(10)) or not stderr else chr(10)}{LOST}\n"
    return ExecResult(
        exit_code=code,
        stdout=out.value().decode(errors="replace"),
        stderr=stderr,
        duration_sec=took,
        timed_out=timed_out,
        truncated_bytes=out.dropped + err.dropped,
    )
