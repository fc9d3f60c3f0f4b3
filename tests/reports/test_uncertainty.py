"""Bootstrap intervals and the paired comparison, on cases whose answer is known by hand."""

from __future__ import annotations

import json
import math
import random
from datetime import UTC, datetime
from pathlib import Path

import numpy as np
import pytest
from typer.testing import CliRunner

from evoround.cli import app
from evoround.reports import _uncertainty, bootstrap, compare_jobs, headline_stats, job_uncertainty
from evoround.reports._uncertainty import (
    DISPLAY,
    _float_fields,
    paired_bootstrap,
    report_stats,
)
from evoround.results import (
    Metrics,
    Mode,
    RoundResult,
    RoundStatus,
    compute_metrics,
    load_job,
)
from tests.results.synthetic_job import make_job

NOW = datetime(2026, 1, 1, tzinfo=UTC)


def rec(task: str, rnd: int, passed: bool, *, attempt: int = 1, mode: Mode = Mode.mt,
        n: int = 2) -> RoundResult:  # fmt: skip
    return RoundResult(
        job="j", task=task, task_digest="d", n_rounds=n, mode=mode, attempt=attempt,
        round=rnd, agent="a", sandbox="local", passed=passed,
        status=RoundStatus.passed if passed else RoundStatus.failed, started_at=NOW,
    )  # fmt: skip


def fail_stop(task: str, outcome: list[bool], *, attempt: int = 1) -> list[RoundResult]:
    """The records of one MT attempt: rounds up to and including the first failure."""
    out = []
    for i, ok in enumerate(outcome, 1):
        out.append(rec(task, i, ok, attempt=attempt, n=len(outcome)))
        if not ok:
            break
    return out


def test_all_tasks_alike_give_a_zero_width_interval():
    records = [r for t in range(6) for r in fail_stop(f"t{t}", [True, False])]
    u = bootstrap(records, {f"t{t}": 2 for t in range(6)}, 1, resamples=200)
    mt = u.figures["MT@k"]
    assert mt.estimate == 0.5 and mt.lo == mt.hi == 0.5 and mt.se == 0.0
    assert mt.defined == 200 and u.resamples == 200 and u.seed == 20260523


def test_two_tasks_by_hand():
    """Tasks scoring 1 and 0: a resample's mean is 0, 1/2, 1 with chance 1/4, 1/2, 1/4, so
    the 95% interval is [0, 1] and the SE is sqrt(1/8)."""
    records = fail_stop("good", [True, True]) + fail_stop("bad", [False, True])
    u = bootstrap(records, {"good": 2, "bad": 2}, 1, resamples=4000, seed=1)
    mt = u.figures["MT@k"]
    assert mt.estimate == 0.5 and (mt.lo, mt.hi) == (0.0, 1.0)
    assert mt.se == pytest.approx(math.sqrt(1 / 8), abs=0.01)
    comp = u.figures["Comp"]
    assert comp.estimate == 0.5 and comp.se == pytest.approx(math.sqrt(1 / 8), abs=0.01)


def test_an_untried_task_counts_zero_and_an_all_untried_resample_is_left_out():
    """MT@k counts an untried task 0 (drawn with a tried one: 1/2). A resample that draws
    only the untried task has no MT record at all, where compute_metrics says MT@k is
    undefined: it is left out and counted (1 in 4), not scored."""
    records = fail_stop("done", [True, True])
    u = bootstrap(records, {"done": 2, "never_run": 2}, 1, resamples=2000, seed=3)
    mt = u.figures["MT@k"]
    assert mt.estimate == 0.5 and (mt.lo, mt.hi) == (0.5, 1.0)
    assert 1400 < mt.defined < 1600


def test_attempts_are_resampled_within_a_task():
    """One task, attempt 1 passes and attempt 2 fails. MT@1 depends on which attempt is
    'first', so its interval spans [0, 1]; MT@2 takes both attempts and cannot vary."""
    records = fail_stop("t", [True, True], attempt=1) + fail_stop("t", [False, True], attempt=2)
    at1 = bootstrap(records, {"t": 2}, 1, resamples=400, seed=5).figures["MT@k"]
    assert at1.estimate == 1.0 and (at1.lo, at1.hi) == (0.0, 1.0)
    at2 = bootstrap(records, {"t": 2}, 2, resamples=400, seed=5).figures["MT@k"]
    assert at2.estimate == 1.0 and at2.lo == at2.hi == 1.0
    # mean reward always averages every attempt: no attempt draw can move it
    reward = bootstrap(records, {"t": 2}, 1, resamples=100).figures["mean_reward"]
    assert reward.lo == reward.hi == reward.estimate == 0.5


