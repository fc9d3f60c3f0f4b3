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

import dataclasses
import hashlib
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal, TypeVar

from evoround.engine import (
    JobObserver,
    RunOptions,
    Unit,
    default_job_name,
    job_holder,
    run_job,
)
from evoround.results import (
    Cost,
    JobConfig,
    JobRunning,
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
from evoround.settings import settings
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
    "TASK_ERRORS",
    "AttemptReport",
    "Cost",
    "JobReport",
    "Report",
    "ResumeError",
    "RunRequest",
    "RunResult",
    "load_tasks",
    "report",
    "resolve",
    "run",
    "run_request",
]

EXIT_OK = 0
EXIT_NOT_EVALUATED = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130

TASK_ERRORS = frozenset({RoundStatus.verifier_error, RoundStatus.setup_error})
"""Statuses where the task itself failed (its verifier gave no verdict, its set-up or its
reference solution failed): not the agent's failure, so a job of them is not a clean score
either (exit 1)."""
NOT_EVALUATED = (
    frozenset({RoundStatus.infra, RoundStatus.model_api, RoundStatus.judge_error}) | TASK_ERRORS
)
"""Statuses that say nothing about the agent: the harness, the model API, the judge or the
task failed. ``verifier_timeout`` is not among them: a solution that hangs its tests is
the agent's."""


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
        )
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
        if n == self.rounds:
            head = f"nothing was evaluated: all {n} rounds"
        else:
            head = f"{n} of {self.rounds} rounds could not be evaluated"
        tail = f"; first error: {self.first_error}" if self.first_error else ""
        if any(s in self.not_evaluated for s in TASK_ERRORS):
            tail += (
                "; verifier_error/setup_error are task errors (its verifier, set-up or "
                "reference solution failed, not the agent): check the task with "
                "`evoround tasks validate TASK_DIR`"
            )
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


def _running(job_dir: Path) -> JobRunning | None:
    """The live holder of the job's lock, if a run of it is in progress."""
    rec = job_holder(job_dir)
    if rec is None:
        return None
    return JobRunning(host=rec.owner.host, pid=rec.owner.pid, since=rec.since)


def _job_report(job_dir: Path) -> JobReport:
    view = dataclasses.replace(load_job(job_dir), running=_running(job_dir))
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

    @classmethod
    def of(cls, read: JobReport, budget_stop: str | None) -> RunResult:
        """The job as read back, with the reason a budget stopped it."""
        fields = {f.name: getattr(read, f.name) for f in dataclasses.fields(JobReport)}
        return cls(**fields, budget_stop=budget_stop)

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


def _default_sandbox(agent: str, job_dir: Path) -> str:
    """As the CLI: a continued job keeps its sandbox; a model-backed agent writes code nobody
    has read, so it runs in Docker (no engine: an error, never a quiet fall back to the host);
    oracle, nop and scripted agents run locally."""
    lock = job_dir / "job.json"
    if lock.is_file():
        return read_job_config(lock).sandbox
    if not is_model_agent(agent):
        return "local"
    if docker_reachable():
        return "docker"
    raise ValueError(
        f"agent {agent!r} runs in Docker by default and no Docker engine is reachable: start "
        "Docker, or pass sandbox='local' (trusted agents only)"
    )


