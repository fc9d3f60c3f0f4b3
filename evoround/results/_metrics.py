"""Metrics over RoundResult records, exactly as EvoCode-Bench defines them.

All functions are pure: records in, numbers out. ``r[t,a,i]`` is 1 when a record
for task t, attempt a, round i passed; a round with no record (after a fail-stop,
never reached, or never run) is 0. Fractions are in [0, 1]; the CLI shows percentages.

Why these exact shapes: the numbers must equal what EvoCodeBench's own
``evaluation/compute_metrics.py`` (and its leaderboard's case score) give on the same
data, so a result exported with ``evoround export`` scores the same there. Every
average over tasks is macro (per task first, then the mean over tasks).

Definitions (t: task, a: attempt, i: round, N_t: rounds of t, T: all tasks given,
A_t: the attempts of t, "first k": the k lowest attempt numbers):
- mean reward  = mean over EVALUATED tasks (>= 1 MT attempt, recorded or only known as
                 started via ``attempted``) of mean_{a in A_t} (1/N_t) sum_i r[t,a,i];
                 an attempt without any round record scores 0
- MT@k         = mean over ALL tasks of (1/N_t) sum_i max_{a<=k} r[t,a,i]  (no attempts: 0)
- SR           = the same per-task formula on SR (fast-forward) records, mean over ALL
                 tasks (macro, like MT@k, so Gap compares like with like)
- SR pooled    = sum_t sum_i max_{a<=k} r_SR[t,a,i] / sum_t N_t  (micro; a second figure)
- Gap          = SR - MT@k
- Comp         = share of ALL tasks whose final round passes in at least one MT attempt a<=k
- hard         = share of EVALUATED tasks whose mean reward is <= 0.5
- perfect      = share of ALL tasks with one MT attempt a<=k that passed every round
                 (equals Comp under fail-stop; differs under ``--on-fail continue``)
- case score   = per task: mean over its attempts of mean over rounds 1..N_t of
                 cases passed / cases (0 for unreached rounds and for rounds with no
                 cases, e.g. a build failure); then the mean over ALL tasks (none: 0)
- state penalty= share of failed MT round records whose (task, round) passes under SR
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass

from pydantic import BaseModel, Field

from evoround.results._records import Mode, RoundResult


class TaskMetrics(BaseModel):
    task: str
    n_rounds: int
    mt_attempts: int
    sr_attempts: int
    mean_reward: float | None
    mt_at_k: float
    sr: float | None
    comp: bool
    perfect: bool = False
    """One MT attempt (a<=k) passed every round."""
    case_score: float | None = None
    """Mean over MT attempts of mean over rounds of cases passed / cases (unreached: 0)."""
    first_failure: list[int | None] = Field(default_factory=list)
    """Per MT attempt (a<=k): the round it failed in, or None if it completed."""


class RoundIndexMetrics(BaseModel):
    round: int
    mt_pass_rate: float | None
    sr_pass_rate: float | None
    mt_records: int
    sr_records: int


class Metrics(BaseModel):
    k: int
    n_tasks: int
    evaluated: int = 0
    """Tasks with at least one MT attempt: the denominator of mean reward."""
    mean_reward: float | None
    mt_at_k: float | None
    sr: float | None
    """Macro: per task, then the mean over all tasks (EvoCodeBench's shape)."""
    sr_pooled: float | None = None
    """Micro: SR rounds passed / all rounds of all tasks (a second figure, not the headline)."""
    gap: float | None
    comp: float | None
    perfect: float | None = None
    hard: float | None = None
    """EvoCode-Bench's hard-task rate: share of evaluated tasks whose mean reward <= 0.5."""
    case_score_mt: float | None
    case_score_sr: float | None
    state_penalty: float | None
    failed_rounds_by_class: dict[str, dict[str, int]]
    """mode -> primary failure class (or status for non-test failures) -> failed rounds."""
    failing_tests_by_class: dict[str, dict[str, int]]
    by_round: list[RoundIndexMetrics]
    tasks: list[TaskMetrics]


def dedupe(records: Iterable[RoundResult]) -> list[RoundResult]:
    """One record per (task, mode, attempt, round); a later record replaces an earlier one."""
    latest: dict[tuple[str, Mode, int, int], RoundResult] = {}
    for r in records:
        # r.key's fields, with the mode itself for its value: one key per record all the
        # same, without the enum's slow ``.value`` (dedupe runs thousands of times a report)
        latest[(r.task, r.mode, r.attempt, r.round)] = r
    return list(latest.values())


def _first_k(attempts: Iterable[int], k: int) -> list[int]:
    return sorted(set(attempts))[:k]


def _share(num: float, den: float) -> float | None:
    return num / den if den else None


def _mean(xs: list[float]) -> float:
    """Exact mean (``statistics.mean`` over floats is correctly rounded, like the benchmark's)."""
    if not xs:
        return 0.0
    if all(type(x) is float and math.isfinite(x) for x in xs):
        return _float_mean(xs)
    return statistics.mean(xs)


def _float_mean(xs: list[float]) -> float:
    """``statistics.mean`` of finite floats, to the last bit, at a fraction of its cost (the
    bootstrap takes tens of thousands of means a report): each float is n / 2**e exactly,
    so the sum is one integer over the largest denominator, and Python's int / int is
    correctly rounded, as is statistics' Fraction -> float."""
    ratios = [x.as_integer_ratio() for x in xs]
    den = max(d for _, d in ratios)
    return sum(n * (den // d) for n, d in ratios) / (den * len(xs))


def round_case_ratio(r: RoundResult) -> float:
    """EvoCodeBench's per-round case ratio: passed / total, 0 when the round has no cases."""
    return r.tests_passed / r.tests_total if r.tests_total > 0 else 0.0


def compute_metrics(
    records: Iterable[RoundResult],
    n_rounds: Mapping[str, int],
    k: int = 1,
    attempted: Mapping[str, int] | None = None,
    window: tuple[int, int | None] | None = None,
) -> Metrics:
    """``n_rounds`` names ALL tasks of the evaluation (task -> N_t), attempted or not.

    ``window`` (``--rounds A-B``): every formula over rounds A..min(B, N_t) only, so N_t
    becomes the window's length and "final round" its last round.

    ``attempted`` (task -> MT attempts started) counts attempts that left no round
    record at all; they score 0 in mean reward, MT@k and case score, as the benchmark
    scores a trial without reward files. Attempts with records are counted from them.
    """
    if k < 1:
        raise ValueError("k must be >= 1")
    index = _index(records, n_rounds, k, attempted, window)
    ev = _Evaluation(index, [_task_row(index, t) for t in n_rounds if index.spans[t]])
    figures = {name: figure(ev) for name, figure in FIGURES.items()}
    by_class, tests_by_class = _failures_by_class(index)
    return Metrics.model_validate(
        {
            "k": k,
            "n_tasks": ev.n_tasks,
            "evaluated": len(ev.rewards),
            **figures,
            "failed_rounds_by_class": by_class,
            "failing_tests_by_class": tests_by_class,
            "by_round": _by_round(index),
            "tasks": [row.metrics for row in ev.rows],
        }
    )


# --- Phase 1: the records indexed by task, mode and attempt -------------------------------


@dataclass(frozen=True)
class _Index:
    """The deduplicated records inside the window, indexed the ways the formulas read them.

    Every formula reads the same index, so "which attempts count" and "which rounds are in
    the window" are decided once, here, and never restated per figure."""

    n_rounds: Mapping[str, int]
    k: int
    lo: int
    """The window's first round (1 without a window)."""
    spans: dict[str, range]
    """Task -> the rounds every formula counts (its N_t is the span's length)."""
    records: list[RoundResult]
    passed: defaultdict[tuple[str, Mode], defaultdict[int, set[int]]]
    """(task, mode) -> attempt -> the rounds it passed."""
    attempts: defaultdict[tuple[str, Mode], set[int]]
    """(task, mode) -> attempt numbers (MT: also those ``attempted`` knows without records)."""
    by_attempt: defaultdict[tuple[str, Mode, int], list[RoundResult]]

    def first_k(self, task: str, mode: Mode) -> list[int]:
        """The k lowest attempt numbers: the attempts MT@k, SR, Comp and perfect look at."""
        return _first_k(self.attempts[(task, mode)], self.k)

    def every(self, task: str, mode: Mode) -> list[int]:
        """All attempts, in order: mean reward and the case score average over all of them."""
        return sorted(self.attempts[(task, mode)])

    def passed_in(self, task: str, mode: Mode, attempt: int) -> set[int]:
        return self.passed[(task, mode)][attempt]


def _spans(n_rounds: Mapping[str, int], window: tuple[int, int | None] | None) -> dict[str, range]:
    """Task -> rounds A..min(B, N_t) under a window, else 1..N_t."""
    if window is None:
        return {t: range(1, n + 1) for t, n in n_rounds.items()}
    lo, hi = window
    return {t: range(lo, min(hi or n, n) + 1) for t, n in n_rounds.items()}


def _index(
    records: Iterable[RoundResult],
    n_rounds: Mapping[str, int],
    k: int,
    attempted: Mapping[str, int] | None,
    window: tuple[int, int | None] | None,
) -> _Index:
    spans = _spans(n_rounds, window)
    recs = [r for r in dedupe(records) if r.task in spans and r.round in spans[r.task]]
    index = _Index(
        n_rounds=n_rounds,
        k=k,
        lo=window[0] if window else 1,
        spans=spans,
        records=recs,
        passed=defaultdict(lambda: defaultdict(set)),
        attempts=defaultdict(set),
        by_attempt=defaultdict(list),
    )
    for r in recs:
        index.attempts[(r.task, r.mode)].add(r.attempt)
        index.by_attempt[(r.task, r.mode, r.attempt)].append(r)
        if r.passed:
            index.passed[(r.task, r.mode)][r.attempt].add(r.round)
    _add_unrecorded_attempts(index, attempted or {})
    return index


def _add_unrecorded_attempts(index: _Index, attempted: Mapping[str, int]) -> None:
    """Give a task the MT attempts ``attempted`` knows of beyond those with records.

    They take the lowest free attempt numbers and pass no round, as the benchmark scores a
    trial that wrote no reward file."""
    for task, n_att in attempted.items():
        if task in index.n_rounds and n_att > 0:
            seen = index.attempts[(task, Mode.mt)]
            free = (a for a in itertools.count(1) if a not in seen)
            seen.update(list(itertools.islice(free, max(0, n_att - len(seen)))))


# --- Phase 2: per task -------------------------------------------------------------------


@dataclass(frozen=True)
class _TaskRow:
    """One task's figures: the public ``TaskMetrics`` plus the SR numbers that only feed the
    job's figures (a task's SR score is 0, not None, in the macro mean over all tasks)."""

    metrics: TaskMetrics
    sr_score: float
    sr_rounds_passed: int
    case_sr: float


def _best(index: _Index, task: str, mode: Mode) -> set[int]:
    """Rounds passed in at least one of the first k attempts: max_{a<=k} r[t,a,i]."""
    return set().union(*(index.passed_in(task, mode, a) for a in index.first_k(task, mode)))


def _case_score(index: _Index, task: str, mode: Mode, attempts: list[int]) -> float:
    """Mean over attempts of the mean over the span's rounds of the case ratio (unreached: 0)."""
    span = index.spans[task]
    per_attempt = []
    for a in attempts:
        ratios = {r.round: round_case_ratio(r) for r in index.by_attempt[(task, mode, a)]}
        per_attempt.append(sum(ratios.get(i, 0.0) for i in span) / len(span))
    return _mean(per_attempt)


def _first_failures(index: _Index, task: str) -> list[int | None]:
    """Per MT attempt a<=k: the first round of the span it did not pass (None: none)."""
    out: list[int | None] = []
    for a in index.first_k(task, Mode.mt):
        ok = index.passed_in(task, Mode.mt, a)
        out.append(next((i for i in index.spans[task] if i not in ok), None))
    return out


def _task_row(index: _Index, task: str) -> _TaskRow:
    span = index.spans[task]
    n = len(span)
    all_mt = index.every(task, Mode.mt)
    all_sr = index.every(task, Mode.sr)
    mt_best = _best(index, task, Mode.mt)
    sr_best = _best(index, task, Mode.sr)
    reward = _mean([len(index.passed_in(task, Mode.mt, a)) / n for a in all_mt])
    metrics = TaskMetrics(
        task=task,
        n_rounds=n,
        mt_attempts=len(all_mt),
        sr_attempts=len(all_sr),
        mean_reward=reward if all_mt else None,
        mt_at_k=len(mt_best) / n,
        sr=len(sr_best) / n if index.first_k(task, Mode.sr) else None,
        comp=span[-1] in mt_best,
        perfect=any(
            len(index.passed_in(task, Mode.mt, a)) == n for a in index.first_k(task, Mode.mt)
        ),
        case_score=_case_score(index, task, Mode.mt, all_mt) if all_mt else None,
        first_failure=_first_failures(index, task),
    )
    return _TaskRow(
        metrics=metrics,
        sr_score=len(sr_best) / n,
        sr_rounds_passed=len(sr_best),
        case_sr=_case_score(index, task, Mode.sr, all_sr) if all_sr else 0.0,
    )


# --- Phase 3: the job's figures, one small function each ----------------------------------


@dataclass(frozen=True)
class _Evaluation:
    """The index and the per-task rows (tasks with at least one round in the window)."""

    index: _Index
    rows: list[_TaskRow]

    @property
    def n_tasks(self) -> int:
        return len(self.rows)

    @property
    def rewards(self) -> list[float]:
        """Mean reward of each EVALUATED task (one with an MT attempt), in task order."""
        return [r.metrics.mean_reward for r in self.rows if r.metrics.mean_reward is not None]

    def ran(self, mode: Mode) -> bool:
        """A figure of ``mode`` exists only when some task has an attempt in that mode."""
        return any(self.index.attempts[(t, mode)] for t in self.index.n_rounds)

    def over_tasks(self, mode: Mode) -> bool:
        """A macro figure over all tasks of ``mode`` is defined (tasks, and some attempt)."""
        return bool(self.n_tasks) and self.ran(mode)


Figure = Callable[[_Evaluation], float | None]
"""One scalar of ``Metrics``: the evaluation in, the figure (None: undefined) out."""


# Left-to-right float sums in task order, then (sum / n): the benchmark's operand order.
def _mt_at_k(ev: _Evaluation) -> float | None:
    if not ev.over_tasks(Mode.mt):
        return None
    return sum(r.metrics.mt_at_k for r in ev.rows) / ev.n_tasks


def _sr(ev: _Evaluation) -> float | None:
    if not ev.over_tasks(Mode.sr):
        return None
    return sum(r.sr_score for r in ev.rows) / ev.n_tasks


def _sr_pooled(ev: _Evaluation) -> float | None:
    total_rounds = sum(len(span) for span in ev.index.spans.values())
    if not total_rounds or not ev.ran(Mode.sr):
        return None
    return sum(r.sr_rounds_passed for r in ev.rows) / total_rounds


def _gap(ev: _Evaluation) -> float | None:
    sr, mt = _sr(ev), _mt_at_k(ev)
    return sr - mt if sr is not None and mt is not None else None


def _comp(ev: _Evaluation) -> float | None:
    if not ev.over_tasks(Mode.mt):
        return None
    return sum(r.metrics.comp for r in ev.rows) / ev.n_tasks


def _perfect(ev: _Evaluation) -> float | None:
    if not ev.over_tasks(Mode.mt):
        return None
    return sum(r.metrics.perfect for r in ev.rows) / ev.n_tasks


def _mean_reward(ev: _Evaluation) -> float | None:
    return _mean(ev.rewards) if ev.rewards else None


def _hard(ev: _Evaluation) -> float | None:
    rewards = ev.rewards
    return sum(x <= 0.5 for x in rewards) / len(rewards) if rewards else None


def _case_score_mt(ev: _Evaluation) -> float | None:
    if not ev.over_tasks(Mode.mt):
        return None
    return _mean([r.metrics.case_score or 0.0 for r in ev.rows])


def _case_score_sr(ev: _Evaluation) -> float | None:
    if not ev.over_tasks(Mode.sr):
        return None
    return _mean([r.case_sr for r in ev.rows])


def _state_penalty(ev: _Evaluation) -> float | None:
    """Share of failed MT records, of (task, round)s SR ran, whose round passes under SR."""
    recs = ev.index.records
    sr_pass = {(r.task, r.round) for r in recs if r.mode is Mode.sr and r.passed}
    sr_ran = {(r.task, r.round) for r in recs if r.mode is Mode.sr}
    failed_mt = [
        r for r in recs if r.mode is Mode.mt and not r.passed and (r.task, r.round) in sr_ran
    ]
    return _share(sum((r.task, r.round) in sr_pass for r in failed_mt), len(failed_mt))


FIGURES: dict[str, Figure] = {
    "mean_reward": _mean_reward,
    "hard": _hard,
    "mt_at_k": _mt_at_k,
    "sr": _sr,
    "sr_pooled": _sr_pooled,
    "gap": _gap,
    "comp": _comp,
    "perfect": _perfect,
    "case_score_mt": _case_score_mt,
    "case_score_sr": _case_score_sr,
    "state_penalty": _state_penalty,
}
"""Every scalar figure of ``Metrics`` by field name (DESIGN.md "Metrics (exact)")."""


# --- Phase 4: the breakdowns -------------------------------------------------------------


def _failures_by_class(
    index: _Index,
) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, int]]]:
    """Per mode: failed rounds by primary class (or status), failing tests by class."""
    by_class: dict[str, Counter[str]] = defaultdict(Counter)
    tests_by_class: dict[str, Counter[str]] = defaultdict(Counter)
    for r in index.records:
        if r.passed or r.task not in index.n_rounds:
            continue
        cls = r.primary_failure_class
        by_class[r.mode.value][cls.value if cls else r.status.value] += 1
        for c, count in r.failure_classes.items():
            tests_by_class[r.mode.value][c.value] += count
    return (
        {m: dict(c) for m, c in by_class.items()},
        {m: dict(c) for m, c in tests_by_class.items()},
    )


def _round_cell(index: _Index, i: int, mode: Mode) -> tuple[float | None, int]:
    """Round i in ``mode``: (pass rate, cells) over every task's first k attempts."""
    cells = [
        i in index.passed_in(t, mode, a)
        for t in index.n_rounds
        if i in index.spans[t]
        for a in index.first_k(t, mode)
    ]
    return _share(sum(cells), len(cells)), len(cells)


def _by_round(index: _Index) -> list[RoundIndexMetrics]:
    """Pass rate by round index (the depth profile and compliance decay's x axis)."""
    end = max((x.stop for x in index.spans.values()), default=index.lo)
    rows = []
    for i in range(index.lo, end):
        mt_rate, mt_cells = _round_cell(index, i, Mode.mt)
        sr_rate, sr_cells = _round_cell(index, i, Mode.sr)
        rows.append(
            RoundIndexMetrics(
                round=i,
                mt_pass_rate=mt_rate,
                sr_pass_rate=sr_rate,
                mt_records=mt_cells,
                sr_records=sr_cells,
            )
        )
    return rows
