"""Task format v1: the pydantic schema of ``task.toml`` and the loaded task record.

The schema is strict (unknown keys are errors) so that a typo in a task file is
reported instead of being silently ignored.
"""

from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    field_validator,
)


class Activity(StrEnum):
    construction = "construction"
    spec_evolution = "spec_evolution"
    review = "review"
    migration = "migration"


class Style(StrEnum):
    explorative = "explorative"
    contractual = "contractual"
    document_driven = "document_driven"


class ChangeType(StrEnum):
    extension = "extension"
    correction = "correction"
    conflict = "conflict"


class CheckCategory(StrEnum):
    system_prompt = "system_prompt"
    user_query = "user_query"
    system_reminder = "system_reminder"
    repo_spec = "repo_spec"
    skill = "skill"
    memory = "memory"
    tool_schema = "tool_schema"


class CheckKind(StrEnum):
    rule = "rule"
    judge = "judge"


class CheckScope(StrEnum):
    round = "round"
    task = "task"


MAX_SEC = 7 * 24 * 3600.0
"""Longest timeout a task may ask for (a week)."""
MAX_CPUS = 1024.0
MAX_MB = 1024 * 1024
"""1 TiB, in MB: the most memory or workspace a task may ask for."""
MAX_PIDS = 4_194_304
MAX_FILES = 10_000_000


def no_parent_parts(paths: list[str]) -> list[str]:
    """Artifact paths (in the sandbox): absolute or relative to the workdir, never ``..``."""
    for p in paths:
        if ".." in p.replace("\\", "/").split("/"):
            raise ValueError(f"artifact {p!r}: a path with '..' could leave the sandbox")
    return paths


ArtifactPaths = Annotated[list[str], AfterValidator(no_parent_parts)]
"""Sandbox paths collected after the agent's turn (checked by :func:`no_parent_parts`)."""


def inside_task(rel: str) -> str:
    """A path the task gives relative to its own folder, refused if it could leave it."""
    parts = rel.replace("\\", "/").split("/")
    if rel.startswith(("/", "\\")) or re.match(r"^[A-Za-z]:", rel) or ".." in parts:
        raise ValueError("must be a relative path inside the task folder (no '..', not absolute)")
    return rel


SYSTEM_DIRS = frozenset(
    [
        "/bin",
        "/boot",
        "/dev",
        "/etc",
        "/home",
        "/lib",
        "/lib32",
        "/lib64",
        "/libx32",
        "/media",
        "/mnt",
        "/opt",
        "/proc",
        "/run",
        "/sbin",
        "/srv",
        "/sys",
        "/tmp",
        "/usr",
        "/usr/bin",
        "/usr/include",
        "/usr/lib",
        "/usr/lib64",
        "/usr/libexec",
        "/usr/local",
        "/usr/local/bin",
        "/usr/local/lib",
        "/usr/sbin",
        "/usr/share",
        "/var",
        "/var/lib",
        "/var/log",
    ]
)
"""Folders a workspace may not be: it is copied, diffed and reset, so the system would be."""
SYSTEM_TREES = ("/bin", "/boot", "/dev", "/etc", "/lib", "/proc", "/sbin", "/sys", "/usr/bin")
"""Folders a workspace may not be inside of either (system files, kernel interfaces)."""


def sane_workdir(v: str) -> str:
    """The sandbox's workspace folder, normalised (``/app/`` is ``/app``): absolute, no
    ``..`` (``/workspace/../etc`` is /etc), never ``/`` or a system folder."""
    if not v.startswith("/"):
        raise ValueError("must be an absolute path inside the sandbox, e.g. /workspace")
    if ".." in v.split("/"):
        raise ValueError("must not contain '..' (name the folder itself, e.g. /workspace)")
    if any(c in v for c in "\0\n\r\t"):
        raise ValueError("must not contain control characters")
    norm = "/" + "/".join(p for p in v.split("/") if p and p != ".")
    if norm == "/":
        raise ValueError("must not be / (the workspace is copied and reset: use e.g. /workspace)")
    if norm in SYSTEM_DIRS or any(norm == t or norm.startswith(t + "/") for t in SYSTEM_TREES):
        raise ValueError(
            f"{norm} is a system folder: the workspace is copied and reset, so use a folder "
            "of its own (e.g. /workspace or /app)"
        )
    return norm


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class CheckSpec(_Strict):
    """One item of a process checklist (scored by the checklist subsystem)."""

    id: str = Field(min_length=1)
    category: CheckCategory
    kind: CheckKind
    scope: CheckScope = CheckScope.round
    rule: str | None = None
    params: dict[str, object] = Field(default_factory=dict)
    description: str = ""
    wins_over: CheckCategory | None = None


