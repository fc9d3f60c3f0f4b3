"""Each round's trajectory in Harbor's ATIF (Agent Trajectory Interchange Format, v1.7).

Written beside evoround's own ``trajectory.jsonl`` as ``trajectory.atif.json`` so tools that
read Harbor trajectories (viewers, SFT/RL pipelines) can read evoround's. The mapping, field
by field (nothing evoround recorded is dropped: what ATIF has no field for goes to ``extra``):

- ``message`` events: ``user`` -> a user step, ``system`` -> a system step, ``assistant`` ->
  an agent step (one model turn); its ``usage`` -> the step's ``metrics`` (``prompt_tokens``
  counts every input token, cached ones included, as ATIF defines it; Anthropic's
  ``input_tokens`` + cache reads + cache writes; other counters -> ``metrics.extra``).
- ``tool_call`` -> a ``tool_calls`` entry of the current agent step (a new agent step when
  the current one has already seen results: one step, one model turn); a missing id is
  made up and marked in the step's ``extra``. ``tool_result`` -> an ``observation`` result
  with ``source_call_id``; ``exit_code`` and ``name`` -> the result's ``extra``.
- ``command`` (shell commands of the oracle and scripted agents) and ``file_write`` -> a tool
  call named ``command`` / ``file_write`` with its result; these agents call no model, so
  their steps say ``llm_call_count: 0`` (deterministic dispatch).
- ``error`` -> a system step whose ``extra.evoround.event`` is ``error``.
- ``model_call`` (one model HTTP call recorded by ``--proxy``) -> ``extra.model_calls`` of
  the trajectory, and ``final_metrics`` when no agent step carries usage.
- Root: ``session_id`` is the attempt (one agent session across the rounds of an MT
  attempt), ``trajectory_id`` the round, ``continued_trajectory_ref`` the next round's file
  of the same MT attempt; the round's verdict goes to ``extra.evoround``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from datetime import datetime
from pathlib import Path
from typing import Any, ClassVar, Literal

from pydantic import BaseModel, ConfigDict, Field

from evoround.fileio import atomic_write
from evoround.reports._readers import read_trajectory, records_of
from evoround.results import JobView, Mode, RoundResult

SCHEMA_VERSION = "ATIF-v1.7"
FILE_NAME = "trajectory.atif.json"
DETERMINISTIC = frozenset({"oracle", "nop"})
"""Agents that call no model (with every ``scripted:*`` agent): their agent steps get
``llm_call_count = 0``."""


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class AtifToolCall(_Model):
    tool_call_id: str
    function_name: str
    arguments: dict[str, Any]
    extra: dict[str, Any] | None = None


class AtifObservationResult(_Model):
    source_call_id: str | None = None
    content: str | None = None
    extra: dict[str, Any] | None = None


class AtifObservation(_Model):
    results: list[AtifObservationResult]


class AtifMetrics(_Model):
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    cached_tokens: int | None = None
    cost_usd: float | None = None
    extra: dict[str, Any] | None = None


class AtifStep(_Model):
    step_id: int = Field(ge=1)
    timestamp: str | None = None
    source: Literal["system", "user", "agent"]
    message: str
    tool_calls: list[AtifToolCall] | None = None
    observation: AtifObservation | None = None
    metrics: AtifMetrics | None = None
    llm_call_count: int | None = None
    extra: dict[str, Any] | None = None


class AtifAgent(_Model):
    name: str
    version: str
    model_name: str | None = None
    extra: dict[str, Any] | None = None


class AtifFinalMetrics(_Model):
    total_prompt_tokens: int | None = None
    total_completion_tokens: int | None = None
    total_cached_tokens: int | None = None
    total_steps: int | None = None


class AtifTrajectory(_Model):
    schema_version: str = SCHEMA_VERSION
    session_id: str
    trajectory_id: str
    agent: AtifAgent
    steps: list[AtifStep]
    notes: str | None = None
    final_metrics: AtifFinalMetrics | None = None
    continued_trajectory_ref: str | None = None
    extra: dict[str, Any] | None = None


# ---- events -> steps -----------------------------------------------------------------


def _int(v: Any) -> int | None:
    return int(v) if isinstance(v, int | float) and not isinstance(v, bool) else None


def metrics_of(usage: Any) -> AtifMetrics | None:
    """A usage record (OpenAI or Anthropic keys) as ATIF metrics."""
    if not isinstance(usage, dict) or not usage:
        return None
    u = {k: v for k, v in usage.items() if _int(v) is not None}
    rest = dict(u)
    prompt = completion = cached = None
    if "prompt_tokens" in u or "completion_tokens" in u:
        prompt, completion = (
            _int(rest.pop("prompt_tokens", None)),
            _int(rest.pop("completion_tokens", None)),
        )
        cached = _int(rest.pop("cached_tokens", None))
    elif "input_tokens" in u or "output_tokens" in u:
        reads = _int(u.get("cache_read_input_tokens")) or 0
        writes = _int(u.get("cache_creation_input_tokens")) or 0
        prompt = (_int(rest.pop("input_tokens", None)) or 0) + reads + writes
        completion = _int(rest.pop("output_tokens", None))
        cached = _int(rest.pop("cache_read_input_tokens", None))
        # cache writes stay in extra too: ATIF's note on extra cost factors
    rest.pop("total_tokens", None)
    return AtifMetrics(
        prompt_tokens=prompt,
        completion_tokens=completion,
        cached_tokens=cached,
        extra=rest or None,
    )


def _timestamp(e: dict[str, Any]) -> str | None:
    ts = e.get("timestamp")
    if not isinstance(ts, str):
        return None
    try:
        datetime.fromisoformat(ts.replace("Z", "+00:00"))
    except ValueError:
        return None
    return ts


def _str(e: dict[str, Any], key: str) -> str | None:
    """A string field of an event (anything else, e.g. a number, counts as missing)."""
    v = e.get(key)
    return v if isinstance(v, str) else None


def _content(e: dict[str, Any]) -> str:
    return _str(e, "content") or ""


def _arguments(e: dict[str, Any]) -> dict[str, Any] | None:
    args = e.get("arguments")
    return args if isinstance(args, dict) else None


def _last_unanswered(step: AtifStep) -> str | None:
    """The id of the step's last tool call that has no result yet."""
    answered = {r.source_call_id for r in (step.observation.results if step.observation else [])}
    pending = [c.tool_call_id for c in step.tool_calls or [] if c.tool_call_id not in answered]
    return pending[-1] if pending else None


