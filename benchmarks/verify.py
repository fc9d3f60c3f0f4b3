"""Verification time of one round, by verifier: what the tamper checks cost.

Grades the oracle's workspace of one round ``--repeat`` times, in a fresh verification
sandbox each time, with the verifier each task asks for:

    pytest   the counter fixture (round 2: 2 test files), evoround's pytest verifier
    script   Harbor's pytest-reward fixture (step 2), a test.sh that runs pytest

Prints median, min and max of :func:`verify_suite` alone (sandbox creation and removal are
not counted). To compare two checkouts side by side, run this file from one checkout with
``--code`` pointing at each in turn, interleaved, in one shell loop (the machine is shared
and noisy)::

    for i in 1 2 3; do for c in /old /new; do python benchmarks/verify.py --code $c; done; done
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeat", type=int, default=8)
    ap.add_argument("--code", type=Path, default=HERE, help="the checkout whose code runs")
    ap.add_argument("--kinds", default="pytest,script")
    args = ap.parse_args()
    sys.path.insert(0, str(args.code.resolve()))

    from evoround.sandboxes import LocalProvider
    from evoround.scaffolds import reference_apply
    from evoround.snapshots import SnapshotKind, SnapshotLabel, SnapshotStore
    from evoround.tasks import active_tests, load_task
    from evoround.tasks.importers import import_tasks
    from evoround.verifiers import verify_suite

    fixtures = HERE / "tests" / "fixtures"
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        tasks = {}
        if "pytest" in args.kinds:
            tasks["pytest"] = (load_task(fixtures / "tasks" / "counter"), 2)
        if "script" in args.kinds:
            [res] = import_tasks(fixtures / "harbor" / "pytest-reward", root / "imported")
            tasks["script"] = (load_task(res.dest), 2)
        provider = LocalProvider(SnapshotStore(root / "store"), root / "sb")
        import evoround

        print(f"code: {Path(evoround.__file__).parent}")
        for kind, (task, rnd) in tasks.items():
            with provider.create(task, f"bench/{kind}") as sb:
                for i in range(1, rnd + 1):
                    reference_apply(sb, task.round(i))
                snap = sb.snapshot(
                    SnapshotLabel(task=task.name, task_digest=task.digest,
                                  kind=SnapshotKind.agent, round=rnd, attempt="bench")
                )  # fmt: skip
            times = []
            for n in range(args.repeat):
                with provider.create(task, f"bench/{kind}-v{n}", snap) as clone:
                    start = time.perf_counter()
                    out = verify_suite(task, clone, active_tests(task, rnd), rnd)
                    times.append(time.perf_counter() - start)
                assert out.passed and not out.integrity, (out.problems, out.integrity)
            print(
                f"{kind:7s} median {statistics.median(times):.3f} s  "
                f"[{min(times):.3f}-{max(times):.3f}]  n={len(times)}"
            )


if __name__ == "__main__":
    main()
