"""Score a round's process checklist: pick the checks, gather the evidence, decide.

The checks of round i are its own round-scope checks plus every task-scope check.
Each check is scored on its own: a crashing rule or a failing judge gives that
check ``error`` and leaves the others alone.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Required, TypedDict, Unpack

from evoround.results import CheckOutcome, CheckResult, Evidence, TrajectoryEvent
from evoround.sandboxes import Sandbox, SandboxProvider
from evoround.snapshots import Snapshot
from evoround.tasks import CheckKind, CheckSpec, Task
from evoround.verifiers.checklist._judge import JudgeConfig, judge_check
from evoround.verifiers.checklist._model import RoundEvidence, WorkspaceDiff
from evoround.verifiers.checklist._rules import run_rule


def round_checks(task: Task, round_index: int) -> list[CheckSpec]:
    """Task-scope checks (every round) then the round's own checks."""
    # Task-level checks are scored every round whatever their ``scope`` says: a task-level
    # check that no round scores would be a silent hole in the checklist.
    return list(task.config.checks) + list(task.round(round_index).spec.checks)


class _Outcome(TypedDict, total=False):
    """The fields of a check's result that its scoring decides (the rest come from the spec).
    Only those given are set, so the result's set fields stay as they were."""

    result: Required[CheckOutcome]
    detail: str
    evidence: list[Evidence]


def _result(spec: CheckSpec, round_index: int, **kw: Unpack[_Outcome]) -> CheckResult:
    return CheckResult(
        id=spec.id,
        category=spec.category,
        kind=spec.kind,
        scope=spec.scope,
        round=round_index,
        rule=spec.rule,
        wins_over=spec.wins_over,
        conflict=spec.wins_over is not None,
        **kw,
    )


def score_checks(
    specs: list[CheckSpec], ev: RoundEvidence, judge: JudgeConfig | None = None
) -> list[CheckResult]:
    """Score every check; never raises."""
    out: list[CheckResult] = []
    for spec in specs:
        if spec.kind is CheckKind.rule:
            if not spec.rule:
                out.append(
                    _result(
                        spec,
                        ev.round,
                        result=CheckOutcome.error,
                        detail="rule check without a 'rule' name",
                    )
                )
                continue
            v = run_rule(spec.rule, dict(spec.params), ev)
            out.append(
                _result(spec, ev.round, result=v.result, detail=v.detail, evidence=v.evidence)
            )
        else:
            try:
                out.append(judge_check(spec, ev, judge))
            except Exception as e:  # belt and braces: judge_check already maps failures
                out.append(
                    _result(
                        spec,
                        ev.round,
                        result=CheckOutcome.error,
                        detail=f"judge crashed: {type(e).__name__}: {e}",
                    )
                )
    return out


# ---- workspace diff from snapshots -------------------------------------------------


def snapshot_diff(
    provider: SandboxProvider, task: Task, parent: Snapshot | None, snap: Snapshot | None
) -> WorkspaceDiff | None:
    """The diff between the round's start (``parent``; None: the workspace a sandbox
    without a snapshot starts with) and its end (``snap``), from the trees the backend
    that took them gives: every backend, wherever its bytes live, diffs the same way.

    None when a side cannot be had (content gone, over the task's limits): diff-based
    checks are then not_applicable rather than guessed.
    """
    if snap is None:
        return None
    after = provider.snapshot_tree(task, snap)
    before = provider.initial_tree(task) if parent is None else provider.snapshot_tree(task, parent)
    if after is None or before is None:
        return None
    return WorkspaceDiff(
        before=dict(before.files),
        after=dict(after.files),
        read_before=before.read,
        read_after=after.read,
    )


def safe_diff(
    provider: SandboxProvider, task: Task, parent: Snapshot | None, snap: Snapshot | None
) -> WorkspaceDiff | None:
    """:func:`snapshot_diff`, or None when it cannot be read: a missing manifest must not
    sink the round (diff checks become not_applicable, the change is not recorded)."""
    try:
        return snapshot_diff(provider, task, parent, snap)
    except Exception:
        return None


def write_checks(path: Path, results: list[CheckResult]) -> None:
    path.write_text(
        json.dumps([json.loads(r.model_dump_json()) for r in results], indent=2), encoding="utf-8"
    )


# ---- one round, as the controller calls it ----------------------------------------------

_GIT_HEAD = (
    "if [ -d .git ]; then git rev-parse -q --verify HEAD 2>/dev/null || echo NONE; "
    "else echo NOREPO; fi"
)


def needs_commits(specs: list[CheckSpec]) -> bool:
    """Only ask git when a check reads commits (it costs two sandbox execs per round)."""
    return any(s.kind is CheckKind.judge or s.rule == "commit_message" for s in specs)


def git_head(sandbox: Sandbox) -> str | None:
    """HEAD before the round: a sha, "NONE" (repo without commits) or None (no repo)."""
    try:
        res = sandbox.exec(_GIT_HEAD, timeout=30)
    except Exception:
        return None
    out = res.stdout.strip()
    return None if not res.ok or out == "NOREPO" or not out else out


def new_commits(sandbox: Sandbox, base: str | None) -> list[str] | None:
    """Subjects of commits made since ``base`` (oldest first); None if not a repository."""
    head = git_head(sandbox)
    if head is None:
        return None
    if head == "NONE" or head == base:
        return []
    rng = "HEAD" if base in (None, "NONE") else f"{base}..HEAD"
    try:
        res = sandbox.exec(f"git log --reverse --format=%s {rng}", timeout=30)
    except Exception:
        return None
    return [line for line in res.stdout.splitlines() if line.strip()] if res.ok else None


def score_round(
    task: Task,
    round_index: int,
    *,
    message: str,
    events: list[TrajectoryEvent],
    provider: SandboxProvider,
    parent: Snapshot | None,
    snap: Snapshot | None,
    commits: list[str] | None,
    has_process: bool,
    judge: JudgeConfig | None,
    diff: WorkspaceDiff | None = None,
) -> list[CheckResult]:
    """The round's checklist, scored from its trajectory segment, diff and commits
    (``diff``: the round's diff when the caller has it already, else read here)."""
    specs = round_checks(task, round_index)
    if not specs:
        return []
    if diff is None:
        diff = safe_diff(provider, task, parent, snap)
    ev = RoundEvidence(
        task=task.name,
        round=round_index,
        system_prompt=task.config.task.system_prompt,
        user_message=message,
        events=events,
        diff=diff,
        commits=commits,
        has_process=has_process,
    )
    return score_checks(specs, ev, judge)
