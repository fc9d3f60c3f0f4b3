"""evoround as a library: ``run``, ``load_tasks`` and ``report`` with typed results.

Why a module of its own: the CLI is one user of the engine, scripts and notebooks are
another, and both must get the same job folder, the same exit-code contract and the same
cost figures. The CLI's ``run`` and ``report`` commands call these functions after they
have checked their options (``evoround/cli/_checks.py``); a script calls them directly
(see ``examples/run_and_report.py`` and docs/api.md).

Everything returned is frozen: a :class:`RunResult` or :class:`Report` is a reading of a
job folder at one moment, and the folder (results.jsonl, job.json) stays the record.
"""

from __future__ import annotations

import hashlib
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Literal

from evoround.engine import JobObserver, RunOptions, Unit, default_job_name, run_job
from evoround.results import (
    Cost,
    JobView,
    Metrics,
    Mode,
    RoundResult,
    RoundStatus,
    cost_of,
    load_job,
    read_job_config,
    read_results,
)
from evoround.sandboxes import docker_reachable
from evoround.scaffolds import ModelOptions, is_model_agent, scaffold_from_name
from evoround.tasks import Task, TaskFormatError, library_path
from evoround.tasks import load_tasks as _load_tasks

if TYPE_CHECKING:
    from evoround.scaffolds.proxy import ModelProxy
    from evoround.verifiers.checklist import JudgeConfig

__all__ = [
    "EXIT_INTERRUPTED",
    "EXIT_NOT_EVALUATED",
    "EXIT_OK",
    "EXIT_USAGE",
    "NOT_EVALUATED",
    "AttemptReport",
    "Cost",
    "JobReport",
    "Report",
    "RunResult",
    "load_tasks",
    "report",
    "run",
]

EXIT_OK = 0
EXIT_NOT_EVALUATED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

NOT_EVALUATED = frozenset({RoundStatus.infra, RoundStatus.model_api, RoundStatus.judge_error})
"""Statuses that say nothing about the agent: the harness, the model API or the judge failed.
``verifier_timeout`` is not among them: a solution that hangs its tests is the agent's."""


def load_tasks(paths: Sequence[Path | str] | None = None) -> list[Task]:
    """Tasks from task folders or folders of tasks (default: the bundled library).

    A malformed task raises :class:`evoround.tasks.TaskFormatError` naming the file and
    the field; an empty selection raises it too (a typo, not an empty job)."""
    roots = [Path(p) for p in paths] if paths else [library_path()]
    tasks = _load_tasks(roots)
    if not tasks:
        raise TaskFormatError(", ".join(map(str, roots)), None, "no tasks found")
    return tasks


@dataclass(frozen=True)
class AttemptReport:
    """One attempt (MT) or one round's attempt (SR): how far it got and what it cost."""

    task: str
    mode: str
    attempt: int
    rounds: int
    passed: int
    cost: Cost


def _attempts(records: Iterable[RoundResult]) -> tuple[AttemptReport, ...]:
    groups: dict[tuple[str, str, int], list[RoundResult]] = {}
    for r in records:
        groups.setdefault((r.task, r.mode.value, r.attempt), []).append(r)
    return tuple(
        AttemptReport(
            task=t,
            mode=m,
            attempt=a,
            rounds=len(rs),
            passed=sum(r.passed for r in rs),
            cost=cost_of(rs),
        )  # fmt: skip
        for (t, m, a), rs in sorted(groups.items())
    )


@dataclass(frozen=True)
class Outcome:
    """What a finished job's results say about the exit code."""

    rounds: int
    not_evaluated: Counter[str]
    first_error: str | None

    @property
    def code(self) -> int:
        return EXIT_NOT_EVALUATED if self.not_evaluated else EXIT_OK

    def code_at(self, max_error_rate: float) -> int:
        """``--max-error-rate``: tolerate some unevaluated rounds, never a job of nothing."""
        bad = sum(self.not_evaluated.values())
        if not bad:
            return EXIT_OK
        if bad >= self.rounds or bad / self.rounds > max_error_rate:
            return EXIT_NOT_EVALUATED
        return EXIT_OK

    def summary(self) -> str | None:
        """One line for stderr when some rounds were not evaluated, else None."""
        if not self.not_evaluated:
            return None
        n = sum(self.not_evaluated.values())
        why = ", ".join(f"{c} {s}" for s, c in self.not_evaluated.most_common())
        head = (
            f"nothing was evaluated: all {n} rounds" if n == self.rounds else
            f"{n} of {self.rounds} rounds could not be evaluated"
        )  # fmt: skip
        tail = f"; first error: {self.first_error}" if self.first_error else ""
        return f"{head} ({why}){tail}"


