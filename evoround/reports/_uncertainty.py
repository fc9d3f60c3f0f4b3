"""Bootstrap intervals over tasks for every headline figure, and paired comparisons.

Why a bootstrap over tasks: the task is the unit a benchmark samples (attempts of one task
are not independent of each other), so an interval that resamples rounds or attempts as if
they were independent would be too narrow.

Method (stated in the README, printed with every result):

- Draw T tasks with replacement from the T tasks of the evaluation (a task drawn twice
  counts twice, as two tasks). Tasks never attempted are drawn too and count 0, as in MT@k.
- Within each drawn task, which of its attempts count is drawn too: the attempts are put
  in a random order and renumbered, so MT@k, SR and the per-round rates use a random k of
  the task's n attempts (without replacement, so one lucky attempt is never counted twice
  and max-over-k figures are not biased down). With n <= k every attempt counts and only
  the task draw varies. An attempt the job knows was started but that left no record
  (``JobView.attempted``) takes its slot in the order like a recorded one, and scores 0.
- Every figure is recomputed on the resample by the SAME functions that compute it on the
  job (``compute_metrics``; ``compliance_rates``, the code ``compute_compliance`` takes
  CSR and ISR from): no formula is restated here, so a change to a metric's definition
  carries over to its interval.
- The interval is the 2.5th-97.5th percentile of the resampled values; the standard error
  is their standard deviation. Resamples where a figure is undefined (e.g. no failed round
  to compute a state penalty from) are left out and counted (``defined``).
- Paired comparison of jobs A and B: only tasks both ran; each resample draws the same
  tasks and the same attempt order for A and B, and records B - A. Two-sided p-value:
  ``min(1, 2 * min(P*(d <= 0), P*(d >= 0)))`` with the usual +1 correction, so identical
  jobs give a difference of exactly 0 and p = 1.

Seeded (numpy's PCG64): the same job, resample count and seed give the same intervals.
"""

from __future__ import annotations

import inspect
import types
import typing
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from pydantic import BaseModel, Field

from evoround.reports._compliance import compliance_rates
from evoround.results import JobView, Metrics, Mode, RoundResult, compute_metrics, dedupe

DEFAULT_RESAMPLES = 1000
MIN_AUTO_RESAMPLES = 200
AUTO_WORK = 1_500_000
"""Record visits the default bootstrap may spend (resamples x records x metric passes): a
job small enough gets DEFAULT_RESAMPLES, a large one fewer, never under MIN_AUTO_RESAMPLES.
A count of the job's size, not a time budget, so the same job always gets the same count."""
CACHE_RECORDS = 100_000
"""Renamed record copies kept for reuse across resamples (a few tens of MB at most); past
that, copies are made afresh for each resample."""
MEMO_RESAMPLES = 5_000
"""Distinct resamples whose figures are kept for reuse by an equal later draw."""
DEFAULT_SEED = 20260523
LEVEL = 0.95
METHOD = (
    "percentile bootstrap over tasks (tasks drawn with replacement; within a drawn task a "
    "random k of its attempts count, drawn without replacement); SE = SD of the resamples"
)

Stats = dict[str, float | None]
Statistic = Callable[..., Stats]
"""(records, n_rounds (task -> N_t), k, **metric_kwargs) -> named figures (None: undefined
on this data). ``metric_kwargs`` are handed on to ``compute_metrics`` where it takes them
(``attempted``: MT attempts started per task, ``window``: the rounds window)."""

_ACCEPTS = frozenset(inspect.signature(compute_metrics).parameters)


def _metrics(records: list[RoundResult], n_rounds: dict[str, int], k: int, **kw: Any) -> Metrics:
    """compute_metrics with the keyword arguments it knows (and nothing it does not)."""
    return compute_metrics(
        records, n_rounds, k, **{a: v for a, v in kw.items() if a in _ACCEPTS and v is not None}
    )


DISPLAY = {"mt_at_k": "MT@k", "sr": "SR", "gap": "Gap", "comp": "Comp", "perfect": "Perfect"}
"""Metrics field -> the name the reports print; other float fields keep their field name."""


class Interval(BaseModel):
    estimate: float | None
    lo: float | None = None
    hi: float | None = None
    se: float | None = None
    defined: int = 0
    """Resamples on which the figure was defined (the interval is over these)."""


