"""The exec server that lives inside a bubblewrap sandbox for the sandbox's whole life.

Run (by the host side, ``_client``) as ``python -I -S -c <this file's text> SOCKET_FD``
under the sandbox's bubblewrap: today's isolation argv (view, covers, seccomp filter,
cgroup, pid/IPC/network namespaces), plus two capabilities, ``CAP_SYS_ADMIN`` and
``CAP_SETPCAP``, that the server and each command's init hold and no command keeps.
Standard library only; everything is imported before the first request, so nothing is
read from the (agent-visible) file system later.

Why: setting up bubblewrap, the view's mounts, the seccomp filter and the cgroup for
every command cost tens of milliseconds. The server pays that once; a command then costs
one vfork (its init was forked before it came) and gets what its own bubblewrap gave it:

- the server forks the command's **init** in a new pid namespace (``unshare`` then
  ``setns`` back, so the next fork can take a new one again), ahead of the command: a
  spare, forked after the previous command's report, waits for it;
- the init (pid 1 there) unshares a mount and an IPC namespace, makes its mounts private,
  mounts the namespace's own ``/proc``, drops every capability (bounding set included),
  waits for its command, starts the **command** as pid 2 (new session, the host's pipes
  as 0/1/2 and nothing else open, its folder and environment), reaps every orphan, and
  when the command ends kills what it left (``kill(-1)``) and reaps it all before it
  reports the exit code (bubblewrap's: 128 + signal when killed): nothing of the command
  outlives the report;
- a ``kill`` request (the host's timeout) kills the init, and the namespace with it.

What an agent can do to the server: nothing it could not do before. Its commands run in
their own pid namespace, so they cannot see or signal the server; the server and the
inits are not dumpable (no ptrace, no ``/proc/1/fd``); the socket is an anonymous pair
whose other end only the host holds. The sandbox's OOM killer can still end the server:
the host then reports the running command as killed (the agent's own failure) and
starts a new server for the next one.

Protocol (``SOCK_SEQPACKET``, JSON messages): the host sends ``{"op": "run", "id",
"argv", "env", "cwd"}`` with the command's stdin, stdout and stderr as ``SCM_RIGHTS``, or
``{"op": "kill", "id"}``; the server says ``{"ev": "ready"}`` once, then per command one
of ``{"id", "ev": "exit", "code"}``, ``{"id", "ev": "nostart", "err"}`` (the program
could not be run: bwrap's wording), ``{"id", "ev": "unable", "err"}`` (no namespaces
here: nothing ran, the host falls back to a bubblewrap per command) or ``{"id", "ev":
"lost"}`` (the init ended without reporting: killed).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import select
import signal
import socket
import subprocess
import sys
from typing import Any

CLONE_NEWNS = 0x00020000
CLONE_NEWIPC = 0x08000000
CLONE_NEWPID = 0x20000000
MS_REC, MS_PRIVATE = 0x4000, 0x40000
MS_NOSUID, MS_NODEV, MS_NOEXEC = 2, 4, 8
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_CAP_AMBIENT = 1, 4, 24, 47
MAX_MSG = 1 << 20
_PYTHONS = (signal.SIGPIPE, signal.SIGXFSZ)
"""Signals Python ignores in itself at start-up; ``restore_signals`` resets them."""
_CAPSET = {"x86_64": 126, "aarch64": 91}

_libc = ctypes.CDLL(None, use_errno=True)


def _check(ret: int, what: str) -> None:
    if ret != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


def _send(sock: socket.socket, msg: dict[str, Any]) -> None:
    with contextlib.suppress(OSError):  # the host is gone: nobody to tell
        sock.send(json.dumps(msg).encode())


def _drop_caps(last_cap: int) -> None:
    """No capability from here on, not even at a root exec: the bounding set first (needs
    ``CAP_SETPCAP``, so it goes last), then ambient, then the three sets."""
    for cap in [c for c in range(last_cap + 1) if c != 8] + [8]:  # 8: CAP_SETPCAP
        _libc.prctl(PR_CAPBSET_DROP, ctypes.c_ulong(cap), 0, 0, 0)
    _libc.prctl(PR_CAP_AMBIENT, ctypes.c_ulong(4), 0, 0, 0)  # PR_CAP_AMBIENT_CLEAR_ALL
    header = (ctypes.c_uint32 * 2)(0x20080522, 0)  # _LINUX_CAPABILITY_VERSION_3, self
    data = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable: all 0
    _check(_libc.syscall(_CAPSET[os.uname().machine], header, data), "capset")


def _code(status: int) -> int:
    """The command's exit code as bubblewrap's init gives it: 128 + signal if killed."""
    if os.WIFSIGNALED(status):
        return 128 + os.WTERMSIG(status)
    return os.waitstatus_to_exitcode(status)


def _enter(last_cap: int) -> None:
    """The init's own set-up: default signals (pid 1 ignores what has no handler, as
    bwrap's init), its mount and IPC namespaces, its ``/proc``, no capability left.

    Every signal ignored here, but SIGPIPE and SIGXFSZ (Python's own, which the command's
    ``restore_signals`` resets), goes back to its default and none stays blocked: the
    command inherits both, and the engine's parent may have ignored some (``nohup``, a
    script's ``&``); Docker starts each command with the defaults, so does this."""
    signal.set_wakeup_fd(-1)
    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGCHLD):
        signal.signal(sig, signal.SIG_DFL)
    for sig in signal.valid_signals() - {signal.SIGKILL, signal.SIGSTOP, *_PYTHONS}:
        with contextlib.suppress(OSError, ValueError):  # the C library's own signals
            if signal.getsignal(sig) == signal.SIG_IGN:
                signal.signal(sig, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_SETMASK, ())
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    _check(_libc.unshare(CLONE_NEWNS | CLONE_NEWIPC), "unshare")
    _check(_libc.mount(None, b"/", None, MS_REC | MS_PRIVATE, None), "mount --make-rprivate")
    flags = MS_NOSUID | MS_NODEV | MS_NOEXEC
    _check(_libc.mount(b"proc", b"/proc", b"proc", flags, None), "mount /proc")
    _drop_caps(last_cap)