@dataclass(frozen=True)
class JobReport:
    """A job folder read back: its config, metrics, outcome and cost."""

    job_dir: Path
    agent: str
    model: str | None
    metrics: Metrics
    rounds: int
    not_evaluated: dict[str, int]
    """Rounds per status that could not be evaluated (infra, model_api, judge_error)."""
    first_error: str | None
    cost: Cost
    attempts: tuple[AttemptReport, ...]
    view: JobView = field(repr=False, compare=False)

    @property
    def outcome(self) -> Outcome:
        return Outcome(self.rounds, Counter(self.not_evaluated), self.first_error)

    @property
    def exit_code(self) -> int:
        """The CLI's contract: 0 every recorded round was evaluated, else 1."""
        return self.outcome.code

    def outcome_line(self) -> str | None:
        """One line for stderr when some rounds were not evaluated, else None."""
        return self.outcome.summary()


def outcome_of(records: Sequence[RoundResult]) -> Outcome:
    """Count the recorded rounds that were not evaluated (the exit-code contract)."""
    bad = [r for r in records if r.status in NOT_EVALUATED]
    first = next((r.error for r in bad if r.error), None)
    if first is not None:
        first = " ".join(first.split())
        first = first if len(first) <= 200 else first[:197] + "..."
    return Outcome(len(records), Counter(r.status.value for r in bad), first)


def _job_report(job_dir: Path) -> JobReport:
    view = load_job(job_dir)
    records, _ = read_results(job_dir / "results.jsonl")
    outcome = outcome_of(records)
    return JobReport(
        job_dir=job_dir,
        agent=view.config.agent,
        model=view.config.model,
        metrics=view.metrics(),
        rounds=outcome.rounds,
        not_evaluated=dict(outcome.not_evaluated),
        first_error=outcome.first_error,
        cost=cost_of(records),
        attempts=_attempts(records),
        view=view,
    )


@dataclass(frozen=True)
class RunResult(JobReport):
    """A finished (or budget-stopped) run: the job read back, plus why it stopped early."""

    budget_stop: str | None = None
    """Why a ``max_cost``/``max_tokens_total`` budget stopped the job (None: it did not)."""

    @property
    def exit_code(self) -> int:
        """0 every attempt was evaluated; 1 some rounds were not evaluated or a budget left
        attempts unstarted (the job is resumable with a higher budget)."""
        return EXIT_NOT_EVALUATED if (self.not_evaluated or self.budget_stop) else EXIT_OK


@dataclass(frozen=True)
class Report:
    """One or more job folders, read back (``evoround report``)."""

    jobs: tuple[JobReport, ...]

    @property
    def views(self) -> list[JobView]:
        return [j.view for j in self.jobs]

    def write_html(self, path: Path) -> Path:
        """report.html: the leaderboard, every chart and every round (self-contained)."""
        from evoround.reports import write_html_report

        return write_html_report(self.views, path)


def report(job_dirs: Sequence[Path | str]) -> Report:
    """Read finished (or interrupted) job folders; a folder that is not a job raises
    :class:`evoround.results.NotAJobDir` naming it."""
    return Report(jobs=tuple(_job_report(Path(p)) for p in job_dirs))


class _BudgetWatch(JobObserver):
    """Forwards every hook and keeps the reason a budget stopped the job."""

    def __init__(self, inner: JobObserver) -> None:
        self.inner = inner
        self.reason: str | None = None

    def job_started(self, units: list[Unit], skipped: int) -> None:
        self.inner.job_started(units, skipped)

    def job_skipped(self, done: list[Unit]) -> None:
        self.inner.job_skipped(done)

    def unit_started(self, unit: Unit) -> None:
        self.inner.unit_started(unit)

    def round_recorded(self, unit: Unit, result: RoundResult) -> None:
        self.inner.round_recorded(unit, result)

    def unit_finished(self, unit: Unit) -> None:
        self.inner.unit_finished(unit)

    def unit_retry(self, unit: Unit, error: BaseException, n: int) -> None:
        self.inner.unit_retry(unit, error, n)

    def stopping(self, grace_sec: float) -> None:
        self.inner.stopping(grace_sec)

    def aborting(self) -> None:
        self.inner.aborting()

    def budget_reached(self, reason: str) -> None:
        self.reason = reason
        self.inner.budget_reached(reason)


