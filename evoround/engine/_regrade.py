"""Regrade a job: re-verify every stored round snapshot, without running any agent.

Why: a test was wrong (or a task was fixed) after an expensive run. Each
RoundResult points at the snapshot of the workspace after its round, so the
verifier can be run again on exactly what the agent left, with the task as it
is now (or a changed copy given with ``--tasks``). The original results.jsonl is
never touched; the new records go to ``results.regraded.jsonl`` beside it and
the flipped rounds to ``regrade.diff.json``.

Fail-stop is re-applied to MT attempts: when a round that passed now fails,
the attempt's later records are dropped from the regraded file (they would
never have run) and listed as ``truncated``. When a round that failed now
passes, the rounds after it were never run; those attempts are listed as
``incomplete`` (re-run the agent to score them).
"""

from __future__ import annotations

import dataclasses
import json
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

from pydantic import BaseModel, Field

from evoround.fileio import atomic_write
from evoround.results import (
    JobView,
    Mode,
    RoundResult,
    RoundStatus,
    classify,
    dedupe,
    load_job,
    read_results,
)
from evoround.sandboxes import SandboxError, make_provider
from evoround.snapshots import SnapshotStore
from evoround.tasks import Task, TaskFormatError, active_tests, load_task, load_tasks
from evoround.verifiers import run_pytest

REGRADED = "results.regraded.jsonl"
DIFF = "regrade.diff.json"


class Flip(BaseModel):
    task: str
    mode: str
    attempt: int
    round: int
    before: str
    after: str
    failing_tests: list[str] = Field(default_factory=list)
    """``file::name [class]`` of the tests failing after regrading."""


class RegradeReport(BaseModel):
    job: str
    results: str
    diff: str
    regraded: int = 0
    unchanged: int = 0
    flipped: list[Flip] = Field(default_factory=list)
    truncated: list[str] = Field(default_factory=list)
    """MT records dropped because an earlier round of the attempt now fails."""
    incomplete: list[str] = Field(default_factory=list)
    """MT attempts whose last recorded round now passes: later rounds never ran."""
    skipped: list[str] = Field(default_factory=list)
    task_digests: dict[str, list[str]] = Field(default_factory=dict)
    """Tasks whose digest changed: task -> [recorded, now]."""


def _label(r: RoundResult) -> str:
    return f"{r.task} {r.mode.value}-{r.attempt:02d} r{r.round:02d}"


def _outcome(r: RoundResult) -> str:
    if r.passed:
        return "passed"
    cls = r.primary_failure_class
    return cls.value if cls else r.status.value


def _load_tasks(job_dir: Path, tasks: list[Path] | None) -> dict[str, Task]:
    if tasks:
        return {t.name: t for t in load_tasks(tasks)}
    view = load_job(job_dir)
    out: dict[str, Task] = {}
    for name, ref in view.config.tasks.items():
        try:
            out[name] = load_task(ref.path)
        except (TaskFormatError, OSError):
            continue
    return out


def reverify(rec: RoundResult, task: Task, store: SnapshotStore, job_dir: Path) -> RoundResult:
    """The record as it would be with today's tests, from its stored snapshot."""
    if rec.snapshot_id is None:
        raise SandboxError("no snapshot recorded for this round")
    snap = store.get(rec.snapshot_id)
    provider = make_provider(snap.backend, store, job=rec.job)
    art = job_dir / (rec.artifacts or f"{rec.task}/regrade") / "regrade"
    env = task.config.environment
    name = f"{task.name}/regrade-{rec.mode.value}-{rec.attempt:02d}-{rec.round:02d}"
    with provider.create(task, name, snap) as clone:
        verdict = run_pytest(
            clone,
            active_tests(task, rec.round),
            rec.round,
            timeout=env.verifier_timeout_sec,
            extra_args=task.config.verifier.pytest_args,
            artifacts=art,
        )
    agent_failed = rec.status in (RoundStatus.agent_error, RoundStatus.agent_timeout)
    if agent_failed:
        status = rec.status
    elif verdict.timed_out:
        status = RoundStatus.verifier_timeout
    else:
        status = RoundStatus.passed if verdict.passed else RoundStatus.failed
    failing = [t for t in verdict.tests if t.outcome.value != "passed"]
    return rec.model_copy(
        update={
            "task_digest": task.digest,
            "passed": verdict.passed and not agent_failed,
            "status": status,
            "tests_passed": verdict.n_passed,
            "tests_total": verdict.n_total,
            "verifier_exit_code": verdict.exit_code,
            "failure_classes": classify(failing),
            "failing_tests": failing,
            "verifier_problems": verdict.problems,
        }
    )