@dataclass(frozen=True)
class RunRequest:
    """One run as asked: what the CLI's ``run`` parsed, or what :func:`run` was given.

    ``None`` means "not given": for a new job the default (oracle, one attempt, MT and SR,
    fail-stop, 50 model calls per round, one judge vote), for ``resume`` what the job's
    config lock recorded. :func:`resolve` decides every such field, and the CLI and
    :func:`run` both run what it returns, so a resumed job is reconciled with its lock in
    one place (and refused, in one line naming the option, when a given value differs).
    """

    tasks: tuple[Path, ...] | tuple[Task, ...] = ()
    """Task folders or loaded tasks; empty: the bundled library (or, resumed, the job's)."""
    agent: str | None = None
    script: Path | None = None
    out: Path = Path("runs")
    job: str | None = None
    resume: Path | None = None
    """A job folder to continue: options not given come from its job.json."""
    attempts: int | None = None
    modes: tuple[Mode, ...] | None = None
    sandbox: str | None = None
    model: str | None = None
    api_base: str | None = None
    max_steps: int | None = None
    max_tokens: int | None = None
    model_args: dict[str, Any] | None = None
    """The agent's litellm sampling arguments; empty or None: not given."""
    judge_model: str | None = None
    judge_api_base: str | None = None
    judge_votes: int | None = None
    judge_model_args: dict[str, Any] | None = None
    """The judge's sampling arguments, ``temperature`` among them; empty or None: not given."""
    on_fail: str | None = None
    base_image_map: dict[str, str] | None = None
    rounds_window: tuple[int, int | None] | None = None
    docker_snapshot: str | None = None
    """Docker's snapshot mode; None: ``EVOROUND_DOCKER_SNAPSHOT`` (or evoround.toml), else
    workspace; resumed, the recorded one (a setting that differs from it is refused)."""
    keep_snapshots: bool = False
    options: RunOptions = field(default_factory=RunOptions)
    """How the job executes (concurrency, retries, limits, budgets): never locked."""
    model_base: ModelOptions | None = None
    """What else the agent's connection needs (API key, headers): not part of the lock."""
    judge_base: JudgeConfig | None = None
    """What else the judge needs (API key, retries, the verdict cache): not part of the lock."""

    @property
    def job_dir(self) -> Path:
        """The job folder (after :func:`resolve`, which names a job that had no name)."""
        return self.out / (self.job or "")

    def model_options(self) -> ModelOptions:
        """How the agent reaches its model: the base connection with the request's settings."""
        base = self.model_base or ModelOptions()
        return replace(
            base,
            model=self.model,
            api_base=self.api_base,
            max_steps=base.max_steps if self.max_steps is None else self.max_steps,
            max_tokens=self.max_tokens,
            model_args=dict(self.model_args or {}),
        )

    def judge_config(self) -> JudgeConfig | None:
        """The judge of judge checks: None without a judge model (checks score ``error``)."""
        if self.judge_base is None and not self.judge_model:
            return None
        from evoround.verifiers.checklist import JudgeConfig

        args = dict(self.judge_model_args or {})
        temperature = float(args.pop("temperature", 0.0))
        base = self.judge_base or JudgeConfig(cache_dir=self.out / ".judge-cache")
        update: dict[str, Any] = {"model": self.judge_model, "api_base": self.judge_api_base}
        update |= {"votes": self.judge_votes or 1, "temperature": temperature, "model_args": args}
        return base.model_copy(update=update)


def _flat_model(model: ModelOptions | None) -> dict[str, Any]:
    """A :class:`ModelOptions` as the request's settings (each one given)."""
    if model is None:
        return {}
    return {
        "model_base": model,
        "model": model.model,
        "api_base": model.api_base,
        "max_steps": model.max_steps,
        "max_tokens": model.max_tokens,
        "model_args": dict(model.model_args),
    }


def _flat_judge(judge: JudgeConfig | None) -> dict[str, Any]:
    """A :class:`JudgeConfig` as the request's settings, its sampling arguments as the lock
    records them (``temperature`` only when not 0)."""
    if judge is None:
        return {}
    args = {**({"temperature": judge.temperature} if judge.temperature else {}), **judge.model_args}
    return {
        "judge_base": judge,
        "judge_model": judge.model,
        "judge_api_base": judge.api_base,
        "judge_votes": judge.votes,
        "judge_model_args": args,
    }


class ResumeError(ValueError):
    """A job to continue that cannot be: no readable config lock, or a given option that
    differs from the recorded one (one line naming it: nothing has run)."""


def _read_lock(job_dir: Path) -> JobConfig:
    """The config lock of the job to continue (read once)."""
    from pydantic import ValidationError

    path = job_dir / "job.json"
    if not path.is_file():
        raise ResumeError(f"{job_dir} is not a job folder (no job.json)")
    try:
        return JobConfig.model_validate_json(path.read_bytes())
    except OSError as e:
        raise ResumeError(f"{path}: cannot read: {e.strerror or e}") from None
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise ResumeError(f"{path}: {where + ': ' if where else ''}{first['msg']}") from None


_T = TypeVar("_T")


