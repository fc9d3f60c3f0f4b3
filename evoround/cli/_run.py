"""``evoround run`` and ``demo``: a run in four phases, and the demo that runs five agents.

``run`` parses its command line into one :class:`evoround.api.RunRequest`, lets the library
decide it (a ``--resume`` is reconciled with the job's config lock there, as for
:func:`evoround.api.run` callers), checks what only a command line can get wrong, runs it
with the live display and prints the report. Nothing here computes a result.
"""

from __future__ import annotations

import json
import os
import sys
from contextlib import nullcontext
from dataclasses import replace
from datetime import datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from rich.console import Console
from rich.markup import escape

from evoround.cli._app import (
    ImageMapOpt,
    ModeChoice,
    app,
    err,
    fail,
    given,
    modes_of,
    out,
    parse_image_map,
    parse_window,
    setup_logging,
    stop_on_signals,
)
from evoround.cli._checks import (
    LOCAL_TRUSTED_NOTE,
    ExecutorChoice,
    OnFailChoice,
    ReasoningEffort,
    SandboxChoice,
    UsageError,
    check_isolation,
    check_out_dir,
    check_run_options,
    check_task_rules,
    choose_sandbox,
    parse_model_args,
    resume_command,
    select_tasks,
)
from evoround.cli._run_options import (
    AgentOpt,
    ApiBaseOpt,
    AsJsonOpt,
    AttemptsOpt,
    ConcurrencyOpt,
    DebugOpt,
    ExcludeOpt,
    ExecutorOpt,
    GraceOpt,
    JobNameOpt,
    JudgeApiBaseOpt,
    JudgeModelArgOpt,
    JudgeModelOpt,
    JudgeReasoningEffortOpt,
    JudgeTemperatureOpt,
    JudgeVotesOpt,
    KeepSnapshotsOpt,
    LimitOpt,
    MaxContainersOpt,
    MaxCostOpt,
    MaxErrorRateOpt,
    MaxImageBuildsOpt,
    MaxModelConnectionsOpt,
    MaxStepsOpt,
    MaxTokensOpt,
    MaxTokensTotalOpt,
    ModelArgOpt,
    ModelOpt,
    ModeOpt,
    OnFailOpt,
    OutDirOpt,
    ProgressChoice,
    ProgressOpt,
    ProxyOpt,
    RayAddressOpt,
    ReasoningEffortOpt,
    ResumeOpt,
    RetryFailedOpt,
    RetryOnErrorOpt,
    RoundsOpt,
    RunFlags,
    SandboxOpt,
    ScriptOpt,
    TaskNamesOpt,
    TasksArg,
    TemperatureOpt,
    VerboseOpt,
)

if TYPE_CHECKING:
    from evoround.api import RunRequest, RunResult
    from evoround.engine import RunOptions
    from evoround.scaffolds import ModelOptions
    from evoround.scaffolds.proxy import ModelProxy
    from evoround.tasks import Task

# The enums the option declarations name stay importable from here, as before.
__all__ = ["ExecutorChoice", "OnFailChoice", "ReasoningEffort", "demo", "run"]


def library_path() -> Path:
    """The bundled task library (the tasks room is imported when a command runs)."""
    from evoround.tasks import library_path as bundled

    return bundled()


