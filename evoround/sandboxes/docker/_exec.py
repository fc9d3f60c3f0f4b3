"""Running a command in a container: the in-container timeout wrapper, the OOM probe and
the demultiplexing of the exec stream under a deadline."""

from __future__ import annotations

import select
import socket
import struct
import time

from evoround.sandboxes.common import CappedOutput

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


def read_frames(sock: socket.socket, deadline: float | None) -> tuple[CappedOutput, CappedOutput]:
    """Demultiplex a hijacked non-TTY exec stream until EOF, or raise TimeoutError.

    Each stream goes to a capped sink: whatever a command prints, memory stays bounded."""
    out, err = CappedOutput(), CappedOutput()
    buf = bytearray()
    poller = select.poll()
    poller.register(sock, select.POLLIN | select.POLLPRI | select.POLLHUP)
    while True:
        wait_ms = None if deadline is None else max(0, int((deadline - time.monotonic()) * 1000))
        if not poller.poll(wait_ms):
            raise TimeoutError
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


# ---- sandbox ---------------------------------------------------------------------