class _Resampling(BaseModel):
    """How a set of intervals was drawn: the fields every uncertainty record starts with."""

    method: str = METHOD
    unit: str = "task"
    resamples: int
    seed: int
    level: float = LEVEL
    n_tasks: int
    k: int


class Uncertainty(_Resampling):
    figures: dict[str, Interval] = Field(default_factory=dict)


class PairedDiff(BaseModel):
    a: float | None
    b: float | None
    delta: float | None
    """B - A on the common tasks."""
    lo: float | None = None
    hi: float | None = None
    se: float | None = None
    p_value: float | None = None
    defined: int = 0


class PairedComparison(BaseModel):
    method: str = METHOD + "; paired: the same draws for both jobs, difference B - A"
    resamples: int
    seed: int
    level: float = LEVEL
    k: int
    common_tasks: int
    figures: dict[str, PairedDiff] = Field(default_factory=dict)


# ---- the figures -----------------------------------------------------------------------


def _float_fields(model: type[BaseModel]) -> list[str]:
    """Fields annotated ``float`` or ``float | None``: the headline scalars of a model.

    Read from the model, not listed here, so a figure another change adds to ``Metrics``
    gets an interval without touching this module."""
    out = []
    for name, f in model.model_fields.items():
        ann = f.annotation
        args = typing.get_args(ann) if isinstance(ann, types.UnionType) else (ann,)
        if float in args and all(a in (float, type(None)) for a in args):
            out.append(name)
    return out


def headline_stats(
    records: list[RoundResult], n_rounds: dict[str, int], k: int, **kw: Any
) -> Stats:
    """Every scalar figure of ``compute_metrics`` and ``compute_compliance`` (CSR, ISR)."""
    return _headline(_metrics(records, n_rounds, k, **kw), records)


def _headline(m: Metrics, records: list[RoundResult]) -> Stats:
    fields = _float_fields(Metrics)
    first = [f for f in DISPLAY if f in fields]  # the paper's figures lead, in DISPLAY order
    out: Stats = {
        DISPLAY.get(f, f): getattr(m, f) for f in [*first, *(f for f in fields if f not in first)]
    }
    names = ("CSR", "ISR", "ISR_attempt", "ISR_task")
    if any(r.checks for r in records):
        c = compliance_rates(records)
        out |= dict(zip(names, (c.csr, c.isr_round, c.isr_attempt, c.isr_task), strict=True))
    else:  # no check recorded: every compliance rate is undefined, nothing to compute
        out |= dict.fromkeys(names)
    return out