@app.command(rich_help_panel="Evaluate")
def run(
    ctx: typer.Context,
    tasks: TasksArg = None,
    agent: AgentOpt = "oracle",
    task_names: TaskNamesOpt = None,
    exclude: ExcludeOpt = None,
    limit: LimitOpt = None,
    script: ScriptOpt = None,
    model: ModelOpt = None,
    api_base: ApiBaseOpt = None,
    max_steps: MaxStepsOpt = 50,
    max_tokens: MaxTokensOpt = None,
    temperature: TemperatureOpt = None,
    reasoning_effort: ReasoningEffortOpt = None,
    model_arg: ModelArgOpt = None,
    proxy: ProxyOpt = False,
    attempts: AttemptsOpt = 1,
    mode: ModeOpt = ModeChoice.both,
    sandbox: SandboxOpt = None,
    keep_snapshots: KeepSnapshotsOpt = False,
    out_dir: OutDirOpt = Path("runs"),
    job_name: JobNameOpt = None,
    as_json: AsJsonOpt = False,
    judge_model: JudgeModelOpt = None,
    judge_api_base: JudgeApiBaseOpt = None,
    judge_votes: JudgeVotesOpt = 1,
    judge_temperature: JudgeTemperatureOpt = None,
    judge_reasoning_effort: JudgeReasoningEffortOpt = None,
    judge_model_arg: JudgeModelArgOpt = None,
    resume: ResumeOpt = None,
    retry_failed: RetryFailedOpt = None,
    concurrency: ConcurrencyOpt = 1,
    max_containers: MaxContainersOpt = None,
    max_image_builds: MaxImageBuildsOpt = 1,
    max_model_connections: MaxModelConnectionsOpt = None,
    grace: GraceOpt = 30.0,
    retry_on_error: RetryOnErrorOpt = None,
    max_error_rate: MaxErrorRateOpt = 0.0,
    executor: ExecutorOpt = ExecutorChoice.local,
    on_fail: OnFailOpt = OnFailChoice.stop,
    base_image_map: ImageMapOpt = None,
    rounds: RoundsOpt = None,
    ray_address: RayAddressOpt = None,
    max_cost: MaxCostOpt = None,
    max_tokens_total: MaxTokensTotalOpt = None,
    progress: ProgressOpt = ProgressChoice.auto,
    verbose: VerboseOpt = False,
    debug: DebugOpt = False,
) -> None:
    """Run an agent on tasks and print the report. Results stream to OUT/JOB/results.jsonl.

    Exit codes: 0 every attempt was evaluated (whatever the score); 1 the job finished but
    some rounds could not be evaluated (infra, model_api, judge errors, or task errors:
    verifier_error, setup_error; stderr says how
    many and why); 2 usage or task error, nothing ran; 130 interrupted (resumable).
    """
    params = {k: v for k, v in locals().items() if k != "ctx"}  # the options, as converted
    flags = RunFlags(**params, typed=frozenset(n for n in params if given(ctx, n)))
    console = err()  # shared by the live display and the log, so log lines print above it
    setup_logging(verbose, debug, console)
    request = _decided(_asked(flags), flags)
    result = _execute(request, flags, console)
    _print_result(request, flags, result)
    code = _exit_code(request, flags, result, console)
    if code:
        raise typer.Exit(code)


def _asked(flags: RunFlags) -> RunRequest:
    """Phase 1, parse: the command line as the library's request. On ``--resume`` an option
    left at its default is not given (None), so the job's recorded value is used."""
    from evoround.api import RunRequest

    image_map = parse_image_map(flags.base_image_map)
    window = parse_window(flags.rounds)
    continued = flags.retry_failed or flags.resume
    if continued is not None:
        _check_resume_options(flags)
    model_args, judge_args = _sampling_args(flags)

    def typed(name: str, value: Any) -> Any:
        return value if continued is None or name in flags.typed else None

    return RunRequest(
        tasks=tuple(flags.tasks or ()),
        agent=typed("agent", flags.agent),
        script=flags.script,
        out=flags.out_dir,
        job=flags.job_name,
        resume=continued,
        attempts=typed("attempts", flags.attempts),
        modes=typed("mode", tuple(modes_of(flags.mode))),
        sandbox=flags.sandbox.value if flags.sandbox is not None else None,
        model=flags.model,
        api_base=flags.api_base,
        max_steps=typed("max_steps", flags.max_steps),
        max_tokens=flags.max_tokens,
        model_args=model_args,
        judge_model=flags.judge_model,
        judge_api_base=flags.judge_api_base,
        judge_votes=typed("judge_votes", flags.judge_votes),
        judge_model_args=judge_args,
        on_fail=typed("on_fail", flags.on_fail.value),
        base_image_map=typed("base_image_map", image_map),
        rounds_window=window,
        keep_snapshots=flags.keep_snapshots,
        options=_run_options(flags),
    )


def _check_resume_options(flags: RunFlags) -> None:
    """A --resume names its job folder: a second name for it would be silently ignored."""
    if flags.resume is not None and flags.retry_failed is not None:
        raise fail("--resume and --retry-failed both name a job: give one")
    flag = "--resume" if flags.resume is not None else "--retry-failed"
    for name, opt in (("job_name", "--job"), ("out_dir", "--out")):
        if name in flags.typed:
            raise fail(f"{opt} cannot be combined with {flag}: the job folder is {flag}'s")


def _sampling_args(flags: RunFlags) -> tuple[dict[str, object], dict[str, object]]:
    """``--temperature``/``--reasoning-effort``/``--model-arg`` and the judge's, parsed."""
    try:
        model_args = parse_model_args(
            flags.temperature, flags.reasoning_effort, flags.model_arg or []
        )
        judge_args = parse_model_args(
            flags.judge_temperature,
            flags.judge_reasoning_effort,
            flags.judge_model_arg or [],
            "--judge-model-arg",
        )
    except UsageError as e:
        raise fail(str(e)) from None
    return model_args, judge_args