Source = Literal["system", "user", "agent"]


class _Builder:
    """Turns one round's events into ATIF steps, in order. ``open`` is the agent step tool
    calls and results attach to (one step, one model turn); a user or system message, or
    an error, closes it."""

    def __init__(self, deterministic: bool) -> None:
        self.steps: list[AtifStep] = []
        self.open: AtifStep | None = None
        self.deterministic = deterministic
        self.model_calls: list[dict[str, Any]] = []

    def _add(self, source: Source, message: str, e: dict[str, Any], **kw: Any) -> AtifStep:
        step = AtifStep(
            step_id=len(self.steps) + 1,
            timestamp=_timestamp(e),
            source=source,
            message=message,
            **kw,
        )
        if e.get("timestamp") is not None and step.timestamp is None:
            step.extra = {**(step.extra or {}), "evoround_timestamp": str(e["timestamp"])}
        self.steps.append(step)
        return step

    def agent_step(self, e: dict[str, Any], message: str = "") -> AtifStep:
        step = self._add("agent", message, e, llm_call_count=0 if self.deterministic else None)
        self.open = step
        return step

    def step_for_call(self, e: dict[str, Any]) -> AtifStep:
        """The open agent step, or a new one when it already saw results (a new turn)."""
        s = self.open
        if s is None or (s.observation is not None and s.observation.results):
            s = self.agent_step(e)
        return s

    def call(self, e: dict[str, Any], name: str, args: dict[str, Any]) -> str:
        step = self.step_for_call(e)
        step.tool_calls = step.tool_calls or []
        cid = e.get("tool_call_id")
        extra = None
        if not isinstance(cid, str) or not cid:
            cid = f"evoround-{step.step_id}-{len(step.tool_calls) + 1}"
            extra = {"tool_call_id_synthesized": True}
        step.tool_calls.append(
            AtifToolCall(tool_call_id=cid, function_name=name, arguments=args, extra=extra)
        )
        return cid

    def result(self, e: dict[str, Any], content: str | None, source: str | None) -> None:
        """A tool result on the open step: for ``source`` (a call id), or with no id
        recorded for the last call still without a result. An id the step has no call for
        is kept in ``extra``, never matched to a wrong call."""
        step = self.open if self.open is not None else self.agent_step(e)
        ids = {c.tool_call_id for c in step.tool_calls or []}
        if source is None and step.tool_calls:
            source = _last_unanswered(step)
        extra = {k: e[k] for k in ("exit_code", "name") if e.get(k) is not None}
        if source is not None and source not in ids:
            extra["unmatched_tool_call_id"] = source  # the call is not in this step
            source = None
        step.observation = step.observation or AtifObservation(results=[])
        step.observation.results.append(
            AtifObservationResult(source_call_id=source, content=content, extra=extra or None)
        )

    # ---- one handler per event type (see the module docstring for the mapping) ----

    def on_message(self, e: dict[str, Any]) -> None:
        role = e.get("role")
        if role == "user" or role == "system":
            self.open = None
            self._add(role, _content(e), e)
            return
        step = self.agent_step(e, _content(e))
        step.metrics = metrics_of(e.get("usage"))
        if role not in (None, "assistant"):
            step.extra = {**(step.extra or {}), "evoround_role": role}

    def on_tool_call(self, e: dict[str, Any]) -> None:
        args = _arguments(e)
        self.call(e, str(e.get("name") or "unknown"), args if args is not None else {})

    def on_tool_result(self, e: dict[str, Any]) -> None:
        self.result(e, _content(e), _str(e, "tool_call_id"))

    def on_command(self, e: dict[str, Any]) -> None:
        """A shell command with its output: a ``command`` call and its result together."""
        args = _arguments(e) or {}
        call_args = {"command": _content(e), **{k: v for k, v in args.items() if k != "output"}}
        cid = self.call(e, "command", call_args)
        output = args.get("output")
        self.result(e, output if isinstance(output, str) else None, cid)

    def on_file_write(self, e: dict[str, Any]) -> None:
        self.call(e, "file_write", {"path": e.get("name"), "content": _content(e)})

    def on_model_call(self, e: dict[str, Any]) -> None:
        self.model_calls.append({k: v for k, v in e.items() if k != "type"})

    def on_other(self, e: dict[str, Any]) -> None:
        """``error``, and any event type this exporter does not know: never dropped."""
        self.open = None
        evoround = {k: v for k, v in e.items() if k not in ("content", "timestamp")}
        self._add("system", _content(e), e, extra={"evoround": evoround})

    HANDLERS: ClassVar[dict[str, Callable[[_Builder, dict[str, Any]], None]]] = {
        "message": on_message,
        "tool_call": on_tool_call,
        "tool_result": on_tool_result,
        "command": on_command,
        "file_write": on_file_write,
        "model_call": on_model_call,
    }

    def feed(self, e: dict[str, Any]) -> None:
        kind = e.get("type")
        handler = self.HANDLERS.get(kind) if isinstance(kind, str) else None
        (handler or _Builder.on_other)(self, e)


