"""Tolerant readers of what a job directory holds: check results, token usage, trajectories
and task text, each of which an older or interrupted job may lack."""

from __future__ import annotations

import json
import tomllib
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from evoround.results import JobView, RoundResult, dedupe

NOT_RECORDED = "not recorded"
NO_CHECKS = "no checks"
"""CSR/ISR of a job whose tasks declare no process checks: undefined, and not missing data
(``not recorded`` is for checks the tasks declare that the run did not record)."""
CLASS_SHORT = {
    "missed_requirement": "MR",
    "regression": "RG",
    "stale_behaviour": "ST",
    "agent_timeout": "TO",
    "agent_error": "AE",
    "verifier_timeout": "VT",
    "verifier_error": "VE",
    "setup_error": "SE",
    "infra": "IN",
    "failed": "F",
}

# ---- tolerant readers for fields that may or may not exist yet ----------------------


def _plain(obj: Any) -> Any:
    if isinstance(obj, BaseModel):
        return obj.model_dump(mode="json")
    return obj


def record_checks(rec: RoundResult) -> list[dict[str, Any]] | None:
    """The round's checklist results for display, or None if the round has none recorded."""
    if not rec.checks:
        return None
    out = []
    for c in rec.checks:
        d = c.model_dump(mode="json")
        ev = "; ".join(
            " ".join(x for x in (e.kind, e.path or "", e.excerpt) if x) for e in c.evidence
        )
        out.append({**d, "status": c.result.value, "evidence": ev or c.detail})
    return out


def usage_tokens(usage: Any) -> int | None:
    """Total tokens of a usage record (``total_tokens`` or the sum of its token counts)."""
    usage = _plain(usage)
    if not isinstance(usage, dict) or not usage:
        return None
    if isinstance(usage.get("total_tokens"), int | float):
        return int(usage["total_tokens"])
    parts = [
        v
        for k, v in usage.items()
        if isinstance(v, int | float) and "token" in k and not k.startswith("cache")
    ]
    return int(sum(parts)) if parts else None


def usage_cost(usage: Any) -> float | None:
    usage = _plain(usage)
    if not isinstance(usage, dict):
        return None
    for k in ("cost_usd", "cost", "total_cost_usd"):
        if isinstance(usage.get(k), int | float):
            return float(usage[k])
    return None


def read_trajectory(job_dir: Path, rec: RoundResult) -> list[dict[str, Any]]:
    if not rec.artifacts:
        return []
    path = job_dir / rec.artifacts / "trajectory.jsonl"
    events: list[dict[str, Any]] = []
    try:
        with open(path, encoding="utf-8") as f:
            for line in f:
                if line.strip():
                    try:
                        events.append(json.loads(line))
                    except ValueError:
                        continue
    except OSError:
        return []
    return events


def round_tokens(rec: RoundResult, events: list[dict[str, Any]] | None) -> int | None:
    """Tokens of a round: the record's ``usage``, else the sum over trajectory events."""
    direct = usage_tokens(getattr(rec, "usage", None))
    if direct is not None:
        return direct
    per_event = [usage_tokens(e.get("usage")) for e in events or []]
    known = [t for t in per_event if t is not None]
    return sum(known) if known else None


# ---- task text ---------------------------------------------------------------------


def checks_missing(view: JobView) -> str:
    """What CSR/ISR of a job without a scored check say: ``no checks`` only when every task
    of the job is readable and declares none; else ``not recorded`` (checks the tasks
    declare, or may declare, that the run did not record)."""
    for ref in view.config.tasks.values():
        flags = [r["has_checks"] for r in task_rounds_text(ref.path, ref.n_rounds)]
        if any(f is not False for f in flags):
            return NOT_RECORDED
    return NO_CHECKS


def task_rounds_text(task_path: str | None, n_rounds: int) -> list[dict[str, Any]]:
    """Title, change types and instruction per round, from the task dir if it still exists."""
    rounds: list[dict[str, Any]] = [
        {"round": i, "title": "", "change_types": [], "instruction": None, "has_checks": None}
        for i in range(1, n_rounds + 1)
    ]
    if not task_path:
        return rounds
    root = Path(task_path)
    task_checks: bool | None = None
    try:
        cfg = tomllib.loads((root / "task.toml").read_text(encoding="utf-8"))
        specs = cfg.get("rounds", [])
        task_checks = bool(cfg.get("checks"))
    except (OSError, ValueError):
        specs = []
    if not isinstance(specs, list):
        specs = []
    for r in rounds:
        i = r["round"]
        spec = specs[i - 1] if i - 1 < len(specs) and isinstance(specs[i - 1], dict) else {}
        if spec:
            r["title"] = str(spec.get("title", ""))
            r["change_types"] = list(spec.get("change_types", []))
        if task_checks is not None:
            r["has_checks"] = task_checks or bool(spec.get("checks"))
        for name in (f"{i:02d}", str(i), f"{i:03d}"):
            p = root / "rounds" / name / "instruction.md"
            if p.is_file():
                r["instruction"] = p.read_text(encoding="utf-8", errors="replace")
                break
    return rounds


# ---- figures -------------------------------------------------------------------------


def label_of(view: JobView) -> str:
    return f"{view.config.agent} ({view.path.name})"


def records_of(view: JobView) -> list[RoundResult]:
    return [r for r in dedupe(view.records) if r.task in view.n_rounds]