def _run_options(flags: RunFlags) -> RunOptions:
    """How the job executes: concurrency, retries, limits, budgets (never locked)."""
    from evoround.engine import RunOptions

    return RunOptions(
        concurrency=flags.concurrency,
        grace_sec=flags.grace,
        retry_failed=flags.retry_failed is not None,
        retries=flags.retry_on_error,
        executor=flags.executor.value,
        ray_address=flags.ray_address,
        max_containers=flags.max_containers,
        max_image_builds=flags.max_image_builds,
        max_model_connections=flags.max_model_connections,
        max_cost_usd=flags.max_cost,
        max_tokens_total=flags.max_tokens_total,
    )


def _decided(asked: RunRequest, flags: RunFlags) -> RunRequest:
    """Phase 2, decide: the library fills what was not given (from the job's lock on
    ``--resume``), then every check that needs no agent runs, before anything is written."""
    from evoround import api
    from evoround.sandboxes import docker_reachable
    from evoround.scaffolds import is_model_agent

    try:
        request = api.resolve(asked)
    except api.ResumeError as e:
        raise fail(str(e)) from None
    agent = "oracle" if request.agent is None else request.agent
    sandbox = request.sandbox or ("docker" if is_model_agent(agent) else "local")
    try:
        check_run_options(
            agent=agent,
            script=request.script,
            model=request.model,
            api_base=request.api_base,
            max_tokens=request.max_tokens,
            proxy=flags.proxy,
            sandbox=sandbox,
            executor=flags.executor.value,
            judge_model=request.judge_model,
            judge_api_base=request.judge_api_base,
            out_dir=request.out,
            job_name=request.job if asked.resume is not None else asked.job,
            given=_given_options(request, flags),
        )
        sandbox = choose_sandbox(agent, request.sandbox, docker_reachable)
        if sandbox == "local":
            check_isolation()
    except UsageError as e:
        raise fail(str(e)) from None
    return replace(request, sandbox=sandbox, tasks=request.tasks or (library_path(),))


def _given_options(request: RunRequest, flags: RunFlags) -> dict[str, object]:
    """Options whose meaning depends on another option: their value when given, else None
    (sampling arguments as decided: a resumed model agent's recorded ones count)."""

    def typed(name: str) -> object:
        return getattr(flags, name) if name in flags.typed else None

    return {
        "model_args": request.model_args or None,
        "max_cost": flags.max_cost,
        "judge_model_args": request.judge_model_args or None,
        "judge_api_base": typed("judge_api_base"),
        "judge_votes": typed("judge_votes"),
        "max_steps": typed("max_steps"),
        "ray_address": typed("ray_address"),
        "keep_snapshots": typed("keep_snapshots") or None,
    }


def _execute(request: RunRequest, flags: RunFlags, console: Console) -> RunResult:
    """Phase 3, run: the job with its progress display; SIGINT (Ctrl-C) or SIGTERM ends it
    resumable."""
    from evoround import api
    from evoround.cli._plain import job_observer
    from evoround.engine import JobConfigMismatch, RunnerLost
    from evoround.fileio import named
    from evoround.scaffolds import is_model_agent
    from evoround.scaffolds.proxy import ProxyError
    from evoround.tasks import TaskFormatError

    agent = "oracle" if request.agent is None else request.agent
    trusted = request.sandbox == "local" and is_model_agent(agent)
    notice = LOCAL_TRUSTED_NOTE.format(agent=agent) if trusted else None
    live = job_observer(flags.progress.value, console, agent, notice)
    proxy = (lambda m, d: _start_proxy(agent, m, d, console)) if flags.proxy else None
    stop_on_signals()  # also when started with SIGINT ignored (`cmd &` in a script)
    try:
        return api.run_request(
            request, observer=live, select=lambda ts: _selected(ts, flags), proxy=proxy
        )
    except (TaskFormatError, JobConfigMismatch, ValueError, ProxyError) as e:
        raise fail(str(e), console=console) from None
    except KeyboardInterrupt:
        _interrupted(request.job_dir, flags, console)
    except OSError as e:  # a full disk mid-job names no file: the line names the job folder
        raise named(e, request.job_dir) from None
    except RunnerLost as e:
        live.close()  # the process ends in _lost: close the display first
        _lost(request.job_dir, flags, console, str(e))
    finally:
        live.close()


