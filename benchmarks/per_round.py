"""What evoround spends per round between one agent turn's end and the next one's start.

Issue 32 compares this with real Harbor 0.24 on the same task (2.66 s there, measured by
the issue's author on this machine type; Harbor itself is not run here). The task is
Harbor's multi-step fixture ``tests/fixtures/harbor/multi-step-greet`` (3 steps, a script
verifier), imported with ``evoround tasks import``; the agent is the oracle, so a turn is
only the reference solution's commands. Each repetition runs one job (``-k 2``, MT) per
sandbox, in turn, and reads ``results.jsonl``: per round, its wall (``started_at`` to
``finished_at``) minus the agent's turn (``timings.agent_sec``) is the boundary: snapshot,
verification clone, verifier, checklist, records, and the next step's set-up (rounds 2 and
3 carry it in ``setup_sec``). Prints median [min-max] per sandbox over every round of every
repetition, and the ratio to Harbor's figure::

    python benchmarks/per_round.py --sandboxes docker,local --repeats 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from datetime import datetime
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
GREET = HERE / "tests" / "fixtures" / "harbor" / "multi-step-greet"
HARBOR_S = 2.66
"""Real Harbor 0.24's agent end -> next agent start on this task (issue 32's table)."""
_MAIN = "import sys; from evoround.cli import main; sys.argv[0] = 'evoround'; main()"


def _cli(*args: str, env: dict[str, str]) -> None:
    res = subprocess.run([sys.executable, "-c", _MAIN, *args], env=env, capture_output=True)
    if res.returncode != 0:
        sys.exit(f"evoround {args[0]}: exit {res.returncode}: {res.stderr.decode()[-500:]}")


def boundaries(job: Path) -> list[float]:
    """Each round's wall minus its agent turn, in seconds."""
    out = []
    for line in (job / "results.jsonl").read_text().splitlines():
        r = json.loads(line)
        wall = datetime.fromisoformat(r["finished_at"]) - datetime.fromisoformat(r["started_at"])
        out.append(wall.total_seconds() - r["timings"]["agent_sec"])
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sandboxes", default="docker,local")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args()
    from evoround.sandboxes.docker import default_base_image

    with tempfile.TemporaryDirectory(prefix="evoround-per-round-") as tmp:
        env = {**os.environ, "EVOROUND_HOME": f"{tmp}/home"}
        _cli("tasks", "import", str(GREET), f"{tmp}/greet", env=env)
        got: dict[str, list[float]] = {s: [] for s in args.sandboxes.split(",")}
        for rep in range(args.repeats):
            for sandbox in got:
                job = f"{sandbox}-{rep}"
                extra = ["--base-image-map", f"ubuntu:24.04={default_base_image()}"]
                _cli(
                    "run", f"{tmp}/greet", "--agent", "oracle", "-k", "2", "--mode", "mt",
                    "--sandbox", sandbox, *(extra if sandbox == "docker" else []),
                    "--out", f"{tmp}/runs", "--job", job, env=env,
                )  # fmt: skip
                got[sandbox] += boundaries(Path(tmp) / "runs" / job)
    print("agent end -> next agent start, seconds per round (multi-step-greet, oracle)")
    for sandbox, xs in got.items():
        med = statistics.median(xs)
        print(
            f"{sandbox:7s} median {med:.3f} [{min(xs):.3f}-{max(xs):.3f}] n={len(xs)}  "
            f"Harbor {HARBOR_S:.2f} s / this = {HARBOR_S / med:.1f}x"
        )


if __name__ == "__main__":
    main()
