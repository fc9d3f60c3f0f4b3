"""LLM-judge checks through litellm: structured output, votes, retries, cache, ``error``.

Unlike a single unretried transcript-level call, every judge check here:
- sends the check, the round's trajectory segment (long outputs truncated with a
  marker) and the workspace diff, and asks for JSON matching :data:`VERDICT_SCHEMA`;
- retries (tenacity) on rate limits, 5xx, timeouts, connection errors and invalid
  JSON, with the provider client's own retries off so the budget is ours;
- takes ``votes`` samples and a strict majority over them;
- caches a decided verdict by (check, evidence digest, judge model, votes, temperature);
- returns ``error`` when it still cannot decide. Errors are never a pass or a fail.

Without a judge model a judge check is ``error`` ("no judge model configured"):
the check exists and was not scored, which CSR/ISR exclude and the report shows.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import Counter
from pathlib import Path
from typing import Any

from pydantic import BaseModel, Field
from tenacity import (
    RetryError,
    Retrying,
    retry_if_exception,
    stop_after_attempt,
    wait_exponential,
)

from evoround.results import (
    CheckOutcome,
    CheckResult,
    EventType,
    Evidence,
    TrajectoryEvent,
    truncate,
)
from evoround.settings import settings
from evoround.tasks import CheckSpec
from evoround.throttle import model_slot
from evoround.verifiers.checklist._model import RoundEvidence, WorkspaceDiff

VERDICT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "result": {"type": "string", "enum": ["pass", "fail", "not_applicable"]},
        "evidence": {"type": "string"},
        "reason": {"type": "string"},
    },
    "required": ["result", "reason"],
    "additionalProperties": False,
}

SYSTEM = (
    "You are a strict, fair process-compliance judge for a coding agent. You get ONE check "
    "and the evidence of ONE round: the agent's trajectory and the workspace diff. Decide "
    "whether the agent complied with the check in this round. Answer 'not_applicable' only "
    "when the situation the check is about did not arise in this round. Reply with JSON only: "
    '{"result": "pass"|"fail"|"not_applicable", "evidence": "...", "reason": "..."}.'
)


class JudgeConfig(BaseModel):
    model: str | None = None
    """A litellm model name, e.g. ``openai/gpt-4o-mini``; None: judge checks score ``error``."""
    api_base: str | None = None
    api_key: str | None = None
    votes: int = Field(default=1, ge=1)
    temperature: float = 0.0
    model_args: dict[str, Any] = Field(default_factory=dict)
    """Other litellm arguments with every judge call (``--judge-reasoning-effort``,
    ``--judge-model-arg KEY=VALUE``); part of the verdict cache key."""
    attempts: int = Field(default=4, ge=1)
    """Tries per vote (first call plus retries)."""
    wait_sec: float = 1.0
    """Base of the exponential backoff between tries (0 in tests)."""
    timeout_sec: float = 60.0
    max_tool_output: int = 2000
    max_diff_chars: int = 12000
    cache_dir: Path | None = None


class JudgeOutputError(ValueError):
    """The model answered, but not with a verdict: retried like a transient failure."""


_NO_RETRY = (
    "AuthenticationError",
    "PermissionDeniedError",
    "NotFoundError",
    "BadRequestError",
    "ContextWindowExceededError",
    "UnsupportedParamsError",
    "ContentPolicyViolationError",
)


def _retryable(exc: BaseException) -> bool:
    """Transient provider trouble and malformed answers are retried; config errors are not."""
    return not any(c.__name__ in _NO_RETRY for c in type(exc).__mro__)


def render_evidence(ev: RoundEvidence, cfg: JudgeConfig) -> str:
    """The judge's view of the round: system prompt, trajectory segment, diff."""
    lines = [f"## System prompt\n{truncate(ev.system_prompt, 3000) or '(none)'}", "## Trajectory"]
    for i, e in enumerate(ev.events):
        if e.type is EventType.model_call:
            continue  # wire-level records (--proxy): the conversation is already there
        lines.append(_event_text(i, e, cfg))
    lines.append("## Workspace diff")
    if ev.diff is None:
        lines.append("(not available)")
    else:
        lines += _diff_lines(ev.diff, cfg)
    if ev.commits:
        lines.append("## New commits\n" + "\n".join(ev.commits))
    return "\n".join(lines)


