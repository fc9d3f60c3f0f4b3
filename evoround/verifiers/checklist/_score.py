"""Score a round's process checklist: pick the checks, gather the evidence, decide.

The checks of round i are its own round-scope checks plus every task-scope check.
Each check is scored on its own: a crashing rule or a failing judge gives that
check ``error`` and leaves the others alone.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Required, TypedDict, Unpack

from evoround.results import CheckOutcome, CheckResult, Evidence, TrajectoryEvent
from evoround.sandboxes import Sandbox
from evoround.snapshots import Snapshot, SnapshotStore
from evoround.tasks import CheckKind, CheckSpec, Task
from evoround.verifiers.checklist._judge import JudgeConfig, judge_check
from evoround.verifiers.checklist._model import RoundEvidence, WorkspaceDiff, ignored
from evoround.verifiers.checklist._rules import run_rule

LOCAL_BACKEND = "local"


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


def _dir_map(root: Path) -> dict[str, str]:
    out: dict[str, str] = {}
    for p in sorted(root.rglob("*")):
        if p.is_file() and not p.is_symlink():
            rel = p.relative_to(root).as_posix()
            if not ignored(rel):
                out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
    return out


def _manifest_map(store: SnapshotStore, snap: Snapshot) -> dict[str, str]:
    return {
        str(e["path"]): str(e["sha256"])
        for e in store.manifest(snap.locator)
        if e.get("type") == "file"
    }


def snapshot_diff(
    store: SnapshotStore, task: Task, parent: Snapshot | None, snap: Snapshot | None
) -> WorkspaceDiff | None:
    """The diff between two local snapshots (``parent`` None: the task's initial workspace).

    Other backends keep their bytes elsewhere (Docker images): None, so diff-based
    checks are not_applicable there rather than guessed.
    """
    if snap is None or snap.backend != LOCAL_BACKEND:
        return None
    if parent is not None and parent.backend != LOCAL_BACKEND:
        return None

    def blob(digest: str | None) -> bytes | None:
        if digest is None:
            return None
        path = store.root / "blobs" / digest[:2] / digest
        return path.read_bytes() if path.is_file() else None

    after = _manifest_map(store, snap)
    if parent is None:
        ws = task.workspace_dir
        before = _dir_map(ws) if ws.is_dir() else {}

        def read_before(p: str) -> bytes | None:
            f = ws / p
            return f.read_bytes() if p in before and f.is_file() else None
    else:
        before = _manifest_map(store, parent)

        def read_before(p: str) -> bytes | None:
            return blob(before.get(p))

    return WorkspaceDiff(
        before=before,
        after=after,
        read_before=read_before,
        read_after=lambda p: blob(after.get(p)),
    )


def safe_diff(
    store: SnapshotStore, task: Task, parent: Snapshot | None, snap: Snapshot | None
) -> WorkspaceDiff | None:
    """:func:`snapshot_diff`, or None when it cannot be read: a missing manifest must not
    sink the round (diff checks become not_applicable, the change is not recorded)."""
    try:
        return snapshot_diff(store, task, parent, snap)
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
    store: SnapshotStore,
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
        diff = safe_diff(store, task, parent, snap)
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
