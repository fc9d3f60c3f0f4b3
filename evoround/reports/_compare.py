"""Compare two jobs round by round: which rounds flipped between agent versions.

A round's outcome is read with the fail-stop rule: a round an MT attempt never
reached counts as failed ("not run"), exactly as MT@k scores it. Only
(task, mode, attempt, round) cells both jobs could have run are compared, and
tasks whose digests differ are flagged: a flip there may be the task's doing.
"""

from __future__ import annotations

from pydantic import BaseModel, Field
from rich.console import Group
from rich.table import Table

from evoround.reports._text import pct
from evoround.reports._uncertainty import (
    DEFAULT_SEED,
    PairedComparison,
    auto_resamples,
    job_attempted,
    paired_bootstrap,
)
from evoround.results import JobView, Metrics, RoundResult, dedupe


class RoundFlip(BaseModel):
    task: str
    mode: str
    attempt: int
    round: int
    a: str
    b: str
    direction: str
    """fixed (failed in A, passes in B) | broken (passed in A, fails in B)"""


class TaskDelta(BaseModel):
    task: str
    n_rounds: int
    mt_a: float | None
    mt_b: float | None
    sr_a: float | None
    sr_b: float | None
    digest_changed: bool
    fixed: int = 0
    broken: int = 0


class Comparison(BaseModel):
    a: str
    b: str
    agent_a: str
    agent_b: str
    summary: dict[str, dict[str, float | None]]
    """metric -> {"a", "b", "delta"}, each job on all of its own tasks (unpaired)."""
    paired: PairedComparison
    """B - A on the tasks both jobs ran, with a paired bootstrap interval and p-value."""
    n_rounds_differ: list[str] = Field(default_factory=list)
    """Common tasks whose round count differs between the jobs (A's count is used)."""
    tasks: list[TaskDelta] = Field(default_factory=list)
    flips: list[RoundFlip] = Field(default_factory=list)
    only_in_a: list[str] = Field(default_factory=list)
    only_in_b: list[str] = Field(default_factory=list)


class CompareError(ValueError):
    """Two jobs whose figures do not measure the same thing (one line, for the CLI)."""


def _window_text(w: tuple[int, int | None] | None) -> str:
    return "all rounds" if not w else f"rounds {w[0]}-{w[1] or 'end'}"


def _span(view: JobView, task: str) -> range:
    """The rounds of ``task`` the job's metrics cover (its ``--rounds`` window)."""
    n = view.n_rounds.get(task, 0)
    w = view.config.rounds_window
    return range(w[0], min(w[1] or n, n) + 1) if w else range(1, n + 1)


def _cells(view: JobView) -> dict[tuple[str, str, int, int], str]:
    """Outcome per (task, mode, attempt, round) inside the job's window; unreached MT
    rounds are 'not_run'."""
    recs: list[RoundResult] = dedupe(view.records)
    out: dict[tuple[str, str, int, int], str] = {}
    for r in recs:
        if r.round not in _span(view, r.task):
            continue
        cls = r.primary_failure_class
        out[r.key] = "passed" if r.passed else (cls.value if cls else r.status.value)
    attempts = {(r.task, r.attempt) for r in recs if r.mode.value == "mt"}
    for task, a in attempts:
        for i in _span(view, task):
            out.setdefault((task, "mt", a, i), "not_run")
    return out


SUMMARY = ("mt_at_k", "sr", "gap", "comp", "mean_reward", "state_penalty")
"""Metrics fields the unpaired summary compares, in the order it lists them."""


def _same_window(a: JobView, b: JobView) -> tuple[int, int | None] | None:
    """The rounds window both jobs ran; jobs over different windows are refused, since
    their figures cover different rounds."""
    wa, wb = a.config.rounds_window, b.config.rounds_window
    if (tuple(wa) if wa else None) != (tuple(wb) if wb else None):
        raise CompareError(
            f"{a.path.name} covers {_window_text(wa)} but {b.path.name} covers "
            f"{_window_text(wb)} (--rounds): compare jobs run over the same window"
        )
    return wa


def _delta(va: float | None, vb: float | None) -> float | None:
    return vb - va if va is not None and vb is not None else None


def _summary(ma: Metrics, mb: Metrics) -> dict[str, dict[str, float | None]]:
    """Each job on all of its own tasks (unpaired): metric -> {"a", "b", "delta"}."""
    summary = {}
    for name in SUMMARY:
        va, vb = getattr(ma, name), getattr(mb, name)
        summary[name] = {"a": va, "b": vb, "delta": _delta(va, vb)}
    return summary


def _flips(a: JobView, b: JobView) -> list[RoundFlip]:
    """Cells both jobs could have run whose pass/fail differs, in cell order."""
    ca, cb = _cells(a), _cells(b)
    flips = []
    for key in sorted(set(ca) & set(cb)):
        pa, pb = ca[key] == "passed", cb[key] == "passed"
        if pa == pb:
            continue
        task, mode, attempt, rnd = key
        flips.append(
            RoundFlip(
                task=task,
                mode=mode,
                attempt=attempt,
                round=rnd,
                a=ca[key],
                b=cb[key],
                direction="fixed" if pb else "broken",
            )
        )
    return flips


