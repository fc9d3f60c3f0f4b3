"""How long the bootstrap intervals of one job take, by job size and resample count.

Usage: python benchmarks/bootstrap.py [--runs 3]
Prints, per (tasks, rounds, attempts, resamples), the median, min and max seconds of
``job_uncertainty`` at its default resample count (every headline figure, the per-round
profile and the curves over k) and the time per resample, side by side in one run.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evoround.reports._uncertainty import job_uncertainty  # noqa: E402
from evoround.results import load_job  # noqa: E402
from tests.results.synthetic_job import make_job  # noqa: E402

SIZES = [
    (1, 4, 1),
    (1, 4, 2),
    (2, 4, 2),
    (3, 7, 1),
    (26, 6, 1),
    (26, 6, 4),
    (100, 10, 1),
    (100, 10, 4),
]
"""(tasks, rounds, attempts); the resample count is the default one for the job's size. The
small ones are the size of most jobs the test suite runs."""


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    print(f"{'tasks':>5} {'rounds':>6} {'att.':>4} {'records':>7} {'B':>5} "
          f"{'median s':>9} {'min s':>7} {'max s':>7} {'ms/resample':>11}")  # fmt: skip
    with tempfile.TemporaryDirectory() as tmp:
        for tasks, rounds, attempts in SIZES:
            job = make_job(Path(tmp), tasks=tasks, rounds=rounds, attempts=attempts,
                           name=f"j{tasks}-{attempts}", p_fail=0.2)  # fmt: skip
            times = []
            for _ in range(args.runs):
                view = load_job(job)  # a fresh view: nothing cached
                t = time.monotonic()
                resamples = job_uncertainty(view).resamples
                times.append(time.monotonic() - t)
            med = statistics.median(times)
            print(f"{tasks:>5} {rounds:>6} {attempts:>4} {len(view.records):>7} {resamples:>5} "
                  f"{med:>9.2f} {min(times):>7.2f} {max(times):>7.2f} "
                  f"{1000 * med / resamples:>11.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
