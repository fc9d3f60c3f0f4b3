"""Scaffolds that need no model: oracle, nop and scripted (synthetic agents)."""

from __future__ import annotations

import re
import time
from pathlib import Path
from typing import Any

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    field_validator,
    model_validator,
)

from evoround.results import EventType, TrajectoryEvent, truncate
from evoround.sandboxes import Sandbox
from evoround.scaffolds._reference import reference_apply, solution_env
from evoround.scaffolds.session import (
    AgentSession,
    RoundInput,
    RoundTrace,
    Scaffold,
    TraceStatus,
)
from evoround.tasks import Task, describe_error, known_keys, unknown_key_message


class _UserTurnSession(AgentSession):
    """Records the user's message first, like a real agent transcript would."""

    def _start_trace(self, inp: RoundInput) -> RoundTrace:
        return RoundTrace(
            events=[TrajectoryEvent(type=EventType.message, role="user", content=inp.message)]
        )

    def restore_state(self, state_dir: Path) -> None:
        """Nothing to restore: these sessions keep no conversation, all state is the workspace."""


class _OracleSession(_UserTurnSession):
    def __init__(self, sandbox: Sandbox) -> None:
        self.sandbox = sandbox

    def run_round(self, inp: RoundInput) -> RoundTrace:
        trace = self._start_trace(inp)
        res = reference_apply(self.sandbox, inp.round, inp.timeout_sec, solution_env(inp.task))
        trace.events.append(
            TrajectoryEvent(
                type=EventType.command,
                content=f"apply reference solution of round {inp.round.index}",
                exit_code=res.exit_code if res else 0,
            )
        )
        return trace


class OracleScaffold(Scaffold):
    """Applies each round's reference solution: the upper bound and the task validator."""

    name = "oracle"
    has_process = False

    def start(self, task: Task, sandbox: Sandbox) -> AgentSession:
        return _OracleSession(sandbox)


class _NopSession(_UserTurnSession):
    def run_round(self, inp: RoundInput) -> RoundTrace:
        return self._start_trace(inp)


class NopScaffold(Scaffold):
    """Does nothing: every task must fail its first round against it."""

    name = "nop"

    def start(self, task: Task, sandbox: Sandbox) -> AgentSession:
        return _NopSession()


# ---- scripted ------------------------------------------------------------------


class Step(BaseModel):
    """One step: ``oracle`` (apply the reference), ``run`` (shell), ``write`` (a file) or
    ``say`` (an assistant message: what process checks on messages read)."""

    model_config = ConfigDict(extra="forbid")
    oracle: bool = False
    run: str | None = None
    write: dict[str, str] | None = None
    say: str | None = None
    timeout: float | None = Field(default=None, gt=0, allow_inf_nan=False)

    @model_validator(mode="before")
    @classmethod
    def _shorthand(cls, v: Any) -> Any:
        if v == "oracle":
            return {"oracle": True}
        if v in ("nothing", "nop"):
            return {}
        if isinstance(v, str):
            return {"run": v}
        return v

    @model_validator(mode="after")
    def _one_action(self) -> Step:
        actions = [self.run, self.write, self.say]
        if self.oracle + sum(a is not None for a in actions) > 1:
            raise ValueError("a step has one of: oracle, run, write, say")
        if self.write is not None and set(self.write) != {"path", "content"}:
            raise ValueError("write needs exactly 'path' and 'content'")
        return self


RoundSteps = dict[str, list[Step]]


def _check_round_keys(table: RoundSteps) -> RoundSteps:
    """A round key is a round number (``3`` or ``"03"``) or ``"*"``: any other key would
    match no round, and the agent would silently do nothing there."""
    for key in table:
        if key != "*" and not (key.isdigit() and int(key) >= 1):
            raise ValueError(f"round key {key!r} is not a round number (1, 2, ...) or '*'")
    return table


class Script(BaseModel):
    """A scripted agent: per task (or ``default``), per round (or ``"*"``), a list of steps."""

    model_config = ConfigDict(extra="forbid")
    name: str = Field(pattern=r"^[A-Za-z0-9._-]+$")
    description: str = ""
    default: RoundSteps = Field(default_factory=dict)
    tasks: dict[str, RoundSteps] = Field(default_factory=dict)

    @field_validator("default")
    @classmethod
    def _round_keys(cls, v: RoundSteps) -> RoundSteps:
        return _check_round_keys(v)

    @field_validator("tasks")
    @classmethod
    def _task_round_keys(cls, v: dict[str, RoundSteps]) -> dict[str, RoundSteps]:
        for steps in v.values():
            _check_round_keys(steps)
        return v

    def steps_for(self, task: str, round_index: int) -> list[Step]:
        table = self.tasks.get(task, self.default)
        for key in (str(round_index), f"{round_index:02d}", "*"):
            if key in table:
                return table[key]
        return []


