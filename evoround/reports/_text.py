"""Read a job directory back and present its metrics (rich tables or JSON)."""

from __future__ import annotations

from typing import Any

from rich.console import Console, Group
from rich.table import Table

from evoround.reports._compliance import ComplianceRow, compute_compliance
from evoround.reports._protocol import protocol_rows
from evoround.reports._readers import checks_missing
from evoround.reports._uncertainty import (
    DEFAULT_SEED,
    Interval,
    JobUncertainty,
    job_uncertainty,
)
from evoround.results import JobView, Metrics, Mode, RoundStatus, cost_of, problem_summary


def pct(x: float | None) -> str:
    return "—" if x is None else f"{100 * x:.2f}"


def ci(iv: Interval | None) -> str:
    """``[lo, hi]`` in percent, or an honest reason there is none."""
    if iv is None or iv.estimate is None:
        return "—"
    if iv.lo is None or iv.hi is None:
        return "no resamples"
    return f"[{100 * iv.lo:.1f}, {100 * iv.hi:.1f}]"


def uncertainty_note(u: JobUncertainty) -> str:
    return (
        f"{100 * u.level:.0f}% interval: {u.method}; {u.resamples} resamples of "
        f"{u.n_tasks} tasks, seed {u.seed}"
    )


LABELS = {
    "Perfect": "perfect",
    "mean_reward": "mean reward",
    "sr_pooled": "SR pooled",
    "case_score_mt": "case score MT",
    "case_score_sr": "case score SR",
    "state_penalty": "state penalty",
    "ISR_attempt": "ISR per attempt",
    "ISR_task": "ISR per task",
}
"""Headline figure key (as in ``--json``) -> the name every table of the report prints, so
the text report, report.html and docs/reports.md use one vocabulary."""


def label(key: str) -> str:
    return LABELS.get(key, key)


def uncertainty_table(view: JobView, u: JobUncertainty) -> Table:
    """Every headline figure with its interval and standard error."""
    t = Table(
        title=f"Headline figures, {100 * u.level:.0f}% CI (percent)",
        caption=f"{view.path.name}: {uncertainty_note(u)}",
        title_justify="left",
        caption_justify="left",
    )
    for col in ("figure", "estimate", f"{100 * u.level:.0f}% CI", "SE"):
        t.add_column(col, justify="left" if col == "figure" else "right")
    for name, iv in u.headline.items():
        if iv.estimate is None:
            continue
        t.add_row(label(name), pct(iv.estimate), ci(iv), pct(iv.se))
    return t


def summary_row(view: JobView, m: Metrics) -> dict[str, Any]:
    return {
        "job": view.path.name,
        "agent": view.config.agent,
        "sandbox": view.config.sandbox,
        "isolation": view.isolation(),
        "k": m.k,
        "MT@k": m.mt_at_k,
        "SR": m.sr,
        "SR_pooled": m.sr_pooled,
        "Gap": m.gap,
        "Comp": m.comp,
        "perfect": m.perfect,
        "on_fail": view.config.on_fail,
        "rounds_window": view.config.rounds_window,
        "mean_reward": m.mean_reward,
        "case_score_mt": m.case_score_mt,
        "state_penalty": m.state_penalty,
        "CSR": compute_compliance(view.records).csr,
    }


def leaderboard_table(views: list[JobView]) -> Table:
    table = Table(
        title="Leaderboard (percent)",
        caption="95% bootstrap intervals and standard errors: per job below",
        title_justify="left",
        caption_justify="left",
    )
    cols = (
        "job",
        "agent",
        "k",
        "MT@k",
        "SR",
        "Gap",
        "Comp",
        "perfect",
        "mean reward",
        "case score MT",
        "state penalty",
    )
    for col in (*cols, "CSR", "ISR"):
        table.add_column(col, justify="left" if col in ("job", "agent") else "right")
    for v in views:
        m = v.metrics()
        comp = compute_compliance(v.records)
        table.add_row(
            v.path.name.rsplit("__", 1)[-1] if len(views) > 1 else v.path.name,
            v.config.agent,
            str(m.k),
            pct(m.mt_at_k),
            pct(m.sr),
            pct(m.gap),
            pct(m.comp),
            pct(m.perfect),
            pct(m.mean_reward),
            pct(m.case_score_mt),
            pct(m.state_penalty),
            *((pct(comp.csr), pct(comp.isr_round)) if comp.checks else (checks_missing(v),) * 2),
        )
    return table