def _task_deltas(
    a: JobView, b: JobView, ma: Metrics, mb: Metrics, flips: list[RoundFlip]
) -> list[TaskDelta]:
    """Per common task: both jobs' MT@k and SR, its flips, and whether its digest changed
    (a flip on a changed task may be the task's doing)."""
    ta = {t.task: t for t in ma.tasks}
    tb = {t.task: t for t in mb.tasks}
    tasks = []
    for name in sorted(set(ta) & set(tb)):
        mine = [f for f in flips if f.task == name]
        tasks.append(
            TaskDelta(
                task=name,
                n_rounds=ta[name].n_rounds,
                mt_a=ta[name].mt_at_k if ta[name].mt_attempts else None,
                mt_b=tb[name].mt_at_k if tb[name].mt_attempts else None,
                sr_a=ta[name].sr,
                sr_b=tb[name].sr,
                digest_changed=a.config.tasks[name].digest != b.config.tasks[name].digest,
                fixed=sum(f.direction == "fixed" for f in mine),
                broken=sum(f.direction == "broken" for f in mine),
            )
        )
    return tasks


def compare_jobs(
    a: JobView,
    b: JobView,
    *,
    resamples: int | None = None,
    seed: int = DEFAULT_SEED,
    k: int | None = None,
) -> Comparison:
    """``k`` defaults to the smaller attempt count of the two jobs, so MT@k compares like
    with like. Jobs run over different ``--rounds`` windows are refused: their figures
    cover different rounds."""
    window = _same_window(a, b)
    ma, mb = a.metrics(), b.metrics()
    common = sorted(set(a.n_rounds) & set(b.n_rounds))
    kk = k or min(a.config.attempts, b.config.attempts)
    if resamples is None:
        resamples = auto_resamples(len(a.records) + len(b.records), kk)
    paired = paired_bootstrap(
        a.records,
        b.records,
        {t: a.n_rounds[t] for t in common},
        kk,
        resamples=resamples,
        seed=seed,
        attempted_a=job_attempted(a),
        attempted_b=job_attempted(b),
        window=window,
    )
    flips = _flips(a, b)
    tasks_a, tasks_b = {t.task for t in ma.tasks}, {t.task for t in mb.tasks}
    return Comparison(
        a=a.path.name,
        b=b.path.name,
        agent_a=a.config.agent,
        agent_b=b.config.agent,
        summary=_summary(ma, mb),
        paired=paired,
        tasks=_task_deltas(a, b, ma, mb, flips),
        flips=flips,
        n_rounds_differ=[t for t in common if a.n_rounds[t] != b.n_rounds[t]],
        only_in_a=sorted(tasks_a - tasks_b),
        only_in_b=sorted(tasks_b - tasks_a),
    )


def _paired_table(c: Comparison) -> Table:
    """B - A of every figure either job has, with interval, SE and p-value."""
    p = c.paired
    head = Table(
        title=f"A = {c.a} ({c.agent_a})   B = {c.b} ({c.agent_b})\n"
        f"paired on the {p.common_tasks} tasks both ran, k = {p.k} (percent)",
        caption=f"{100 * p.level:.0f}% CI and p-value: {p.method}; {p.resamples} resamples, "
        f"seed {p.seed}",
        title_justify="left",
        caption_justify="left",
    )
    for col in ("figure", "A", "B", "B - A", f"{100 * p.level:.0f}% CI", "SE", "p"):
        head.add_column(col, justify="left" if col == "figure" else "right")
    for name, d in p.figures.items():
        if d.a is None and d.b is None:
            continue
        interval = "—" if d.lo is None else f"[{pct(d.lo)}, {pct(d.hi)}]"
        pv = "—" if d.p_value is None else f"{d.p_value:.3f}"
        head.add_row(name, pct(d.a), pct(d.b), pct(d.delta), interval, pct(d.se), pv)
    return head


def _per_task_table(c: Comparison) -> Table:
    per_task = Table(title="Per task (percent)", title_justify="left")
    for col in ("task", "MT A", "MT B", "SR A", "SR B", "fixed", "broken", "task changed"):
        per_task.add_column(col, justify="left" if col == "task" else "right")
    for t in c.tasks:
        per_task.add_row(
            t.task,
            pct(t.mt_a),
            pct(t.mt_b),
            pct(t.sr_a),
            pct(t.sr_b),
            str(t.fixed),
            str(t.broken),
            "yes" if t.digest_changed else "",
        )
    return per_task


def _flips_table(c: Comparison) -> Table:
    flips = Table(title=f"Flipped rounds ({len(c.flips)})", title_justify="left")
    for col in ("task", "run", "round", "A", "B", ""):
        flips.add_column(col)
    for f in c.flips:
        flips.add_row(f.task, f"{f.mode}-{f.attempt:02d}", str(f.round), f.a, f.b, f.direction)
    if not c.flips:
        flips.add_row("—", "", "", "", "", "no round flipped")
    return flips


def _notes(c: Comparison) -> list[str]:
    """What was left out of the comparison, and where A's round count stood in for B's."""
    notes = []
    if c.only_in_a or c.only_in_b:
        notes.append(
            f"not compared: only in A: {', '.join(c.only_in_a) or '—'}; "
            f"only in B: {', '.join(c.only_in_b) or '—'}"
        )
    for t in c.n_rounds_differ:
        notes.append(f"task {t}: the jobs recorded different round counts (A's is used)")
    return notes


def compare_tables(c: Comparison) -> Group:
    parts: list[Table | str] = [_paired_table(c), _per_task_table(c), _flips_table(c)]
    parts += _notes(c)
    return Group(*parts)
