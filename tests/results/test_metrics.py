"""Metrics on hand-computed cases (see the formulas in evoround/results/_metrics.py)."""

from datetime import UTC, datetime

import pytest

from evoround.results import Mode, RoundResult, RoundStatus, compute_metrics
from evoround.tasks import FailureClass


def rr(task, mode, attempt, rnd, passed, n=4, tests=(1, 1), classes=None, status=None):
    return RoundResult(
        job="j",
        task=task,
        task_digest="d",
        n_rounds=n,
        mode=Mode(mode),
        attempt=attempt,
        round=rnd,
        agent="a",
        sandbox="local",
        passed=passed,
        status=status or (RoundStatus.passed if passed else RoundStatus.failed),
        tests_passed=tests[0],
        tests_total=tests[1],
        failure_classes=classes or {},
        started_at=datetime.now(UTC),
    )


def mt_chain(task, attempt, n, fail_at=None):
    """An MT attempt under fail-stop: rounds 1..fail_at-1 pass, fail_at fails, rest absent."""
    last = n if fail_at is None else fail_at
    return [rr(task, "mt", attempt, i, fail_at != i, n=n) for i in range(1, last + 1)]


def test_single_attempt_fail_stop_zeros():
    # A: 4 rounds, fails at round 3 -> rounds 3,4 score 0 -> 2/4
    # B: 2 rounds, passes all -> 2/2
    recs = mt_chain("A", 1, 4, fail_at=3) + mt_chain("B", 1, 2)
    m = compute_metrics(recs, {"A": 4, "B": 2}, k=1)
    assert m.mt_at_k == pytest.approx((0.5 + 1.0) / 2)
    assert m.mean_reward == pytest.approx(0.75)
    assert m.comp == pytest.approx(0.5)
    assert m.sr is None and m.gap is None
    assert [t.first_failure for t in m.tasks] == [[3], [None]]
    assert m.by_round[3].mt_pass_rate == 0.0 and m.by_round[3].mt_records == 1  # round 4: A only


def test_task_without_attempts_counts_zero_in_mt_at_k_but_not_in_mean_reward():
    recs = mt_chain("A", 1, 4)
    m = compute_metrics(recs, {"A": 4, "C": 5}, k=1)
    assert m.mt_at_k == pytest.approx(0.5)
    assert m.mean_reward == pytest.approx(1.0)
    assert m.comp == pytest.approx(0.5)


def test_k_smaller_than_attempts_and_max_over_attempts():
    # attempt 1 fails r2 (1/4), attempt 2 fails r4 (3/4), attempt 3 completes (4/4)
    recs = mt_chain("A", 1, 4, 2) + mt_chain("A", 2, 4, 4) + mt_chain("A", 3, 4)
    n = {"A": 4}
    assert compute_metrics(recs, n, k=1).mt_at_k == pytest.approx(0.25)
    assert compute_metrics(recs, n, k=2).mt_at_k == pytest.approx(0.75)
    assert compute_metrics(recs, n, k=3).mt_at_k == pytest.approx(1.0)
    assert compute_metrics(recs, n, k=10).mt_at_k == pytest.approx(1.0)
    # mean reward uses every attempt, independent of k
    assert compute_metrics(recs, n, k=1).mean_reward == pytest.approx((1 + 3 + 4) / 12)
    assert compute_metrics(recs, n, k=1).comp == 0.0
    assert compute_metrics(recs, n, k=3).comp == 1.0


def test_max_is_per_round_not_per_attempt():
    # attempt 1 passes round 1 only; attempt 2 fails round 1 -> @2 still 1/2 for a 2-round task
    recs = mt_chain("A", 1, 2, 2) + mt_chain("A", 2, 2, 1)
    assert compute_metrics(recs, {"A": 2}, k=2).mt_at_k == pytest.approx(0.5)