def _spawn(req: dict[str, Any], fds: list[int]) -> subprocess.Popen[bytes]:
    """The command as pid 2 (vfork + exec): a new session, the host's descriptors as
    0/1/2 and no other, its folder and environment, SIGPIPE and SIGXFSZ at their
    defaults. Not ``os.posix_spawn``: glibc's leaves its two internal signals ignored in
    the command. The caller keeps the object (its ``__del__`` would reap the command)."""
    argv = [str(a) for a in req["argv"]]
    env = {str(k): str(v) for k, v in req["env"].items()}
    return subprocess.Popen(
        argv,
        stdin=fds[0],
        stdout=fds[1],
        stderr=fds[2],
        cwd=str(req["cwd"]),
        env=env,
        start_new_session=True,
        close_fds=True,
        restore_signals=True,
    )


def _init(sock: socket.socket, conn: socket.socket, last_cap: int) -> None:
    """pid 1 of a command's namespace, forked before its command is known (a spare, so
    that its set-up is not on the command's path): set up, wait for the command on
    ``conn``, run it, reap every orphan; at the command's end kill what it left, reap it
    all, then report. Never returns."""
    try:
        _enter(last_cap)
        why = ""
    except OSError as e:  # this host does not let the server make them: the host falls back
        why = str(e)
    data, fds, _, _ = socket.recv_fds(conn, MAX_MSG, 3)
    conn.close()
    if not data or len(fds) != 3:
        os._exit(0)  # the server is gone or let this spare go
    req = json.loads(data)
    ident = req["id"]
    if why:
        _send(sock, {"id": ident, "ev": "unable", "err": why})
        os._exit(0)
    try:
        proc = _spawn(req, fds)
    except OSError as e:
        _send(
            sock, {"id": ident, "ev": "nostart", "err": f"bwrap: execvp {e.filename}: {e.strerror}"}
        )
        os._exit(0)
    for fd in fds:
        os.close(fd)
    while True:
        got, status = os.waitpid(-1, 0)
        if got == proc.pid:
            break
    with contextlib.suppress(ProcessLookupError):  # ProcessLookupError: nothing left
        os.kill(-1, signal.SIGKILL)  # from pid 1: everything else in the namespace
    try:
        while True:
            os.waitpid(-1, 0)
    except ChildProcessError:
        pass
    _send(sock, {"id": ident, "ev": "exit", "code": _code(status)})
    os._exit(0)


