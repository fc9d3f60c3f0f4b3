"""Run the oracle and the null agent on the bundled tasks, then compare them: the Python
API (docs/api.md) instead of the CLI. Run: ``python examples/run_and_report.py [OUT]``.

Exits with the CLI's contract: 0 when every attempt of both jobs was evaluated.
"""

from __future__ import annotations

import sys
from pathlib import Path

from evoround import load_tasks, report, run


def main(out: Path) -> int:
    tasks = load_tasks()  # the bundled library; pass folders to load your own
    first = [t for t in tasks if t.name == sorted(t.name for t in tasks)[0]]
    results = [run(first, agent=agent, out=out, job=agent, modes=["mt"])
               for agent in ("oracle", "nop")]  # fmt: skip
    for r in results:
        m = r.metrics
        print(f"{r.agent:8} MT@k={m.mt_at_k:.2f} rounds={r.rounds} cost={r.cost} "
              f"exit={r.exit_code}")  # fmt: skip
    both = report([r.job_dir for r in results])
    html = both.write_html(out / "report.html")
    print(f"report: {html}")
    best = max(both.jobs, key=lambda j: j.metrics.mt_at_k or 0.0)
    print(f"best: {best.agent}")
    return max(r.exit_code for r in results)


if __name__ == "__main__":
    sys.exit(main(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("runs/example")))
