"""Process and memory limits for local sandboxes: one cgroup per sandbox, where the host
lets the engine make one.

Why: a pid namespace ends every process of a command when it ends, but does not cap how
many there are or how much memory they take meanwhile. Without a cap a fork bomb or a
memory bomb in a local sandbox starves the host (and the engine, which then cannot start
the verifier) until the command's timeout. The task's ``[environment] pids`` and
``memory_mb`` already bound a Docker container; here they bound a cgroup that every
command of the sandbox is moved into before it starts (its children inherit it).

cgroup v2 (a ``pids`` and ``memory`` controller enabled below ``/sys/fs/cgroup``) or v1
(``/sys/fs/cgroup/pids`` and ``/sys/fs/cgroup/memory``). Where neither is writable
(an unprivileged user, a read-only cgroupfs) there are no limits, and ``sandbox.txt``
says so. Leftover groups of a killed engine are removed by the next provider.
"""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import time
from collections.abc import Iterator
from pathlib import Path

ROOT = Path("/sys/fs/cgroup")
PREFIX = "evoround-"

# Moves itself into each group (the cgroup.procs files before "--"), then becomes the
# command: everything the command starts is born inside the groups.
ENTER = r"""while [ "$#" -gt 0 ] && [ "$1" != "--" ]; do
  echo $$ > "$1" || exit 125
  shift
done
shift
exec "$@"
"""


def _v2_parent() -> Path | None:
    """A v2 folder where pids and memory can be delegated to a child, or None."""
    ctl = ROOT / "cgroup.controllers"
    if not ctl.is_file():
        return None
    with contextlib.suppress(OSError):
        have = set(ctl.read_text().split())
        if {"pids", "memory"} <= have:
            sub = ROOT / "cgroup.subtree_control"
            if not {"pids", "memory"} <= set(sub.read_text().split()):
                sub.write_text("+pids +memory")
            return ROOT
    return None


def _v1_roots() -> tuple[Path, Path] | None:
    pids, mem = ROOT / "pids", ROOT / "memory"
    if (pids / "cgroup.procs").is_file() and (mem / "cgroup.procs").is_file():
        return pids, mem
    return None


class Cgroup:
    """The group(s) of one sandbox: ``wrap`` an argv to run it inside, ``remove`` at close."""

    def __init__(self, folders: list[Path]) -> None:
        self.folders = folders

    def wrap(self, argv: list[str]) -> list[str]:
        procs = [str(f / "cgroup.procs") for f in self.folders]
        return ["sh", "-c", ENTER, "evoround-cgroup", *procs, "--", *argv]

    @contextlib.contextmanager
    def frozen(self, wait: float = 30.0) -> Iterator[None]:
        """Every process of the group stopped while the block runs (the cgroup freezer), so
        a process a persistent agent left running cannot change the workspace while its
        snapshot is read, as ``docker pause`` stops a container's. Without a freezer the
        block runs unfrozen."""
        how = self._freezer()
        if how is None or not _write(how[0], how[1]):
            yield
            return
        try:
            self._freeze(how, time.monotonic() + wait)
            yield
        finally:
            _write(how[0], how[2])

    def _freeze(self, how: tuple[Path, str, str], deadline: float) -> None:
        """Ask again until the group reports frozen (or the deadline). Why again: a v1
        freezer stays FREEZING for good when a process forks while it freezes (a shell
        loop's children), and only a new write takes the newcomers; now and then a thaw
        and a pause let a fork in flight finish (runc's pause does the same)."""
        tries = 0
        while not self.is_frozen() and time.monotonic() < deadline:
            tries += 1
            if tries % 50 == 0:
                _write(how[0], how[2])
                time.sleep(0.01)
            else:
                time.sleep(0.001)
            _write(how[0], how[1])

    def _freezer(self) -> tuple[Path, str, str] | None:
        """The file that freezes the group, the value that freezes and the one that thaws
        (v2, else v1)."""
        for f in self.folders:
            if (f / "cgroup.freeze").is_file():
                return f / "cgroup.freeze", "1", "0"
            if (f / "freezer.state").is_file():
                return f / "freezer.state", "FROZEN", "THAWED"
        return None

    def is_frozen(self) -> bool:
        how = self._freezer()
        with contextlib.suppress(OSError):
            if how is not None and how[1] == "1":
                events = (how[0].parent / "cgroup.events").read_text().splitlines()
                return "frozen 1" in events
            if how is not None:
                return how[0].read_text().strip() == "FROZEN"
        return False

    def remove(self) -> None:
        """Kill what is still inside (a persistent agent's server, a stray), then remove,
        retried for a while: a process the OOM killer hit can take seconds to leave under
        load, and until it has, the group cannot be removed."""
        how = self._freezer()
        if how is not None:  # a frozen process cannot die (an engine killed mid-snapshot)
            _write(how[0], how[2])
        deadline = time.monotonic() + 10
        left = list(self.folders)
        while left:
            for f in left:
                with contextlib.suppress(OSError, ValueError):
                    for pid in (f / "cgroup.procs").read_text().split():
                        with contextlib.suppress(OSError):
                            os.kill(int(pid), signal.SIGKILL)
            busy = []
            for f in left:
                try:
                    f.rmdir()
                except FileNotFoundError:
                    pass
                except OSError:
                    busy.append(f)
            left = busy
            if left and time.monotonic() < deadline:
                time.sleep(0.02)
            else:
                break


