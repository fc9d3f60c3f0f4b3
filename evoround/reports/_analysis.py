"""Figures as data: everything report.html draws, computed from job views.

This module is the single source of the report's numbers, so ``report --json``
and the HTML page can never disagree. It reads only what a job directory holds
(results.jsonl, job.json, round artefacts) plus the task's instructions when the
task directory still exists. Sections whose data was not recorded (checklist
results, token usage) are marked ``available: False`` with a note; no number is
ever made up for them.

CSR/ISR come from :mod:`evoround.reports._compliance` so the page and the terminal
agree. ``usage`` is read with ``getattr`` (the record field is being added by
other work); any dict of token counts is accepted, and per-event ``usage`` in
the trajectory is summed when the record has none.
"""

from __future__ import annotations

import hashlib
from typing import Any

from evoround.reports._compliance import compute_compliance
from evoround.reports._figures import build_figures
from evoround.reports._protocol import protocol_rows
from evoround.reports._readers import (
    NOT_RECORDED,
    checks_missing,
    read_trajectory,
    record_checks,
    records_of,
    round_tokens,
    task_rounds_text,
    usage_cost,
)
from evoround.reports._style import agent_colours
from evoround.reports._text import summary_row
from evoround.reports._uncertainty import DEFAULT_SEED, job_uncertainty
from evoround.results import JobView, RoundResult, cost_of


def _cell_code(rec: RoundResult) -> str:
    if rec.passed:
        return "ok"
    cls = rec.primary_failure_class
    return cls.value if cls else rec.status.value


def _round_cost(rec: RoundResult) -> float | str | None:
    """USD of the round; "unknown" when its model has no price; None without usage."""
    if rec.usage is None:
        return None
    cost = usage_cost(rec.usage)
    return cost if cost is not None else "unknown"


def round_rows(view: JobView, *, trajectories: bool) -> list[dict[str, Any]]:
    """One row per recorded round: outcome, failing tests, checks, tokens (and the trajectory)."""
    rows = []
    recs = records_of(view)
    declared = {
        name: [r["has_checks"] for r in task_rounds_text(ref.path, ref.n_rounds)]
        for name, ref in view.config.tasks.items()
    }
    recorded = {r.task for r in recs if r.checks}
    for n, rec in enumerate(sorted(recs, key=lambda r: r.key)):
        events = read_trajectory(view.path, rec)
        flags = declared.get(rec.task, [])
        flag = flags[rec.round - 1] if rec.round <= len(flags) else None
        rows.append(
            {
                "id": f"{hashlib.sha1(view.path.name.encode()).hexdigest()[:8]}-{n}",
                "job": view.path.name,
                "agent": view.config.agent,
                "task": rec.task,
                "mode": rec.mode.value,
                "attempt": rec.attempt,
                "round": rec.round,
                "passed": rec.passed,
                "status": rec.status.value,
                "code": _cell_code(rec),
                "error": rec.error,
                "tests_passed": rec.tests_passed,
                "tests_total": rec.tests_total,
                "failing_tests": [t.model_dump(mode="json") for t in rec.failing_tests],
                "verifier_problems": rec.verifier_problems,
                "integrity_evidence": rec.integrity_evidence,
                "checks": record_checks(rec),
                "checks_expected": flag if flag is not None else rec.task in recorded,
                # task.toml declares checks for this round (when the task dir is gone: some
                # round of the task recorded checks); "not recorded" is shown only then
                "tokens": round_tokens(rec, events),
                "cost": _round_cost(rec),
                "artifacts": rec.artifacts,
                "trajectory": events if trajectories else None,
            }
        )
    return rows