class TaskMeta(_Strict):
    name: str = Field(pattern=r"^[a-z0-9][a-z0-9._-]*$", max_length=100)
    """Also a folder name in every job: short enough for any file system."""
    description: str = ""
    activity: Activity
    style: Style = Style.contractual
    tags: list[str] = Field(default_factory=list)
    system_prompt: str = ""
    source_name: str = ""
    """The task's name in the format it was imported from (e.g. Harbor's ``[task].name``
    ``org/name``, or EvoCode-Bench's directory name), kept verbatim for exports."""
    metadata: dict[str, Any] = Field(default_factory=dict)
    """Free-form metadata carried over from an imported task (difficulty, category, ...)."""


class EnvironmentSpec(_Strict):
    dockerfile: str | None = "environment/Dockerfile"
    image: str | None = None
    workdir: str = "/workspace"
    # Strict scalars: TOML has real numbers and booleans, so ``network = "no"`` (which
    # lax pydantic would read as False) or ``cpus = "2"`` is a typo to report, not coerce.
    env: dict[str, str] = Field(default_factory=dict)
    """Environment variables of every command in the sandbox (Harbor's ``[environment.env]``);
    ``${VAR}`` and ``${VAR:-default}`` are resolved from the host (see
    :func:`resolve_host_env`)."""
    # Upper bounds too: a timeout of 1e300 s overflows the waits that use it, and 10**17 MB
    # is a typo that would only surface as a container that does not start.
    cpus: float = Field(default=1.0, gt=0, le=MAX_CPUS, strict=True, allow_inf_nan=False)
    memory_mb: int = Field(default=2048, gt=0, le=MAX_MB, strict=True)
    pids: int = Field(default=512, gt=0, le=MAX_PIDS, strict=True)
    network: StrictBool = False
    agent_timeout_sec: float = Field(
        default=900.0, gt=0, le=MAX_SEC, strict=True, allow_inf_nan=False
    )
    verifier_timeout_sec: float = Field(
        default=180.0, gt=0, le=MAX_SEC, strict=True, allow_inf_nan=False
    )
    max_workspace_mb: int = Field(default=512, gt=0, le=MAX_MB, strict=True)
    """Largest total file size of the workspace at a round boundary; more fails the round
    (the agent's failure) before the harness copies or hashes it."""
    max_workspace_files: int = Field(default=20_000, gt=0, le=MAX_FILES, strict=True)
    """Most files (and links) in the workspace at a round boundary, and most folders: a
    folder is as cheap to make as a file and costs the harness as much to copy."""

    @field_validator("workdir")
    @classmethod
    def _absolute(cls, v: str) -> str:
        return sane_workdir(v)

    @field_validator("dockerfile")
    @classmethod
    def _dockerfile_inside(cls, v: str | None) -> str | None:
        return None if v is None else inside_task(v)


class VerifierSpec(_Strict):
    """How a round is graded.

    ``pytest``: the active suite runs under pytest and the JUnit report plus the exit
    code decide. ``script``: the active suite's ``script`` (Harbor's ``tests/test.sh``
    style) runs with bash and writes a reward to ``$EVOROUND_REWARD_FILE``; the round
    passes when the script exits 0 and the reward is 1. ``none``: no outcome tests
    (compliance-only tasks such as imported OctoBench instances): every round's outcome
    counts as passed and only the process checklist says anything.
    """

    kind: str = Field(default="pytest", pattern=r"^(pytest|script|none)$")
    pytest_args: list[str] = Field(default_factory=list)
    script: str = Field(default="test.sh", min_length=1)
    """For ``kind = "script"``: the entry point, relative to the suite root."""

    @field_validator("script")
    @classmethod
    def _script_inside(cls, v: str) -> str:
        return inside_task(v)

    min_reward: float | dict[str, float] = 0.999
    """Script verifiers: a round passes when its reward is at least this (EvoCode-Bench's
    0.999); a table maps reward.json keys to thresholds, all of which must be met."""
    min_reward_semantics: Literal["threshold", "early_stop"] = "threshold"
    """What a round's own ``min_reward`` means. ``threshold`` (evoround's own tasks): it
    replaces the task's pass threshold for that round and a round that fails it ends the
    attempt. ``early_stop`` (Harbor's meaning; what ``tasks import`` writes for Harbor
    tasks): the round passes on the task's ``min_reward`` above (0.999, EvoCode-Bench's
    test) as every round does; its own ``min_reward`` only ends the attempt when the reward
    falls below it (a missing reward counts as below)."""
    nonzero_exit: Literal["fail", "ignore", "error"] = "fail"
    """Script verifiers: what a non-zero exit of the script means. ``fail`` (evoround's own
    tasks), ``ignore`` (Harbor: only the reward counts), ``error`` (harbor_multiturn: a
    verification error)."""
    env: dict[str, str] = Field(default_factory=dict)
    """Extra environment of every verification (Harbor's ``[verifier.env]``)."""