def _write(path: Path, value: str) -> bool:
    try:
        path.write_text(value)
        return True
    except OSError:
        return False


def make_cgroup(pids: int, memory_mb: int) -> Cgroup | None:
    """A fresh group capped at ``pids`` processes and ``memory_mb`` of memory (no swap
    past it where the host accounts swap), or None where the host does not allow one."""
    name = f"{PREFIX}{os.getpid()}-{secrets.token_hex(6)}"
    made: list[Path] = []
    try:
        parent = _v2_parent()
        if parent is not None:
            g = parent / name
            g.mkdir()
            made.append(g)
            ok = _write(g / "pids.max", str(pids)) and _write(
                g / "memory.max", str(memory_mb << 20)
            )
            _write(g / "memory.swap.max", "0")
        else:
            roots = _v1_roots()
            if roots is None:
                return None
            gp, gm = roots[0] / name, roots[1] / name
            gp.mkdir()
            made.append(gp)
            gm.mkdir()
            made.append(gm)
            ok = _write(gp / "pids.max", str(pids)) and _write(
                gm / "memory.limit_in_bytes", str(memory_mb << 20)
            )
            if (gm / "memory.memsw.limit_in_bytes").exists():
                _write(gm / "memory.memsw.limit_in_bytes", str(memory_mb << 20))
            freezer = ROOT / "freezer"
            if (freezer / "cgroup.procs").is_file():  # optional: snapshots freeze the group
                with contextlib.suppress(OSError):
                    (freezer / name).mkdir()
                    made.append(freezer / name)
        if not ok:
            raise OSError("limits not writable")
        return Cgroup(made)
    except OSError:
        for g in reversed(made):
            with contextlib.suppress(OSError):
                g.rmdir()
        return None


def cgroups_available() -> str | None:
    """``"cgroup v2"``/``"cgroup v1"`` if a limited group can be made here, else None."""
    g = make_cgroup(64, 64)
    if g is None:
        return None
    kind = "cgroup v2" if g.folders[0].parent == ROOT else "cgroup v1"
    g.remove()
    return kind


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        return True
    return True


def sweep_cgroups() -> None:
    """Remove the groups of engines that are gone (killed with -9): their processes are
    killed first. A live engine's groups (its pid is in the name) are left alone."""
    for base in (ROOT, ROOT / "pids", ROOT / "memory", ROOT / "freezer"):
        with contextlib.suppress(OSError):
            for g in base.glob(PREFIX + "*"):
                owner = g.name[len(PREFIX) :].split("-", 1)[0]
                if owner.isdigit() and not _alive(int(owner)):
                    Cgroup([g]).remove()