def _selected(tasks: list[Task], flags: RunFlags) -> list[Task]:
    """``-t/--task``, ``--exclude`` and ``--limit``, then the rule names of what is left."""
    chosen = select_tasks(tasks, flags.task_names or [], flags.exclude or [], flags.limit)
    check_task_rules(chosen)
    return chosen


def _start_proxy(
    agent: str, models: ModelOptions | None, job_dir: Path, console: Console
) -> ModelProxy:
    """The job's LiteLLM proxy, started (``--proxy``); the caller closes it."""
    from evoround.scaffolds import MODEL_AGENTS
    from evoround.scaffolds.proxy import ModelProxy

    if agent not in MODEL_AGENTS or models is None or not models.model:
        raise ValueError(
            "--proxy records model calls: it needs a model agent and --model "
            f"(one of {', '.join(MODEL_AGENTS)})"
        )
    console.print("[dim]starting the LiteLLM proxy (--proxy)...[/]")
    return ModelProxy(
        workdir=job_dir.resolve() / "proxy",  # the proxy runs in its own directory
        model=models.model,
        upstream=models.api_base,
        upstream_key=models.api_key,
        default_provider="anthropic" if agent == "claude-code" else "openai",
    ).start()


def _again(job_dir: Path, flags: RunFlags) -> str:
    """The command that continues this job (options that shape how it runs, repeated)."""
    return resume_command(
        job_dir,
        script=flags.script,
        proxy=flags.proxy,
        executor=flags.executor.value,
        ray_address=flags.ray_address,
    )


def _interrupted(job_dir: Path, flags: RunFlags, console: Console) -> NoReturn:
    """Ctrl-C or SIGTERM: what was recorded is kept; say how to continue (exit 130)."""
    from evoround.api import EXIT_INTERRUPTED

    if not (job_dir / "job.json").is_file():  # stopped before the job began
        console.print("[yellow]interrupted[/] before the job started: no round was recorded")
        raise typer.Exit(EXIT_INTERRUPTED) from None
    console.print(
        f"[yellow]interrupted[/]: recorded rounds are kept in "
        f"{escape(str(job_dir))}/results.jsonl; continue with: {escape(_again(job_dir, flags))}",
        highlight=False,
        soft_wrap=True,
    )
    raise typer.Exit(EXIT_INTERRUPTED) from None


def _lost(job_dir: Path, flags: RunFlags, console: Console, why: str) -> NoReturn:
    """The cluster went away mid-job (the Ray head): what was recorded is kept; say how to
    continue (exit 1: not every round was evaluated). Ray's own threads may still wait on
    the lost head, so the process ends here without waiting for them."""
    from evoround.api import EXIT_NOT_EVALUATED

    console.print(
        f"[red]error:[/] {escape(why)}; recorded rounds are kept in "
        f"{escape(str(job_dir))}/results.jsonl; when the cluster is back, continue with: "
        f"{escape(_again(job_dir, flags))}",
        highlight=False,
        soft_wrap=True,
    )
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(EXIT_NOT_EVALUATED)


def _print_result(request: RunRequest, flags: RunFlags, result: RunResult) -> None:
    """Phase 4, report: the job's report (or its JSON), report.html and the cost."""
    from evoround.cli._report import viewer_setting
    from evoround.reports import job_json, print_report, write_html_report
    from evoround.results import load_job

    job_dir = request.job_dir
    view = load_job(job_dir)
    if flags.as_json:  # the cost is the JSON's "cost" key
        print(json.dumps(job_json(view), indent=2))
        return
    console = out()
    print_report([view], console)
    console.print(f"job folder: {job_dir}", markup=False, highlight=False)
    html = write_html_report([view], job_dir / "report.html", viewer=viewer_setting())
    console.print(f"report: {html}", markup=False, highlight=False)
    if str(result.cost) != "-":
        console.print(
            f"cost: {result.cost} ({result.cost.tokens} tokens)", markup=False, highlight=False
        )


def _exit_code(request: RunRequest, flags: RunFlags, result: RunResult, console: Console) -> int:
    """The exit-code contract: "the model was down" is not a score, and a budget stop is
    partial by the user's choice (exit 1, resumable); each says why on stderr."""
    from evoround.api import EXIT_NOT_EVALUATED

    code = 0
    summary = result.outcome.summary()
    if summary is not None:
        code = result.outcome.code_at(flags.max_error_rate)
        label = "[bold red]not evaluated:[/]" if code else "[yellow]not evaluated (allowed):[/]"
        console.print(f"{label} {escape(summary)}", highlight=False, soft_wrap=True)
    if result.budget_stop is not None:
        again = _again(request.job_dir, flags)
        flag = "--max-cost USD" if "max-cost" in result.budget_stop else "--max-tokens-total N"
        console.print(
            f"[bold yellow]budget stopped the job:[/] {escape(result.budget_stop)}; finished "
            f"rounds are kept; continue with a higher budget: {escape(again)} {flag}",
            highlight=False,
            soft_wrap=True,
        )
        code = code or EXIT_NOT_EVALUATED
    return code