def test_sr_gap_and_state_penalty():
    # MT: A fails at round 2 of 3. SR: rounds 1,2 pass, round 3 fails. B (2 rounds): MT all pass,
    # SR round 2 fails.
    recs = mt_chain("A", 1, 3, 2) + mt_chain("B", 1, 2)
    recs += [
        rr("A", "sr", 1, 1, True, 3),
        rr("A", "sr", 1, 2, True, 3),
        rr("A", "sr", 1, 3, False, 3),
    ]
    recs += [rr("B", "sr", 1, 1, True, 2), rr("B", "sr", 1, 2, False, 2)]
    m = compute_metrics(recs, {"A": 3, "B": 2}, k=1)
    assert m.mt_at_k == pytest.approx((1 / 3 + 1) / 2)
    assert m.sr == pytest.approx((2 / 3 + 1 / 2) / 2)  # macro: per task, then mean
    assert m.sr_pooled == pytest.approx(3 / 5)  # micro: pooled over all 5 rounds
    assert m.gap == pytest.approx((2 / 3 + 1 / 2) / 2 - (1 / 3 + 1) / 2)
    # one failed MT record (A r2), and A r2 passes under SR -> penalty 1.0
    assert m.state_penalty == pytest.approx(1.0)
    assert m.tasks[0].sr == pytest.approx(2 / 3)


def test_state_penalty_only_counts_rounds_with_sr_data():
    recs = mt_chain("A", 1, 3, 2) + mt_chain("A", 2, 3, 3) + [rr("A", "sr", 1, 3, False, 3)]
    m = compute_metrics(recs, {"A": 3}, k=2)
    assert m.state_penalty == pytest.approx(0.0)  # only A r3 has SR data; it fails there too


def test_case_score_and_failure_classes():
    recs = [
        rr("A", "mt", 1, 1, True, 2, tests=(3, 3)),
        rr(
            "A",
            "mt",
            1,
            2,
            False,
            2,
            tests=(2, 5),
            classes={FailureClass.regression: 1, FailureClass.missed_requirement: 2},
        ),
        rr("B", "mt", 1, 1, False, 2, tests=(0, 0), status=RoundStatus.agent_timeout),
    ]
    m = compute_metrics(recs, {"A": 2, "B": 2}, k=1)
    # per round passed/total; A: (3/3 + 2/5) / 2, B: round 1 has no cases, round 2 unreached
    assert m.case_score_mt == pytest.approx(((1 + 2 / 5) / 2 + 0) / 2)
    assert m.case_score_sr is None
    assert m.failed_rounds_by_class["mt"] == {"regression": 1, "agent_timeout": 1}
    assert m.failing_tests_by_class["mt"] == {"regression": 1, "missed_requirement": 2}


def test_duplicate_records_count_once():
    recs = mt_chain("A", 1, 2) + mt_chain("A", 1, 2)
    m = compute_metrics(recs, {"A": 2}, k=1)
    assert m.mt_at_k == 1.0 and m.tasks[0].mt_attempts == 1


def test_empty():
    m = compute_metrics([], {"A": 3}, k=1)
    assert m.mt_at_k is None and m.sr is None and m.comp is None


def test_k_must_be_positive():
    with pytest.raises(ValueError):
        compute_metrics([], {}, k=0)


def test_the_fast_mean_is_statistics_mean_to_the_last_bit() -> None:
    """``_mean`` takes a shortcut for finite floats (the bootstrap takes tens of thousands of
    means a report); it must give statistics.mean's correctly rounded value and type on
    every input: ratios of small ints as the metrics make them, extremes of the float range,
    subnormals, signs, ints, and the non-finite values the shortcut leaves to statistics."""
    import random
    import statistics

    from evoround.results._metrics import _mean

    rng = random.Random(29)
    special = [0.0, -0.0, 1.0, 1 / 3, 2 / 3, 0.1, 0.7, 5e-324, 1.7976931348623157e308, 1e-300]
    draws = [
        lambda: rng.randint(0, 7) / rng.randint(1, 7),
        lambda: rng.random() * 10.0 ** rng.randint(-300, 300),
        lambda: rng.choice(special),
        lambda: rng.uniform(-1, 1),
        lambda: rng.randint(-5, 5),
    ]
    for _ in range(20_000):
        draw = rng.choice(draws)
        xs = [draw() for _ in range(rng.randint(1, 12))]
        got, want = _mean(xs), statistics.mean(xs)
        assert (got, type(got)) == (want, type(want)), xs
    for xs in ([1.0, float("inf")], [float("nan")], [2, 4], [1.5, 2]):
        got, want = _mean(xs), statistics.mean(xs)
        assert repr(got) == repr(want) and type(got) is type(want), xs
    assert _mean([]) == 0.0