def test_seeded_and_reproducible():
    records = [r for t in range(12) for r in fail_stop(f"t{t}", [True, t % 3 != 0, t % 2 == 0])]
    nr = {f"t{t}": 3 for t in range(12)}
    a = bootstrap(records, nr, 1, resamples=300, seed=11)
    b = bootstrap(records, nr, 1, resamples=300, seed=11)
    c = bootstrap(records, nr, 1, resamples=300, seed=12)
    assert a == b
    assert a.figures["MT@k"] != c.figures["MT@k"]


def test_every_float_figure_of_the_metrics_gets_an_interval():
    """Intervals are computed by re-running compute_metrics: a figure added to Metrics
    (SR macro, perfect, case score, ...) gets an interval with no change here."""
    names = {DISPLAY.get(f, f) for f in _float_fields(Metrics)}
    assert {"MT@k", "SR", "Gap", "Comp", "mean_reward"} <= names
    stats = headline_stats(fail_stop("t", [True, False]), {"t": 2}, 1)
    assert names | {"CSR", "ISR"} <= set(stats)


@pytest.fixture(scope="module")
def synthetic(tmp_path_factory: pytest.TempPathFactory) -> dict[int, Path]:
    root = tmp_path_factory.mktemp("syn")
    return {
        n: make_job(root, tasks=n, rounds=4, name=f"n{n}", p_fail=0.25, seed=n) for n in (10, 80)
    }


def test_intervals_contain_the_estimate_and_shrink_with_more_tasks(synthetic: dict[int, Path]):
    width = {}
    for n, path in synthetic.items():
        u = job_uncertainty(load_job(path), resamples=400)
        for name, iv in u.headline.items():
            if iv.estimate is not None:
                assert iv.lo is not None and iv.lo <= iv.estimate <= iv.hi, (n, name, iv)
        for p in u.by_round:
            assert p.mt.lo <= p.mt.estimate <= p.mt.hi
        width[n] = u.headline["MT@k"].hi - u.headline["MT@k"].lo
        assert u.n_tasks == n
    assert 0 < width[80] < width[10]


def test_paired_comparison_of_identical_jobs_is_zero_with_p_one(synthetic: dict[int, Path]):
    view = load_job(synthetic[10])
    c = compare_jobs(view, view, resamples=300)
    for name in ("MT@k", "SR", "Gap", "mean_reward"):
        d = c.paired.figures[name]
        assert d.delta == 0 and d.lo == d.hi == 0 and d.p_value == 1.0, name
    assert c.paired.common_tasks == 10 and not c.flips


def test_paired_comparison_finds_a_real_difference():
    """B passes every round where A fails round 2 of every task: B - A = +0.5 on every
    resample, so the interval is [0.5, 0.5] and p is the smallest the resamples allow."""
    nr = {f"t{t}": 2 for t in range(8)}
    a = [r for t in nr for r in fail_stop(t, [True, False])]
    b = [r for t in nr for r in fail_stop(t, [True, True])]
    p = paired_bootstrap(a, b, nr, 1, resamples=999, seed=2)
    d = p.figures["MT@k"]
    assert d.delta == 0.5 and d.lo == d.hi == 0.5
    assert d.p_value == pytest.approx(2 / 1000)
    # a mixed difference: B better on half the tasks only
    b2 = [r for i, t in enumerate(nr) for r in fail_stop(t, [True, i % 2 == 0])]
    d2 = paired_bootstrap(a, b2, nr, 1, resamples=999, seed=2).figures["MT@k"]
    assert d2.delta == 0.25 and d2.lo < 0.25 < d2.hi and 0 < d2.p_value < 0.05


def test_paired_comparison_uses_only_common_tasks(tmp_path: Path):
    a = load_job(make_job(tmp_path, tasks=6, rounds=3, name="a", seed=1))
    b = load_job(make_job(tmp_path, tasks=4, rounds=3, name="b", seed=2))
    c = compare_jobs(a, b, resamples=50)
    assert c.paired.common_tasks == 4 and c.only_in_a == ["task004", "task005"]


