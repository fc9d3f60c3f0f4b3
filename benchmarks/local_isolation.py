"""What local isolation costs per agent command: none, unshare and bubblewrap side by side.

Each mechanism runs the same short command (``true``) N times in one sandbox of the
counter task, alternating mechanisms so machine noise falls on all of them alike. Prints
the median, min and max wall time per command and the ratio to ``none``.

    python benchmarks/local_isolation.py --commands 40
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
from pathlib import Path

from evoround.sandboxes import LocalProvider
from evoround.snapshots import SnapshotStore
from evoround.tasks import load_task

COUNTER = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "tasks" / "counter"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--commands", type=int, default=40)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="evoround-bench-"))
    task = load_task(COUNTER)
    sandboxes = {}
    for mech in ("none", "unshare", "bwrap"):
        os.environ["EVOROUND_LOCAL_ISOLATION"] = mech
        try:
            provider = LocalProvider(SnapshotStore(tmp / "store"), tmp / "sb")
        except Exception as e:  # this machine cannot do it
            print(f"{mech}: unavailable ({e})")
            continue
        sandboxes[mech] = provider.create(task, f"bench/{mech}")
    times: dict[str, list[float]] = {m: [] for m in sandboxes}
    for _ in range(args.commands):
        for mech, sb in sandboxes.items():
            t0 = time.perf_counter()
            res = sb.exec("true", timeout=30)
            times[mech].append(time.perf_counter() - t0)
            assert res.exit_code == 0, (mech, res.stderr)
    base = statistics.median(times["none"]) if "none" in times else None
    print(f"{'mechanism':10} {'median ms':>10} {'min ms':>8} {'max ms':>8} {'x none':>7}")
    for mech, ts in times.items():
        med = statistics.median(ts)
        ratio = f"{med / base:7.1f}" if base else "      -"
        print(f"{mech:10} {med * 1e3:10.1f} {min(ts) * 1e3:8.1f} {max(ts) * 1e3:8.1f} {ratio}")
    for sb in sandboxes.values():
        sb.close()


if __name__ == "__main__":
    main()