@dataclass(frozen=True)
class _Lock:
    """A resumed job's config lock and where it lies, for the messages that name it."""

    config: JobConfig
    path: Path

    def value(self, name: str, given: _T | None, default: _T) -> _T:
        """The value a resumed job uses for a locked setting: the recorded one unless given.

        A resumed attempt must talk to the same model as the rounds already recorded, so a
        given value that differs is refused, in one line naming the option, before any
        agent starts. A field an older job.json never recorded, or recorded as None for a
        count (``max_steps`` of a model-free agent), leaves the given (or default) value.
        """
        recorded = getattr(self.config, name)
        value = default if given is None else given
        if name not in self.config.model_fields_set or (
            recorded is None and isinstance(value, int)
        ):
            return value
        if given is None:
            return recorded  # the lock's field has this setting's type
        if given != recorded:
            flag = "--" + name.replace("_", "-")
            raise ResumeError(
                f"{flag} {given!r} differs from the {recorded!r} recorded in {self.path}; "
                f"leave out {flag} to resume with it, or start a new --job"
            )
        return given

    def sampling(
        self, what: str, given: dict[str, Any] | None, recorded: dict[str, Any] | None
    ) -> dict[str, Any]:
        """Sampling arguments (the agent's or the judge's): the recorded ones unless given,
        and given ones must be the recorded ones (resumed rounds sample as earlier ones)."""
        recorded = recorded or {}
        if not given:
            return recorded
        if given != recorded:
            raise ResumeError(
                f"{what} settings {given} differ from the {recorded} recorded in "
                f"{self.path}; leave them out to resume, or start a new --job"
            )
        return given


def _window_text(window: tuple[int, int | None]) -> str:
    first, last = window
    return f"{first}" if last == first else f"{first}-{last or ''}"


def _resumed_job(request: RunRequest, resume: Path, lock: JobConfig) -> dict[str, Any]:
    """What a job continues as: its tasks, agent, attempts, modes and sandbox unless given."""
    agent = request.agent
    if agent is None:
        # A script from a file is locked by digest; the run must pass the same --script.
        agent = "scripted" if lock.script_digest else lock.agent
    return {
        "tasks": request.tasks or tuple(Path(t.path) for t in lock.tasks.values()),
        "agent": agent,
        "attempts": request.attempts or lock.attempts,
        "modes": request.modes or _modes_of(lock),
        "sandbox": request.sandbox or lock.sandbox,
        "out": resume.parent,
        "job": resume.name,
        "resume": None,
    }


def _modes_of(lock: JobConfig) -> tuple[Mode, ...]:
    """The recorded modes, in the order the CLI gives them (MT before SR)."""
    return (Mode.mt, Mode.sr) if len(lock.modes) == 2 else (lock.modes[0],)


def _locked_settings(request: RunRequest, lock: _Lock) -> dict[str, Any]:
    """The model, judge and protocol settings of a resumed job, checked against its lock."""
    agent = request.agent or ""
    cfg = lock.config
    got: dict[str, Any] = {}
    if is_model_agent(agent):  # a model-free agent ignores (and records no) model options
        got["model"] = lock.value("model", request.model, None)
        got["api_base"] = lock.value("api_base", request.api_base, None)
        got["max_steps"] = lock.value("max_steps", request.max_steps, ModelOptions.max_steps)
    got["judge_model"] = lock.value("judge_model", request.judge_model, None)
    got["judge_api_base"] = lock.value("judge_api_base", request.judge_api_base, None)
    got["judge_votes"] = lock.value("judge_votes", request.judge_votes, 1)
    got["on_fail"] = lock.value("on_fail", request.on_fail, "stop")
    got["base_image_map"] = lock.value("base_image_map", request.base_image_map, {})
    recorded_window = tuple(cfg.rounds_window) if cfg.rounds_window else None
    if request.rounds_window is not None and request.rounds_window != recorded_window:
        raise ResumeError(
            f"--rounds {_window_text(request.rounds_window)} differs from the window recorded "
            f"in {lock.path}"
        )
    got["rounds_window"] = recorded_window
    if cfg.script_digest and request.script is None:
        raise ResumeError(
            f"{lock.path} was run with --agent scripted and a script (sha256 "
            f"{cfg.script_digest[:12]}...): pass the same --script PATH to resume"
        )
    return got


