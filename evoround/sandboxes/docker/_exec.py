"""Running a command in a container: the in-container timeout wrapper, the OOM probe and
the demultiplexing of the exec stream under a deadline."""

from __future__ import annotations

import select
import socket
import struct
import time
from collections.abc import Callable

from evoround.sandboxes.common import CappedOutput

KEEPALIVE = """trap '' HUP INT QUIT TERM USR1 USR2 PIPE ALRM TSTP TTIN TTOU
while :; do sleep 2147483647 & wait; done
"""
"""The container's pid 1 (plain ``sh``: the image may have nothing else). A pid namespace's
init gets no signal sent from inside the namespace unless it installed a handler for it:
SIGKILL and SIGSTOP are dropped, and this one ignores the rest, so nothing the agent runs
can stop or end the container (with ``--init``, docker-init forwarded SIGTERM to
``sleep infinity`` and the container exited: a round the agent turned into ``infra``).
Its ``wait`` reaps every orphan reparented to it, as docker-init did; a killed ``sleep``
is started again."""

KILL_GRACE_SEC = 5
"""``timeout -k``: seconds between SIGTERM and SIGKILL of a timed-out command."""

HOST_SLACK_SEC = 60
"""Extra host-side wait after the in-container timeout before the daemon is declared hung."""

# sh, not bash: task images need not have bash. ``timeout`` makes itself a process
# group leader and signals the whole group on expiry; after it ends the wrapper
# kills what is left of that group (background children), like the local backend.
# stdin is passed through fd 3 because sh gives background jobs /dev/null.
EXEC_WRAPPER = r"""k="$1"; d="$2"; shift 2
exec 3<&0
timeout -k "$k" "$d" "$@" 0<&3 3<&- &
p=$!
exec 3<&-
wait "$p"; rc=$?
kill -9 "-$p" 2>/dev/null
exit "$rc"
"""

PRISTINE_WRAPPER = r"""k="$1"; d="$2"; ld="$3"; lp="$4"; to="$5"; shift 5
exec 3<&0
"$ld" --library-path "$lp" "$to" -k "$k" "$d" "$@" 0<&3 3<&- &
p=$!
exec 3<&-
wait "$p"; rc=$?
kill -9 "-$p" 2>/dev/null
exit "$rc"
"""
""":data:`EXEC_WRAPPER` for commit-mode containers: run by the pristine shell, with the
pristine ``timeout`` (see :mod:`._pristine`); the clone's own ``sh``/``timeout`` may be the
agent's."""

OOM_PROBE = (
    "cat /sys/fs/cgroup/memory/memory.oom_control 2>/dev/null"
    " || cat /sys/fs/cgroup/memory.events 2>/dev/null"
)


class FramesTimeout(TimeoutError):
    """The exec stream did not end by its deadline; what it carried so far."""

    def __init__(self, out: CappedOutput, err: CappedOutput) -> None:
        super().__init__("exec stream did not end by its deadline")
        self.out, self.err = out, err


CONT_HARNESS = r"""for d in /proc/[0-9]*; do
  read -r st < "$d/stat" 2>/dev/null || continue
  set -- ${st##*) }
  case "$1" in T|t) ;; *) continue ;; esac
  if grep -q evoround-exec "$d/cmdline" "/proc/$2/cmdline" 2>/dev/null; then
    kill -CONT "${d#/proc/}" 2>/dev/null
  fi
done
true
"""
"""Continue a stopped exec wrapper (``evoround-exec`` in its argv) or its ``timeout``: the
tested code runs as root next to them and may SIGSTOP them, which would hold the exec open
past its timeout (the host then saw a hung daemon: ``infra``). Run every
:data:`TICK_SEC` while a timed command runs."""

TICK_SEC = 10.0


def read_frames(
    sock: socket.socket,
    deadline: float | None,
    tick: Callable[[], None] | None = None,
) -> tuple[CappedOutput, CappedOutput]:
    """Demultiplex a hijacked non-TTY exec stream until EOF, or raise :class:`FramesTimeout`;
    ``tick`` is called every :data:`TICK_SEC` while the stream stays open.

    Each stream goes to a capped sink: whatever a command prints, memory stays bounded."""
    out, err = CappedOutput(), CappedOutput()
    buf = bytearray()
    poller = select.poll()
    poller.register(sock, select.POLLIN | select.POLLPRI | select.POLLHUP)
    next_tick = time.monotonic() + TICK_SEC
    while True:
        now = time.monotonic()
        ends = [t for t in (deadline, next_tick if tick else None) if t is not None]
        wait_ms = None if not ends else max(0, int((min(ends) - now) * 1000))
        if not poller.poll(wait_ms):
            if deadline is not None and time.monotonic() >= deadline:
                raise FramesTimeout(out, err)
            if tick is not None and time.monotonic() >= next_tick:
                tick()
                next_tick = time.monotonic() + TICK_SEC
            continue
        chunk = sock.recv(1 << 16)
        if not chunk:
            break
        buf += chunk
        while len(buf) >= 8:
            stream, size = struct.unpack(">BxxxL", buf[:8])
            if len(buf) < 8 + size:
                break
            payload = bytes(buf[8 : 8 + size])
            del buf[: 8 + size]
            (err if stream == 2 else out).feed(payload)
    return out, err