def _final(steps: list[AtifStep], calls: list[dict[str, Any]]) -> AtifFinalMetrics:
    ms = [s.metrics for s in steps if s.metrics is not None]
    if not ms:  # the proxy's per-call records, when the agent reported no usage itself
        ms = [m for m in (metrics_of(c.get("usage")) for c in calls) if m is not None]

    def total(attr: str) -> int | None:
        vals = [getattr(m, attr) for m in ms if getattr(m, attr) is not None]
        return sum(vals) if vals else None

    return AtifFinalMetrics(
        total_prompt_tokens=total("prompt_tokens"),
        total_completion_tokens=total("completion_tokens"),
        total_cached_tokens=total("cached_tokens"),
        total_steps=len(steps),
    )


def round_trajectory(
    view: JobView, rec: RoundResult, *, next_round: bool = False
) -> AtifTrajectory:
    """One round's events as an ATIF trajectory (pure: reads trajectory.jsonl only)."""
    events = read_trajectory(view.path, rec)
    agent = view.config.agent
    b = _Builder(deterministic=agent in DETERMINISTIC or agent.startswith("scripted"))
    for e in events:
        if isinstance(e, dict):
            b.feed(e)
    attempt = f"{view.path.name}/{rec.task}/{rec.mode.value}-{rec.attempt:02d}"
    cfg = view.config
    return AtifTrajectory(
        session_id=attempt,
        trajectory_id=f"{attempt}/round-{rec.round:02d}",
        agent=AtifAgent(
            name=cfg.agent,
            version=(cfg.script_digest or "")[:12] or "unrecorded",
            model_name=cfg.model,
            extra={"sandbox": cfg.sandbox}
            | ({"script_digest": cfg.script_digest} if cfg.script_digest else {}),
        ),
        steps=b.steps,
        notes=(
            f"Exported by evoround from trajectory.jsonl: round {rec.round} of {rec.n_rounds}, "
            f"{'persistent (MT)' if rec.mode is Mode.mt else 'fast-forward (SR)'} attempt "
            f"{rec.attempt}. agent.version is the agent script's digest, or 'unrecorded'."
        ),
        final_metrics=_final(b.steps, b.model_calls),
        continued_trajectory_ref=(
            f"../round-{rec.round + 1:02d}/{FILE_NAME}" if next_round else None
        ),
        extra={
            "evoround": {
                "job": view.path.name,
                "task": rec.task,
                "task_digest": rec.task_digest,
                "mode": rec.mode.value,
                "attempt": rec.attempt,
                "round": rec.round,
                "n_rounds": rec.n_rounds,
                "passed": rec.passed,
                "status": rec.status.value,
                "tests_passed": rec.tests_passed,
                "tests_total": rec.tests_total,
                "started_at": rec.started_at.isoformat(),
                "finished_at": rec.finished_at.isoformat(),
            },
            **({"model_calls": b.model_calls} if b.model_calls else {}),
        },
    )


def export_atif(view: JobView) -> list[Path]:
    """Write ``trajectory.atif.json`` beside every recorded round's ``trajectory.jsonl``."""
    recs = [r for r in records_of(view) if r.artifacts]
    recorded = {(r.task, r.mode, r.attempt, r.round) for r in recs}
    root = view.path.resolve()
    out = []
    for rec in sorted(recs, key=lambda r: r.key):
        target = (view.path / str(rec.artifacts) / FILE_NAME).resolve()
        if not target.is_relative_to(root) or not target.parent.is_dir():
            continue  # an artefact path outside the job, or a round dir that is gone
        nxt = rec.mode is Mode.mt and (rec.task, rec.mode, rec.attempt, rec.round + 1) in recorded
        traj = round_trajectory(view, rec, next_round=nxt)
        atomic_write(target, json.dumps(traj.model_dump(mode="json", exclude_none=True), indent=2))
        out.append(target)
    return out