def _event_text(i: int, e: TrajectoryEvent, cfg: JudgeConfig) -> str:
    """One trajectory event: a header (index, type, role, name, call id, exit code) and its
    content and arguments, truncated (messages get four times a tool output's room)."""
    head = f"[{i}] {e.type.value}"
    if e.role:
        head += f" ({e.role})"
    if e.name:
        head += f" {e.name}"
    if e.tool_call_id:
        head += f" id={e.tool_call_id}"
    body = e.content
    if e.arguments:
        body += ("\n" if body else "") + json.dumps(e.arguments, ensure_ascii=False)
    limit = cfg.max_tool_output if e.type is not EventType.message else 4 * cfg.max_tool_output
    if e.exit_code is not None:
        head += f" exit={e.exit_code}"
    return f"{head}\n{truncate(body, limit)}"


def _diff_lines(diff: WorkspaceDiff, cfg: JudgeConfig) -> list[str]:
    """Every changed path with its status, and the added lines of added and modified files
    while the diff budget lasts."""
    lines: list[str] = []
    budget = cfg.max_diff_chars
    for status, paths in (
        ("added", diff.added),
        ("modified", diff.modified),
        ("deleted", diff.deleted),
    ):
        for p in paths:
            lines.append(f"--- {status}: {p}")
            if status != "deleted" and budget > 0:
                added = "\n".join(f"+ {t}" for _, t in diff.added_lines(p))
                chunk = truncate(added, min(budget, cfg.max_tool_output))
                budget -= len(chunk)
                lines.append(chunk)
    if not diff.changed:
        lines.append("(no file changed)")
    return lines


def _messages(spec: CheckSpec, evidence_text: str) -> list[dict[str, str]]:
    check = f"## Check {spec.id} (category: {spec.category.value})\n{spec.description.strip()}\n"
    if spec.wins_over:
        check += (
            f"Note: this instruction conflicts with the {spec.wins_over.value} instructions and "
            "takes precedence over them.\n"
        )
    return [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": check + "\n" + evidence_text},
    ]


def parse_verdict(text: str) -> dict[str, str]:
    """The verdict object from a reply (tolerates a ```json fence); raises JudgeOutputError."""
    t = text.strip()
    if t.startswith("```"):
        t = t.strip("`")
        t = t[4:] if t.startswith("json") else t
    try:
        obj = json.loads(t)
    except (json.JSONDecodeError, TypeError):
        raise JudgeOutputError(f"not JSON: {text[:120]!r}") from None
    if not isinstance(obj, dict) or obj.get("result") not in ("pass", "fail", "not_applicable"):
        raise JudgeOutputError(f"no valid 'result' in {text[:120]!r}")
    return {k: str(v) for k, v in obj.items()}


def _one_vote(cfg: JudgeConfig, messages: list[dict[str, str]]) -> dict[str, str]:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    import litellm  # slow import: only when a judge really runs

    kwargs: dict[str, Any] = dict(
        model=cfg.model,
        messages=messages,
        temperature=cfg.temperature,
        timeout=cfg.timeout_sec,
        max_retries=0,  # tenacity owns the retry budget
        num_retries=0,
        response_format={
            "type": "json_schema",
            "json_schema": {"name": "verdict", "schema": VERDICT_SCHEMA, "strict": True},
        },
    )
    kwargs.update(cfg.model_args)
    if cfg.api_base:
        kwargs["api_base"] = cfg.api_base
    kwargs["api_key"] = cfg.api_key or settings().judge_api_key or "none"
    with model_slot():  # judge calls share the job's model-connection limit
        resp = litellm.completion(**kwargs)
    try:
        content = resp.choices[0].message.content
    except (AttributeError, IndexError) as e:
        raise JudgeOutputError(f"malformed response: {e}") from None
    return parse_verdict(content or "")


