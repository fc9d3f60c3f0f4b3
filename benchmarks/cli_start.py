"""How long the CLI takes to answer before any work: `evoround --help`, `--version` and
`run --help`, beside the floor (`python -c pass`) and a bare `import evoround.cli`.

Interleaved runs (one of each command per repeat), so a noisy shared machine slows all
columns alike; wall and CPU (user + sys of the child) medians with min/max, and the ratio
of each to the floor. CPU is the figure that load does not distort: on an idle machine the
wall is close to it.

    python benchmarks/cli_start.py --repeat 15
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import time

COMMANDS: dict[str, list[str]] = {
    "floor: python -c pass": [sys.executable, "-c", "pass"],
    "import evoround.cli": [sys.executable, "-c", "import evoround.cli"],
    "evoround --version": [sys.executable, "-m", "evoround.cli", "--version"],
    "evoround --help": [sys.executable, "-m", "evoround.cli", "--help"],
    "evoround run --help": [sys.executable, "-m", "evoround.cli", "run", "--help"],
}


def _once(argv: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds of one child run (CPU from the children's rusage delta)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    subprocess.run(
        argv, check=True, stdout=subprocess.DEVNULL, env={**os.environ, "COLUMNS": "100"}
    )
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def _fmt(xs: list[float]) -> str:
    return f"{statistics.median(xs):6.3f} ({min(xs):.3f}-{max(xs):.3f})"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--repeat", type=int, default=10, help="runs of each command")
    args = ap.parse_args()
    walls: dict[str, list[float]] = {k: [] for k in COMMANDS}
    cpus: dict[str, list[float]] = {k: [] for k in COMMANDS}
    for argv in COMMANDS.values():  # warm the page cache once
        _once(argv)
    for _ in range(args.repeat):
        for name, argv in COMMANDS.items():
            w, c = _once(argv)
            walls[name].append(w)
            cpus[name].append(c)
    load = os.getloadavg()[0]
    print(f"{args.repeat} interleaved runs each; load average {load:.1f} on {os.cpu_count()} CPUs")
    head = f"{'wall s median (min-max)':>26} {'cpu s median (min-max)':>26} {'wall/floor':>10}"
    print(f"{'command':26} {head}")
    floor = statistics.median(walls["floor: python -c pass"])
    for name in COMMANDS:
        ratio = statistics.median(walls[name]) / floor
        print(f"{name:26} {_fmt(walls[name]):>26} {_fmt(cpus[name]):>26} {ratio:>9.1f}x")


if __name__ == "__main__":
    main()
