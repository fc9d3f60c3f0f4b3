"""What local isolation costs per agent command: none, unshare and bubblewrap side by side.

Each mechanism runs the same short command (``true``) N times in one sandbox of the
counter task, alternating mechanisms so machine noise falls on all of them alike. Prints
the median, min and max wall time per command and the ratio to ``none``. The row
``unshare-bare`` is the same unshare command line without the seccomp launcher (what
unshare mode ran before it had the keyring filter): the launcher's cost is the difference.
``bwrap`` is a bubblewrap sandbox's default, its exec server (one bubblewrap per sandbox,
a pid, mount and IPC namespace per command, see ``local/_server.py``); ``bwrap-per-cmd``
is the same sandbox with ``served = False``: a new bubblewrap per command, the path every
command took before the server (its code is unchanged). The server's start is paid by
the second command of each sandbox (its first takes the per-command path: a sandbox
that runs one command, a verification, never starts a server), outside the timed loop,
and reported on its own.
The load average is printed before and after: on a shared machine it decides the figures.

With a timeout (as the engine runs agent commands) the per-command paths wait on a pidfd
(``local._sandbox.wait_exit``); before, ``Popen.wait`` polled with a backoff that grew to
50 ms steps, so a command's time was rounded up to the next poll (about 64, 114, 164 ms).
``--no-timeout`` waits without a timeout, for comparison.

    python benchmarks/local_isolation.py --commands 40 [--no-timeout]
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from evoround.sandboxes import ExecResult, LocalProvider, LocalSandbox
from evoround.sandboxes.local._isolation import unshare_argv
from evoround.sandboxes.local._sandbox import local_run
from evoround.snapshots import SnapshotStore
from evoround.tasks import load_task

COUNTER = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "tasks" / "counter"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--commands", type=int, default=40)
    ap.add_argument("--no-timeout", action="store_true", help="run commands without one")
    args = ap.parse_args()
    timeout = None if args.no_timeout else 30.0
    tmp = Path(tempfile.mkdtemp(prefix="evoround-bench-"))
    task = load_task(COUNTER)
    sandboxes: dict[str, LocalSandbox] = {}
    print(f"load average before: {_load()}")
    for mech in ("none", "unshare", "bwrap", "bwrap-per-cmd"):
        os.environ["EVOROUND_LOCAL_ISOLATION"] = mech.split("-")[0]
        try:
            provider = LocalProvider(SnapshotStore(tmp / "store"), tmp / "sb")
        except Exception as e:  # this machine cannot do it
            print(f"{mech}: unavailable ({e})")
            continue
        sb = provider.create(task, f"bench/{mech}")
        assert isinstance(sb, LocalSandbox)
        sb.served = sb.served and mech == "bwrap"
        warm = []
        for _ in range(2):
            t0 = time.perf_counter()
            sb.exec("true", timeout=timeout)
            warm.append(f"{(time.perf_counter() - t0) * 1e3:.1f}")
        print(f"{mech:14} first, second command: {' , '.join(warm)} ms")
        sandboxes[mech] = sb
    if "unshare" in sandboxes:
        sandboxes["unshare-bare"] = sandboxes["unshare"]
    times: dict[str, list[float]] = {m: [] for m in sandboxes}
    for _ in range(args.commands):
        for mech, sb in sandboxes.items():
            t0 = time.perf_counter()
            res = _bare(sb, timeout) if mech == "unshare-bare" else sb.exec("true", timeout=timeout)
            times[mech].append(time.perf_counter() - t0)
            assert res.exit_code == 0, (mech, res.stderr)
    base = statistics.median(times["none"]) if "none" in times else None
    print(f"{'mechanism':12} {'median ms':>10} {'min ms':>8} {'max ms':>8} {'x none':>7}")
    for mech, ts in times.items():
        med = statistics.median(ts)
        ratio = f"{med / base:7.1f}" if base else "      -"
        print(f"{mech:12} {med * 1e3:10.1f} {min(ts) * 1e3:8.1f} {max(ts) * 1e3:8.1f} {ratio}")
    print(f"load average after: {_load()}")
    for sb in set(sandboxes.values()):
        sb.close()
    shutil.rmtree(tmp, ignore_errors=True)


def _load() -> str:
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def _bare(sb: LocalSandbox, timeout: float | None) -> ExecResult:
    """``true`` under unshare as :meth:`LocalSandbox.exec` runs it, minus the launcher."""
    env = {**{k: os.environ[k] for k in ("PATH", "LANG") if k in os.environ},
           "HOME": str(sb.root / "home")}  # fmt: skip
    r, w = os.pipe()  # the namespace script's status descriptor (read by nobody here)
    try:
        argv = unshare_argv(sb.root, sb.hidden or (), ["bash", "-c", "true"],
                            network=sb.network, status_fd=w)  # fmt: skip
        argv = sb.cgroup.wrap(argv) if sb.cgroup is not None else argv
        return local_run(argv, cwd=Path(sb.workdir), timeout=timeout, stdin=None, env=env,
                         pass_fds=(w,))  # fmt: skip
    finally:
        os.close(r)
        os.close(w)


if __name__ == "__main__":
    main()