class HealthcheckSpec(_Strict):
    """A command that must succeed before the agent's turn (Harbor's ``[steps.healthcheck]``).

    Retried every ``interval_sec`` after ``start_period_sec``; ``retries`` consecutive
    failures (each bounded by ``timeout_sec``) fail the round's set-up."""

    command: str = Field(min_length=1)
    interval_sec: float = Field(default=5.0, ge=0, le=MAX_SEC, allow_inf_nan=False)
    timeout_sec: float = Field(default=30.0, gt=0, le=MAX_SEC, allow_inf_nan=False)
    start_period_sec: float = Field(default=0.0, ge=0, le=MAX_SEC, allow_inf_nan=False)
    start_interval_sec: float = Field(default=5.0, ge=0, le=MAX_SEC, allow_inf_nan=False)
    retries: int = Field(default=3, ge=1, le=10_000)


class RoundSpec(_Strict):
    title: str = ""
    name: str = ""
    """The round's name in its source format (Harbor's step name), kept for exports."""
    change_types: list[ChangeType] = Field(default_factory=list)
    retires: list[str] = Field(default_factory=list)
    system_reminder: str | None = None
    checks: list[CheckSpec] = Field(default_factory=list)
    min_reward: float | dict[str, float] | None = None
    """This round's own threshold (Harbor's ``[[steps]] min_reward``); what it does is
    ``[verifier].min_reward_semantics``'s call."""
    agent_timeout_sec: float | None = Field(default=None, gt=0, le=MAX_SEC, allow_inf_nan=False)
    verifier_timeout_sec: float | None = Field(default=None, gt=0, le=MAX_SEC, allow_inf_nan=False)
    verifier_env: dict[str, str] = Field(default_factory=dict)
    """Extra environment of this round's verification only (Harbor's ``[steps.verifier.env]``)."""
    healthcheck: HealthcheckSpec | None = None
    artifacts: ArtifactPaths = Field(default_factory=list)
    """Sandbox paths copied into the round's artefact dir after the agent's turn."""


class SolutionSpec(_Strict):
    env: dict[str, str] = Field(default_factory=dict)
    """Environment of the reference solutions (Harbor's ``[solution].env``)."""


class TaskFile(_Strict):
    """The whole of ``task.toml``."""

    schema_version: int = Field(default=1, ge=1, le=1, strict=True)
    task: TaskMeta
    environment: EnvironmentSpec = Field(default_factory=EnvironmentSpec)
    verifier: VerifierSpec = Field(default_factory=VerifierSpec)
    solution: SolutionSpec = Field(default_factory=SolutionSpec)
    artifacts: ArtifactPaths = Field(default_factory=list)
    """Sandbox paths copied into every round's artefact dir after the agent's turn."""
    checks: list[CheckSpec] = Field(default_factory=list)
    rounds: list[RoundSpec] = Field(default_factory=list)


@dataclass(frozen=True)
class Round:
    """One loaded round directory ``rounds/NN``."""

    index: int
    dir: Path
    instruction: str
    spec: RoundSpec
    test_files: tuple[str, ...]
    """Paths relative to ``rounds/NN/tests`` that this round introduces or replaces."""

    @property
    def tests_dir(self) -> Path:
        return self.dir / "tests"

    @property
    def solution_dir(self) -> Path:
        return self.dir / "solution"

    @property
    def workdir_dir(self) -> Path:
        """Files put into the workspace before the agent's turn (Harbor's step ``workdir/``);
        a ``setup.sh`` among them is run there, then removed unless it removed itself."""
        return self.dir / "workdir"


@dataclass(frozen=True)
class Task:
    """A validated task on disk. Everything the engine needs is reachable from here."""

    path: Path
    config: TaskFile
    rounds: tuple[Round, ...]
    digest: str
    """sha256 over every file of the task: keys image and reference-snapshot caches."""
    workspace_dir: Path = field(compare=False)

    @property
    def name(self) -> str:
        return self.config.task.name

    @property
    def n_rounds(self) -> int:
        return len(self.rounds)

    def round(self, index: int) -> Round:
        if not 1 <= index <= self.n_rounds:
            raise IndexError(f"task {self.name} has rounds 1..{self.n_rounds}, not {index}")
        return self.rounds[index - 1]


_HOST_VAR = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def resolve_host_env(env: dict[str, str]) -> dict[str, str]:
    """Harbor's env templating: ``${VAR}`` / ``${VAR:-default}`` from the host's environment.

    An unset ``${VAR}`` without a default becomes empty, as a shell would make it."""

    def sub(m: re.Match[str]) -> str:
        value = os.environ.get(m.group(1))
        return value if value is not None else (m.group(2) or "")

    return {k: _HOST_VAR.sub(sub, str(v)) for k, v in env.items()}
