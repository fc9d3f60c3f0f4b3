"""What ``evoround run`` accepts: every option's declaration, and the parsed command line.

The declarations sit here, apart from the command, so that the command reads as the few
phases of a run (parse, decide, run, report) and not as 250 lines of option help.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Annotated

import typer

from evoround.cli._app import ModeChoice
from evoround.cli._checks import ExecutorChoice, OnFailChoice, ReasoningEffort, SandboxChoice


def positive_budget(value: float | None) -> float | None:
    """``--max-cost``: a budget of nothing (or NaN) is a typo, refused by click."""
    if value is not None and not value > 0:  # NaN too
        raise typer.BadParameter("a budget in USD must be > 0")
    return value


AgentOpt = Annotated[
    str,
    typer.Option(
        "--agent",
        "-a",
        help="oracle | nop | scripted (with --script) | scripted:NAME (bundled script) | "
        "evoround-agent | claude-code | mini-swe-agent (with --model) | harbor:NAME or "
        "harbor:module:Class (Harbor's agents, e.g. harbor:terminus-2; `evoround install-harbor "
        "--agents` lists them and which cannot continue a session across rounds).",
    ),
]

TasksArg = Annotated[
    list[Path] | None,
    typer.Argument(help="Task directories or folders of tasks. Default: the bundled library."),
]

TaskNamesOpt = Annotated[
    list[str] | None,
    typer.Option("--task", "-t", help="Only these tasks: a name or a glob (repeatable)."),
]

ExcludeOpt = Annotated[
    list[str] | None,
    typer.Option(help="Leave out these tasks: a name or a glob (repeatable)."),
]

LimitOpt = Annotated[
    int | None, typer.Option(min=1, help="At most this many tasks (after -t/--exclude).")
]

ScriptOpt = Annotated[Path | None, typer.Option(help="YAML script for --agent scripted.")]

ModelOpt = Annotated[
    str | None,
    typer.Option(help="Model of a model-backed agent (litellm name, e.g. openai/gpt-4o)."),
]

ApiBaseOpt = Annotated[
    str | None,
    typer.Option(help="Model endpoint (provider, LiteLLM proxy or `evoround replay-server`)."),
]

MaxStepsOpt = Annotated[int, typer.Option(min=1, help="Model calls per round (agents).")]

MaxTokensOpt = Annotated[
    int | None,
    typer.Option(min=1, help="Total tokens per round (evoround-agent; default: no limit)."),
]

TemperatureOpt = Annotated[
    float | None,
    typer.Option(min=0.0, max=2.0, help="Sampling temperature (litellm agents)."),
]

ReasoningEffortOpt = Annotated[
    ReasoningEffort | None, typer.Option(help="Reasoning effort (litellm agents).")
]

ModelArgOpt = Annotated[
    list[str] | None,
    typer.Option(
        help="Any other litellm argument with every model call, KEY=VALUE (JSON values "
        "parsed; repeatable), e.g. top_p=0.9. Locked in job.json like --model."
    ),
]

ProxyOpt = Annotated[
    bool,
    typer.Option(
        "--proxy",
        help="Route the agent's model calls through a LiteLLM proxy on loopback that "
        "records every call (failed ones too) with its round and token usage: "
        "round-NN/model_calls.jsonl and model_call events in the trajectory. "
        "First use installs the proxy into $EVOROUND_HOME/tools (needs PyPI).",
    ),
]

AttemptsOpt = Annotated[int, typer.Option("--attempts", "-k", min=1, help="Attempts per task.")]

ModeOpt = Annotated[
    ModeChoice, typer.Option(help="mt: persistent, fail-stop; sr: each round from reference.")
]

SandboxOpt = Annotated[
    SandboxChoice | None,
    typer.Option(
        help="Where attempts run (local: a folder, trusted agents). Default: docker for "
        "model-backed agents, local for scripted, oracle and nop."
    ),
]

KeepSnapshotsOpt = Annotated[
    bool, typer.Option(help="Docker: keep agent snapshot images for inspection.")
]

OutDirOpt = Annotated[Path, typer.Option("--out", help="Folder that holds job folders.")]

JobNameOpt = Annotated[
    str | None,
    typer.Option("--job", help="Job folder name; an existing job with the same config resumes."),
]

AsJsonOpt = Annotated[bool, typer.Option("--json", help="Print the result as JSON.")]

JudgeModelOpt = Annotated[
    str | None,
    typer.Option(
        help="litellm model for judge checks (e.g. openai/gpt-4o-mini). Without it judge "
        "checks score 'error' and are left out of CSR/ISR."
    ),
]

JudgeApiBaseOpt = Annotated[
    str | None, typer.Option(help="API base URL of the judge model (e.g. a replay server).")
]

JudgeVotesOpt = Annotated[int, typer.Option(min=1, help="Judge votes per check (majority).")]

JudgeTemperatureOpt = Annotated[
    float | None,
    typer.Option(min=0.0, max=2.0, help="Sampling temperature of the judge (default 0)."),
]

JudgeReasoningEffortOpt = Annotated[
    ReasoningEffort | None, typer.Option(help="Reasoning effort of the judge model.")
]

JudgeModelArgOpt = Annotated[
    list[str] | None,
    typer.Option(
        help="Any other litellm argument with every judge call, KEY=VALUE (repeatable). "
        "Locked in job.json like --judge-model."
    ),
]

ResumeOpt = Annotated[
    Path | None,
    typer.Option(
        help="Continue the job in this folder: options not given come from its job.json; "
        "a different config is refused with a diff. Interrupted attempts continue from "
        "their last recorded round."
    ),
]

RetryFailedOpt = Annotated[
    Path | None,
    typer.Option(help="Like --resume, and re-run the attempts that ended in infra failures."),
]

ConcurrencyOpt = Annotated[
    int, typer.Option("--concurrency", "-j", min=1, help="Attempts running at once.")
]

MaxContainersOpt = Annotated[
    int | None,
    typer.Option(min=1, help="Attempts holding a live sandbox at once (default: -j)."),
]

MaxImageBuildsOpt = Annotated[int, typer.Option(min=1, help="Image builds at once.")]

MaxModelConnectionsOpt = Annotated[
    int | None, typer.Option(min=1, help="Model API calls in flight at once.")
]

GraceOpt = Annotated[
    float,
    typer.Option(min=0, help="Seconds running rounds get to finish after Ctrl-C/SIGTERM."),
]

RetryOnErrorOpt = Annotated[
    int | None,
    typer.Option(
        min=0,
        help="Retries of an attempt after an infra failure, continuing from its last "
        "recorded round (default: $EVOROUND_INFRA_RETRIES or 3).",
    ),
]

MaxErrorRateOpt = Annotated[
    float,
    typer.Option(
        min=0.0,
        max=1.0,
        help="Exit 0 while at most this fraction of rounds could not be evaluated "
        "(infra, model_api, judge errors); a job with no evaluated round exits 1 always.",
    ),
]

ExecutorOpt = Annotated[
    ExecutorChoice, typer.Option(help="local (threads) or ray (needs the ray extra).")
]

OnFailOpt = Annotated[
    OnFailChoice,
    typer.Option(
        help="MT after a failed round: stop (fail-stop, the paper's MT@k) | continue "
        "(EvoCode-Bench's current runner: later rounds run in the same workspace and "
        "session). Recorded in job.json."
    ),
]

RoundsOpt = Annotated[
    str | None,
    typer.Option(
        "--rounds",
        help="A-B (or A-, or A): run rounds A..B only. MT attempts start from the "
        "reference state after round A-1 (earlier rounds fast-forwarded) and are "
        "persistent within the window; metrics cover the window. Recorded in job.json.",
    ),
]

RayAddressOpt = Annotated[
    str | None, typer.Option(help="Ray cluster address (e.g. 127.0.0.1:6379).")
]

MaxCostOpt = Annotated[
    float | None,
    typer.Option(
        callback=positive_budget,
        help="Budget in USD (litellm's price map): start no new round once the job's "
        "rounds cost this much; finished rounds are kept, exit 1, resumable with a "
        "higher budget. The model must have a price.",
    ),
]

MaxTokensTotalOpt = Annotated[
    int | None,
    typer.Option(min=1, help="Budget in tokens over the whole job (like --max-cost, in tokens)."),
]


class ProgressChoice(StrEnum):
    auto = "auto"
    live = "live"
    plain = "plain"
    none = "none"


ProgressOpt = Annotated[
    ProgressChoice,
    typer.Option(
        help="How a running job shows progress on stderr: live (a table redrawn in place), "
        "plain (one line per recorded round and a heartbeat, for logs, CI and nohup), "
        "none; auto: live on a terminal, plain otherwise.",
    ),
]

VerboseOpt = Annotated[
    bool, typer.Option("--verbose", "-v", help="Show the engine's log (INFO) on stderr.")
]

DebugOpt = Annotated[
    bool, typer.Option("--debug", help="The engine's DEBUG log and tracebacks of bugs.")
]


@dataclass(frozen=True)
class RunFlags:
    """The command line of one ``evoround run``, as typer converted it.

    ``typed`` names the options the user typed (not left at their default): a resumed job
    takes every option not typed from its config lock.
    """

    tasks: list[Path] | None
    agent: str
    task_names: list[str] | None
    exclude: list[str] | None
    limit: int | None
    script: Path | None
    model: str | None
    api_base: str | None
    max_steps: int
    max_tokens: int | None
    temperature: float | None
    reasoning_effort: ReasoningEffort | None
    model_arg: list[str] | None
    proxy: bool
    attempts: int
    mode: ModeChoice
    sandbox: SandboxChoice | None
    keep_snapshots: bool
    out_dir: Path
    job_name: str | None
    as_json: bool
    judge_model: str | None
    judge_api_base: str | None
    judge_votes: int
    judge_temperature: float | None
    judge_reasoning_effort: ReasoningEffort | None
    judge_model_arg: list[str] | None
    resume: Path | None
    retry_failed: Path | None
    concurrency: int
    max_containers: int | None
    max_image_builds: int
    max_model_connections: int | None
    grace: float
    retry_on_error: int | None
    max_error_rate: float
    executor: ExecutorChoice
    on_fail: OnFailChoice
    base_image_map: list[str] | None
    rounds: str | None
    ray_address: str | None
    max_cost: float | None
    max_tokens_total: int | None
    progress: ProgressChoice
    verbose: bool
    debug: bool
    typed: frozenset[str] = frozenset()