def _default_sandbox(agent: str, job_dir: Path) -> Literal["local", "docker"]:
    """As the CLI: a continued job keeps its sandbox; a model-backed agent writes code nobody
    has read, so it runs in Docker (no engine: an error, never a quiet fall back to the host);
    oracle, nop and scripted agents run locally."""
    lock = job_dir / "job.json"
    if lock.is_file():
        return read_job_config(lock).sandbox  # type: ignore[return-value]
    if not is_model_agent(agent):
        return "local"
    if docker_reachable():
        return "docker"
    raise ValueError(
        f"agent {agent!r} runs in Docker by default and no Docker engine is reachable: start "
        "Docker, or pass sandbox='local' (trusted agents only)"
    )


def run(
    tasks: Sequence[Path | str] | list[Task] | None = None,
    *,
    agent: str = "oracle",
    out: Path | str = "runs",
    job: str | None = None,
    attempts: int = 1,
    modes: Sequence[Literal["mt", "sr"]] = ("mt", "sr"),
    sandbox: Literal["local", "docker"] | None = None,
    script: Path | str | None = None,
    model: ModelOptions | None = None,
    judge: JudgeConfig | None = None,
    options: RunOptions | None = None,
    max_cost: float | None = None,
    max_tokens_total: int | None = None,
    observer: JobObserver | None = None,
    select: Callable[[list[Task]], list[Task]] | None = None,
    proxy: Callable[[ModelOptions, Path], ModelProxy] | None = None,
    keep_snapshots: bool = False,
    on_fail: Literal["stop", "continue"] = "stop",
    base_image_map: dict[str, str] | None = None,
    rounds_window: tuple[int, int | None] | None = None,
) -> RunResult:
    """Run (or continue) one job and read it back.

    ``tasks``: task folders (default: the bundled library) or tasks from
    :func:`load_tasks`. ``out/job`` is the job folder; an existing job with the same
    config continues. ``max_cost`` (USD, from litellm's price map) and
    ``max_tokens_total`` stop the job from starting new rounds once reached: rounds in
    flight finish, everything recorded is kept, and ``RunResult.budget_stop`` says why.
    A bad value raises :class:`ValueError` (or ``TaskFormatError``) before anything runs;
    Ctrl-C raises KeyboardInterrupt with the recorded rounds intact (resumable).
    """
    loaded = list(tasks) if tasks and isinstance(next(iter(tasks)), Task) else None
    task_list: list[Task] = loaded or load_tasks(tasks)  # type: ignore[arg-type]
    if select is not None:
        task_list = select(task_list)
    for flag, v in (("max_cost", max_cost), ("max_tokens_total", max_tokens_total)):
        if v is not None and v <= 0:
            raise ValueError(f"{flag} {v!r}: a budget must be > 0")
    opts = options or RunOptions()
    if max_cost is not None or max_tokens_total is not None:  # the caller's options stay as given
        opts = replace(opts, max_cost_usd=max_cost if max_cost is not None else opts.max_cost_usd,
                       max_tokens_total=max_tokens_total or opts.max_tokens_total)  # fmt: skip
    job_dir = Path(out) / (job or default_job_name(agent))
    sandbox = sandbox or _default_sandbox(agent, job_dir)
    script_path = Path(script) if script is not None else None
    models = model or ModelOptions()
    watch = _BudgetWatch(observer or JobObserver())
    model_proxy = proxy(models, job_dir) if proxy is not None else None
    try:
        wired = models
        if model_proxy is not None:
            wired = models.via_proxy(model_proxy.url, model_proxy.master_key)
        scaffold = scaffold_from_name(agent, script_path, wired)
        digest = hashlib.sha256(script_path.read_bytes()).hexdigest() if script_path else None
        run_job(
            task_list,
            scaffold,
            job_dir=job_dir,
            attempts=attempts,
            modes=[Mode(m) for m in modes],
            sandbox=sandbox,
            script_digest=digest,
            observer=watch,
            judge=judge,
            keep_snapshots=keep_snapshots,
            options=opts,
            models=models if is_model_agent(agent) else None,  # the upstream, not the proxy
            proxy=model_proxy,
            on_fail=on_fail,
            base_image_map=base_image_map,
            rounds_window=rounds_window,
        )
    finally:
        if model_proxy is not None:  # also on Ctrl-C: no proxy outlives the run
            model_proxy.close()
    read = _job_report(job_dir)
    return RunResult(**{f: getattr(read, f) for f in read.__dataclass_fields__},
                     budget_stop=watch.reason)  # fmt: skip
