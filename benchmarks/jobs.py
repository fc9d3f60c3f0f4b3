"""Wall time of the bundled library's oracle job, this checkout against others, interleaved.

Why: a change that makes a round safer can make a job slower, and only a whole job shows it
(image builds, reference chains, verifications, sandbox starts, at ``-j1`` and ``-j2``).
Each measurement is one ``evoround run <checkout>/evoround/tasks/library --agent oracle``
in a fresh process with ``PYTHONPATH`` at the checkout and a fresh ``EVOROUND_HOME`` (so no
reference snapshot is reused from an earlier measurement; Docker's image cache is shared,
warm after the first build). Repetitions run every configuration once, in turn, so the
shared machine's noise falls on all alike; prints median [min-max] seconds and the ratio
to the first ``--code``::

    python benchmarks/jobs.py --code . --code /work/wt/2792bb7 --sandboxes local -j 1,2

The oracle must pass every round: a run that exits non-zero is reported, not timed.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
_MAIN = "import sys; from evoround.cli import main; sys.argv[0] = 'evoround'; main()"


def one(code: Path, sandbox: str, jobs: int, attempts: int, mode: str) -> float | str:
    """Seconds of one oracle job of ``code``'s library, or why it failed."""
    with tempfile.TemporaryDirectory(prefix="evoround-jobs-") as tmp:
        env = {**os.environ, "PYTHONPATH": str(code), "EVOROUND_HOME": f"{tmp}/home"}
        argv = [sys.executable, "-c", _MAIN, "run", str(code / "evoround/tasks/library")]
        argv += ["--agent", "oracle", "-k", str(attempts), "--mode", mode]
        argv += ["--sandbox", sandbox, "-j", str(jobs), "--out", f"{tmp}/runs"]
        start = time.monotonic()
        res = subprocess.run(argv, env=env, cwd=tmp, capture_output=True, text=True)
        wall = time.monotonic() - start
    if res.returncode != 0:
        return f"exit {res.returncode}: {(res.stderr.strip().splitlines() or [''])[-1][:120]}"
    return wall


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--code", type=Path, action="append", help="a checkout (repeatable)")
    ap.add_argument("--sandboxes", default="local", help="local,docker")
    ap.add_argument("-j", "--concurrency", default="1,2", help="values of -j")
    ap.add_argument("-k", "--attempts", type=int, default=4)
    ap.add_argument("--mode", default="both", choices=["mt", "sr", "both"])
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    codes = [c.resolve() for c in (args.code or [HERE])]
    configs = [(s, int(j)) for s in args.sandboxes.split(",") for j in args.concurrency.split(",")]
    times: dict[tuple[str, int, Path], list[float]] = {}
    for rep in range(1, args.repeats + 1):
        for sandbox, jobs in configs:
            order = codes if rep % 2 else codes[::-1]  # alternate who goes first
            for code in order:
                got = one(code, sandbox, jobs, args.attempts, args.mode)
                print(f"rep {rep}: {sandbox} -j{jobs} {code}: {got}", file=sys.stderr)
                if isinstance(got, float):
                    times.setdefault((sandbox, jobs, code), []).append(got)
    print(f"\nbundled library, oracle, -k {args.attempts}, mode {args.mode}; seconds")
    print(f"{'sandbox':8} {'-j':>3}  {'checkout':40} {'median':>8} {'[min-max]':>17} {'ratio':>6}")
    for sandbox, jobs in configs:
        first = times.get((sandbox, jobs, codes[0]))
        for code in codes:
            ts = times.get((sandbox, jobs, code))
            if not ts:
                print(f"{sandbox:8} {jobs:>3}  {str(code)[-40:]:40} {'failed':>8}")
                continue
            med = statistics.median(ts)
            ratio = f"{med / statistics.median(first):.2f}x" if first else "-"
            span = f"[{min(ts):.1f}-{max(ts):.1f}]"
            print(f"{sandbox:8} {jobs:>3}  {str(code)[-40:]:40} {med:8.1f} {span:>17} {ratio:>6}")


if __name__ == "__main__":
    main()
