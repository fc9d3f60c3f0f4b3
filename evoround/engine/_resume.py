"""Resume: continue an interrupted job without re-running or losing a round.

Why this exists: a job killed mid-attempt (SIGKILL, OOM, a lost node) has a durable
prefix of its rounds in results.jsonl. Re-running the attempt from round 1 would
duplicate records and, for an LLM agent, change its history; instead the attempt
continues after its last recorded round, from that round's snapshot and the agent
session the scaffold saved beside it (``round-NN/agent``).
"""

from __future__ import annotations

import json
import os
from collections import defaultdict
from pathlib import Path

from evoround.engine._controller import ResumeFrom
from evoround.fileio import atomic_write
from evoround.results import (
    INFRA_STATUSES,
    Mode,
    ResultLine,
    RoundResult,
    read_results,
    scan_results,
)
from evoround.sandboxes import SandboxError, SandboxProvider
from evoround.scaffolds import STATE_DIR
from evoround.snapshots import SnapshotStore


class ResumeError(SandboxError):
    """An attempt cannot be continued (its snapshot is gone): an infra failure, not the agent's."""


AttemptKey = tuple[str, str, int]


def attempt_records(records: list[RoundResult]) -> dict[AttemptKey, list[RoundResult]]:
    """Records grouped by (task, mode, attempt), each list sorted by round."""
    groups: dict[AttemptKey, list[RoundResult]] = defaultdict(list)
    for r in records:
        groups[(r.task, r.mode.value, r.attempt)].append(r)
    for rs in groups.values():
        rs.sort(key=lambda r: r.round)
    return groups


def mt_resume_point(
    recorded: list[RoundResult],
    *,
    job_dir: Path,
    store: SnapshotStore,
    provider: SandboxProvider,
) -> ResumeFrom | None:
    """Where an MT attempt with these recorded rounds continues; None to start it fresh.

    Only called for unfinished attempts (see :func:`attempt_ends`): under fail-stop every
    recorded round passed; under ``--on-fail continue`` a failed round may be among them.
    Either way the attempt continues from the last recorded round's snapshot.
    """
    if not recorded:
        return None
    last = max(recorded, key=lambda r: r.round)
    if last.snapshot_id is None:
        raise ResumeError(f"{last.task} mt-{last.attempt:02d} r{last.round}: no snapshot recorded")
    try:
        snap = store.get(last.snapshot_id)
    except (FileNotFoundError, KeyError) as e:
        raise ResumeError(f"snapshot {last.snapshot_id} of {last.task} is not in the store") from e
    if not provider.has_snapshot(snap):
        raise ResumeError(f"snapshot {snap.id} of {last.task} r{last.round}: content is gone")
    art = job_dir / (last.artifacts or f"{last.task}/mt-{last.attempt:02d}/round-{last.round:02d}")
    return ResumeFrom(round=last.round, snapshot=snap, state_dir=art / STATE_DIR)


def infra_attempts(records: list[RoundResult]) -> set[AttemptKey]:
    """Attempts (an SR round counts as its own attempt) that ended in an infra failure."""
    out: set[AttemptKey] = set()
    for key, rs in attempt_records(records).items():
        if key[1] == Mode.sr.value:
            if any(r.status in INFRA_STATUSES for r in rs):
                out.add(key)
        elif rs[-1].status in INFRA_STATUSES:
            out.add(key)
    return out


def drop_infra_failures(job_dir: Path) -> int:
    """For ``--retry-failed``: take the infra records out of results.jsonl (kept aside in
    ``results.infra.jsonl``) so the run re-does exactly those rounds; MT attempts continue
    from their last good round. Returns how many records were dropped.

    The rewrite is atomic (write a temporary file, fsync, rename): a crash leaves either
    the old or the new file, never a mix.
    """
    path = job_dir / "results.jsonl"
    records, _ = read_results(path)
    dropped = [r for r in records if r.status in INFRA_STATUSES]
    if not dropped:
        return 0
    kept = [r for r in records if r.status not in INFRA_STATUSES]
    with open(job_dir / "results.infra.jsonl", "a", encoding="utf-8") as f:
        for r in dropped:
            f.write(r.model_dump_json() + "\n")
        f.flush()
        os.fsync(f.fileno())
    atomic_write(path, "".join(json.dumps(json.loads(r.model_dump_json())) + "\n" for r in kept))
    return len(dropped)


SET_ASIDE = "results.set-aside.jsonl"
"""Lines of results.jsonl a run could not build on, moved aside (kept, never counted)."""


def _after_gaps(lines: list[ResultLine], first_round: int) -> set[int]:
    """Line numbers of MT records that follow a missing round of their attempt: the
    attempt continues from the round before the gap, so they will be run again."""
    groups: dict[AttemptKey, list[ResultLine]] = defaultdict(list)
    for line in lines:
        r = line.record
        if r is not None and r.mode is Mode.mt:
            groups[(r.task, r.mode.value, r.attempt)].append(line)
    out: set[int] = set()
    for group in groups.values():
        expected, broken = first_round, False
        for line in sorted(group, key=lambda ln: ln.record.round if ln.record else 0):
            assert line.record is not None
            broken = broken or line.record.round != expected
            if broken:
                out.add(line.number)
            expected += 1
    return out


def set_aside_unusable(job_dir: Path, first_round: int = 1) -> str | None:
    """Before a run (under the job lock): take out of results.jsonl what a resume cannot
    build on, into :data:`SET_ASIDE`: unreadable (torn) lines, second records of a key,
    and MT records after a missing round (see :func:`_after_gaps`). Their rounds are then
    missing, so the run re-runs them. ``first_round``: the first round of the job's
    ``--rounds`` window. Returns one line saying what was set aside (None: nothing).

    Atomic like :func:`drop_infra_failures`: the set-aside lines are fsynced first, then
    results.jsonl is replaced whole."""
    path = job_dir / "results.jsonl"
    lines = scan_results(path)
    torn = {ln.number for ln in lines if ln.record is None}
    dup = {ln.number for ln in lines if ln.record is not None and ln.first is not None}
    usable = [ln for ln in lines if ln.number not in torn | dup]
    gaps = _after_gaps(usable, first_round)
    bad = torn | dup | gaps
    if not bad:
        return None
    with open(job_dir / SET_ASIDE, "a", encoding="utf-8") as f:
        f.write("".join(ln.text + "\n" for ln in lines if ln.number in bad))
        f.flush()
        os.fsync(f.fileno())
    atomic_write(path, "".join(ln.text + "\n" for ln in usable if ln.number not in gaps))
    kinds = [
        f"{len(s)} {what}"
        for s, what in (
            (torn, "unreadable line(s)"),
            (dup, "duplicate record(s)"),
            (gaps, "record(s) after a missing round"),
        )
        if s
    ]
    return f"{path}: moved {', '.join(kinds)} to {SET_ASIDE}; the rounds now missing run again"