def _locked_snapshot(request: RunRequest, lock: _Lock) -> dict[str, Any]:
    """The Docker snapshot mode of a resumed job: the recorded one. A mode given (here or
    by the setting) that differs is refused: the job's earlier snapshots, which its MT
    attempts continue from, are of the recorded kind (a job.json from before the mode was
    recorded leaves the given one)."""
    recorded = lock.config.docker_snapshot
    given = request.docker_snapshot or settings().docker_snapshot
    if recorded is None or request.sandbox != "docker":
        return {"docker_snapshot": given}
    if given is not None and given != recorded:
        raise ResumeError(
            f"Docker snapshot mode {given!r} (EVOROUND_DOCKER_SNAPSHOT or docker_snapshot in "
            f"evoround.toml) differs from the {recorded!r} recorded in {lock.path}; unset it "
            "to resume with the recorded mode, or start a new --job"
        )
    return {"docker_snapshot": recorded}


def _locked_sampling(request: RunRequest, lock: _Lock) -> dict[str, Any]:
    """Sampling arguments of a resumed job: the judge's (with a judge), the agent's (a model
    agent): recorded unless given, refused when given and different."""
    from evoround.scaffolds import MODEL_AGENTS

    got: dict[str, Any] = {}
    if request.judge_model:
        args = lock.sampling("judge", request.judge_model_args, lock.config.judge_model_args)
        got["judge_model_args"] = args
    if request.agent in MODEL_AGENTS:
        got["model_args"] = lock.sampling("model", request.model_args, lock.config.model_args)
    return got


def resolve(request: RunRequest) -> RunRequest:
    """The request with every option decided: a ``resume`` becomes its job folder and the
    options it did not give become what the job recorded (a given one that differs raises
    :class:`ResumeError`); a new job gets the defaults and a name.

    Resolving twice changes nothing, so the CLI resolves first (its checks look at the
    decided options) and :func:`run_request` resolves again harmlessly."""
    if request.resume is not None:
        lock = _Lock(_read_lock(request.resume), request.resume / "job.json")
        request = replace(request, **_resumed_job(request, request.resume, lock.config))
        request = replace(request, **_locked_settings(request, lock))
        request = replace(request, **_locked_sampling(request, lock))
        request = replace(request, **_locked_snapshot(request, lock))
    agent = "oracle" if request.agent is None else request.agent
    return replace(
        request,
        agent=agent,
        job=request.job or default_job_name(agent),
        attempts=request.attempts or 1,
        modes=request.modes or (Mode.mt, Mode.sr),
        on_fail=request.on_fail or "stop",
    )


def run_request(
    request: RunRequest,
    *,
    observer: JobObserver | None = None,
    select: Callable[[list[Task]], list[Task]] | None = None,
    proxy: Callable[[ModelOptions, Path], ModelProxy] | None = None,
) -> RunResult:
    """Run (or continue) the job a :class:`RunRequest` asks for and read it back.

    ``observer`` receives progress hooks, ``select`` narrows the loaded tasks (and may
    check them), ``proxy`` starts the job's model proxy (the run closes it)."""
    request = resolve(request)
    task_list = _tasks_of(request)
    if select is not None:
        task_list = select(task_list)
    agent = "oracle" if request.agent is None else request.agent
    job_dir = request.job_dir
    sandbox = request.sandbox or _default_sandbox(agent, job_dir)
    models = request.model_options()
    watch = _BudgetWatch(observer or JobObserver())
    model_proxy = proxy(models, job_dir) if proxy is not None else None
    try:
        wired = models
        if model_proxy is not None:
            wired = models.via_proxy(model_proxy.url, model_proxy.master_key)
        scaffold = scaffold_from_name(agent, request.script, wired)
        run_job(
            task_list,
            scaffold,
            job_dir=job_dir,
            attempts=request.attempts or 1,
            modes=list(request.modes or ()),
            sandbox=sandbox,
            script_digest=_digest(request.script),
            observer=watch,
            judge=request.judge_config(),
            keep_snapshots=request.keep_snapshots,
            options=request.options,
            models=models if is_model_agent(agent) else None,  # the upstream, not the proxy
            proxy=model_proxy,
            on_fail=request.on_fail or "stop",
            base_image_map=request.base_image_map,
            rounds_window=request.rounds_window,
            docker_snapshot=request.docker_snapshot,
        )
    finally:
        if model_proxy is not None:  # also on Ctrl-C: no proxy outlives the run
            model_proxy.close()
    return RunResult.of(_job_report(job_dir), budget_stop=watch.reason)