DEMO_AGENTS = ("oracle", "nop", "scripted:regressor", "scripted:stale", "scripted:decaying")


@app.command(rich_help_panel="Evaluate")
def demo(
    out_dir: Annotated[Path, typer.Option("--out", help="Folder that holds job folders.")] = Path(
        "runs"
    ),
    sandbox: Annotated[SandboxChoice, typer.Option(help="Where attempts run.")] = (
        SandboxChoice.local
    ),
    progress: ProgressOpt = ProgressChoice.auto,
) -> None:
    """Run the bundled library with five agents (oracle, nop and three scripted), then report.

    The regressor breaks an earlier requirement in round 3 because of state it left
    itself (so it passes that round from the reference state: a non-zero Gap); the
    stale agent ignores a correction; the decaying agent passes every test but follows
    the system prompt, AGENTS.md, skills and memory less each round (CSR falls by round).
    """
    try:
        check_out_dir(out_dir)
    except UsageError as e:
        raise fail(str(e)) from None
    stamp = datetime.now().strftime("%Y-%m-%d__%H-%M-%S")
    job_dirs = _demo_jobs(out_dir, stamp, sandbox.value, progress.value)
    _print_demo(out_dir, stamp, job_dirs)


def _demo_jobs(out_dir: Path, stamp: str, sandbox: str, shown: str) -> list[Path]:
    """One job per demo agent under a progress bar (``--progress live``) or plain lines;
    SIGINT or SIGTERM keeps what was recorded."""
    from evoround import api
    from evoround.cli._live import ProgressObserver, progress_bar
    from evoround.cli._plain import job_observer
    from evoround.tasks import TaskFormatError

    console = err()
    job_dirs: list[Path] = []
    if shown == "auto":
        shown = "live" if console.is_terminal else "plain"
    stop_on_signals()
    try:
        with progress_bar(console) if shown == "live" else nullcontext() as progress:
            for agent in DEMO_AGENTS:
                job_dir = out_dir / f"{stamp}__demo__{agent.replace(':', '-')}"
                request = api.RunRequest(
                    tasks=(library_path(),),
                    agent=agent,
                    out=out_dir,
                    job=job_dir.name,
                    sandbox=sandbox,
                    modes=tuple(modes_of(ModeChoice.both)),
                )
                observer = (
                    ProgressObserver(progress, agent)
                    if progress is not None
                    else job_observer(shown, console, agent)
                )
                try:
                    api.run_request(request, observer=observer, select=_rules_checked)
                finally:
                    if not isinstance(observer, ProgressObserver):
                        observer.close()
                job_dirs.append(job_dir)
    except (TaskFormatError, ValueError) as e:
        raise fail(str(e), console=console) from None
    except KeyboardInterrupt:
        console.print("[yellow]interrupted[/]: recorded rounds are kept in the job folders")
        raise typer.Exit(130) from None
    return job_dirs


def _rules_checked(tasks: list[Task]) -> list[Task]:
    check_task_rules(tasks)
    return tasks


def _print_demo(out_dir: Path, stamp: str, job_dirs: list[Path]) -> None:
    """Short, and the leaderboard last (it must not scroll away): the per-task tables are
    one ``evoround report`` away and in the HTML report."""
    from evoround.cli._legend import LEGEND
    from evoround.cli._report import viewer_setting
    from evoround.reports import leaderboard_table, write_html_report
    from evoround.results import load_job

    views = [load_job(p) for p in job_dirs]
    html = write_html_report(
        views, out_dir / f"{stamp}__demo__report.html", viewer=viewer_setting()
    )
    console = out()
    console.print("job folders: " + " ".join(str(p) for p in job_dirs), markup=False)
    console.print(
        f"per task and round: evoround report {job_dirs[0]} (or any job folder)",
        markup=False,
        highlight=False,
    )
    console.print(f"report: {html}", markup=False, highlight=False)
    console.print(LEGEND, markup=False, highlight=False)
    board = leaderboard_table(views)
    board.caption = "95% intervals and standard errors: evoround report <job folder>"
    console.print(board)