def job_tables(view: JobView, *, resamples: int | None = None, seed: int = DEFAULT_SEED) -> Group:
    """Every table of one job, in reading order: how it ran, the headline figures, then
    per task, by round, over k (only when k > 1), failures and compliance."""
    m = view.metrics()
    u = job_uncertainty(view, resamples=resamples, seed=seed)
    parts: list[Any] = [
        protocol_table(view),
        uncertainty_table(view, u),
        per_task_table(view, m),
        by_round_table(m, u),
    ]
    if len(u.curves) > 1:
        parts.append(curves_table(u))
    parts.append(failures_table(m))
    parts += compliance_tables(view)
    return Group(*parts)


def per_task_table(view: JobView, m: Metrics) -> Table:
    per_task = Table(
        title=f"Per task — {view.path.name} ({view.config.agent})", title_justify="left"
    )
    cols = ("task", "rounds", "MT att.", "MT@k", "SR", "Gap", "Comp", "perfect", "case score")
    for col in (*cols, "first failure"):
        per_task.add_column(col, justify="left" if col == "task" else "right")
    for t in m.tasks:
        gap = t.sr - t.mt_at_k if t.sr is not None else None
        ff = ", ".join("—" if f is None else f"r{f}" for f in t.first_failure) or "—"
        per_task.add_row(
            t.task,
            str(t.n_rounds),
            str(t.mt_attempts),
            pct(t.mt_at_k),
            pct(t.sr),
            pct(gap),
            "yes" if t.comp else "no",
            "yes" if t.perfect else "no",
            pct(t.case_score),
            ff,
        )
    return per_task


def _estimate(iv: Interval | None) -> str:
    return pct(iv.estimate) if iv else "—"


def by_round_table(m: Metrics, u: JobUncertainty) -> Table:
    """Pass rate by round index; the "MT after fail" column only when some attempt went on
    after a failed round (``--on-fail continue``), since it is empty otherwise."""
    by_round = Table(
        title="Pass rate by round index (percent, 95% CI); MT after pass = P(round i passes "
        "| round i-1 passed, same attempt)",
        title_justify="left",
    )
    cols = ["round", "MT", "MT CI", "SR", "SR CI", "MT after pass", "MT n", "SR n"]
    if u.continues_after_failure:
        cols.insert(6, "MT after fail")
    for col in cols:
        by_round.add_column(col, justify="right")
    prof = {p.round: p for p in u.by_round}
    for row in m.by_round:
        p = prof.get(row.round)
        cells = [
            str(row.round),
            pct(row.mt_pass_rate),
            ci(p.mt if p else None),
            pct(row.sr_pass_rate),
            ci(p.sr if p else None),
            _estimate(p.mt_after_pass if p else None),
            str(row.mt_records),
            str(row.sr_records),
        ]
        if u.continues_after_failure:
            cells.insert(6, _estimate(p.mt_after_fail if p else None))
        by_round.add_row(*cells)
    return by_round


def curves_table(u: JobUncertainty) -> Table:
    curves = Table(
        title="MT@k and perfect@k over k (percent, 95% CI)",
        caption="perfect@k: share of tasks one of the first k attempts passed whole "
        "(pass_at_k in --json)",
        title_justify="left",
        caption_justify="left",
    )
    for col in ("k", "MT@k", "MT@k CI", "perfect@k", "perfect@k CI"):
        curves.add_column(col, justify="right")
    for c in u.curves:
        curves.add_row(
            str(c.k),
            pct(c.mt_at_k.estimate),
            ci(c.mt_at_k),
            pct(c.pass_at_k.estimate),
            ci(c.pass_at_k),
        )
    return curves


def failures_table(m: Metrics) -> Table:
    failures = Table(title="Failed rounds by class", title_justify="left")
    failures.add_column("mode")
    failures.add_column("class")
    failures.add_column("rounds", justify="right")
    failures.add_column("failing tests", justify="right")
    for mode in Mode:
        rounds = m.failed_rounds_by_class.get(mode.value, {})
        tests = m.failing_tests_by_class.get(mode.value, {})
        for cls in sorted(set(rounds) | set(tests)):
            failures.add_row(mode.value, cls, str(rounds.get(cls, 0)), str(tests.get(cls, 0)))
    if not m.failed_rounds_by_class:
        failures.add_row("—", "no failed rounds", "0", "0")
    return failures


def protocol_table(view: JobView) -> Table:
    """How the job ran, where it changes the numbers (see :mod:`._protocol`)."""
    t = Table(title="Protocol", title_justify="left", show_header=False)
    t.add_column("what")
    t.add_column("value")
    for what, value in protocol_rows(view):
        t.add_row(what, value)
    return t


