"""How fast `evoround view` opens a benchmark-sized job: 26 tasks x 4 attempts x 9 rounds,
MT and SR (1,872 rounds, ~2,000 as in issue 31), each round with a 40-event trajectory,
a recorded change and checks.

Times, over --repeat fresh viewers (nothing cached between repeats): reading the job (index),
the jobs page, the grid, a round page (cold: its folder read for the first time), the same
round again, and a compare page. Targets: the job opens (index + jobs page + grid) in under
2 s, a round in under 300 ms.

    python benchmarks/view.py --repeat 5
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from evoround.view import JobIndex, ViewServer  # noqa: E402
from tests.view.jobs import synthetic_job  # noqa: E402

STEPS = ("index", "jobs page", "grid", "round (cold)", "round (warm)", "compare")


def _get(url: str) -> float:
    t0 = time.perf_counter()
    with urllib.request.urlopen(url, timeout=60) as r:
        r.read()
    return time.perf_counter() - t0


def one(job: Path, k: int) -> dict[str, float]:
    out: dict[str, float] = {}
    t0 = time.perf_counter()
    index = JobIndex([job])
    out["index"] = time.perf_counter() - t0
    with ViewServer(index) as s:
        out["jobs page"] = _get(s.url)
        out["grid"] = _get(s.url + "job/0")
        task = f"t{k % 26:03d}"
        out["round (cold)"] = _get(s.url + f"job/0/round/{task}/mt/2/9")
        out["round (warm)"] = _get(s.url + f"job/0/round/{task}/mt/2/9")
        out["compare"] = _get(s.url + f"compare?a=0/{task}/mt/2/9&b=0/{task}/sr/2/9")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--repeat", type=int, default=5)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        job = synthetic_job(Path(tmp), "bench", tasks=26, rounds=9, attempts=4)
        with open(job / "results.jsonl") as f:
            rounds = sum(1 for _ in f)
        print(f"synthetic job: {rounds} rounds, written in {time.perf_counter() - t0:.1f} s")
        runs = [one(job, k) for k in range(args.repeat)]
    print(f"{'step':14} {'median s':>9} {'min':>7} {'max':>7}")
    for step in STEPS:
        xs = [r[step] for r in runs]
        print(f"{step:14} {statistics.median(xs):9.3f} {min(xs):7.3f} {max(xs):7.3f}")
    opened = [r["index"] + r["jobs page"] + r["grid"] for r in runs]
    cold = [r["round (cold)"] for r in runs]
    print(
        f"job opens (index + jobs page + grid): median {statistics.median(opened):.3f} s "
        f"(target < 2 s); round cold median {statistics.median(cold) * 1000:.0f} ms "
        f"(target < 300 ms)"
    )


if __name__ == "__main__":
    main()
