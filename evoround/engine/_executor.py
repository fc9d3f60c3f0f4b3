"""Run a job's units N at a time, durably, with infra retries and a graceful stop.

Why the shape: the driver (this module, in the controller process) is the only writer
of results.jsonl. Units run in worker threads (locally) or as Ray tasks (see
:mod:`evoround.engine._ray`); either way a *runner* executes one unit and hands
every finished round to :meth:`Executor.record`, which:

* writes it durably (fsync) before the attempt may start its next round,
* refuses a key already written (resume and retries can never duplicate a round),
* turns an ``infra`` round into a retry (tenacity backoff) while retries remain; the retry
  continues the attempt from its last recorded round, exactly like a resume,
* after a stop request, unwinds the attempt right after the write (a round boundary).

Signals: the first Ctrl-C/SIGTERM stops new work and lets running rounds finish within
``grace`` seconds; a second one (or the grace running out) aborts: nothing more is
recorded, sandboxes are closed (containers removed) and the job stays resumable.
"""

from __future__ import annotations

import contextlib
import logging
import queue
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Protocol

from evoround.engine._controller import attempt_ends, window_of
from evoround.engine._retry import InfraFailure, infra_retries, retry_infra
from evoround.engine._units import JobObserver, Unit
from evoround.results import INFRA_STATUSES, Mode, ResultsWriter, RoundResult, RoundStatus
from evoround.sandboxes import SandboxError
from evoround.scaffolds import ReferenceSolutionError, RoundSetupError
from evoround.throttle import in_this_context

log = logging.getLogger(__name__)
"""The engine's log (``evoround -v``: INFO, ``--debug``: DEBUG), to stderr through rich."""


class JobStopping(BaseException):  # noqa: N818 - a control-flow signal, not an error
    """Unwinds an attempt at a round boundary after a stop request (its round is recorded)."""


class JobAborted(BaseException):  # noqa: N818
    """Unwinds an attempt without recording anything more (second Ctrl-C, grace over)."""


class RunnerLost(RuntimeError):
    """The runner can run nothing more (the Ray head is gone): the job stopped where it was;
    every round recorded so far is kept and ``--resume`` continues it."""


RecordFn = Callable[[RoundResult], None]

TASK_FAULTS = (ReferenceSolutionError, RoundSetupError)
"""Failures of the task itself before a round's agent could run: its reference solution (the
oracle's turn, or a reference state an SR round or ``--rounds`` window starts from) or a
round's set-up failed. Recorded once as ``setup_error`` (a task error): never retried, never
``infra``, not re-run by ``--resume``/``--retry-failed``."""


class UnitRunner(Protocol):
    """Executes one unit; calls ``record`` for every finished round, in order.

    ``recorded`` are the unit's rounds already in results.jsonl: an MT runner continues
    after the last of them (see :mod:`evoround.engine._resume`).
    """

    def __call__(self, unit: Unit, recorded: list[RoundResult], record: RecordFn) -> None: ...

    def lost(self) -> str | None:
        """Why the runner can run nothing more (None: it can). Checked by the driver's main
        thread while units run: a unit blocked on a lost cluster never returns."""
        ...


@dataclass
class RunOptions:
    """How a job executes (none of this is part of the config lock: it does not change results)."""

    concurrency: int = 1
    grace_sec: float = 30.0
    retries: int | None = None
    """Infra retries per unit (None: ``EVOROUND_INFRA_RETRIES``, default 3)."""
    retry_failed: bool = False
    """Re-run the attempts that ended in infra failures (``--retry-failed``)."""
    executor: str = "local"
    """``local`` (threads) or ``ray``."""
    ray_address: str | None = None
    max_containers: int | None = None
    max_image_builds: int = 1
    max_model_connections: int | None = None
    max_cost_usd: float | None = None
    """Budget: start no new round once the job's rounds cost this much (``--max-cost``)."""
    max_tokens_total: int | None = None
    """Budget: start no new round once the job's rounds used this many tokens."""
    extra: dict[str, object] = field(default_factory=dict)