def _vote_with_retries(cfg: JudgeConfig, messages: list[dict[str, str]]) -> dict[str, str]:
    retrying = Retrying(
        stop=stop_after_attempt(cfg.attempts),
        wait=wait_exponential(multiplier=cfg.wait_sec, max=30 * max(cfg.wait_sec, 0.001)),
        retry=retry_if_exception(_retryable),
        reraise=False,
    )
    return retrying(_one_vote, cfg, messages)


def _cache_key(spec: CheckSpec, evidence_text: str, cfg: JudgeConfig) -> str:
    digest = hashlib.sha256(evidence_text.encode()).hexdigest()
    blob = json.dumps(
        [spec.model_dump(mode="json"), digest, cfg.model, cfg.votes, cfg.temperature]
        + ([cfg.model_args] if cfg.model_args else []),  # old cache keys stay valid
        sort_keys=True,
    )
    return hashlib.sha256(blob.encode()).hexdigest()


def _collect_votes(
    cfg: JudgeConfig, messages: list[dict[str, str]]
) -> tuple[list[dict[str, str]], list[str]]:
    """``cfg.votes`` verdicts, each with its retries: (the verdicts given, why the others
    failed)."""
    votes: list[dict[str, str]] = []
    failures: list[str] = []
    for _ in range(cfg.votes):
        try:
            votes.append(_vote_with_retries(cfg, messages))
        except RetryError as e:
            last = e.last_attempt.exception()
            failures.append(f"{type(last).__name__}: {str(last)[:200]}")
        except Exception as e:  # non-retryable provider error
            failures.append(f"{type(e).__name__}: {str(e)[:200]}")
    return votes, failures


def judge_check(spec: CheckSpec, ev: RoundEvidence, cfg: JudgeConfig | None) -> CheckResult:
    """Score one judge check; every failure mode ends as ``error`` with the reason."""
    base: dict[str, Any] = dict(
        id=spec.id,
        category=spec.category,
        kind=spec.kind,
        scope=spec.scope,
        round=ev.round,
        wins_over=spec.wins_over,
        conflict=spec.wins_over is not None,
    )
    if cfg is None or not cfg.model:
        return CheckResult(**base, result=CheckOutcome.error, detail="no judge model configured")
    base["judge_model"] = cfg.model
    text = render_evidence(ev, cfg)
    key = _cache_key(spec, text, cfg)
    cache_file = cfg.cache_dir / f"{key}.json" if cfg.cache_dir else None
    if cache_file and cache_file.is_file():
        cached = CheckResult.model_validate_json(cache_file.read_text())
        return cached.model_copy(update={"round": ev.round, "detail": cached.detail + " (cached)"})
    votes, failures = _collect_votes(cfg, _messages(spec, text))
    tally = Counter(v["result"] for v in votes)
    labels = [v["result"] for v in votes] + ["error"] * len(failures)
    if not votes:
        return CheckResult(
            **base,
            result=CheckOutcome.error,
            votes=labels,
            detail=f"judge failed after {cfg.attempts} tries: {failures[-1]}",
        )
    winner, count = tally.most_common(1)[0]
    if count * 2 <= cfg.votes:
        return CheckResult(
            **base,
            result=CheckOutcome.error,
            votes=labels,
            detail=f"no majority among {cfg.votes} votes: {dict(tally)}",
        )
    chosen = next(v for v in votes if v["result"] == winner)
    result = CheckResult(
        **base,
        result=CheckOutcome(winner),
        votes=labels,
        detail=chosen.get("reason", ""),
        evidence=[Evidence(kind="judge", excerpt=chosen.get("evidence", "")[:500])],
    )
    if cache_file and not failures:
        cache_file.parent.mkdir(parents=True, exist_ok=True)
        cache_file.write_text(result.model_dump_json())
    return result
