"""A unit of work (one MT attempt, or one SR round) and how one runs in this process.

Kept apart from the job so the executors (thread pool, Ray) can depend on units without
depending on the job that plans them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING

from evoround.engine._controller import (
    RunContext,
    Window,
    attempt_ends,
    run_mt_attempt,
    run_sr_round,
    window_of,
)
from evoround.engine._resume import mt_resume_point
from evoround.results import ISOLATION_FILE, Mode, RoundResult
from evoround.sandboxes import SandboxProvider, job_folder_key, make_provider
from evoround.tasks import Task

if TYPE_CHECKING:
    from evoround.scaffolds import Scaffold
    from evoround.snapshots import SnapshotStore


@dataclass(frozen=True)
class Unit:
    """The smallest piece of work: an MT attempt, or one SR round."""

    task: Task
    mode: Mode
    attempt: int
    round: int | None = None
    on_fail: str = "stop"
    """MT: ``stop`` (fail-stop) or ``continue`` (see :func:`attempt_ends`)."""
    window: Window | None = None
    """``--rounds A-B``: the rounds an MT attempt runs (earlier ones fast-forwarded)."""

    @property
    def rounds(self) -> int:
        lo, hi = window_of(self.task, self.window)
        return hi - lo + 1 if self.mode is Mode.mt else 1

    @property
    def label(self) -> str:
        where = f"r{self.round:02d}" if self.round else "all rounds"
        return f"{self.task.name} {self.mode.value}-{self.attempt:02d} {where}"


def plan_units(
    tasks: list[Task],
    modes: list[Mode],
    attempts: int,
    on_fail: str = "stop",
    window: Window | None = None,
) -> list[Unit]:
    units: list[Unit] = []
    for task in tasks:
        lo, hi = window_of(task, window)
        for a in range(1, attempts + 1):
            if Mode.mt in modes:
                units.append(Unit(task, Mode.mt, a, on_fail=on_fail, window=window))
            if Mode.sr in modes:
                units.extend(Unit(task, Mode.sr, a, i) for i in range(lo, hi + 1))
    return units


def unit_done(unit: Unit, records: list[RoundResult]) -> bool:
    mine = [
        r
        for r in records
        if r.task == unit.task.name and r.mode is unit.mode and r.attempt == unit.attempt
    ]
    if unit.mode is Mode.sr:
        return any(r.round == unit.round for r in mine)
    return any(attempt_ends(unit.task, r, unit.on_fail, unit.window) for r in mine)


class JobObserver:
    """Progress hooks (the CLI draws a rich progress display from these)."""

    def job_started(self, units: list[Unit], skipped: int) -> None: ...
    def unit_started(self, unit: Unit) -> None: ...
    def round_recorded(self, unit: Unit, result: RoundResult) -> None: ...
    def unit_finished(self, unit: Unit) -> None: ...
    def job_skipped(self, done: list[Unit]) -> None:
        """The units already complete in results.jsonl (a resumed job)."""

    def unit_retry(self, unit: Unit, error: BaseException, n: int) -> None:
        """An infra failure is being retried (try ``n`` failed)."""

    def stopping(self, grace_sec: float) -> None:
        """A stop was requested: no new units; running rounds may finish."""

    def aborting(self) -> None:
        """Grace is over (or a second signal): sandboxes are being closed."""

    def budget_reached(self, reason: str) -> None:
        """A ``--max-cost``/``--max-tokens-total`` budget stopped the job from starting new
        rounds; running rounds finish and are recorded, and the job stays resumable."""


class LocalRunner:
    """Runs a unit in this process through the round controller (one worker thread each)."""

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx

    def __call__(
        self, unit: Unit, recorded: list[RoundResult], record: Callable[[RoundResult], None]
    ) -> None:
        run_unit(self.ctx, unit, recorded, record)

    def lost(self) -> str | None:
        """Threads of this process are never lost."""
        return None


def run_unit(
    base: RunContext, unit: Unit, recorded: list[RoundResult], record: Callable[[RoundResult], None]
) -> None:
    """One unit through the controller; an MT attempt with recorded rounds is continued."""
    ctx = replace(base, record=record)
    if unit.mode is Mode.mt:
        resume = mt_resume_point(
            recorded, job_dir=ctx.job_dir, store=ctx.store, provider=ctx.provider
        )
        run_mt_attempt(
            ctx, unit.task, unit.attempt, resume, on_fail=unit.on_fail, window=unit.window
        )
    else:
        assert unit.round is not None
        run_sr_round(ctx, unit.task, unit.attempt, unit.round)


def record_isolation(job_dir: Path, provider: SandboxProvider) -> None:
    """Append how the local sandbox isolates commands (bwrap, unshare, none) to
    ``<job>/sandbox.txt``; the report shows the last line. A Docker run writes nothing."""
    local = getattr(provider, "inner", provider)
    mechanism = getattr(local, "isolation", None)
    if mechanism is None:
        return
    caps = getattr(local, "limits_how", None)
    limits = f"pids and memory_mb by {caps}" if caps else "no pids/memory_mb limits (no cgroup)"
    stamp = datetime.now().isoformat(timespec="seconds")
    with open(job_dir / ISOLATION_FILE, "a", encoding="utf-8") as f:
        f.write(f"{stamp} local isolation: {mechanism}; {limits}\n")


def job_provider(
    sandbox: str,
    store: SnapshotStore,
    job_dir: Path,
    scaffold: Scaffold,
    *,
    keep_snapshots: bool = False,
    base_image_map: dict[str, str] | None = None,
    snapshot_mode: str | None = None,
) -> SandboxProvider:
    """The provider a job's units run in, the same on the local runner and a Ray worker:
    the job folder hidden from a hardened local sandbox, the scaffold's mounts, the job's
    Docker snapshot mode (from job.json: never a node's own setting), and how the local
    sandbox isolates recorded in ``sandbox.txt``."""
    provider = make_provider(
        sandbox,
        store,
        job=job_dir.name,
        keep_snapshots=keep_snapshots,
        agent_mounts=scaffold.sandbox_mounts(),
        base_image_map=base_image_map or None,
        snapshot_mode=snapshot_mode,
        hidden=[job_dir],
        persistent=scaffold.persistent_processes,
        job_folder=job_folder_key(job_dir),
    )
    record_isolation(job_dir, provider)
    return provider
