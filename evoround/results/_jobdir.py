"""A job directory as recorded: its config lock (job.json) and its results.

Lives with the records, not with the runner, so reading a job (report, compare, export)
never imports the sandboxes or the agents that produced it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field, ValidationError

from evoround.results._metrics import Metrics, compute_metrics
from evoround.results._recorder import read_results
from evoround.results._records import Mode, RoundResult


class TaskRef(BaseModel):
    digest: str
    n_rounds: int
    path: str


class JobConfig(BaseModel):
    """The config lock of a job; resuming with a different one is refused."""

    job: str
    agent: str
    model: str | None = None
    script_digest: str | None = None
    attempts: int = Field(ge=1)
    modes: list[Mode]
    sandbox: str
    tasks: dict[str, TaskRef]
    judge_model: str | None = None
    """The LLM judge of judge checks (None: judge checks score ``error``, excluded from CSR)."""
    api_base: str | None = None
    """Model endpoint of a model-backed agent, recorded so ``--resume`` reaches the same one."""
    max_steps: int | None = None
    """Model calls per round of a model-backed agent (None: a model-free agent)."""
    judge_api_base: str | None = None
    judge_votes: int | None = None
    """Votes per judge check (None: no judge)."""
    on_fail: str = Field(default="stop", pattern=r"^(stop|continue)$")
    """MT protocol: ``stop`` (fail-stop, the paper's MT@k) or ``continue`` (later rounds run
    in the same workspace and session after a failure: EvoCode-Bench's current runner)."""
    base_image_map: dict[str, str] = Field(default_factory=dict)
    """Explicit ``FROM`` substitutions (``--base-image-map FROM=LOCAL``) of this job."""
    rounds_window: tuple[int, int | None] | None = None
    """``--rounds A-B`` (B None: to the end): MT attempts run rounds A..B persistently after
    fast-forwarding 1..A-1 from the reference state; SR runs A..B; metrics cover A..B."""
    docker_snapshot: str | None = Field(default=None, pattern=r"^(workspace|archive|commit)$")
    """How the job's Docker sandboxes snapshot (``EVOROUND_DOCKER_SNAPSHOT``): every node
    and every resume uses this mode, so a job's snapshots are all of one kind; None for
    the local sandbox (and in a job.json written before it was recorded)."""
    base_images: dict[str, str] = Field(default_factory=dict)
    """Task -> its base image as built: ``FROM`` as is, or ``X -> Y (map|build-arg)``."""
    model_args: dict[str, Any] | None = None
    """Sampling settings of a model-backed agent (``--temperature``, ``--reasoning-effort``,
    ``--model-arg``): they change results, so they are locked (None: none given)."""
    judge_model_args: dict[str, Any] | None = None
    """Sampling settings of the judge (``--judge-temperature``, ``--judge-reasoning-effort``,
    ``--judge-model-arg``), locked like the agent's (None: the judge's defaults)."""
    agent_notes: list[str] = Field(default_factory=list)
    """What the agent's figures mean that its name does not say (e.g. a Harbor agent that
    cannot continue a session starts every round fresh); printed with the report."""


class NotAJobDir(ValueError):
    pass


ISOLATION_FILE = "sandbox.txt"
"""In a job folder: one line per run, ``<time> local isolation: <mechanism>; <limits>``
(local only)."""


@dataclass(frozen=True)
class JobRunning:
    """Who is running a job right now (its ``job.lock`` names a live holder): a report of
    it shows the rounds recorded so far, so its figures are partial. Filled in by the
    caller that can tell a live holder from a dead one (``evoround.api.report``)."""

    host: str
    pid: int
    since: datetime

    def describe(self, job: str) -> str:
        since = self.since.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
        return (
            f"job {job} is running (pid {self.pid} on host {self.host or '?'} since {since}): "
            "its figures are partial, from the rounds recorded so far"
        )

    def as_json(self) -> dict[str, Any]:
        return {"host": self.host, "pid": self.pid, "since": self.since.isoformat()}


@dataclass(frozen=True)
class JobView:
    path: Path
    config: JobConfig
    records: list[RoundResult]
    problems: list[str]
    n_rounds: dict[str, int]
    running: JobRunning | None = None
    """Set while a run of the job holds its lock (see :class:`JobRunning`)."""

    def isolation(self) -> str | None:
        """How the local sandbox isolated the agent in the latest run of this job (``bwrap``,
        ``unshare``, ``none``; from ``sandbox.txt``), None for Docker or older jobs."""
        try:
            lines = (self.path / ISOLATION_FILE).read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            return None
        last = lines[-1].split("local isolation:", 1)[-1] if lines else ""
        return last.split(";")[0].strip() or None

    def attempted(self) -> dict[str, int]:
        """MT attempts started per task, recorded or not: the engine creates an attempt's
        ``<task>/mt-NN/`` folder before its first round, so a folder without any record is
        an attempt that left nothing (it scores 0, as the benchmark scores such a trial)."""
        out: dict[str, int] = {}
        for task in self.n_rounds:
            d = self.path / task
            if d.is_dir():
                out[task] = sum(
                    1 for p in d.iterdir() if p.is_dir() and re.fullmatch(r"mt-\d+", p.name)
                )
        return out

    def metrics(self, k: int | None = None) -> Metrics:
        return compute_metrics(
            self.records,
            self.n_rounds,
            k or self.config.attempts,
            attempted=self.attempted(),
            window=self.config.rounds_window,
        )


def read_job_config(cfg_path: Path) -> JobConfig:
    """A job's config lock, or :class:`NotAJobDir` in one line naming the file and field."""
    try:
        return JobConfig.model_validate_json(cfg_path.read_bytes())
    except OSError as e:
        raise NotAJobDir(f"{cfg_path}: cannot read: {e.strerror or e}") from None
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        what = first["msg"] if first["type"] != "json_invalid" else "not valid JSON"
        raise NotAJobDir(f"{cfg_path}: {where + ': ' if where else ''}{what}") from None


def load_job(path: Path) -> JobView:
    cfg_path = path / "job.json"
    if not cfg_path.is_file():
        raise NotAJobDir(f"{path}: not a job directory (no job.json)")
    config = read_job_config(cfg_path)
    records, problems = read_results(path / "results.jsonl")
    n_rounds = {name: ref.n_rounds for name, ref in config.tasks.items()}
    return JobView(path, config, records, problems, n_rounds)