def load_script(path: Path | str) -> Script:
    p = Path(path)
    try:
        raw = yaml.safe_load(p.read_bytes().decode("utf-8"))
    except FileNotFoundError:
        raise ValueError(f"{p}: no such script") from None
    except OSError as e:
        raise ValueError(f"{p}: cannot read the script: {e.strerror or e}") from None
    except UnicodeDecodeError as e:
        raise ValueError(f"{p}: not UTF-8 text (byte at offset {e.start})") from None
    except yaml.YAMLError as e:  # one line: where, and what the parser expected
        mark = getattr(e, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        why = " ".join(str(getattr(e, "problem", None) or e).split())
        raise ValueError(f"{p}: invalid YAML{where}: {why}") from None
    if raw is not None and not isinstance(raw, dict):
        raise ValueError(f"{p}: a script is a mapping (default:, tasks:), not {type(raw).__name__}")
    raw = {"name": re.sub(r"[^A-Za-z0-9._-]", "-", p.stem) or "script", **(raw or {})}
    try:
        return Script.model_validate(raw)
    except ValidationError as e:
        err = sorted(e.errors(), key=lambda x: x["type"] != "extra_forbidden")[0]
        loc = ".".join(str(x) for x in err["loc"])
        if err["type"] == "extra_forbidden":
            key = str(err["loc"][-1])
            known = known_keys(Script, err["loc"][:-1])
            raise ValueError(f"{p}: {unknown_key_message(key, known)}") from None
        raise ValueError(f"{p}: {loc}: {describe_error(err)}") from None


class _ScriptedSession(_UserTurnSession):
    def __init__(self, script: Script, task: Task, sandbox: Sandbox) -> None:
        self.script = script
        self.task = task
        self.sandbox = sandbox

    def run_round(self, inp: RoundInput) -> RoundTrace:
        trace = self._start_trace(inp)
        deadline = time.monotonic() + inp.timeout_sec
        for step in self.script.steps_for(self.task.name, inp.round.index):
            left = deadline - time.monotonic()
            if left <= 0:
                trace.status = TraceStatus.timeout
                return trace
            if step.oracle:
                reference_apply(self.sandbox, inp.round, left, solution_env(inp.task))
                trace.events.append(
                    TrajectoryEvent(type=EventType.command, content="oracle", exit_code=0)
                )
            elif step.say is not None:
                trace.events.append(
                    TrajectoryEvent(type=EventType.message, role="assistant", content=step.say)
                )
            elif step.write is not None:
                self.sandbox.write_file(step.write["path"], step.write["content"])
                trace.events.append(
                    TrajectoryEvent(
                        type=EventType.file_write,
                        name=step.write["path"],
                        content=truncate(step.write["content"]),
                    )
                )
            elif step.run is not None:
                res = self.sandbox.exec(step.run, timeout=min(left, step.timeout or left))
                trace.events.append(
                    TrajectoryEvent(
                        type=EventType.command,
                        content=step.run,
                        exit_code=res.exit_code,
                        arguments={"output": truncate(res.stdout + res.stderr)},
                    )
                )
                if res.timed_out:
                    trace.status = TraceStatus.timeout
                    return trace
        return trace


class ScriptedScaffold(Scaffold):
    def __init__(self, script: Script) -> None:
        self.script = script
        self.name = f"scripted:{script.name}"

    def start(self, task: Task, sandbox: Sandbox) -> AgentSession:
        return _ScriptedSession(self.script, task, sandbox)


BUNDLED_SCRIPTS = Path(__file__).parent / "scripts"


def scaffold_from_name(
    agent: str, script: Path | str | None = None, models: Any | None = None
) -> Scaffold:
    """Resolve ``--agent``: oracle, nop, scripted (with --script), or a bundled script name,
    or a model-backed agent (``models``: :class:`evoround.scaffolds._agents.ModelOptions`)."""
    from evoround.scaffolds._agents import MODEL_AGENTS, ModelOptions, model_scaffold

    if agent in MODEL_AGENTS:
        return model_scaffold(agent, models or ModelOptions())
    if agent.startswith("harbor:"):
        return _harbor_scaffold(agent.removeprefix("harbor:"), models or ModelOptions())
    if agent == "oracle":
        return OracleScaffold()
    if agent == "nop":
        return NopScaffold()
    if agent == "scripted":
        if script is None:
            raise ValueError("--agent scripted needs --script PATH (a YAML script)")
        return ScriptedScaffold(load_script(script))
    if agent.startswith("scripted:"):
        name = agent.split(":", 1)[1]
        path = BUNDLED_SCRIPTS / f"{name}.yaml"
        if not path.is_file():
            known = ", ".join(sorted(p.stem for p in BUNDLED_SCRIPTS.glob("*.yaml")))
            raise ValueError(f"--agent {agent}: no bundled script {name!r} (known: {known})")
        return ScriptedScaffold(load_script(path))
    raise ValueError(
        f"unknown agent {agent!r} (--agent): use oracle, nop, scripted, scripted:NAME, "
        + ", ".join(MODEL_AGENTS)
        + ", harbor:NAME or harbor:module:Class"
    )


def _harbor_scaffold(spec: str, models: Any) -> Scaffold:
    """``harbor:terminus-2`` or ``harbor:module.path:Class``; Harbor's errors become one line."""
    from evoround.scaffolds.harbor import HarborError, HarborScaffold

    if not spec:
        raise ValueError("--agent harbor:NAME needs a Harbor agent name (e.g. harbor:terminus-2)")
    try:
        return HarborScaffold(
            spec, model=models.model, api_base=models.api_base, api_key=models.api_key
        )
    except HarborError as e:
        raise ValueError(str(e)) from None