def unit_key(unit: Unit) -> tuple[str, str, int]:
    return (unit.task.name, unit.mode.value, unit.attempt)


class Executor:
    """Feeds units to ``concurrency`` worker threads through a bounded queue (backpressure)."""

    def __init__(
        self,
        runner: UnitRunner,
        writer: ResultsWriter,
        existing: list[RoundResult],
        *,
        observer: JobObserver,
        options: RunOptions,
        make_unrun_result: Callable[[Unit, int, Exception], RoundResult],
        on_abort: Callable[[], None] = lambda: None,
    ) -> None:
        self.runner = runner
        self.writer = writer
        self.observer = observer
        self.options = options
        self.make_unrun_result = make_unrun_result
        self.on_abort = on_abort
        self._lock = threading.Lock()
        self._written = {r.key for r in existing}
        self._by_attempt: dict[tuple[str, str, int], list[RoundResult]] = {}
        for r in existing:
            self._by_attempt.setdefault((r.task, r.mode.value, r.attempt), []).append(r)
        self.stopping = threading.Event()
        self.aborting = threading.Event()
        self.errors: list[BaseException] = []
        self.retries = infra_retries() if options.retries is None else options.retries
        self.spent_usd = 0.0
        self.spent_tokens = 0
        self.budget_reason: str | None = None
        self.undone = 0
        """Units a stop left unstarted or unfinished (a budget that left none stopped nothing)."""
        for r in existing:  # a budget covers the whole job, rounds of earlier runs too
            self._spend(r)
        self._check_budget()

    # -- budgets -----------------------------------------------------------------------
    def _spend(self, result: RoundResult) -> None:
        u = result.usage
        if u is None:
            return
        self.spent_tokens += u.total_tokens
        if u.cost_usd is not None:
            self.spent_usd += u.cost_usd
        elif u.total_tokens and self.options.max_cost_usd is not None:
            self.budget_reason = self.budget_reason or (
                f"--max-cost ${self.options.max_cost_usd:g} cannot be kept: round "
                f"{result.round} of {result.task} has no known price"
            )

    def _check_budget(self) -> None:
        """Once a budget is reached: no new unit, no new round (running rounds finish)."""
        o = self.options
        if self.budget_reason is None:
            if o.max_cost_usd is not None and self.spent_usd >= o.max_cost_usd:
                self.budget_reason = (
                    f"--max-cost ${o.max_cost_usd:g} reached (spent ${self.spent_usd:.4f})"
                )
            elif o.max_tokens_total is not None and self.spent_tokens >= o.max_tokens_total:
                self.budget_reason = (
                    f"--max-tokens-total {o.max_tokens_total} reached "
                    f"(used {self.spent_tokens} tokens)"
                )
        if self.budget_reason is not None and not self.stopping.is_set():
            log.warning("budget: %s; starting no new round", self.budget_reason)
            self.stopping.set()

    # -- the single writer ------------------------------------------------------------
    def _record(self, unit: Unit, result: RoundResult, last_try: bool) -> None:
        if self.aborting.is_set():
            raise JobAborted
        if result.status in INFRA_STATUSES and not last_try:
            raise InfraFailure(result.error or "infra failure", result)
        with self._lock:
            if result.key in self._written:
                return  # a retried Ray task re-yielding a round it already streamed
            self.writer.append(result)
            self._written.add(result.key)
            self._by_attempt.setdefault(unit_key(unit), []).append(result)
            self._spend(result)
        log.info(
            "%s round %d: %s (agent %.1fs, verify %.1fs%s)%s",
            unit.label,
            result.round,
            result.status.value,
            result.timings.agent_sec,
            result.timings.verify_sec,
            f", {result.usage.total_tokens} tokens" if result.usage else "",
            f": {result.error.splitlines()[0][:160]}" if result.error else "",
        )
        self.observer.round_recorded(unit, result)
        self._check_budget()
        if self.stopping.is_set() and not self._unit_complete(unit, result):
            raise JobStopping

    @staticmethod
    def _unit_complete(unit: Unit, result: RoundResult) -> bool:
        return unit.mode is Mode.sr or attempt_ends(unit.task, result, unit.on_fail, unit.window)

    def _recorded(self, unit: Unit) -> list[RoundResult]:
        with self._lock:
            rs = list(self._by_attempt.get(unit_key(unit), []))
        if unit.mode is Mode.sr:
            return [r for r in rs if r.round == unit.round]
        return sorted(rs, key=lambda r: r.round)

    # -- one unit, with infra retries -----------------------------------------------
    def run_unit(self, unit: Unit) -> None:
        last = self.retries + 1

        def one_try(n: int) -> None:
            if self.aborting.is_set():
                raise JobAborted
            recorded = self._recorded(unit)
            try:
                self.runner(unit, recorded, lambda r: self._record(unit, r, n >= last))
            except TASK_FAULTS as e:  # the task is broken: retrying cannot help
                self._record(unit, self.make_unrun_result(unit, self._next_round(unit), e), True)
            except SandboxError as e:
                if self.stopping.is_set():
                    raise JobStopping from e  # not recorded: the resume re-does this round
                if n < last:
                    raise
                if not isinstance(e, InfraFailure):  # set-up failed before a round was recorded
                    result = self.make_unrun_result(unit, self._next_round(unit), e)
                    self._record(unit, result, True)
                elif e.result is not None:  # stopping: record the infra round as it is
                    self._record(unit, e.result, True)

        def on_retry(exc: BaseException, n: int) -> None:
            log.warning("%s: infra failure (try %d), retrying: %s", unit.label, n, exc)
            self.observer.unit_retry(unit, exc, n)

        log.info("%s: started", unit.label)
        self.observer.unit_started(unit)
        try:
            retry_infra(one_try, retries=self.retries, on_retry=on_retry)
        finally:
            self._forget(unit)
            self.observer.unit_finished(unit)

    def _forget(self, unit: Unit) -> None:
        """Drop a finished unit's records: they are on disk, and a job of thousands of rounds
        must not hold every RoundResult in memory (they were the controller's growth)."""
        with self._lock:
            rs = self._by_attempt.get(unit_key(unit), [])
            mine = [r for r in rs if unit.mode is Mode.mt or r.round == unit.round]
            keep = [r for r in rs if not (unit.mode is Mode.mt or r.round == unit.round)]
            if keep:
                self._by_attempt[unit_key(unit)] = keep
            else:
                self._by_attempt.pop(unit_key(unit), None)
            self._written.difference_update(r.key for r in mine)

    def _next_round(self, unit: Unit) -> int:
        if unit.mode is Mode.sr:
            return unit.round or 1
        rs = self._recorded(unit)
        return rs[-1].round + 1 if rs else window_of(unit.task, unit.window)[0]

    # -- the pool ----------------------------------------------------------------------
    def _worker(self, q: queue.Queue[Unit | None]) -> None:
        while True:
            unit = q.get()
            if unit is None:
                return
            if self.stopping.is_set():
                with self._lock:
                    self.undone += 1
                continue
            try:
                self.run_unit(unit)
            except (JobStopping, JobAborted):
                with self._lock:
                    self.undone += 1
            except BaseException as e:  # a bug: keep it, stop the job, re-raise in the driver
                log.debug("%s: unexpected error", unit.label, exc_info=True)
                self.errors.append(e)
                self.stopping.set()

    def run(self, units: list[Unit]) -> None:
        """Run ``units``; raises KeyboardInterrupt after an interrupted (but consistent) stop."""
        n = max(1, self.options.concurrency)
        log.info(
            "running %d units, %d at a time (%s executor)", len(units), n, self.options.executor
        )
        q: queue.Queue[Unit | None] = queue.Queue(maxsize=n)
        threads = [
            threading.Thread(
                target=in_this_context(self._worker),  # the job's model limit goes along
                args=(q,),
                name=f"evoround-unit-{i}",
                daemon=True,
            )
            for i in range(n)
        ]
        for t in threads:
            t.start()
        try:
            for i, unit in enumerate(units):
                queued = False
                while not (queued := self._put(q, unit)):
                    self._check_runner()
                    if self.stopping.is_set():
                        break
                if self.stopping.is_set():
                    with self._lock:  # never queued: the rest (and this one if not queued)
                        self.undone += len(units) - i - (1 if queued else 0)
                    break
            for _ in threads:
                while not self._put(q, None):
                    self._check_runner()
            self._join(threads, deadline=None, check=self._check_runner)
        except KeyboardInterrupt:
            self._interrupted(q, threads)
            raise
        if self.errors:
            raise self.errors[0]
        if self.budget_reason is not None and self.undone:
            self.observer.budget_reached(
                f"{self.budget_reason}; {self.undone} of {len(units)} "
                "attempts left unstarted or unfinished"
            )

    @staticmethod
    def _put(q: queue.Queue[Unit | None], item: Unit | None) -> bool:
        try:
            q.put(item, timeout=0.2)
            return True
        except queue.Full:
            return False

    def _check_runner(self) -> None:
        """Stop the job (:class:`RunnerLost`) once the runner says it can run nothing more:
        nothing more is recorded and the unit threads (daemons) are left where they hang."""
        reason = self.runner.lost()
        if reason is not None:
            self.stopping.set()
            self.aborting.set()
            raise RunnerLost(reason)

    @staticmethod
    def _join(
        threads: list[threading.Thread],
        deadline: float | None,
        check: Callable[[], None] = lambda: None,
    ) -> bool:
        for t in threads:
            while t.is_alive():
                check()
                if deadline is not None and time.monotonic() >= deadline:
                    return False
                t.join(0.2)
        return True

    def _interrupted(self, q: queue.Queue[Unit | None], threads: list[threading.Thread]) -> None:
        """First signal: no new units; running rounds get ``grace_sec`` to finish and record.
        Second signal or grace over: abort, close every sandbox, return."""
        self.stopping.set()
        self.observer.stopping(self.options.grace_sec)
        while True:  # drop queued units; workers exit on the sentinels
            try:
                q.get_nowait()
            except queue.Empty:
                break
        for _ in threads:
            with contextlib.suppress(queue.Full):
                q.put_nowait(None)
        try:
            if self._join(threads, time.monotonic() + self.options.grace_sec):
                return
        except KeyboardInterrupt:
            pass
        self.aborting.set()
        self.observer.aborting()
        self.on_abort()  # closes sandboxes: running commands fail fast, nothing is recorded
        self._join(threads, time.monotonic() + 10)


def unrun_result(
    job: str,
    agent: str,
    model: str | None,
    sandbox: str,
    unit: Unit,
    round_index: int,
    error: Exception,
) -> RoundResult:
    """The record of a unit that could not run a round: ``setup_error`` when the task is at
    fault (:data:`TASK_FAULTS`), else ``infra`` (the harness's reasons)."""
    if isinstance(error, TASK_FAULTS):
        status, why = RoundStatus.setup_error, _task_fault(error)
    else:
        status, why = RoundStatus.infra, f"{type(error).__name__}: {error}"
    return RoundResult(
        job=job,
        task=unit.task.name,
        task_digest=unit.task.digest,
        n_rounds=unit.task.n_rounds,
        mode=unit.mode,
        attempt=unit.attempt,
        round=round_index,
        agent=agent,
        model=model,
        sandbox=sandbox,
        passed=False,
        status=status,
        error=why,
        started_at=datetime.now(UTC),
        host=socket.gethostname(),
    )


def _task_fault(error: Exception) -> str:
    what = "reference solution" if isinstance(error, ReferenceSolutionError) else "set-up"
    return f"task error (the task's {what} failed, not the agent): {error}"


def job_results_path(job_dir: Path) -> Path:
    return job_dir / "results.jsonl"