def test_cli_json_carries_intervals_resamples_and_seed(synthetic: dict[int, Path]):
    path = synthetic[10]
    res = CliRunner().invoke(
        app, ["report", str(path), "--json", "--no-html", "--resamples", "120", "--seed", "9"]
    )
    assert res.exit_code == 0, res.output
    data = json.loads(res.stdout)
    u = data["jobs"][0]["uncertainty"]
    assert u["resamples"] == 120 and u["seed"] == 9 and "bootstrap" in u["method"]
    for name in ("MT@k", "SR", "Gap", "Comp", "mean_reward"):
        iv = u["headline"][name]
        assert iv["lo"] <= iv["estimate"] <= iv["hi"] and iv["se"] is not None
    row = data["report"]["leaderboard"][0]
    assert row["intervals"]["MT@k"]["estimate"] == row["MT@k"]
    assert data["report"]["jobs"][0]["uncertainty"] == u
    rounds = u["by_round"]
    assert [r["round"] for r in rounds] == [1, 2, 3, 4] and rounds[0]["mt"]["lo"] is not None

    res = CliRunner().invoke(app, ["compare", str(path), str(path), "--json", "--resamples", "50"])
    assert res.exit_code == 0, res.output
    paired = json.loads(res.stdout)["paired"]
    assert paired["figures"]["MT@k"]["delta"] == 0 and paired["figures"]["MT@k"]["p_value"] == 1
    res = CliRunner().invoke(
        app, ["compare", str(path), str(path), "--resamples", "50"], env={"COLUMNS": "200"}
    )
    assert res.exit_code == 0 and "paired on the 10 tasks" in res.output


def test_curves_over_k_and_conditional_rates(tmp_path: Path):
    job = make_job(tmp_path, tasks=8, rounds=3, attempts=3, p_fail=0.3, seed=4)
    u = job_uncertainty(load_job(job), resamples=100)
    assert [c.k for c in u.curves] == [1, 2, 3]
    view = load_job(job)
    for c in u.curves:  # the shortcut over the first j attempts changes no figure
        full = compute_metrics(view.records, view.n_rounds, c.k)
        assert c.mt_at_k.estimate == full.mt_at_k
        assert c.pass_at_k.estimate == getattr(full, "perfect", full.comp)
    # attempts numbered 2 and 5 (1, 3, 4 never recorded): "first j" is by order, not number
    from evoround.reports._uncertainty import report_stats

    odd = fail_stop("t", [True, False], attempt=2) + fail_stop("t", [True, True], attempt=5)
    stats = report_stats(odd, {"t": 2}, 2)
    assert stats["curve.1.MT@k"] == 0.5 == compute_metrics(odd, {"t": 2}, 1).mt_at_k
    assert stats["curve.2.MT@k"] == 1.0
    mts = [c.mt_at_k.estimate for c in u.curves]
    assert mts == sorted(mts)  # more attempts never lower MT@k
    assert u.curves[-1].mt_at_k.estimate == u.headline["MT@k"].estimate
    assert u.by_round[0].mt_after_pass is None  # round 1 has no previous round
    assert u.by_round[1].mt_after_pass.estimate is not None
    assert not u.continues_after_failure  # fail-stop: nothing after a failed round


def test_conditional_rate_under_continue():
    """Records past a failed round (``--on-fail continue``) give P(i | i-1 failed)."""
    records = [
        rec("t", 1, False, n=3), rec("t", 2, True, n=3), rec("t", 3, True, n=3),
        rec("u", 1, True, n=3), rec("u", 2, False, n=3), rec("u", 3, False, n=3),
    ]  # fmt: skip
    from evoround.reports._uncertainty import report_stats, structure

    u = structure(bootstrap(records, {"t": 3, "u": 3}, 1, statistic=report_stats, resamples=50))
    r2, r3 = u.by_round[1], u.by_round[2]
    assert r2.mt_after_fail.estimate == 1.0 and r2.mt_after_pass.estimate == 0.0
    assert r3.mt_after_pass.estimate == 1.0 and r3.mt_after_fail.estimate == 0.0
    assert u.continues_after_failure


def test_resample_sizes_are_reported_when_a_figure_is_sometimes_undefined():
    """State penalty needs a failed MT round with an SR run: resamples without one are
    left out and counted, never scored as 0."""
    records = fail_stop("bad", [False, True]) + [rec("bad", 1, True, mode=Mode.sr)]
    records += fail_stop("good", [True, True])
    u = bootstrap(records, {"bad": 2, "good": 2}, 1, resamples=1000, seed=8)
    sp = u.figures["state_penalty"]
    assert sp.estimate == 1.0 and 600 < sp.defined < 900  # P(no 'bad' drawn) = 1/4
    assert np.isclose(sp.lo, 1.0) and np.isclose(sp.hi, 1.0)