def conditional_pass(records: Iterable[RoundResult]) -> dict[int, tuple[int, int, int, int]]:
    """Per round index i >= 2 of MT attempts: (passed after a pass, rounds after a pass,
    passed after a fail, rounds after a fail). A round "after a fail" exists only when the
    job kept going past a failed round (``--on-fail continue``)."""
    by_attempt: dict[tuple[str, int], dict[int, bool]] = defaultdict(dict)
    for r in dedupe(records):
        if r.mode is Mode.mt:
            by_attempt[(r.task, r.attempt)][r.round] = r.passed
    out: dict[int, list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for rounds in by_attempt.values():
        for i, ok in rounds.items():
            prev = rounds.get(i - 1)
            if prev is None:
                continue
            cell = out[i]
            base = 0 if prev else 2
            cell[base] += ok
            cell[base + 1] += 1
    return {i: (c[0], c[1], c[2], c[3]) for i, c in sorted(out.items())}


def report_stats(records: list[RoundResult], n_rounds: dict[str, int], k: int, **kw: Any) -> Stats:
    """The headline figures, plus the depth profile: pass rate by round index (MT, SR), the
    conditional pass rate P(round i passes | round i-1 passed / failed in the same attempt),
    and the MT@j and pass@j curves for j = 1..k (pass@j: share of tasks one of the first j
    attempts passed whole: ``perfect`` where the metrics define it, else ``comp``)."""
    m = _metrics(records, n_rounds, k, **kw)
    out = _headline(m, records)
    out |= _round_stats(m, records)
    out |= _curve_stats(m, records, n_rounds, k, **kw)
    return out


def _round_stats(m: Metrics, records: list[RoundResult]) -> Stats:
    """``round.<i>.mt`` / ``.sr`` pass rates and ``.mt_after_pass`` / ``.mt_after_fail``."""
    out: Stats = {}
    for row in m.by_round:
        out[f"round.{row.round}.mt"] = getattr(row, "mt_pass_rate", None)
        out[f"round.{row.round}.sr"] = getattr(row, "sr_pass_rate", None)
    for i, (pp, n_p, pf, n_f) in conditional_pass(records).items():
        out[f"round.{i}.mt_after_pass"] = pp / n_p if n_p else None
        out[f"round.{i}.mt_after_fail"] = pf / n_f if n_f else None
    return out


def _curve_stats(
    m: Metrics, records: list[RoundResult], n_rounds: dict[str, int], k: int, **kw: Any
) -> Stats:
    """``curve.<j>.MT@k`` and ``curve.<j>.pass@k`` for j = 1..k (``m``: the metrics at k)."""
    mt = [r for r in records if r.mode is Mode.mt]
    attempts: dict[str, set[int]] = defaultdict(set)
    for r in mt:
        attempts[r.task].add(r.attempt)
    order = {t: sorted(a) for t, a in attempts.items()}
    out: Stats = {}
    for j in range(1, k + 1):
        if j == k:
            mj = m
        elif kw.get("attempted") and "attempted" in _ACCEPTS:
            mj = _metrics(records, n_rounds, j, **kw)  # attempts without records: no shortcut
        else:
            # MT@j and pass@j read only the first j MT attempts of each task: handing
            # compute_metrics just those records gives the same figures at a fraction of
            # the cost (a test holds the two equal)
            first = {t: set(a[:j]) for t, a in order.items()}
            mj = _metrics([r for r in mt if r.attempt in first[r.task]], n_rounds, j, **kw)
        out[f"curve.{j}.MT@k"] = mj.mt_at_k
        out[f"curve.{j}.pass@k"] = getattr(mj, "perfect", mj.comp)
    return out


# ---- resampling ------------------------------------------------------------------------


@dataclass
class _Pool:
    """One job's records by task, mode and attempt, with renamed copies cached: a drawn
    task becomes a distinct task (``name<US>occurrence``) with renumbered attempts.

    ``slots`` is the number of MT attempts a task had: the recorded ones, or more when the
    job knows of attempts that left no record (``attempted``); those keep their place in
    the random order, so they count (as 0) in "the first k" as often as they should."""

    n_rounds: dict[str, int]
    attempted: dict[str, int] | None = None
    by_task: dict[str, dict[Mode, dict[int, list[RoundResult]]]] = field(default_factory=dict)
    cache: dict[tuple[str, int, Mode, int, int], list[RoundResult]] = field(default_factory=dict)
    cached: int = 0

    @classmethod
    def of(
        cls,
        records: Iterable[RoundResult],
        n_rounds: Mapping[str, int],
        attempted: Mapping[str, int] | None = None,
    ) -> _Pool:
        pool = cls(dict(n_rounds), dict(attempted) if attempted else None)
        grouped: dict[str, dict[Mode, dict[int, list[RoundResult]]]] = defaultdict(
            lambda: defaultdict(lambda: defaultdict(list))
        )
        for r in dedupe(records):
            if r.task in n_rounds:
                grouped[r.task][r.mode][r.attempt].append(r)
        pool.by_task = {t: {m: dict(a) for m, a in modes.items()} for t, modes in grouped.items()}
        return pool

    def slots(self, task: str, mode: Mode = Mode.mt) -> int:
        recorded = len(self.by_task.get(task, {}).get(mode, {}))
        started = (self.attempted or {}).get(task, 0) if mode is Mode.mt else 0
        return max(recorded, started)

    def n_attempts(self, task: str) -> int:
        return max((self.slots(task, m) for m in Mode), default=0)

    def draw(self, task: str, occ: int, keys: np.ndarray, out: list[RoundResult]) -> str:
        name = f"{task}\x1f{occ}"
        for mode, per_attempt in self.by_task.get(task, {}).items():
            attempts = sorted(per_attempt)
            n = max(self.slots(task, mode), len(attempts))
            rank = {p: r for r, p in enumerate(sorted(range(n), key=lambda p: (keys[p], p)), 1)}
            for p, old in enumerate(attempts):
                new = rank[p]
                ck = (task, occ, mode, old, new)
                recs = self.cache.get(ck)
                if recs is None:
                    recs = [
                        r.model_copy(update={"task": name, "attempt": new})
                        for r in per_attempt[old]
                    ]
                    if self.cached < CACHE_RECORDS:
                        self.cache[ck] = recs
                        self.cached += len(recs)
                out.extend(recs)
        return name


Sample = tuple[list[RoundResult], dict[str, int], dict[str, Any]]
"""One resample of one job: records, n_rounds, and the keyword arguments of its metrics."""


Draw = tuple[np.ndarray, np.ndarray, tuple[tuple[int, tuple[int, ...]], ...]]
"""One resample's random draws: the drawn tasks (indices), each drawn row's attempt keys,
and its signature: per row the task and the order its keys put the task's attempts in.
Equal signatures give equal samples (every part of a :data:`Sample` is a function of it)."""


def _random_draws(
    tasks: list[str], pools: list[_Pool], resamples: int, seed: int
) -> Iterable[Draw]:
    rng = np.random.default_rng(seed)
    need = [max((p.n_attempts(t) for p in pools), default=0) for t in tasks]
    width = max(need, default=0)
    for _ in range(resamples):
        idx = rng.integers(0, len(tasks), size=len(tasks))
        keys = rng.random((len(tasks), max(width, 1)))
        # the stable order of a row's first need[t] keys decides every rank _Pool.draw
        # gives (it ranks a prefix of them, ties by position)
        sig = tuple(
            (int(t), tuple(int(i) for i in np.argsort(keys[row][: need[int(t)]], kind="stable")))
            for row, t in enumerate(idx)
        )
        yield idx, keys, sig


def _samples(
    tasks: list[str], pools: list[_Pool], idx: np.ndarray, keys: np.ndarray, window: Any
) -> list[Sample]:
    """One resample, as one :data:`Sample` per pool; the same draws for every pool."""
    seen: dict[int, int] = defaultdict(int)
    per_pool: list[Sample] = []
    for pool in pools:
        kw: dict[str, Any] = {"window": window}
        if pool.attempted is not None:
            kw["attempted"] = {}
        per_pool.append(([], {}, kw))
    for row, t in enumerate(idx):
        occ = seen[int(t)]
        seen[int(t)] += 1
        task = tasks[int(t)]
        for pool, (recs, nr, kw) in zip(pools, per_pool, strict=True):
            name = pool.draw(task, occ, keys[row], recs)
            nr[name] = pool.n_rounds[task]
            if "attempted" in kw and pool.slots(task):
                kw["attempted"][name] = pool.slots(task)
    return per_pool


def _resampled(
    tasks: list[str],
    pools: list[_Pool],
    statistic: Statistic,
    k: int,
    resamples: int,
    seed: int,
    window: Any,
) -> Iterable[list[Stats]]:
    """The statistic of every pool on each resample. A resample whose draws equal an
    earlier one's (common in small jobs: one task with one attempt draws the same thing
    every time) reuses its figures instead of computing them again: the same sample, the
    same deterministic functions, so the same figures to the last bit."""
    memo: dict[Any, list[Stats]] = {}
    for idx, keys, sig in _random_draws(tasks, pools, resamples, seed):
        stats = memo.get(sig)
        if stats is None:
            samples = _samples(tasks, pools, idx, keys, window)
            stats = [statistic(recs, nr, k, **kw) for recs, nr, kw in samples]
            if len(memo) < MEMO_RESAMPLES:
                memo[sig] = stats
        yield stats


def _summary(values: list[float]) -> tuple[float, float, float | None]:
    arr = np.round(np.asarray(values, dtype=float), 12)  # float noise must not move a bound
    lo, hi = np.percentile(arr, [100 * (1 - LEVEL) / 2, 100 * (1 + LEVEL) / 2])
    se = float(np.std(arr, ddof=1)) if len(arr) > 1 else None
    return float(lo), float(hi), se


def bootstrap(
    records: Iterable[RoundResult],
    n_rounds: Mapping[str, int],
    k: int,
    *,
    statistic: Statistic = headline_stats,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    attempted: Mapping[str, int] | None = None,
    window: Any = None,
) -> Uncertainty:
    """Intervals for every figure ``statistic`` names, on one job. ``attempted`` and
    ``window`` are what the job's own metrics are computed with (see ``JobView.metrics``)."""
    recs = list(records)
    nr = dict(n_rounds)
    point = statistic(recs, nr, k, attempted=dict(attempted) if attempted else None, window=window)
    reps: dict[str, list[float]] = defaultdict(list)
    if resamples > 0 and nr:
        pool = _Pool.of(recs, nr, attempted)
        for [stats] in _resampled(sorted(nr), [pool], statistic, k, resamples, seed, window):
            for name, v in stats.items():
                if v is not None:
                    reps[name].append(v)
    figures = {}
    for name, est in point.items():
        vals = reps.get(name, [])
        if est is None or not vals:
            figures[name] = Interval(estimate=est, defined=len(vals))
            continue
        lo, hi, se = _summary(vals)
        figures[name] = Interval(estimate=est, lo=lo, hi=hi, se=se, defined=len(vals))
    return Uncertainty(resamples=resamples, seed=seed, n_tasks=len(nr), k=k, figures=figures)


def _within(attempted: Mapping[str, int] | None, nr: dict[str, int]) -> dict[str, int] | None:
    """The started-attempt counts of the common tasks only (None when the job has none)."""
    return {t: n for t, n in attempted.items() if t in nr} if attempted else None


def _p_value(vals: list[float]) -> float:
    """Two-sided: ``min(1, 2 * min(P*(d <= 0), P*(d >= 0)))`` with the +1 correction."""
    arr = np.round(np.asarray(vals), 12)
    n = len(arr)
    below = (np.sum(arr <= 0) + 1) / (n + 1)
    above = (np.sum(arr >= 0) + 1) / (n + 1)
    return float(min(1.0, 2 * min(below, above)))


def _paired_diff(va: float | None, vb: float | None, vals: list[float]) -> PairedDiff:
    """One figure's B - A with its interval and p-value (none when undefined or unsampled)."""
    delta = vb - va if va is not None and vb is not None else None
    if delta is None or not vals:
        return PairedDiff(a=va, b=vb, delta=delta, defined=len(vals))
    lo, hi, se = _summary(vals)
    return PairedDiff(
        a=va, b=vb, delta=delta, lo=lo, hi=hi, se=se, p_value=_p_value(vals), defined=len(vals)
    )


@dataclass(frozen=True)
class _Pair:
    """Both jobs restricted to the common tasks: what every paired resample draws from."""

    records_a: list[RoundResult]
    records_b: list[RoundResult]
    attempted_a: dict[str, int] | None
    attempted_b: dict[str, int] | None
    n_rounds: dict[str, int]


def _paired_resamples(
    pair: _Pair, k: int, statistic: Statistic, resamples: int, seed: int, window: Any
) -> dict[str, list[float]]:
    """B - A of every figure on each resample where both are defined; the same tasks and
    attempt order are drawn for A and B."""
    diffs: dict[str, list[float]] = defaultdict(list)
    if resamples <= 0 or not pair.n_rounds:
        return diffs
    nr = pair.n_rounds
    pools = [
        _Pool.of(pair.records_a, nr, pair.attempted_a),
        _Pool.of(pair.records_b, nr, pair.attempted_b),
    ]
    for sa, sb in _resampled(sorted(nr), pools, statistic, k, resamples, seed, window):
        for name in sa.keys() & sb.keys():
            va, vb = sa[name], sb[name]
            if va is not None and vb is not None:
                diffs[name].append(vb - va)
    return diffs


def paired_bootstrap(
    records_a: Iterable[RoundResult],
    records_b: Iterable[RoundResult],
    n_rounds: Mapping[str, int],
    k: int,
    *,
    statistic: Statistic = headline_stats,
    resamples: int = DEFAULT_RESAMPLES,
    seed: int = DEFAULT_SEED,
    attempted_a: Mapping[str, int] | None = None,
    attempted_b: Mapping[str, int] | None = None,
    window: Any = None,
) -> PairedComparison:
    """B - A for every figure, on the tasks of ``n_rounds`` (the tasks both jobs ran), over
    the rounds ``window`` both jobs ran (``--rounds``; None: all rounds)."""
    nr = dict(n_rounds)
    pair = _Pair(
        records_a=[r for r in records_a if r.task in nr],
        records_b=[r for r in records_b if r.task in nr],
        attempted_a=_within(attempted_a, nr),
        attempted_b=_within(attempted_b, nr),
        n_rounds=nr,
    )
    pa = statistic(pair.records_a, nr, k, attempted=pair.attempted_a, window=window)
    pb = statistic(pair.records_b, nr, k, attempted=pair.attempted_b, window=window)
    diffs = _paired_resamples(pair, k, statistic, resamples, seed, window)
    figures = {
        name: _paired_diff(pa.get(name), pb.get(name), diffs.get(name, []))
        for name in pa.keys() | pb.keys()
    }
    ordered = {n: figures[n] for n in [*pa, *(x for x in pb if x not in pa)]}
    return PairedComparison(
        resamples=resamples, seed=seed, k=k, common_tasks=len(nr), figures=ordered
    )


# ---- one job, structured for the reports ---------------------------------------------


class RoundProfile(BaseModel):
    round: int
    mt: Interval
    sr: Interval
    mt_after_pass: Interval | None = None
    """P(round i passes | round i-1 passed, same MT attempt)."""
    mt_after_fail: Interval | None = None
    """P(round i passes | round i-1 failed, same MT attempt): only under ``continue``."""


class CurvePoint(BaseModel):
    k: int
    mt_at_k: Interval
    pass_at_k: Interval


class JobUncertainty(_Resampling):
    headline: dict[str, Interval]
    by_round: list[RoundProfile]
    curves: list[CurvePoint]
    continues_after_failure: bool
    """Some MT attempt ran a round after a failed one (``--on-fail continue``)."""


def structure(u: Uncertainty) -> JobUncertainty:
    """The flat figure names of :func:`report_stats` as headline / by-round / curve parts."""
    head: dict[str, Interval] = {}
    rounds: dict[int, dict[str, Interval]] = defaultdict(dict)
    curves: dict[int, dict[str, Interval]] = defaultdict(dict)
    for name, iv in u.figures.items():
        parts = name.split(".")
        if parts[0] == "round" and len(parts) == 3:
            rounds[int(parts[1])][parts[2]] = iv
        elif parts[0] == "curve" and len(parts) == 3:
            curves[int(parts[1])][parts[2]] = iv
        else:
            head[name] = iv
    empty = Interval(estimate=None)
    return JobUncertainty(
        resamples=u.resamples,
        seed=u.seed,
        level=u.level,
        n_tasks=u.n_tasks,
        k=u.k,
        headline=head,
        by_round=[
            RoundProfile(
                round=i,
                mt=r.get("mt", empty),
                sr=r.get("sr", empty),
                mt_after_pass=r.get("mt_after_pass"),
                mt_after_fail=r.get("mt_after_fail"),
            )
            for i, r in sorted(rounds.items())
        ],
        curves=[
            CurvePoint(k=j, mt_at_k=c.get("MT@k", empty), pass_at_k=c.get("pass@k", empty))
            for j, c in sorted(curves.items())
        ],
        continues_after_failure=any(
            r.get("mt_after_fail") is not None and r["mt_after_fail"].estimate is not None
            for r in rounds.values()
        ),
    )


def job_attempted(view: JobView) -> dict[str, int] | None:
    """MT attempts started per task, where the job view and the metrics know of them (an
    attempt that left no record scores 0, as ``JobView.metrics`` counts it)."""
    fn = getattr(view, "attempted", None)
    if fn is None or "attempted" not in _ACCEPTS:
        return None
    return dict(fn())


def auto_resamples(n_records: int, k: int) -> int:
    """The default resample count of a job of ``n_records`` round records at ``k``: every
    resample runs the metrics once, plus (k - 1) cheaper passes for the curves over k."""
    work = max(1, n_records) * (1 + (k - 1) / 2)
    n = int(AUTO_WORK / work) // 100 * 100
    return max(MIN_AUTO_RESAMPLES, min(DEFAULT_RESAMPLES, n))


_CACHE: dict[tuple[int, int | None, int], tuple[JobView, JobUncertainty]] = {}


def job_uncertainty(
    view: JobView, *, resamples: int | None = None, seed: int = DEFAULT_SEED
) -> JobUncertainty:
    """Every figure of one job with its interval (computed once per view and settings:
    the terminal tables, ``--json`` and report.html all show the same numbers)."""
    key = (id(view), resamples, seed)
    hit = _CACHE.get(key)
    if hit is not None and hit[0] is view:
        return hit[1]
    if resamples is None:
        resamples = auto_resamples(len(view.records), view.config.attempts)
    u = bootstrap(
        view.records,
        view.n_rounds,
        view.config.attempts,
        statistic=report_stats,
        resamples=resamples,
        seed=seed,
        attempted=job_attempted(view),
        window=getattr(view.config, "rounds_window", None),
    )
    out = structure(u)
    if len(_CACHE) > 64:
        _CACHE.clear()
    _CACHE[key] = (view, out)
    return out