def compliance_tables(view: JobView) -> list[Table]:
    """CSR/ISR overall, by category, by round (compliance decay), conflicts and judge errors."""
    c = compute_compliance(view.records)
    if not c.checks:
        return []
    cols = ("CSR", "ISR", "pass", "fail", "n/a", "error")

    def table(title: str, first: str, rows: list[ComplianceRow]) -> Table:
        t = Table(title=title, title_justify="left")
        t.add_column(first)
        for col in cols:
            t.add_column(col, justify="right")
        for row in rows:
            t.add_row(
                row.key,
                pct(row.csr),
                pct(row.isr),
                str(row.passed),
                str(row.failed),
                str(row.not_applicable),
                str(row.error),
            )
        return t

    summary = Table(
        title=f"Process compliance ({c.mode}; percent; n/a and errors excluded)",
        title_justify="left",
    )
    for col in ("CSR", "ISR round", "ISR attempt", "ISR task", "scored", "n/a", "errors"):
        summary.add_column(col, justify="right")
    summary.add_row(
        pct(c.csr),
        pct(c.isr_round),
        pct(c.isr_attempt),
        pct(c.isr_task),
        str(c.totals.passed + c.totals.failed),
        str(c.totals.not_applicable),
        str(c.totals.error),
    )
    out = [
        summary,
        table("Compliance by category", "category", c.by_category),
        table("Compliance decay: by round index", "round", c.by_round),
    ]
    if c.conflicts:
        out.append(table("Instruction-conflict checks", "check", c.conflicts))
    if c.errors:
        err = Table(title="Checks that could not be scored (error)", title_justify="left")
        for col in ("task", "attempt", "round", "check", "detail"):
            err.add_column(col)
        for e in c.errors:
            err.add_row(e.task, str(e.attempt), str(e.round), e.check, e.detail[:120])
        out.append(err)
    return out


def job_json(
    view: JobView, *, resamples: int | None = None, seed: int = DEFAULT_SEED
) -> dict[str, Any]:
    m = view.metrics()
    return {
        "job": view.path.name,
        "path": str(view.path),
        "config": view.config.model_dump(mode="json"),
        "isolation": view.isolation(),
        "protocol": [{"what": w, "value": v} for w, v in protocol_rows(view)],
        "metrics": m.model_dump(mode="json"),
        "compliance": compute_compliance(view.records).model_dump(mode="json"),
        "uncertainty": job_uncertainty(view, resamples=resamples, seed=seed).model_dump(
            mode="json"
        ),
        "records": len(view.records),
        "running": view.running.as_json() if view.running else None,
        "partial": view.running is not None,
        "problems": view.problems,
        "integrity_violations": integrity_violations(view),
        "cost": _cost_json(view),
    }


def _cost_json(view: JobView) -> dict[str, Any]:
    """USD is null when unknown (some round unpriced) or when no round reported usage."""
    c = cost_of(view.records)
    return {
        "usd": c.usd,
        "tokens": c.tokens,
        "rounds_with_usage": c.rounds_with_usage,
        "rounds_unpriced": c.rounds_unpriced,
        "text": str(c),
    }


def integrity_violations(view: JobView) -> list[dict[str, Any]]:
    """Rounds caught forging their grade, with the verifier's evidence (never passes)."""
    return [
        {
            "task": r.task,
            "mode": r.mode.value,
            "attempt": r.attempt,
            "round": r.round,
            "evidence": r.integrity_evidence,
            "artifacts": r.artifacts,
        }
        for r in sorted(view.records, key=lambda r: r.key)
        if r.status is RoundStatus.integrity_violation
    ]


def print_report(
    views: list[JobView],
    console: Console,
    *,
    resamples: int | None = None,
    seed: int = DEFAULT_SEED,
) -> None:
    console.print(leaderboard_table(views))
    for v in views:
        console.print(job_tables(v, resamples=resamples, seed=seed))
        for note in v.config.agent_notes:
            console.print(f"[yellow]note:[/] {v.config.agent} {note}", highlight=False)
        if v.running is not None:
            console.print(f"[yellow]running:[/] {v.running.describe(v.path.name)}", highlight=False)
        if v.isolation() is not None:
            console.print(f"sandbox: local, isolation {v.isolation()}", highlight=False)
        summary = problem_summary(v.problems)
        if summary is not None:
            console.print(f"[yellow]warning:[/] {summary}", highlight=False)
        bad = integrity_violations(v)
        if bad:
            console.print(
                f"[bold red]{len(bad)} integrity violation(s)[/] (forged grades, scored as "
                "failures):"
            )
            for b in bad:
                console.print(
                    f"  {b['task']} {b['mode']}-{b['attempt']:02d} round {b['round']}: "
                    + "; ".join(b["evidence"][:3])
                )