def test_attempts_without_records_keep_their_place_in_the_draw():
    """A job may know of MT attempts that left no record (``attempted``): in the draw they
    take slots like recorded ones, so the recorded attempt is 'first' in only half of the
    resamples of a task with two attempts, and the metrics are told of both."""
    records = fail_stop("t", [True, True], attempt=1)

    def stat(recs, n_rounds, k, attempted=None, window=None):
        mt = [r for r in recs if r.mode is Mode.mt]
        return {
            "recorded_is_first": float(all(r.attempt == 1 for r in mt)),
            "attempts_known": float(sum((attempted or {}).values()) / len(n_rounds)),
        }

    u = bootstrap(records, {"t": 2}, 1, statistic=stat, resamples=2000, seed=4,
                  attempted={"t": 2})  # fmt: skip
    first = u.figures["recorded_is_first"]
    assert first.estimate == 1.0 and (first.lo, first.hi) == (0.0, 1.0)
    assert first.se == pytest.approx(0.5, abs=0.02)  # a fair coin
    known = u.figures["attempts_known"]
    assert known.estimate == known.lo == known.hi == 2.0
    plain = bootstrap(records, {"t": 2}, 1, statistic=stat, resamples=200)
    assert plain.figures["recorded_is_first"].lo == 1.0  # no unrecorded attempt: no slot


def test_point_estimates_are_the_jobs_own_metrics(tmp_path: Path):
    """The interval's estimate is what ``JobView.metrics`` says, whatever arguments the job
    hands its metrics (attempts that left no record, a rounds window)."""
    job = make_job(tmp_path, tasks=6, rounds=3, attempts=2, p_fail=0.3, seed=6)
    (job / "task005" / "mt-03").mkdir(parents=True)  # an attempt that left no record
    view = load_job(job)
    m = view.metrics()
    u = job_uncertainty(view, resamples=50)
    for field in _float_fields(Metrics):
        assert u.headline[DISPLAY.get(field, field)].estimate == getattr(m, field), field


def _random_records(rng: random.Random) -> tuple[list[RoundResult], dict[str, int], int]:
    """A small random job: 1-4 tasks, 1-4 attempts each (some never started), MT runs to
    the first failure, SR every round; figures include undefined ones now and then."""
    n_tasks, n = rng.randint(1, 4), rng.randint(2, 4)
    out: list[RoundResult] = []
    for t in range(n_tasks):
        for a in range(1, rng.randint(0, 4) + 1):
            out += fail_stop(f"t{t}", [rng.random() < 0.7 for _ in range(n)], attempt=a)
            out += [rec(f"t{t}", i, rng.random() < 0.8, attempt=a, mode=Mode.sr, n=n)
                    for i in range(1, n + 1)]  # fmt: skip
    return out, {f"t{t}": n for t in range(n_tasks)}, rng.randint(1, 3)


def test_an_equal_draw_reuses_figures_that_equal_a_fresh_computation(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Reusing the figures of an equal earlier draw (a cost saving: small jobs draw the
    same thing again and again) changes no interval, no p-value, no count of defined
    resamples: on 40 random small jobs, one job and paired, with the reuse on and off."""
    rng = random.Random(7)
    for _ in range(40):
        records, nr, k = _random_records(rng)
        other, _, _ = _random_records(rng)
        other = [r for r in other if r.task in nr]
        job = (records, other, nr, k, rng.randint(0, 10**6))
        reused = _one_and_paired(*job)
        monkeypatch.setattr(_uncertainty, "MEMO_RESAMPLES", 0)
        fresh = _one_and_paired(*job)
        monkeypatch.undo()
        assert reused == fresh


def _one_and_paired(
    a: list[RoundResult], b: list[RoundResult], nr: dict[str, int], k: int, seed: int
) -> tuple[object, object]:
    one = bootstrap(a, nr, k, statistic=report_stats, resamples=150, seed=seed)
    return one, paired_bootstrap(a, b, nr, k, resamples=150, seed=seed)


def test_a_job_of_one_task_and_one_attempt_is_computed_once_per_distinct_draw() -> None:
    calls = []

    def counted(*args: object, **kw: object) -> dict[str, float | None]:
        calls.append(1)
        return headline_stats(*args, **kw)  # type: ignore[arg-type]

    records = fail_stop("t", [True, False])
    u = bootstrap(records, {"t": 2}, 1, statistic=counted, resamples=500)
    assert len(calls) == 2  # the point estimate and the one draw there is
    assert u.figures["MT@k"].defined == 500  # every resample still counts
