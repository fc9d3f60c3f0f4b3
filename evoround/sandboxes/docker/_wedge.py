"""Breaking a container that its own processes wedged, from the host.

Every ``docker exec`` starts a ``runc init`` process *inside* the container's pid
namespace. Code running as root in the container (an agent's daemon looping
``kill -STOP -1``, tested code doing the same from the verifier) stops it there, and then
``runc exec`` never returns, containerd never answers, and the Docker daemon holds the
container's lock: every later call on that container (exec, inspect, pause, kill,
remove) blocks for the client's whole timeout. Measured on Docker 20.10: a job hung for
20 minutes, until the container's processes were killed by hand, and its two
containers could not even be inspected.

The stuck calls cannot be cancelled through the API, so the harness ends what wedged
them: at a timed command's deadline, if the command has not returned and the daemon
still answers a ping (the host's engine is fine: the container is the agent's doing),
:class:`WedgeBreaker` SIGKILLs every process of the container's pid namespace except its
init, from the host. ``runc exec`` then fails, the daemon lets go, the container keeps
running (its init survives) and the command counts as timed out: the agent's failure,
never ``infra``. A daemon that does not answer is the host's problem and is left to the
usual ``SandboxUnavailable`` path.

This needs the right to signal the container's processes (the engine runs as root, as the
endpoint relay already requires); without it the breaker logs why and does nothing.
"""

from __future__ import annotations

import logging
import os
import signal
import threading
from collections.abc import Callable

log = logging.getLogger(__name__)

WEDGE_SLACK_SEC = 15.0
"""Seconds after a timed command's in-container timeout (and its kill grace) before the
host checks whether the container is wedged."""


def namespace_members(init_pid: int) -> list[int]:
    """Host pids of the processes in ``init_pid``'s pid namespace, init excluded."""
    try:
        ns = os.readlink(f"/proc/{init_pid}/ns/pid")
    except OSError:
        return []
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) == init_pid:
            continue
        try:
            if os.readlink(f"/proc/{name}/ns/pid") == ns:
                out.append(int(name))
        except OSError:
            continue
    return out


def kill_members(init_pid: int) -> int:
    """SIGKILL every process of ``init_pid``'s namespace but init, twice (one may fork as
    it dies); how many signals were delivered."""
    sent = 0
    for _ in range(2):
        for pid in namespace_members(init_pid):
            try:
                os.kill(pid, signal.SIGKILL)
                sent += 1
            except ProcessLookupError:
                continue
            except PermissionError as e:
                log.warning("cannot break a wedged container (pid %d): %s", pid, e)
                return sent
    return sent


class WedgeBreaker:
    """A timer for one timed command: at ``delay`` seconds, if :meth:`disarm` was not
    called and ``daemon_alive()`` says the daemon answers, kill the container's processes
    (see the module's docstring); :attr:`fired` tells the caller the command was ended so."""

    def __init__(
        self, init_pid: int, delay: float, daemon_alive: Callable[[], bool], name: str
    ) -> None:
        self.init_pid = init_pid
        self.name = name
        self.fired = False
        self._daemon_alive = daemon_alive
        self._done = threading.Event()
        self._timer = threading.Timer(max(delay, 0.0), self._fire)
        self._timer.daemon = True

    def __enter__(self) -> WedgeBreaker:
        if self.init_pid > 0:
            self._timer.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.disarm()

    def disarm(self) -> None:
        self._done.set()
        self._timer.cancel()

    def _fire(self) -> None:
        if self._done.is_set() or not self._daemon_alive():
            return
        self.fired = True
        sent = kill_members(self.init_pid)
        log.warning(
            "sandbox %s: a command overran its timeout and the daemon holds the container "
            "(its processes stopped a runc init); killed %d processes in it",
            self.name,
            sent,
        )
