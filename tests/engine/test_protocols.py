"""--on-fail stop|continue: one predicate decides when an MT attempt ends (loop, executor,
resume and the skip-finished-units check all use it)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

from evoround.engine._controller import attempt_ends
from evoround.engine._units import plan_units, unit_done
from evoround.results import Mode, RoundResult, RoundStatus
from evoround.tasks import load_task
from tests.helpers import COUNTER


def rec(rnd: int, passed: bool, status: RoundStatus | None = None) -> RoundResult:
    return RoundResult(
        job="j", task="counter", task_digest="d", n_rounds=3, mode=Mode.mt, attempt=1,
        round=rnd, agent="a", sandbox="local", passed=passed,
        status=status or (RoundStatus.passed if passed else RoundStatus.failed),
        started_at=datetime.now(UTC),
    )  # fmt: skip


def test_attempt_ends_by_protocol():
    task = load_task(COUNTER)
    n = task.n_rounds
    assert attempt_ends(task, rec(1, False), "stop")
    assert not attempt_ends(task, rec(1, False), "continue")
    assert attempt_ends(task, rec(1, False, RoundStatus.infra), "continue")
    assert attempt_ends(task, rec(1, False, RoundStatus.setup_error), "continue")
    assert not attempt_ends(task, rec(1, False, RoundStatus.verifier_error), "continue")
    assert attempt_ends(task, rec(n, True), "continue")
    assert not attempt_ends(task, rec(1, True), "stop")
    # a window ends the attempt at its last round
    assert attempt_ends(task, rec(2, True), "stop", (1, 2))
    assert not attempt_ends(task, rec(2, True), "stop", (1, None))


def test_unit_done_follows_the_protocol(tmp_path: Path):
    task = load_task(COUNTER)
    [stop] = plan_units([task], [Mode.mt], 1, on_fail="stop")
    [cont] = plan_units([task], [Mode.mt], 1, on_fail="continue")
    failed_first = [rec(1, False)]
    assert unit_done(stop, failed_first)
    assert not unit_done(cont, failed_first)  # a resumed continue attempt goes on
    assert unit_done(cont, [*failed_first, rec(2, True), rec(task.n_rounds, False)])
    [win] = plan_units([task], [Mode.mt, Mode.sr], 1, window=(2, 2))[:1]
    assert win.rounds == 1
    sr = [u.round for u in plan_units([task], [Mode.sr], 1, window=(2, None))]
    assert sr == list(range(2, task.n_rounds + 1))


def test_a_recorded_early_stop_decides_under_continue():
    """The verifier records whether the round's own min_reward was missed (Harbor's early
    stop, or any fail when min_reward is the pass threshold); records from before it was
    recorded (None) keep the old rule (counter sets no round min_reward: go on)."""
    task = load_task(COUNTER)
    missed = rec(1, False).model_copy(update={"early_stop": True})
    met = rec(1, False).model_copy(update={"early_stop": False})
    assert attempt_ends(task, missed, "continue")
    assert not attempt_ends(task, met, "continue")  # failed the 0.999 test, not below min
    assert not attempt_ends(task, rec(1, False), "continue")