def regrade_job(
    job_dir: Path, *, tasks: list[Path] | None = None, store: SnapshotStore | None = None
) -> RegradeReport:
    """Re-verify every round of ``job_dir``; write the regraded results and the diff."""
    from evoround.settings import evoround_home

    store = store or SnapshotStore(evoround_home() / "store")
    view = load_job(job_dir)
    by_name = _load_tasks(job_dir, tasks)
    report = RegradeReport(
        job=view.config.job, results=str(job_dir / REGRADED), diff=str(job_dir / DIFF)
    )
    for name, ref in view.config.tasks.items():
        if name in by_name and by_name[name].digest != ref.digest:
            report.task_digests[name] = [ref.digest, by_name[name].digest]

    regrader = _Regrader(by_name, store, job_dir, report)
    out: list[RoundResult] = []
    for (_, mode, _), recs in sorted(_groups(view.records).items()):
        out += regrader.attempt(recs, mt=mode == Mode.mt.value)

    atomic_write(job_dir / REGRADED, "".join(r.model_dump_json() + "\n" for r in out))
    atomic_write(job_dir / DIFF, json.dumps(report.model_dump(mode="json"), indent=2))
    return report


def _groups(records: list[RoundResult]) -> dict[tuple[str, str, int], list[RoundResult]]:
    """Records by attempt, in round order: an MT attempt is one group (fail-stop is
    re-applied within it), SR rounds of a task group together (attempt 0)."""
    groups: dict[tuple[str, str, int], list[RoundResult]] = defaultdict(list)
    for r in sorted(dedupe(records), key=lambda r: r.key):
        groups[(r.task, r.mode.value, r.attempt if r.mode is Mode.mt else 0)].append(r)
    return groups


@dataclass(frozen=True)
class _Regrader:
    """Regrades records into ``report``: the counts, flips and what fail-stop drops."""

    by_name: dict[str, Task]
    store: SnapshotStore
    job_dir: Path
    report: RegradeReport

    def attempt(self, recs: list[RoundResult], *, mt: bool) -> list[RoundResult]:
        """One group's regraded records; an MT attempt ends at its first round that fails
        now (the rest are listed as truncated: they would never have run)."""
        out: list[RoundResult] = []
        for n, rec in enumerate(recs):
            new = self.one(rec)
            out.append(new)
            if new is rec:  # not regraded: kept as it was
                continue
            if mt and not new.passed:
                self.report.truncated += [_label(r) for r in recs[n + 1 :]]
                break
            if mt and not rec.passed and rec is recs[-1] and rec.round < rec.n_rounds:
                self.report.incomplete.append(
                    f"{rec.task} mt-{rec.attempt:02d}: rounds {rec.round + 1}.."
                    f"{rec.n_rounds} never ran"
                )
        return out

    def one(self, rec: RoundResult) -> RoundResult:
        """The record regraded (counted, a flip noted), or ``rec`` itself if it cannot be."""
        task = self.by_name.get(rec.task)
        if task is None:
            self.report.skipped.append(f"{_label(rec)}: task not found")
            return rec
        try:
            new = reverify(rec, task, self.store, self.job_dir)
        except (SandboxError, KeyError, IndexError) as e:
            self.report.skipped.append(f"{_label(rec)}: {e}")
            return rec
        self.report.regraded += 1
        if new.passed != rec.passed:
            self.report.flipped.append(_flip(rec, new))
        else:
            self.report.unchanged += 1
        return new


def _flip(rec: RoundResult, new: RoundResult) -> Flip:
    return Flip(
        task=rec.task,
        mode=rec.mode.value,
        attempt=rec.attempt,
        round=rec.round,
        before=_outcome(rec),
        after=_outcome(new),
        failing_tests=[
            f"{t.file}::{t.name} [{t.failure_class or t.outcome}]" for t in new.failing_tests
        ],
    )


def regraded_view(job_dir: Path) -> JobView:
    """The job as regraded: same config, records from results.regraded.jsonl."""
    view = load_job(job_dir)
    records, problems = read_results(job_dir / REGRADED)
    return dataclasses.replace(view, records=records, problems=problems)