def _tasks_of(request: RunRequest) -> list[Task]:
    """The request's tasks: loaded already, or loaded from their folders."""
    loaded = [t for t in request.tasks if isinstance(t, Task)]
    if loaded:
        return loaded
    return load_tasks([t for t in request.tasks if not isinstance(t, Task)])


def _digest(script: Path | None) -> str | None:
    """A script file is locked by its content: a resume must pass the same one."""
    return hashlib.sha256(script.read_bytes()).hexdigest() if script is not None else None


def _with_budgets(
    options: RunOptions | None, max_cost: float | None, max_tokens_total: int | None
) -> RunOptions:
    """``max_cost`` and ``max_tokens_total`` folded into the run options (a budget must be
    > 0; the caller's options stay as given)."""
    for flag, v in (("max_cost", max_cost), ("max_tokens_total", max_tokens_total)):
        if v is not None and v <= 0:
            raise ValueError(f"{flag} {v!r}: a budget must be > 0")
    opts = options or RunOptions()
    if max_cost is None and max_tokens_total is None:
        return opts
    return replace(
        opts,
        max_cost_usd=max_cost if max_cost is not None else opts.max_cost_usd,
        max_tokens_total=max_tokens_total or opts.max_tokens_total,
    )


def run(
    tasks: Sequence[Path | str] | Sequence[Task] | None = None,
    *,
    agent: str | None = None,
    out: Path | str = "runs",
    job: str | None = None,
    attempts: int | None = None,
    modes: Sequence[Literal["mt", "sr"]] | None = None,
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
    on_fail: Literal["stop", "continue"] | None = None,
    base_image_map: dict[str, str] | None = None,
    rounds_window: tuple[int, int | None] | None = None,
    resume: Path | str | None = None,
    docker_snapshot: Literal["workspace", "archive", "commit"] | None = None,
) -> RunResult:
    """Run (or continue) one job and read it back.

    ``tasks``: task folders (default: the bundled library) or tasks from
    :func:`load_tasks`. ``out/job`` is the job folder; an existing job with the same
    config continues. ``resume``: a job folder to continue, the options not given taken
    from its job.json (one that differs raises :class:`ResumeError`). ``max_cost`` (USD,
    from litellm's price map) and ``max_tokens_total`` stop the job from starting new
    rounds once reached: rounds in flight finish, everything recorded is kept, and
    ``RunResult.budget_stop`` says why. Defaults (``None``): the oracle, one attempt, MT
    and SR, fail-stop. A bad value raises :class:`ValueError` (or ``TaskFormatError``)
    before anything runs; Ctrl-C raises KeyboardInterrupt with the recorded rounds intact
    (resumable). ``docker_snapshot``: the Docker snapshot mode (default: the
    ``EVOROUND_DOCKER_SNAPSHOT`` setting, else workspace), recorded in job.json.
    """
    request = RunRequest(
        tasks=_task_sources(tasks),
        agent=agent,
        out=Path(out),
        job=job,
        resume=Path(resume) if resume is not None else None,
        attempts=attempts,
        modes=tuple(Mode(m) for m in modes) if modes is not None else None,
        sandbox=sandbox,
        script=Path(script) if script is not None else None,
        keep_snapshots=keep_snapshots,
        on_fail=on_fail,
        base_image_map=base_image_map,
        rounds_window=rounds_window,
        docker_snapshot=docker_snapshot,
        options=_with_budgets(options, max_cost, max_tokens_total),
        **_flat_model(model),
        **_flat_judge(judge),
    )
    return run_request(request, observer=observer, select=select, proxy=proxy)


def _task_sources(
    tasks: Sequence[Path | str] | Sequence[Task] | None,
) -> tuple[Path, ...] | tuple[Task, ...]:
    """``run``'s tasks as the request holds them: loaded tasks, or folders."""
    if not tasks:
        return ()
    loaded = tuple(t for t in tasks if isinstance(t, Task))
    if loaded:
        return loaded
    return tuple(Path(t) for t in tasks if not isinstance(t, Task))
