"""Configuration invariance: one fixed job run in two configurations must give the same
figures (docs/testing.md, DESIGN "Configuration invariance").

Why a helper: "the figures are equal" is easy to assert and hard to debug; a failing
comparison must say *which* figure differs *where*. :func:`figures` reads every figure of
``evoround report --json`` (the per-job JSON and the whole report: metrics, compliance,
intervals, leaderboard, charts, task grids); :func:`differences` walks two of them and
lists each leaf that differs by its path (``jobs[0].metrics.mt_at_k: 1.0 != 0.75``).

What may differ (and is left out): timings, ids and host names, and what names the job
folder (its name and path; the name, as a whole word, is replaced by ``<job>`` inside every
string value, so a chart label ``oracle (job-a)`` equals ``oracle (job-b)``: give jobs
names no other text contains). Anything else that differs is a
difference, including the count of records and the report's problems.

Use: :func:`run_twice` runs the same job in two configurations (each a list of extra
``run`` arguments) and returns the differences; :func:`assert_invariant` fails with them.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from tests.helpers import FIXTURES, evoround_cli

GREET = FIXTURES / "harbor" / "multi-step-greet"
"""The set's imported task: Harbor's multi-step fixture (3 steps, a script verifier), brought
in with ``evoround tasks import``; Docker builds its image from its Dockerfile."""
GREET_NAME = "evoround-greet-multi-step"
"""Its task name once imported."""

JUDGE = {
    "answers": [
        {"match": "Check judge-usage", "content": '{"result": "fail", "reason": "no call shown"}'}
    ],
    "default": '{"result": "pass", "reason": "says what changed"}',
}
"""The replay server's judge for ``checkkinds`` (tests/fixtures/invariance): the round-2
check fails, the task-wide one passes."""
IGNORED_KEYS = frozenset(
    {
        "path",  # where the job folder or a task folder lies
        "id",  # a round's id in the HTML report (a hash of the job name)
        "host",
        "running",  # who holds the job lock right now (None once it ended)
        "since",
        "started_at",
        "finished_at",
        "timings",
        "snapshot_id",
        "parent_snapshot_id",
    }
)
"""Keys whose values are timings, ids or host names, never figures."""
_TIMING = re.compile(r".*_(sec|s|ms|seconds)$")


def figures(job: Path, *, env: Mapping[str, str] | None = None, resamples: int = 200) -> Any:
    """Every figure of ``report --json`` for ``job`` (bootstrap with the default seed:
    deterministic), with the ignored keys left out and the job's names (its folder's, and
    the one its job.json was written with) replaced."""
    res = evoround_cli(
        "report", "--json", "--no-html", "--resamples", str(resamples), str(job), env=env
    )
    assert res.returncode == 0, res.stderr[-3000:]
    data = json.loads(res.stdout)
    for name in {data["jobs"][0]["config"]["job"], job.name}:  # a copy keeps its lock's name
        data = _normalise(data, name)
    return data


def _normalise(data: Any, job: str) -> Any:
    if isinstance(data, dict):
        return {
            k: _normalise(v, job)
            for k, v in data.items()
            if k not in IGNORED_KEYS and not _TIMING.fullmatch(str(k))
        }
    if isinstance(data, list):
        return [_normalise(v, job) for v in data]
    if isinstance(data, str) and job:
        return re.sub(rf"(?<![\w.-]){re.escape(job)}(?![\w])", "<job>", data)
    return data


CONFIGURATION_KEYS = frozenset({"config", "protocol", "sandbox", "isolation"})
"""Keys that describe the configuration a job ran in (its options, the report's protocol
table, the sandbox and its isolation): they differ between two configurations by design,
and are what :func:`figures_only` leaves out when two configurations are compared."""


def figures_only(data: Any) -> Any:
    """:func:`figures` without :data:`CONFIGURATION_KEYS` (at any depth)."""
    if isinstance(data, dict):
        return {k: figures_only(v) for k, v in data.items() if k not in CONFIGURATION_KEYS}
    if isinstance(data, list):
        return [figures_only(v) for v in data]
    return data


def differences(a: Any, b: Any, where: str = "") -> list[str]:
    """Each leaf that differs between two :func:`figures`, as ``path: a != b``."""
    if isinstance(a, dict) and isinstance(b, dict):
        out: list[str] = []
        for k in list(a) + [k for k in b if k not in a]:
            here = f"{where}.{k}" if where else str(k)
            if k not in a or k not in b:
                out.append(f"{here}: only in {'second' if k not in a else 'first'}")
            else:
                out += differences(a[k], b[k], here)
        return out
    if isinstance(a, list) and isinstance(b, list):
        out = []
        if len(a) != len(b):
            out.append(f"{where}: {len(a)} items != {len(b)} items")
        for i, (x, y) in enumerate(zip(a, b, strict=False)):
            out += differences(x, y, f"{where}[{i}]")
        return out
    return [] if a == b else [f"{where}: {_short(a)} != {_short(b)}"]


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def assert_invariant(a: Path, b: Path, *, env: Mapping[str, str] | None = None) -> None:
    """Fail, listing every differing figure, unless jobs ``a`` and ``b`` report the same."""
    diff = differences(figures(a, env=env), figures(b, env=env))
    assert not diff, f"{a.name} and {b.name} differ in {len(diff)} figure(s):\n" + "\n".join(
        diff[:40]
    )


def run_twice(
    run_args: Sequence[str],
    out: Path,
    first: Sequence[str],
    second: Sequence[str],
    *,
    env: Mapping[str, str] | None = None,
) -> list[str]:
    """Run the job ``run_args`` twice into ``out`` (jobs ``invariance-a`` and ``-b``), with the extra
    arguments ``first`` and ``second``; the figures that differ (empty: invariant)."""
    jobs = []
    for name, extra in (("invariance-a", first), ("invariance-b", second)):
        res = evoround_cli("run", *run_args, "--out", str(out), "--job", name, *extra, env=env)
        assert res.returncode == 0, res.stderr[-3000:]
        jobs.append(out / name)
    return differences(figures(jobs[0], env=env), figures(jobs[1], env=env))


def verdicts(job: Path, task: str) -> dict[str, set[str]]:
    """Check id -> the verdicts it got in the job's rounds of ``task``."""
    out: dict[str, set[str]] = {}
    for line in (job / "results.jsonl").read_text().splitlines():
        rec = json.loads(line)
        for check in rec["checks"] if rec["task"] == task else []:
            out.setdefault(check["id"], set()).add(check["result"])
    return out