def leaderboard(
    views: list[JobView],
    per_round: dict[str, list[dict[str, Any]]],
    *,
    resamples: int | None = None,
    seed: int = DEFAULT_SEED,
) -> list[dict]:
    rows = []
    colours = agent_colours(views)
    for view in views:
        m = view.metrics()
        u = job_uncertainty(view, resamples=resamples, seed=seed)
        rr = per_round[view.path.name]
        comp = compute_compliance(view.records)
        recorded = comp.checks > 0
        missing = checks_missing(view)
        tokens = [r["tokens"] for r in rr if r["tokens"] is not None]
        cost = cost_of(view.records)
        rows.append(
            {
                **summary_row(view, m),
                "model": view.config.model,
                "tasks": m.n_tasks,
                "rounds_recorded": len(rr),
                "case_score_sr": m.case_score_sr,
                "CSR": comp.csr if recorded else missing,
                "ISR": comp.isr_round if recorded else missing,
                "check_errors": comp.totals.error if recorded else missing,
                "tokens": sum(tokens) if tokens else NOT_RECORDED,
                # "unknown" (a model without a price), never a partial sum or 0
                "cost_usd": (
                    NOT_RECORDED
                    if not cost.rounds_with_usage
                    else cost.usd
                    if cost.usd is not None
                    else "unknown"
                ),
                "problems": view.problems
                + ([view.running.describe(view.path.name)] if view.running else []),
                "colour": colours[view.path.name],
                "intervals": {
                    name: iv.model_dump(mode="json")
                    for name, iv in u.headline.items()
                    if iv.estimate is not None
                },
            }
        )
    return rows


def task_grids(views: list[JobView], per_round: dict[str, list[dict[str, Any]]]) -> list[dict]:
    """Per task: its rounds (instruction, title) and one row of cells per (job, mode, attempt)."""
    tasks: dict[str, dict[str, Any]] = {}
    for view in views:
        for name, ref in view.config.tasks.items():
            if name not in tasks:
                tasks[name] = {
                    "task": name,
                    "n_rounds": ref.n_rounds,
                    "digest": ref.digest,
                    "rounds": task_rounds_text(ref.path, ref.n_rounds),
                    "rows": [],
                }
    for view in views:
        rows: dict[tuple[str, str, int], dict[str, Any]] = {}
        for r in per_round[view.path.name]:
            key = (r["task"], r["mode"], r["attempt"])
            if key not in rows:
                n = tasks[r["task"]]["n_rounds"]
                rows[key] = {
                    "job": view.path.name,
                    "agent": view.config.agent,
                    "mode": r["mode"],
                    "attempt": r["attempt"],
                    "cells": [{"round": i, "code": "not_run", "id": None} for i in range(1, n + 1)],
                }
            if 1 <= r["round"] <= len(rows[key]["cells"]):
                rows[key]["cells"][r["round"] - 1] = {
                    "round": r["round"],
                    "code": r["code"],
                    "id": r["id"],
                }
        for (task, _, _), row in sorted(rows.items()):
            tasks[task]["rows"].append(row)
    return [tasks[k] for k in sorted(tasks)]


def build_report(
    views: list[JobView],
    *,
    trajectories: bool = False,
    resamples: int | None = None,
    seed: int = DEFAULT_SEED,
) -> dict[str, Any]:
    """The whole report as data. ``trajectories`` adds every round's events (HTML only).

    Every headline figure carries a bootstrap interval (``leaderboard[*].intervals``,
    ``jobs[*].uncertainty``: method, resamples and seed included)."""
    per_round = {v.path.name: round_rows(v, trajectories=trajectories) for v in views}
    unc = {v.path.name: job_uncertainty(v, resamples=resamples, seed=seed) for v in views}
    return {
        "schema": "evoround.report/2",
        "jobs": [
            {
                "job": v.path.name,
                "path": str(v.path),
                "config": v.config.model_dump(mode="json"),
                "protocol": [{"what": w, "value": val} for w, val in protocol_rows(v)],
                "uncertainty": unc[v.path.name].model_dump(mode="json"),
            }
            for v in views
        ],
        "leaderboard": leaderboard(views, per_round, resamples=resamples, seed=seed),
        "figures": build_figures(views, per_round, unc),
        "tasks": task_grids(views, per_round),
        "rounds": per_round,
    }