class Server:
    """The request loop: per ``run`` a command namespace whose init it forks, per
    ``kill`` that init killed; inits reaped as they end (one that ended without
    reporting, killed or out of memory, is reported ``lost``)."""

    def __init__(self, sock: socket.socket, last_cap: int) -> None:
        self.sock = sock
        self.last_cap = last_cap
        self.inits: dict[int, object] = {}
        self.spare: tuple[int, socket.socket] | None = None
        self.own_pidns = os.open("/proc/self/ns/pid", os.O_RDONLY | os.O_CLOEXEC)
        self.wake_r, wake_w = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.set_wakeup_fd(wake_w)
        signal.signal(signal.SIGCHLD, lambda _s, _f: None)

    def serve(self) -> None:
        """Until the host closes its end (the sandbox is closing: exit, and every
        command's namespace goes with this one's)."""
        while True:
            ready, _, _ = select.select([self.sock.fileno(), self.wake_r], [], [])
            if self.wake_r in ready:
                while True:
                    try:
                        os.read(self.wake_r, 512)
                    except BlockingIOError:
                        break
                self.reap()
            if self.sock.fileno() in ready and not self.request():
                return

    def request(self) -> bool:
        """Take one request; False when the host is gone."""
        try:
            data, fds, _, _ = socket.recv_fds(self.sock, MAX_MSG, 3)
        except OSError:
            return False
        if not data:
            return False
        req = json.loads(data)
        if req.get("op") == "kill":
            for pid, ident in self.inits.items():
                if ident == req.get("id"):
                    os.kill(pid, signal.SIGKILL)
        elif len(fds) == 3:
            self.start(data, req.get("id"), fds)
        for fd in fds:
            os.close(fd)
        return True

    def start(self, data: bytes, ident: object, fds: list[int]) -> None:
        """Hand the command to the spare init (forked now if there is none)."""
        if self.spare is None:
            self.prefork()
        if self.spare is None:
            _send(self.sock, {"id": ident, "ev": "nostart", "err": "bwrap: cannot fork"})
            return
        pid, conn = self.spare
        self.spare = None
        try:
            socket.send_fds(conn, [data], fds)
        except OSError:
            os.kill(pid, signal.SIGKILL)  # reaped as "lost"
        conn.close()
        self.inits[pid] = ident

    def prefork(self) -> None:
        """Fork the next command's init in a new pid namespace (then back to our own for
        the next fork: ``unshare`` takes one only while the last one is undone)."""
        ours, its = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        try:
            _check(_libc.unshare(CLONE_NEWPID), "unshare")
            try:
                pid = os.fork()
            finally:
                if os.getpid() != 1:  # not in the child, whose namespace this is
                    _check(_libc.setns(self.own_pidns, CLONE_NEWPID), "setns")
        except OSError as e:
            os.write(2, f"evoround-server: {e}\n".encode())
            ours.close()
            its.close()
            return
        if pid == 0:
            try:
                ours.close()
                _init(self.sock, its, self.last_cap)
            except BaseException as e:  # noqa: BLE001 - the host hears "lost"
                os.write(2, f"evoround-server: init: {e!r}\n".encode())
            finally:
                os._exit(1)
        its.close()
        self.spare = (pid, ours)

    def reap(self) -> None:
        """Reap ended inits (one that ended without reporting is reported ``lost``), then
        fork the next spare: after the command's report, off its path."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                break
            if pid == 0:
                break
            if self.spare is not None and self.spare[0] == pid:
                self.spare[1].close()
                self.spare = None
            ident = self.inits.pop(pid, None)
            if ident is not None and status != 0:  # ended before it could report
                _send(self.sock, {"id": ident, "ev": "lost"})
        if self.spare is None:
            self.prefork()


def main(argv: list[str]) -> None:
    fd = int(argv[1])
    os.closerange(3, fd)  # what bubblewrap passed on (the filter's pipe): no command's
    os.closerange(fd + 1, 1 << 16)
    sock = socket.socket(fileno=fd)
    os.set_inheritable(fd, False)
    _libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    _libc.prctl(PR_SET_DUMPABLE, 0, 0, 0, 0)  # no ptrace, no /proc/PID/fd for anyone
    with open("/proc/sys/kernel/cap_last_cap") as f:
        last_cap = int(f.read())
    server = Server(sock, last_cap)
    server.prefork()
    _send(sock, {"ev": "ready"})
    server.serve()


if __name__ == "__main__":
    main(sys.argv)
